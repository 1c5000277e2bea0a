"""The course as a lecture a student can finish (issue 40): every notebook states the minutes tools/pace.py computes
from it, each core fits NOTEBOOK_MAX and the course's COURSE_MAX, optional depth carries no point and nothing the
core needs, and no visible cell of the core is longer than a screen."""
from __future__ import annotations

import json

import pytest

from conftest import SOLUTIONS, notebook_names
from lecture2 import editions
from tools import pace

MAX_CORE_CELL_LINES = 30


def _cells(name: str) -> list[dict]:
    return json.loads((SOLUTIONS / name).read_text(encoding="utf-8"))["cells"]


@pytest.mark.parametrize("name", notebook_names())
def test_a_notebook_states_the_minutes_the_rule_gives_and_fits_its_budget(name):
    core, deep = pace.notebook_pace(SOLUTIONS / name)
    assert pace.stated(SOLUTIONS / name) == (core.minutes, deep.minutes or None), (name, core, deep)
    assert core.minutes <= pace.NOTEBOOK_MAX, (name, core)


def test_the_course_core_fits_four_hours():
    total = sum(pace.notebook_pace(SOLUTIONS / n)[0].minutes for n in notebook_names())
    assert total <= pace.COURSE_MAX, total


@pytest.mark.parametrize("name", notebook_names())
def test_depth_is_marked_carries_no_point_and_no_core_cell_is_longer_than_a_screen(name):
    cells = _cells(name)
    for i, cell in enumerate(cells):
        src = "".join(cell["source"])
        nbgrader = cell.get("metadata", {}).get("nbgrader", {})
        if pace.is_deep(cell):
            assert not nbgrader.get("grade") and not nbgrader.get("solution"), (name, i, "a graded cell in depth")
            if cell["cell_type"] == "markdown" and src.lstrip().startswith("## "):
                assert src.lstrip().startswith("## 深入（可跳过）"), (name, i, src[:60])
            continue
        if cell["cell_type"] == "code" and not nbgrader.get("grade") and not nbgrader.get("solution"):
            lines = [ln for ln in src.splitlines() if ln.strip()]
            assert len(lines) <= MAX_CORE_CELL_LINES, (name, i, len(lines), lines[0] if lines else "")
    deep_starts = [i for i, c in enumerate(cells) if pace.is_deep(c) and (i == 0 or not pace.is_deep(cells[i - 1]))]
    for i in deep_starts:
        first = "".join(cells[i]["source"]).lstrip()
        assert cells[i]["cell_type"] == "markdown" and first.startswith("## 深入（可跳过）"), (name, i, first[:60])


def _translated() -> list[str]:
    from tools import editions as tool

    return [p.name for p in tool.translated_paths()]


@pytest.mark.parametrize("name", _translated())
def test_the_english_edition_states_the_minutes_the_rule_gives_its_own_prose(name):
    """Each edition's minutes come from its own prose (`python -m tools.pace --edition en --restate` writes them);
    the English course's total is what the rule gives it, each notebook's core within NOTEBOOK_MAX."""
    core, deep = pace.notebook_pace(SOLUTIONS / name, "en")
    assert pace.stated(SOLUTIONS / name, "en") == (core.minutes, deep.minutes or None), (name, core, deep)
    assert core.minutes <= pace.NOTEBOOK_MAX, (name, core)
    cells = editions.in_edition(json.loads((SOLUTIONS / name).read_text(encoding="utf-8")), "en")["cells"]
    for i, cell in enumerate(cells):
        src = "".join(cell["source"]).lstrip()
        if pace.is_deep(cell) and (i == 0 or not pace.is_deep(cells[i - 1])):
            assert src.startswith("## Optional depth"), (name, i, src[:60])
