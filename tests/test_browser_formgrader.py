"""The instructor's review path in a real browser: a grade given in nbgrader's formgrader (here, points back for
a planted mistake the instructor forgives) is kept when the class is graded again and shows in grades.csv.
(Markers browser and slow; needs Chromium and Playwright like tests/test_browser.py.)"""
from __future__ import annotations

import csv
import os
import secrets
import shutil
import signal
import subprocess
import time

import pytest
from nbgrader.api import Gradebook

import submissions as sub
from conftest import ASSIGNMENT, BIN, RELEASE, ROOT, SOLUTIONS
from judging import runtime
from lecture2_grader import cli, gradebook
from lecture2_grader.report import report_line
from test_browser import CHROMIUM_ARGS, _api, _chromium, _free_port, _unavailable

pytestmark = [pytest.mark.browser, pytest.mark.slow]
NAME = "01_tensors_dtypes.ipynb"


def test_a_manual_grade_given_in_the_formgrader_is_kept(tmp_path):
    try:
        from playwright import sync_api
    except ImportError:
        _unavailable("the playwright package is not installed (pip install -e '.[test]')")
    chromium = _chromium()
    course = tmp_path
    shutil.copy(ROOT / "nbgrader_config.py", course)
    for kind, folder in (("solutions", SOLUTIONS), ("notebooks", RELEASE)):
        (course / kind / ASSIGNMENT).mkdir(parents=True)
        shutil.copy(folder / NAME, course / kind / ASSIGNMENT)
    bits = "def tensor_bytes(shape, dtype):\n    return math.prod(shape) * dtype.itemsize * 8\n"
    sub.write(sub.filled(NAME, ex01_tensor_bytes=bits), course / "submitted" / "dana" / ASSIGNMENT / NAME)
    settings = runtime(sandboxed=True, threads=1)
    (dana,), _ = cli.grade_class(course, settings)
    assert dana.total == 5 and report_line(dana, 7).endswith("— ok")

    port, token = _free_port(), secrets.token_hex(16)
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp_path / ".jupyter-config"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / ".jupyter-runtime"))
    log = open(tmp_path / "server.log", "w")
    server = subprocess.Popen(
        [str(BIN / "jupyter"), "server", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
         "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={course}",
         *(["--allow-root"] if os.geteuid() == 0 else [])],
        cwd=course, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
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
                pg.goto(f"{base}/formgrader/gradebook/{ASSIGNMENT}/{NAME.removesuffix('.ipynb')}", timeout=60_000)
                row = pg.locator("tr", has=pg.locator("a.name-shown", has_text="dana"))
                row.wait_for(timeout=60_000)
                row.locator("a:visible").first.click()  # the anonymised "Submission #1" link
                score = pg.locator("input#ex01_tensor_bytes_check")
                score.wait_for(timeout=60_000)
                pg.screenshot(path=str(tmp_path / "formgrader.png"))
                score.fill("2")
                score.press("Tab")  # the formgrader saves on change
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    with Gradebook(gradebook.db_url(course)) as gb:
                        grade = gb.find_grade("ex01_tensor_bytes_check", NAME.removesuffix(".ipynb"), ASSIGNMENT, "dana")
                        if grade.manual_score == 2:
                            break
                    pg.wait_for_timeout(250)
                else:
                    pytest.fail("the formgrader did not save the manual grade")
            finally:
                browser.close()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        log.close()
    (again,), _ = cli.grade_class(course, settings, ["dana"])  # a rerun keeps the instructor's grade
    assert again.total == 7
    rows = list(csv.DictReader((course / "grades.csv").open(encoding="utf-8")))
    assert rows == [{"student": "dana", "01_tensors_dtypes": "7", "total": "7", "max_total": "7"}]
