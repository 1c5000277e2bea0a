"""The course's hub without a browser (`make hub`, lecture2_hub): the roster and its passwords, every refusal said
in one message with nothing left running (a bad roster, an account the hub must not take, a port in use, a hub
that does not come up), the course folder made private but for what students' kernels need, the Validate
button's reply, and `make feedback` for a student who did not hand in through the exchange.

The class end to end in Chromium: tests/test_hub_browser.py."""
from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import ASSIGNMENT, BIN, RELEASE, ROOT, nbgrader_env
from lecture2_grader import release_feedback
from lecture2_hub import accounts, control, roster, validate_button

NAME = "01_tensors_dtypes.ipynb"


def _hub(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "python"), "-m", "lecture2_hub", *args], cwd=ROOT, env=nbgrader_env(),
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=180)


@pytest.fixture
def shared_dir():
    """A scratch folder other users can pass through (pytest's own tmp is 0700), removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="lecture2-hubtest-"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_the_demo_roster_logs_in_with_its_password_and_nothing_else():
    people = roster.load(roster.DEMO_ROSTER)
    assert [(p.name, p.role) for p in people] == [("teacher", "instructor"), ("alice", "student"), ("bob", "student")]
    assert all(roster.check_password(roster.DEMO_PASSWORD, p.password_hash) for p in people)
    assert not roster.check_password("lecture2-demo ", people[1].password_hash)
    assert not roster.check_password(roster.DEMO_PASSWORD, "pbkdf2_sha256$x$zz$00")  # a malformed hash: no


def test_a_bad_roster_is_refused_row_by_row_before_anything_starts(tmp_path):
    bad = tmp_path / "roster.csv"
    bad.write_text("name,role\nteacher,instructor\nBob Smith,student\nalice,student\nalice,student\n"
                   "zhang-wei,teacher\n\x1b[31mred,student\n", encoding="utf-8")
    proc = _hub("start", "--roster", str(bad), "--state", str(tmp_path / "state"), "--port", "1")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    err = proc.stderr
    assert "nothing was started" in err
    assert "line 3: 'Bob Smith' is not a valid user name" in err and "lowercase letters" in err
    assert "line 5: 'alice' is already on line 4" in err and "line 6: role 'teacher'" in err
    assert "\x1b" not in err and "\\x1b" in err  # a name's control characters are shown, not obeyed
    assert not (tmp_path / "state").exists()
    nobody = tmp_path / "students-only.csv"
    nobody.write_text("alice,student\n", encoding="utf-8")
    assert "no instructor" in _hub("start", "--roster", str(nobody), "--state", str(tmp_path / "s")).stderr


def test_a_roster_name_that_is_an_account_of_this_machine_is_never_taken(tmp_path):
    taken = tmp_path / "roster.csv"
    taken.write_text("teacher,instructor\nroot,student\ndaemon,student\n", encoding="utf-8")
    proc = _hub("start", "--roster", str(taken), "--state", str(tmp_path / "state"))
    assert proc.returncode == 2 and "root, daemon: a Unix user of that name already exists" in proc.stderr, proc.stderr


def test_passwords_gives_each_their_own_and_keeps_the_earlier_roster(tmp_path):
    path = tmp_path / "roster.csv"
    path.write_text("name,role,password\nteacher,instructor,\nli-na,student,\n", encoding="utf-8")
    out = tmp_path / "passwords.csv"
    assert roster.set_passwords(path, out) == ["teacher", "li-na"]
    given = dict(line.split(",") for line in out.read_text(encoding="utf-8").splitlines())
    assert stat.S_IMODE(out.stat().st_mode) == 0o600 and stat.S_IMODE(path.stat().st_mode) == 0o600
    people = {p.name: p for p in roster.load(path)}
    assert all(roster.check_password(given[n], people[n].password_hash) for n in given)
    assert given["teacher"] != given["li-na"]
    backups = list(tmp_path.glob("roster.csv.*.bak"))
    assert len(backups) == 1 and "li-na,student," in backups[0].read_text(encoding="utf-8")
    assert roster.set_passwords(path, out) == []  # nobody without one: nothing rewritten


def test_the_course_folder_is_the_owners_but_for_what_kernels_read(shared_dir):
    course = shared_dir / "course"
    for folder in ("solutions/lec02", "notebooks/lec02", "lecture2", "tests/planted", ".git"):
        (course / folder).mkdir(parents=True)
    for path in ("solutions/lec02/01.ipynb", "notebooks/lec02/01.ipynb", "lecture2/__init__.py", "gradebook.db"):
        (course / path).write_text("x")
        os.chmod(course / path, 0o644)
    lines = accounts.protect_course(course)
    mode = lambda p: stat.S_IMODE((course / p).stat().st_mode)  # noqa: E731
    assert mode("solutions") == 0o700 and mode("tests") == 0o700 and mode(".git") == 0o700
    assert mode("gradebook.db") == 0o600
    assert mode("notebooks") == 0o755 and mode("notebooks/lec02/01.ipynb") == 0o644 and mode("lecture2") == 0o755
    assert any("solutions/" in line for line in lines), lines
    old = os.umask(0o022)
    try:
        (course / "grades.csv").write_text("later")  # what grading writes after the hub started
        (course / "feedback" / "alice").mkdir(parents=True)
    finally:
        os.umask(old)
    if not any(line.startswith("warning:") for line in lines):  # the file system has ACLs
        assert mode("grades.csv") == 0o600 and mode("feedback") == 0o700 and mode("feedback/alice") == 0o700


def test_a_course_under_a_private_folder_is_refused_with_the_way_out(tmp_path):
    os.chmod(tmp_path, 0o700)
    course = tmp_path / "course"
    course.mkdir()
    with pytest.raises(accounts.AccountError, match=r"not searchable by other users.*chmod o\+x"):
        accounts.protect_course(course)


def test_packages_installed_from_a_checkout_students_cannot_list_are_refused_with_the_way_out():
    with tempfile.TemporaryDirectory() as base:  # under /tmp, not pytest's tmp (mode 0700)
        os.chmod(base, 0o755)
        _package_problems(Path(base))


def _package_problems(base: Path) -> None:
    checkout, venv = base / "clone", base / "venv"
    checkout.mkdir(mode=0o700)
    site = venv / "lib" / "python3.12" / "site-packages"
    site.mkdir(parents=True)
    (site / "__editable__.lecture2-0.1.0.pth").write_text(f"{checkout}\n")
    os.chmod(checkout, 0o701)
    problem = accounts.package_problem(venv)
    assert problem and f"cannot list {checkout}" in problem and f"chmod o+rx {checkout}" in problem, problem
    assert accounts.package_problem(venv, course=checkout) is None  # protect_course opens the course itself
    os.chmod(checkout, 0o755)
    assert accounts.package_problem(venv) is None


def test_the_validate_button_says_what_make_validate_says_escaped():
    assert validate_button.reply(0, "01: 7/7\n✅ tensor_bytes\n") == {"success": True, "value": {}}
    failed = validate_button.reply(0, "01: 0/5 分\n❌ tensor_bytes: <img src=x onerror=alert(1)>\n  提示 (hint): bits\n")
    item = failed["value"]["failed"][0]
    assert item["source"] == "01: 0/5 分" and "&lt;img" in item["error"] and "<img" not in item["error"]
    assert "提示 (hint): bits" in item["error"]
    assert validate_button.reply(2, "x.ipynb: not a notebook of this assignment\n")["success"] is False


def test_feedback_for_a_student_not_on_the_exchange_goes_back_through_the_lms(tmp_path):
    course = tmp_path / "course"
    (course / "feedback" / "carol" / ASSIGNMENT).mkdir(parents=True)
    (course / "feedback" / "carol" / ASSIGNMENT / "01_tensors_dtypes.html").write_text("<p>ok</p>")
    status, lines = release_feedback.release(course, tmp_path / "exchange")
    assert status == 0 and lines == [f"carol: not submitted through the exchange (no submission secret): hand the "
                                     f"pages in feedback/carol/{ASSIGNMENT}/ back through the LMS"]
    status, lines = release_feedback.release(tmp_path / "empty", tmp_path / "exchange")
    assert status == 2 and "make grade" in lines[0]


def _scratch_course(base: Path) -> Path:
    course = base / "course"
    (course / "notebooks" / ASSIGNMENT).mkdir(parents=True)
    shutil.copy(RELEASE / NAME, course / "notebooks" / ASSIGNMENT)
    shutil.copy(ROOT / "nbgrader_config.py", course)
    (course / ".venv").symlink_to(ROOT / ".venv")
    return course


@pytest.mark.slow
def test_a_port_in_use_or_a_hub_that_does_not_come_up_leaves_nothing_running(shared_dir):
    """As root, with the proxy installed (otherwise skipped, or failed under LECTURE2_BROWSER_REQUIRED)."""
    from test_browser import _unavailable

    if os.geteuid() != 0:
        _unavailable("the hub starts as root")
    problem = accounts.interpreter_problem(ROOT / ".venv")
    if problem:
        _unavailable(problem)
    course, state = _scratch_course(shared_dir), shared_dir / "course" / ".hub"
    teacher = shared_dir / "roster.csv"
    teacher.write_text(f"prof-x,instructor,{roster.hash_password('pw-prof-x', 1000)}\n", encoding="utf-8")
    common = ["--course", str(course), "--roster", str(teacher), "--state", str(state),
              "--exchange", str(shared_dir / "exchange"), "--homes", str(shared_dir / "homes")]
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = _hub("start", *common, "--port", str(port), "--proxy", "/bin/true")
    assert proc.returncode == 2 and f"port {port} on 127.0.0.1 is in use" in proc.stderr, proc.stderr
    assert f"HUB_PORT={port + 1}" in proc.stderr and not control.tagged_processes(state)

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    proc = _hub("start", *common, "--port", str(port), "--proxy", "/bin/false")  # a proxy that dies at once
    assert proc.returncode == 2 and "jupyterhub exited" in proc.stderr, proc.stdout + proc.stderr
    assert "everything it started was stopped" in proc.stderr and "Traceback" not in proc.stderr.splitlines()[0]
    assert not control.tagged_processes(state)
    assert "no hub of this course is running" in _hub("stop", "--state", str(state)).stdout
    assert _hub("status", "--state", str(state)).returncode == 3
