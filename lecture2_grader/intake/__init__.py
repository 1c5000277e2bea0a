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

The parts, each importing only those above it:

    term.py        the due date and the LMS's time zone (Term), and how times are written (stamp, iso)
    names.py       what a path says: the LMSs' and the exchange's names, the student ids the course accepts, slug
    archives.py    reading a zip or a folder into Received files, with their times; the size limits (a zip's files
                   streamed to a spool folder, never held in memory)
    recognise.py   the student and the notebook of a Received file (attribute, match_notebook)
    history.py     a student's history as kept, and its readers (records, lateness, lms_identity, submitted_at)
    merging.py     the merge of a student's copies into submitted/ and their history (merge)
    collector.py   collect: the entry point (collect.py is its command)

Every name below is part of `intake` as other modules use it (`intake.collect`, `intake.Term`, ...). The limits
are copies here: to change one (a test does), set it on `intake.archives`.
"""
from __future__ import annotations

from .archives import IN_MEMORY, MAX_ENTRIES, MAX_ENTRY, MAX_NESTED, MAX_NESTED_TOTAL, Received, entry_time, read_source
from .collector import collect
from .history import history_dir, lateness, lms_identity, record_time, records, stamp_time, submitted_at
from .merging import merge
from .names import CANVAS, EXCHANGE_DIR, MOODLE_DIR, NOT_STUDENTS, PLAIN, RENAMED, STUDENT_ID, slug
from .recognise import attribute, match_notebook, release_notebooks
from .term import UTC, Term, course_language, iso, parse_time, read_settings, stamp

__all__ = [
    "CANVAS", "EXCHANGE_DIR", "IN_MEMORY", "MAX_ENTRIES", "MAX_ENTRY", "MAX_NESTED", "MAX_NESTED_TOTAL", "MOODLE_DIR",
    "NOT_STUDENTS",
    "PLAIN", "RENAMED", "STUDENT_ID", "UTC", "Received", "Term", "attribute", "collect", "entry_time", "history_dir",
    "course_language", "iso", "lateness", "lms_identity", "match_notebook", "merge", "parse_time", "read_settings",
    "read_source",
    "record_time", "records", "release_notebooks", "slug", "stamp", "stamp_time", "submitted_at",
]
