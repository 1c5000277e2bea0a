"""A term of the class grader, in order: collect an LMS download, grade, collect a late notebook, regrade, export.

Four students hand in notebook 01 through Canvas and Moodle (a correct one, a planted mistake, the release left
blank, a correct one from Moodle); one resubmits late. Does the regrade run that one notebook only? Do the
gradebook and nbgrader's own view of it say "graded" with the submission's time, grades.csv and notebooks.csv
tell late, blank and missing apart, the LMS files carry the columns Canvas's and Moodle's importers read, and
the class report and feedback work offline? (Notebook 01 only, so that grading stays quick.)
"""
from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

import submissions as sub
from conftest import ASSIGNMENT, BIN, RELEASE, ROOT, SOLUTIONS, nbgrader_env
from judging import runtime as judging_runtime
from lecture2_grader import classrun, export, sandbox
from lecture2_grader.run.local import LocalExecutor
from lecture2_grader.runtime import CELL_SECONDS, NOTEBOOK_SECONDS

pytestmark = pytest.mark.slow
NB1 = "01_tensors_dtypes.ipynb"
S1 = NB1.removesuffix(".ipynb")
BITS = "def tensor_bytes(shape, dtype):\n    return math.prod(shape) * dtype.itemsize * 8\n"
DUE = "2026-03-02T23:59:00+08:00"
SCREENSHOTS = ROOT / ".artefacts" / "screenshots"


class CountingExecutor(LocalExecutor):
    """The local executor, counting the notebooks it is given to run."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.submitted: list[str] = []

    def submit(self, judge_job, label=None):
        self.submitted.append(label or "?")
        return super().submit(judge_job, label)


def grading_runtime():
    """`make grade`'s limits (the stored results' key holds them: `nbgrader autograde` below reuses these results)."""
    rt = judging_runtime(sandboxed=True, threads=1)
    rt.cell_timeout, rt.notebook_timeout = CELL_SECONDS, NOTEBOOK_SECONDS
    rt.limits = sandbox.Limits()
    return rt


def _zip(path: Path, entries: dict) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for (name, when), nb in entries.items():
            zf.writestr(zipfile.ZipInfo(name, when), sub.as_text(nb).encode("utf-8"))
    return path


def _grade(course: Path):
    ex = CountingExecutor(grading_runtime(), 2)
    try:
        run = classrun.grade_class(course, grading_runtime(), jobs=2, executor=ex)
        students, notes = run.students, run.notes
    finally:
        ex.close()
    return {s.name: s for s in students}, notes, ex.submitted


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    course = tmp_path_factory.mktemp("term")
    shutil.copy(ROOT / "nbgrader_config.py", course)
    with (course / "nbgrader_config.py").open("a", encoding="utf-8") as f:
        f.write(f'\nc.Lecture2Grader.due = "{DUE}"\nc.Lecture2Grader.canvas_assignment = "Lecture 2 (4242)"\n')
    for kind, folder in (("solutions", SOLUTIONS), ("notebooks", RELEASE)):
        (course / kind / ASSIGNMENT).mkdir(parents=True)
        shutil.copy(folder / NB1, course / kind / ASSIGNMENT)
    on_time = (2026, 3, 1, 20, 0, 0)
    right = ('my_casts = {"70000 -> fp16": "inf", "70000 -> bf16": 70000, "1e-8 -> fp16": 0, "1e-8 -> bf16": 1e-8,'
             ' "1.001 -> bf16": 1.001}')
    wrong = 'my_casts = {"70000 -> fp16": 65504, "70000 -> bf16": 70000, "1e-8 -> fp16": 1e-8, "1.001 -> bf16": 1.0}'
    download = _zip(course / "canvas.zip", {
        ("annlee_101_1_01_tensors_dtypes.ipynb", on_time): sub.predicted(sub.filled(NB1), {
            "01-casts": right, "01-contiguous": 'my_layout = {"bytes it allocates": "<b>48</b>"}'}),
        ("benko_202_2_01_tensors_dtypes.ipynb", on_time): sub.predicted(sub.filled(NB1, ex01_tensor_bytes=BITS),
                                                                        {"01-casts": wrong}),
        ("cyblank_303_3_01_tensors_dtypes.ipynb", on_time): sub.release(NB1),
        ("Dee Moo_404_assignsubmission_file_/01_tensor_dtypes.ipynb", on_time): sub.filled(NB1),  # misnamed
    })
    env = nbgrader_env()
    proc = subprocess.run([str(BIN / "python"), "-m", "lecture2_grader.collect", str(download)], cwd=course,
                          env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    first, _, ran_first = _grade(course)
    late = _zip(course / "late.zip", {("benko_LATE_202_9_01_tensors_dtypes.ipynb", (2026, 3, 3, 12, 0, 0)):
                                      sub.predicted(sub.filled(NB1), {"01-casts": wrong})})
    proc = subprocess.run([str(BIN / "python"), "-m", "lecture2_grader.collect", str(late)], cwd=course, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "benko-202: 01_tensors_dtypes (submission 2" in proc.stdout, proc.stdout + proc.stderr
    again, notes, ran_again = _grade(course)
    return {"course": course, "first": first, "again": again, "ran_first": ran_first, "ran_again": ran_again,
            "notes": notes}


def test_a_late_notebook_costs_one_notebook_to_regrade(term):
    assert sorted(term["ran_first"]) == ["annlee-101/01_tensors_dtypes", "benko-202/01_tensors_dtypes",
                                         "cyblank-303/01_tensors_dtypes", "dee-moo-404/01_tensors_dtypes"]
    assert term["ran_again"] == ["benko-202/01_tensors_dtypes"], "only the changed notebook runs again"
    assert term["first"]["benko-202"].total == 3 and term["again"]["benko-202"].total == 5
    assert any("3 of 4 notebooks unchanged" in n for n in term["notes"])


def test_grades_csv_tells_late_blank_and_missing_apart(term):
    rows = {r["student"]: r for r in csv.DictReader((term["course"] / "grades.csv").open(encoding="utf-8"))}
    assert rows["benko-202"]["late"] == "01 (+12.0 h)" and rows["benko-202"]["total"] == "5"
    assert rows["cyblank-303"]["blank"] == "01" and rows["cyblank-303"]["total"] == "0"
    assert rows["annlee-101"]["late"] == rows["annlee-101"]["blank"] == rows["annlee-101"]["missing"] == ""
    assert rows["benko-202"]["submitted_at"] == "2026-03-03T04:00:00Z"
    long = list(csv.DictReader((term["course"] / "notebooks.csv").open(encoding="utf-8")))
    benko = next(r for r in long if r["student"] == "benko-202")
    assert (benko["state"], benko["late"], benko["hours_late"], benko["copies_received"]) == ("graded", "yes", "12.0", "2")
    assert next(r for r in long if r["student"] == "cyblank-303")["state"] == "blank"


def test_the_gradebook_holds_the_submission_time_so_nbgrader_says_graded(term):
    """nbgrader's formgrader decides "needs autograding" by comparing submitted/<student>/lec02/timestamp.txt
    with the gradebook's submission time (NbGraderAPI.get_autograded_students): every student is graded."""
    proc = subprocess.run(
        [str(BIN / "python"), "-c",
         "from nbgrader.apps.api import NbGraderAPI; from nbgrader.coursedir import CourseDirectory;"
         "from traitlets.config import Config; from traitlets.config.loader import PyFileConfigLoader;"
         "c = PyFileConfigLoader('nbgrader_config.py', path='.').load_config(); "
         "api = NbGraderAPI(CourseDirectory(config=c), config=c); "
         "print(sorted(api.get_autograded_students('lec02'))); "
         "print(sorted((s['student'], s['score'], s['autograded']) for s in api.get_submissions('lec02')))"],
        cwd=term["course"], env=nbgrader_env(), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    graded, rows = proc.stdout.splitlines()[-2:]
    assert graded == "['annlee-101', 'benko-202', 'cyblank-303', 'dee-moo-404']"
    assert "('benko-202', 5.0, True)" in rows and "('cyblank-303', 0.0, True)" in rows


def test_nbgrader_autograde_goes_through_the_course_grader(term):
    """`nbgrader autograde` (what the formgrader's button runs) grades with the course's sandboxed grader, reuses
    the stored results and leaves autograded/ in place instead of removing it."""
    course = term["course"]
    stored = sorted((course / "autograded").rglob("*.result.json"))
    proc = subprocess.run([str(BIN / "nbgrader"), "autograde", ASSIGNMENT, "--force"], cwd=course,
                          env=nbgrader_env(), capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "goes through the course's grader" in out and "annlee-101: 5/5" in out
    assert "4 of 4 notebooks unchanged" in out and "Removing existing assignment" not in out
    assert sorted((course / "autograded").rglob("*.result.json")) == stored


def test_lms_export_files_have_the_importers_columns(term):
    paths, warnings = export.write(term["course"])
    canvas = list(csv.reader(paths[0].open(encoding="utf-8")))
    assert canvas[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Lecture 2 (4242)"]
    assert canvas[1] == ["    Points Possible", "", "", "", "", "5"]
    assert sorted((r[1], r[5]) for r in canvas[2:]) == [("101", "5"), ("202", "5"), ("303", "0")]
    moodle = list(csv.DictReader(paths[1].open(encoding="utf-8")))
    assert list(moodle[0]) == ["Identifier", "Full name", "Grade", "Maximum Grade", "Last modified (grade)",
                               "Feedback comments"]
    assert [(r["Identifier"], r["Grade"], r["Maximum Grade"]) for r in moodle] == [("Participant 404", "5", "5")]
    assert not warnings


def test_feedback_renders_its_formulas_offline_and_is_small(term):
    page = (term["course"] / "feedback" / "annlee-101" / ASSIGNMENT / f"{S1}.html").read_text("utf-8")
    assert "<math" in page and "$$" not in page and "\\frac" not in page
    assert not re.search(r"<script|https?://[^\s'\"]*\.(js|css)", page), "nothing is fetched"
    assert len(page.encode()) < 150_000


def test_the_class_report_is_offline_and_counts_only_attempted_work(term):
    course = term["course"]
    page = (course / "class_report" / "index.html").read_text("utf-8")
    assert "<script" not in page and "http" not in page.replace("http://www.w3.org", "")
    assert {p.name for p in (course / "class_report").glob("*.png")} == {"total.png", "notebooks.png"}
    rows = list(csv.DictReader((course / "mistakes.csv").open(encoding="utf-8")))
    assert all(r["hint_key"] != "not-implemented" for r in rows), "unattempted work is no mistake"
    assert all(r["unattempted"] == "1" and r["attempted"] == "3" for r in rows)  # the blank student, apart
    assert not any(r["student"] == "cyblank-303" for r in csv.DictReader((course / "mistakes_by_student.csv").open()))
    predicted = list(csv.DictReader((course / "predictions.csv").open(encoding="utf-8")))
    fp16 = {r["student"]: r for r in predicted if r["key"] == "01-casts" and r["value"] == "70000 -> fp16"}
    assert fp16["annlee-101"]["predicted"] == "inf" and fp16["benko-202"]["predicted"] == "65504", fp16
    assert fp16["benko-202"]["measured"] == "inf" and "<b>48</b>" not in page  # the panel shows the class, not values
    assert any(r["predicted"] == "<b>48</b>" for r in predicted)
    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium")
    if chromium:  # the panel as an instructor sees it: the class's predictions beside each measurement
        _look_at_the_prediction_panel(course / "class_report" / "index.html", chromium)
    if chromium:  # a screenshot at the width the report is designed for, for a person to look at
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--screenshot={SCREENSHOTS / 'class_report.png'}", "--window-size=1400,2600",
                        (course / "class_report" / "index.html").as_uri()], capture_output=True, timeout=120)


def _look_at_the_prediction_panel(page: Path, chromium: str) -> None:
    """In Chromium: the panel is there, each prediction's row gives the measurement and how many of the class
    answered, the furthest-off value first, and a student's markup is text."""
    from playwright import sync_api

    from test_browser import CHROMIUM_ARGS

    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            pg = browser.new_page(viewport={"width": 1400, "height": 900})
            pg.goto(page.as_uri())
            panel = pg.locator("table.predictions")
            panel.wait_for(timeout=30_000)
            rows = panel.locator("tr").all_inner_texts()
            fp16 = next(r for r in rows if "70000 -> fp16" in r)
            assert "inf" in fp16 and "2 / 4" in fp16 and "right: 50%" in fp16, fp16
            bf16 = next(r for r in rows if "70000 -> bf16" in r)
            assert "70144" in bf16.replace(",", "") and "within 2×: 100%" in bf16, bf16
            allocated = next(r for r in rows if "bytes it allocates" in r)
            assert "1 / 4" in allocated and "right: 0%" in allocated, allocated  # "<b>48</b>" is no number of bytes
            pg.locator("#predictions").scroll_into_view_if_needed()
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            pg.screenshot(path=str(SCREENSHOTS / "class_report_predictions.png"))
        finally:
            browser.close()
