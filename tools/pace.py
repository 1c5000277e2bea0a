"""How long a notebook takes a strong student: one rule, from what the notebook holds, never typed.

    minutes = Chinese characters of prose / 300 + English words of prose / 200
            + lines of visible code / 15 + 5 per exercise + 1 per prediction

counted over the notebook's **core**: every cell but those tagged `deep` (深入, optional depth a student may
skip: it carries no points) or `glossary` (the first notebook's table of terms in both languages: looked up, not
read through; counted as optional depth). Prose is the markdown cells' text (formulas and code spans not counted as words);
code is the non-blank, non-comment lines of the code cells a student reads and runs, not the check cells (run,
not studied) nor the exercises' own cells (the exercise's minutes cover them). The rates: a strong reader
reads 250-300 characters of Chinese a minute (the issue's figure) and 200 English words; 15 lines of code a
minute is reading and running, not writing; an exercise is deriving, writing and passing the checks of a
function of a few lines; a prediction is a minute of thought.

Each notebook's first cell states its minutes ("预计 N 分钟", "深入 M 分钟" when it has optional depth; in the
English edition "about N minutes", "optional depth M minutes (skippable)"), each edition's computed from its own
prose (lecture2.editions.in_edition): tests/test_course_pace.py holds the stated numbers equal to this rule in
each edition, each notebook's core at most NOTEBOOK_MAX and the source edition's course at most COURSE_MAX (the
English's total is what the rule gives it: `python -m tools.pace --edition en` prints it).
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from lecture2 import editions

CJK_PER_MINUTE = 300
WORDS_PER_MINUTE = 200
CODE_LINES_PER_MINUTE = 15
EXERCISE_MINUTES = 5
PREDICTION_MINUTES = 1
NOTEBOOK_MAX = 60
COURSE_MAX = 240
DEEP = "deep"
GLOSSARY = "glossary"

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef]")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_'-]*")
_NOT_WORDS = re.compile(r"\$\$.*?\$\$|\$[^$\n]*\$|`[^`\n]*`|<[^>\n]*>|\]\([^)\n]*\)", re.S)


@dataclass(frozen=True)
class Pace:
    """A part of a notebook (its core, or its optional depth) counted by the rule."""

    cjk: int = 0
    words: int = 0
    code_lines: int = 0
    exercises: int = 0
    predictions: int = 0

    @property
    def minutes(self) -> int:
        return math.ceil(self.cjk / CJK_PER_MINUTE + self.words / WORDS_PER_MINUTE
                         + self.code_lines / CODE_LINES_PER_MINUTE + self.exercises * EXERCISE_MINUTES
                         + self.predictions * PREDICTION_MINUTES)

    def __add__(self, other: Pace) -> Pace:
        return Pace(self.cjk + other.cjk, self.words + other.words, self.code_lines + other.code_lines,
                    self.exercises + other.exercises, self.predictions + other.predictions)


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def is_deep(cell: dict) -> bool:
    return DEEP in cell.get("metadata", {}).get("tags", [])


def is_optional(cell: dict) -> bool:
    """Counted as optional depth: a `deep` cell, or the glossary."""
    return is_deep(cell) or GLOSSARY in cell.get("metadata", {}).get("tags", [])


def is_prediction(cell: dict) -> bool:
    return cell["cell_type"] == "code" and "prediction" in cell.get("metadata", {}).get("lecture2", {})


def cell_pace(cell: dict) -> Pace:
    text = _source(cell)
    nbgrader = cell.get("metadata", {}).get("nbgrader", {})
    if cell["cell_type"] == "markdown":
        return Pace(cjk=len(_CJK.findall(text)), words=len(_WORD.findall(_NOT_WORDS.sub(" ", text))))
    if cell["cell_type"] != "code":
        return Pace()
    if nbgrader.get("solution"):
        return Pace(exercises=1)
    if nbgrader.get("grade"):  # a check cell: run, not studied
        return Pace()
    if is_prediction(cell):
        return Pace(predictions=1)
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    return Pace(code_lines=len(lines))


def _cells(path: Path, edition: str) -> list[dict]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return editions.in_edition(nb, edition)["cells"] if edition != editions.SOURCE else nb["cells"]


def notebook_pace(path: Path, edition: str = editions.SOURCE) -> tuple[Pace, Pace]:
    """(core, deep) of the source notebook at `path` as `edition` reads it."""
    core, deep = Pace(), Pace()
    for cell in _cells(path, edition):
        if is_optional(cell):
            deep += cell_pace(cell)
        else:
            core += cell_pace(cell)
    return core, deep


# How each edition's first cell states its minutes: (core, optional depth)
STATED_IN = {
    "zh": (re.compile(r"预计\s*(\d+)\s*分钟"), re.compile(r"深入\s*(\d+)\s*分钟")),
    "en": (re.compile(r"\babout (\d+) minutes"), re.compile(r"\boptional depth (\d+) minutes")),
}
STATED, STATED_DEEP = STATED_IN["zh"]


def stated(path: Path, edition: str = editions.SOURCE) -> tuple[int | None, int | None]:
    """The minutes the notebook's first cell states in `edition`: (core, deep)."""
    first = _source(_cells(path, edition)[0])
    translated = editions.translated(json.loads(path.read_text(encoding="utf-8")), edition)
    pattern, pattern_deep = STATED_IN[edition if translated else editions.SOURCE]
    core, deep = pattern.search(first), pattern_deep.search(first)
    return (int(core.group(1)) if core else None, int(deep.group(1)) if deep else None)


def restate(path: Path, edition: str) -> bool:
    """Write the minutes the rule gives `edition` into the first cell of source notebook `path`, in that edition's
    own text (for "en": the English in the cell's metadata, restamped, since only the minutes changed); True when
    anything changed. The translator writes the Chinese minutes; the lead runs this once the English is in."""
    import nbformat

    from tools import editions as tool

    nb = nbformat.read(path, as_version=4)
    if edition == editions.SOURCE or not editions.translated(nb, edition):
        return False
    core, deep = notebook_pace(path, edition)
    cell = nb.cells[0]
    text = editions.cell_text(cell, edition) or ""
    pattern, pattern_deep = STATED_IN[edition]
    new = pattern.sub(lambda m: m.group(0).replace(m.group(1), str(core.minutes)), text, count=1)
    if deep.minutes:
        new = pattern_deep.sub(lambda m: m.group(0).replace(m.group(1), str(deep.minutes)), new, count=1)
    if new == text:
        return False
    held = cell.metadata["lecture2"][tool.KEY]
    if held.get("of") == tool.digest(cell.source) and held.get("sha") == tool.digest(text):
        tool.set_english(cell, new)  # it was current: only the minutes changed
    else:
        held["source"] = new.splitlines(keepends=True)  # a stale stamp stays stale (tools.editions check says so)
    nbformat.write(nb, path)
    return True


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tools.pace", description="each notebook's minutes by the rule")
    parser.add_argument("folder", nargs="?", type=Path, default=Path("solutions/lec02"))
    parser.add_argument("--edition", default=editions.SOURCE, choices=sorted(editions.EDITIONS))
    parser.add_argument("--restate", action="store_true", help="write the rule's minutes into each translated "
                                                                "notebook's first cell in --edition's language")
    args = parser.parse_args()
    total = 0
    for path in sorted(args.folder.glob("*.ipynb")):
        if args.restate and restate(path, args.edition):
            print(f"{path.name}: its first cell's {args.edition} minutes restated")
        core, deep = notebook_pace(path, args.edition)
        total += core.minutes
        print(f"{path.name:32s} core {core.minutes:4d} min  deep {deep.minutes:4d} min  "
              f"stated {stated(path, args.edition)}  {core}")
    print(f"course core ({args.edition}): {total} min (the source edition's at most {COURSE_MAX})")
