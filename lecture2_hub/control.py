"""`make hub`, `make hub-stop`, `make hub-status`: the course's JupyterHub, started, stopped and shown by the
process ids it started.

    .venv/bin/python -m lecture2_hub start (--roster R | --demo) [--port 8000] [--url http://localhost:8000]
                                     [--exchange DIR] [--homes DIR] [--state DIR] [--limits memory=2GiB,...|off]
    .venv/bin/python -m lecture2_hub stop [--unmount-exchange] | status [--state DIR]
    .venv/bin/python -m lecture2_hub passwords ROSTER [--out FILE]

`start` checks everything before it starts anything (lecture2_hub.preflight: root, a roster or the demo switch,
a course owned by an ordinary account, Unix accounts it must not take over, what holds students to their limits,
the port, a hub of this state folder already running, the proxy), makes the course folder safe to share
(lecture2_hub.accounts), lays the exchange out and checks it (lecture2_hub.exchange), writes the servers' configs
and releases notebooks/lec02 as the course's owner (lecture2_hub.configs), starts `jupyterhub` in the background
and waits until it answers. If the hub does not come up, whatever it started is stopped again and the hub's own
last lines are shown. `stop` stops the hub (which stops each student's server and the proxy), then every process
still carrying the hub's tag (settings.TAG_ENV), each by its id, then removes the students' cgroups and unmounts
their homes: nothing is left running.
"""
from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import replace
from pathlib import Path

from . import accounts, configs, disks, limits, preflight, roster, settings
from . import exchange as exchange_layout
from .limits import StudentLimits
from .preflight import HubError

START_TIMEOUT_S = 90
PROXY_IN_VENV = Path(".venv") / "hub-proxy" / "node_modules" / ".bin" / "configurable-http-proxy"


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


# ---- start

def _hub_env(s: settings.Settings, state: Path) -> dict[str, str]:
    env = dict(os.environ, PATH=f"{s.venv_bin}:{os.environ.get('PATH', '/usr/bin:/bin')}")
    env.update({settings.SETTINGS_ENV: str(state / "settings.json"), settings.TAG_ENV: str(state)})
    env.pop("NBGRADER_EXECUTION", None)
    return env


def _wait_up(s: settings.Settings, hub: subprocess.Popen, state: Path) -> None:
    """Until the hub answers on its public address; else stop what it started and say why, with its last lines."""
    deadline = time.monotonic() + START_TIMEOUT_S
    health = urllib.request.Request(f"http://127.0.0.1:{s.port}/hub/health",
                                    headers={"Host": s.url.split("://", 1)[1].split("/", 1)[0]})
    while True:
        try:
            with urllib.request.urlopen(health, timeout=5) as reply:
                if reply.status == 200:
                    return
        except OSError:
            pass
        if hub.poll() is not None or time.monotonic() > deadline:
            stop_processes(state, hub.pid)
            tail = (state / "jupyterhub.log").read_text(errors="replace").splitlines()[-25:]
            why = f"exited ({hub.returncode})" if hub.poll() is not None else f"did not answer in {START_TIMEOUT_S} s"
            raise HubError(f"jupyterhub {why}; everything it started was stopped. Its last lines "
                           f"({state / 'jupyterhub.log'}):\n" + "\n".join(tail))
        time.sleep(0.3)


def start(course: Path, roster_path: Path | None, port: int, exchange: Path, homes: Path, state: Path, proxy: str,
          *, demo: bool = False, bounds: StudentLimits | None = None, bounded: bool = True,
          public_url: str = "", extra: dict | None = None) -> int:
    """`make hub`: check everything, then lay out the course folder and the exchange, release, start jupyterhub and
    wait until it answers. Exit status 0, or HubError."""
    course, state, exchange, homes = course.resolve(), state.absolute(), exchange.absolute(), homes.absolute()
    bounds = bounds or StudentLimits()
    if not bounded:
        bounds = replace(bounds, disk=0, exchange=0)
    if roster_path is None and not demo:
        raise HubError("which class? make hub HUB_ROSTER=roster.csv (one row a person: docs/hub.md), or, to try the "
                       "demo class (alice and bob) on your own machine, make hub HUB_DEMO=1")
    notes, roster_path, people = _check_roster(roster_path)
    preflight.machine(course, proxy, exchange)
    owner = preflight.course_owner(course)
    notes += preflight.walls(bounds, bounded)
    lock = _start_lock(state)
    try:
        _refuse_or_clean_up(state, port, notes)
        t0 = time.monotonic()
        demo_password = ""
        if demo:
            roster_path, demo_password = roster.demo(state)
            people = preflight.people(roster_path)
        lines = _lay_out(course, state, exchange, homes, owner, bounds)
        s = settings.Settings(course=str(course), state=str(state), roster=str(roster_path), exchange=str(exchange),
                              homes=str(homes), port=port, public_url=public_url.rstrip("/"), owner=owner.pw_name,
                              limits=bounds.to_json(), bounded=bounded, hub_port=preflight.free_port(),
                              proxy_api_port=preflight.free_port(), proxy=str(Path(proxy).resolve()), extra=extra or {})
        s.write()
        hub = _launch(s, state)
        _wait_up(s, hub, state)
        _print_up(s, hub, t0, notes + lines, people, roster_path, bounds, bounded, demo, demo_password)
        return 0
    finally:
        lock.close()


def _check_roster(roster_path: Path | None) -> tuple[list[str], Path | None, list | None]:
    """The roster read and checked (none for the demo class, made later): (notes on people without a password yet,
    the roster's resolved path, its people)."""
    notes, people = [], None
    if roster_path is not None:
        roster_path = roster_path.resolve()
        people = preflight.people(roster_path)
        nameless = [p.name for p in people if not p.password_hash]
        if nameless:
            notes.append(f"note: {len(nameless)} on the roster have no password yet and cannot log in "
                         f"({', '.join(nameless[:5])}{' ...' if len(nameless) > 5 else ''}): "
                         f"python -m lecture2_hub passwords {roster_path}")
    return notes, roster_path, people


def _start_lock(state: Path):
    """The state folder made, and its lock file held (exclusive, not waiting): one `make hub` of a state at a time.
    Returns the open lock file; closing it releases the lock."""
    state.mkdir(parents=True, exist_ok=True)
    lock = os.fdopen(os.open(state / "lock", os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600), "a")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise HubError(f"another `make hub` of {state} is starting right now: wait for it, then `make hub-status`") from None
    return lock


def _refuse_or_clean_up(state: Path, port: int, notes: list[str]) -> None:
    """Nothing starts while this state's hub runs or the port is taken; a dead hub's leftover processes are stopped
    (a note for each such clean-up is appended to `notes`)."""
    already = running(state)
    if already:
        raise HubError(f"the course's hub is already running (pid {already.pid}, {already.url}): nothing else was "
                       "started. `make hub-status` shows it, `make hub-stop` stops it")
    if not preflight.port_free(port):
        raise HubError(f"port {port} on 127.0.0.1 is in use by another program: nothing was started. Stop it, or "
                       f"choose another port: make hub HUB_PORT={port + 1}")
    leftovers = stop_processes(state)  # of a hub that died: its servers would hold ports and files
    if leftovers:
        notes.append(f"stopped {leftovers} processes left by an earlier hub of {state}")


def _lay_out(course: Path, state: Path, exchange: Path, homes: Path, owner, bounds: StudentLimits) -> list[str]:
    """The course folder protected, the exchange made (its own bounded disk where set) and laid out, the config
    written, the instructor's private folder and the homes made, the assignments released; the lines to print."""
    lines = accounts.protect_course(course, keep=(state.name,) if state.parent == course else ())
    os.chmod(state, 0o711)  # students' servers read config/ in it; nothing else
    if bounds.exchange:
        made = disks.exchange(state, exchange, bounds.exchange)
        if made:
            lines.append(made)
    try:
        lines += exchange_layout.prepare(exchange, owner)
    except exchange_layout.ExchangeProblem as err:
        raise HubError(str(err)) from None
    configs.write(state, exchange, bounds)
    private = state / "instructor"
    private.mkdir(exist_ok=True)
    os.chmod(private, 0o700)
    os.chown(private, owner.pw_uid, owner.pw_gid)
    if not homes.exists():
        homes.mkdir(parents=True)
        os.chmod(homes, 0o755)
    try:
        lines.append(configs.release(course, exchange, owner))
    except configs.ReleaseError as err:
        raise HubError(str(err)) from None
    return lines


def _launch(s: settings.Settings, state: Path) -> subprocess.Popen:
    """jupyterhub started in its own session, its output appended to state/jupyterhub.log (mode 600), its pid
    written to the settings; the running process."""
    log = open(state / "jupyterhub.log", "ab")
    os.chmod(state / "jupyterhub.log", 0o600)
    # umask 077: JupyterHub's database, cookie secret and pid files, and the proxy's, are root's alone
    hub = subprocess.Popen([str(s.venv_bin / "jupyterhub"), "-f", str(Path(__file__).with_name("jupyterhub_config.py"))],
                           cwd=state, env=_hub_env(s, state), stdout=log, stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL, start_new_session=True, umask=0o077)
    log.close()
    s.pid = hub.pid
    s.write()
    return hub


def _print_up(s: settings.Settings, hub, t0: float, lines: list[str], people: list, roster_path: Path,
              bounds: StudentLimits, bounded: bool, demo: bool, demo_password: str) -> None:
    """What the instructor reads once the hub answers: the notes, the time it took to come up (seconds), the URL,
    the class, each student's limits, and for the demo class the passwords."""
    students = sum(p.role == "student" for p in people)
    print("\n".join(lines))
    print(f"the hub is up in {time.monotonic() - t0:.1f} s: {s.url}  ({students} students, "
          f"{len(people) - students} instructor{'s' if len(people) - students != 1 else ''} on {roster_path.name}; pid {hub.pid})")
    print(f"each student: {bounds.describe()}" if bounded else "students are not bounded (--no-limits)")
    print(f"each person's lab opens on a name of its own: {s.url.replace('://', '://<name>.')}/user/<name>/")
    if demo:
        print(f"demo class: log in as alice or bob (students, password {roster.DEMO_PASSWORD!r}), or as teacher "
              f"(instructor) with the password {demo_password!r}, made for this start and shown only now")
    print("make hub-status shows it; make hub-stop stops it")


def stop(state: Path, unmount_exchange: bool = False) -> int:
    state = state.absolute()
    s = _hub_settings(state)
    count = stop_processes(state, s.pid if s else 0)
    left = tagged_processes(state)
    if left:
        print(f"error: {len(left)} processes of the hub did not stop: {', '.join(map(str, left))}")
        return 1
    problems = [f"cgroup {p} was not removed" for p in limits.remove_cgroups(state)] if os.geteuid() == 0 else []
    if os.geteuid() == 0 and (state / "mounts.json").exists():
        problems += disks.unmount(state, keep_exchange=not unmount_exchange)
    print(f"stopped the hub: {count} processes" if count else "no hub of this course is running")
    for line in problems:
        print(f"warning: {line}")
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
    go.add_argument("--roster", type=Path, default=None, help="the class: name,role,password hash (docs/hub.md)")
    go.add_argument("--demo", action="store_true", help="the demo class instead (alice, bob, teacher): your machine only")
    go.add_argument("--port", type=int, default=8000)
    go.add_argument("--url", default="", help="where people open the hub, behind your TLS proxy "
                    "(https://hub.example.edu; default http://localhost:PORT); servers on <name>.<that name>")
    go.add_argument("--exchange", type=Path, default=Path("/srv/nbgrader/exchange"))
    go.add_argument("--homes", type=Path, default=Path("/home"))
    go.add_argument("--proxy", default="")
    go.add_argument("--limits", default="", help="each student's bounds, e.g. memory=4GiB,cpus=2,disk=1GiB "
                    "(lecture2_hub.limits), or off (a demo on your own machine)")
    go.add_argument("--extra", default="{}", help=argparse.SUPPRESS)  # the tests' settings (shorter waits)
    for name in ("start", "stop", "status"):
        p = go if name == "start" else sub.add_parser(name, help=f"{name} the hub")
        p.add_argument("--state", type=Path, default=Path.cwd() / ".hub", help="the hub's own folder (default: .hub here)")
        if name == "stop":
            p.add_argument("--unmount-exchange", action="store_true", help="also unmount the exchange's file system")
    pw = sub.add_parser("passwords", help="give everyone on a roster without a password one")
    pw.add_argument("roster", type=Path)
    pw.add_argument("--out", type=Path, default=None, help="where the new passwords go (default ROSTER-passwords.csv)")
    args = parser.parse_args(argv)
    try:
        if args.command == "start":
            proxy = args.proxy or (str(args.course / PROXY_IN_VENV) if (args.course / PROXY_IN_VENV).exists()
                                   else shutil.which("configurable-http-proxy") or "")
            bounded = args.limits.strip().lower() != "off"
            bounds = limits.parse(args.limits) if bounded else StudentLimits()
            return start(args.course, args.roster, args.port, args.exchange, args.homes, args.state, proxy,
                         demo=args.demo, bounds=bounds, bounded=bounded, public_url=args.url,
                         extra=json.loads(args.extra))
        if args.command == "stop":
            return stop(args.state, args.unmount_exchange)
        if args.command == "status":
            return status(args.state)
        out = args.out or args.roster.with_name(args.roster.stem + "-passwords.csv")
        names = roster.set_passwords(args.roster, out)
        print(f"{len(names)} new passwords in {out} (only you can read it): hand each out, then delete the file"
              if names else "everyone on the roster has a password already")
        return 0
    except (HubError, accounts.AccountError, roster.RosterError, limits.LimitsError, disks.DiskError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
