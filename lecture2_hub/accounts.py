"""What keeps students of the hub apart on one machine: a Unix user of their own, a private home, and a course
folder of which they read only what their lab needs.

- Each student's server runs as a Unix user named as on the roster, made the first time they start it (useradd,
  as root) with a home of mode 0700 under the hub's homes folder. A Unix user of that name that the hub did not
  make (a system account, a person on this machine) is never taken over: the hub refuses to start.
- The course folder stays where it is, but students' kernels import lecture2 from it (the .venv's editable
  install). So everything in it except STUDENT_READABLE (the environment, the packages, the release) is made
  readable by its owner only, and a default ACL on the folder gives whatever grading writes there later
  (gradebook.db, grades.csv, feedback/ ...) the same: no student reads the solutions, the hidden tests, the
  planted mistakes, the gradebook or another student's work.
"""
from __future__ import annotations

import errno
import grp
import os
import pwd
import stat
import struct
import subprocess
from pathlib import Path

MARKER = "lecture2-hub student"  # the GECOS field of the accounts the hub makes
STUDENT_READABLE = (".venv", "lecture2", "lecture2_grader", "lecture2_hub", "notebooks")
# A POSIX default ACL (the kernel's xattr format, version 2): owner rwx, group and others nothing, so that what is
# made in the folder later is its owner's alone, whatever the umask of the command that makes it.
_ACL_UNDEFINED_ID = 0xFFFFFFFF
_PRIVATE_DEFAULT_ACL = struct.pack("<I", 2) + b"".join(
    struct.pack("<HHI", tag, perm, _ACL_UNDEFINED_ID) for tag, perm in ((0x01, 7), (0x04, 0), (0x20, 0)))


class AccountError(RuntimeError):
    pass


def account(name: str) -> pwd.struct_passwd | None:
    try:
        return pwd.getpwnam(name)
    except KeyError:
        return None


def made_by_hub(entry: pwd.struct_passwd) -> bool:
    return entry.pw_gecos == MARKER


def foreign_accounts(names: list[str]) -> list[str]:
    """The names among `names` that are Unix users this hub did not make (root, daemon, a colleague)."""
    return [n for n in names if (a := account(n)) is not None and not made_by_hub(a)]


def ensure_student(name: str, homes: Path, create_home: bool = True) -> pwd.struct_passwd:
    """The Unix user `name`, made now (home homes/name, mode 0700, its own group) if it does not exist yet. Without
    `create_home` the home folder is left to the caller (a file system of its own, lecture2_hub.disks)."""
    entry = account(name)
    if entry is not None:
        if not made_by_hub(entry):
            raise AccountError(f"the Unix user {name!r} exists and was not made by the hub: its server is not started")
        return entry
    try:
        grp.getgrnam(name)
        group = ["--no-user-group", "--gid", "users"]  # a group of that name exists already: not ours to join
    except KeyError:
        group = ["--user-group"]
    home = homes / name
    proc = subprocess.run(["useradd", "--create-home" if create_home else "--no-create-home", "--home-dir", str(home),
                           "--shell", "/bin/bash", "--comment", MARKER, *group, name], capture_output=True, text=True)
    if proc.returncode != 0:
        raise AccountError(f"useradd {name} failed: {proc.stderr.strip() or proc.stdout.strip()}")
    if create_home:
        os.chmod(home, 0o700)
    return pwd.getpwnam(name)


def owner(path: Path) -> pwd.struct_passwd:
    return pwd.getpwuid(path.stat().st_uid)


def _others_can_read(path: Path) -> bool:
    mode = path.stat().st_mode
    need = stat.S_IROTH | (stat.S_IXOTH if path.is_dir() else 0)
    return mode & need == need


def _open_to_others(path: Path) -> None:
    """chmod -R o+rX: what the students' servers must read (e.g. a .venv made while the default ACL was set)."""
    for folder, dirs, files in os.walk(path):
        for name in [folder, *(os.path.join(folder, d) for d in dirs), *(os.path.join(folder, f) for f in files)]:
            try:
                st = os.lstat(name)
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode):
                continue
            extra = stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(st.st_mode) or st.st_mode & stat.S_IXUSR else 0)
            if st.st_mode & extra != extra:
                os.chmod(name, stat.S_IMODE(st.st_mode) | extra)


def unreachable_parent(path: Path) -> Path | None:
    """The first folder on the way to `path` that other users cannot pass through (no o+x), or None."""
    for parent in reversed(path.parents):
        if not parent.stat().st_mode & stat.S_IXOTH:
            return parent
    return None


def interpreter_problem(venv: Path) -> str | None:
    """Why students' servers could not run the course's Python (the .venv's interpreter, its links followed), or
    None. A pyenv Python under /root (mode 0700) is the usual case."""
    where = (venv / "bin").resolve()
    blocked = unreachable_parent(where / "python")
    if blocked is not None:
        return (f"the course's environment ({where.parent}) is inside {blocked} (mode "
                f"{stat.S_IMODE(blocked.stat().st_mode):o}), which other users cannot pass through, so students' "
                f"servers could not start: chmod o+x {blocked}, or put the course elsewhere")
    python = (venv / "bin" / "python").resolve()
    blocked = unreachable_parent(python)
    if blocked is None:
        return None
    return (f"the course's Python ({python}) is inside {blocked} (mode {stat.S_IMODE(blocked.stat().st_mode):o}), which "
            "other users cannot pass through, so students' servers could not start. Either let them pass (chmod o+x "
            f"{blocked}: no listing, every file in it keeps its own mode), or make .venv from a Python outside a "
            "private home: rm -rf .venv && make setup PYTHON=/usr/bin/python3")


def editable_folders(venv: Path) -> list[Path]:
    """The checkouts an editable install (`pip install -e`) of the environment `venv` imports from (its .pth files)."""
    folders = []
    for pth in sorted((venv / "lib").glob("python*/site-packages/__editable__*.pth")):
        for line in pth.read_text(errors="replace").splitlines():
            line = line.strip()
            if line and not line.startswith(("#", "import ")) and Path(line).is_dir():
                folders.append(Path(line).resolve())
    return folders


def package_problem(venv: Path, course: Path | None = None) -> str | None:
    """Why students' kernels could not import the course's packages, or None. An editable install (`pip install
    -e`) adds its checkout to sys.path through a .pth file, and Python finds a package in a folder only if it may
    list that folder: a checkout other users cannot read (a fresh clone in `mktemp -d` is mode 0700) imports
    nothing in a student's server. The course folder (`course`) is left out: protect_course opens it."""
    for folder in editable_folders(venv):
        if course is not None and folder == course.resolve():
            continue
        blocked = unreachable_parent(folder / "x")
        if blocked is None and not _others_can_read(folder):
            blocked = folder
        if blocked is not None:
            return (f"the course's packages are installed from {folder} (an editable install), and other users cannot "
                    f"{'list' if blocked == folder else 'pass through'} {blocked} (mode "
                    f"{stat.S_IMODE(blocked.stat().st_mode):o}), so students' kernels could not import lecture2: "
                    f"chmod o+{'rx' if blocked == folder else 'x'} {blocked}, or start the hub from that checkout")
    return None


def protect_course(course: Path, keep: tuple[str, ...] = ()) -> list[str]:
    """Make the course folder safe to share with students' Unix users (see the module's doc); lines saying what."""
    lines = []
    for parent in [course, *course.parents]:
        if not parent.stat().st_mode & stat.S_IXOTH:
            raise AccountError(f"{parent} is not searchable by other users, so students' servers cannot reach "
                               f"the course's environment: chmod o+x {parent} (or put the course elsewhere)")
    if not course.stat().st_mode & stat.S_IROTH:
        os.chmod(course, stat.S_IMODE(course.stat().st_mode) | stat.S_IROTH | stat.S_IXOTH)
    closed = []
    for entry in sorted(course.iterdir()):
        if entry.is_symlink() or entry.name in keep:
            continue
        if entry.name in STUDENT_READABLE:
            if not _others_can_read(entry):
                _open_to_others(entry)
            continue
        mode = stat.S_IMODE(entry.stat().st_mode)
        if mode & 0o077:
            os.chmod(entry, mode & 0o700)
            closed.append(entry.name + ("/" if entry.is_dir() else ""))
    try:
        os.setxattr(course, "system.posix_acl_default", _PRIVATE_DEFAULT_ACL)
    except OSError as err:
        if err.errno not in (errno.ENOTSUP, errno.EOPNOTSUPP):
            raise
        lines.append(f"warning: {course}'s file system has no ACLs: files grading writes there later (gradebook.db, "
                     "grades.csv) follow your umask; run the grader with `umask 077`")
    if closed:
        lines.append(f"course folder: made private to you: {', '.join(closed)}")
    lines.append(f"course folder: students read only {', '.join(STUDENT_READABLE)}; what grading writes is yours alone")
    return lines
