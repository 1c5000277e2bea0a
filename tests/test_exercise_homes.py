"""Does every exercise have its three hand-edited homes, and does each fact of it live in one of them?

    solutions/lec02/NN_*.ipynb       the answer cell (solution region) and its test cell (groups and their weights)
    lecture2/exercises/<topic>.py     the cases, the hints, and the exercise's ORACLE row
    tests/planted/nbNN.py             the usual mistakes, each with the hint it must draw

Everything else is made from these (docs/writing-checks.md, "Adding an exercise"): the release (`make release`),
the tables of docs/ and README (`tools/docs.py`), the committed outputs (`tools/execute_notebooks.py`). These checks
read files only: a missing home fails here at once, with what to add, before any notebook runs.
"""
from __future__ import annotations

import pytest

from conftest import RELEASE, SOLUTIONS, notebook_names
from lecture2_grader import course
from lecture2_grader.score import exercise_groups
from planted import all_planted
from tools.docs import oracles


@pytest.fixture(scope="module")
def notebooks() -> dict[str, course.Notebook]:
    return {name: course.load(SOLUTIONS / name, RELEASE / name) for name in notebook_names()}


def test_a_cells_points_are_the_sum_of_its_groups_weights(notebooks):
    """nbgrader's `points` of a test cell and the weights of `checks.exercise(..., points={...})` are one fact: the
    metadata must equal the groups' sum (the grader shares the cell's points out by the weights)."""
    wrong = [f"{name}: {cell.grade_id} has points {cell.points:g} in its nbgrader metadata but groups worth "
             f"{sum(sum(g.values()) for g in exercise_groups(cell.source).values()):g}: make them equal"
             for name, nb in notebooks.items() for cell in nb.tests
             if abs(sum(sum(g.values()) for g in exercise_groups(cell.source).values()) - cell.points) > 1e-9]
    assert not wrong, "\n".join(wrong)


def test_every_exercise_has_an_oracle_row(notebooks):
    """Each exercise a test cell checks (`checks.exercise("name", ...)`) is a row of its module's ORACLE."""
    rows = oracles()
    missing = [f"{name}: {cell.grade_id} checks {exercise!r}, which no lecture2/exercises module's ORACLE describes: "
               f"add ORACLE[{exercise!r}] = answers.Oracle(returns=..., expected=..., tampering=...)"
               for name, nb in notebooks.items() for cell in nb.tests for exercise in exercise_groups(cell.source)
               if exercise not in rows]
    assert not missing, "\n".join(missing)


def test_every_answer_cell_has_planted_mistakes(notebooks):
    planted = all_planted()
    missing = []
    for name, nb in notebooks.items():
        have = {p.grade_id for p in planted.get(name, [])}
        for gid in nb.answer_ids:
            if gid not in have:
                missing.append(f"{name}: answer cell {gid} has no usual mistake in tests/planted/nb{name[:2]}.py: add "
                               f"Planted({gid!r}, 'what the mistake is', '<the wrong cell>', HINTS['<its hint>'])")
    assert not missing, "\n".join(missing)


def test_no_test_cell_reloads_a_module(notebooks):
    """A test cell imports its checks (`from lecture2 import checks`); where its verdicts go is the caller's choice
    (checks.reporting_to), so nothing is reloaded."""
    reloading = [f"{name}: {cell.grade_id}" for name, nb in notebooks.items() for cell in nb.tests
                 if "importlib.reload" in cell.source]
    assert not reloading, reloading
