"""`make hub`, `make hub-stop`, `make hub-status`: the course's JupyterHub on 127.0.0.1, started, stopped and
shown by the process ids it started.

    .venv/bin/python -m lecture2_hub start [--roster R] [--port 8000] [--exchange DIR] [--homes DIR] [--state DIR]
    .venv/bin/python -m lecture2_hub stop | status [--state DIR]
    .venv/bin/python -m lecture2_hub passwords ROSTER [--out FILE]

`start` checks everything before it starts anything (root, the roster's names and roles, Unix accounts it must
not take over, the port, a hub of this state folder already running, the proxy), makes the course folder safe to
share (lecture2_hub.accounts), releases notebooks/lec02 into nbgrader's exchange, starts `jupyterhub` in the
background and waits until it answers. If the hub does not come up, whatever it started is stopped again and the
hub's own last lines are shown. `stop` stops the hub (which stops each student's server and the proxy), then
every process still carrying the hub's tag (settings.TAG_ENV), each by its id: nothing is left running.
"""
from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from . import accounts, roster, settings
from .spawner import config_dir

ASSIGNMENT = "lec02"
START_TIMEOUT_S = 90
NBGRADER_EXTENSIONS = ("formgrader", "validate_assignment", "assignment_list", "course_list")
# The class's labs ask nobody about Jupyter's news or updates (their defaults; each person can change them).
LAB_DEFAULTS = {"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False}}
PROXY_IN_VENV = Path(".venv") / "hub-proxy" / "node_modules" / ".bin" / "configurable-http-proxy"


class HubError(RuntimeError):
    """A reason not to start (or a failed start), said in one message for the instructor."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


# ---- the processes of one hub, found by the tag every one of them carries in its environment

def tagged_processes(state: Path) -> dict[int, str]:
    """pid -> command line of every process carrying this hub's tag (the hub, the proxy, servers, kernels)."""
    tags = {f"{settings.TAG_ENV}={state}".encode(), f"{settings.SETTINGS_ENV}={state / 'settings.json'}".encode()}
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = set((entry / "environ").read_bytes().split(b"\0"))
            if environ & tags:
                found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _wait_gone(pids, timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    left = [p for p in pids if _alive(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = [p for p in left if _alive(p)]
    return left


def stop_processes(state: Path, hub_pid: int = 0) -> int:
    """Stop the hub (SIGTERM: it stops its servers and proxy), then every process still tagged, by id. Returns
    how many processes were found."""
    found = tagged_processes(state)
    if hub_pid and hub_pid in found:
        os.kill(hub_pid, signal.SIGTERM)
        _wait_gone([hub_pid], 30)
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        left = tagged_processes(state)
        for pid in left:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        if not _wait_gone(left, wait):
            break
    return len(found)


def _hub_settings(state: Path) -> settings.Settings | None:
    try:
        return settings.read(state / "settings.json")
    except (OSError, ValueError, TypeError):
        return None


def running(state: Path) -> settings.Settings | None:
    """The settings of this state folder's hub when its jupyterhub process is alive."""
    s = _hub_settings(state)
    if s and s.pid and s.pid in tagged_processes(state):
        return s
    return None


# ---- what a hub needs before it starts

def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    os.chmod(path, 0o644)


def write_configs(state: Path, exchange: Path) -> None:
    """The Jupyter config folders of students' and instructors' servers (readable by students)."""
    nbgrader = (f'c = get_config()  # noqa: F821\nc.Exchange.root = {str(exchange)!r}\n'
                f'c.CourseDirectory.course_id = {settings.COURSE_ID!r}\n')
    student = {f"nbgrader.server_extensions.{n}": n == "assignment_list" for n in NBGRADER_EXTENSIONS}
    student["lecture2_hub.validate_button"] = True
    for role, extensions, disabled in (
            ("student", student, ["formgrader", "course-list", "create-assignment"]),
            ("instructor", {f"nbgrader.server_extensions.{n}": True for n in NBGRADER_EXTENSIONS}, [])):
        folder = config_dir(state, role)
        _write(folder / "jupyter_server_config.json", json.dumps(
            {"ServerApp": {"jpserver_extensions": extensions},
             "LabApp": {"app_settings_dir": str(folder / "lab-settings")}}, indent=1) + "\n")
        _write(folder / "lab-settings" / "overrides.json", json.dumps(LAB_DEFAULTS, indent=1) + "\n")
        _write(folder / "labconfig" / "page_config.json", json.dumps(
            {"disabledExtensions": {f"@jupyter/nbgrader:{d}": True for d in disabled}}, indent=1) + "\n")
        _write(folder / "nbgrader_config.py", nbgrader + (
            'c.ExchangeFactory.release_feedback = "lecture2_hub.exchange.ReleaseFeedbackReadable"\n'
            if role == "instructor" else ""))
    for folder in (state / "config", *(config_dir(state, r) for r in ("student", "instructor")),
                   *(config_dir(state, r) / sub for r in ("student", "instructor") for sub in ("labconfig", "lab-settings"))):
        os.chmod(folder, 0o755)


def release(course: Path, exchange: Path) -> str:
    """notebooks/lec02 into the exchange (nbgrader release_assignment --force: students' fetched copies stay)."""
    env = dict(os.environ, PATH=f"{course / '.venv' / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}")
    env.pop("NBGRADER_EXECUTION", None)
    proc = subprocess.run([str(course / ".venv" / "bin" / "nbgrader"), "release_assignment", ASSIGNMENT, "--force",
                           f"--Exchange.root={exchange}", f"--CourseDirectory.course_id={settings.COURSE_ID}"],
                          cwd=course, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise HubError(f"nbgrader release_assignment {ASSIGNMENT} failed:\n{(proc.stdout + proc.stderr)[-3000:]}")
    count = len(list((course / "notebooks" / ASSIGNMENT).glob("*.ipynb")))
    return f"released notebooks/{ASSIGNMENT} ({count} notebook{'s' if count != 1 else ''}) into {exchange / settings.COURSE_ID / 'outbound'}"


def _check(course: Path, roster_path: Path, proxy: str, exchange: Path) -> tuple[list, list[str]]:
    try:
        people = roster.load(roster_path)
    except roster.RosterError as err:
        raise HubError(f"the roster cannot be used, nothing was started:\n{err}") from None
    foreign = accounts.foreign_accounts([p.name for p in people if p.role == "student"])
    if foreign:
        raise HubError(f"{roster_path}: {', '.join(foreign)}: a Unix user of that name already exists on this machine "
                       "and was not made by the hub; a student's server never runs as it. Give the student another "
                       "name in the roster")
    if os.geteuid() != 0:
        raise HubError("make hub runs as root (sudo make hub): it starts each student's server as that student's "
                       "own Unix user, which only root can")
    if not (course / "nbgrader_config.py").is_file() or not (course / "notebooks" / ASSIGNMENT).is_dir():
        raise HubError(f"{course} is not the course folder (no nbgrader_config.py and notebooks/{ASSIGNMENT})")
    for tool in ("jupyterhub", "jupyterhub-singleuser", "nbgrader"):
        if not (course / ".venv" / "bin" / tool).is_file():
            raise HubError(f"{course / '.venv' / 'bin' / tool} is missing: run `make setup` (jupyterhub comes with "
                           "the course's dependencies)")
    problem = accounts.interpreter_problem(course / ".venv") or accounts.package_problem(course / ".venv", course)
    if problem:
        raise HubError(problem)
    if not proxy or not os.access(proxy, os.X_OK):
        raise HubError("configurable-http-proxy is not installed: `make hub` installs it with npm into "
                       f"{PROXY_IN_VENV} (Node and npm from Debian: apt-get install nodejs npm)")
    notes = []
    nameless = [p.name for p in people if not p.password_hash]
    if nameless:
        notes.append(f"note: {len(nameless)} on the roster have no password yet and cannot log in "
                     f"({', '.join(nameless[:5])}{' ...' if len(nameless) > 5 else ''}): "
                     f"python -m lecture2_hub passwords {roster_path}")
    if exchange.exists() and not exchange.is_dir():
        raise HubError(f"the exchange {exchange} is not a folder")
    return people, notes


def start(course: Path, roster_path: Path, port: int, exchange: Path, homes: Path, state: Path, proxy: str) -> int:
    course, state, exchange, homes = course.resolve(), state.absolute(), exchange.absolute(), homes.absolute()
    roster_path = roster_path.resolve()
    people, notes = _check(course, roster_path, proxy, exchange)
    state.mkdir(parents=True, exist_ok=True)
    lock = open(state / "lock", "a")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise HubError(f"another `make hub` of {state} is starting right now: wait for it, then `make hub-status`") from None
    try:
        already = running(state)
        if already:
            raise HubError(f"the course's hub is already running (pid {already.pid}, {already.url}): nothing else was "
                           "started. `make hub-status` shows it, `make hub-stop` stops it")
        if not _port_free(port):
            raise HubError(f"port {port} on 127.0.0.1 is in use by another program: nothing was started. Stop it, or "
                           f"choose another port: make hub HUB_PORT={port + 1}")
        leftovers = stop_processes(state)  # of a hub that died: its servers would hold ports and files
        if leftovers:
            notes.append(f"stopped {leftovers} processes left by an earlier hub of {state}")
        t0 = time.monotonic()
        lines = accounts.protect_course(course, keep=(state.name,) if state.parent == course else ())
        os.chmod(state, 0o711)  # students' servers read config/ in it; nothing else
        write_configs(state, exchange)
        owner = accounts.owner(course)
        private = state / "instructor"
        private.mkdir(exist_ok=True)
        os.chmod(private, 0o700)
        os.chown(private, owner.pw_uid, owner.pw_gid)
        for folder in (exchange, homes):
            if not folder.exists():
                folder.mkdir(parents=True)
                os.chmod(folder, 0o755)
        lines.append(release(course, exchange))
        s = settings.Settings(course=str(course), state=str(state), roster=str(roster_path), exchange=str(exchange),
                              homes=str(homes), port=port, hub_port=_free_port(), proxy_api_port=_free_port(),
                              proxy=str(Path(proxy).resolve()))
        s.write()
        log = open(state / "jupyterhub.log", "ab")
        os.chmod(state / "jupyterhub.log", 0o600)
        env = dict(os.environ, PATH=f"{s.venv_bin}:{os.environ.get('PATH', '/usr/bin:/bin')}")
        env.update({settings.SETTINGS_ENV: str(state / "settings.json"), settings.TAG_ENV: str(state)})
        env.pop("NBGRADER_EXECUTION", None)
        hub = subprocess.Popen([str(s.venv_bin / "jupyterhub"), "-f", str(Path(__file__).with_name("jupyterhub_config.py"))],
                               cwd=state, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                               start_new_session=True)
        log.close()
        s.pid = hub.pid
        s.write()
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                with urllib.request.urlopen(f"{s.url}/hub/health", timeout=5) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            if hub.poll() is not None or time.monotonic() > deadline:
                stop_processes(state, hub.pid)
                tail = (state / "jupyterhub.log").read_text(errors="replace").splitlines()[-25:]
                why = f"exited ({hub.returncode})" if hub.poll() is not None else f"did not answer in {START_TIMEOUT_S} s"
                raise HubError(f"jupyterhub {why}; everything it started was stopped. Its last lines "
                               f"({state / 'jupyterhub.log'}):\n" + "\n".join(tail))
            time.sleep(0.3)
        students = sum(p.role == "student" for p in people)
        print("\n".join(notes + lines))
        print(f"the hub is up in {time.monotonic() - t0:.1f} s: {s.url}  ({students} students, "
              f"{len(people) - students} instructor{'s' if len(people) - students != 1 else ''} on {roster_path.name}; pid {hub.pid})")
        if roster_path == roster.DEMO_ROSTER.resolve():
            print(f"demo roster: log in as alice or bob (students) or teacher (instructor), password {roster.DEMO_PASSWORD!r}")
        print("make hub-status shows it; make hub-stop stops it")
        return 0
    finally:
        lock.close()


def stop(state: Path) -> int:
    state = state.absolute()
    s = _hub_settings(state)
    count = stop_processes(state, s.pid if s else 0)
    left = tagged_processes(state)
    if left:
        print(f"error: {len(left)} processes of the hub did not stop: {', '.join(map(str, left))}")
        return 1
    print(f"stopped the hub: {count} processes" if count else "no hub of this course is running")
    return 0


def status(state: Path) -> int:
    state = state.absolute()
    s = running(state)
    found = tagged_processes(state)
    if not s:
        if os.geteuid() != 0 and (state / "settings.json").exists():
            print("the course's hub runs as root: sudo make hub-status")
            return 3
        print("the course's hub is not running" + (f" ({len(found)} stray processes: make hub-stop)" if found else ""))
        return 3
    servers = sorted({_owner_of(pid) for pid, cmd in found.items() if "jupyterhub-singleuser" in cmd})
    print(f"the course's hub is running: {s.url} (pid {s.pid}), {len(found)} processes; servers of: "
          f"{', '.join(servers) or 'nobody yet'}; exchange {s.exchange}; roster {s.roster}")
    return 0


def _owner_of(pid: int) -> str:
    import pwd

    try:
        return pwd.getpwuid(os.stat(f"/proc/{pid}").st_uid).pw_name
    except (OSError, KeyError):
        return "?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lecture2_hub", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    go = sub.add_parser("start", help="start the hub in the background")
    go.add_argument("--course", type=Path, default=Path.cwd(), help="the course folder (default: here)")
    go.add_argument("--roster", type=Path, default=roster.DEMO_ROSTER)
    go.add_argument("--port", type=int, default=8000)
    go.add_argument("--exchange", type=Path, default=Path("/srv/nbgrader/exchange"))
    go.add_argument("--homes", type=Path, default=Path("/home"))
    go.add_argument("--proxy", default="")
    for name in ("start", "stop", "status"):
        p = go if name == "start" else sub.add_parser(name, help=f"{name} the hub")
        p.add_argument("--state", type=Path, default=Path.cwd() / ".hub", help="the hub's own folder (default: .hub here)")
    pw = sub.add_parser("passwords", help="give everyone on a roster without a password one")
    pw.add_argument("roster", type=Path)
    pw.add_argument("--out", type=Path, default=None, help="where the new passwords go (default ROSTER-passwords.csv)")
    args = parser.parse_args(argv)
    try:
        if args.command == "start":
            proxy = args.proxy or (str(args.course / PROXY_IN_VENV) if (args.course / PROXY_IN_VENV).exists()
                                   else shutil.which("configurable-http-proxy") or "")
            return start(args.course, args.roster, args.port, args.exchange, args.homes, args.state, proxy)
        if args.command == "stop":
            return stop(args.state)
        if args.command == "status":
            return status(args.state)
        out = args.out or args.roster.with_name(args.roster.stem + "-passwords.csv")
        names = roster.set_passwords(args.roster, out)
        print(f"{len(names)} new passwords in {out} (only you can read it): hand each out, then delete the file"
              if names else "everyone on the roster has a password already")
        return 0
    except (HubError, accounts.AccountError, roster.RosterError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
