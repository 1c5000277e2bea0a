"""Where judges run: one small interface, whatever the place. An executor takes a judge's job (plain data,
pipeline.Job.judge) and returns a future of its results (plain data); the class run (classrun.py) does everything
else in its own process: the results store, scores, feedback, the gradebook, grades.csv and the class report. So a
score is the same whichever executor computed it.

    local.LocalExecutor(runtime, jobs)       this machine: `jobs` judges at once (launch.py starts each)
    dask.DaskExecutor(runtime, address)      a Dask cluster: one task per student notebook, on workers that proved
                                             they grade with this code and sandbox
    clusters.from_config(course, name, ...)  the Dask cluster a course names: Slurm (dask-jobqueue), Kubernetes
                                             (dask-kubernetes), a scheduler

The interface (`Executor`), as classrun.grade_class uses it:

    warm(notebooks)          at the start of a run, returning at once: get ready to judge these notebooks (this
                             machine: the judges' fork server starts, importing what they need once, and the font
                             cache is built)
    preflight() -> notes     before the first notebook: the sandbox works where judges run (SystemExit if not)
    submit(judge_job, label) -> Future of the results dict (label: "student/notebook", for the executor's logs)
    timing(future) -> {"seconds": how long the judge ran, ...} or None
    stop()                   Ctrl-C: cancel what has not started, stop the judges running (their results are
                             discarded; those notebooks are graded again next time)
    describe() -> str, close()
"""
from __future__ import annotations

from concurrent.futures import Future
from typing import Protocol


class Executor(Protocol):
    def describe(self) -> str: ...

    def warm(self, notebooks: list[str]) -> None: ...

    def preflight(self) -> list[str]: ...

    def submit(self, judge_job: dict, label: str | None = None) -> Future: ...

    def timing(self, future: Future) -> dict | None: ...

    def stop(self) -> None: ...

    def close(self) -> None: ...
