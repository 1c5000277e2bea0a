"""Stage 7: one line per student: their score and every problem found, each named with its notebook.

    alice: 25/25 — ok
    bob: 20/25 — 01_tensors_dtypes: a cell timed out
    carol: 18/25 — 03_modules: notebook missing (0 points); 05_flops: flagged for review (scored as usual): ex05_flops_per_token line 3: imports os
"""
from __future__ import annotations

from .records import StudentRun


def report_line(student: StudentRun, max_total: float) -> str:
    """One terminal line: every problem, with anything a student could have written in it escaped."""
    from .text import terminal

    problems = "; ".join(student.problems) if student.problems else "ok"
    return terminal(f"{student.name}: {student.total:g}/{max_total:g} — {problems}", 4000)
