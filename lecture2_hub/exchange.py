"""nbgrader's exchange made safe for a class of untrusted students, and the exchange classes every part of the
course uses on it.

nbgrader's own exchange trusts Unix permissions it loosens itself: its release makes the root 0777 (no sticky
bit: any student can rename the course's folder and put her own in its place), its submissions are 0777 folders,
and its collect follows links. On the course's hub the exchange is laid out and checked by `make hub` (`prepare`,
as root, before anything else runs) and nothing loosens it again:

    <root>/                   root's, 0755: nobody else adds, renames or removes anything in it
    <root>/lecture2/          the course owner's, 0755
        outbound/             the owner's, 0755: released assignments, read by everyone
        inbound/              the owner's, 1733: every student adds her own submission; nobody lists it, and the
                              sticky bit keeps anyone from renaming or removing another's
        feedback/             the owner's, 0711: pages named by a hash of a submission's own secret, found by that
                              student only

A part that is a link, or is owned by anyone but root and the course owner, stops `make hub` (`ExchangeProblem`,
with what to do); a part owned by root (made by an earlier hub) is given to the course owner, modes are set as
above and said. Submissions are then made 0755 (their student's alone to change), and the collector
(lecture2_grader.intake) takes a submission only from the Unix user its folder names, through no link.

The classes (named in the hub's nbgrader configs and on the course's own nbgrader command lines) differ from
nbgrader's in four things: none changes the root's mode, a submission folder is not left writable by others, the
instructor's Collect button goes through the course's collector (`make collect`), not nbgrader's copy, and a
student's Assignments tab lists the assignment of their edition only (`List.shown`).
"""
from __future__ import annotations

import os
import pwd
import stat
import subprocess
import sys
from pathlib import Path

from nbgrader.exchange.default import (ExchangeCollect, ExchangeFetchAssignment, ExchangeFetchFeedback, ExchangeList,
                                       ExchangeReleaseAssignment, ExchangeReleaseFeedback, ExchangeSubmit)

from traitlets import List as TraitList
from traitlets import Unicode

from .settings import COURSE_ID

MODES = {"": 0o755, "outbound": 0o755, "inbound": 0o1733, "feedback": 0o711}  # the course folder and its parts
SUBMISSION_DIR, SUBMISSION_FILE = 0o755, 0o644
# ExchangeFactory's traits, as the hub's configs and the course's nbgrader command lines name them
FACTORY = {
    "fetch_assignment": "FetchAssignment", "fetch_feedback": "FetchFeedback", "list": "List", "submit": "Submit",
    "release_assignment": "ReleaseAssignment", "release_feedback": "ReleaseFeedback", "collect": "Collect",
}


def factory_options(prefix: str = "--ExchangeFactory.") -> list[str]:
    """`--ExchangeFactory.submit=lecture2_hub.exchange.Submit` ... for an nbgrader command line."""
    return [f"{prefix}{trait}={__name__}.{cls}" for trait, cls in FACTORY.items()]


def factory_config() -> str:
    """The same as lines of an nbgrader_config.py."""
    return "".join(f'c.ExchangeFactory.{trait} = "{__name__}.{cls}"\n' for trait, cls in FACTORY.items())


class ExchangeProblem(RuntimeError):
    """The exchange is not as it must be and `make hub` will not fix it itself; the message says what to do."""


# ---- the layout, prepared and checked by make hub (as root)

def _lstat(path: Path) -> os.stat_result | None:
    try:
        return path.lstat()
    except FileNotFoundError:
        return None


def _chown_tree(top: Path, uid: int, gid: int) -> int:
    """Give `top` and everything under it that root owns to uid:gid, links not followed; how many entries."""
    count = 0
    for folder, dirs, files in os.walk(top):
        for entry in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
            st = os.lstat(entry)
            if st.st_uid == 0 and not stat.S_ISLNK(st.st_mode):
                os.lchown(entry, uid, gid)
                count += 1
    return count


def prepare(root: Path, owner: pwd.struct_passwd, course_id: str = COURSE_ID) -> list[str]:
    """Lay the exchange out as the module's doc says (as root), or raise ExchangeProblem; lines for what changed."""
    lines: list[str] = []
    st = _lstat(root)
    if st is None:
        root.mkdir(parents=True, mode=0o755)
        st = root.lstat()
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise ExchangeProblem(f"the exchange {root} is {'a link' if stat.S_ISLNK(st.st_mode) else 'not a folder'}: "
                              "make it a folder of root's (mkdir) and start the hub again")
    if st.st_uid != 0:
        raise ExchangeProblem(f"the exchange {root} belongs to {_name(st.st_uid)}, not root: students could replace "
                              f"what is in it. As root: chown root: {root} && chmod 0755 {root}, then start the hub again")
    for parent in root.parents:
        pst = parent.lstat()
        if pst.st_mode & stat.S_IWOTH and not pst.st_mode & stat.S_ISVTX:
            raise ExchangeProblem(f"{parent} (above the exchange) is writable by everyone: anyone could replace "
                                  f"{root}. Put the exchange elsewhere (HUB_EXCHANGE=/srv/nbgrader/exchange)")
    if stat.S_IMODE(st.st_mode) != 0o755:
        os.chmod(root, 0o755)
        lines.append(f"the exchange {root}: mode {stat.S_IMODE(st.st_mode):o} -> 755 (only root adds to it)")
    for part, mode in MODES.items():
        path = root / course_id / part if part else root / course_id
        pst = _lstat(path)
        if pst is None:
            path.mkdir()
            os.chown(path, owner.pw_uid, owner.pw_gid)
            pst = path.lstat()
        if stat.S_ISLNK(pst.st_mode) or not stat.S_ISDIR(pst.st_mode):
            raise ExchangeProblem(f"{path} is {'a link' if stat.S_ISLNK(pst.st_mode) else 'not a folder'}: someone "
                                  f"put it there. Move it away (as root: mv {path} {path}.suspect) and start the hub again")
        if pst.st_uid not in (0, owner.pw_uid):
            raise ExchangeProblem(f"{path} belongs to {_name(pst.st_uid)}, not to the course's owner "
                                  f"({owner.pw_name}): someone put it there. Move it away (as root: mv {path} "
                                  f"{path}.suspect) and start the hub again")
        if pst.st_uid == 0:
            os.chown(path, owner.pw_uid, owner.pw_gid)
            lines.append(f"{path}: given to the course's owner, {owner.pw_name}")
        if stat.S_IMODE(pst.st_mode) != mode:
            os.chmod(path, mode)
            lines.append(f"{path}: mode {stat.S_IMODE(pst.st_mode):o} -> {mode:o}")
    for part in ("outbound", "feedback"):  # what an earlier hub released as root
        moved = _chown_tree(root / course_id / part, owner.pw_uid, owner.pw_gid)
        if moved:
            lines.append(f"{root / course_id / part}: {moved} entries given to {owner.pw_name}")
    opened = 0
    with os.scandir(root / course_id / "inbound") as entries:
        for entry in entries:
            est = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(est.st_mode) and est.st_mode & 0o022:
                os.chmod(entry.path, stat.S_IMODE(est.st_mode) & ~0o022)
                opened += 1
    if opened:
        lines.append(f"{opened} submission folders in inbound/ no longer writable by others")
    return lines


def _name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


# ---- the exchange classes

class _KeepRoot:
    """nbgrader checks that the root is writable by everyone (students) or makes it so (release): here it must only
    be a folder one may pass through; its mode is make hub's."""

    def ensure_root(self):
        if not os.path.isdir(self.root) or not os.access(self.root, os.X_OK):
            self.fail(f"The exchange {self.root} is missing or closed to you: ask your instructor")


class FetchAssignment(_KeepRoot, ExchangeFetchAssignment):
    pass


class FetchFeedback(_KeepRoot, ExchangeFetchFeedback):
    pass


class List(_KeepRoot, ExchangeList):
    """nbgrader's listing (the Assignments tab: released, fetched, submitted), of the assignments `shown` alone when it
    is set: a student's server lists the assignment of their edition (lec02 or lec02-en, lecture2_hub.configs), an
    instructor's every one."""

    shown = TraitList(Unicode(), default_value=None, allow_none=True,
                      help="The assignment ids this listing shows (None: every one)").tag(config=True)

    def init_dest(self):
        super().init_dest()
        if self.shown is not None:
            self.assignments = [path for path in self.assignments
                                if self.parse_assignment(path)["assignment_id"] in self.shown]


class ReleaseAssignment(_KeepRoot, ExchangeReleaseAssignment):
    pass


class Submit(_KeepRoot, ExchangeSubmit):
    """nbgrader leaves a submission folder 0777 ("so the instructor can delete later"): here it is the student's
    alone to change (0755, files 0644). Nothing is deleted from the exchange: the collector keeps every copy."""

    def copy_files(self):
        super().copy_files()
        dest = os.path.join(self.inbound_path, self.assignment_filename)
        self.set_perms(dest, fileperms=SUBMISSION_FILE, dirperms=SUBMISSION_DIR)


class ReleaseFeedback(_KeepRoot, ExchangeReleaseFeedback):
    """nbgrader copies a page with its own mode, and a course folder private to its owner (make hub) makes pages of
    mode 0600 that the student's Fetch Feedback could not read: every page released is made readable. The feedback
    folder lists nothing and each page is named by a hash of its submission's secret, so only its student finds it."""

    def copy_files(self):
        super().copy_files()
        for page in Path(self.dest_path).glob("*.html"):
            st = page.lstat()
            if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & stat.S_IROTH:
                os.chmod(page, 0o644)


class Collect(ExchangeCollect):
    """The formgrader's Collect button: the course's collector (`make collect` on the exchange's inbound), which
    takes a submission only from the student who owns its folder, follows no link, keeps every earlier copy and takes
    the time the system recorded. nbgrader's own collect copied whatever a folder's name claimed."""

    def start(self):
        inbound = os.path.join(self.root, self.coursedir.course_id, "inbound")
        proc = subprocess.run([sys.executable, "-m", "lecture2_grader.collect", inbound], cwd=self.coursedir.root,
                              capture_output=True, text=True, stdin=subprocess.DEVNULL)
        for line in proc.stdout.splitlines():
            self.log.info(line)
        if proc.returncode != 0:
            self.fail(f"make collect failed: {(proc.stdout + proc.stderr).strip()[-1500:]}")
