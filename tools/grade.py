"""Grade a whole class: every submission under submitted/, several students at once, nothing lost.

    .venv/bin/python -m tools.grade                 # what `make grade` runs
    .venv/bin/python -m tools.grade --jobs 4 --cell-timeout 120 --memory-limit 4GiB

For each student it (1) checks the submission before any code runs and repairs what nbgrader cannot
(invalid JSON, missing notebooks, duplicated or retyped graded cells, unexpected files, which are never
copied next to the notebooks); (2) autogrades it with nbgrader in a scratch course of its own, so that
parallel students never share a gradebook, under a per-cell timeout, a memory limit, and a kernel guard
that undoes monkeypatching before every cell (lecture2.guard); (3) merges the scores into the course's
gradebook one student at a time. Then it writes grades.csv (per notebook and total), feedback HTML without
hidden tests in feedback/<student>/<assignment>/, and prints one report line per student.
Rerunning it gives the same result: each run replaces the students' previous grades.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook, MissingEntry
from sqlalchemy.exc import SAWarning

ASSIGNMENT = "lec02"
BIN = Path(sys.executable).parent
GUARD_MARKER = "[lecture2-guard] restored"


@dataclass
class Student:
    """One student's submission, what was found wrong in it, and the score it earned."""

    name: str
    problems: list[str] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)  # notebook stem -> points
    seconds: float = 0.0
    scratch: Path | None = None  # where it was graded, until `merge` takes the results

    @property
    def total(self) -> float:
        return sum(self.scores.values())


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"  # nbgrader runs `alembic` from PATH
    env.pop("NBGRADER_EXECUTION", None)
    return env


def _nbgrader(args: list[str], cwd: Path, memory_limit: int | None = None, timeout: float | None = None):
    def limit():  # in the child: the kernel it starts inherits the address-space limit
        if memory_limit:
            resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))

    return subprocess.run([str(BIN / "nbgrader"), *args], cwd=cwd, env=_env(), text=True, capture_output=True,
                          preexec_fn=limit, timeout=timeout)


def _parse_bytes(text: str) -> int:
    match = re.fullmatch(r"\s*([\d.]+)\s*(GiB|MiB|GB|MB)?\s*", text)
    if not match:
        raise argparse.ArgumentTypeError(f"not a memory size: {text!r} (e.g. 4GiB, 3000MB)")
    scale = {"GiB": 2**30, "MiB": 2**20, "GB": 10**9, "MB": 10**6, None: 1}[match.group(2)]
    return int(float(match.group(1)) * scale)


# -- 1. before any code runs ------------------------------------------------------------------------------

def _source_cells(course: Path) -> dict[str, dict[str, dict]]:
    """Notebook file name -> grade_id -> {type, source, grade} of the release's nbgrader cells."""
    cells = {}
    for path in sorted((course / "notebooks" / ASSIGNMENT).glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        cells[path.name] = {c.metadata["nbgrader"]["grade_id"]: {"type": c.cell_type, "source": c.source,
                                                                 "grade": c.metadata["nbgrader"].get("grade", False)}
                            for c in nb.cells if "nbgrader" in c.metadata}
    return cells


def prepare(student: Student, folder: Path, out: Path, expected: dict[str, dict[str, dict]]) -> None:
    """Copy the expected notebooks of `folder` to `out`, repaired, and record each problem found."""
    out.mkdir(parents=True, exist_ok=True)
    present = {p.name for p in folder.iterdir()} if folder.is_dir() else set()
    unexpected = sorted(n for n in present - set(expected) if not n.startswith("."))
    if not folder.is_dir():
        student.problems.append(f"no {ASSIGNMENT}/ folder: every notebook missing")
    if unexpected:
        student.problems.append(f"unexpected files ignored: {', '.join(unexpected)}")
    for name, cells in expected.items():
        stem = name.removesuffix(".ipynb")
        if name not in present:
            if folder.is_dir():
                student.problems.append(f"{stem}: notebook missing (0 points)")
            continue
        try:
            nb = nbformat.read(folder / name, as_version=4)
        except Exception as err:  # invalid JSON or not a notebook at all
            student.problems.append(f"{stem}: not a valid notebook ({type(err).__name__}) (0 points)")
            continue
        seen, kept = set(), []
        for cell in nb.cells:
            gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
            if gid in seen:
                student.problems.append(f"{stem}: duplicated cell {gid} removed")
                continue
            if gid in cells:
                seen.add(gid)
                want = cells[gid]
                if cell.cell_type != want["type"]:
                    student.problems.append(f"{stem}: cell {gid} changed to {cell.cell_type} (restored)")
                    cell = (nbformat.v4.new_code_cell if want["type"] == "code" else nbformat.v4.new_markdown_cell)(
                        want["source"] if want["grade"] else cell.source, metadata=cell.metadata)
                elif want["grade"] and cell.source != want["source"]:
                    student.problems.append(f"{stem}: test cell {gid} edited (restored)")
            kept.append(cell)
        for gid, want in cells.items():
            if want["grade"] and gid not in seen:
                student.problems.append(f"{stem}: test cell {gid} deleted (restored)")
        nb.cells = kept
        nbformat.write(nb, out / name)


# -- 2. grading in a scratch course ----------------------------------------------------------------------

SCRATCH_CONFIG = """
c.Execute.timeout = {timeout}
c.Execute.extra_arguments = ["--HistoryManager.hist_file=:memory:",
                             "--IPKernelApp.exec_lines=import lecture2.guard as _guard; _guard.install(); del _guard"]
c.OverwriteCells.add_missing_cells = True
"""


def grade_one(student: Student, course: Path, scratch_template: Path, expected, cell_timeout: int,
              memory_limit: int | None) -> Student:
    """Autograde one student in a copy of the course; leaves results in scratch for `merge`."""
    start = time.perf_counter()
    scratch = Path(tempfile.mkdtemp(prefix=f"grade-{student.name}-"))
    shutil.copytree(scratch_template, scratch, dirs_exist_ok=True)
    with open(scratch / "nbgrader_config.py", "a", encoding="utf-8") as f:
        f.write(SCRATCH_CONFIG.format(timeout=cell_timeout))
    prepare(student, course / "submitted" / student.name / ASSIGNMENT,
            scratch / "submitted" / student.name / ASSIGNMENT, expected)
    # a whole-student limit as the last resort: every cell may take cell_timeout, plus start-up
    budget = 120 + cell_timeout * sum(len(c) for c in expected.values())
    try:
        proc = _nbgrader(["autograde", ASSIGNMENT, "--student", student.name, "--force"], scratch, memory_limit, budget)
        if proc.returncode != 0:
            last = [line for line in proc.stderr.splitlines() if "ERROR" in line]
            student.problems.append(f"nbgrader failed: {last[-1] if last else proc.returncode}")
        else:
            _nbgrader(["generate_feedback", ASSIGNMENT, "--student", student.name, "--force"], scratch)
    except subprocess.TimeoutExpired:
        student.problems.append(f"grading stopped after {budget} s (ungraded notebooks score 0)")
    _scan_outputs(student, scratch / "autograded" / student.name / ASSIGNMENT)
    student.seconds = time.perf_counter() - start
    student.scratch = scratch
    return student


def _scan_outputs(student: Student, folder: Path) -> None:
    """Report what went wrong while the submission ran: timeouts, memory, dead kernels, tampering."""
    for path in sorted(folder.glob("*.ipynb")):
        stem = path.stem
        nb = nbformat.read(path, as_version=4)
        found = set()
        for cell in nb.cells:
            for out in cell.get("outputs", []):
                text = out.get("text", "") if out.get("output_type") == "stream" else ""
                ename = out.get("ename", "") if out.get("output_type") == "error" else ""
                evalue = out.get("evalue", "") if out.get("output_type") == "error" else ""
                if ename == "CellTimeoutError":
                    found.add("a cell timed out")
                elif ename == "MemoryError" or "can't allocate memory" in evalue or "not enough memory" in evalue:
                    found.add("out of memory")
                elif ename == "DeadKernelError" or "Kernel died" in evalue:
                    found.add("the kernel died")
                elif "os._exit" in evalue and "disabled while grading" in evalue:
                    found.add("os._exit blocked")
                if GUARD_MARKER in text:
                    names = text.split(GUARD_MARKER, 1)[1].strip(": \n").split("\n")[0]
                    found.add(f"monkeypatching undone ({names})")
        student.problems += [f"{stem}: {p}" for p in sorted(found)]


# -- 3. one student at a time into the course --------------------------------------------------------------

def merge(student: Student, course: Path, db_url: str) -> None:
    """Copy a student's autograded notebooks and feedback into the course and their scores into its gradebook."""
    scratch = student.scratch
    for kind in ("autograded", "feedback"):
        target = course / kind / student.name / ASSIGNMENT
        shutil.rmtree(target, ignore_errors=True)
        source = scratch / kind / student.name / ASSIGNMENT
        if source.is_dir():
            shutil.copytree(source, target)
    warnings.filterwarnings("ignore", category=SAWarning)  # nbgrader's add_submission autoflushes noisily
    with Gradebook(db_url) as main:
        main.update_or_create_student(student.name)
        try:
            main.remove_submission(ASSIGNMENT, student.name)
        except MissingEntry:
            pass
    with Gradebook(db_url) as main:
        submission = main.add_submission(ASSIGNMENT, student.name)
        graded = {}
        scratch_db = scratch / "gradebook.db"
        if scratch_db.exists():
            with Gradebook(f"sqlite:///{scratch_db}") as theirs:
                try:
                    for nb in theirs.find_submission(ASSIGNMENT, student.name).notebooks:
                        graded[nb.name] = {g.name: (g.auto_score, g.manual_score) for g in nb.grades}
                except MissingEntry:
                    pass
        for nb in submission.notebooks:
            for grade in nb.grades:
                auto, manual = graded.get(nb.name, {}).get(grade.name, (0.0, None))
                grade.auto_score = auto if auto is not None else 0.0
                grade.manual_score = manual
                grade.needs_manual_grade = False
            main.db.commit()
            student.scores[nb.name] = sum(g.score for g in nb.grades)
    if not os.environ.get("LECTURE2_KEEP_SCRATCH"):
        shutil.rmtree(scratch, ignore_errors=True)


def write_csv(path: Path, students: list[Student], max_scores: dict[str, float]) -> None:
    stems = sorted(max_scores)
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["student", *stems, "total", "max_total"])
        for s in sorted(students, key=lambda s: s.name):
            writer.writerow([s.name, *(f"{s.scores.get(n, 0.0):g}" for n in stems), f"{s.total:g}",
                             f"{sum(max_scores.values()):g}"])


def _progress(done: int, total: int, name: str, width: int = 30) -> None:
    filled = width * done // max(total, 1)
    print(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {name:<24}", end="", file=sys.stderr, flush=True)


def grade_class(course: Path, jobs: int, cell_timeout: int, memory_limit: int | None,
                students: list[str] | None = None) -> list[Student]:
    """Grade every student under course/submitted (or just `students`); returns them with scores and problems."""
    course = course.resolve()
    submitted = course / "submitted"
    if not (course / "nbgrader_config.py").is_file():
        raise SystemExit(f"error: {course} is not the course folder (no nbgrader_config.py)")
    if not submitted.is_dir():
        raise SystemExit(f"error: no submissions: {submitted} does not exist. Put each student's notebooks in "
                         f"submitted/<student>/{ASSIGNMENT}/")
    names = students or sorted(p.name for p in submitted.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not names:
        raise SystemExit(f"error: {submitted} holds no student folder")
    expected = _source_cells(course)
    # register the assignment in the course gradebook without touching notebooks/
    with tempfile.TemporaryDirectory() as release:
        proc = _nbgrader(["generate_assignment", ASSIGNMENT, "--force",
                          f"--CourseDirectory.release_directory={release}"], course)
        if proc.returncode != 0:
            raise SystemExit(f"error: nbgrader generate_assignment failed:\n{proc.stderr[-2000:]}")
    db_url = f"sqlite:///{course / 'gradebook.db'}"
    with Gradebook(db_url) as gb:
        assignment = gb.find_assignment(ASSIGNMENT)
        max_scores = {nb.name: nb.max_score for nb in assignment.notebooks}
    template = Path(tempfile.mkdtemp(prefix="grade-template-"))
    shutil.copy(course / "nbgrader_config.py", template)
    shutil.copytree(course / "solutions", template / "solutions")
    shutil.copy(course / "gradebook.db", template)

    results = []
    _progress(0, len(names), "")
    try:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = [pool.submit(grade_one, Student(n), course, template, expected, cell_timeout, memory_limit)
                       for n in names]
            for future in as_completed(futures):
                student = future.result()
                merge(student, course, db_url)  # in this thread only: one writer for the gradebook
                results.append(student)
                _progress(len(results), len(names), student.name)
    finally:
        shutil.rmtree(template, ignore_errors=True)
        print(file=sys.stderr)
    write_csv(course / "grades.csv", results, max_scores)
    return sorted(results, key=lambda s: s.name)


def report_line(student: Student, max_total: float) -> str:
    problems = "; ".join(student.problems) if student.problems else "ok"
    return f"{student.name}: {student.total:g}/{max_total:g} — {problems}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.grade", description=__doc__.split("\n\n")[0])
    parser.add_argument("--course", type=Path, default=Path("."), help="the course folder (default: .)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="students graded at once (default: cores)")
    parser.add_argument("--cell-timeout", type=int, default=120, help="seconds one cell may run (default: 120)")
    parser.add_argument("--memory-limit", type=_parse_bytes, default=_parse_bytes("6GiB"),
                        help="address space per student's grading, e.g. 6GiB (default)")
    parser.add_argument("--student", action="append", help="grade only this student (repeatable)")
    args = parser.parse_args(argv)
    if args.jobs < 1 or args.cell_timeout < 1:
        parser.error("--jobs and --cell-timeout must be positive")
    start = time.perf_counter()
    students = grade_class(args.course, args.jobs, args.cell_timeout, args.memory_limit, args.student)
    with Gradebook(f"sqlite:///{(args.course / 'gradebook.db').resolve()}") as gb:
        max_total = gb.find_assignment(ASSIGNMENT).max_score
    for s in students:
        print(report_line(s, max_total))
    print(f"graded {len(students)} students in {time.perf_counter() - start:.0f} s with {args.jobs} jobs; "
          f"grades.csv, feedback/ and autograded/ written", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
