"""nbgrader's own grading commands, sent through the course's grader. The formgrader's ⚡ Autograde and Generate
Feedback buttons, `nbgrader autograde` and `nbgrader generate_feedback`.

nbgrader's Autograde runs a student's notebook as it is, in a kernel with the instructor's permissions, and its
--force (which the formgrader always passes) first removes autograded/<student>/lec02/, the course grader's
stored results included; GenerateFeedback would replace the course's feedback pages by nbconvert's, with what
the student's code printed. nbgrader_config.py therefore names these exporters:

    c.Autograde.exporter_class = "lecture2_grader.nbgrader_hooks.GradeWithCourseGrader"
    c.GenerateFeedback.exporter_class = "lecture2_grader.nbgrader_hooks.GradeWithCourseGrader"

nbgrader builds its exporter in BaseConverter.start() after it has listed the submissions and before it touches
any folder. This one runs the course's grader for the students (and notebook) nbgrader was asked about,
`python -m lecture2_grader --student S ...`: sandboxed, reusing every stored result whose files did not change,
writing the gradebook (manual grades kept, the submission's time set, so the formgrader then shows "graded"),
autograded/ and feedback/. Its report lines go to nbgrader's log, which the formgrader's dialog shows. Then it
empties nbgrader's list of submissions, so that nbgrader itself executes, removes and writes nothing. Where the
grader cannot run (no bubblewrap), the button fails with the grader's message, which says what to run.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from nbconvert.exporters import NotebookExporter
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode

from . import ASSIGNMENT


def students_asked(converter) -> tuple[list[str], str]:
    """(student ids, notebook id or "*") nbgrader's converter listed for this run (its `assignments`)."""
    pattern = converter._format_source("(?P<assignment_id>.*)", "(?P<student_id>.*)", escape=True)
    students = []
    for folder in sorted(converter.assignments):
        m = re.match(pattern, folder)
        if m and m.group("assignment_id") == ASSIGNMENT and m.group("student_id") not in students:
            students.append(m.group("student_id"))
    return students, converter.coursedir.notebook_id


def run_course_grader(root: Path, students: list[str], notebook: str = "*") -> subprocess.CompletedProcess:
    """`python -m lecture2_grader --course ROOT --student S ...` in this environment, its output captured."""
    command = [sys.executable, "-m", "lecture2_grader", "--course", str(root)]
    for student in students:
        command += ["--student", student]
    if notebook and notebook != "*":
        command += ["--notebook", notebook]
    env = dict(os.environ)
    env.pop("NBGRADER_EXECUTION", None)
    return subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)


class GradeWithCourseGrader(NotebookExporter):
    """An nbconvert exporter whose construction grades with the course's grader instead (see the module's doc)."""

    def __init__(self, config=None, **kw):
        super().__init__(config=config, **kw)
        converter = kw.get("parent")
        if converter is None or not hasattr(converter, "assignments"):
            return  # built outside an nbgrader converter: an ordinary exporter
        from nbgrader.converters.base import NbGraderException

        students, notebook = students_asked(converter)
        root = Path(converter.coursedir.root)
        what = type(converter).__name__
        converter.log.info("%s goes through the course's grader (sandboxed; unchanged notebooks reuse their stored "
                           "results): make grade GRADE_ARGS=\"%s\"", what,
                           " ".join(f"--student {s}" for s in students)
                           + (f" --notebook {notebook}" if notebook != "*" else ""))
        converter.assignments = {}  # nbgrader itself then converts, executes and removes nothing
        if not students:
            return
        proc = run_course_grader(root, students, notebook)
        for line in (proc.stdout + proc.stderr).splitlines():
            if line.strip() and not line.startswith("\r"):
                converter.log.info("%s", line.rstrip()[-2000:])
        if proc.returncode != 0:
            raise NbGraderException("the course's grader did not run (see the lines above); run `make grade` in "
                                    f"{root} to see why")


class ClearExerciseNotes(NbGraderPreprocessor):
    """`make release` (nbgrader generate_assignment, after its checksums): each answer cell's note of what the student
    works out (its metadata["lecture2"]: "derives" and "kind", for docs/exercises.md) stays in solutions/ only; a
    prediction cell's key (metadata["lecture2"]["prediction"]) stays, the grader reads it. Named last in c.GenerateAssignment.preprocessors."""

    def preprocess_cell(self, cell, resources, index):
        notes = cell.get("metadata", {}).get("lecture2")
        if isinstance(notes, dict):
            for key in ("derives", "kind"):
                notes.pop(key, None)
            if not notes:
                del cell.metadata["lecture2"]
        return cell, resources


class ChooseEdition(NbGraderPreprocessor):
    """`make release` (tools/release.py), first of c.GenerateAssignment.preprocessors: the source notebook as the
    edition being released reads it (lecture2.editions.in_edition: each cell's English in place for "en", no other
    language kept in the release, the edition named in the notebook's metadata), before nbgrader's own
    preprocessors clear solutions and hidden tests. The same code, check cells and grade_ids in every edition."""

    edition = Unicode("zh", help="the edition released: a code of lecture2.editions.EDITIONS").tag(config=True)

    def preprocess(self, nb, resources):
        from lecture2 import editions

        return editions.in_edition(nb, self.edition), resources
