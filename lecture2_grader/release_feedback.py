"""`make feedback`: hand the course's feedback pages back through nbgrader's exchange. A JupyterHub's (e.g. the
course's own `make hub`): each student's *Fetch Feedback* in the Assignments tab brings their pages.

    .venv/bin/python -m lecture2_grader.release_feedback [--exchange /srv/nbgrader/exchange] [--student alice ...]

It releases what `make grade` wrote, feedback/<student>/lec02/*.html, with `nbgrader release_feedback`: each page
is filed in the exchange under a hash of the student's own submission secret (the newest submission collected
from the exchange, which `make grade` puts beside the pages as submission_secret.txt), so a student's fetch finds
their pages and no one else's, and a page released again after a regrade replaces the earlier one. A student
whose work did not come through the exchange (an LMS zip) has no secret: the line says so, and their pages go
back through the LMS. One line per student.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from . import ASSIGNMENT
from .text import terminal

COURSE_ID = "lecture2"  # the course's name in the exchange (lecture2_hub.settings.COURSE_ID)
DEFAULT_EXCHANGE = Path("/srv/nbgrader/exchange")  # nbgrader's own default root
EXCHANGE_CLASSES = {"release_feedback": "ReleaseFeedback"}  # lecture2_hub.exchange.FACTORY's, for this command


def _pages(course: Path, only: list[str] | None) -> dict[str, list[Path]]:
    feedback = course / "feedback"
    names = only or (sorted(p.name for p in feedback.iterdir() if p.is_dir()) if feedback.is_dir() else [])
    return {n: sorted((feedback / n / ASSIGNMENT).glob("*.html")) for n in names}


def release(course: Path, exchange: Path = DEFAULT_EXCHANGE, only: list[str] | None = None) -> tuple[int, list[str]]:
    """(exit status, one line per student) for releasing the feedback under course/feedback/."""
    pages = _pages(course, only)
    if not pages:
        return 2, [f"no feedback pages under {course / 'feedback'}: run `make grade` first"]
    # the course's exchange classes (lecture2_hub.exchange, by name: they run in nbgrader's process): the root's
    # mode left alone, and each released page readable by its student (the course folder is private to its owner)
    options = [f"--CourseDirectory.course_id={COURSE_ID}", f"--Exchange.root={exchange}",
               *(f"--ExchangeFactory.{trait}=lecture2_hub.exchange.{cls}" for trait, cls in EXCHANGE_CLASSES.items())]
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    env.pop("NBGRADER_EXECUTION", None)
    lines, status = [], 0
    for student, files in pages.items():
        folder = course / "feedback" / student / ASSIGNMENT
        if not files:
            lines.append(f"{terminal(student, 80)}: no feedback pages (not graded yet: make grade)")
            continue
        if not (folder / "submission_secret.txt").is_file() or not (folder / "timestamp.txt").is_file():
            lines.append(f"{terminal(student, 80)}: not submitted through the exchange (no submission secret): hand "
                         f"the pages in feedback/{terminal(student, 80)}/{ASSIGNMENT}/ back through the LMS")
            continue
        proc = subprocess.run([str(Path(sys.executable).parent / "nbgrader"), "release_feedback", ASSIGNMENT,
                               f"--student={student}", *options], cwd=course, env=env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL)
        if proc.returncode != 0:
            status = 1
            why = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()][-3:]
            lines.append(f"{terminal(student, 80)}: not released: {terminal(' / '.join(why), 600)}")
            continue
        stems = ", ".join(p.stem for p in files)
        lines.append(f"{terminal(student, 80)}: {len(files)} feedback page{'s' if len(files) != 1 else ''} released "
                     f"({terminal(stems, 400)})")
    return status, lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make feedback", description=__doc__.split("\n\n")[0])
    parser.add_argument("--exchange", type=Path, default=DEFAULT_EXCHANGE,
                        help=f"the exchange's root folder (default: {DEFAULT_EXCHANGE}, make hub's and nbgrader's)")
    parser.add_argument("--student", action="append", default=None, help="only this student (repeatable)")
    parser.add_argument("--course", type=Path, default=Path.cwd(), help="the course folder (default: here)")
    args = parser.parse_args(argv)
    if not (args.course / "nbgrader_config.py").is_file():
        print(f"error: {args.course} is not the course folder (no nbgrader_config.py)")
        return 2
    status, lines = release(args.course.resolve(), args.exchange, args.student)
    print("\n".join(lines))
    return status


if __name__ == "__main__":
    sys.exit(main())
