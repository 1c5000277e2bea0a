"""lecture2_grader.submission: notebook files as students save them (or break them), and their answers."""
from __future__ import annotations

import json

import nbformat
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import submissions as sub
from conftest import RELEASE, SOLUTIONS
from lecture2_grader import course
from lecture2_grader.submission import Unreadable, read_answers

NAME = "01_tensors_dtypes.ipynb"
NB = course.load(SOLUTIONS / NAME, RELEASE / NAME)
REF = sub.reference_answers(NAME)


def answers_of(tmp_path, data):
    path = tmp_path / NAME
    sub.write(data, path)
    return read_answers(path, NB.answer_ids, NB.stubs(), NB.grade_ids,
                        {c.visible: c.index for c in NB.cells if c.kind != "markdown"},
                        {c.grade_id: c.index for c in NB.cells if c.grade_id})


@pytest.mark.parametrize("save", [lambda nb: nb, sub.with_bom, sub.with_crlf, sub.utf16, sub.nbformat3],
                         ids=["plain", "utf8-bom", "crlf", "utf16", "nbformat3"])
def test_every_way_of_saving_gives_the_same_answers(tmp_path, save):
    """Is a BOM, CRLF, UTF-16 or nbformat 3 read as the same answers, with no problem reported?"""
    got = answers_of(tmp_path, save(sub.filled(NAME)))
    assert got.sources == {gid: REF[gid] for gid in NB.answer_ids}
    assert got.problems == [] and got.own_cells == []


@pytest.mark.parametrize("data, message", [
    ("{ not json", "invalid JSON"),
    ("[1, 2]", "not an object"),
    ('{"nbformat": 2, "worksheets": []}', "nbformat 2"),
    ("café".encode("latin-1"), "not UTF-8 text"),
    ('{"nbformat": 4, "cells": [{"source": ' + "1" * 5000 + '}]}', "invalid JSON"),  # a 5,000-digit number
    ('{"nbformat": 3, "worksheets": [{"cells": null}]}', None),
    ('{"nbformat": 4, "cells": ' + "[" * 100_000 + "]" * 100_000 + "}", "invalid JSON"),
    ('{"nbformat": {"\\u001b[31m": 1}, "cells": 5}', "\\\\x1b"),
])
def test_broken_files_are_explained_or_read_as_empty(tmp_path, data, message):
    if message is None:
        assert answers_of(tmp_path, data).sources == {}
        return
    with pytest.raises(Unreadable, match=message):
        answers_of(tmp_path, data)


def test_stripped_metadata_and_retyped_def_lines_are_matched_by_what_the_cells_define(tmp_path):
    """A notebook copied into a new one (no nbgrader metadata) whose def lines lost their type hints: the
    answers are still found, by the names the stubs define."""
    nb = sub.stripped(sub.filled(NAME))
    for cell in nb.cells:
        cell.source = cell.source.replace("(shape: tuple[int, ...], dtype: torch.dtype) -> int:", "(shape, dtype):")
    got = answers_of(tmp_path, nb)
    assert set(got.sources) == set(NB.answer_ids)
    assert "def tensor_bytes(shape, dtype):" in got.sources["ex01_tensor_bytes"]
    assert any("answers found by what they define" in p for p in got.problems)
    assert got.own_cells == [], "the course's own cells, copied, are not the student's"


def test_grade_ids_a_student_wrote_are_shown_escaped(tmp_path):
    nb = sub.filled(NAME)
    nb.cells.append(nbformat.v4.new_code_cell("x = 1", metadata={"nbgrader": {"grade_id": "evil\x1b[2J\r\nalice: 7/7"}}))
    problem = next(p for p in answers_of(tmp_path, nb).problems if "unknown grade_ids" in p)
    assert "\x1b" not in problem and "\n" not in problem and "\\x1b" in problem


def test_the_students_own_cells_are_kept_with_their_place(tmp_path):
    nb = sub.filled(NAME)
    at = next(i for i, c in enumerate(nb.cells) if sub.grade_id(c) == "ex01_tensor_bytes")
    nb.cells.insert(at, nbformat.v4.new_code_cell("GiB = 2**30\ndef helper(x):\n    return x"))
    nb.cells.append(nbformat.v4.new_code_cell("print('scratch')"))
    got = answers_of(tmp_path, nb)
    assert [c.source.split("\n")[0] for c in got.own_cells] == ["GiB = 2**30", "print('scratch')"]
    assert got.own_cells[0].anchor < NB.cell("ex01_tensor_bytes").index < got.own_cells[1].anchor


def test_a_lone_surrogate_is_replaced_not_a_crash(tmp_path):
    text = json.dumps(json.loads(sub.as_text(sub.filled(NAME))))
    text = text.replace("return int(numel * dtype.itemsize)", "return int(numel * dtype.itemsize)  # \\ud800")
    source = answers_of(tmp_path, text).sources["ex01_tensor_bytes"]
    source.encode("utf-8")  # writable everywhere


def test_a_huge_answer_is_not_graded(tmp_path):
    got = answers_of(tmp_path, sub.filled(NAME, ex01_tensor_bytes="x = 1\n" * 40_000))
    assert "ex01_tensor_bytes" not in got.sources and any("over the limit" in p for p in got.problems)


cell_values = st.fixed_dictionaries({}, optional={
    "cell_type": st.sampled_from(["code", "markdown", "raw", 3, None]),
    "source": st.one_of(st.text(max_size=40), st.lists(st.one_of(st.text(max_size=10), st.integers()), max_size=3),
                        st.integers(), st.none()),
    "metadata": st.one_of(st.none(), st.just([]), st.fixed_dictionaries({}, optional={"nbgrader": st.one_of(
        st.none(), st.fixed_dictionaries({}, optional={"grade_id": st.one_of(st.sampled_from(NB.answer_ids), st.text(max_size=8),
                                                                              st.integers())}))})),
})
notebooks = st.fixed_dictionaries({}, optional={
    "nbformat": st.one_of(st.just(4), st.just(3), st.integers(), st.text(max_size=3), st.none()),
    "cells": st.one_of(st.lists(st.one_of(cell_values, st.integers(), st.none()), max_size=6), st.none(), st.text(max_size=4)),
    "worksheets": st.one_of(st.lists(st.one_of(st.fixed_dictionaries({}, optional={"cells": st.one_of(
        st.none(), st.lists(cell_values, max_size=4))}), st.integers()), max_size=2), st.none()),
})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(notebooks)
def test_any_notebook_json_is_read_or_refused_as_unreadable(tmp_path, data):
    """Whatever JSON a file holds, reading it gives answers or Unreadable: never another exception."""
    try:
        answers_of(tmp_path, json.dumps(data))
    except Unreadable:
        pass
