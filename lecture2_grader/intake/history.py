"""A student's history as it is kept, and what the rest of the grader reads from it:

    submitted/<student>/lec02/timestamp.txt                 the newest of their submission times (nbgrader's file: the
                                                            formgrader compares it with the gradebook's)
    submitted/<student>/history/lec02/<stem>/<time>_<sha>.ipynb   every copy of a notebook ever received, the newest too
    submitted/<student>/history/lec02/intake.json           one record per copy: notebook, submission time and where
                                                            it came from, late or not, how the notebook was recognised

The gradebook, grades.csv, the export and the class report read a student's lateness, submission time and LMS id
here. It reads those files and writes nothing (merging.py writes them).
"""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from .. import ASSIGNMENT
from .term import Term, parse_time


def history_dir(course: Path, student: str) -> Path:
    return course / "submitted" / student / "history" / ASSIGNMENT


def records(course: Path, student: str) -> list[dict]:
    """Every copy received for `student` (intake.json), oldest first; [] when there is none or it is unreadable."""
    try:
        data = json.loads((history_dir(course, student) / "intake.json").read_text("utf-8"))
    except (OSError, ValueError):
        return []
    return [r for r in data.get("received", []) if isinstance(r, dict)] if isinstance(data, dict) else []


def record_time(record: dict | None) -> dt.datetime | None:
    """A record's submission time (aware), or None when it has none that reads."""
    try:
        return dt.datetime.fromisoformat(record["submitted_at"].replace("Z", "+00:00")) if record else None
    except (KeyError, ValueError, AttributeError):
        return None


def stamp_time(folder: Path) -> dt.datetime | None:
    """The time in `folder`/timestamp.txt, as nbgrader writes it, or None when there is none that reads."""
    try:
        return parse_time((folder / "timestamp.txt").read_text("utf-8")[:100])
    except (OSError, SystemExit):
        return None


def lateness(course: Path, student: str, term: Term) -> dict[str, dict]:
    """Notebook stem -> the copy in submitted/: {submitted_at (ISO, UTC), late (bool), late_seconds (None without a
    due date), lms_late, attempts}, its lateness computed against the term's due date as it is now."""
    recs = records(course, student)
    out = {}
    for r in recs:
        if r.get("current") and isinstance(r.get("notebook"), str):
            seconds = term.lateness(record_time(r))
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
    return stamp_time(course / "submitted" / student / ASSIGNMENT)
