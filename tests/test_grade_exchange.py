"""JupyterHub's path, with nbgrader's own exchange in a scratch folder (no hub needed): the instructor releases,
a student fetches and submits twice, `make collect` reads the exchange's inbound folders through the same intake
(the newest copy in submitted/, the first in the history, times from the exchange), and the course's feedback
pages go back with `nbgrader release_feedback` for the student's `nbgrader fetch_feedback`."""
from __future__ import annotations

import shutil
import time

import pytest

from conftest import ASSIGNMENT, RELEASE, ROOT, SOLUTIONS, nbgrader
from lecture2_grader import artifacts, intake
from lecture2_grader.collect import collect

pytestmark = pytest.mark.slow
NB1 = "01_tensors_dtypes.ipynb"


def test_release_fetch_submit_collect_and_feedback_through_the_exchange(tmp_path):
    exchange, course, home = tmp_path / "exchange", tmp_path / "course", tmp_path / "student"
    for folder in (exchange, course, home):
        folder.mkdir()
    shutil.copy(ROOT / "nbgrader_config.py", course)
    for kind, source in (("solutions", SOLUTIONS), ("notebooks", RELEASE)):
        (course / kind / ASSIGNMENT).mkdir(parents=True)
        shutil.copy(source / NB1, course / kind / ASSIGNMENT)
    options = [f"--Exchange.root={exchange}", f"--Exchange.cache={tmp_path / 'cache'}",
               "--CourseDirectory.course_id=lecture2"]
    nbgrader("release_assignment", ASSIGNMENT, *options, cwd=course)
    nbgrader("fetch_assignment", ASSIGNMENT, *options, cwd=home)
    work = home / ASSIGNMENT / NB1
    nbgrader("submit", ASSIGNMENT, *options, "--student=gina", cwd=home)
    time.sleep(1.1)  # the exchange names a submission by its second
    work.write_bytes(work.read_bytes().replace(b"YOUR CODE HERE", b"YOUR CODE HERE, v2", 1))
    nbgrader("submit", ASSIGNMENT, *options, "--student=gina", cwd=home)

    placed, unplaced = collect(course, [exchange / "lecture2" / "inbound"])
    assert not unplaced and list(placed) == ["gina"], (placed, unplaced)
    assert b"YOUR CODE HERE, v2" in (course / "submitted" / "gina" / ASSIGNMENT / NB1).read_bytes()
    records = intake.records(course, "gina")
    assert len(records) == 2 and all(r["time_source"] == "nbgrader exchange timestamp.txt" for r in records)
    assert (course / "submitted" / "gina" / "history" / ASSIGNMENT / "submission_secret.txt").is_file()

    # the course's feedback page (as `make grade` writes it), released through the exchange and fetched back
    feedback = course / "feedback" / "gina" / ASSIGNMENT
    feedback.mkdir(parents=True)
    (feedback / "01_tensors_dtypes.html").write_text("<!doctype html><p>评分反馈 (feedback)</p>", encoding="utf-8")
    artifacts.exchange_files(course, "gina")
    nbgrader("release_feedback", ASSIGNMENT, *options, cwd=course)
    nbgrader("fetch_feedback", ASSIGNMENT, *options, "--student=gina", cwd=home)
    fetched = list((home / ASSIGNMENT / "feedback").rglob("01_tensors_dtypes.html"))
    assert fetched and "评分反馈" in fetched[0].read_text("utf-8")
