"""Grading on a Dask cluster, the worker's side: what a worker proves before it takes a notebook, and what it runs.

    identity()       what a score depends on besides the job: content hashes of lecture2 and of this grader,
                     torch's release, Python's (the instructor's and each worker's are compared: differences())
    WorkerSetup      a worker plugin, registered by the instructor's process (dask.DaskExecutor). On every worker of
                     the cluster, there now or joining later, it proves that the worker grades with the instructor's
                     code, then that it can start the student's process in its sandbox and import the course there
                     (preflight.preflight). Only a worker that passed holds this run's Dask resource, so only it is
                     given the run's tasks. One that fails says why in one line (the instructor sees it) and takes none.
    judge_task       what runs on a worker: checks the worker's code again, then launch.run (one judge)
    stop_judges      the instructor stopped: this run's judges on this worker are asked to stop

Dask sends these by reference: a worker imports this module (and the package below it), never the instructor's side.
"""
from __future__ import annotations

import asyncio
import importlib.metadata
import json
import multiprocessing
import os
import socket
import sys
import threading
import time
from pathlib import Path

from distributed import Reschedule, get_worker
from distributed.diagnostics.plugin import WorkerPlugin

from .. import sandbox
from ..course import tree_digest
from ..judging import launch
from ..runtime import GRADER, Runtime
from . import preflight

TOPIC = "lecture2-grader"  # the scheduler's event log topic where workers say whether they passed


# ---- what a worker must share with the instructor's process


def identity(package: Path | None = None) -> dict[str, str]:
    """What a score depends on besides the job itself: the course's package and this grader (content hashes
    of their files, as store.py keys results), torch's release (its local build tag, +cpu or +cu126, aside)
    and Python's."""
    package = package or preflight.package_dir()
    return {"lecture2": tree_digest(package), "lecture2_grader": tree_digest(GRADER),
            "torch": importlib.metadata.version("torch").split("+")[0], "python": "%d.%d" % sys.version_info[:2]}


def differences(wanted: dict[str, str], found: dict[str, str]) -> list[str]:
    """What differs between the instructor's identity and a worker's, in words."""
    said = []
    for part in ("lecture2", "lecture2_grader"):
        if wanted.get(part) != found.get(part):
            said.append(f"its {part} package differs from the instructor's (content hash {str(found.get(part))[:12]}, "
                        f"the instructor's {str(wanted.get(part))[:12]})")
    for part in ("torch", "python"):
        if wanted.get(part) != found.get(part):
            said.append(f"it has {part} {found.get(part)}, the instructor {wanted.get(part)}")
    return said


def _cores() -> int:
    """The cores this process may use (a Slurm job's or a container's allocation, not the whole machine's)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def resource_of(token: str) -> str:
    return f"lecture2-{token}"


def plugin_name(token: str) -> str:
    return f"lecture2-grader-{token}"


# ---- the worker's side


class WorkerSetup(WorkerPlugin):
    """Registered by the instructor's process; set up by Dask on every worker, now or later. Its token is a hash
    of the instructor's identity and the run's settings: runs of the same code with the same settings share it
    (a second `make grade`, or one after the instructor's process was killed, finds the workers ready), and a
    run with other code or settings gets its own check and resource."""

    idempotent = True  # registered again by a run with the same token: the workers keep what they proved

    def __init__(self, token: str, expected: dict[str, str], settings: dict, notebooks: list[str] | None = None):
        self.token, self.expected, self.settings = token, expected, settings
        self.notebooks = notebooks  # what the first run grades (None: any): the worker's fork server imports its needs
        self.runtime: Runtime | None = None
        self.refusal: str | None = None
        self._checking = None

    def setup(self, worker) -> None:
        # The proof takes seconds (a sandbox started, the fork server importing torch): in a thread, so that the
        # worker keeps answering its scheduler; the run's resource comes when it passes.
        self._checking = asyncio.ensure_future(self._check(worker))

    async def _check(self, worker) -> None:
        slots = max(1, worker.state.nthreads)
        where = {"worker": worker.address, "name": str(worker.name), "host": socket.gethostname(), "token": self.token}
        try:
            outcome = await asyncio.to_thread(self.prove, worker.local_directory, slots)
            if outcome["ok"]:
                self.runtime = outcome.pop("runtime")
                await worker.set_resources(**{resource_of(self.token): slots})
        except Exception as err:  # noqa: BLE001  reported as the worker's refusal
            self.runtime = None
            outcome = {"ok": False, "why": f"its check failed ({type(err).__name__}: {err})"}
        if not outcome["ok"]:
            self.refusal = outcome["why"]
        worker.log_event(TOPIC, {**where, **outcome})

    def prove(self, folder: str, slots: int) -> dict:
        """On the worker: its identity, then a preflight of its own sandbox. {"ok": True, "runtime", "notes"}
        or {"ok": False, "why": a line for the instructor}."""
        wrong = differences(self.expected, identity())
        if wrong:
            return {"ok": False, "why": "; ".join(wrong) + ". Install the instructor's commit there (the same "
                    "course, grader and torch), then start the worker again"}
        # A Nanny's worker is a daemonic process, which multiprocessing forbids to have children; the judges are
        # its children (forked from the fork server, judging/launch.py) and end with it (launch.die_with_parent).
        multiprocessing.current_process()._config["daemon"] = False
        settings = dict(self.settings)
        limits = sandbox.Limits(**settings.pop("limits"))
        threads = int(settings.pop("threads", 0)) or max(1, _cores() // slots)
        runtime = Runtime(**settings, limits=limits, threads=threads, package=preflight.package_dir(),
                          mpl_cache=preflight.font_cache(Path(folder) / "lecture2-grader"))
        try:
            notes = preflight.preflight(runtime)
        except SystemExit as err:
            return {"ok": False, "why": str(err).removeprefix("error: ")}
        launch.context(self.notebooks)  # the worker's first run chooses; a later run's judge imports what is missing
        launch.warm(runtime)  # torch imported once, before the first notebook
        confinement = sandbox.confinement(limits) if runtime.sandboxed else "no sandbox"
        return {"ok": True, "runtime": runtime, "slots": slots, "threads": runtime.threads, "cuda": runtime.cuda,
                "notes": notes, "confinement": confinement}

    async def teardown(self, worker) -> None:
        if self._checking is not None and not self._checking.done():
            self._checking.cancel()
        if self.runtime is not None:
            try:
                await worker.set_resources(**{resource_of(self.token): 0})
            except Exception:  # noqa: BLE001  the worker is closing anyway
                pass


_ACTIVE: dict[str, set[int]] = {}  # run token -> threads of this worker judging its notebooks


def judge_task(judge_job: dict, token: str, expected: dict[str, str]) -> str:
    """On a worker: the judge's results for `judge_job`, as JSON text {"judged", "seconds", "worker"}. A worker
    whose code changed since it passed refuses: it gives up this run's resource and the task goes elsewhere."""
    entered = time.perf_counter()
    worker = get_worker()
    plugin = worker.plugins.get(plugin_name(token))
    if not isinstance(plugin, WorkerSetup) or plugin.runtime is None:
        raise Reschedule()  # not this run's worker (a resource left over): the scheduler places it again
    wrong = differences(expected, identity(plugin.runtime.package))
    if wrong:
        plugin.runtime = None
        worker.loop.add_callback(worker.set_resources, **{resource_of(token): 0})
        worker.log_event(TOPIC, {"worker": worker.address, "name": str(worker.name), "host": socket.gethostname(),
                                 "token": token, "ok": False, "why": "its files changed while it was grading: "
                                 + "; ".join(wrong) + ". Restart it from the instructor's commit"})
        raise Reschedule()
    ident = threading.get_ident()
    _ACTIVE.setdefault(token, set()).add(ident)
    start = time.perf_counter()
    try:
        judged = launch.run(judge_job, plugin.runtime)
    finally:
        _ACTIVE.get(token, set()).discard(ident)
    end = time.perf_counter()
    return json.dumps({"judged": judged, "seconds": round(end - start, 4), "task_seconds": round(end - entered, 4),
                       "worker": str(worker.name), "host": socket.gethostname()}, ensure_ascii=False)


def stop_judges(token: str) -> int:
    """On a worker (client.run): stop the judges of this run's notebooks now (the instructor stopped)."""
    return launch.stop_running(set(_ACTIVE.get(token, set())))
