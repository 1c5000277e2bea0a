"""Stage 5: what a graded notebook leaves behind, in the course folder.

    autograded/<student>/lec02/<notebook>.ipynb          the instructor's notebook as it ran for the student
                                                         (their answer cells; what each cell printed, as text)
    autograded/<student>/lec02/<notebook>.grading.json   the grader's results and the notebook's state (graded, blank,
                                                         missing, unreadable), for grades.csv and the class report
    feedback/<student>/lec02/<notebook>.html             the page the student reads (feedback.py)

Everything is written from the grader's own data. What the student's process printed appears only in the
autograded notebook (for the instructor), as plain text with control characters escaped and bounded, and only
what it printed before it received any hidden case (link.WITHHELD stands in for the rest).
"""
from __future__ import annotations

import json
from pathlib import Path

import nbformat

from lecture2 import editions

from . import ASSIGNMENT, feedback
from .course import Notebook, release_folder
from .files import AS_OPEN, write_atomic
from .pipeline import Job
from .records import Judged
from .score import NotebookResult, exercise_names
from .text import multiline

MAX_PRINTED = 20_000


def state(course: Path, nb: Notebook, job: Job | None) -> str:
    """How the notebook came in: "missing" (no file), "unreadable" (no notebook), "blank" (every answer cell as
    the release has it: nothing attempted) or "graded"."""
    path = course / "submitted" / (job.student if job else "") / ASSIGNMENT / nb.name
    if job is None or not path.is_file():
        return "missing"
    if job.judge is None:
        return "unreadable"
    stubs = nb.stubs()
    if all(job.answers.get(gid, stub).strip() == stub.strip() for gid, stub in stubs.items()):
        return "blank"
    return "graded"


def summary(result: NotebookResult, job: Job | None = None, status: str = "graded") -> dict:
    """What a notebook's grading leaves for the class report and grades.csv (the grader's own results)."""
    tests = []
    for t in result.tests:
        groups = [{"group": g["group"], "exercise": g["exercise"], "passed": g["passed"], "status": g["status"],
                   "hint_key": g.get("hint_key"), "hint": g.get("hint"), "points": g["points"],
                   "max_points": g["max_points"], "hidden": g["hidden"]} for g in t.groups]
        tests.append({"grade_id": t.grade_id, "status": t.status, "points": t.points, "max_points": t.max_points,
                      "groups": groups, "error": (t.error or {}).get("ename")})
    return {"notebook": result.name.removesuffix(".ipynb"), "score": result.score, "tests": tests,
            "problems": result.problems, "findings": list(job.findings) if job else [], "state": status,
            "attempted": status == "graded", "predictions": dict(job.predictions) if job else {}}


def load(course: Path, student: str) -> dict[str, dict]:
    """Notebook stem -> the grading summary of `student`'s notebook (those graded so far)."""
    found = {}
    for path in sorted((course / "autograded" / student / ASSIGNMENT).glob("*.grading.json")):
        try:
            found[path.name.removesuffix(".grading.json")] = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError):
            continue
    return found


def executed_notebook(nb_path: Path, nb: Notebook, job: Job, judged: Judged | None,
                      result: NotebookResult | None = None) -> nbformat.NotebookNode:
    """The instructor's notebook with the student's answers; under each cell of theirs what it printed (text only,
    and nothing a process printed after it had received a hidden case: link.WITHHELD), under each test cell the
    grader's verdict lines (feedback.result_line: visible groups in full, hidden ones by status and hint)."""
    notebook = editions.in_edition(nbformat.read(nb_path, as_version=4), nb.edition)
    printed: dict[int, str] = {}
    for status in judged.cells if judged is not None else []:
        text = status.stdout
        if status.status != "ok":
            text += f"\n[{status.status}: {status.ename}: {status.message}]"
        printed[status.index] = text
    by_gid = {t.grade_id: t for t in (result.tests if result else [])}
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in job.answers:
            cell.source = job.answers[gid]
        cell.outputs, cell.execution_count = [], None
        text = printed.get(index)
        if gid in by_gid:
            test = by_gid[gid]
            text = feedback.result_line(test, ", ".join(exercise_names(nb.cell(gid).source)) or gid)
            if test.error:
                where = f" (line {test.error['line']})" if isinstance(test.error.get("line"), int) else ""
                text += f"\n{test.error.get('ename', '')}{where}: {test.error.get('message', '')}"
        if text and text.strip():
            cell.outputs.append(nbformat.v4.new_output("stream", name="stdout",
                                                       text=multiline(text[-MAX_PRINTED:], MAX_PRINTED)))
    return notebook


def write(course: Path, nb: Notebook, job: Job, judged: Judged | None, result: NotebookResult) -> None:
    """The autograded notebook, its grading summary and the student's feedback page."""
    target = course / "autograded" / job.student / ASSIGNMENT
    target.mkdir(parents=True, exist_ok=True)
    text = nbformat.writes(executed_notebook(course / "solutions" / ASSIGNMENT / nb.name, nb, job, judged, result))
    write_atomic(target / nb.name, text if text.endswith("\n") else text + "\n", AS_OPEN)  # as nbformat.write
    status = state(course, nb, job)
    write_atomic(target / f"{nb.stem}.grading.json", json.dumps(summary(result, job, status), ensure_ascii=False),
                 AS_OPEN)
    page = feedback.page(nb, release_folder(course, nb.edition) / nb.name, result, job.answers,
                         judged.cells if judged is not None else [])
    out = course / "feedback" / job.student / ASSIGNMENT / f"{nb.stem}.html"
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, page, AS_OPEN)
    exchange_files(course, job.student)


def exchange_files(course: Path, student: str) -> None:
    """Beside the feedback pages, what `nbgrader release_feedback` reads there (JupyterHub's exchange): the
    submission's timestamp.txt and submission_secret.txt (from submitted/, or the intake's history)."""
    target = course / "feedback" / student / ASSIGNMENT
    submitted = course / "submitted" / student
    for name in ("timestamp.txt", "submission_secret.txt"):
        for source in (submitted / ASSIGNMENT / name, submitted / "history" / ASSIGNMENT / name):
            if source.is_file() and not source.is_symlink() and source.stat().st_size < 4096:
                write_atomic(target / name, source.read_bytes(), AS_OPEN)
                break
