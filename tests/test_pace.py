"""tools/pace.py: the minutes a notebook states come from one rule over what it holds (prose, code, exercises,
predictions), its optional depth (cells tagged `deep`) counted apart."""
from __future__ import annotations

import json
from pathlib import Path

from tools import pace


def _nb(tmp_path: Path, cells: list[dict]) -> Path:
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}), encoding="utf-8")
    return path


def _md(text: str, deep: bool = False) -> dict:
    return {"cell_type": "markdown", "source": text, "metadata": {"tags": ["deep"]} if deep else {}}


def _code(text: str, **metadata) -> dict:
    return {"cell_type": "code", "source": text, "metadata": metadata, "outputs": [], "execution_count": None}


def test_each_part_of_a_notebook_counts_by_the_rule(tmp_path):
    cells = [
        _md("# 01 · 标题\n\n预计 9 分钟\n\n" + "字" * 600 + " a formula $x = y$ is not words, `code` neither"),
        _code("import torch\n\n# a comment\nx = 1\ny = 2\n"),  # 3 lines
        _code("my_guess = None", lecture2={"prediction": "guess"}, tags=["prediction"]),
        _code("def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION", nbgrader={"solution": True}),
        _code("assert f() == 1\n" * 50, nbgrader={"grade": True, "points": 1}),  # a check: run, not read
        _md("深入 " + "字" * 3000, deep=True),
        _code("z = 3\n" * 30, tags=["deep"]),
    ]
    core, deep = pace.notebook_pace(_nb(tmp_path, cells))
    assert (core.cjk, core.code_lines, core.exercises, core.predictions) == (606, 3, 1, 1)
    assert core.words == 6  # "a formula is not words, neither": formulas and code spans left out
    assert core.minutes == 9  # 606/300 + 6/200 + 3/15 + 5 + 1 = 8.3 -> 9
    assert (deep.cjk, deep.code_lines) == (3002, 30) and deep.minutes == 13
    assert pace.stated(_nb(tmp_path, cells)) == (9, None)


def test_each_edition_counts_its_own_prose_and_the_glossary_is_optional(tmp_path):
    """The English edition's minutes come from its English (200 words a minute), stated as "about N minutes";
    a cell tagged `glossary` counts as optional depth."""
    first = _md("预计 1 分钟 · " + "字" * 290)
    first["metadata"] = {"lecture2": {"en": {"source": "about 2 minutes · " + "word " * 290}}}
    glossary = _md("术语 " * 600)
    glossary["metadata"] = {"tags": ["glossary"], "lecture2": {"en": {"source": "term " * 400}}}
    path = _nb(tmp_path, [first, glossary])
    assert pace.notebook_pace(path)[0].minutes == 1 and pace.notebook_pace(path, "en")[0].minutes == 2
    assert pace.notebook_pace(path, "en")[1].minutes == 2
    assert pace.stated(path) == (1, None) and pace.stated(path, "en") == (2, None)
