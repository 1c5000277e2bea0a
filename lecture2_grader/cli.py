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

This module reads the command line; the class run is classrun.py, --watch is watch.py, where judges run is
lecture2_grader.run (this machine's pool, a Dask cluster, a cluster the course names). Ctrl-C stops after the
results already received are written (nothing is left half-written); the next run grades what is left.
"""
from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import threading
import time
from pathlib import Path

from . import gradebook, sandbox
from .classrun import grade_class
from .report import report_line
from .run.local import LocalExecutor
from .runtime import CELL_SECONDS, MEMORY_BYTES, NOTEBOOK_SECONDS, Runtime
from .watch import watch


def parse_bytes(text: str) -> int:
    """'6GiB', '3000MB', '512MiB' or a number of bytes."""
    match = re.fullmatch(r"\s*([\d.]+)\s*(GiB|MiB|GB|MB)?\s*", text)
    if not match:
        raise argparse.ArgumentTypeError(f"not a memory size: {text!r} (e.g. 4GiB, 3000MB)")
    scale = {"GiB": 2**30, "MiB": 2**20, "GB": 10**9, "MB": 10**6, None: 1}[match.group(2)]
    return int(float(match.group(1)) * scale)


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
    parser.add_argument("--cell-timeout", type=float, default=CELL_SECONDS,
                        help=f"seconds one cell may run (default: {CELL_SECONDS:g})")
    parser.add_argument("--notebook-timeout", type=float, default=NOTEBOOK_SECONDS,
                        help=f"hard wall-clock seconds for one notebook, all its processes killed after (default: "
                             f"{NOTEBOOK_SECONDS:g})")
    parser.add_argument("--memory-limit", type=parse_bytes, default=MEMORY_BYTES,
                        help=f"memory of one notebook's student process, e.g. 6GiB (default: {MEMORY_BYTES / 2**30:g}GiB)")
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
    elif not on_cluster:  # a cluster's workers prove their own sandbox (run/dask_worker.py)
        try:
            sandbox.check_available()
        except sandbox.SandboxUnavailable as err:
            raise SystemExit(f"error: {err}") from None
    runtime = Runtime.for_class(jobs, args.cell_timeout, args.notebook_timeout, args.memory_limit,
                                sandboxed=not args.unsafe_no_sandbox)
    stop = threading.Event()
    replaced = _stop_on_signals(stop)
    course = args.course.resolve()
    try:
        return _run(args, course, runtime, jobs, on_cluster, stop)
    finally:
        for sig, previous in replaced.items():
            signal.signal(sig, previous)


def _run(args, course: Path, runtime: Runtime, jobs: int, on_cluster: bool, stop: threading.Event) -> int:
    if on_cluster:
        from .run import clusters, dask

        executor = (dask.DaskExecutor(runtime, args.scheduler, stop=stop) if args.scheduler
                    else clusters.from_config(course, args.cluster, runtime, stop=stop))
    else:
        executor = LocalExecutor(runtime, jobs)
    start = time.perf_counter()
    try:
        if args.watch:
            watch(course, runtime, executor, stop, args.poll, args.student, args.notebook)
            print("stopped watching: grades.csv, feedback/ and autograded/ are whole; `make grade` picks up "
                  "from here", file=sys.stderr)
            return 0
        run = grade_class(course, runtime, args.student, jobs, args.notebook, args.regrade, executor=executor,
                          stop=stop)
        where = executor.describe()
    finally:
        executor.close()
    max_total = sum(gradebook.max_scores(course).values())
    for s in run.students:
        print(report_line(s, max_total))
    for note in run.notes:
        print(f"note: {note}", file=sys.stderr)
    confined = (("each worker's sandbox" if on_cluster else sandbox.confinement(runtime.limits))
                if runtime.sandboxed else "no sandbox")
    print(f"graded {len(run.students)} students in {time.perf_counter() - start:.0f} s on {where} ({confined}); "
          "grades.csv, feedback/ and autograded/ written", file=sys.stderr)
    return 130 if stop.is_set() else 0
