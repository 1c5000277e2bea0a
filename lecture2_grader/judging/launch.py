"""Starting a judge: one process per notebook, within the notebook's time limit, and stopping the judges running.

    run(judge_job, runtime) -> results     (plain data: what records.Judged reads; also what crosses from a worker)
    stop_running(threads)                   Ctrl-C, or a Dask worker told to stop: SIGTERM the judges of `threads`

A judge is a child of a fork server that imported torch, lecture2's checks and the judge once for the whole run
(`Runtime.forkserver`), or else a fresh `python -m lecture2_grader.judging.judge`. It never outlives the process that
started it (PR_SET_PDEATHSIG). When the notebook's time is up it is asked to stop (SIGTERM: it writes what it has
and kills the student's process), then killed; a judge that returned nothing is a failure with its cause.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from ..records import Judged
from ..runtime import GRADER, STOP_SECONDS, Runtime

def run(judge_job: dict, runtime: Runtime, slot: threading.Semaphore | None = None,
        started: list | None = None) -> dict:
    """Run the judge on `judge_job` (which starts the student's process) within the notebook's time limit. Returns
    its results, or a failure (records.Judged.failure) when it gave none; partial results when it was stopped.

    With a `slot`, the notebook is judged only while this thread holds it; a forked judge starts its student's
    process before it waits for the slot, so that the next notebook's interpreter and torch are loading while the
    one before is judged (the sandbox and the process are the next notebook's own, and run nothing before their
    turn). The notebook's time limit counts from the slot; `started` gets that moment (time.perf_counter())."""
    judge_job = {**judge_job, **runtime.judge_settings()}  # this machine's: what a job carries is the same everywhere
    slot = slot or contextlib.nullcontext()
    if runtime.forkserver and forkserver_usable():
        return _execute_forked(judge_job, runtime, slot, started)
    with slot:
        if started is not None:
            started.append(time.perf_counter())
        return _execute_process(judge_job, runtime)


def _execute_process(judge_job: dict, runtime: Runtime) -> dict:
    """The judge as a fresh `python -m lecture2_grader.judging.judge` (where a fork server cannot be used)."""
    with tempfile.TemporaryDirectory(prefix="lecture2-judge-") as work:
        env = dict(os.environ, OMP_NUM_THREADS=str(runtime.threads), MKL_NUM_THREADS=str(runtime.threads),
                   MPLCONFIGDIR=str(Path(work) / ".matplotlib"), PYTHONDONTWRITEBYTECODE="1")
        env["PYTHONPATH"] = os.pathsep.join([str(GRADER.parent), *filter(None, [env.get("PYTHONPATH")])])
        proc = subprocess.Popen([sys.executable, "-X", "utf8", "-m", "lecture2_grader.judging.judge"], cwd=work, env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
        def drain():  # read and dropped: a judge's own failure comes back in its results, in its own words
            for _ in iter(lambda: proc.stderr.read(65536), b""):
                pass

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        timer = threading.Timer(runtime.notebook_timeout, lambda: _stop(proc))
        timer.start()
        _RUNNING[threading.get_ident()] = proc
        try:
            out, _ = proc.communicate(json.dumps(judge_job).encode("utf-8"))
        finally:
            _RUNNING.pop(threading.get_ident(), None)
            timer.cancel()
            reader.join(5)
        stopped = getattr(proc, "_lecture2_stopped", False)
    try:
        results = json.loads(out.decode("utf-8")) if out else None
    except ValueError:
        results = None
    if not isinstance(results, dict):  # its stderr is not kept: what it printed may hold a student's data
        return _no_results(stopped, proc.returncode, runtime, "")
    if stopped:
        results["stopped"] = f"stopped at the notebook's time limit ({runtime.notebook_timeout:g} s)"
    return results


def _no_results(stopped: bool, status: int | None, runtime: Runtime, log: str) -> dict:
    """The outcome of a judge that returned nothing: its cause ("time limit" or "crash"), stored like a result so
    that grading the same file again does not pay for it again (`--regrade` does)."""
    if stopped:
        return Judged.failure(f"stopped at the notebook's time limit ({runtime.notebook_timeout:g} s)", "time limit",
                              log).to_json()
    return Judged.failure(f"the grader's judge ended without results (exit status {status})", "crash", log).to_json()


# ---- the judges running in this process's threads: a grader stopped by Ctrl-C (or a worker told to) stops them

_RUNNING: dict[int, object] = {}  # thread ident -> its judge (a subprocess.Popen or a forkserver Process)


def stop_running(threads: set[int] | None = None) -> int:
    """Ask the judges started by `threads` (default: every thread of this process) to stop now: SIGTERM, so
    each writes what it has, kills its student's process and returns results marked "stopped". Returns how
    many were asked. The caller discards those results (a stopped notebook is graded again next time)."""
    asked = 0
    for ident, proc in list(_RUNNING.items()):
        if threads is not None and ident not in threads:
            continue
        try:
            proc.terminate()
            asked += 1
        except (ProcessLookupError, OSError):
            pass
    return asked


def die_with_parent() -> None:
    """SIGTERM this process when its parent (the fork server) ends: a judge never outlives the grader or the
    Dask worker that started it, even one killed with SIGKILL (Linux only; elsewhere a no-op)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() == 1:  # the parent was already gone before the signal was asked for
        os.kill(os.getpid(), signal.SIGTERM)


# ---- the judge's fork server: the imports paid once per grading run, a fresh process per notebook

PRELOAD = ["lecture2_grader.judging.preload"]  # what the fork server imports once (preload.py says what and why)
# Imported by the fork server only for a run that grades one of these notebooks (stem -> modules): a run of other
# notebooks never pays for them, and a judge of such a notebook in a run that did not preload them imports them itself.
PRELOAD_FOR = {"06_memory": ["lecture2_grader.judging.preload_bitsandbytes"]}
_CONTEXT = None
_CONTEXT_LOCK = threading.Lock()


def forkserver_usable() -> bool:
    import multiprocessing

    return "forkserver" in multiprocessing.get_all_start_methods()


def warm(runtime: Runtime) -> None:
    """Start the fork server now (torch and the checks imported once), before the first notebook or anything timed."""
    if runtime.forkserver and forkserver_usable():
        child = context().Process(target=os.getpid)
        child.start()
        child.join()


def context(notebooks: Iterable[str] | None = None):
    """The fork server's multiprocessing context. The first call chooses what the server imports: PRELOAD, and
    PRELOAD_FOR's modules of the notebooks among `notebooks` (None: any notebook, as a Dask worker's judges). Cheap:
    the server starts with the first process forked from it, and one server serves this process to its end."""
    global _CONTEXT
    with _CONTEXT_LOCK:
        if _CONTEXT is None:
            import multiprocessing

            wanted = set(PRELOAD_FOR) if notebooks is None else {n.removesuffix(".ipynb") for n in notebooks}
            _CONTEXT = multiprocessing.get_context("forkserver")
            _CONTEXT.set_forkserver_preload(PRELOAD + [m for stem in sorted(wanted & set(PRELOAD_FOR))
                                                       for m in PRELOAD_FOR[stem]])
    return _CONTEXT


def _judge_child(job: dict, conn, env: dict, go) -> None:
    """In a fresh child of the fork server: judge `job` when `go` says so (its student's process started before)
    and send its results (or why there are none)."""
    import io

    os.environ.update(env)
    sys.stdout = io.StringIO()  # what anything prints is not the results
    try:
        from .judge import run_job

        die_with_parent()
        results = run_job(job, wait=go.recv)
    except BaseException as err:  # noqa: BLE001  the grader's own failure, in the grader's words only
        from .judge import grader_failure

        results = grader_failure(err)
    try:
        conn.send(results)
    finally:
        conn.close()


def _execute_forked(judge_job: dict, runtime: Runtime, slot, started: list | None) -> dict:
    ctx = context()
    receive, send = ctx.Pipe(duplex=False)
    go_receive, go = ctx.Pipe(duplex=False)
    env = {"OMP_NUM_THREADS": str(runtime.threads), "MKL_NUM_THREADS": str(runtime.threads)}
    if runtime.mpl_cache:
        env["MPLCONFIGDIR"] = str(runtime.mpl_cache)
    proc = ctx.Process(target=_judge_child, args=(judge_job, send, env, go_receive), daemon=False)
    proc.start()
    send.close()
    go_receive.close()
    _RUNNING[threading.get_ident()] = proc
    results, stopped = None, False
    try:
        with slot:  # the child starts its student's process meanwhile; it judges once it is told to go
            if started is not None:
                started.append(time.perf_counter())
            try:
                go.send(True)
            except OSError:  # the child is gone already: what it left is read below
                pass
            if receive.poll(runtime.notebook_timeout):
                results = receive.recv()
            else:
                stopped = True
                proc.terminate()  # SIGTERM: the judge writes what it has and kills the student's process
                if receive.poll(STOP_SECONDS):
                    results = receive.recv()
    except (EOFError, OSError):
        results = None
    finally:
        _RUNNING.pop(threading.get_ident(), None)
        proc.join(5)
        if proc.is_alive():
            proc.kill()
            proc.join()
        receive.close()
        go.close()
    if not isinstance(results, dict):
        return _no_results(stopped, proc.exitcode, runtime, "")
    if stopped:
        results["stopped"] = f"stopped at the notebook's time limit ({runtime.notebook_timeout:g} s)"
    return results


def _stop(proc: subprocess.Popen) -> None:
    """The notebook's time is up: ask the judge to stop (it writes what it has and kills the student's
    process), then kill it if it does not."""
    proc._lecture2_stopped = True
    try:
        proc.send_signal(signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(STOP_SECONDS)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
