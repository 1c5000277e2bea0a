"""Does lecture2_grader keep its layers (docs/architecture.md): each module imports only modules of its own layer or
of the layers below, and the student's process (judging/kernel.py) imports nothing of the grader at all?"""
from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

GRADER = ROOT / "lecture2_grader"
# Lowest first. A module may import its own layer's and lower layers' modules; a layer's row says what it holds.
LAYERS = [
    ("ground", {"text", "files", "source", "course", "records", "sandbox", "runtime", "draws", "predictions",
                "messages"}),
    ("a notebook's parts", {"submission", "scan", "plan", "owncells", "advice", "score", "judging", "store", "report",
                            "release_feedback"}),
    ("one notebook", {"pipeline", "feedback", "artifacts", "readers"}),
    ("where judges run, the term", {"run", "validate", "gradebook", "intake", "collect"}),
    ("the class", {"classrun", "classreport", "classpredictions", "export", "handin"}),
    ("commands", {"watch", "cli", "__main__", "nbgrader_hooks", "__init__"}),
]
APART = {"judging/kernel.py"}  # runs inside the sandbox: the standard library and lecture2 only


def _module(path: Path) -> str:
    """A file's top-level module name inside the package: run/dask.py -> run, intake/term.py -> intake."""
    return path.relative_to(GRADER).parts[0].removesuffix(".py")


def _imports(path: Path) -> set[str]:
    """The package's top-level modules `path` imports (relative or absolute, anywhere in the file)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    inner = path.parent != GRADER
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 0 and (node.module or "").startswith("lecture2_grader"):
                rest = (node.module or "").split(".")[1:]
                found |= {rest[0]} if rest else {a.name for a in node.names}
            elif node.level == 1 and not inner or node.level == 2 and inner:
                found |= {node.module.split(".")[0]} if node.module else {a.name for a in node.names}
            elif node.level == 1 and inner:
                found.add(_module(path))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("lecture2_grader."):
                    found.add(alias.name.split(".")[1])
    return found - {"ASSIGNMENT"}


def test_every_module_imports_only_its_layer_and_those_below():
    layer_of = {name: k for k, (_, names) in enumerate(LAYERS) for name in names}
    files = [p for p in GRADER.rglob("*.py") if "__pycache__" not in p.parts]
    unplaced = sorted({_module(p) for p in files} - set(layer_of))
    assert not unplaced, f"modules of lecture2_grader in no layer of this test (add them, and to docs/architecture.md): {unplaced}"
    wrong = []
    for path in files:
        mine = _module(path)
        for other in _imports(path):
            if path.relative_to(GRADER).as_posix() in APART:
                wrong.append(f"{path.relative_to(ROOT)} imports {other}: the student's process holds nothing of the grader")
            elif other in layer_of and layer_of[other] > layer_of[mine]:
                wrong.append(f"{path.relative_to(ROOT)} ({LAYERS[layer_of[mine]][0]}) imports {other} "
                             f"({LAYERS[layer_of[other]][0]}): an arrow back up")
    assert not wrong, "\n".join(wrong)
