"""Everything `make hub` checks before it starts anything; each refusal one message with what to do.

    people(roster_path)           the roster, or why not (names, roles, an instructor)
    course_owner(course)          the ordinary Unix user the course belongs to: never root
    machine(course, proxy, ...)   root, the course's tools, a Python and packages students can run, the proxy
    walls(limits, bounded)        what holds students to their limits here (cgroups, loop devices, bubblewrap)
    port_free(port)               the public port, free (an immediate restart after make hub-stop is fine)
"""
from __future__ import annotations

import os
import pwd
import socket
from pathlib import Path

from . import accounts, confine, disks, limits, roster


class HubError(RuntimeError):
    """A reason not to start (or a failed start), said in one message for the instructor."""


def people(roster_path: Path) -> list[roster.Person]:
    try:
        found = roster.load(roster_path)
    except roster.RosterError as err:
        raise HubError(f"the roster cannot be used, nothing was started:\n{err}") from None
    foreign = accounts.foreign_accounts([p.name for p in found if p.role == "student"])
    if foreign:
        raise HubError(f"{roster_path}: {', '.join(foreign)}: a Unix user of that name already exists on this machine "
                       "and was not made by the hub; a student's server never runs as it. Give the student another "
                       "name in the roster")
    return found


def course_owner(course: Path) -> pwd.struct_passwd:
    """The course folder's owner, who runs the instructors' labs, the release, collect, grade and feedback. Root
    would put a root terminal one stolen session away from any student: refused, with the fix."""
    owner = accounts.owner(course)
    if owner.pw_uid == 0:
        raise HubError(
            f"the course folder {course} belongs to root, and the instructors' labs run as the course's owner: a root "
            "lab is a root terminal for whoever takes an instructor's session. Give the course to an ordinary "
            f"account, then start the hub again (as root):\n    useradd --create-home lecture2 && chown -R "
            f"lecture2: {course}\nand run the course's commands (make collect, make grade, make feedback) as that "
            "account (sudo -u lecture2 make grade)")
    return owner


def machine(course: Path, proxy: str, exchange: Path) -> None:
    if os.geteuid() != 0:
        raise HubError("make hub runs as root (sudo make hub): it starts each student's server as that student's "
                       "own Unix user, which only root can")
    if not (course / "nbgrader_config.py").is_file() or not (course / "notebooks" / "lec02").is_dir():
        raise HubError(f"{course} is not the course folder (no nbgrader_config.py and notebooks/lec02)")
    for tool in ("jupyterhub", "jupyterhub-singleuser", "nbgrader"):
        if not (course / ".venv" / "bin" / tool).is_file():
            raise HubError(f"{course / '.venv' / 'bin' / tool} is missing: run `make setup` (jupyterhub comes with "
                           "the course's dependencies)")
    problem = accounts.interpreter_problem(course / ".venv") or accounts.package_problem(course / ".venv", course)
    if problem:
        raise HubError(problem)
    if not proxy or not os.access(proxy, os.X_OK):
        raise HubError("configurable-http-proxy is not installed: `make hub` installs it with npm into "
                       ".venv/hub-proxy (Node and npm from Debian: apt-get install nodejs npm)")
    if exchange.is_symlink() or (exchange.exists() and not exchange.is_dir()):
        raise HubError(f"the exchange {exchange} is {'a link' if exchange.is_symlink() else 'not a folder'}: make it "
                       "a folder of root's and start the hub again")


def walls(bounds: limits.StudentLimits, bounded: bool) -> list[str]:
    """Refuse where students could not be held to `bounds` (unless `bounded` is False: --no-limits); notes."""
    problem = confine.problem()
    if problem:
        raise HubError(f"students' servers run inside bubblewrap, and {problem}")
    if not bounded:
        return ["warning: --no-limits: students' memory, CPU and processes are not bounded (a demo on your own "
                "machine only)"]
    for what, why in (("memory, CPU and process limits", limits.cgroup_problem()),
                      ("a disk of their own", disks.problem() if bounds.disk or bounds.exchange else None)):
        if why:
            raise HubError(f"students cannot be held to {what} here: {why}. On another machine, or for a demo "
                           "on your own: make hub HUB_LIMITS=off")
    notes = []
    if Path("/proc/sys/fs/protected_symlinks").exists() and Path("/proc/sys/fs/protected_symlinks").read_text().strip() == "0":
        notes.append("warning: fs.protected_symlinks is 0 on this machine: a link a student leaves in /tmp could "
                     "redirect a file that a program of another user opens there. As root: sysctl -w "
                     "fs.protected_symlinks=1 fs.protected_hardlinks=1 (docs/hub.md)")
    return notes


def port_free(port: int) -> bool:
    """Nobody listens on 127.0.0.1:`port` (a socket of a hub stopped a moment ago, in TIME_WAIT, is no obstacle)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
