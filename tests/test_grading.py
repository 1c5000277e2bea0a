"""The nbgrader round trip: release -> submissions -> autograde -> feedback -> grades CSV.

Three students: `correct` (the reference solutions typed into the release) hands in the whole lecture, `blank` (the
release untouched) and `planted-mistake` (correct, except one usual mistake a notebook) three notebooks: that every
usual mistake of every notebook loses its points, and that every release stub earns none, on the grader's path, is
tests/test_exercises.py's (a notebook runs once per purpose: a blank notebook runs every demo cell as the correct
one does, and the release's Run All is tests/test_exercises.py's too).
They are graded by `make grade`'s grader (lecture2_grader: each notebook's answers in a sandboxed student's
process, its test cells in the judge), so this also proves that the scan flags nothing in honest work and that
every notebook's checks run on the grader's own path. Each must get exactly the points they earned.
"""
from __future__ import annotations

import csv
import html
import re
import shutil

import nbformat
import pytest
from nbgrader.api import Gradebook

from conftest import ASSIGNMENT, SOLUTIONS, hidden_lines, notebook_names
import submissions as sub
from judging import runtime
from lecture2_grader import classrun
from lecture2_grader.report import report_line
from planted import all_planted

pytestmark = pytest.mark.slow


def _points(name: str) -> dict[str, float]:
    """Test cell grade_id -> points, and which solution cell each test cell checks."""
    nb = nbformat.read(SOLUTIONS / name, as_version=4)
    return {c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"]["points"]
            for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")}


def _test_cell_after(name: str, solution_id: str) -> str:
    seen = False
    for cell in nbformat.read(SOLUTIONS / name, as_version=4).cells:
        meta = cell.metadata.get("nbgrader", {})
        seen = seen or meta.get("grade_id") == solution_id
        if seen and meta.get("grade"):
            return meta["grade_id"]
    raise KeyError(solution_id)


@pytest.fixture(scope="module")
def graded(course):
    """Submit, autograde, generate feedback and export grades once; return the expected scores."""
    expected = {"correct": {}, "blank": {}, "planted-mistake": {}, "_planted": {}}
    planted_in = {n for n in notebook_names() if n[:2] in ("01", "02", "09")}  # the quickest to judge
    for name in notebook_names():
        points = _points(name)
        total = sum(points.values())
        first = all_planted()[name][0]
        lost = points[_test_cell_after(name, first.grade_id)]
        submissions = {"correct": sub.filled(name)}
        if name in planted_in:
            submissions["blank"] = sub.release(name)
            submissions["planted-mistake"] = sub.filled(name, **{first.grade_id: first.source})
        for student, nb in submissions.items():
            folder = course / "submitted" / student / ASSIGNMENT
            folder.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, folder / name)
        stem = name.removesuffix(".ipynb")
        expected["correct"][stem] = total
        if name in planted_in:
            expected["blank"][stem] = 0
            expected["planted-mistake"][stem] = total - lost
            expected["_planted"][stem] = (_test_cell_after(name, first.grade_id), lost)
    rt = runtime(sandboxed=True, threads=1)
    rt.cell_timeout, rt.notebook_timeout = 300, 900
    students = classrun.grade_class(course, rt, ["correct"], jobs=2).students
    students += classrun.grade_class(course, rt, ["blank", "planted-mistake"], jobs=2,
                                     notebooks=sorted(planted_in)).students
    expected["_report"] = {s.name: report_line(s, 0) for s in students}
    yield expected
    shutil.rmtree(course / "submitted", ignore_errors=True)


def test_each_student_gets_exactly_their_points(course, graded):
    """Does the grader give full points and none to the reference and the blank release, and to the planted
    mistake full points everywhere but the exercise it breaks, which keeps only the check groups it passes?"""
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for student, by_notebook in _students(graded).items():
            for stem, want in by_notebook.items():
                got = gb.find_submission_notebook(stem, ASSIGNMENT, student).score
                if student != "planted-mistake":
                    assert got == pytest.approx(want), f"{student} / {stem}: {got} points, expected {want}"
                    continue
                test_id, lost = graded["_planted"][stem]
                kept = gb.find_grade(test_id, stem, ASSIGNMENT, student).score
                assert 0 <= kept < lost, f"{stem}: the planted mistake in {test_id} kept {kept} of {lost} points"
                assert got == pytest.approx(want + kept), f"{student} / {stem}: {got} points, expected {want + kept}"


def test_honest_work_draws_no_report(graded):
    """Does the grader report no problem (no flagged answer, no timeout, no dead process) for any of the three,
    and name the blank release's notebooks as blank, not "ok"?"""
    stems = ", ".join(sorted(graded["blank"]))
    for student, line in graded["_report"].items():
        if student == "blank":
            assert line.endswith(f"— blank (nothing attempted): {stems}"), line
        else:
            assert line.endswith("— ok"), line


def test_feedback_shows_no_hidden_test(course, graded):
    """Is there feedback HTML per student and notebook, with the visible checks and no hidden test?"""
    for student, by_notebook in _students(graded).items():
        for name in (f"{stem}.ipynb" for stem in by_notebook):
            page = (course / "feedback" / student / ASSIGNMENT / name.replace(".ipynb", ".html")).read_text("utf-8")
            text = html.unescape(re.sub(r"<[^>]+>", "", page))
            assert "checks.exercise" in text, f"{student}'s feedback for {name} lacks the visible checks"
            lines = {line.strip() for line in text.splitlines()}
            leaked = [line for line in hidden_lines(name) if line in lines]
            assert not leaked, f"hidden tests in {student}'s feedback for {name}: {leaked[:2]}"


def test_grades_csv_has_every_student(course, graded):
    """Does the grades CSV hold each student with every notebook's score and the total?"""
    rows = {r["student"]: r for r in csv.DictReader((course / "grades.csv").open(encoding="utf-8"))}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:  # the planted mistake keeps the groups it passes
        kept = {stem: gb.find_grade(test_id, stem, ASSIGNMENT, "planted-mistake").score
                for stem, (test_id, _) in graded["_planted"].items()}
    for student, by_notebook in _students(graded).items():
        if student == "planted-mistake":
            by_notebook = {stem: want + kept[stem] for stem, want in by_notebook.items()}
        assert float(rows[student]["total"]) == pytest.approx(sum(by_notebook.values())), student
        for stem, want in by_notebook.items():
            assert float(rows[student][stem]) == pytest.approx(want), (student, stem)


def _students(graded: dict) -> dict:
    return {k: v for k, v in graded.items() if not k.startswith("_")}
