"""`make grade`: grade every submission under submitted/, several notebooks at once, one file never stopping the class.

    .venv/bin/python -m lecture2_grader                  # what `make grade` runs
    .venv/bin/python -m lecture2_grader --jobs 4 --cell-timeout 120 --notebook-timeout 600 --memory-limit 6GiB
    .venv/bin/python -m lecture2_grader --student alice  # grade one student again; grades.csv still lists all
    .venv/bin/python -m lecture2_grader --student bob --notebook 09   # bob's late notebook 09 only
    .venv/bin/python -m lecture2_grader --regrade        # run every notebook again (after changing the checks,
                                                         # the stored results are stale anyway)
    .venv/bin/python -m lecture2_grader --scheduler tcp://HOST:8786   # on a Dask cluster (docs/cluster.md)
    .venv/bin/python -m lecture2_grader --cluster hpc    # on the cluster `hpc` of nbgrader_config.py
    .venv/bin/python -m lecture2_grader --watch          # grade each submission as it arrives; Ctrl-C stops

For each student and notebook, the pipeline (lecture2_grader.pipeline): prepare (read, scan, plan), execute (the
judge and the student's sandboxed process, on an executor: this machine's pool or a Dask cluster), finish
(points); then the autograded notebook and feedback; one student at a time, the gradebook and grades.csv; at the
end the class report and one line per student. A notebook is executed only when its submitted file, its
instructor notebook or the grading code changed since its stored result (store.py). Every stage of every
notebook is guarded: a file or a run that breaks something costs that notebook only. Ctrl-C stops after the
results already received are written (nothing is left half-written); the next run grades what is left.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, wait
from pathlib import Path

from . import ASSIGNMENT, artifacts, classreport, executors, gradebook, pipeline, sandbox, store
from .course import Notebook, load_course
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
                notebooks: list[str] | None = None, regrade: bool = False, executor=None,
                stop: threading.Event | None = None) -> tuple[list[Student], list[str]]:
    """Grade every student under course/submitted (or only `students`, only the notebooks `notebooks`);
    returns them and notes for the report. A notebook whose stored result has the same key (store.py) is not
    run again unless `regrade`. `executor` runs the judges (default: a LocalExecutor of `jobs`; executors.py).
    When `stop` is set (Ctrl-C), the notebooks not judged yet are left for the next run: every result received
    is stored and written, every file whole."""
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
        code_digest = pipeline.code_digest(runtime.package)
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
        blank: dict[str, list[str]] = {n: [] for n in names}  # notebooks handed in as released
        total = sum(pending.values())
        results: list[Student] = []
        reused = 0

        def complete(nb: Notebook, job: pipeline.Job, judged: dict | None, seconds: float) -> None:
            record = records[job.student]
            result = _guarded("scoring", job.student, nb, record, pipeline.finish, job, judged, nb)
            if result is not None:
                _guarded("writing feedback", job.student, nb, record, artifacts.write, course, nb, job, judged, result)
                finished[job.student][nb.stem] = result
                if _guarded("reading", job.student, nb, record, artifacts.state, course, nb, job) == "blank":
                    blank[job.student].append(nb.stem)
            record.seconds += seconds
            pending[job.student] -= 1
            if pending[job.student] == 0:
                merge(job.student)  # in this thread only: one writer for the gradebook

        def merge(name: str) -> None:
            record = records[name]
            for stem, result in sorted(finished[name].items()):
                record.problems += [f"{stem}: {p}" for p in result.problems]
            if blank[name]:  # not a fault, but not "ok" either: the instructor sees it in the line
                record.problems.append("blank (nothing attempted): " + ", ".join(sorted(blank[name])))
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
        if to_run and not (stop is not None and stop.is_set()):
            executor = executor or executors.LocalExecutor(runtime, jobs)
            notes = notes + (executor.preflight() if hasattr(executor, "preflight") else pipeline.preflight(runtime))
            done = 0
            _progress(0, len(to_run), "")
            futures = {}
            for nb, job in to_run:
                futures[executor.submit(job.judge, label=f"{job.student}/{nb.stem}")] = (nb, job, time.perf_counter())
            waiting = set(futures)
            while waiting:
                finished_now, waiting = wait(waiting, timeout=0.5, return_when=FIRST_COMPLETED)
                for future in finished_now:
                    nb, job, started = futures[future]
                    timing = executor.timing(future) if hasattr(executor, "timing") else None
                    seconds = timing["seconds"] if timing else time.perf_counter() - started
                    try:
                        judged = future.result()
                    except Exception as err:  # noqa: BLE001  the executor lost it: this notebook only, not stored
                        judged = {"error": f"the grader could not run this notebook ({type(err).__name__}: {err})",
                                  "cause": "lost"}
                    if isinstance(judged, dict) and judged.get("cause") != "lost":  # its outcome, whatever it is
                        _guarded("storing the result", job.student, nb, records[job.student], results_store.put,
                                 job.student, nb.stem, job.digest, judged, seconds)
                    complete(nb, job, judged, seconds)
                    done += 1
                    _progress(done, len(to_run), f"{job.student}/{nb.stem}")
                if waiting and stop is not None and stop.is_set():
                    if hasattr(executor, "stop"):
                        executor.stop()
                    interrupted = len(waiting)
                    for n in names:  # what each student has, in the gradebook; the rest stays as it was
                        if 0 < pending[n] and finished[n]:
                            merge(n)
                    notes.append(f"stopped: {interrupted} notebook{'s' if interrupted != 1 else ''} not graded this "
                                 "time (the gradebook keeps their earlier scores); the next run grades them")
                    break
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


def fingerprint(submitted: Path, names: list[str]) -> dict[str, tuple]:
    """What --watch compares between two looks: each student folder's files (name, size, modification time)."""
    seen = {}
    for name in names:
        folder = submitted / name / ASSIGNMENT
        try:
            seen[name] = tuple(sorted((p.name, st.st_size, st.st_mtime_ns) for p in folder.iterdir()
                                      for st in [p.lstat()]))
        except OSError:
            seen[name] = ()
    return seen


def watch(course: Path, runtime: pipeline.Runtime, executor, stop: threading.Event, poll: float = 10.0,
          students: list[str] | None = None, notebooks: list[str] | None = None, out=None) -> int:
    """Grade the class, then every student whose submitted files are new or changed, `poll` seconds apart,
    until `stop` is set. A folder is graded once its files have stayed the same for one look (an upload or an
    unzip still under way is not graded half-copied). Rounds reuse `executor`, and the store makes each round
    cost only what changed. Returns the number of rounds graded."""
    out = out or (lambda line: print(line, flush=True))
    course = course.resolve()
    submitted = course / "submitted"
    graded: dict[str, tuple] = {}
    previous: dict[str, tuple] | None = None
    rounds, said = 0, set()
    out(f"watching {submitted} every {poll:g} s on {executor.describe()} (Ctrl-C stops)")
    while not stop.is_set():
        names = students or (sorted(p.name for p in submitted.iterdir() if p.is_dir() and not p.name.startswith("."))
                             if submitted.is_dir() else [])
        now = fingerprint(submitted, names)
        changed = [n for n in names if graded.get(n) != now[n] and (previous is None or previous.get(n) == now[n])]
        if changed:
            start = time.perf_counter()
            done, notes = grade_class(course, runtime, changed, notebooks=notebooks, executor=executor, stop=stop)
            max_total = sum(gradebook.max_scores(course).values())
            for record in done:
                out(report_line(record, max_total))
            for note in notes:
                if note not in said:  # a note of the executor's (its sandboxes, a refused worker) once a session
                    said.add(note)
                    print(f"note: {note}", file=sys.stderr, flush=True)
            if not stop.is_set():
                graded.update({n: now[n] for n in changed})
            rounds += 1
            out(f"{time.strftime('%H:%M:%S')} graded {len(done)} student{'s' if len(done) != 1 else ''} in "
                f"{time.perf_counter() - start:.0f} s; grades.csv and feedback/ are current")
        previous = now
        stop.wait(poll)
    return rounds


def _stop_on_signals(stop: threading.Event) -> dict:
    """Ctrl-C (or SIGTERM) sets `stop`: the grader finishes writing what it has received and stops. A second
    Ctrl-C stops at once. Returns the handlers it replaced (main() puts them back)."""
    if threading.current_thread() is not threading.main_thread():
        return {}

    def handler(signum, frame):
        if stop.is_set():
            signal.signal(signal.SIGINT, signal.default_int_handler)
            raise KeyboardInterrupt
        stop.set()
        print("\nstopping: the results received are written, the notebooks being graded are left for the next "
              "run (Ctrl-C again stops at once)", file=sys.stderr, flush=True)

    return {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lecture2_grader", description=__doc__.split("\n\n")[0])
    parser.add_argument("--course", type=Path, default=Path("."), help="the course folder (default: .)")
    parser.add_argument("--jobs", type=int, default=None,
                        help="notebooks graded at once on this machine, each in its own sandbox (default: the number "
                             "of cores; on a Dask cluster each worker's threads say it)")
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
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS",
                       help="grade on the Dask cluster of this scheduler (tcp://HOST:8786): one task per student "
                            "notebook, each worker's own sandbox; results come back here (docs/cluster.md)")
    where.add_argument("--cluster", metavar="NAME",
                       help="grade on the cluster NAME of the course's nbgrader_config.py (c.Lecture2Grader.clusters: "
                            "Slurm, Kubernetes, a scheduler; docs/cluster.md)")
    parser.add_argument("--watch", action="store_true",
                        help="keep grading: each new or changed submission under submitted/ within a minute; "
                             "Ctrl-C stops, with every file whole")
    parser.add_argument("--poll", type=float, default=10.0,
                        help="with --watch, seconds between two looks at submitted/ (default: 10)")
    parser.add_argument("--unsafe-no-sandbox", action="store_true",
                        help="run students' code without bubblewrap: only for submissions you trust")
    args = parser.parse_args(argv)
    jobs = args.jobs if args.jobs is not None else os.cpu_count() or 1
    if jobs < 1 or args.cell_timeout <= 0 or args.notebook_timeout <= 0 or args.poll <= 0:
        parser.error("--jobs, --cell-timeout, --notebook-timeout and --poll must be positive")
    if args.memory_limit < 2**30:
        parser.error("--memory-limit below 1GiB: PyTorch alone needs more")
    on_cluster = bool(args.scheduler or args.cluster)
    if args.unsafe_no_sandbox:
        print("warning: --unsafe-no-sandbox: students' code runs with your permissions", file=sys.stderr)
    elif not on_cluster:  # a cluster's workers prove their own sandbox (lecture2_grader.cluster)
        try:
            sandbox.check_available()
        except sandbox.SandboxUnavailable as err:
            raise SystemExit(f"error: {err}") from None
    runtime = make_runtime(jobs, args.cell_timeout, args.notebook_timeout, args.memory_limit,
                           sandboxed=not args.unsafe_no_sandbox)
    stop = threading.Event()
    replaced = _stop_on_signals(stop)
    course = args.course.resolve()
    try:
        return _run(args, course, runtime, jobs, on_cluster, stop)
    finally:
        for sig, previous in replaced.items():
            signal.signal(sig, previous)


def _run(args, course: Path, runtime: pipeline.Runtime, jobs: int, on_cluster: bool, stop: threading.Event) -> int:
    if on_cluster:
        from . import cluster

        executor = (cluster.DaskExecutor(runtime, args.scheduler, stop=stop) if args.scheduler
                    else cluster.from_config(course, args.cluster, runtime, stop=stop))
    else:
        executor = executors.LocalExecutor(runtime, jobs)
    start = time.perf_counter()
    try:
        if args.watch:
            watch(course, runtime, executor, stop, args.poll, args.student, args.notebook)
            print("stopped watching: grades.csv, feedback/ and autograded/ are whole; `make grade` picks up "
                  "from here", file=sys.stderr)
            return 0
        students, notes = grade_class(course, runtime, args.student, jobs, args.notebook, args.regrade,
                                      executor=executor, stop=stop)
        where = executor.describe()
    finally:
        executor.close()
    max_total = sum(gradebook.max_scores(course).values())
    for s in students:
        print(report_line(s, max_total))
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    confined = (("each worker's sandbox" if on_cluster else sandbox.confinement(runtime.limits))
                if runtime.sandboxed else "no sandbox")
    print(f"graded {len(students)} students in {time.perf_counter() - start:.0f} s on {where} ({confined}); "
          "grades.csv, feedback/ and autograded/ written", file=sys.stderr)
    return 130 if stop.is_set() else 0
