"""The term's dates: the due date, the LMS's time zone, and how a time is written. The due date and the LMS's time
zone come from the course's nbgrader_config.py; a time is written as nbgrader's timestamp.txt writes it, or in ISO
8601 in UTC for the records.

    c.Lecture2Grader.due = "2026-03-15T23:59:00+08:00"      # the due date (ISO 8601 with a UTC offset); none: no late flags
    c.Lecture2Grader.lms_timezone = "Asia/Shanghai"         # the zone of the LMS's zip times (default: the due date's offset)

It reads nbgrader_config.py and nothing else; it writes nothing.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

from ..text import terminal

UTC = dt.timezone.utc


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


def course_language(course: Path) -> str:
    """The course's language for its instructors (c.Lecture2Grader.language in nbgrader_config.py: one of
    lecture2.editions' codes; the source's, Chinese, by default or for a value it does not know): the class
    report's hints. A student's messages follow their notebook's edition instead."""
    from lecture2 import editions

    try:
        language = read_settings(course).get("language")
    except SystemExit:
        return editions.SOURCE
    return language if language in editions.EDITIONS else editions.SOURCE


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
