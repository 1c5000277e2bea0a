"""Exercises make the student derive (issue 40): every answer cell says what the student works out and of which
kind, and at least 80% of them derive or build."""
from __future__ import annotations

from tools import docs


def test_every_exercise_says_what_it_asks_and_most_derive_or_build():
    rows = docs.answer_cells()
    missing = [r["grade_id"] for r in rows if not r["derives"] or r["kind"] not in docs.KINDS]
    assert not missing, missing
    share = sum(r["kind"] in ("derivation", "implementation") for r in rows) / len(rows)
    assert share >= 0.8, share
