"""The instructor's review path in a real browser, nbgrader's formgrader over a course graded by `make grade`:

- it tells the truth: "graded", the score and the submission's time from the gradebook (not "needs
  autograding" for everyone); after a late notebook is collected, "needs autograding" until it is graded;
- a manual grade given there (points back for a planted mistake the instructor forgives) is kept through
  every regrade and shows in grades.csv;
- its ⚡ Autograde button goes through the course's sandboxed grader: an answer that writes a file where it
  runs leaves nothing on this machine, autograded/ (the stored results) is not removed, and the row turns
  "graded" with the new score.

(Markers browser and slow; needs Chromium and Playwright like tests/test_browser.py.)"""
from __future__ import annotations

import csv
import os
import secrets
import shutil
import signal
import subprocess
import time
import zipfile
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

import submissions as sub
from conftest import ASSIGNMENT, BIN, RELEASE, ROOT, SOLUTIONS, nbgrader_env
from judging import runtime
from lecture2_grader import classrun, gradebook
from lecture2_grader.report import report_line
from lecture2_hub.preflight import free_port
from test_browser import CHROMIUM_ARGS, SCREENSHOTS, _api, _chromium, _unavailable

pytestmark = [pytest.mark.browser, pytest.mark.slow]
NAME = "01_tensors_dtypes.ipynb"
STEM = NAME.removesuffix(".ipynb")
BITS = "def tensor_bytes(shape, dtype):\n    return math.prod(shape) * dtype.itemsize * 8\n"


def _collect(course: Path, nb, when) -> None:
    archive = course / f"dana-{'-'.join(map(str, when))}.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(zipfile.ZipInfo(f"dana/{NAME}", when), sub.as_text(nb).encode("utf-8"))
    proc = subprocess.run([str(BIN / "python"), "-m", "lecture2_grader.collect", str(archive)], cwd=course,
                          env=nbgrader_env(), capture_output=True, text=True)
    assert proc.returncode == 0 and "dana: 01_tensors_dtypes" in proc.stdout, proc.stdout + proc.stderr


def _row(pg, student: str):
    row = pg.locator("#main-table tr", has=pg.locator("td.student-id", has_text=student))
    row.wait_for(timeout=60_000)
    return row


def test_the_formgrader_tells_the_truth_keeps_manual_grades_and_grades_through_the_sandbox(tmp_path):
    try:
        from playwright import sync_api
    except ImportError:
        _unavailable("the playwright package is not installed (pip install -e '.[test]')")
    chromium = _chromium()
    course = tmp_path / "course"
    course.mkdir()
    shutil.copy(ROOT / "nbgrader_config.py", course)
    for kind, folder in (("solutions", SOLUTIONS), ("notebooks", RELEASE)):
        (course / kind / ASSIGNMENT).mkdir(parents=True)
        shutil.copy(folder / NAME, course / kind / ASSIGNMENT)
    _collect(course, sub.filled(NAME, ex01_tensor_bytes=BITS), (2026, 3, 1, 10, 0, 0))
    settings = runtime(sandboxed=True, threads=1)
    (dana,) = classrun.grade_class(course, settings).students
    assert dana.total == 3 and report_line(dana, 5).endswith("— ok")

    marker = Path(f"/tmp/lecture2-formgrader-{secrets.token_hex(6)}")
    writes = (f"try:\n    open({str(marker)!r}, 'w').write('ran here')\nexcept OSError:\n    pass\n"
              + sub.reference_answers(NAME)["ex01_float_format"])
    port, token = free_port(), secrets.token_hex(16)
    env = dict(nbgrader_env(), JUPYTER_CONFIG_DIR=str(tmp_path / ".jupyter-config"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / ".jupyter-runtime"),
               JUPYTER_TOKEN=token)  # in the environment, not on the command line (which every user's `ps` shows)
    log = open(tmp_path / "server.log", "w")
    server = subprocess.Popen(
        [str(BIN / "jupyter"), "server", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
         "--ServerApp.port_retries=0", f"--ServerApp.root_dir={course}",
         *(["--allow-root"] if os.geteuid() == 0 else [])],
        cwd=course, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                _api(base, token, "/api/status")
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"jupyter server did not start:\n{(tmp_path / 'server.log').read_text()[-3000:]}")
                time.sleep(0.5)
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            try:
                pg = browser.new_page(viewport={"width": 1400, "height": 1000})
                pg.goto(f"{base}/formgrader?token={token}", timeout=120_000)  # logs in, sets the cookie

                # 1. the truth: graded, its score and its submission time
                pg.goto(f"{base}/formgrader/manage_submissions/{ASSIGNMENT}", timeout=60_000)
                row = _row(pg, "dana")
                row.locator("td.status span", has_text="graded").wait_for(timeout=30_000)
                assert row.locator("td.status").inner_text().strip() == "graded"
                assert row.locator("td.score").inner_text().strip() == "3 / 5"
                assert "2026-03-01" in row.locator("td.timestamp").inner_text()
                pg.screenshot(path=str(SCREENSHOTS / "formgrader_submissions.png"))

                # 2. a manual grade: the planted mistake forgiven
                pg.goto(f"{base}/formgrader/gradebook/{ASSIGNMENT}/{STEM}", timeout=60_000)
                link = pg.locator("tr", has=pg.locator("a.name-shown", has_text="dana"))
                link.wait_for(timeout=60_000)
                link.locator("a:visible").first.click()  # the anonymised "Submission #1" link
                score = pg.locator("input#ex01_tensor_bytes_check")
                score.wait_for(timeout=60_000)
                pg.wait_for_load_state("networkidle")  # the page's grade models are loaded
                deadline = time.monotonic() + 45
                while time.monotonic() < deadline:
                    score.fill("")
                    score.fill("2")
                    score.press("Tab")  # the formgrader saves on change
                    pg.wait_for_timeout(3000)
                    with Gradebook(gradebook.db_url(course)) as gb:
                        if gb.find_grade("ex01_tensor_bytes_check", STEM, ASSIGNMENT, "dana").manual_score == 2:
                            break
                else:
                    pg.screenshot(path=str(SCREENSHOTS / "formgrader_manual_grade.png"))
                    pytest.fail("the formgrader did not save the manual grade:\n"
                                + (tmp_path / "server.log").read_text()[-3000:])

                # 3. a late notebook collected: "needs autograding", until its ⚡ button grades it in the sandbox
                _collect(course, sub.filled(NAME, ex01_tensor_bytes=BITS, ex01_float_format=writes), (2026, 3, 4, 10, 0, 0))
                stored = sorted(p.name for p in (course / "autograded" / "dana" / ASSIGNMENT).iterdir())
                pg.goto(f"{base}/formgrader/manage_submissions/{ASSIGNMENT}", timeout=60_000)
                row = _row(pg, "dana")
                row.locator("td.status span", has_text="needs autograding").wait_for(timeout=30_000)
                row.locator("td.autograde a").click()
                modal = pg.locator("#success-modal, #error-modal")
                modal.wait_for(timeout=300_000)
                text = modal.inner_text()
                pg.screenshot(path=str(SCREENSHOTS / "formgrader_autograde.png"))
                assert modal.get_attribute("id") == "success-modal", text
                assert "course's grader" in text and "dana: 5/5" in text, text
                modal.locator("button", has_text="OK").first.click()
                pg.goto(f"{base}/formgrader/manage_submissions/{ASSIGNMENT}", timeout=60_000)
                row = _row(pg, "dana")
                row.locator("td.status span", has_text="graded").wait_for(timeout=30_000)
                assert row.locator("td.score").inner_text().strip() == "5 / 5"
                assert "2026-03-04" in row.locator("td.timestamp").inner_text()
            finally:
                browser.close()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        log.close()
    assert not marker.exists(), "the answer ran outside the sandbox"
    assert sorted(p.name for p in (course / "autograded" / "dana" / ASSIGNMENT).iterdir()) == stored
    (again,) = classrun.grade_class(course, settings, ["dana"]).students  # a rerun keeps the instructor's grade
    assert again.total == 5
    rows = list(csv.DictReader((course / "grades.csv").open(encoding="utf-8")))
    assert [(r["student"], r["01_tensors_dtypes"], r["total"], r["max_total"], r["late"]) for r in rows] == [
        ("dana", "5", "5", "5", "")]  # no due date in this course: nothing is late
