"""Grading on a Dask cluster, the instructor's side: one task per student notebook, the same pipeline and sandbox on
every worker.

    .venv/bin/python -m lecture2_grader --scheduler tcp://HOST:8786   # a Dask scheduler already running
    .venv/bin/python -m lecture2_grader --cluster hpc                 # a cluster named in nbgrader_config.py (clusters.py)

The instructor's process (classrun.py) reads and plans every notebook, sends each judge's job (plain data) to the
cluster and gets the judge's results back as data (JSON text); it alone writes the results store, the
gradebook, grades.csv, feedback and the class report. A worker only runs a judge (dask_worker.judge_task), with its
own sandbox, its own lecture2 and its own font cache, once it has proved that it grades as this machine would
(dask_worker.WorkerSetup), so a score is the one this machine would give.

    DaskExecutor   the executor (run/__init__.py): submit(judge_job) -> a Future of the results dict; it registers
                   this run's WorkerSetup, sends each notebook to a worker that passed, the longest first, and
                   watches the workers join, pass, refuse or go

Failures. A worker killed in the middle of a notebook loses its task: the scheduler runs it again on another
worker (up to distributed.scheduler.allowed-failures times), and the instructor's process gets one result for
it, so the notebook is graded once. A judge never outlives its worker (launch.die_with_parent). The
instructor's process killed: every result received is already in the results store (store.py), and the next
run sends only the notebooks without one.

Trust: workers are the instructor's machines, and the scheduler is reachable by anyone who can reach its port
(Dask runs what it is sent). Keep it on the cluster's own network, or give the cluster TLS (docs/cluster.md).
"""
from __future__ import annotations

import collections
import concurrent.futures
import hashlib
import json
import sys
import threading
import time
import uuid
from dataclasses import asdict

from distributed import Client

from ..runtime import FIRST_WORKER_SECONDS, SCHEDULER_SECONDS, STRANDED_SECONDS, Runtime
from .dask_worker import TOPIC, WorkerSetup, identity, judge_task, plugin_name, resource_of, stop_judges

WATCH_EVERY = 3.0  # seconds between two looks at the workers' reports while a run lasts


def _noop() -> float:
    return time.perf_counter()


def _place_waiting_tasks():
    """A function for client.run_on_scheduler (made here so that it travels by value: the scheduler need not have
    this package): tasks needing `resource` that waited for a worker ("no-worker") are placed again."""

    def place(resource: str, dask_scheduler=None) -> int:
        import time as _time

        keys = {ts.key: "waiting" for ts in list(dask_scheduler.unrunnable)
                if resource in (ts.resource_restrictions or {})}
        if keys:
            dask_scheduler.transitions(keys, stimulus_id=f"lecture2-worker-ready-{_time.time()}")
        return len(keys)

    return place


class DaskExecutor:
    """Judges on the workers of a Dask cluster, one task per student notebook (see the module's docstring).

    address: a scheduler's address (tcp://HOST:8786), or `cluster`: a Dask cluster object (SLURMCluster,
    KubeCluster, LocalCluster), closed with the executor. A worker judges as many notebooks at once as it has
    threads, each with `notebook_threads` threads (1: the basis of docs/cluster.md's figures; 0: the worker's
    cores / its threads). `first_worker_timeout`: seconds to wait for a worker to pass its check (Slurm jobs
    may queue). `stop`: an Event that the instructor's Ctrl-C sets."""

    def __init__(self, runtime: Runtime, address: str | None = None, *, cluster=None, name: str | None = None,
                 notebook_threads: int = 1, first_worker_timeout: float = FIRST_WORKER_SECONDS, stop: threading.Event | None = None):
        self.runtime, self.cluster, self.notebook_threads = runtime, cluster, notebook_threads
        self.first_worker_timeout, self.stopping = first_worker_timeout, stop or threading.Event()
        target = cluster if cluster is not None else address
        try:
            self.client = Client(target, timeout=f"{SCHEDULER_SECONDS:g}s", set_as_default=False)
        except (OSError, TimeoutError) as err:
            if cluster is not None:
                cluster.close()
            raise SystemExit(f"error: no Dask scheduler answers at {address or cluster} ({err}); start one "
                             "(`dask scheduler`) or check the address") from None
        self.address = self.client.scheduler.address
        self.name = name or self.address
        self.token = ""  # set by preflight(): hash of the identity and the settings
        self.notebooks: list[str] | None = None  # set by warm(): what the workers' fork servers import for
        self.expected: dict[str, str] | None = None
        self.ready: dict[str, dict] = {}  # worker address -> its passing event
        self.refused: dict[str, str] = {}  # worker address -> why
        self._lock = threading.Lock()
        self._futures: dict[concurrent.futures.Future, object] = {}  # ours -> Dask's (kept until done)
        self._timings: dict[concurrent.futures.Future, dict] = {}
        self._queued: dict[str, collections.deque] = {}  # notebook stem -> (ours, job, label) not sent yet
        self._waiting: dict[concurrent.futures.Future, None] = {}  # ours, queued
        self._expected: dict[str, tuple[float, int]] = {}  # notebook stem -> (mean judge seconds, results)
        self.completed: list[dict] = []  # one timing per notebook judged, in the order they came back
        self._printed: set[str] = set()
        self._names: dict[str, str] = {}
        self._registered = False
        self._preflight_lock = threading.RLock()
        self._closed = threading.Event()

    def describe(self) -> str:
        slots = sum(int(e.get("slots", 1)) for e in self.ready.values())
        return (f"{len(self.ready)} Dask worker{'s' if len(self.ready) != 1 else ''} ({slots} notebooks at once) "
                f"of {self.name}")

    # -- the workers' checks

    def settings(self) -> dict:
        rt = self.runtime
        return {"cell_timeout": rt.cell_timeout, "notebook_timeout": rt.notebook_timeout, "limits": asdict(rt.limits),
                "sandboxed": rt.sandboxed, "forkserver": rt.forkserver, "threads": self.notebook_threads}

    def _present(self) -> set[str]:
        return set(self.client.scheduler_info(n_workers=-1)["workers"])

    def _events(self, present: set[str] | None = None) -> bool:
        """Read the workers' reports on this run's token from the scheduler's event log (the caller holds the
        lock); True when a worker became ready since the last read."""
        new = False
        for _, msg in self.client.get_events(TOPIC):
            if not isinstance(msg, dict) or msg.get("token") != self.token:
                continue
            worker = str(msg.get("worker"))
            self._names[worker] = str(msg.get("name") or "")
            if msg.get("ok"):
                new = new or worker not in self.ready
                self.ready[worker] = msg
                self.refused.pop(worker, None)
            else:
                self.ready.pop(worker, None)
                self.refused[worker] = str(msg.get("why"))
        if present is not None:  # workers gone (stopped, killed, their jobs ended) are no one's concern now
            for gone in set(self.ready) - present:
                self.ready.pop(gone)
            for gone in set(self.refused) - present:
                self.refused.pop(gone)
        for worker in sorted(self.refused):
            line = self.refusal_line(worker)
            if line not in self._printed:
                self._printed.add(line)
                print(f"note: {line}", file=sys.stderr, flush=True)
        return new

    def _watch(self) -> None:
        """While the run lasts: every few seconds, the workers' reports (a worker that joins and passes, or
        refuses, is seen) and, when one became ready, the tasks that waited for a worker are placed again (Dask
        does not look at them again when a worker's resources change). When no worker can take the run's
        notebooks any more (every one refused, e.g. its files changed under it), the notebooks still waiting
        fail with the workers' reasons instead of waiting for ever."""
        stranded_since = None
        while not self._closed.wait(WATCH_EVERY):
            try:
                present = self._present()
                with self._lock:
                    became_ready = self._events(present)
                    stranded = bool(self._futures or self._waiting) and not self.ready and (
                        bool(present) and set(self.refused) >= present or not present)
                if became_ready:
                    self.client.run_on_scheduler(_place_waiting_tasks(), resource_of(self.token))
                    self._pump()  # a larger window
                stranded_since = (stranded_since or time.monotonic()) if stranded else None
                grace = STRANDED_SECONDS if present else self.first_worker_timeout
                if stranded_since is not None and time.monotonic() - stranded_since > grace:
                    self._fail_waiting()
                    stranded_since = None
            except Exception:  # noqa: BLE001  the cluster going away: close() follows
                if self._closed.is_set():
                    return

    def _fail_waiting(self) -> None:
        with self._lock:
            waiting = {**dict.fromkeys(self._waiting), **self._futures}
            why = "; ".join(self.refusal_line(w) for w in sorted(self.refused)) or "no worker is connected"
        error = RuntimeError(f"no worker of {self.name} can grade it now ({why})")
        for ours in waiting:
            if not ours.done():
                ours.set_exception(error)
        try:
            self.client.cancel([f for f in waiting.values() if f is not None], force=True)
        except Exception:  # noqa: BLE001
            pass

    def refusal_line(self, worker: str) -> str:
        name = self._names.get(worker)
        return f"Dask worker {name + ' at ' if name and name != worker else ''}{worker} takes no notebooks: {self.refused[worker]}"

    def warm(self, notebooks: list[str]) -> None:
        """The notebooks the workers' fork servers import for (each worker warms its own when it proves itself:
        WorkerSetup); without this call, any notebook's."""
        self.notebooks = list(notebooks)

    def preflight(self) -> list[str]:
        """Send this run's check to every worker and wait until one passed (all of them, if they are there
        already). Returns notes for the report; SystemExit when no worker can grade."""
        with self._preflight_lock:  # one check of the workers, whoever asks first (submit() asks too)
            return self._preflight()

    def _preflight(self) -> list[str]:
        if not self._registered:
            self.expected = identity(self.runtime.package)
            settings = self.settings()
            self.token = hashlib.sha256(json.dumps([self.expected, settings], sort_keys=True).encode()).hexdigest()[:12]
            self.client.register_plugin(WorkerSetup(self.token, self.expected, settings, self.notebooks), name=plugin_name(self.token))
            self._registered = True
            self._watcher = threading.Thread(target=self._watch, name="lecture2-workers", daemon=True)
            self._watcher.start()
        started = time.monotonic()
        while True:
            present = self._present()
            with self._lock:
                self._events(present)
                waiting = present - set(self.ready) - set(self.refused)
            if self.ready and not waiting:
                self.client.run_on_scheduler(_place_waiting_tasks(), resource_of(self.token))
                break
            if present and not waiting and not self.ready:
                raise SystemExit("error: no worker of the Dask cluster can grade:\n" + "\n".join(
                    f"  {self.refusal_line(w)}" for w in sorted(self.refused)))
            if self.stopping.is_set():
                raise SystemExit("stopped before the first notebook was graded")
            if time.monotonic() - started > self.first_worker_timeout:
                if self.ready:
                    break  # the others are still getting ready: they join when they pass
                raise SystemExit(f"error: no Dask worker of {self.name} passed its check within "
                                 f"{self.first_worker_timeout:g} s ({len(present)} connected"
                                 + (", ".join([""] + [self.refusal_line(w) for w in sorted(self.refused)])) + ")")
            time.sleep(0.25)
        notes = [f"grading on {self.describe()}"]
        seen = set()
        for event in self.ready.values():
            for note in [f"workers' sandboxes: {event.get('confinement')}", *(event.get("notes") or [])]:
                if note not in seen:
                    seen.add(note)
                    notes.append(note)
        notes += [self.refusal_line(w) for w in sorted(self.refused)]
        return notes

    # -- the executor's interface

    def submit(self, judge_job: dict, label: str | None = None) -> concurrent.futures.Future:
        """Queue one notebook; it is sent to the cluster when a worker's slot is free (see _pump)."""
        if not self._registered:
            self.preflight()
        ours: concurrent.futures.Future = concurrent.futures.Future()
        stem = str(judge_job.get("notebook") or (label or "").rpartition("/")[2])
        with self._lock:
            self._queued.setdefault(stem, collections.deque()).append((ours, judge_job, label))
            self._waiting[ours] = None
        self._pump()
        return ours

    def _window(self) -> int:
        """Tasks on the cluster at once: two a slot of the workers that passed (one running, one ready to)."""
        return max(2, 2 * sum(int(e.get("slots", 1)) for e in self.ready.values()))

    def _pump(self) -> None:
        """Send queued notebooks while fewer than _window() are on the cluster, the longest first (by the mean
        time of that notebook's results so far; a notebook not seen yet first). The scheduler then places each
        on the freest worker: a bounded window keeps the class balanced to the end (Dask does not move tasks
        restricted to a resource between workers), and longest first shortens the last wave."""
        while True:
            with self._lock:
                if self.stopping.is_set() or len(self._futures) >= self._window():
                    return
                stems = [s for s, q in self._queued.items() if q]
                if not stems:
                    return
                stem = max(stems, key=lambda s: self._expected.get(s, (float("inf"), 0))[0])
                ours, judge_job, label = self._queued[stem].popleft()
                if ours.done():  # failed or cancelled while it waited
                    self._waiting.pop(ours, None)
                    continue
                self._waiting.pop(ours, None)
                self._futures[ours] = None
            self._send(ours, judge_job, label, stem)

    def _send(self, ours: concurrent.futures.Future, judge_job: dict, label: str | None, stem: str) -> None:
        sent = json.dumps(judge_job, ensure_ascii=False)
        key = f"lecture2-judge-{label or stem}-{uuid.uuid4().hex[:8]}".replace("/", ":")
        submitted = time.perf_counter()
        theirs = self.client.submit(judge_task, judge_job, self.token, self.expected, key=key, pure=False,
                                    resources={resource_of(self.token): 1})

        def done(future) -> None:
            received = time.perf_counter()
            try:
                text = future.result()
                payload = json.loads(text)
                judged = payload["judged"]
                if not isinstance(judged, dict):
                    raise ValueError("a worker sent results that are not a dict")
                timing = {"label": label, "seconds": float(payload["seconds"]), "worker": payload.get("worker"),
                          "task_seconds": float(payload.get("task_seconds") or payload["seconds"]),
                          "host": payload.get("host"), "round_trip": received - submitted,
                          "sent_bytes": len(sent.encode()), "received_bytes": len(text.encode())}
                with self._lock:
                    self._timings[ours] = timing
                    self.completed.append(timing)
                    mean, count = self._expected.get(stem, (0.0, 0))
                    self._expected[stem] = ((mean * count + timing["seconds"]) / (count + 1), count + 1)
                if not ours.done():  # (a notebook failed for want of workers stays failed)
                    ours.set_result(judged)
            except BaseException as err:  # noqa: BLE001  cancelled, a worker lost too often, a grader bug
                if not ours.done():
                    ours.set_exception(err)
            finally:
                with self._lock:
                    self._futures.pop(ours, None)
                self._pump()

        with self._lock:
            self._futures[ours] = theirs
        theirs.add_done_callback(done)

    def timing(self, future: concurrent.futures.Future) -> dict | None:
        """How long the worker judged this notebook (seconds), where, the round trip seen from here and the
        bytes moved each way; None until it is done."""
        with self._lock:
            return self._timings.get(future)

    def stop(self) -> None:
        """The instructor stopped: cancel every task not done and stop this run's judges on the workers."""
        self.stopping.set()
        with self._lock:
            pending = [f for f in self._futures.values() if f is not None]
            queued = list(self._waiting)
        for ours in queued:
            ours.cancel() or (ours.done() or ours.set_exception(concurrent.futures.CancelledError()))
        if pending:
            try:
                self.client.cancel(pending, force=True)
            except Exception:  # noqa: BLE001  the cluster may be gone already
                pass
        try:
            self.client.run(stop_judges, self.token)
        except Exception:  # noqa: BLE001
            pass

    def round_trip(self, n: int = 50) -> list[float]:
        """Seconds of `n` empty tasks sent one after the other: the scheduler's own round trip."""
        times = []
        for _ in range(n):
            start = time.perf_counter()
            self.client.submit(_noop, pure=False).result()
            times.append(time.perf_counter() - start)
        return times

    def close(self) -> None:
        """Disconnect (the workers keep this token's check for the next run with the same code), and close the
        cluster if this executor made it."""
        self._closed.set()
        try:
            self.client.close()
        finally:
            if self.cluster is not None:
                self.cluster.close()
