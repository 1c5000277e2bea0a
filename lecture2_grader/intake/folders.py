"""Reading a folder of submissions as an archive, trusting nothing in it. nbgrader's exchange inbound
(<student>+lec02+<time>[+<random>]/..., written by the students themselves) or folders of student work the
instructor made.

A folder students write in is read as they could have left it at any moment, and nothing in it is trusted:

- **No link is followed**, and nothing is read twice by name. Every folder is opened relative to its parent's open
  descriptor with O_NOFOLLOW, every file likewise, and the open file must be the regular file listed (its device
  and inode): an entry swapped for a link between the listing and the read is never read through.
- **A submission belongs to the owner of its folder.** Every folder and file below the top that belongs to
  someone other than the collector (and root) names its owner; a file is taken only when all of them are one Unix
  user and that user is the student its path names (`Received.owner`, checked by recognise.attribute). Files of
  the collector's own (a copy the instructor made) are read as before.
- **The time is the system's.** A student's file is dated by its change time (ctime), which the kernel sets and no
  unprivileged program can set back; the time the student's own timestamp.txt claims is kept beside it
  (`Received.claimed_at`) and shown, never used. A copy of the collector's own keeps its timestamp.txt's time.

It reads what it is given and writes only into `spool` (every file, copied through its descriptor).
"""
from __future__ import annotations

import datetime as dt
import os
import pwd
import stat
import tempfile
from pathlib import Path

from ..text import terminal
from .names import EXCHANGE_DIR
from .term import UTC, parse_time

MAX_DEPTH = 16


def _owner_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def _open_listed(name: str, parent: int, listed: os.stat_result, flags: int) -> int | None:
    """`name` opened relative to `parent`, never through a link, and only if it is still the entry listed."""
    try:
        fd = os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    except OSError:
        return None
    st = os.fstat(fd)
    if (st.st_dev, st.st_ino) != (listed.st_dev, listed.st_ino) or stat.S_IFMT(st.st_mode) != stat.S_IFMT(listed.st_mode):
        os.close(fd)
        return None
    return fd


def _small_text(parent: int, name: str, limit: int = 4096) -> tuple[str, int] | None:
    """A small regular file's text and owner (timestamp.txt, submission_secret.txt), read through no link."""
    try:
        listed = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except OSError:
        return None
    if not stat.S_ISREG(listed.st_mode) or listed.st_size > limit:
        return None
    fd = _open_listed(name, parent, listed, os.O_RDONLY | os.O_NONBLOCK)
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as f:
        return f.read(limit).decode("utf-8", "replace"), listed.st_uid


def _read(fd: int, size: int, in_memory: int, spool: Path | None) -> bytes | Path:
    """The open file's bytes: copied into a new file of `spool` a chunk at a time (never held: a class's inbound can
    hold thousands), or, without a spool, read whole when at most `in_memory` bytes."""
    with os.fdopen(fd, "rb") as f:
        if spool is None:
            return f.read(min(size, in_memory) + 1)[:size]
        out_fd, name = tempfile.mkstemp(dir=spool, suffix=".ipynb")
        with os.fdopen(out_fd, "wb") as out:
            left = size
            while left > 0:
                chunk = f.read(min(1 << 20, left))
                if not chunk:
                    break
                out.write(chunk)
                left -= len(chunk)
        return Path(name)


def read_folder(root: Path, spool: Path | None, max_entry: int, in_memory: int, make) -> tuple[list, list[str]]:
    """The files of the folder `root` as Received items (`make`: archives.Received), with notes for what was not
    read."""
    try:
        top = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as err:
        return [], [f"{terminal(root.name, 100)}: cannot be read ({terminal(err.strerror, 80)})"]
    walk = _Walk(root, spool, max_entry, in_memory, make)
    try:
        walk.folder(top, [], set(), None)
    finally:
        os.close(top)
    return walk.found, walk.notes


Stamp = tuple[dt.datetime | None, int, str]  # an exchange folder's timestamp.txt time, its owner, the secret


class _Walk:
    """One folder read by read_folder, from the top down through open descriptors: the items found, the notes."""

    def __init__(self, root: Path, spool: Path | None, max_entry: int, in_memory: int, make):
        self.root, self.spool, self.max_entry, self.in_memory, self.make = root, spool, max_entry, in_memory, make
        self.me = os.geteuid()
        self.found: list = []
        self.notes: list[str] = []

    def folder(self, fd: int, parts: list[str], owners: set[int], stamp: Stamp | None) -> None:
        """Every entry of the open folder `fd` (at `parts` below the top, owned along the way by `owners`)."""
        try:
            names = sorted(os.listdir(fd))
        except OSError as err:
            self.notes.append(f"{terminal(self.root.name + ': ' + '/'.join(parts), 160)}: cannot be listed "
                              f"({terminal(err.strerror, 60)})")
            return
        if parts and EXCHANGE_DIR.match(parts[-1]):
            stamp = _exchange_stamp(fd)
        for name in names:
            if name in ("timestamp.txt", "submission_secret.txt"):
                continue
            try:
                listed = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue
            self.entry(fd, name, listed, parts + [name], owners | ({listed.st_uid} - {self.me, 0}), stamp)

    def entry(self, fd: int, name: str, listed: os.stat_result, where: list[str], owners: set[int],
              stamp: Stamp | None) -> None:
        """One entry as listed: a folder walked into, a regular file read, a link or anything else left out."""
        shown = f"{self.root.name}: {'/'.join(where)}"
        if stat.S_ISLNK(listed.st_mode):
            self.notes.append(f"{terminal(shown, 160)}: a link, not followed (a submission is files, not links)")
            return
        if stat.S_ISDIR(listed.st_mode):
            if len(where) > MAX_DEPTH:
                self.notes.append(f"{terminal(shown, 160)}: deeper than {MAX_DEPTH} folders, not read")
                return
            sub = _open_listed(name, fd, listed, os.O_RDONLY | os.O_DIRECTORY)
            if sub is None:
                self.unread(shown)
                return
            try:
                self.folder(sub, where, owners, stamp)
            finally:
                os.close(sub)
            return
        if not stat.S_ISREG(listed.st_mode) or listed.st_size > self.max_entry:
            return
        fh = _open_listed(name, fd, listed, os.O_RDONLY | os.O_NONBLOCK)
        if fh is None:
            self.unread(shown)
            return
        self.found.append(self.item(shown, fh, listed, where, owners, stamp))

    def unread(self, shown: str) -> None:
        """An entry that was not the one listed when it was opened (swapped for a link), or that cannot be opened."""
        self.notes.append(f"{terminal(shown, 160)}: changed while it was read, or closed to the collector: not read")

    def item(self, shown: str, fh: int, listed: os.stat_result, where: list[str], owners: set[int],
             stamp: Stamp | None):
        """The Received item of a file: its bytes, and whose and when it is (a student's: its owner and the system's
        time, what its timestamp.txt claims beside it; the collector's own copy: its timestamp.txt's time)."""
        item = self.make(shown, _read(fh, listed.st_size, self.in_memory, self.spool),
                         at=dt.datetime.fromtimestamp(listed.st_mtime, UTC), time_source="file time", parts=where)
        if owners:  # a student's: its owner, and the system's time
            item.owner = _owner_name(next(iter(owners))) if len(owners) == 1 else (
                "several users (" + ", ".join(sorted(_owner_name(u) for u in owners)) + ")")
            item.at = dt.datetime.fromtimestamp(listed.st_ctime, UTC)
            item.time_source = "the file's change time on this machine (set by the system)"
            if stamp and stamp[0] is not None:
                item.claimed_at = stamp[0]
        elif stamp and stamp[0] is not None:
            item.at, item.time_source = stamp[0], "nbgrader exchange timestamp.txt"
        if stamp and stamp[2]:
            item.secret = stamp[2]
        return item


def _exchange_stamp(fd: int) -> Stamp:
    """(the time timestamp.txt states, its owner, the submission's secret) of an exchange submission folder."""
    at, owner, secret = None, -1, ""
    got = _small_text(fd, "timestamp.txt", 100)
    if got:
        try:
            at, owner = parse_time(got[0]), got[1]
        except SystemExit:
            pass
    got = _small_text(fd, "submission_secret.txt")
    if got:
        secret = got[0].strip()
    return at, owner, secret
