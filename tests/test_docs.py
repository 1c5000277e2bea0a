"""Are the docs' generated parts current, does every exercise have its oracle row, and does every name the docs
and docstrings give of the course's packages still resolve?"""
from __future__ import annotations

import ast
import importlib
import re

from tools import docs


def test_generated_tables_are_current():
    """Run `.venv/bin/python -m tools.docs` after changing a notebook's exercises or an exercise module's ORACLE."""
    assert docs.main(["--check"]) == 0


def test_every_exercise_says_how_it_is_graded():
    known = docs.oracles()
    missing = [row["exercise"] for row in docs.exercises() if row["exercise"] not in known]
    assert not missing, f"exercises without an ORACLE entry in lecture2/exercises: {missing}"


# A dotted name of the course's packages, as the docs and docstrings write one (not a path: lecture2_grader/run).
DOTTED = re.compile(r"(?<![\w/.])lecture2(?:_grader|_hub)?(?:\.[A-Za-z_]\w*)+")


def _texts() -> list[tuple[str, str]]:
    """(where, text) of every page of docs/ and every docstring of lecture2, lecture2_grader and lecture2_hub."""
    found = [(str(page.relative_to(docs.ROOT)), page.read_text(encoding="utf-8"))
             for page in sorted((docs.ROOT / "docs").glob("*.md"))]
    for package in ("lecture2", "lecture2_grader", "lecture2_hub"):
        for path in sorted((docs.ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                    text = ast.get_docstring(node, clean=False)
                    if text:
                        found.append((f"{path.relative_to(docs.ROOT)}:{getattr(node, 'lineno', 1)}", text))
    return found


def _resolves(dotted: str) -> bool:
    """Does `dotted` name a module of the course, or something one defines (imported, then looked up)?"""
    parts = dotted.split(".")
    for k in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:k]))
        except ImportError:
            continue
        for attribute in parts[k:]:
            if not hasattr(found, attribute):
                return False
            found = getattr(found, attribute)
        return True
    return False


def test_every_dotted_name_in_the_docs_and_docstrings_resolves():
    """A name such as `lecture2_grader.run.dask_worker.WorkerSetup` in docs/ or a docstring is imported and looked up:
    one that a module no longer has (moved, renamed, removed) is a doc that drifted. Paths (lecture2_grader/run) and
    commands are not dotted names."""
    wrong = sorted({f"{name} ({where})" for where, text in _texts() for name in DOTTED.findall(text)
                    if not _resolves(name)})
    assert not wrong, "names that no longer resolve:\n" + "\n".join(wrong)
