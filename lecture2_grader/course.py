"""The course as the grader reads it: the instructor's notebooks and the release. The instructor's notebooks
(solutions/, hidden tests included), the release students received (notebooks/), and content hashes that say
whether anything changed.

A notebook is a list of cells of four kinds: "answer" (a solution region a student fills), "test" (a graded
check cell), "code" (the instructor's other code) and "markdown". Everything here comes from the course's own
files; nothing a student wrote is read by this module.
"""
from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from lecture2 import editions

from . import ASSIGNMENT

HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"


@dataclass
class Cell:
    """One cell of the instructor's notebook. kind: "answer", "test", "code" or "markdown"."""

    index: int
    kind: str
    source: str
    grade_id: str | None = None
    points: float = 0.0
    visible: str = ""  # what a student may see: the release's source (hidden tests removed, solutions stubbed)
    hidden: tuple[int, int] | None = None  # 1-based lines of the hidden region in `source`


@dataclass
class Notebook:
    """The instructor's version of one notebook of the assignment."""

    name: str  # file name, e.g. "01_tensors_dtypes.ipynb"
    cells: list[Cell]
    exercises: dict[str, list[str]] = field(default_factory=dict)  # test grade_id -> the answer ids it checks
    digest: str = ""  # content hash of the instructor's notebook and its release
    edition: str = editions.SOURCE  # the edition it is read in (lecture2.editions): its prose, strings, release

    @property
    def stem(self) -> str:
        return self.name.removesuffix(".ipynb")

    @property
    def answer_ids(self) -> list[str]:
        return [c.grade_id for c in self.cells if c.kind == "answer"]

    @property
    def tests(self) -> list[Cell]:
        return [c for c in self.cells if c.kind == "test"]

    @property
    def max_score(self) -> float:
        return sum(c.points for c in self.tests)

    @property
    def grade_ids(self) -> set[str]:
        return {c.grade_id for c in self.cells if c.grade_id}

    def cell(self, grade_id: str) -> Cell:
        return next(c for c in self.cells if c.grade_id == grade_id)

    def stubs(self) -> dict[str, str]:
        return {c.grade_id: c.visible for c in self.cells if c.kind == "answer"}

    def answer_names(self) -> list[str]:
        """The names the instructor's answer cells define at their top level (functions, classes, constants):
        in the judge, each is the student's, reached through lecture2.answers."""
        names: list[str] = []
        for cell in self.cells:
            if cell.kind == "answer":
                for name in top_level_names(cell.source):
                    if name not in names:
                        names.append(name)
        return names


def top_level_names(source: str) -> list[str]:
    """Names a cell binds at its top level (defs, classes, imports, assignment and loop targets, also inside
    top-level if/for/while/try/with blocks), in order; [] for a cell that does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    names: list[str] = []

    def bind(target) -> None:
        for sub in ast.walk(target):
            if isinstance(sub, ast.Name) and sub.id not in names:
                names.append(sub.id)

    def visit(statements: list) -> None:
        for node in statements:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bind(ast.Name(node.name))
                continue
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    if alias.name != "*":
                        bind(ast.Name((alias.asname or alias.name).split(".")[0]))
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    bind(target)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
                bind(node.target)
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    if item.optional_vars is not None:
                        bind(item.optional_vars)
            for block in ("body", "orelse", "finalbody"):
                inner = getattr(node, block, None)
                if isinstance(inner, list):
                    visit(inner)
            for handler in getattr(node, "handlers", []) or []:
                visit(handler.body)

    visit(tree.body)
    return names


def hidden_range(source: str) -> tuple[int, int] | None:
    lines = source.splitlines()
    begin = next((i for i, line in enumerate(lines, 1) if line.strip() == HIDDEN_BEGIN), None)
    end = next((i for i, line in enumerate(lines, 1) if line.strip() == HIDDEN_END), None)
    return (begin, end) if begin and end and begin < end else None


def load(source_path: Path, release_path: Path, edition: str = editions.SOURCE) -> Notebook:
    """The instructor's notebook: cells from `source_path` (hidden tests and all) as `edition` reads it
    (lecture2.editions.in_edition: the same code and checks, its own strings), what students see from
    `release_path` (that edition's release: the stubs, the visible tests). Both are the course's own files."""
    source = editions.in_edition(nbformat.read(source_path, as_version=4), edition)
    release = nbformat.read(release_path, as_version=4)
    visible = {c.metadata.get("nbgrader", {}).get("grade_id"): c.source for c in release.cells}
    cells, exercises, pending = [], {}, []
    for index, cell in enumerate(source.cells):
        meta = cell.metadata.get("nbgrader", {})
        gid = meta.get("grade_id")
        if cell.cell_type != "code":
            kind = "markdown"
        elif meta.get("solution"):
            kind = "answer"
        elif meta.get("grade"):
            kind = "test"
        else:
            kind = "code"
        text = cell.source.replace("\r\n", "\n")
        shown = visible.get(gid, text) if gid else text
        if kind == "answer" and gid not in visible:
            raise ValueError(f"{release_path.name}: no release cell for answer {gid}: run `make release`")
        cells.append(Cell(index, kind, text, gid, float(meta.get("points", 0) or 0) if kind == "test" else 0.0,
                          shown, hidden_range(text) if kind == "test" else None))
        if kind == "answer":
            pending.append(gid)
        elif kind == "test":
            exercises[gid] = pending
            pending = []
    digest = hashlib.sha256(source_path.read_bytes() + b"\0" + release_path.read_bytes() + b"\0"
                            + edition.encode()).hexdigest()
    return Notebook(source_path.name, cells, exercises, digest, edition)


def release_folder(course: Path, edition: str = editions.SOURCE) -> Path:
    """Where `edition`'s release lies in the course: notebooks/lec02, notebooks/lec02-en."""
    return course / "notebooks" / editions.EDITIONS[edition].folder


def load_course(course: Path, edition: str = editions.SOURCE) -> dict[str, Notebook]:
    """Every notebook of the assignment in `edition`, by file name (SystemExit with what to do when one is
    missing)."""
    sources = sorted((course / "solutions" / ASSIGNMENT).glob("*.ipynb"))
    if not sources:
        raise SystemExit(f"error: no notebooks in {course / 'solutions' / ASSIGNMENT}")
    notebooks = {}
    for path in sources:
        release = release_folder(course, edition) / path.name
        if not release.is_file():
            raise SystemExit(f"error: {release} is missing: run `make release`")
        notebooks[path.name] = load(path, release, edition)
    return notebooks


def load_editions(course: Path) -> dict[str, dict[str, Notebook]]:
    """The assignment in each edition the course has released (the source's always): edition -> load_course. A
    student's notebook is graded in the edition it names (lecture2.editions.of_file): the same checks and grade_ids,
    the messages in its language."""
    return {code: load_course(course, code) for code in editions.EDITIONS
            if code == editions.SOURCE or release_folder(course, code).is_dir()}


def tree_digest(folder: Path, pattern: str = "*") -> str:
    """Content hash of the files of a package folder (names and bytes), e.g. lecture2/ or this grader: every file
    (lecture2's profiles/*.json are read by its checks), compiled bytecode left out."""
    h = hashlib.sha256()
    for path in sorted(folder.rglob(pattern)):
        if "__pycache__" in path.parts or path.suffix == ".pyc" or not path.is_file():
            continue
        h.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def printable_id(text: object, limit: int = 60) -> str:
    """A grade id or file name a student wrote, safe to show anywhere: ASCII letters, digits and _.- as they
    are, anything else escaped (\\x1b, \\r, \\u202e ...), at most `limit` characters."""
    text = str(text)
    if re.fullmatch(r"[A-Za-z0-9_.\- ]{1,%d}" % limit, text):
        return text
    escaped = text.encode("unicode_escape").decode("ascii")
    return escaped[:limit] + ("…" if len(escaped) > limit else "")
