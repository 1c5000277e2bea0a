"""How long a notebook takes a strong student: one rule, from what the notebook holds, never typed.

    minutes = Chinese characters of prose / 300 + English words of prose / 200
            + lines of visible code / 15 + 5 per exercise + 1 per prediction

counted over the notebook's **core**: every cell but those tagged `deep` (深入, optional depth a student may
skip: it carries no points). Prose is the markdown cells' text (formulas and code spans not counted as words);
code is the non-blank, non-comment lines of the code cells a student reads and runs, not the check cells (run,
not studied) nor the exercises' own cells (the exercise's minutes cover them). The rates: a strong reader
reads 250-300 characters of Chinese a minute (the issue's figure) and 200 English words; 15 lines of code a
minute is reading and running, not writing; an exercise is deriving, writing and passing the checks of a
function of a few lines; a prediction is a minute of thought.

Each notebook's first cell states its minutes ("预计 N 分钟", "深入 M 分钟" when it has optional depth);
tests/test_pace.py holds the stated numbers equal to this rule, each notebook's core at most NOTEBOOK_MAX and the
course's at most COURSE_MAX.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

CJK_PER_MINUTE = 300
WORDS_PER_MINUTE = 200
CODE_LINES_PER_MINUTE = 15
EXERCISE_MINUTES = 5
PREDICTION_MINUTES = 1
NOTEBOOK_MAX = 60
COURSE_MAX = 240
DEEP = "deep"

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


def notebook_pace(path: Path) -> tuple[Pace, Pace]:
    """(core, deep) of the notebook at `path`."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    core, deep = Pace(), Pace()
    for cell in cells:
        if is_deep(cell):
            deep += cell_pace(cell)
        else:
            core += cell_pace(cell)
    return core, deep


STATED = re.compile(r"预计\s*(\d+)\s*分钟")
STATED_DEEP = re.compile(r"深入\s*(\d+)\s*分钟")


def stated(path: Path) -> tuple[int | None, int | None]:
    """The minutes the notebook's first cell states: (core, deep)."""
    first = _source(json.loads(path.read_text(encoding="utf-8"))["cells"][0])
    core, deep = STATED.search(first), STATED_DEEP.search(first)
    return (int(core.group(1)) if core else None, int(deep.group(1)) if deep else None)


if __name__ == "__main__":
    import sys

    total = 0
    for path in sorted(Path(sys.argv[1] if len(sys.argv) > 1 else "solutions/lec02").glob("*.ipynb")):
        core, deep = notebook_pace(path)
        total += core.minutes
        print(f"{path.name:32s} core {core.minutes:4d} min  deep {deep.minutes:4d} min  stated {stated(path)}  {core}")
    print(f"course core: {total} min (at most {COURSE_MAX})")
