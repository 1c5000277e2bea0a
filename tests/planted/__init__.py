"""The usual wrong answers to every exercise, as data beside the solutions.

One module per notebook, each with `NOTEBOOK` (file name) and `MISTAKES`: a list of `Planted`, the source
of a wrong solution cell and the text its check must answer with. The tests prove that each one fails
and draws its own hint while the reference solution passes (tests/test_exercises.py), a mistake marked
`visible` already in the checks a student can run before grading, and the grading round trip plants one
of them in a submission (tests/test_grading.py).
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass


@dataclass(frozen=True)
class Planted:
    grade_id: str  # the solution cell it replaces
    name: str  # what the mistake is
    source: str  # the wrong cell
    expect: str  # text the check's failure message must contain (usually a hint from checks.HINTS)
    visible: bool = False  # the exercise's statement warns about it: the visible checks must catch it too


def all_planted() -> dict[str, list[Planted]]:
    """Notebook file name -> its planted mistakes."""
    found = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        found[module.NOTEBOOK] = module.MISTAKES
    return found
