"""The class grader on Slurm, as docs/cluster.md's recipe has it: a cluster named in nbgrader_config.py, its
workers started by dask-jobqueue as Slurm jobs, each grading in its own bubblewrap sandbox inside its job.

A one-node Slurm (tests/slurm.py: munged, slurmctld and slurmd started here, as root, and stopped by their PIDs)
grades a class of two students on notebook 01. Needs root, Debian's slurm-wlm and munge (.ci/run installs them
and sets LECTURE2_SLURM_REQUIRED, so that CI fails instead of skipping).
"""
from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import threading
import time

import pytest

import slurm
import submissions as sub
from conftest import ROOT
from test_grade_class import BITS, NB1, TB, make_course, one

pytestmark = pytest.mark.slow
MISSING = slurm.missing() or (None if shutil.which("bwrap") else "bubblewrap is not installed")
if MISSING and not os.environ.get("LECTURE2_SLURM_REQUIRED"):
    pytest.skip(MISSING, allow_module_level=True)

CLUSTER = """
# The recipe of docs/cluster.md, sized for a test: two Slurm jobs of one core, one worker each.
c.Lecture2Grader.clusters = {{
    "hpc": {{
        "kind": "slurm", "jobs": 2, "cores": 1, "processes": 1, "memory": "3GB", "walltime": "00:20:00",
        "python": {python!r}, "interface": "lo", "local_directory": {local!r}, "log_directory": {logs!r},
        "first_worker_timeout": 300,
    }},
}}
"""


def test_a_class_is_graded_on_slurm_workers_started_by_dask_jobqueue(tmp_path):
    """Do two Slurm jobs become Dask workers that pass their check (their sandbox works inside the job) and
    grade the class with the scores it earns, and are the jobs gone afterwards?"""
    course = tmp_path / "course"
    course.mkdir()
    make_course(course, [NB1], {"correct": one(sub.filled(NB1), 7), "planted-mistake": one(sub.filled(NB1, **{TB: BITS}), 5)})
    logs = tmp_path / "logs"
    with (course / "nbgrader_config.py").open("a") as f:
        f.write(CLUSTER.format(python=sys.executable, local=str(tmp_path / "dask"), logs=str(logs)))
    with slurm.OneNodeSlurm(cpus=2, memory_mb=8192) as cluster:
        seen: set[str] = set()
        done = threading.Event()

        def watch_jobs():
            while not done.is_set():
                seen.update(cluster.jobs())
                time.sleep(0.5)

        watcher = threading.Thread(target=watch_jobs, daemon=True)
        watcher.start()
        try:
            graded = subprocess.run([sys.executable, "-m", "lecture2_grader", "--course", str(course), "--cluster", "hpc",
                                     "--cell-timeout", "60", "--memory-limit", "2GiB"], cwd=ROOT, env=cluster.env,
                                    capture_output=True, text=True, timeout=900)
        finally:
            done.set()
            watcher.join(5)
        deadline = time.monotonic() + 60
        while cluster.jobs() and time.monotonic() < deadline:
            time.sleep(0.5)
        left = cluster.jobs()
    assert graded.returncode == 0, graded.stderr[-4000:]
    totals = {r["student"]: r["total"] for r in csv.DictReader((course / "grades.csv").open(encoding="utf-8"))}
    assert totals == {"correct": "5", "planted-mistake": "3"}
    assert len(seen) >= 2, f"the workers were not Slurm jobs: {seen}"
    assert "grading on 2 Dask workers" in graded.stderr and "workers' sandboxes:" in graded.stderr, graded.stderr[-3000:]
    assert not left, f"Slurm jobs left after grading: {left}"
    worker_logs = "".join(p.read_text(errors="replace") for p in logs.glob("*.err"))
    assert "Starting Worker plugin lecture2-grader-" in worker_logs, worker_logs[-2000:]
