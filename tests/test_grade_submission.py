"""tools/grade/submission.py: notebook files as students save them, and their answer cells."""
from __future__ import annotations

import pytest

import submissions as sub
from conftest import RELEASE, SOLUTIONS
from tools.grade import splice
from tools.grade.submission import Unreadable, read_answers

NAME = "01_tensors_dtypes.ipynb"
NB = splice.load(SOLUTIONS / NAME, RELEASE / NAME)
REF = sub.reference_answers(NAME)


def answers_of(tmp_path, data):
    path = tmp_path / NAME
    sub.write(data, path)
    return read_answers(path, NB.answer_ids, NB.stubs(), {c.grade_id for c in NB.cells if c.grade_id})


@pytest.mark.parametrize("save", [lambda nb: nb, sub.with_bom, sub.with_crlf, sub.utf16, sub.nbformat3],
                         ids=["plain", "utf8-bom", "crlf", "utf16", "nbformat3"])
def test_every_way_of_saving_gives_the_same_answers(tmp_path, save):
    """Is a BOM, CRLF, UTF-16 or nbformat 3 read as the same answers, with no problem reported?"""
    got = answers_of(tmp_path, save(sub.filled(NAME)))
    assert got.sources == {gid: REF[gid] for gid in NB.answer_ids}
    assert got.problems == []


@pytest.mark.parametrize("data, message", [
    ("{ not json", "invalid JSON"),
    ("[1, 2]", "not an object"),
    ('{"nbformat": 2, "worksheets": []}', "nbformat 2"),
    ("café".encode("latin-1"), "not UTF-8 text"),
])
def test_unreadable_files_are_explained(tmp_path, data, message):
    with pytest.raises(Unreadable, match=message):
        answers_of(tmp_path, data)


def test_stripped_metadata_is_matched_by_the_first_line(tmp_path):
    got = answers_of(tmp_path, sub.stripped(sub.filled(NAME)))
    assert got.sources == {gid: REF[gid] for gid in NB.answer_ids}
    assert got.problems == [f"nbgrader metadata missing: answers found by their first line ({', '.join(NB.answer_ids)})"]


def test_a_missing_answer_cell_is_reported(tmp_path):
    nb = sub.filled(NAME)
    nb.cells = [c for c in nb.cells if sub.grade_id(c) != "ex01_weight_memory"]
    got = answers_of(tmp_path, nb)
    assert "ex01_weight_memory" not in got.sources
    assert "answer cell ex01_weight_memory missing (0 points for its exercise)" in got.problems
