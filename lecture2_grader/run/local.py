"""This machine's executor: `jobs` notebooks judged at once, each by a judge launch.run starts in a thread of a pool.

One more judge than `jobs` is started: it starts its own student's process (a fresh interpreter importing torch,
most of a notebook's fixed cost) while the others judge, then waits for a slot (launch.run's `slot`)."""
from __future__ import annotations

import shutil
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from ..judging import launch
from ..runtime import Runtime
from . import preflight


class LocalExecutor:
    """Judges on this machine, `jobs` at a time (each a child of the fork server, or a fresh process).

    It judges with its own copy of `runtime`, which it completes with what belongs to this machine: the lecture2
    package the sandboxes see, matplotlib's font cache (built once, on first need, and removed by close()) and
    whether the student's process reaches a GPU (its preflight says)."""

    name = "this machine"

    def __init__(self, runtime: Runtime, jobs: int = 1):
        self.runtime = replace(runtime, package=runtime.package or preflight.package_dir())
        self.jobs = jobs
        self._pool = ThreadPoolExecutor(max_workers=jobs + 1, thread_name_prefix="judge")
        self._slots = threading.BoundedSemaphore(jobs)
        self._threads: set[int] = set()
        self._boxes: dict[Future, list[float]] = {}
        self._lock = threading.Lock()
        self._notes: list[str] | None = None
        self._fonts_lock = threading.Lock()
        self._scratch: Path | None = None  # where this executor built the font cache

    def describe(self) -> str:
        return f"{self.jobs} job{'s' if self.jobs != 1 else ''} on this machine"

    def warm(self, notebooks: list[str]) -> None:
        """Choose what the judges' fork server imports (torch, the checks and what `notebooks` need: the first
        launch.context call of the process chooses), and start it in a thread, beside the run's other fixed costs."""
        launch.context(notebooks)
        threading.Thread(target=launch.warm, args=(self.runtime,), name="warm", daemon=True).start()
        threading.Thread(target=self._font_cache, name="fonts", daemon=True).start()

    def _font_cache(self) -> None:
        """The judges' font cache, built once (warm() starts it beside the fork server; the preflight and the first
        judge wait for it)."""
        with self._fonts_lock:
            if self.runtime.mpl_cache is None:
                self._scratch = Path(tempfile.mkdtemp(prefix="lecture2-grade-"))
                self.runtime.mpl_cache = preflight.font_cache(self._scratch)

    def preflight(self) -> list[str]:
        """preflight.preflight once for this executor's runtime (a --watch session checks once)."""
        self._font_cache()
        if self._notes is None:
            self._notes = preflight.preflight(self.runtime)
        return list(self._notes)

    def _run(self, judge_job: dict, box: list) -> dict:
        ident = threading.get_ident()
        with self._lock:
            self._threads.add(ident)
        started: list[float] = []
        try:
            self._font_cache()
            return launch.run(judge_job, self.runtime, slot=self._slots, started=started)
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
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
