"""Reading what was handed in: the files of a zip or a folder, each with its submission time. A zip (and a zip
inside it, as a hand-in zip in an LMS download) or a folder (nbgrader's exchange inbound, student folders), each
file with the submission time its archive gives.

Entry names are kept inside the archive (no "..", no absolute paths, Windows separators turned round); an entry is
read no further than its size limit, whatever its header says. A zip's entries are streamed to the caller's spool
folder a chunk at a time, never held in memory (a notebook, and a zip inside the zip, which is then read from
there); an entry that is neither a notebook nor a zip is named but not read; a zip inside a zip gives at most
MAX_NESTED_TOTAL bytes of files in all. So collecting takes memory of the order of one chunk and one notebook's
sources, whatever the archive. Nothing here runs or parses what it reads. It reads the archives and folders it is
given and writes only into `spool`.
"""
from __future__ import annotations

import datetime as dt
import os
import struct
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ..text import terminal
from .folders import read_folder
from .term import UTC

MAX_ENTRY = 4 * 2**30  # bytes of one file taken from an archive (submission.MAX_FILE: a notebook's outputs count)
IN_MEMORY = 16 * 2**20  # without a spool folder, a folder's file up to this is read into memory (folders.py)
MAX_ENTRIES = 50_000
MAX_NESTED = 256 * 2**20  # bytes of a zip inside a zip (a student's hand-in zip in an LMS download)
MAX_NESTED_TOTAL = 2**30  # bytes of the files read from one zip inside a zip, all together (a hand-in zip holds
#                           one notebook of each of ten: a few MB, or a few hundred with saved plots)
CHUNK = 2**20  # bytes read and written at a time


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
    owner: str = ""  # a student's file (folders.py): the Unix user its folders and it belong to ("" the collector's)
    claimed_at: dt.datetime | None = None  # the time a student's own timestamp.txt states: shown, never used


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


def read_source(path: Path, tz: dt.tzinfo, spool: Path) -> tuple[list[Received], list[str]]:
    """The files of a zip (one level of zips inside it too) or of a folder, with their times; and notes for what
    could not be read at all. A zip's files are spooled into `spool` (a folder the caller removes)."""
    name = path.name
    if path.is_dir():
        return read_folder(path, spool, MAX_ENTRY, IN_MEMORY, Received)
    try:
        with zipfile.ZipFile(path) as zf:
            return _read_zip(zf, name, tz, [], spool)
    except (zipfile.BadZipFile, OSError, EOFError) as err:
        return [], [f"{terminal(name, 100)}: not a zip file this collector reads ({terminal(err, 100)})"]


def _read_zip(zf: zipfile.ZipFile, origin: str, tz: dt.tzinfo, outer: list[str], spool: Path,
              nested: bool = False) -> tuple[list[Received], list[str]]:
    found, notes = [], []
    infos = [i for i in zf.infolist() if not i.is_dir()]
    if len(infos) > MAX_ENTRIES:
        return [], [f"{terminal(origin, 100)}: {len(infos):,} entries, more than this collector reads ({MAX_ENTRIES:,})"]
    total = 0  # bytes read from this zip inside a zip
    for info in infos:
        name = _entry_name(info)
        parts = [p for p in PurePosixPath(name).parts if p not in ("/", ".", "..")]
        if not parts or parts[0] == "__MACOSX" or parts[-1].startswith("._"):
            continue
        where = f"{origin}: {'/'.join(parts)}"
        at, source = entry_time(info, tz)
        is_zip = parts[-1].lower().endswith(".zip") and not nested
        if not is_zip and not parts[-1].lower().endswith(".ipynb"):  # named in what is not placed; never read
            found.append(Received(where, b"", at=at, time_source=source, parts=outer + parts))
            continue
        limit = MAX_NESTED if is_zip else MAX_ENTRY
        if nested:
            limit = min(limit, MAX_NESTED_TOTAL - total)
        if info.file_size > limit:
            why = (f"the files of this zip take over {MAX_NESTED_TOTAL // 2**20} MiB" if nested and
                   info.file_size <= MAX_ENTRY else f"limit {limit // 2**20} MiB")
            notes.append(f"{terminal(where, 160)}: {info.file_size / 2**20:.0f} MiB, not read ({why})")
            continue
        try:
            data = _take(zf, info, limit, spool)
        except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError) as err:
            notes.append(f"{terminal(where, 160)}: cannot be read ({terminal(err, 80)})")
            continue
        if data is None:
            notes.append(f"{terminal(where, 160)}: larger than it says, not read")
            continue
        total += data.stat().st_size
        if is_zip:
            try:
                with zipfile.ZipFile(data) as inner:
                    inner_found, inner_notes = _read_zip(inner, where, tz, outer + parts[:-1] + [parts[-1]], spool, True)
            except (zipfile.BadZipFile, OSError, EOFError) as err:
                notes.append(f"{terminal(where, 160)}: not a zip file this collector reads ({terminal(err, 80)})")
                continue
            finally:
                data.unlink(missing_ok=True)  # its files are spooled apart; the zip itself is kept in archive/
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


def _take(zf: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int, spool: Path) -> Path | None:
    """An entry streamed into a new file of `spool`, CHUNK bytes at a time; None when it inflates past `limit`,
    whatever its header says (it is read no further, and nothing of it is kept)."""
    fd, name = tempfile.mkstemp(dir=spool, suffix=".part")
    size = 0
    with zf.open(info) as f, os.fdopen(fd, "wb") as out:
        for chunk in iter(lambda: f.read(CHUNK), b""):
            size += len(chunk)
            if size > limit:
                break
            out.write(chunk)
    if size > limit:
        os.unlink(name)
        return None
    return Path(name)
