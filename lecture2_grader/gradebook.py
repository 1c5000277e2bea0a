"""Stage 6: the course's gradebook (nbgrader's gradebook.db) and grades.csv, written by the grader alone.

Scores enter the gradebook only from `score.py`'s results, one student at a time, in the grader's process:
no student process ever sees a gradebook. A manual grade given in nbgrader's formgrader is kept when the
student is graded again.
grades.csv is written from the gradebook and lists every student in it, whoever was graded this run.
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

from . import ASSIGNMENT
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
    return scores


def write_csv(course: Path) -> Path:
    """grades.csv: one row per student in the gradebook, a column per notebook, total and maximum."""
    path = course / "grades.csv"
    with Gradebook(db_url(course)) as gb:
        assignment = gb.find_assignment(ASSIGNMENT)
        stems = sorted(nb.name for nb in assignment.notebooks)
        rows = []
        for student in sorted(gb.students, key=lambda s: s.id):
            try:
                submission = gb.find_submission(ASSIGNMENT, student.id)
                per = {nb.name: nb.score for nb in submission.notebooks}
            except MissingEntry:
                per = {}
            rows.append([csv_cell(student.id), *(f"{per.get(s, 0.0):g}" for s in stems), f"{sum(per.values()):g}",
                         f"{assignment.max_score:g}"])
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["student", *stems, "total", "max_total"])
        writer.writerows(rows)
    return path
