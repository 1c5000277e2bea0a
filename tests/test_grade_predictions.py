"""What the class predicted (lecture2_grader.predictions, .classpredictions): a prediction cell is read from the
file as data, never run, bounded; the class report sets the class's predictions beside the measurement the
instructor's executed notebook holds, escaped; predictions never change a point."""
from __future__ import annotations

import csv
import json
from pathlib import Path

from lecture2 import predict
from lecture2_grader import classpredictions, predictions, submission


def test_a_prediction_cell_is_read_as_literals_only():
    cell = ("my_max = 65504  # your number\nmy_choice = 'inf'\nmy_many = {'fp16': 0.0, 'bf16': None}\n"
            "my_call = print('ran')\nnot_mine = 3\nmy_nan = float('nan')\nmy_neg = -1e-8\nimport os\n")
    assert predictions.read_cell(cell) == {"my_max": 65504, "my_choice": "inf", "my_many": {"fp16": 0.0, "bf16": None},
                                           "my_neg": -1e-8}
    assert predictions.read_cell("my_x = (") == {} and predictions.read_cell("my_x = 1\n" * 2000) == {}
    assert predictions.read_cell("my_x = 'a' * 10**9") == {}  # an expression, not a literal: never evaluated
    assert predictions.read_cell("my_x = 1e999") == {}  # not finite
    deep = predictions.read_cell("my_x = [[[[1]]]]")
    assert deep == {}  # deeper than a prediction holds
    assert predictions.MIME_TYPE == predict.MIME_TYPE


def test_the_reader_keeps_each_prediction_cell_of_the_file(tmp_path):
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "source": "my_guess = 12345", "metadata": {"lecture2": {"prediction": "02-bytes"}},
         "outputs": [], "execution_count": None},
        {"cell_type": "code", "source": "my_other = 1", "metadata": {}, "outputs": [], "execution_count": None},
        {"cell_type": "code", "source": "my_x = 2", "metadata": {"lecture2": {"prediction": "\x1b[31m" * 30}},
         "outputs": [], "execution_count": None}]}
    path = tmp_path / "02_autograd.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    cells = submission.cells_of(submission.notebook_text(path))
    assert predictions.read(cells) == {"02-bytes": {"my_guess": 12345}}  # an unprintable key is no key


def _executed(course: Path, stem: str, records: list[dict]) -> None:
    folder = course / "solutions" / "lec02"
    folder.mkdir(parents=True, exist_ok=True)
    outputs = [{"output_type": "display_data", "metadata": {}, "data": {predict.MIME_TYPE: r, "text/plain": "x"}}
               for r in records]
    (folder / f"{stem}.ipynb").write_text(json.dumps({"cells": [{"cell_type": "code", "outputs": outputs}]}),
                                          encoding="utf-8")


def test_the_panel_sets_the_class_beside_the_measurement_escaped(tmp_path):
    stem = "01_tensors_dtypes"
    _executed(tmp_path, stem, [predict.record(None, 65504.0, key="01-fp16-max", what="fp16 max"),
                               predict.record({}, {"fp16": "inf", "bf16": 70144.0}, key="01-overflow", what="70000 ->")])
    results = {
        "ana": {stem: {"predictions": {"01-fp16-max": {"my_max": 65504}, "01-overflow": {"my_o": {"fp16": "inf"}}}}},
        "<b>ben</b>": {stem: {"predictions": {"01-fp16-max": {"my_max": 6.5e6}}}},
        "cy": {stem: {"predictions": {}}},
    }
    table = classpredictions.rows(tmp_path, results)
    by = {(r["key"], r["name"]): r for r in table}
    assert by[("01-fp16-max", "")]["given"] == {"ana": 65504, "<b>ben</b>": 6.5e6} and by[("01-fp16-max", "")]["measured"] == 65504.0
    assert by[("01-overflow", "fp16")]["given"] == {"ana": "inf"}
    page = "\n".join(classpredictions.section(table))
    assert "<b>ben</b>" not in page and "2 / 3" in page and "within 2×: 50%" in page and "right: <b>100%</b>" in page
    assert page.index("01-fp16-max") < page.index("01-overflow")  # the class furthest off first
    rows = list(csv.DictReader((classpredictions.write_csv(tmp_path, table)).open(encoding="utf-8")))
    assert {(r["student"], r["predicted/measured"]) for r in rows if r["key"] == "01-fp16-max"} == {
        ("ana", "1"), ("<b>ben</b>", "99.23")}
