"""Stage 7: one line per student: their score and every problem found, each named with its notebook.

    alice: 25/25 — ok
    bob: 20/25 — 01_tensors_dtypes: a cell timed out
    carol: 18/25 — 03_modules: notebook missing (0 points); 05_flops: flagged for review (scored as usual): ex05_matmul_flops line 3: imports os
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Student:
    """One student's grading: problems found (already prefixed with the notebook), scores per notebook."""

    name: str
    problems: list[str] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)  # notebook stem -> points (from the gradebook)
    seconds: float = 0.0

    @property
    def total(self) -> float:
        return sum(self.scores.values())


def report_line(student: Student, max_total: float) -> str:
    """One terminal line: every problem, with anything a student could have written in it escaped."""
    from .text import terminal

    problems = "; ".join(student.problems) if student.problems else "ok"
    return terminal(f"{student.name}: {student.total:g}/{max_total:g} — {problems}", 4000)
