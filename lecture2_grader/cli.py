"""`make grade`: grade every submission under submitted/, several notebooks at once, one file never stopping the class.

    .venv/bin/python -m lecture2_grader                  # what `make grade` runs
    .venv/bin/python -m lecture2_grader --jobs 4 --cell-timeout 120 --notebook-timeout 600 --memory-limit 6GiB
    .venv/bin/python -m lecture2_grader --student alice  # grade one student again; grades.csv still lists all
    .venv/bin/python -m lecture2_grader --student bob --notebook 09   # bob's late notebook 09 only
    .venv/bin/python -m lecture2_grader --regrade        # run every notebook again (after changing the checks,
                                                         # the stored results are stale anyway)

For each student and notebook, the pipeline (lecture2_grader.pipeline): prepare (read, scan, plan), execute (the
judge and the student's sandboxed process, on an executor), finish (points); then the autograded notebook and
feedback; one student at a time, the gradebook and grades.csv; at the end the class report and one line per
student. A notebook is executed only when its submitted file, its instructor notebook or the grading code
changed since its stored result (store.py). Every stage of every notebook is guarded: a file or a run that
breaks something costs that notebook only.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from . import ASSIGNMENT, artifacts, classreport, executors, gradebook, pipeline, sandbox, store
from .course import Notebook, load_course, tree_digest
from .report import Student, report_line
from .score import NotebookResult
from .text import terminal

STUDENT_NAME = re.compile(r"[A-Za-z0-9_.@+-]{1,100}")


def parse_bytes(text: str) -> int:
    """'6GiB', '3000MB', '512MiB' or a number of bytes."""
    match = re.fullmatch(r"\s*([\d.]+)\s*(GiB|MiB|GB|MB)?\s*", text)
    if not match:
        raise argparse.ArgumentTypeError(f"not a memory size: {text!r} (e.g. 4GiB, 3000MB)")
    scale = {"GiB": 2**30, "MiB": 2**20, "GB": 10**9, "MB": 10**6, None: 1}[match.group(2)]
    return int(float(match.group(1)) * scale)


def _progress(done: int, total: int, name: str, width: int = 30) -> None:
    if not sys.stderr.isatty():
        return
    filled = width * done // max(total, 1)
    print(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {name:<40}", end="", file=sys.stderr, flush=True)


def _guarded(stage: str, student: str, nb: Notebook, record: Student, fn, *args):
    """fn(*args); an exception becomes one problem line for this student's notebook (and None)."""
    try:
        return fn(*args)
    except Exception as err:  # noqa: BLE001  a grader bug must cost one notebook, not the class
        record.problems.append(f"{nb.stem}: the grader failed at {stage} ({type(err).__name__}: {err}); "
                               "this notebook scores 0 until it is graded again")
        if os.environ.get("LECTURE2_GRADER_DEBUG"):
            traceback.print_exc()
        return None


def students_of(submitted: Path, only: list[str] | None) -> tuple[list[str], list[str]]:
    """The student folders to grade, and a note for each folder whose name the grader does not accept."""
    from .text import terminal

    names = only or sorted(p.name for p in submitted.iterdir() if p.is_dir() and not p.name.startswith("."))
    bad = [n for n in names if not STUDENT_NAME.fullmatch(n)]
    notes = [f"submitted/{terminal(b, 80)}/ not graded: a student folder's name must be letters, digits and _.@+- "
             "(rename it, then grade again)" for b in bad]
    return [n for n in names if n not in bad], notes


def grade_class(course: Path, runtime: pipeline.Runtime, students: list[str] | None = None, jobs: int = 1,
                notebooks: list[str] | None = None, regrade: bool = False, executor=None) -> tuple[list[Student], list[str]]:
    """Grade every student under course/submitted (or only `students`, only the notebooks `notebooks`);
    returns them and notes for the report. A notebook whose stored result has the same key (store.py) is not
    run again unless `regrade`. `executor` runs the judges (default: a LocalExecutor of `jobs`)."""
    course = course.resolve()
    submitted = course / "submitted"
    if not (course / "nbgrader_config.py").is_file():
        raise SystemExit(f"error: {course} is not the course folder (no nbgrader_config.py)")
    if not submitted.is_dir():
        raise SystemExit(f"error: no submissions: {submitted} does not exist. Put each student's notebooks in "
                         f"submitted/<student>/{ASSIGNMENT}/")
    names, skipped = students_of(submitted, students)
    if not names and not skipped:
        raise SystemExit(f"error: {submitted} holds no student folder")
    every = load_course(course)
    chosen = select_notebooks(every, notebooks)
    results_store = store.Store(course)
    scratch = Path(tempfile.mkdtemp(prefix="lecture2-grade-"))
    own_executor = executor is None
    try:
        runtime.package = pipeline.package_dir()
        runtime.mpl_cache = pipeline.font_cache(scratch)
        notes = skipped
        gradebook.register(course, {nb.stem: {t.grade_id: t.points for t in nb.tests} for nb in every.values()})
        code_digest = tree_digest(runtime.package) + tree_digest(pipeline.GRADER)
        records = {n: Student(n) for n in names}
        planned: dict[str, list[tuple[Notebook, pipeline.Job]]] = {n: [] for n in names}
        for n in names:
            folder = submitted / n / ASSIGNMENT
            if not folder.is_dir():
                records[n].problems.append(f"no {ASSIGNMENT}/ folder: every notebook missing")
                continue
            unexpected = sorted(p.name for p in folder.iterdir()
                                if p.name not in every and not p.name.startswith(".") and p.name != "timestamp.txt")
            if unexpected:
                records[n].problems.append(f"unexpected files ignored: {', '.join(terminal(u, 80) for u in unexpected[:5])}")
            for name, nb in chosen.items():
                job = _guarded("reading", n, nb, records[n], pipeline.prepare, n, folder / name, nb, runtime, code_digest)
                if job is not None:
                    planned[n].append((nb, job))
        pending = {n: len(j) for n, j in planned.items()}
        finished: dict[str, dict[str, NotebookResult]] = {n: {} for n in names}
        total = sum(pending.values())
        results: list[Student] = []
        reused = 0

        def complete(nb: Notebook, job: pipeline.Job, judged: dict | None, seconds: float) -> None:
            record = records[job.student]
            result = _guarded("scoring", job.student, nb, record, pipeline.finish, job, judged, nb)
            if result is not None:
                _guarded("writing feedback", job.student, nb, record, artifacts.write, course, nb, job, judged, result)
                finished[job.student][nb.stem] = result
            record.seconds += seconds
            pending[job.student] -= 1
            if pending[job.student] == 0:
                merge(job.student)  # in this thread only: one writer for the gradebook

        def merge(name: str) -> None:
            record = records[name]
            for stem, result in sorted(finished[name].items()):
                record.problems += [f"{stem}: {p}" for p in result.problems]
            try:
                record.scores = gradebook.merge(course, name, finished[name])
            except Exception as err:  # noqa: BLE001
                record.problems.append(f"the gradebook could not be written for this student ({type(err).__name__}: {err})")
            results.append(record)

        for n in names:
            if pending[n] == 0:
                merge(n)
        to_run = []
        for n in names:
            for nb, job in planned[n]:
                stored = None if regrade or job.judge is None else results_store.get(n, nb.stem, job.digest)
                if job.judge is None or stored is not None:
                    reused += stored is not None
                    complete(nb, job, stored, 0.0)
                else:
                    to_run.append((nb, job))
        if to_run:
            notes = notes + pipeline.preflight(runtime)
            executor = executor or executors.LocalExecutor(runtime, jobs)
            done = 0
            _progress(0, len(to_run), "")
            futures = {}
            for nb, job in to_run:
                futures[executor.submit(job.judge)] = (nb, job, time.perf_counter())
            for future in as_completed(futures):
                nb, job, started = futures[future]
                seconds = time.perf_counter() - started
                try:
                    judged = future.result()
                except Exception as err:  # noqa: BLE001  the executor lost it: this notebook only
                    judged = {"error": f"the grader could not run this notebook ({type(err).__name__}: {err})"}
                if isinstance(judged, dict) and "error" not in judged:
                    _guarded("storing the result", job.student, nb, records[job.student], results_store.put,
                             job.student, nb.stem, job.digest, judged, seconds)
                complete(nb, job, judged, seconds)
                done += 1
                _progress(done, len(to_run), f"{job.student}/{nb.stem}")
            if sys.stderr.isatty():
                print(file=sys.stderr)
        if reused:
            notes.append(f"{reused} of {total} notebooks unchanged since they were last graded: their stored results "
                         "were used (--regrade runs them again)")
    finally:
        if own_executor and executor is not None:
            executor.close()
        shutil.rmtree(scratch, ignore_errors=True)
    gradebook.write_csv(course)
    classreport.write(course, gradebook.students(course), gradebook.max_scores(course))
    return sorted(results, key=lambda s: s.name), notes


def select_notebooks(every: dict[str, Notebook], wanted: list[str] | None) -> dict[str, Notebook]:
    """The notebooks `wanted` names (file names, stems or their leading numbers: "05", "05_flops"), or all."""
    if not wanted:
        return every
    chosen = {}
    for want in wanted:
        stem = want.removesuffix(".ipynb")
        matches = [name for name in every if name.removesuffix(".ipynb") == stem or name.startswith(f"{stem}_")]
        if len(matches) != 1:
            raise SystemExit(f"error: --notebook {terminal(want, 60)} names {'no' if not matches else 'more than one'} "
                             f"notebook of {', '.join(n.removesuffix('.ipynb') for n in every)}")
        chosen[matches[0]] = every[matches[0]]
    return chosen


def make_runtime(jobs: int = 1, cell_timeout: float = 120, notebook_timeout: float = 600,
                 memory: int | None = 6 * 2**30, sandboxed: bool = True) -> pipeline.Runtime:
    """The settings of a grading run with `jobs` notebooks at once: each gets cores / jobs threads."""
    return pipeline.Runtime(cell_timeout=cell_timeout, notebook_timeout=notebook_timeout,
                            limits=sandbox.Limits(memory=memory), sandboxed=sandboxed,
                            threads=max(1, (os.cpu_count() or 1) // jobs))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lecture2_grader", description=__doc__.split("\n\n")[0])
    parser.add_argument("--course", type=Path, default=Path("."), help="the course folder (default: .)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="notebooks graded at once, each in its own sandbox (default: the number of cores)")
    parser.add_argument("--cell-timeout", type=float, default=120, help="seconds one cell may run (default: 120)")
    parser.add_argument("--notebook-timeout", type=float, default=600,
                        help="hard wall-clock seconds for one notebook, all its processes killed after (default: 600)")
    parser.add_argument("--memory-limit", type=parse_bytes, default=parse_bytes("6GiB"),
                        help="memory of one notebook's student process, e.g. 6GiB (default)")
    parser.add_argument("--student", action="append", help="grade only this student (repeatable)")
    parser.add_argument("--notebook", action="append", metavar="NAME",
                        help="grade only this notebook (05, 05_flops or 05_flops.ipynb; repeatable)")
    parser.add_argument("--regrade", action="store_true",
                        help="run every notebook again, even those whose stored result is current")
    parser.add_argument("--unsafe-no-sandbox", action="store_true",
                        help="run students' code without bubblewrap: only for submissions you trust")
    args = parser.parse_args(argv)
    if args.jobs < 1 or args.cell_timeout <= 0 or args.notebook_timeout <= 0:
        parser.error("--jobs, --cell-timeout and --notebook-timeout must be positive")
    if args.memory_limit < 2**30:
        parser.error("--memory-limit below 1GiB: PyTorch alone needs more")
    if args.unsafe_no_sandbox:
        print("warning: --unsafe-no-sandbox: students' code runs with your permissions", file=sys.stderr)
    else:
        try:
            sandbox.check_available()
        except sandbox.SandboxUnavailable as err:
            raise SystemExit(f"error: {err}") from None
    runtime = make_runtime(args.jobs, args.cell_timeout, args.notebook_timeout, args.memory_limit,
                           sandboxed=not args.unsafe_no_sandbox)
    limits = runtime.limits
    start = time.perf_counter()
    students, notes = grade_class(args.course, runtime, args.student, args.jobs, args.notebook, args.regrade)
    max_total = sum(gradebook.max_scores(args.course.resolve()).values())
    for s in students:
        print(report_line(s, max_total))
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    print(f"graded {len(students)} students in {time.perf_counter() - start:.0f} s with {args.jobs} jobs "
          f"({sandbox.confinement(limits) if runtime.sandboxed else 'no sandbox'}); "
          "grades.csv, feedback/ and autograded/ written", file=sys.stderr)
    return 0
