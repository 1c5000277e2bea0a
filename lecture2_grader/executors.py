"""Where judges run. An executor takes a judge's job (plain data, pipeline.Job.judge) and returns a future of
its results (plain data); the class grader (cli.py) does everything else in its own process: the results
store, scores, feedback, the gradebook, grades.csv and the class report. So a score is the same whichever
executor computed it.

    LocalExecutor(runtime, jobs)     this machine: `jobs` judges at once, each with its own sandboxed student process
"""
from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

from . import pipeline


class LocalExecutor:
    """Judges on this machine, `jobs` at a time (each a child of the fork server, or a fresh process)."""

    name = "this machine"

    def __init__(self, runtime: pipeline.Runtime, jobs: int = 1):
        self.runtime, self.jobs = runtime, jobs
        self._pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="judge")

    def describe(self) -> str:
        return f"{self.jobs} job{'s' if self.jobs != 1 else ''} on this machine"

    def submit(self, judge_job: dict) -> Future:
        return self._pool.submit(pipeline.execute, judge_job, self.runtime)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
