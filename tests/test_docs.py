"""Are the docs' generated tables current, and does every exercise have its oracle row?"""
from __future__ import annotations

from tools import docs


def test_generated_tables_are_current():
    """Run `.venv/bin/python -m tools.docs` after changing a notebook's exercises or an exercise module's ORACLE."""
    assert docs.main(["--check"]) == 0


def test_every_exercise_says_how_it_is_graded():
    known = docs.oracles()
    missing = [row["exercise"] for row in docs.exercises() if row["exercise"] not in known]
    assert not missing, f"exercises without an ORACLE entry in lecture2/exercises: {missing}"
