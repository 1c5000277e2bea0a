"""The class grader (tools/grade.py) on a corpus of faulty submissions, generated here from the solutions.

Each student's exact score and report line is asserted. The corpus uses notebook 01 only (7 points:
tensor_bytes 2, float_format_limits 3, weight_memory 2) so that grading 17 students stays quick.
"""
from __future__ import annotations

import csv
import shutil

import nbformat
import pytest

from conftest import ASSIGNMENT, RELEASE, ROOT, SOLUTIONS
from tools import grade

pytestmark = pytest.mark.slow
NOTEBOOK = "01_tensors_dtypes.ipynb"
STEM = NOTEBOOK.removesuffix(".ipynb")


def _filled(**replace: str) -> nbformat.NotebookNode:
    """The release with each solution cell typed in: the reference, or replace[grade_id]."""
    reference = {c.metadata["nbgrader"]["grade_id"]: c.source for c in nbformat.read(SOLUTIONS / NOTEBOOK, 4).cells
                 if c.metadata.get("nbgrader", {}).get("solution")}
    nb = nbformat.read(RELEASE / NOTEBOOK, as_version=4)
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in reference:
            cell.source = replace.get(gid, reference[gid])
    return nb


BITS = "def tensor_bytes(shape, dtype):\n    return math.prod(shape) * dtype.itemsize * 8\n"
GIB = "def weight_memory(n_params, dtype, unit='GB'):\n    return n_params * dtype.itemsize / 2**30\n"


def _cells(nb, keep=lambda c: True, change=None):
    nb.cells = [change(c) if change else c for c in nb.cells if keep(c)]
    return nb


def _gid(cell) -> str | None:
    return cell.metadata.get("nbgrader", {}).get("grade_id")


def corpus() -> dict[str, tuple[object, float, list[str]]]:
    """student -> (their notebook, or a str of raw file text, or None for none; score; report fragments)."""
    ref = {c.metadata["nbgrader"]["grade_id"]: c.source for c in nbformat.read(SOLUTIONS / NOTEBOOK, 4).cells
           if c.metadata.get("nbgrader", {}).get("solution")}
    duplicated = _filled()
    check = next(c for c in duplicated.cells if _gid(c) == "ex01_tensor_bytes_check")
    duplicated.cells.insert(duplicated.cells.index(check) + 1, nbformat.from_dict(dict(check)))

    def to_markdown(cell):
        if _gid(cell) == "ex01_float_format_check":
            return nbformat.v4.new_markdown_cell(cell.source, metadata=cell.metadata)
        return cell

    def emptied(cell):
        if _gid(cell) == "ex01_tensor_bytes_check":
            cell.source = "pass"
        return cell

    return {
        "correct": (_filled(), 7, ["ok"]),
        "blank": (nbformat.read(RELEASE / NOTEBOOK, as_version=4), 0, ["ok"]),
        "planted-mistake": (_filled(ex01_tensor_bytes=BITS), 5, ["ok"]),
        "infinite-loop": (_filled(ex01_tensor_bytes="def tensor_bytes(shape, dtype):\n    while True:\n        pass\n"),
                          5, [f"{STEM}: a cell timed out"]),
        "memory-hog": (_filled(ex01_weight_memory="hog = bytearray(40 * 2**30)\n" + ref["ex01_weight_memory"]),
                       5, [f"{STEM}: out of memory"]),
        "exit-kernel": (_filled(ex01_float_format="import os\nos._exit(1)\n" + ref["ex01_float_format"]),
                        4, [f"{STEM}: os._exit blocked"]),
        "invalid-json": ("{ this is not a notebook", 0, [f"{STEM}: not a valid notebook"]),
        "missing-notebook": (None, 0, [f"{STEM}: notebook missing"]),
        "deleted-test-cell": (_cells(_filled(), keep=lambda c: _gid(c) != "ex01_weight_memory_check"), 7,
                              [f"{STEM}: test cell ex01_weight_memory_check deleted (restored)"]),
        "duplicated-cell": (duplicated, 7, [f"{STEM}: duplicated cell ex01_tensor_bytes_check removed"]),
        "edited-test-cell": (_cells(_filled(ex01_tensor_bytes=BITS), change=emptied), 5,
                             [f"{STEM}: test cell ex01_tensor_bytes_check edited (restored)"]),
        "retyped-cell": (_cells(_filled(), change=to_markdown), 7,
                         [f"{STEM}: cell ex01_float_format_check changed to markdown (restored)"]),
        "overwritten-inputs": (_filled(ex01_tensor_bytes=BITS + "torch.Tensor.nbytes = property(lambda t: t.numel() * t.element_size() * 8)\n"),
                               5, [f"{STEM}: monkeypatching undone (torch.Tensor.nbytes)"]),
        "patched-checks": (_filled(ex01_weight_memory=GIB + "import lecture2.checks\nlecture2.checks.expect_close = lambda *a, **k: None\n"),
                           5, [f"{STEM}: monkeypatching undone (lecture2.checks.expect_close)"]),
        "patched-math": (_filled(ex01_weight_memory=GIB + "math.isclose = lambda *a, **k: True\n"),
                         5, [f"{STEM}: monkeypatching undone (math.isclose)"]),
        "patched-builtins": (_filled(ex01_tensor_bytes="import builtins\nbuiltins.isinstance = lambda *a: True\n"
                                     "def tensor_bytes(shape, dtype):\n    return torch.tensor(math.prod(shape) * dtype.itemsize)\n"),
                             5, [f"{STEM}: monkeypatching undone (builtins.isinstance)"]),
        "unexpected-files": (_filled(), 7, ["unexpected files ignored: data.bin, lecture2.py"]),
    }


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    course = tmp_path_factory.mktemp("class")
    shutil.copy(ROOT / "nbgrader_config.py", course)
    for kind, folder in (("solutions", SOLUTIONS), ("notebooks", RELEASE)):
        (course / kind / ASSIGNMENT).mkdir(parents=True)
        shutil.copy(folder / NOTEBOOK, course / kind / ASSIGNMENT)
    cases = corpus()
    for student, (nb, _, _) in cases.items():
        folder = course / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        if isinstance(nb, str):
            (folder / NOTEBOOK).write_text(nb, encoding="utf-8")
        elif nb is not None:
            nbformat.write(nb, folder / NOTEBOOK)
    (course / "submitted" / "unexpected-files" / ASSIGNMENT / "data.bin").write_bytes(b"\0" * 1024)
    (course / "submitted" / "unexpected-files" / ASSIGNMENT / "lecture2.py").write_text(
        "raise SystemExit('a planted module that shadows lecture2')\n", encoding="utf-8")
    students = grade.grade_class(course, jobs=2, cell_timeout=15, memory_limit=grade._parse_bytes("4GiB"))
    return course, cases, {s.name: s for s in students}


def test_every_student_gets_exactly_their_score(graded):
    """Does each fault cost only the points of the part it touched?"""
    _, cases, students = graded
    assert set(students) == set(cases), "a student was lost"
    wrong = {name: (students[name].total, want) for name, (_, want, _) in cases.items() if students[name].total != want}
    assert not wrong, f"(got, expected) points: {wrong}"


def test_every_problem_is_reported_in_one_line(graded):
    _, cases, students = graded
    for name, (_, _, fragments) in cases.items():
        line = grade.report_line(students[name], 7)
        assert line.startswith(f"{name}: {cases[name][1]:g}/7 — "), line
        for fragment in fragments:
            assert fragment in line, f"{name}: {fragment!r} not in report line {line!r}"
        if fragments == ["ok"]:
            assert line.endswith("— ok"), line


def test_grades_csv_and_feedback(graded):
    """Is there a CSV row per student with per-notebook and total scores, and feedback without hidden tests?"""
    course, cases, _ = graded
    rows = {r["student"]: r for r in csv.DictReader((course / "grades.csv").open(encoding="utf-8"))}
    assert set(rows) == set(cases)
    for name, (_, want, _) in cases.items():
        assert float(rows[name]["total"]) == want and float(rows[name][STEM]) == want
        assert rows[name]["max_total"] == "7"
    page = (course / "feedback" / "correct" / ASSIGNMENT / "01_tensors_dtypes.html").read_text(encoding="utf-8")
    assert "HIDDEN TESTS" not in page and "rng = random.Random(20260201)" not in page


def test_rerun_gives_the_same_result(graded):
    """Does grading a student again replace, not add to, their grades?"""
    course, cases, students = graded
    again = grade.grade_class(course, jobs=1, cell_timeout=15, memory_limit=None, students=["planted-mistake"])
    assert again[0].total == students["planted-mistake"].total == 5
    rows = list(csv.DictReader((course / "grades.csv").open(encoding="utf-8")))
    assert [r["total"] for r in rows] == ["5"]


def test_bad_course_folder_is_explained(tmp_path):
    with pytest.raises(SystemExit, match="not the course folder"):
        grade.grade_class(tmp_path, 1, 10, None)
    (tmp_path / "nbgrader_config.py").write_text("")
    with pytest.raises(SystemExit, match="no submissions"):
        grade.grade_class(tmp_path, 1, 10, None)
