"""Predict, commit, measure (issue 40): every prompt to predict has a prediction cell right after it and before its
measurement, the measurement sets the prediction beside what it measured, a key is used once in the course, and
the release leaves every prediction to the student."""
from __future__ import annotations

import ast
import json

import pytest

from conftest import RELEASE, SOLUTIONS, notebook_names
from lecture2_grader import predictions
from tools import pace

PROMPT = "先预测"


def _cells(folder, name):
    return json.loads((folder / name).read_text(encoding="utf-8"))["cells"]


def _src(cell):
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _key(cell):
    return cell.get("metadata", {}).get("lecture2", {}).get("prediction")


@pytest.mark.parametrize("name", notebook_names())
def test_every_prompt_has_its_cell_before_its_measurement(name):
    cells = _cells(SOLUTIONS, name)
    for i, cell in enumerate(cells):
        if cell["cell_type"] != "markdown" or PROMPT not in _src(cell):
            continue
        j = i + 1
        while j < len(cells) and cells[j]["cell_type"] == "markdown" and PROMPT not in _src(cells[j]):
            j += 1
        assert j < len(cells) and pace.is_prediction(cells[j]), (name, i, "a prompt with no prediction cell after it")
        keys = []
        while j < len(cells) and pace.is_prediction(cells[j]):
            keys.append(_key(cells[j]))
            j += 1
        rest = "".join(_src(c) for c in cells[j:] if c["cell_type"] == "code")
        for key in keys:
            assert f'key="{key}"' in rest or f"key='{key}'" in rest, (name, key, "no predict.compare for this key")


@pytest.mark.parametrize("name", notebook_names())
def test_a_prediction_cell_holds_literals_only_and_the_release_leaves_them_none(name):
    for folder in (SOLUTIONS, RELEASE):
        for cell in _cells(folder, name):
            if not pace.is_prediction(cell):
                continue
            src = _src(cell)
            tree = ast.parse(src)
            assert tree.body and all(isinstance(n, ast.Assign) and n.targets[0].id.startswith("my_") for n in tree.body), src
            values = predictions.read_cell(src)
            assert len(values) == len(tree.body), src

            def empty(v):
                return v is None or (isinstance(v, dict) and all(empty(x) for x in v.values()))

            assert all(empty(v) for v in values.values()), (name, folder.name, "a prediction filled in", src)
            assert "prediction" in cell["metadata"].get("tags", []), (name, src)


def test_every_prediction_key_is_used_once_in_the_course():
    keys = [_key(c) for n in notebook_names() for c in _cells(SOLUTIONS, n) if pace.is_prediction(c)]
    assert len(keys) == len(set(keys)) and keys, keys
    assert all(k[:2].isdigit() for k in keys), keys


def test_the_old_prediction_forms_are_gone():
    for name in notebook_names():
        for cell in _cells(SOLUTIONS, name):
            if cell["cell_type"] == "code" and not pace.is_prediction(cell):
                assert "my_prediction" not in _src(cell) or "predict.compare" in _src(cell), (name, _src(cell)[:80])
