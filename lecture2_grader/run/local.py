"""This machine's executor: `jobs` notebooks judged at once, each by a judge launch.run starts in a thread of a pool.

One more judge than `jobs` is started: it starts its own student's process (a fresh interpreter importing torch,
most of a notebook's fixed cost) while the others judge, then waits for a slot (launch.run's `slot`)."""
from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

from .. import pipeline
from ..judging import launch
from ..runtime import Runtime
from . import preflight


class LocalExecutor:
    """Judges on this machine, `jobs` at a time (each a child of the fork server, or a fresh process)."""

    name = "this machine"

    def __init__(self, runtime: Runtime, jobs: int = 1):
        self.runtime, self.jobs = runtime, jobs
        self._pool = ThreadPoolExecutor(max_workers=jobs + 1, thread_name_prefix="judge")
        self._slots = threading.BoundedSemaphore(jobs)
        self._threads: set[int] = set()
        self._boxes: dict[Future, list[float]] = {}
        self._lock = threading.Lock()
        self._notes: list[str] | None = None

    def describe(self) -> str:
        return f"{self.jobs} job{'s' if self.jobs != 1 else ''} on this machine"

    def warm(self, notebooks: list[str]) -> None:
        """Choose what the judges' fork server imports (torch, the checks and what `notebooks` need: the first
        launch.context call of the process chooses), and start it in a thread, beside the run's other fixed costs."""
        launch.context(notebooks)
        threading.Thread(target=launch.warm, args=(self.runtime,), name="warm", daemon=True).start()

    def preflight(self) -> list[str]:
        """preflight.preflight once for this executor's runtime (a --watch session checks once)."""
        if self._notes is None:
            self._notes = preflight.preflight(self.runtime)
        return list(self._notes)

    def _run(self, judge_job: dict, box: list) -> dict:
        ident = threading.get_ident()
        with self._lock:
            self._threads.add(ident)
        started: list[float] = []
        try:
            return pipeline.execute(judge_job, self.runtime, slot=self._slots, started=started)
        finally:
            box.append(time.perf_counter() - (started[0] if started else time.perf_counter()))
            with self._lock:
                self._threads.discard(ident)

    def submit(self, judge_job: dict, label: str | None = None) -> Future:
        box: list[float] = []  # filled before the future's result is set
        future = self._pool.submit(self._run, judge_job, box)
        with self._lock:
            self._boxes[future] = box
        return future

    def timing(self, future: Future) -> dict | None:
        with self._lock:
            box = self._boxes.get(future)
        return {"seconds": box[0], "worker": "this machine"} if box else None

    def stop(self) -> None:
        with self._lock:
            threads = set(self._threads)
        self._pool.shutdown(wait=False, cancel_futures=True)
        launch.stop_running(threads)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
