"""A class on the course's JupyterHub (`make hub`), end to end in headless Chromium:

two students log in with their own passwords, fetch lec02 in the Assignments tab, fill one exercise of notebook
01 in the notebook (ana right, ben with a usual mistake: bits for bytes), press Validate (the course's visible
checks), and submit; ben submits again after the due date. The instructor collects from the exchange's inbound
(`make collect`: the submission times from the exchange, ben late, his first copy kept), grades notebook 01
(`make grade`), sees both in the formgrader on the hub, and releases the feedback (`make feedback`). Each student
fetches feedback and sees their own score, ben the hint for his mistake, neither anything of the other. Each
student's server runs as their own Unix user: neither reads the other's home, the exchange's inbound or the
course's solutions and gradebook. Each person's lab is on a name of its own (<name>.localhost); the course
belongs to an ordinary account, as whom the instructor's lab and commands run. A screenshot per step goes to
.artefacts/screenshots/hub_*.png.

Runs as root (the hub creates the students' Unix users and removes nothing of them: the test does, at the end).
Markers browser and slow; skipped where root, Chromium, Playwright, configurable-http-proxy or a Python that other
users can run is missing, unless LECTURE2_BROWSER_REQUIRED is set (CI): then it fails.
"""
from __future__ import annotations

import datetime as dt
import re
import secrets
import subprocess
import time

import pytest

import submissions as sub
from conftest import ASSIGNMENT, BIN
from hubs import owner_env, run_as, start_hub, stop_hub, unavailable_reason
from planted.nb01 import MISTAKES
from test_browser import CHROMIUM_ARGS, SCREENSHOTS, _chromium, _unavailable

pytestmark = [pytest.mark.browser, pytest.mark.slow]
NAME = "01_tensors_dtypes.ipynb"
GRADE_ID = "ex01_tensor_bytes"
BITS = next(m for m in MISTAKES if m.grade_id == GRADE_ID and m.name == "bits instead of bytes")
TIMES: dict[str, float] = {}
MENU_FILE = re.compile(r"^(File|文件)$")  # JupyterLab's File menu, in either edition's language
LIMITS = "disk=128MiB,exchange=128MiB,idle=0"  # each student's home and the exchange: file systems of their own


def _answer(source: str) -> str:
    lines = [ln for ln in source.strip("\n").splitlines() if "### BEGIN SOLUTION" not in ln and "### END SOLUTION" not in ln]
    return "import math\nimport torch\n" + "\n".join(lines) + "\n"


def _timed(step: str):
    class _T:
        def __enter__(self):
            self.t = time.monotonic()

        def __exit__(self, *exc):
            TIMES[step] = time.monotonic() - self.t
            print(f"[hub timing] {step}: {TIMES[step]:.1f} s")
    return _T()


def _run_as_owner(hub, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """A course command (python -m ...) as the course's owner, in the course folder: never as root."""
    proc = run_as(hub.owner, str(BIN / "python"), *args, cwd=hub.course, env=owner_env(hub.owner))
    if check and proc.returncode != 0:
        pytest.fail(f"{' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


def _preconditions() -> str:
    why = unavailable_reason()
    if why:
        _unavailable(why)
    try:
        import playwright  # noqa: F401
    except ImportError:
        _unavailable("the playwright package is not installed (pip install -e '.[test]')")
    return _chromium()


def _shot(pg, name: str) -> None:
    pg.screenshot(path=str(SCREENSHOTS / f"hub_{name}.png"))


def _login(browser, base: str, name: str, password: str):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    pg = context.new_page()
    pg.goto(f"{base}/hub/login", timeout=60_000)
    pg.fill("#username_input", name)
    pg.fill("#password_input", password)
    pg.click("#login_submit")
    return pg


def _wait_for_lab(pg, name: str, log: Path) -> None:
    try:
        pg.locator(".jp-LabShell, #jp-main-dock-panel").first.wait_for(timeout=120_000)
        # the lab in its edition's language (issue 41): JupyterLab's menus in Simplified Chinese for the Chinese
        # edition (jupyterlab-language-pack-zh-CN), in English for the English one; nbgrader's own are untranslated
        pg.locator(".lm-MenuBar-itemLabel", has_text=MENU_FILE).first.wait_for(timeout=60_000)
    except Exception:
        _shot(pg, f"failed_login_{name.split('-')[0]}")
        pytest.fail(f"{name}'s lab did not open ({pg.url}):\n" + log.read_text(errors="replace")[-4000:])


def _assignments(pg):
    pg.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").click()
    pg.locator(".lm-Menu-itemLabel", has_text="Assignment List").click()
    panel = pg.locator("#nbgrader-assignment-list")
    panel.locator("#released_assignments_list_loading").wait_for(state="hidden", timeout=60_000)
    return panel


def _refresh(panel):
    panel.locator("#refresh_assignments_list").click()
    panel.page.wait_for_timeout(500)
    for part in ("released", "fetched", "submitted"):
        panel.locator(f"#{part}_assignments_list_loading").wait_for(state="hidden", timeout=60_000)


def _fill(pg, name: str, source: str, validate: bool = True) -> None:
    """Open notebook 01 of the fetched lec02, type `source` into the exercise's cell, save; press Validate (the
    course's visible checks) unless `validate` is False."""
    user = pg.url.split("/user/", 1)[1].split("/", 1)[0]
    pg.goto(pg.url.split("/user/")[0] + f"/user/{user}/lab/tree/{ASSIGNMENT}/{NAME}", timeout=60_000)
    cell = pg.locator(".jp-Notebook .jp-CodeCell", has=pg.locator(".cm-content", has_text="def tensor_bytes("))
    cell.first.wait_for(timeout=90_000)
    editor = cell.first.locator(".cm-content")
    editor.scroll_into_view_if_needed()
    editor.click()
    pg.keyboard.press("Control+A")
    pg.keyboard.insert_text(source)
    pg.keyboard.press("Escape")
    pg.keyboard.press("Control+S")
    pg.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.jp-mod-current.jp-mod-dirty").wait_for(state="detached",
                                                                                              timeout=30_000)
    _shot(pg, f"{name}_2_filled" if validate else f"{name}_5_edited_after_due")
    if validate:
        pg.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Toolbar jp-button", has_text="Validate").click()


def _validation(pg, name: str) -> str:
    """The text of the Validate dialog, once it has come; the dialog closed."""
    dialog = pg.locator(".jp-Dialog")
    dialog.wait_for(timeout=180_000)
    dialog.locator(".jp-Dialog-header", has_text="Validation").wait_for(timeout=180_000)
    text = dialog.inner_text()
    _shot(pg, f"{name}_3_validated")
    dialog.locator("button", has_text=re.compile(r"^(Ok|确认)$")).first.click()  # the lab in either language
    return text


def _submit(panel, name: str, count: int) -> None:
    panel.locator("#fetched_assignments_list .list_item button", has_text="Submit").first.click()
    items = panel.locator("#submitted_assignments_list .list_item")
    deadline = time.monotonic() + 60
    while items.count() < count and time.monotonic() < deadline:
        panel.page.wait_for_timeout(300)
    assert items.count() >= count, panel.inner_text()
    _shot(panel.page, f"{name}_4_submitted" if count == 1 else f"{name}_6_submitted_late")


def _students_hand_in(students: list[tuple], log: Path) -> list[str]:
    """Each of `students` (page, user name, answer) fetches lec02, fills the exercise and presses Validate, one after
    the other; their servers validate side by side; each reads the report and submits. The reports, in order."""
    for pg, name, _ in students:
        _wait_for_lab(pg, name, log)
    with _timed("ana and ben: fetch -> submit"):
        for pg, name, source in students:
            short = name.split("-")[0]
            panel = _assignments(pg)
            released = panel.locator("#released_assignments_list .list_item",  # lec02, not lec02-en (issue 41)
                                     has=pg.locator(".item_name", has_text=re.compile(rf"^\s*{ASSIGNMENT}\s*$")))
            released.wait_for(timeout=60_000)
            assert panel.locator("#released_assignments_list .item_name", has_text="lec02-en").count() == 0  # their edition's
            released.locator("button", has_text="Fetch").click()
            panel.locator("#fetched_assignments_list .list_item", has_text=ASSIGNMENT).wait_for(timeout=60_000)
            _shot(pg, f"{short}_1_fetched")
            _fill(pg, short, source)
        reports = []
        for pg, name, _ in students:
            short = name.split("-")[0]
            reports.append(_validation(pg, short))
            _submit(_assignments(pg), short, 1)
    return reports


def _fetch_feedback(pg, short: str) -> str:
    """Fetch Feedback in the Assignments tab, then open the page it brought (view feedback, then the page in the
    lab's HTML viewer); the page's text."""
    panel = _assignments(pg)
    try:
        _refresh(panel)
        panel.locator("#submitted_assignments_list button", has_text="Fetch Feedback").first.click()
        view = panel.locator("#submitted_assignments_list a", has_text="view feedback")
        view.first.wait_for(timeout=60_000)
        _shot(pg, f"{short}_7_feedback_fetched")
        view.first.click()
        item = pg.locator(".jp-DirListing-item", has_text=NAME.replace(".ipynb", ".html"))
        item.first.dblclick(timeout=30_000)
        frame = pg.frame_locator(".jp-MainAreaWidget:not(.lm-mod-hidden) iframe")
        frame.get_by_text("得分 (score)").first.wait_for(timeout=30_000)
        text = frame.locator("body").inner_text()
    except Exception:
        _shot(pg, f"failed_feedback_{short}")
        (SCREENSHOTS / f"hub_failed_feedback_{short}.html").write_text(panel.inner_html(), encoding="utf-8")
        raise
    _shot(pg, f"{short}_8_feedback")
    return text


def _as_user(name: str, *argv: str) -> subprocess.CompletedProcess:
    import pwd

    entry = pwd.getpwnam(name)
    return subprocess.run(list(argv), user=entry.pw_uid, group=entry.pw_gid, extra_groups=[], capture_output=True,
                          text=True, cwd="/", env={"PATH": "/usr/bin:/bin", "HOME": entry.pw_dir})


def test_a_class_on_the_hub_end_to_end():
    chromium = _preconditions()
    from playwright import sync_api

    tag = secrets.token_hex(3)
    ana, ben, prof = f"ana-{tag}", f"ben-{tag}", f"prof-{tag}"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for old in SCREENSHOTS.glob("hub_*"):  # this run's steps only, no failure of an earlier run
        old.unlink()
    with _timed("hub start"):
        hub = start_hub({prof: "instructor", ana: "student", ben: "student"}, limits=LIMITS)
    course, exchange, homes, passwords = hub.course, hub.exchange, hub.homes, hub.passwords
    log = hub.state / "jupyterhub.log"
    try:
        twice = hub.cli("start", *hub.start_args())  # a second start: a clear refusal, the first hub untouched
        assert twice.returncode == 2 and "already running" in twice.stderr, twice.stdout + twice.stderr
        base = hub.url
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            try:
                login = browser.new_page(viewport={"width": 1400, "height": 900})
                login.goto(f"{base}/hub/login", timeout=60_000)
                _shot(login, "0_login")
                login.close()
                # everyone logs in at once: the hub starts the three servers side by side
                ana_pg, ben_pg, teacher = (_login(browser, base, n, passwords[n]) for n in (ana, ben, prof))
                right = _answer(sub.reference_answers(NAME)[GRADE_ID])
                ana_report, ben_report = _students_hand_in([(ana_pg, ana, right), (ben_pg, ben, _answer(BITS.source))], log)
                assert ana_pg.locator(".lm-MenuBar-itemLabel", has_text="文件").count() == 1  # the Chinese edition's lab
                assert ana_pg.url.startswith(f"http://{ana}.localhost:{hub.port}/user/{ana}/"), ana_pg.url  # her origin
                formgrader = ana_pg.evaluate(f"fetch('/user/{ana}/formgrader/api/status').then(r => r.status)")
                assert formgrader == 404, "a student's server answers the formgrader"
                assert "✅ tensor_bytes" in ana_report and BITS.expect not in ana_report, ana_report
                assert BITS.expect in ben_report, ben_report  # Validate gave the hint before the deadline

                # the due date passes; ben hands in again, late (his first copy must not be lost)
                due = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) + dt.timedelta(seconds=1)
                with open(course / "nbgrader_config.py", "a", encoding="utf-8") as fh:
                    fh.write(f'\nc.Lecture2Grader.due = "{due.isoformat()}"\n')
                time.sleep(max(0.0, (due - dt.datetime.now(dt.timezone.utc)).total_seconds()) + 1.1)
                with _timed("ben: edit -> submit again, late"):
                    _fill(ben_pg, "ben", _answer(BITS.source) + "# 再检查一遍 (checked again)\n", validate=False)
                    _submit(_assignments(ben_pg), "ben", 2)

                # each student's own Unix user: nothing of the other, of the inbound or of the instructor's
                inbound = exchange / "lecture2" / "inbound"
                for who, other in ((ana, ben), (ben, ana)):
                    for argv in (["ls", str(homes / other)], ["ls", str(inbound)],
                                 ["cat", str(course / "solutions" / ASSIGNMENT / NAME)],
                                 ["ls", str(course / "solutions")]):
                        proc = _as_user(who, *argv)
                        assert proc.returncode != 0 and "Permission denied" in proc.stderr, (who, argv, proc.stdout)
                    mine = _as_user(who, "ls", str(homes / who / ASSIGNMENT))
                    assert mine.returncode == 0 and NAME in mine.stdout, mine.stderr

                # the instructor's term, as the course's owner: collect, grade notebook 01, the formgrader, feedback
                with _timed("collect -> grade (2 students, notebook 01)"):
                    collected = _run_as_owner(hub, "-m", "lecture2_grader.collect", str(inbound))
                    graded = _run_as_owner(hub, "-m", "lecture2_grader", "--notebook", "01", "--jobs", "2")
                with _timed("feedback: make feedback for ben, the formgrader's release button for ana"):
                    released = _run_as_owner(hub, "-m", "lecture2_grader.release_feedback", "--exchange", str(exchange),
                                             "--student", ben)
                    _wait_for_lab(teacher, prof, log)
                    teacher.goto(f"{hub.server(prof)}/formgrader/manage_submissions/{ASSIGNMENT}", timeout=60_000)
                    rows = {n: teacher.locator("#main-table tr", has=teacher.locator("td.student-id", has_text=n))
                            for n in (ana, ben)}
                    for student, score in ((ana, "2 / 5"), (ben, "0 / 5")):
                        rows[student].locator("td.status span", has_text="graded").wait_for(timeout=60_000)
                        assert rows[student].locator("td.score").inner_text().strip() == score
                    _shot(teacher, "teacher_formgrader")
                    rows[ana].locator("td.release-feedback a").click()
                    modal = teacher.locator("#success-modal, #error-modal")
                    modal.wait_for(timeout=60_000)
                    teacher.wait_for_timeout(600)  # the dialog's fade-in, for the screenshot
                    _shot(teacher, "teacher_released_feedback")
                    assert modal.get_attribute("id") == "success-modal", modal.inner_text()
                print(collected.stdout, graded.stdout, released.stdout, sep="\n")
                intake = {n: next(ln for ln in collected.stdout.splitlines() if ln.startswith(f"{n}:")) for n in (ana, ben)}
                assert "late" not in intake[ana] and re.search(r"submission 2, .*kept in history.*late", intake[ben]), intake
                history = list((course / "submitted" / ben / "history" / ASSIGNMENT).rglob("*.ipynb"))
                assert len(history) == 2, history  # both of ben's copies kept
                lines = {n: next(ln for ln in graded.stdout.splitlines() if ln.startswith(f"{n}:")) for n in (ana, ben)}
                assert f"{ana}: 2/5" in lines[ana] and f"{ben}: 0/5" in lines[ben], graded.stdout
                assert released.stdout.strip() == f"{ben}: 1 feedback page released (01_tensors_dtypes)", released.stdout
                grades = (course / "grades.csv").read_text(encoding="utf-8")
                assert re.search(rf"^{ben},.*\b01 \(\+", grades, re.M) and not re.search(rf"^{ana},.*\(\+", grades, re.M), grades
                for private in (course / "gradebook.db", course / "grades.csv", course / "feedback" / ana):
                    assert _as_user(ben, "cat" if private.is_file() else "ls", str(private)).returncode != 0, private

                with _timed("both students: Fetch Feedback -> their page"):
                    ana_page = _fetch_feedback(ana_pg, "ana")
                    ben_page = _fetch_feedback(ben_pg, "ben")
            finally:
                browser.close()
        assert BITS.expect in ben_page and BITS.expect not in ana_page
        for page, me, other in ((ana_page, ana, ben), (ben_page, ben, ana)):
            assert other not in page, f"{me}'s feedback shows {other}"
        assert re.search(r"\b2\s*/\s*5\b", ana_page) and re.search(r"\b0\s*/\s*5\b", ben_page), (ana_page[:500], ben_page[:500])
    finally:
        stopped = stop_hub(hub)
        print("[hub timing]", {k: round(v, 1) for k, v in TIMES.items()})
    from lecture2_hub import control

    assert stopped.returncode == 0 and not control.tagged_processes(hub.state), stopped.stdout + stopped.stderr
