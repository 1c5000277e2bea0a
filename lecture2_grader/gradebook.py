"""Stage 6: the course's gradebook (nbgrader's gradebook.db), grades.csv and notebooks.csv, written by the grader alone.

Scores enter the gradebook only from `score.py`'s results, one student at a time, in the grader's process:
no student process ever sees a gradebook. A manual grade given in nbgrader's formgrader is kept when the
student is graded again. The gradebook also holds what nbgrader's formgrader shows: the due date
(c.Lecture2Grader.due) and each submission's time, the one in submitted/<student>/lec02/timestamp.txt, so that a
graded student reads "graded" there, and a student with a newer notebook collected since reads "needs
autograding" until `make grade` has run.

    grades.csv      one row per student of the gradebook: points per notebook, total, maximum, then which
                    notebooks were late (hours past the due date), blank (handed in as released), missing,
                    unreadable or flagged for review, and the newest submission time
    notebooks.csv   one row per student and notebook: points, state (graded, blank, missing, unreadable, not
                    graded yet), manual grade, flagged, submission time, late, hours late, copies received (the
                    same facts, for a spreadsheet's filters)
"""
from __future__ import annotations

import csv
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry
from sqlalchemy.exc import SAWarning

from . import ASSIGNMENT, artifacts, intake
from .files import atomic_text
from .score import NotebookResult
from .text import csv_cell

BIN = Path(sys.executable).parent


def db_url(course: Path) -> str:
    return f"sqlite:///{course / 'gradebook.db'}"


def _registered(course: Path) -> dict[str, dict[str, float]] | None:
    """Notebook stem -> {test grade_id: points} as the gradebook has the assignment, or None."""
    if not (course / "gradebook.db").is_file():
        return None
    try:
        with Gradebook(db_url(course)) as gb:
            return {nb.name: {c.name: c.max_score for c in nb.grade_cells}
                    for nb in gb.find_assignment(ASSIGNMENT).notebooks}
    except MissingEntry:
        return None


def register(course: Path, expected: dict[str, dict[str, float]] | None = None) -> None:
    """Record the assignment's notebooks and graded cells (from solutions/) in the course gradebook, with
    nbgrader's own generate_assignment, into a throwaway release folder (notebooks/ is not touched).
    Skipped when the gradebook already holds exactly `expected` (stem -> {test grade_id: points})."""
    import os

    if expected is not None and _registered(course) == expected:
        return
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")  # nbgrader runs `alembic`
    env.pop("NBGRADER_EXECUTION", None)
    with tempfile.TemporaryDirectory() as release:
        proc = subprocess.run([str(BIN / "nbgrader"), "generate_assignment", ASSIGNMENT, "--force",
                               f"--CourseDirectory.release_directory={release}"], cwd=course, env=env,
                              text=True, capture_output=True)
    if proc.returncode != 0:
        raise SystemExit(f"error: nbgrader generate_assignment failed:\n{proc.stderr[-2000:]}")


def max_scores(course: Path) -> dict[str, float]:
    with Gradebook(db_url(course)) as gb:
        return {nb.name: nb.max_score for nb in gb.find_assignment(ASSIGNMENT).notebooks}


def students(course: Path) -> list[str]:
    """Every student in the course gradebook."""
    with Gradebook(db_url(course)) as gb:
        return sorted(s.id for s in gb.students)


def merge(course: Path, student: str, results: dict[str, NotebookResult]) -> dict[str, float]:
    """Write `student`'s automatic scores of the notebooks in `results` (notebook stem -> result) into the
    gradebook, in place: the other notebooks' grades and every manual grade given in the formgrader stay as
    they are. Returns the score per notebook stem as the gradebook has it afterwards (every notebook)."""
    warnings.filterwarnings("ignore", category=SAWarning)  # nbgrader's add_submission autoflushes noisily
    with Gradebook(db_url(course)) as gb:
        gb.update_or_create_student(student)
        try:
            submission = gb.find_submission(ASSIGNMENT, student)
        except MissingEntry:
            submission = gb.add_submission(ASSIGNMENT, student)
        scores = {}
        for nb in submission.notebooks:
            result = results.get(nb.name)
            if result is not None:
                earned = {t.grade_id: t for t in result.tests}
                for grade in nb.grades:
                    test = earned.get(grade.name)
                    maximum = grade.max_score or 0.0
                    grade.auto_score = min(max(test.points, 0.0), maximum) if test else 0.0  # clamped
                    grade.needs_manual_grade = False
                gb.db.commit()
            scores[nb.name] = sum(g.score for g in nb.grades)
        _times(gb, course, student, submission)
    return scores


def _naive_utc(at):
    return at.astimezone(intake.UTC).replace(tzinfo=None) if at else None


def _times(gb: Gradebook, course: Path, student: str, submission) -> None:
    """The due date and the submission's time as nbgrader's formgrader reads them (naive UTC, like nbgrader)."""
    term = intake.Term.load(course)
    assignment = gb.find_assignment(ASSIGNMENT)
    due = _naive_utc(term.due)
    if assignment.duedate != due:
        assignment.duedate = due
    at = _naive_utc(intake.submitted_at(course, student))
    if submission.timestamp != at:
        submission.timestamp = at
    gb.db.commit()


COLUMNS = ("late", "blank", "missing", "unreadable", "flagged", "submitted_at")


def table(course: Path) -> tuple[list[str], dict[str, float], list[dict]]:
    """(notebook stems, maximum per stem, one dict per student of the gradebook): what grades.csv, notebooks.csv,
    the class report and the LMS export are made from. Each student: id, scores {stem: points}, total, and per
    notebook its state, lateness and submission time (artifacts' summaries, intake's records)."""
    term = intake.Term.load(course)
    with Gradebook(db_url(course)) as gb:
        assignment = gb.find_assignment(ASSIGNMENT)
        maxima = {nb.name: nb.max_score for nb in assignment.notebooks}
        stems = sorted(maxima)
        rows = []
        for student in sorted(gb.students, key=lambda s: s.id):
            try:
                submission = gb.find_submission(ASSIGNMENT, student.id)
                per = {nb.name: nb.score for nb in submission.notebooks}
                manual = {nb.name for nb in submission.notebooks if any(g.manual_score is not None for g in nb.grades)}
            except MissingEntry:
                per, manual = {}, set()
            rows.append({"student": student.id, "scores": per, "manual": manual,
                         "first_name": student.first_name, "last_name": student.last_name})
    for row in rows:
        summaries = artifacts.load(course, row["student"])
        late = intake.lateness(course, row["student"], term)
        row["notebooks"] = {}
        for stem in stems:
            info = summaries.get(stem) or {}
            handed_in = (course / "submitted" / row["student"] / ASSIGNMENT / f"{stem}.ipynb").is_file()
            state = info.get("state") or ("graded" if info else "not graded yet" if handed_in else "missing")
            when = late.get(stem, {})
            row["notebooks"][stem] = {
                "score": row["scores"].get(stem, 0.0), "max": maxima[stem], "state": state,
                "flagged": bool(info.get("findings")), "manual": stem in row["manual"],
                "submitted_at": when.get("submitted_at", ""), "late": bool(when.get("late")),
                "late_seconds": when.get("late_seconds"), "attempts": when.get("attempts", 0)}
        row["total"] = sum(row["scores"].values())
    return stems, maxima, rows


def _hours(seconds: float | None) -> str:
    return f"{seconds / 3600:.1f}" if seconds else ""


def write_csv(course: Path) -> Path:
    """grades.csv (one row per student) and notebooks.csv (one row per student and notebook); returns grades.csv."""
    stems, maxima, rows = table(course)
    max_total = sum(maxima.values())
    path = course / "grades.csv"
    with atomic_text(path) as f:
        writer = csv.writer(f)
        writer.writerow(["student", *stems, "total", "max_total", *COLUMNS])
        for row in rows:
            nbs = row["notebooks"]

            def which(test) -> str:
                return ";".join(stem[:2] for stem in stems if test(nbs[stem]))

            late = ";".join(f"{stem[:2]}" + (f" (+{_hours(nbs[stem]['late_seconds'])} h)" if nbs[stem]["late_seconds"] else "")
                            for stem in stems if nbs[stem]["late"])
            newest = max((nbs[s]["submitted_at"] for s in stems if nbs[s]["submitted_at"]), default="")
            writer.writerow([csv_cell(row["student"]), *(f"{row['scores'].get(s, 0.0):g}" for s in stems),
                             f"{row['total']:g}", f"{max_total:g}", late,
                             which(lambda n: n["state"] == "blank"), which(lambda n: n["state"] == "missing"),
                             which(lambda n: n["state"] == "unreadable"), which(lambda n: n["flagged"]), newest])
    with atomic_text(course / "notebooks.csv") as f:
        writer = csv.writer(f)
        writer.writerow(["student", "notebook", "points", "max_points", "state", "manual_grade", "flagged",
                         "submitted_at", "late", "hours_late", "copies_received"])
        for row in rows:
            for stem in stems:
                n = row["notebooks"][stem]
                writer.writerow([csv_cell(row["student"]), stem, f"{n['score']:g}", f"{n['max']:g}", n["state"],
                                 "yes" if n["manual"] else "", "yes" if n["flagged"] else "", n["submitted_at"],
                                 "yes" if n["late"] else "", _hours(n["late_seconds"]), n["attempts"] or ""])
    return path
