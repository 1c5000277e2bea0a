"""Stage 0: submissions into submitted/<student>/lec02/, notebook by notebook, without ever losing one.

    submitted/<student>/lec02/<notebook>.ipynb              the newest submission of each notebook: what `make grade` grades
    submitted/<student>/lec02/timestamp.txt                 the newest of their submission times (nbgrader's file: the
                                                            formgrader compares it with the gradebook's)
    submitted/<student>/history/lec02/<stem>/<time>_<sha>.ipynb   every copy of a notebook ever received, the newest too
    submitted/<student>/history/lec02/intake.json           one record per copy: notebook, submission time and where
                                                            it came from, late or not, how the notebook was recognised

The rule, per student and notebook: a notebook an archive does not hold stays as it was; a copy already
received (same bytes) changes nothing; a newer copy replaces the one in submitted/ (the older stays in history);
an older copy goes to history only. "Newer" is by submission time as the LMS gives it (see `entry_time`), then
by the order of collecting. Nothing here deletes or overwrites a file of history, and submitted/ files are
replaced only by a rename after their predecessor is in history.

A notebook is recognised by its file name (the release name, or one it starts with, after an LMS's or a
browser's renamings: "-1", " (1)", "-Copy1"), else by its cells (the grade_ids of exactly one release notebook),
else by the nearest release name when that one is clearly nearest. A misnamed file is reported with its match;
it is placed only when the match is unambiguous. No student code runs: files are read as bytes and JSON.

The term's dates live in nbgrader_config.py (the course config):

    c.Lecture2Grader.due = "2026-03-15T23:59:00+08:00"      # the due date (ISO 8601 with a UTC offset); none: no late flags
    c.Lecture2Grader.lms_timezone = "Asia/Shanghai"         # the zone of the LMS's zip times (default: the due date's offset)
"""
from __future__ import annotations

import datetime as dt
import difflib
import hashlib
import json
import os
import re
import shutil
import struct
import tempfile
import unicodedata
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from . import ASSIGNMENT
from .files import file_hash
from .text import terminal

UTC = dt.timezone.utc
MAX_ENTRY = 4 * 2**30  # bytes of one file taken from an archive (submission.MAX_FILE: a notebook's outputs count)
IN_MEMORY = 16 * 2**20  # a larger file is spooled to disk while collecting, never held whole in memory
MAX_ENTRIES = 50_000
MAX_NESTED = 256 * 2**20  # bytes of a zip inside a zip (a student's hand-in zip in an LMS download)
STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@+-]{0,99}")
NOT_STUDENTS = {ASSIGNMENT, "notebooks", "submitted", "lecture2-student", "__MACOSX"}

CANVAS = re.compile(r"^(?P<name>[a-z0-9]+)(?P<late>_LATE)?_(?P<id>\d+)_\d+_(?P<file>.+)$")
MOODLE_DIR = re.compile(r"^(?P<name>.+?)_(?P<id>\d+)_assignsubmission_(?:file|onlinetext)_?$")
EXCHANGE_DIR = re.compile(r"^(?P<student>[^+]+)\+(?P<assignment>[^+]+)\+(?P<time>[^+]+)(?:\+[^+]*)?$")
PLAIN = re.compile(r"^(?P<student>[A-Za-z0-9][A-Za-z0-9_.@+-]*?)__(?P<file>.+)$")
RENAMED = re.compile(r"(-\d+|-Copy\d*| ?\(\d+\))$")


# ---- the term: due date and the LMS's time zone, from nbgrader_config.py


@dataclass
class Term:
    due: dt.datetime | None = None  # aware
    lms_timezone: dt.tzinfo = field(default_factory=lambda: dt.datetime.now().astimezone().tzinfo)
    settings: dict = field(default_factory=dict)  # the whole c.Lecture2Grader section (export reads its names there)

    @classmethod
    def load(cls, course: Path) -> Term:
        """The c.Lecture2Grader section of the course's nbgrader_config.py; SystemExit with what to write when a value
        is not understood."""
        settings = read_settings(course)
        term = cls(settings=settings)
        if settings.get("due"):
            term.due = parse_time(str(settings["due"]), "c.Lecture2Grader.due")
            term.lms_timezone = term.due.tzinfo
        if settings.get("lms_timezone"):
            from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

            try:
                term.lms_timezone = ZoneInfo(str(settings["lms_timezone"]))
            except (ZoneInfoNotFoundError, ValueError):
                raise SystemExit(f"error: c.Lecture2Grader.lms_timezone = {terminal(settings['lms_timezone'], 60)!r} in "
                                 "nbgrader_config.py is not a time zone name (e.g. 'Asia/Shanghai', 'UTC')") from None
        return term

    def lateness(self, at: dt.datetime | None) -> float | None:
        """Seconds past the due date (0.0 when on time), or None without a due date or a time."""
        if self.due is None or at is None:
            return None
        return max(0.0, (at - self.due).total_seconds())


def read_settings(course: Path) -> dict:
    path = course / "nbgrader_config.py"
    if not path.is_file():
        return {}
    from traitlets.config.loader import ConfigFileNotFound, PyFileConfigLoader

    try:
        config = PyFileConfigLoader(path.name, path=str(course)).load_config()
    except ConfigFileNotFound:
        return {}
    except Exception as err:  # noqa: BLE001  a config that does not run: say so, not a traceback
        raise SystemExit(f"error: {path} could not be read ({type(err).__name__}: {err})") from None
    section = config.get("Lecture2Grader") if "Lecture2Grader" in config else None
    return dict(section) if section else {}


def parse_time(text: str, what: str = "a time") -> dt.datetime:
    """An ISO 8601 time with a UTC offset (a trailing Z or UTC is fine); SystemExit with an example otherwise."""
    s = text.strip().replace(" UTC", "+00:00").replace("Z", "+00:00")
    try:
        value = dt.datetime.fromisoformat(s)
    except ValueError:
        raise SystemExit(f"error: {what} = {terminal(text, 60)!r} is not a time: write it as "
                         "'2026-03-15T23:59:00+08:00'") from None
    if value.tzinfo is None:
        raise SystemExit(f"error: {what} = {terminal(text, 60)!r} has no UTC offset: write e.g. "
                         "'2026-03-15T23:59:00+08:00' (Beijing) or '...Z' (UTC)")
    return value


def stamp(at: dt.datetime) -> str:
    """A time as nbgrader writes timestamp.txt (UTC), which its parse_utc reads back exactly."""
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f UTC")


def iso(at: dt.datetime | None) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if at else ""


# ---- what an archive holds


@dataclass
class Received:
    """One file found in an archive or folder, attributed (or not) to a student and a notebook."""

    origin: str  # archive name and entry path, as handed in (escape before showing)
    data: bytes | Path  # the file's bytes, or where a large one was spooled (see IN_MEMORY)
    student: str | None = None
    notebook: str | None = None  # release file name
    file_name: str = ""  # the name the notebook came under (without an LMS's prefix)
    at: dt.datetime | None = None  # submission time (aware)
    time_source: str = ""
    lms_late: bool = False
    matched_by: str = ""  # "name", "cells", "nearest name"
    why_not: str = ""  # why it was not placed
    order: int = 0  # LMS duplicate suffix (-1, -2): later uploads of the same name
    parts: list[str] = field(default_factory=list)  # its path in the archive, zips inside it included
    lms: str = ""  # "canvas", "moodle", "exchange" or "" (a plain name)
    lms_id: str = ""  # the LMS's number for the student (Canvas user id, Moodle participant id)
    secret: str = ""  # nbgrader exchange's submission_secret.txt (what `nbgrader release_feedback` needs)


def slug(text: str) -> str:
    """A student id the grader accepts: ASCII letters, digits and -, from a name like "José Núñez"."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^A-Za-z0-9]+", "-", ascii_text).strip("-").lower() or "student"


def _entry_name(info: zipfile.ZipInfo) -> str:
    """The entry's name: UTF-8 when flagged; else the bytes as written (cp437 by the zip spec), which Windows'
    own zips of Chinese names write in GBK."""
    name = info.filename
    if not info.flag_bits & 0x800:
        raw = name.encode("cp437", "replace")
        for codec in ("utf-8", "gbk"):
            try:
                name = raw.decode(codec)
                break
            except UnicodeDecodeError:
                continue
    return name.replace("\\", "/")


def entry_time(info: zipfile.ZipInfo, tz: dt.tzinfo) -> tuple[dt.datetime | None, str]:
    """A zip entry's modification time, which LMS downloads set to the submission time: the extended-timestamp
    or NTFS extra field (UTC) where present, else the DOS time read in the LMS's time zone."""
    extra, i = info.extra, 0
    while i + 4 <= len(extra):
        tag, size = struct.unpack("<HH", extra[i:i + 4])
        body = extra[i + 4:i + 4 + size]
        if tag == 0x5455 and len(body) >= 5 and body[0] & 1:
            return dt.datetime.fromtimestamp(struct.unpack("<i", body[1:5])[0], UTC), "zip entry time (UTC)"
        if tag == 0x000A and len(body) >= 32 and struct.unpack("<HH", body[4:8]) == (1, 24):
            ticks = struct.unpack("<Q", body[8:16])[0]
            return dt.datetime(1601, 1, 1, tzinfo=UTC) + dt.timedelta(microseconds=ticks // 10), "zip entry time (UTC)"
        i += 4 + size
    if info.date_time[:3] <= (1980, 1, 1):
        return None, ""
    try:
        return dt.datetime(*info.date_time, tzinfo=tz), f"zip entry time ({tz})"
    except ValueError:
        return None, ""


def read_source(path: Path, tz: dt.tzinfo, spool: Path | None = None) -> tuple[list[Received], list[str]]:
    """The files of a zip (one level of zips inside it too) or of a folder, with their times; and notes for what
    could not be read at all."""
    name = path.name
    if path.is_dir():
        return _read_folder(path, tz), []
    try:
        with zipfile.ZipFile(path) as zf:
            return _read_zip(zf, name, tz, [], spool=spool)
    except (zipfile.BadZipFile, OSError, EOFError) as err:
        return [], [f"{terminal(name, 100)}: not a zip file this collector reads ({terminal(err, 100)})"]


def _read_zip(zf: zipfile.ZipFile, origin: str, tz: dt.tzinfo, outer: list[str],
              nested: bool = False, spool: Path | None = None) -> tuple[list[Received], list[str]]:
    found, notes = [], []
    infos = [i for i in zf.infolist() if not i.is_dir()]
    if len(infos) > MAX_ENTRIES:
        return [], [f"{terminal(origin, 100)}: {len(infos):,} entries, more than this collector reads ({MAX_ENTRIES:,})"]
    for info in infos:
        name = _entry_name(info)
        parts = [p for p in PurePosixPath(name).parts if p not in ("/", ".", "..")]
        if not parts or parts[0] == "__MACOSX" or parts[-1].startswith("._"):
            continue
        where = f"{origin}: {'/'.join(parts)}"
        is_zip = parts[-1].lower().endswith(".zip") and not nested
        limit = MAX_NESTED if is_zip else MAX_ENTRY if spool is not None else IN_MEMORY
        if info.file_size > limit:
            notes.append(f"{terminal(where, 160)}: {info.file_size / 2**20:.0f} MiB, not read (limit {limit // 2**20} MiB)")
            continue
        try:
            data = _take(zf, info, limit, None if is_zip else spool)
        except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError) as err:
            notes.append(f"{terminal(where, 160)}: cannot be read ({terminal(err, 80)})")
            continue
        if data is None:
            notes.append(f"{terminal(where, 160)}: larger than it says, not read")
            continue
        at, source = entry_time(info, tz)
        if parts[-1].lower().endswith(".zip") and not nested:
            import io

            try:
                with zipfile.ZipFile(io.BytesIO(data)) as inner:
                    inner_found, inner_notes = _read_zip(inner, where, tz, outer + parts[:-1] + [parts[-1]], True)
            except (zipfile.BadZipFile, OSError, EOFError) as err:
                notes.append(f"{terminal(where, 160)}: not a zip file this collector reads ({terminal(err, 80)})")
                continue
            for item in inner_found:  # the LMS's time of the zip is the submission time of what it holds
                if at is not None and item.at is not None and item.time_source.startswith("zip"):
                    item.at, item.time_source = at, source
                elif at is not None and item.at is None:
                    item.at, item.time_source = at, source
            found += inner_found
            notes += inner_notes
            continue
        found.append(Received(where, data, at=at, time_source=source, parts=outer + parts))
    return found, notes


def _take(zf: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int, spool: Path | None) -> bytes | Path | None:
    """An entry's bytes, or (past IN_MEMORY, with a `spool` folder) the file it was spooled to; None when it inflates
    past `limit`, whatever its header says (it is read no further)."""
    with zf.open(info) as f:
        data = f.read(min(limit, IN_MEMORY) + 1)
        if len(data) <= IN_MEMORY or spool is None:
            return data if len(data) <= limit else None
        fd, name = tempfile.mkstemp(dir=spool, suffix=".ipynb")
        size = len(data)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            for chunk in iter(lambda: f.read(1 << 20), b""):
                size += len(chunk)
                if size > limit:
                    break
                out.write(chunk)
    return Path(name) if size <= limit else None


def _read_folder(root: Path, tz: dt.tzinfo) -> list[Received]:
    """A folder as an archive: nbgrader's exchange inbound (<student>+lec02+<time>/...) or student folders."""
    found = []
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
        parts = list(path.relative_to(root).parts)
        size = path.stat().st_size
        if path.name in ("timestamp.txt", "submission_secret.txt") or size > MAX_ENTRY:
            continue
        at = dt.datetime.fromtimestamp(path.stat().st_mtime, UTC)
        item = Received(f"{root.name}: {'/'.join(parts)}", path.read_bytes() if size <= IN_MEMORY else path, at=at,
                        time_source="file time", parts=parts)
        for i, part in enumerate(parts[:-1]):
            m = EXCHANGE_DIR.match(part)
            stamp_file = root.joinpath(*parts[:i + 1], "timestamp.txt")
            if m and stamp_file.is_file():
                try:
                    item.at = parse_time(stamp_file.read_text("utf-8", "replace")[:100])
                    item.time_source = "nbgrader exchange timestamp.txt"
                except SystemExit:
                    pass
                secret = stamp_file.with_name("submission_secret.txt")
                if secret.is_file() and secret.stat().st_size < 4096:
                    item.secret = secret.read_text("ascii", "replace").strip()
        found.append(item)
    return found


# ---- who and which notebook


def release_notebooks(course: Path) -> dict[str, set[str]]:
    """Release file name -> the grade_ids of its cells (how a misnamed notebook is recognised)."""
    from .submission import Unreadable, cells_of, notebook_text

    found = {}
    for path in sorted((course / "notebooks" / ASSIGNMENT).glob("*.ipynb")):
        try:
            found[path.name] = {c["grade_id"] for c in cells_of(notebook_text(path)) if c["grade_id"]}
        except Unreadable:
            found[path.name] = set()
    return found


def attribute(item: Received, released: dict[str, set[str]]) -> Received:
    """Fill in the student, the notebook and how it was recognised (or why_not)."""
    parts = item.parts
    if not parts:
        item.why_not = "no file name"
        return item
    file_name, student = parts[-1], None
    for part in parts[:-1]:
        moodle, exchange = MOODLE_DIR.match(part), EXCHANGE_DIR.match(part)
        if moodle:
            student = f"{slug(moodle['name'])}-{moodle['id']}"
            item.lms, item.lms_id = "moodle", moodle["id"]
        elif exchange and exchange["assignment"] == ASSIGNMENT:
            student = exchange["student"]
            item.lms = "exchange"
    for part in parts:
        canvas = CANVAS.match(part)
        if canvas:
            student = f"{canvas['name']}-{canvas['id']}"
            item.lms, item.lms_id = "canvas", canvas["id"]
            item.lms_late = item.lms_late or bool(canvas["late"])
            if part == parts[-1]:
                file_name = canvas["file"]
            break
    if student is None:
        plain = PLAIN.match(file_name)
        if plain:
            student, file_name = plain["student"], plain["file"]
        else:
            for part in reversed(parts[:-1]):  # the nearest folder that names a student (not lec02/, not a zip)
                if part in NOT_STUDENTS or part.lower().endswith(".zip"):
                    continue
                if STUDENT_ID.fullmatch(part):
                    student = part
                break
    item.file_name = file_name
    if not file_name.lower().endswith(".ipynb"):
        item.why_not = "not a notebook (.ipynb)"
        item.student = student
        return item
    if student is None or not STUDENT_ID.fullmatch(student):
        item.why_not = ("no student recognised in its path (Canvas or Moodle names, <student>/<notebook>.ipynb, "
                        "<student>__<notebook>.ipynb, or a hand-in zip made with STUDENT=...)")
        return item
    item.student = student
    item.notebook, item.matched_by, item.why_not, item.order = match_notebook(file_name, item.data, released)
    return item


def match_notebook(file_name: str, data: bytes | Path, released: dict[str, set[str]]) -> tuple[str | None, str, str, int]:
    """(release name or None, how it was recognised, why not, duplicate order) of a handed-in notebook file."""
    stem = file_name[:-len(".ipynb")] if file_name.lower().endswith(".ipynb") else file_name
    order = 0
    suffix = RENAMED.search(stem)
    if suffix:
        digits = re.sub(r"\D", "", suffix.group(1))
        order = int(digits) if digits else 1
        bare = stem[:suffix.start()]
    else:
        bare = stem
    stems = {n[:-len(".ipynb")]: n for n in released}
    by_cells = _by_cells(data, released)
    by_name = next((stems[c] for c in (stem, bare) if c in stems), None)
    starts = [n for s, n in stems.items() if bare.startswith(s)]
    by_name = by_name or (starts[0] if len(starts) == 1 else None)
    if by_name:
        if by_cells and by_cells != by_name:
            return None, "", (f"named {by_name} but its cells are those of {by_cells}: not placed, copy it by hand "
                              "where it belongs"), order
        return by_name, "name", "", (0 if stem in stems else order)
    ratios = sorted(((difflib.SequenceMatcher(None, bare.lower(), s.lower()).ratio(), n) for s, n in stems.items()),
                    reverse=True)
    nearest = ratios[0][1] if ratios and ratios[0][0] >= 0.75 and (len(ratios) < 2 or ratios[1][0] < ratios[0][0] - 0.1) else None
    if by_cells and nearest and by_cells != nearest:
        return None, "", (f"its cells are those of {by_cells} but its name is nearest {nearest}: not placed, "
                          "copy it by hand where it belongs"), order
    if by_cells:
        return by_cells, "cells" + (" and nearest name" if nearest == by_cells else ""), "", order
    if nearest:
        return nearest, "nearest name", "", order
    guess = f" (nearest: {ratios[0][1]})" if ratios and ratios[0][0] >= 0.5 else ""
    return None, "", f"no notebook of the assignment recognised by its name or its cells{guess}", order


def _by_cells(data: bytes | Path, released: dict[str, set[str]]) -> str | None:
    from .submission import Unreadable, cells_of, decode, notebook_text, strip_outputs

    try:
        text = notebook_text(data) if isinstance(data, Path) else decode(strip_outputs(data))
        ids = {c["grade_id"] for c in cells_of(text) if c["grade_id"]}
    except (Unreadable, OSError):
        return None
    hits = []
    for name, known in released.items():  # only the ids no other notebook has count ("md-01" is in every one)
        others = set().union(*(v for k, v in released.items() if k != name))
        if ids & (known - others):
            hits.append(name)
    return hits[0] if len(hits) == 1 else None


# ---- a student's history, and the merge


def history_dir(course: Path, student: str) -> Path:
    return course / "submitted" / student / "history" / ASSIGNMENT


def records(course: Path, student: str) -> list[dict]:
    """Every copy received for `student` (intake.json), oldest first; [] when there is none or it is unreadable."""
    try:
        data = json.loads((history_dir(course, student) / "intake.json").read_text("utf-8"))
    except (OSError, ValueError):
        return []
    return [r for r in data.get("received", []) if isinstance(r, dict)] if isinstance(data, dict) else []


def _write_atomic(path: Path, data: bytes | Path) -> None:
    """`data` (bytes, or the file at that path, copied in pieces) at `path`, whole or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            if isinstance(data, Path):
                with data.open("rb") as source:
                    shutil.copyfileobj(source, f, 1 << 20)
            else:
                f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _sha_of(data: bytes | Path) -> str:
    return hashlib.sha256(data).hexdigest() if isinstance(data, bytes) else file_hash(data).hex()


def _keep(course: Path, student: str, notebook: str, data: bytes | Path, at: dt.datetime | None) -> str:
    """Copy `data` into the student's history (never over another file); its path relative to submitted/<student>/."""
    digest = _sha_of(data)
    when = (at or dt.datetime.now(UTC)).astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    path = history_dir(course, student) / notebook[:-len(".ipynb")] / f"{when}_{digest[:12]}.ipynb"
    if not path.exists():
        _write_atomic(path, data)
    return str(path.relative_to(course / "submitted" / student))


def _newest(recs: list[dict], notebook: str) -> dict | None:
    mine = [r for r in recs if r.get("notebook") == notebook and r.get("current")]
    return mine[-1] if mine else None


def _time_of(record: dict | None) -> dt.datetime | None:
    try:
        return dt.datetime.fromisoformat(record["submitted_at"].replace("Z", "+00:00")) if record else None
    except (KeyError, ValueError, AttributeError):
        return None


def merge(course: Path, student: str, items: list[Received], term: Term, collected: dt.datetime) -> list[str]:
    """Place `items` (all of one student, recognised) notebook by notebook; returns one phrase per notebook."""
    recs = records(course, student)
    folder = course / "submitted" / student / ASSIGNMENT
    phrases = []
    by_notebook: dict[str, list[Received]] = {}
    for item in items:
        by_notebook.setdefault(item.notebook, []).append(item)
    for notebook, copies in sorted(by_notebook.items()):
        current_path = folder / notebook
        current = _newest(recs, notebook)
        if current_path.is_file() and (current is None or current.get("sha256") != _sha(current_path)):
            # a file placed before intake kept records (or by hand): into history first, as it is
            data = current_path
            at = _stamp_time(folder) or dt.datetime.fromtimestamp(current_path.stat().st_mtime, UTC)
            for r in recs:
                if r.get("notebook") == notebook:
                    r["current"] = False
            current = {"notebook": notebook, "sha256": _sha_of(data), "submitted_at": iso(at),
                       "time_source": "already in submitted/ (placed before this collector kept records)",
                       "origin": "submitted/", "current": True,
                       "kept": _keep(course, student, notebook, data, at), "collected_at": iso(collected)}
            recs.append(current)
        said = []
        for item in sorted(copies, key=lambda i: (i.at or collected, i.order)):
            digest = _sha_of(item.data)
            if any(r.get("notebook") == notebook and r.get("sha256") == digest for r in recs):
                said.append("unchanged" if current and current.get("sha256") == digest else "already received")
                continue
            at = item.at or collected
            late_s = term.lateness(at)
            record = {"notebook": notebook, "sha256": digest, "submitted_at": iso(at),
                      "time_source": item.time_source or "time of collecting (the LMS gave none)",
                      "origin": item.origin, "file_name": item.file_name, "matched_by": item.matched_by,
                      "lms": item.lms, "lms_id": item.lms_id,
                      "lms_late": item.lms_late, "late_seconds": late_s, "collected_at": iso(collected),
                      "kept": _keep(course, student, notebook, item.data, at), "current": False}
            attempt = 1 + sum(r.get("notebook") == notebook for r in recs)
            record["attempt"] = attempt
            newer = current is None or _time_of(current) is None or at >= _time_of(current)
            late = (f", late {late_s / 3600:.1f} h" if late_s else "") + (", marked late by the LMS" if item.lms_late else "")
            how = "" if item.matched_by == "name" else f" [file {item.file_name!r}: matched by {item.matched_by}]"
            if newer:
                _write_atomic(current_path, item.data)
                for r in recs:
                    if r.get("notebook") == notebook:
                        r["current"] = False
                record["current"] = True
                if item.secret:  # the newest exchange submission's: `nbgrader release_feedback` files feedback under it
                    _write_atomic(history_dir(course, student) / "submission_secret.txt", item.secret.encode("ascii", "replace"))
                said.append(("new" if current is None else f"submission {attempt}, replaces the one of "
                             f"{current.get('submitted_at') or '?'} (kept in history)") + late + how)
                current = record
            else:
                said.append(f"an older copy ({iso(at)}) than the one in submitted/ ({current.get('submitted_at')}): "
                            "kept in history only" + how)
            recs.append(record)
        phrases.append(f"{notebook[:-len('.ipynb')]} ({'; '.join(said)})")
    _save(course, student, recs)
    _write_timestamp(folder, recs)
    return phrases


def _sha(path: Path) -> str:
    return file_hash(path).hex()


def _stamp_time(folder: Path) -> dt.datetime | None:
    try:
        return parse_time((folder / "timestamp.txt").read_text("utf-8")[:100])
    except (OSError, SystemExit):
        return None


def _save(course: Path, student: str, recs: list[dict]) -> None:
    data = json.dumps({"student": student, "received": recs}, ensure_ascii=False, indent=1).encode("utf-8")
    _write_atomic(history_dir(course, student) / "intake.json", data)


def _write_timestamp(folder: Path, recs: list[dict]) -> None:
    times = [t for t in (_time_of(r) for r in recs if r.get("current")) if t]
    if times:
        _write_atomic(folder / "timestamp.txt", (stamp(max(times)) + "\n").encode())


def collect(course: Path, sources: list[Path], term: Term | None = None) -> tuple[dict[str, list[str]], list[str]]:
    """Collect `sources` (zips or folders) into submitted/; returns (student -> phrase per notebook, lines about
    files not placed). The archives are kept in downloaded/lec02/archive/ (never over an earlier one)."""
    course = course.resolve()
    term = term or Term.load(course)
    released = release_notebooks(course)
    if not released:
        raise SystemExit(f"error: no release notebooks in {course / 'notebooks' / ASSIGNMENT}: run `make release`")
    collected = dt.datetime.now(UTC)
    found, unplaced = [], []
    spool_root = course / "downloaded"
    spool_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".spool-", dir=spool_root) as spool:
        for source in sources:
            _archive(course, source)
            items, notes = read_source(source, term.lms_timezone, Path(spool))
            unplaced += notes
            found += [attribute(i, released) for i in items]
        return _place(course, found, unplaced, term, collected)


def _place(course: Path, found: list[Received], unplaced: list[str], term: Term,
           collected: dt.datetime) -> tuple[dict[str, list[str]], list[str]]:
    by_student: dict[str, list[Received]] = {}
    for item in found:
        if item.notebook and item.student:
            by_student.setdefault(item.student, []).append(item)
        elif item.why_not:
            who = f" (student {item.student})" if item.student else ""
            unplaced.append(f"{terminal(item.origin, 200)}{terminal(who, 120)}: {terminal(item.why_not, 300)}")
    placed = {student: merge(course, student, items, term, collected) for student, items in sorted(by_student.items())}
    return placed, unplaced


def _archive(course: Path, source: Path) -> None:
    """Keep a copy of a collected zip in downloaded/lec02/archive/, beside (never over) earlier ones."""
    if not source.is_file():
        return
    folder = course / "downloaded" / ASSIGNMENT / "archive"
    folder.mkdir(parents=True, exist_ok=True)
    digest = file_hash(source).hex()[:12]
    target = folder / source.name
    if target.exists() and file_hash(target).hex()[:12] == digest:
        return
    if target.exists():
        target = folder / f"{source.stem}.{digest}{source.suffix}"
    if not target.exists():
        _write_atomic(target, source)


# ---- what the gradebook, grades.csv and the class report read


def lateness(course: Path, student: str, term: Term) -> dict[str, dict]:
    """Notebook stem -> the copy in submitted/: {submitted_at (ISO, UTC), late (bool), late_seconds (None without a
    due date), lms_late, attempts}, its lateness computed against the term's due date as it is now."""
    recs = records(course, student)
    out = {}
    for r in recs:
        if r.get("current") and isinstance(r.get("notebook"), str):
            seconds = term.lateness(_time_of(r))
            lms_late = bool(r.get("lms_late"))
            out[r["notebook"][:-len(".ipynb")]] = {
                "submitted_at": r.get("submitted_at", ""), "late_seconds": seconds, "lms_late": lms_late,
                "late": bool(seconds) or lms_late, "attempts": sum(x.get("notebook") == r["notebook"] for x in recs)}
    return out


def lms_identity(course: Path, student: str) -> tuple[str, str]:
    """(LMS, the LMS's id) of the student's newest copy from an LMS ("canvas", "moodle"), or ("", "")."""
    for r in reversed(records(course, student)):
        if r.get("lms") in ("canvas", "moodle") and str(r.get("lms_id") or "").isdigit():
            return r["lms"], r["lms_id"]
    return "", ""


def submitted_at(course: Path, student: str) -> dt.datetime | None:
    """The time in submitted/<student>/lec02/timestamp.txt (what nbgrader's formgrader compares), or None."""
    return _stamp_time(course / "submitted" / student / ASSIGNMENT)


