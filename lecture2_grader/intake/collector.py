"""`collect`: archives and folders into submitted/, the one entry point of the intake (collect.py is its command).

Each source is kept in downloaded/lec02/archive/ (beside, never over, an earlier one of the same name), read
(archives.py), each file recognised (recognise.py), and each student's copies merged (merging.py); what could not
be placed comes back as one line each, every student-written string escaped. Large files are spooled to a
temporary folder under downloaded/, removed at the end.
"""
from __future__ import annotations

import datetime as dt
import tempfile
from pathlib import Path

from .. import ASSIGNMENT
from ..files import file_hash, write_atomic
from ..text import terminal
from .archives import Received, read_source
from .merging import merge
from .recognise import attribute, release_notebooks
from .term import UTC, Term


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
        write_atomic(target, source)
