"""Both languages in one source: each cell of solutions/ holds its English beside its Chinese (docs/editions.md).

    .venv/bin/python -m tools.editions status [NOTEBOOK ...]     what each translated notebook lacks or holds stale
    .venv/bin/python -m tools.editions check [NOTEBOOK ...]      the same, and the two languages' numbers, formulas,
                                                                 code spans, links and code held equal (tests run it)
    .venv/bin/python -m tools.editions stamp NOTEBOOK [CELL ...] after reading both languages of a cell: record that
                                                                 its English translates its Chinese as they are now
    .venv/bin/python -m tools.editions import NOTEBOOK FILE      put a translator's file (=== <cell id> blocks) into
                                                                 the notebook's cells, then stamp them

A cell's English lives in its metadata, `metadata.lecture2.en`:

    {"source": [the English, as lines], "of": <hash of the Chinese it translates>, "sha": <hash of that English>}

`of` and `sha` are what `stamp` saw: a change of either language without the other (and a new stamp) fails
tests/test_editions.py, which names the cell and which side changed. Markdown cells of a translated notebook
(lecture2.editions.translated: any cell holds an English) all have an English; a code cell has one when its
source holds Chinese (its strings and comments), and its English differs from its Chinese only in the string
constants that hold Chinese and in comments (the same code runs in both editions: the check cells' logic, every
number, every name).

The English release is made by nbgrader like the Chinese one (lecture2_grader.nbgrader_hooks.ChooseEdition puts
each cell's English in place before nbgrader's own preprocessors clear solutions and hidden tests).
"""
from __future__ import annotations

import argparse
import ast
import hashlib
import re
import sys
from collections import Counter
from pathlib import Path

import nbformat

from lecture2 import editions

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions" / "lec02"
KEY = "en"  # metadata.lecture2.<KEY>: the one other edition today; a third language would add its own key
CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef]")
GLOSSARY = "glossary"  # a cell tagged so maps terms between the languages: its English may hold Chinese


def digest(text: str) -> str:
    """The hash a stamp records of one language of a cell (16 hex digits of SHA-256 of its text)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _text(value: object) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def english(cell) -> str | None:
    """The English source of `cell` (None: it has none)."""
    held = cell.get("metadata", {}).get("lecture2", {}).get(KEY)
    return _text(held.get("source")) if isinstance(held, dict) else None


def needs_english(cell) -> bool:
    """Whether a cell of a translated notebook must hold an English: every markdown cell, and every code cell
    whose source holds Chinese."""
    return cell.cell_type == "markdown" or (cell.cell_type == "code" and bool(CJK.search(cell.source)))


def set_english(cell, text: str) -> None:
    """Put `text` as `cell`'s English and stamp it (the caller has read both languages)."""
    ours = cell.metadata.setdefault("lecture2", {})
    ours[KEY] = {"source": text.splitlines(keepends=True), "of": digest(cell.source), "sha": digest(text)}


def stamp(cell) -> bool:
    """Record that `cell`'s English translates its Chinese as they are now; False when it has no English."""
    text = english(cell)
    if text is None:
        return False
    set_english(cell, text)
    return True


def cell_name(cell, index: int) -> str:
    return cell.get("id") or cell.metadata.get("nbgrader", {}).get("grade_id") or f"cell {index + 1}"


# ---- what must be equal between the two languages of a markdown cell

_FORMULA = re.compile(r"(?<!\\)\$\$(.+?)(?<!\\)\$\$|(?<!\\)\$([^$\n]+?)(?<!\\)\$", re.S)  # \$: a dollar, not math
_CODE = re.compile(r"`([^`\n]+)`")
_LINK = re.compile(r"\]\(([^)\s]+)\)|(?<![(\w])(https?://[^\s)>\]]+)")
_NUMBER = re.compile(r"(?<![A-Za-z0-9_.])\d+(?:[.,]\d+)*")
_PROSE_IN_FORMULA = re.compile(r"\\(text|textrm|textbf|mathrm|operatorname)\{[^{}]*\}")  # words, translated
_MINUTES = re.compile(r"预计\s*\d+\s*分钟|深入\s*\d+\s*分钟|about \d+ minutes|optional depth \d+ minutes")


def parts(text: str) -> dict[str, Counter]:
    """What a markdown cell's two languages must hold alike: its formulas (LaTeX, whitespace aside), code spans,
    link targets, and the numbers of its prose (outside those, and outside the minutes a notebook states, which
    each edition computes from its own prose: tools/pace.py)."""
    formulas = Counter(re.sub(r"\s+", "", _PROSE_IN_FORMULA.sub(r"\\\1{}", a or b)) for a, b in _FORMULA.findall(text))
    rest = _FORMULA.sub(" ", text)
    code = Counter(_CODE.findall(rest))
    rest = _CODE.sub(" ", rest)
    links = Counter(a or b for a, b in _LINK.findall(rest))
    rest = _LINK.sub(" ", rest)
    rest = _MINUTES.sub(" ", re.sub(r"<[^>\n]*>", " ", rest))
    numbers = Counter(n.replace(",", "") for n in _NUMBER.findall(rest))
    return {"formulas": formulas, "code spans": code, "links": links, "numbers": numbers}


def _differences(zh: Counter, en: Counter) -> str:
    only_zh, only_en = zh - en, en - zh
    said = []
    if only_zh:
        said.append("only in the Chinese: " + ", ".join(repr(k) for k in list(only_zh)[:6]))
    if only_en:
        said.append("only in the English: " + ", ".join(repr(k) for k in list(only_en)[:6]))
    return "; ".join(said)


# ---- what must be equal between the two languages of a code cell

class _FStrings(ast.NodeTransformer):
    """An f-string read as its words (one string constant, translated like any string that holds Chinese) and
    its {fields} in a fixed order: a translation may move the fields within the sentence, never change them."""

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.AST:
        words = "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
        fields = sorted((v for v in node.values if not isinstance(v, ast.Constant)), key=ast.dump)
        constant = ast.copy_location(ast.Constant(words), node)
        call = ast.Call(func=ast.Name(id="__fstring__", ctx=ast.Load()), args=[constant, *fields], keywords=[])
        return ast.copy_location(call, node)


def code_difference(zh: str, en: str) -> str | None:
    """None when `en` is `zh`'s code with only its Chinese string constants (and comments) changed; else what
    differs. Every name, number, call and every string without Chinese must be the same: the same code runs."""
    try:
        a, b = _FStrings().visit(ast.parse(zh)), _FStrings().visit(ast.parse(en))
    except SyntaxError as err:
        return f"does not parse: {err.msg} (line {err.lineno})"
    nodes_a, nodes_b = list(ast.walk(a)), list(ast.walk(b))
    if len(nodes_a) != len(nodes_b):
        return "its code differs (not only its Chinese strings and comments)"
    for x, y in zip(nodes_a, nodes_b):
        if type(x) is not type(y):
            return f"its code differs at line {getattr(x, 'lineno', '?')}: {type(x).__name__} vs {type(y).__name__}"
        if isinstance(x, ast.Constant):
            if isinstance(x.value, str) and isinstance(y.value, str) and CJK.search(x.value):
                continue
            if type(x.value) is not type(y.value) or x.value != y.value:
                return f"a constant differs at line {x.lineno}: {x.value!r} vs {y.value!r} (only strings that hold " \
                       "Chinese are translated)"
            continue
        for field in x._fields:
            va, vb = getattr(x, field), getattr(y, field)
            if isinstance(va, ast.AST) or (isinstance(va, list) and va and isinstance(va[0], ast.AST)):
                if isinstance(va, list) and len(va) != len(vb):
                    return f"its code differs at line {getattr(x, 'lineno', '?')}"
                continue
            if va != vb:
                return f"its code differs at line {getattr(x, 'lineno', '?')}: {field} {va!r} vs {vb!r}"
    return None


# ---- one notebook

def problems(path: Path) -> list[str]:
    """What keeps notebook `path` from being released in English: a cell without its English, a stale stamp, the
    two languages' numbers, formulas, code spans, links or code unequal, Chinese left in an English."""
    nb = nbformat.read(path, as_version=4)
    found = []
    for i, cell in enumerate(nb.cells):
        name = cell_name(cell, i)
        text = english(cell)
        if text is None:
            if needs_english(cell):
                found.append(f"{path.name} {name}: no English (metadata.lecture2.{KEY})")
            continue
        held = cell.metadata["lecture2"][KEY]
        changed = [side for side, key, source in (("Chinese", "of", cell.source), ("English", "sha", text))
                   if held.get(key) != digest(source)]
        if changed:
            found.append(f"{path.name} {name}: its {' and '.join(changed)} changed since its English was stamped: "
                         f"make the other language say the same, then `python -m tools.editions stamp "
                         f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path} {name}`")
        if CJK.search(text) and GLOSSARY not in cell.metadata.get("tags", []):
            found.append(f"{path.name} {name}: Chinese left in its English: {CJK.search(text).group()!r}")
        if cell.cell_type == "markdown":
            zh, en = parts(cell.source), parts(text)
            for what in zh:
                if zh[what] != en[what]:
                    found.append(f"{path.name} {name}: its {what} differ ({_differences(zh[what], en[what])})")
        elif cell.cell_type == "code":
            why = code_difference(cell.source, text)
            if why:
                found.append(f"{path.name} {name}: its English {why}")
    return found


def translated_paths(edition: str = KEY, folder: Path = SOLUTIONS) -> list[Path]:
    """The source notebooks `edition` has in its own language (lecture2.editions.translated: those holding it)."""
    return [p for p in sorted(folder.glob("*.ipynb"))
            if editions.translated(nbformat.read(p, as_version=4), edition)]


def english_notebook(nb) -> nbformat.NotebookNode:
    """`nb` (a source notebook, read) as the English edition reads it (lecture2.editions.in_edition)."""
    return editions.in_edition(nb, KEY)


def read_blocks(text: str) -> dict[str, str]:
    """A translator's file: `=== <cell id>` lines, each followed by that cell's English (trailing blank lines
    dropped)."""
    blocks: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines(keepends=True):
        match = re.match(r"^=== (\S+)\s*$", line)
        if match:
            current = match.group(1)
            blocks[current] = []
        elif current is not None:
            blocks[current].append(line)
    return {k: "".join(v).rstrip("\n") for k, v in blocks.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.editions", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("status", "check"):
        p = sub.add_parser(name)
        p.add_argument("notebooks", nargs="*", type=Path)
    p = sub.add_parser("stamp")
    p.add_argument("notebook", type=Path)
    p.add_argument("cells", nargs="*", help="cell ids (default: every cell that has an English)")
    p = sub.add_parser("import")
    p.add_argument("notebook", type=Path)
    p.add_argument("file", type=Path)
    args = parser.parse_args(argv)
    if args.command in ("status", "check"):
        paths = args.notebooks or translated_paths()
        found = [p for path in paths for p in problems(path)]
        print("\n".join(found) if found else f"{len(paths)} notebooks: every cell in both languages, stamps current")
        return 1 if found else 0
    nb = nbformat.read(args.notebook, as_version=4)
    if args.command == "import":
        blocks = read_blocks(args.file.read_text(encoding="utf-8"))
        ids = {cell_name(c, i): c for i, c in enumerate(nb.cells)}
        unknown = sorted(set(blocks) - set(ids))
        if unknown:
            parser.error(f"no cells {unknown} in {args.notebook}")
        for key, text in blocks.items():
            set_english(ids[key], text)
        print(f"{args.notebook}: {len(blocks)} cells given their English")
    else:
        wanted = set(args.cells)
        done = [cell_name(c, i) for i, c in enumerate(nb.cells)
                if (not wanted or cell_name(c, i) in wanted) and stamp(c)]
        missing = wanted - set(done)
        if missing:
            parser.error(f"no English to stamp in cells {sorted(missing)}")
        print(f"{args.notebook}: stamped {len(done)} cells")
    nbformat.write(nb, args.notebook)
    return 0


if __name__ == "__main__":
    sys.exit(main())
