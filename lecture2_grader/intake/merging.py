"""The merge: a student's recognised copies placed notebook by notebook, without ever losing one.

The rule, per student and notebook: a notebook an archive does not hold stays as it was; a copy already
received (same bytes) changes nothing; a newer copy replaces the one in submitted/ (the older stays in history);
an older copy goes to history only. "Newer" is by submission time as the LMS gives it (see archives.entry_time),
then by the order of collecting. Nothing here deletes or overwrites a file of history, and submitted/ files are
replaced only by a rename after their predecessor is in history.

It writes submitted/<student>/ only (the layout is in history.py), every file whole (files.write_atomic).
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path

from .. import ASSIGNMENT
from ..files import file_hash, write_atomic
from .archives import Received
from .history import history_dir, record_time, records, stamp_time
from .term import UTC, Term, iso, stamp

CLAIM_SHOWN_S = 120  # a student's timestamp.txt that differs from the system's time by more is said on the line


def _sha_of(data: bytes | Path) -> str:
    """SHA-256 (hex) of a copy: its bytes, or the file it was spooled to (or the one in submitted/)."""
    return hashlib.sha256(data).hexdigest() if isinstance(data, bytes) else file_hash(data).hex()


def _keep(course: Path, student: str, notebook: str, data: bytes | Path, at: dt.datetime | None) -> str:
    """Copy `data` into the student's history (never over another file); its path relative to submitted/<student>/."""
    digest = _sha_of(data)
    when = (at or dt.datetime.now(UTC)).astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    path = history_dir(course, student) / notebook[:-len(".ipynb")] / f"{when}_{digest[:12]}.ipynb"
    if not path.exists():
        write_atomic(path, data)
    return str(path.relative_to(course / "submitted" / student))


def _newest(recs: list[dict], notebook: str) -> dict | None:
    mine = [r for r in recs if r.get("notebook") == notebook and r.get("current")]
    return mine[-1] if mine else None


def merge(course: Path, student: str, items: list[Received], term: Term, collected: dt.datetime) -> list[str]:
    """Place `items` (all of one student, recognised) notebook by notebook; returns one phrase per notebook."""
    recs = records(course, student)
    folder = course / "submitted" / student / ASSIGNMENT
    by_notebook: dict[str, list[Received]] = {}
    for item in items:
        by_notebook.setdefault(item.notebook, []).append(item)
    phrases = []
    for notebook, copies in sorted(by_notebook.items()):
        current = _adopt_placed(course, student, folder / notebook, recs, collected)
        said = []
        for item in sorted(copies, key=lambda i: (i.at or collected, i.order)):
            digest = _sha_of(item.data)
            if any(r.get("notebook") == notebook and r.get("sha256") == digest for r in recs):
                said.append("unchanged" if current and current.get("sha256") == digest else "already received")
                continue
            phrase, current = _place(course, student, folder / notebook, item, digest, recs, current, term, collected)
            said.append(phrase)
        phrases.append(f"{notebook[:-len('.ipynb')]} ({'; '.join(said)})")
    _save(course, student, recs)
    _write_timestamp(folder, recs)
    return phrases


def _adopt_placed(course: Path, student: str, current_path: Path, recs: list[dict],
                  collected: dt.datetime) -> dict | None:
    """The record of the copy in submitted/ now: the newest current one, or (for a file placed before intake kept
    records, or by hand) a new record, the file kept in history first, as it is."""
    notebook = current_path.name
    current = _newest(recs, notebook)
    if not current_path.is_file() or (current is not None and current.get("sha256") == _sha_of(current_path)):
        return current
    at = stamp_time(current_path.parent) or dt.datetime.fromtimestamp(current_path.stat().st_mtime, UTC)
    for r in recs:
        if r.get("notebook") == notebook:
            r["current"] = False
    current = {"notebook": notebook, "sha256": _sha_of(current_path), "submitted_at": iso(at),
               "time_source": "already in submitted/ (placed before this collector kept records)",
               "origin": "submitted/", "current": True,
               "kept": _keep(course, student, notebook, current_path, at), "collected_at": iso(collected)}
    recs.append(current)
    return current


def _place(course: Path, student: str, current_path: Path, item: Received, digest: str, recs: list[dict],
           current: dict | None, term: Term, collected: dt.datetime) -> tuple[str, dict | None]:
    """A copy not received before: kept in history, and in submitted/ when it is newer than the current one (which
    stays in history). Its phrase, and the record of the copy in submitted/ after it."""
    notebook = current_path.name
    at = item.at or collected
    late_s = term.lateness(at)
    record = {"notebook": notebook, "sha256": digest, "submitted_at": iso(at),
              "time_source": item.time_source or "time of collecting (the LMS gave none)",
              "origin": item.origin, "file_name": item.file_name, "matched_by": item.matched_by,
              "lms": item.lms, "lms_id": item.lms_id,
              "lms_late": item.lms_late, "late_seconds": late_s, "collected_at": iso(collected),
              "kept": _keep(course, student, notebook, item.data, at), "current": False}
    claimed = ""
    if item.claimed_at is not None:  # what the student's own timestamp.txt says: shown, never used
        record["claimed_at"] = iso(item.claimed_at)
        if abs((item.claimed_at - at).total_seconds()) > CLAIM_SHOWN_S:
            claimed = f", its timestamp.txt says {iso(item.claimed_at)} (not used)"
    attempt = 1 + sum(r.get("notebook") == notebook for r in recs)
    record["attempt"] = attempt
    newer = current is None or record_time(current) is None or at >= record_time(current)
    late = ((f", late {late_s / 3600:.1f} h" if late_s else "") + (", marked late by the LMS" if item.lms_late else "")
            + claimed)
    how = "" if item.matched_by == "name" else f" [file {item.file_name!r}: matched by {item.matched_by}]"
    if not newer:
        recs.append(record)
        return (f"an older copy ({iso(at)}) than the one in submitted/ ({current.get('submitted_at')}): "
                "kept in history only" + how), current
    write_atomic(current_path, item.data)
    for r in recs:
        if r.get("notebook") == notebook:
            r["current"] = False
    record["current"] = True
    recs.append(record)
    if item.secret:  # the newest exchange submission's: `nbgrader release_feedback` files feedback under it
        write_atomic(history_dir(course, student) / "submission_secret.txt", item.secret.encode("ascii", "replace"))
    return ("new" if current is None else f"submission {attempt}, replaces the one of "
            f"{current.get('submitted_at') or '?'} (kept in history)") + late + how, record


def _save(course: Path, student: str, recs: list[dict]) -> None:
    data = json.dumps({"student": student, "received": recs}, ensure_ascii=False, indent=1).encode("utf-8")
    write_atomic(history_dir(course, student) / "intake.json", data)


def _write_timestamp(folder: Path, recs: list[dict]) -> None:
    times = [t for t in (record_time(r) for r in recs if r.get("current")) if t]
    if times:
        write_atomic(folder / "timestamp.txt", (stamp(max(times)) + "\n").encode())
