"""The course's hub without a browser (`make hub`, lecture2_hub): the roster and its passwords, the demo switch,
every refusal said in one message with nothing left running (no class named, a bad roster, an account the hub
must not take, a course owned by root, a port in use, a hub that does not come up), the exchange laid out and
checked, the course folder made private but for what students' kernels need, the servers' configs, the log-in
throttle, students' limits as written, the Validate button's reply, `make feedback`, idle servers stopped and an
immediate restart.

The class end to end in Chromium: tests/test_hub_browser.py; every attack of a hostile class:
tests/test_hub_attacks.py."""
from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

import hubs
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


def test_the_demo_class_needs_its_switch_and_its_instructor_gets_a_new_password(tmp_path):
    people = roster.load(roster.DEMO_ROSTER)
    assert [(p.name, p.role) for p in people] == [("teacher", "instructor"), ("alice", "student"), ("bob", "student")]
    assert [p.password_hash for p in people if p.role == "instructor"] == [""]  # no public password for the instructor
    assert all(roster.check_password(roster.DEMO_PASSWORD, p.password_hash) for p in people if p.role == "student")
    assert not roster.check_password(roster.DEMO_PASSWORD, "pbkdf2_sha256$x$zz$00")  # a malformed hash: no
    path, password = roster.demo(tmp_path)
    (tmp_path / "b").mkdir()
    again = roster.demo(tmp_path / "b")[1]
    teacher = next(p for p in roster.load(path) if p.role == "instructor")
    assert roster.check_password(password, teacher.password_hash) and password != again
    assert not roster.check_password(roster.DEMO_PASSWORD, teacher.password_hash)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    proc = _hub("start", "--state", str(tmp_path / "state"))  # neither a roster nor the demo switch
    assert proc.returncode == 2 and "HUB_ROSTER=roster.csv" in proc.stderr and "HUB_DEMO=1" in proc.stderr, proc.stderr
    assert not (tmp_path / "state").exists()


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
    assert stat.S_IMODE(backups[0].stat().st_mode) == 0o600  # the earlier hashes: nobody else's to read
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


def _scratch_course(base: Path, owner: str) -> Path:
    course = base / "course"
    (course / "notebooks" / ASSIGNMENT).mkdir(parents=True)
    shutil.copy(RELEASE / NAME, course / "notebooks" / ASSIGNMENT)
    shutil.copy(ROOT / "nbgrader_config.py", course)
    (course / ".venv").symlink_to(ROOT / ".venv")
    subprocess.run(["chown", "-R", "--no-dereference", f"{owner}:", str(course)], check=True)
    return course


@pytest.fixture
def owner_account():
    """An ordinary Unix user to own a scratch course (the hub refuses a course of root's)."""
    name = f"l2own-{secrets.token_hex(3)}"
    yield hubs.make_account(name).pw_name
    hubs.remove_account(name)


def _needs_a_hub() -> None:
    why = hubs.unavailable_reason()
    if why:
        from test_browser import _unavailable

        _unavailable(why)


@pytest.mark.slow
def test_a_root_course_a_port_in_use_or_a_hub_that_does_not_come_up_leave_nothing_running(shared_dir, owner_account):
    """As root, with the proxy installed (otherwise skipped, or failed under LECTURE2_BROWSER_REQUIRED)."""
    _needs_a_hub()
    course, state = _scratch_course(shared_dir, owner_account), shared_dir / "course" / ".hub"
    teacher = shared_dir / "roster.csv"
    teacher.write_text(f"prof-x,instructor,{roster.hash_password('pw-prof-x', 1000)}\n", encoding="utf-8")
    common = ["--roster", str(teacher), "--state", str(state), "--limits", "off",
              "--exchange", str(shared_dir / "exchange"), "--homes", str(shared_dir / "homes")]
    os.chown(course, 0, 0)  # a course of root's: the instructors' labs would be root
    proc = _hub("start", "--course", str(course), *common)
    assert proc.returncode == 2 and "belongs to root" in proc.stderr and f"chown -R lecture2: {course}" in proc.stderr, \
        proc.stderr
    assert not state.exists()
    subprocess.run(["chown", f"{owner_account}:", str(course)], check=True)
    common = ["--course", str(course), *common]
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


@pytest.mark.slow
def test_an_idle_server_is_stopped_and_a_stopped_hub_starts_again_at_once():
    """Does jupyterhub-idle-culler stop a server nobody uses, and does `make hub` start again on the same port right
    after `make hub-stop` (its sockets in TIME_WAIT)?"""
    _needs_a_hub()
    hub = hubs.start_hub({"prof-i": "instructor", f"ida-{secrets.token_hex(2)}": "student"},
                         limits="idle=8,disk=32MiB,exchange=32MiB")
    try:
        ida = next(n for n, r in hub.people.items() if r == "student")
        token = hub.token(ida)
        hub.start_server(ida, token)
        assert hub.answers(ida, token)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            status, text = hubs.request(f"{hub.url}/hub/api/users/{ida}", token=token)
            if not json.loads(text).get("servers"):
                break
            time.sleep(1)
        else:
            raise AssertionError("the idle server was not stopped:\n" + hub.log_tail())
        assert "idle-culler" in hub.log_tail(400)
        assert hub.cli("stop", "--state", str(hub.state)).returncode == 0
        again = hub.cli("start", *hub.start_args())
        assert again.returncode == 0 and hub.url in again.stdout, again.stdout + again.stderr
    finally:
        stopped = hubs.stop_hub(hub)
    assert stopped.returncode == 0 and not control.tagged_processes(hub.state)


# ---- the parts, one by one (no hub started)

@pytest.fixture
def two_students():
    """Two Unix users as the hub makes them (the roster's names), removed afterwards."""
    names = [f"l2st{i}-{secrets.token_hex(3)}" for i in (1, 2)]
    entries = [accounts.ensure_student(n, Path(tempfile.gettempdir()), create_home=False) for n in names]
    yield entries
    for name in names:
        hubs.remove_account(name)


def test_the_exchange_is_laid_out_and_a_planted_part_stops_the_hub(shared_dir, owner_account, two_students):
    """Does `make hub` lay the exchange out so that no student can replace a part of it (root's 0755, the course's
    owner's parts, inbound sticky), take parts back from root, close 0777 submissions, and refuse a part that is a
    link or belongs to someone else?"""
    from lecture2_hub import exchange

    owner = accounts.account(owner_account)
    root = shared_dir / "exchange"
    root.mkdir(mode=0o777)
    os.chmod(root, 0o777)  # as nbgrader's release leaves it
    (root / "lecture2" / "outbound" / "lec02").mkdir(parents=True)  # released as root by an earlier hub
    (root / "lecture2" / "inbound" / "old+lec02+t").mkdir(parents=True)
    os.chmod(root / "lecture2" / "inbound" / "old+lec02+t", 0o777)
    lines = exchange.prepare(root, owner)
    mode = lambda p: (stat.S_IMODE(p.stat().st_mode), p.stat().st_uid)  # noqa: E731
    assert mode(root) == (0o755, 0)
    for part, want in (("", 0o755), ("outbound", 0o755), ("inbound", 0o1733), ("feedback", 0o711)):
        assert mode(root / "lecture2" / part) == (want, owner.pw_uid), part
    assert (root / "lecture2" / "outbound" / "lec02").stat().st_uid == owner.pw_uid
    assert stat.S_IMODE((root / "lecture2" / "inbound" / "old+lec02+t").stat().st_mode) == 0o755
    assert any("mode 777 -> 755" in line for line in lines) and any("no longer writable" in line for line in lines)
    assert exchange.prepare(root, owner) == []  # laid out: nothing to say

    feedback = root / "lecture2" / "feedback"
    os.rename(feedback, shared_dir / "moved")
    feedback.symlink_to(shared_dir / "moved")  # a link planted where a part was
    with pytest.raises(exchange.ExchangeProblem, match=r"feedback is a link.*mv .*suspect"):
        exchange.prepare(root, owner)
    feedback.unlink()
    feedback.mkdir()
    os.chown(feedback, two_students[0].pw_uid, two_students[0].pw_gid)  # a student's own folder in its place
    with pytest.raises(exchange.ExchangeProblem, match=rf"belongs to {two_students[0].pw_name}, not to the course"):
        exchange.prepare(root, owner)
    os.chown(feedback, 0, 0)
    os.chown(root, two_students[1].pw_uid, 0)
    with pytest.raises(exchange.ExchangeProblem, match="not root"):
        exchange.prepare(root, owner)


def test_the_servers_configs_keep_student_code_out_of_the_instructors_lab(shared_dir):
    """The instructor's server has no nbgrader Validate (server extension and button); a student's has the course's
    Validate, no formgrader, at most `kernels` kernels; both use the course's exchange classes."""
    from lecture2_hub import configs, exchange, limits

    configs.write(shared_dir, shared_dir / "exchange", limits.parse("kernels=2"))
    read = lambda role, name: json.loads((shared_dir / "config" / role / name).read_text())  # noqa: E731
    teacher = read("instructor", "jupyter_server_config.json")["ServerApp"]["jpserver_extensions"]
    assert teacher["nbgrader.server_extensions.validate_assignment"] is False
    assert "lecture2_hub.validate_button" not in teacher and teacher["nbgrader.server_extensions.formgrader"] is True
    assert read("instructor", "labconfig/page_config.json")["disabledExtensions"] == {
        "@jupyter/nbgrader:validate-assignment": True}
    student = read("student", "jupyter_server_config.json")
    assert student["ServerApp"]["jpserver_extensions"]["lecture2_hub.validate_button"] is True
    assert student["ServerApp"]["jpserver_extensions"]["nbgrader.server_extensions.formgrader"] is False
    assert student["CappedKernelManager"] == {"max_kernels": 2}
    for role in ("student", "instructor"):
        text = (shared_dir / "config" / role / "nbgrader_config.py").read_text()
        assert 'c.ExchangeFactory.collect = "lecture2_hub.exchange.Collect"' in text
        assert stat.S_IMODE((shared_dir / "config" / role / "nbgrader_config.py").stat().st_mode) == 0o644
    assert release_feedback.EXCHANGE_CLASSES.items() <= exchange.FACTORY.items()
    for folder, shown in (("student", "c.List.shown = ['lec02']"), ("student-en", "c.List.shown = ['lec02-en']"),
                          ("instructor", None)):  # a student's Assignments tab: their edition's assignment alone
        text = (shared_dir / "config" / folder / "nbgrader_config.py").read_text()
        assert (shown in text) if shown else "List.shown" not in text, (folder, text)


def test_a_students_listing_shows_the_assignment_of_their_edition(tmp_path):
    """Does the exchange's List, told `shown`, list only those of the released assignments (nbgrader's own listing,
    which the Assignments tab reads), and every one when not told?"""
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    from lecture2_hub import exchange

    for name in ("lec02", "lec02-en"):
        (tmp_path / "exchange" / "lecture2" / "outbound" / name).mkdir(parents=True)
        (tmp_path / "exchange" / "lecture2" / "outbound" / name / "01.ipynb").write_text("{}")
    listed = {}
    for shown in (None, ["lec02-en"]):
        config = Config()
        config.Exchange.root = str(tmp_path / "exchange")
        config.Exchange.assignment_dir = str(tmp_path / "home")
        config.CourseDirectory.course_id = "lecture2"
        if shown is not None:
            config.List.shown = shown
        lister = exchange.List(coursedir=CourseDirectory(config=config), config=config)
        lister.init_src()
        lister.init_dest()
        listed[str(shown)] = sorted(lister.parse_assignment(a)["assignment_id"] for a in lister.assignments)
    assert listed == {"None": ["lec02", "lec02-en"], "['lec02-en']": ["lec02-en"]}


def test_failed_log_ins_make_each_next_try_wait_longer():
    from lecture2_hub.authenticator import Throttle

    throttle = Throttle(free=5, lockout=30, max_lockout=900, window=3600)
    for i in range(5):
        assert throttle.wait("name:ben", now=100 + i) == 0
        throttle.failed("name:ben", now=100 + i)
    assert throttle.wait("name:ben", now=105) == pytest.approx(29)  # 30 s after the fifth failure
    throttle.failed("name:ben", now=135)
    assert throttle.wait("name:ben", now=135) == pytest.approx(60)  # doubled
    for i in range(20):
        throttle.failed("name:ben", now=200 + i)
    assert throttle.wait("name:ben", now=220) == pytest.approx(899)  # at most max_lockout
    assert throttle.wait("name:ben", now=219 + 3600 + 1) == 0  # failures older than the window are forgotten
    assert throttle.wait("name:ana", now=220) == 0  # one name's failures are its own
    throttle.forget("name:ben")
    assert throttle.wait("name:ben", now=221) == 0


def test_limits_are_read_with_their_units_and_refused_with_what_a_part_must_be():
    from lecture2_hub import limits

    got = limits.parse("memory=4GiB, cpus=1.5,processes=512,disk=0,tmp=256MiB,kernels=2,idle=600,exchange=20GB")
    assert (got.memory, got.cpus, got.processes, got.disk, got.tmp, got.kernels, got.idle, got.exchange) == (
        4 * 2**30, 1.5, 512, 0, 256 * 2**20, 2, 600, 20 * 10**9)
    assert limits.StudentLimits.from_json(got.to_json()) == got
    for bad, says in (("memory=lots", "a size is a number and a unit"), ("ram=1GiB", "NAME one of"),
                      ("cpus=0", "must be above 0"), ("processes=ten", "whole number"), ("memory", "NAME=VALUE"),
                      ("memory=100MiB", "at least memory=256MiB"), ("disk=1MiB", "at least 16MiB")):
        with pytest.raises(limits.LimitsError, match=says):
            limits.parse(bad)


def test_the_port_check_lets_a_hub_start_again_right_after_it_stopped():
    """A connection the proxy closed leaves its port in TIME_WAIT for a minute: that is no program using it."""
    from lecture2_hub import preflight

    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as node (the proxy) sets it on its sockets
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        client = socket.create_connection(("127.0.0.1", port))
        conn, _ = server.accept()
        conn.close()  # the server's side closes first: its end goes to TIME_WAIT
        client.close()
        assert not preflight.port_free(port)  # still listening
    assert preflight.port_free(port)


def test_each_student_takes_the_edition_the_roster_names(tmp_path, shared_dir):
    """Issue 41: the roster's optional `edition` column (zh by default, or en) picks a student's assignment and
    their lab's language: the English edition's servers read config/student-en (JupyterLab's translation setting
    en), the Chinese's config/student (zh_CN, the language pack); a bad edition is refused with its row; both
    editions' releases go into the exchange as assignments of their own (lec02, lec02-en)."""
    from lecture2_hub import configs, limits
    from lecture2_hub.spawner import config_dir

    people = {p.name: p for p in roster.load(roster.DEMO_ROSTER)}
    assert people["bob"].edition == "en" and people["alice"].edition == "zh" and people["teacher"].edition == "zh"
    bad = tmp_path / "roster.csv"
    bad.write_text("teacher,instructor\nalice,student,,fr\n", encoding="utf-8")
    with pytest.raises(roster.RosterError, match="line 2: edition 'fr' is not one of 'zh', 'en'"):
        roster.load(bad)
    configs.write(shared_dir, shared_dir / "exchange", limits.parse("kernels=2"))
    for edition, locale in (("zh", "zh_CN"), ("en", "en")):
        folder = config_dir(shared_dir, "student", edition)
        overrides = json.loads((folder / "lab-settings" / "overrides.json").read_text())
        assert overrides["@jupyterlab/translation-extension:plugin"] == {"locale": locale}
        assert json.loads((folder / "jupyter_server_config.json").read_text())["LabApp"]["app_settings_dir"] == \
            str(folder / "lab-settings")
    assert config_dir(shared_dir, "student", "en").name == "student-en"
    path = tmp_path / "passwords.csv"
    roster_path = tmp_path / "class.csv"
    roster_path.write_text("teacher,instructor\nbob,student,,en\n", encoding="utf-8")
    roster.set_passwords(roster_path, path)
    assert {p.name: p.edition for p in roster.load(roster_path)} == {"teacher": "zh", "bob": "en"}
