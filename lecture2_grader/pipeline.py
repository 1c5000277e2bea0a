"""The one pipeline: a student's notebook, from its file to its points, in the stages of lecture2_grader.

    job = prepare(student, path, notebook, runtime)   read the file, pick out the answers, scan, plan  [no student code]
    judged = execute(job.judge, runtime)               the judge and the student's process      [the boundary]
    result = finish(job, judged, notebook)             points, problems for the report          [no student code]

`make validate` (the student's machine, no sandbox), `make grade` (this machine, a pool of them) and a Dask
cluster (lecture2_grader.executors) call these three, so a score is the same wherever it is computed. `execute`
takes and returns plain data (JSON-able dicts): it is what crosses to another machine.
"""
from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import advice, plan, sandbox, scan, score, store, submission
from .course import Notebook, tree_digest

GRADER = Path(__file__).resolve().parent
# The grader's modules whose code decides what a judge returns for a submission (what is read, planned, run and
# how): a change to one of them makes every stored result stale. Scoring, feedback, reports and the gradebook are
# made again from the stored results at every run, so their changes cost no notebook a run.
JUDGING = ("course.py", "submission.py", "source.py", "plan.py", "pipeline.py", "judge.py", "link.py", "kernel.py",
           "sandbox.py", "score.py")


def code_digest(package: Path) -> str:
    """Content hash of the code a judge's results depend on: the course's package and the JUDGING modules."""
    h = hashlib.sha256(tree_digest(package).encode())
    for name in JUDGING:
        h.update(name.encode() + b"\0" + (GRADER / name).read_bytes() + b"\0")
    return h.hexdigest()


@dataclass
class Runtime:
    """What every notebook of a grading run shares: limits, the packages the sandbox sees, the font cache."""

    cell_timeout: float = 120.0
    notebook_timeout: float = 600.0
    limits: sandbox.Limits = field(default_factory=sandbox.Limits)
    sandboxed: bool = True
    cuda: bool = False  # the student's process can use the machine's GPU
    package: Path | None = None  # the lecture2 package the sandboxed interpreter imports
    mpl_cache: Path | None = None
    threads: int = 1
    forkserver: bool = True  # judges forked from one process that imported torch once (else a fresh process each)

    def kernel_spec(self) -> dict:
        binds = [str(p) for p in (self.package, GRADER / "kernel.py", self.mpl_cache) if p]
        return {"binds": binds, "limits": self.limits.__dict__ | {"threads": self.threads},
                "sandboxed": self.sandboxed, "mpl_cache": str(self.mpl_cache) if self.mpl_cache else None}


@dataclass
class Job:
    """One student's notebook, read and planned (plain data: it may cross to another machine)."""

    student: str
    notebook: str  # file name
    answers: dict[str, str]
    problems: list[str]
    findings: list[str]
    judge: dict | None  # the judge's job (test cells, cells, answer names); None when the file could not be read
    digest: str = ""  # store.key of the submission, the instructor's notebook and the code: the regrade cache key
    notices: list[str] = field(default_factory=list)  # advice for the student (advice.py): validate and feedback


def prepare(student: str, path: Path, nb: Notebook, runtime: Runtime, package_digest: str = "") -> Job:
    """Read `path` and plan its run; a file that cannot be read is a Job with judge None and a problem."""
    try:
        file_hash = store.file_hash(path) if path.is_file() and not path.is_symlink() else None
    except OSError as err:
        return Job(student, nb.name, {}, [f"cannot be read ({err.strerror}) (0 points)"], [], None)
    if file_hash is None:
        return Job(student, nb.name, {}, ["notebook missing (0 points)"], [], None)
    digest = store.key(file_hash, nb.digest, package_digest)
    index_of = {c.grade_id: c.index for c in nb.cells if c.grade_id}
    course_sources = {c.visible: c.index for c in nb.cells if c.kind != "markdown"}
    visible = {c.grade_id: c.visible for c in nb.cells if c.grade_id and c.kind in ("code", "test")}
    try:
        answers = submission.read_answers(path, nb.answer_ids, nb.stubs(), nb.grade_ids, course_sources, index_of,
                                          visible)
    except submission.Unreadable as err:
        return Job(student, nb.name, {}, [f"{err} (0 points)"], [], None, digest)
    findings = [str(f) for f in scan.scan(answers.sources)]
    kernel = plan.kernel_plan(nb, answers)
    notices = advice.skipped_own_cells(answers, kernel) + advice.edited_course_cells(nb, answers)
    job = {"notebook": nb.stem, "tests": plan.judge_tests(nb), "cells": kernel.cells, "answer_names": nb.answer_names()}
    return Job(student, nb.name, answers.sources, list(answers.problems), findings, job, digest, notices)


def execute(judge_job: dict, runtime: Runtime) -> dict:
    """Run the judge on `judge_job` (which starts the student's process) within the notebook's time limit.
    Returns its results, or {"error": why} when it gave none; partial results when it was stopped. The judge is
    a child of a fork server that has imported torch and the checks once (`runtime.forkserver`), or else a
    fresh `python -m lecture2_grader.judge`."""
    judge_job = {**judge_job, "cell_timeout": runtime.cell_timeout, "threads": runtime.threads, "cuda": runtime.cuda,
                 "kernel": runtime.kernel_spec()}  # this machine's: what a job carries is the same everywhere
    if runtime.forkserver and _forkserver_usable():
        return _execute_forked(judge_job, runtime)
    with tempfile.TemporaryDirectory(prefix="lecture2-judge-") as work:
        env = dict(os.environ, OMP_NUM_THREADS=str(runtime.threads), MKL_NUM_THREADS=str(runtime.threads),
                   MPLCONFIGDIR=str(Path(work) / ".matplotlib"), PYTHONDONTWRITEBYTECODE="1")
        env["PYTHONPATH"] = os.pathsep.join([str(GRADER.parent), *filter(None, [env.get("PYTHONPATH")])])
        proc = subprocess.Popen([sys.executable, "-X", "utf8", "-m", "lecture2_grader.judge"], cwd=work, env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
        err_tail = bytearray()

        def drain():
            for chunk in iter(lambda: proc.stderr.read(65536), b""):
                err_tail.extend(chunk)
                del err_tail[:-8000]

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
    if not isinstance(results, dict):
        return _no_results(stopped, proc.returncode, runtime, bytes(err_tail).decode("utf-8", "replace")[-4000:])
    if stopped:
        results["stopped"] = f"stopped at the notebook's time limit ({runtime.notebook_timeout:g} s)"
    return results


def _no_results(stopped: bool, status: int | None, runtime: Runtime, log: str) -> dict:
    """The outcome of a judge that returned nothing: its cause ("time limit" or "crash"), stored like a result so
    that grading the same file again does not pay for it again (`--regrade` does)."""
    if stopped:
        return {"error": f"stopped at the notebook's time limit ({runtime.notebook_timeout:g} s)", "cause": "time limit",
                "log": log}
    return {"error": f"the grader's judge ended without results (exit status {status})", "cause": "crash", "log": log}


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


def _die_with_parent() -> None:
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

PRELOAD = ["torch", "lecture2", "lecture2.checks", "lecture2.answers", "lecture2.exercises", "lecture2_grader.judge",
           "lecture2_grader.link"]
_CONTEXT = None


def _forkserver_usable() -> bool:
    import multiprocessing

    return "forkserver" in multiprocessing.get_all_start_methods()


def _context():
    global _CONTEXT
    if _CONTEXT is None:
        import multiprocessing

        _CONTEXT = multiprocessing.get_context("forkserver")
        _CONTEXT.set_forkserver_preload(PRELOAD)
    return _CONTEXT


def _judge_child(job: dict, conn, env: dict) -> None:
    """In a fresh child of the fork server: judge `job` and send its results (or why there are none)."""
    import io
    import traceback

    os.environ.update(env)
    sys.stdout = io.StringIO()  # what anything prints is not the results
    try:
        from .judge import run_job

        _die_with_parent()
        results = run_job(job)
    except BaseException as err:  # noqa: BLE001  the grader's own failure, reported as such
        results = {"error": f"the grader's judge failed ({type(err).__name__}: {err})",
                   "log": traceback.format_exc()[-4000:]}
    try:
        conn.send(results)
    finally:
        conn.close()


def _execute_forked(judge_job: dict, runtime: Runtime) -> dict:
    ctx = _context()
    receive, send = ctx.Pipe(duplex=False)
    env = {"OMP_NUM_THREADS": str(runtime.threads), "MKL_NUM_THREADS": str(runtime.threads)}
    if runtime.mpl_cache:
        env["MPLCONFIGDIR"] = str(runtime.mpl_cache)
    proc = ctx.Process(target=_judge_child, args=(judge_job, send, env), daemon=False)
    proc.start()
    send.close()
    _RUNNING[threading.get_ident()] = proc
    results, stopped = None, False
    try:
        if receive.poll(runtime.notebook_timeout):
            results = receive.recv()
        else:
            stopped = True
            proc.terminate()  # SIGTERM: the judge writes what it has and kills the student's process
            if receive.poll(25):
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
        proc.wait(20)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def finish(job: Job, judged: dict | None, nb: Notebook) -> score.NotebookResult:
    """Points and the problems of one notebook, from the judge's results (trusted) and the instructor's notebook."""
    result = score.score(nb, judged if judged and "error" not in judged else None)
    problems = list(job.problems)
    if judged is not None:
        problems += run_problems(nb, judged)
    for test in result.tests:
        if any(g["status"] == "timeout" for g in test.groups):
            problems.append(f"{test.grade_id}: an answer ran past the time limit (the checks left in the cell score 0)")
    if job.findings:
        shown = "; ".join(job.findings[:3]) + (f" and {len(job.findings) - 3} more" if len(job.findings) > 3 else "")
        problems.append(f"flagged for review (scored as usual): {shown}")
    result.problems = problems
    result.notices = list(job.notices)
    return result


def run_problems(nb: Notebook, judged: dict) -> list[str]:
    """What went wrong while the notebook ran, for the report: time, memory, a process that died."""
    if "error" in judged:
        log = str(judged.get("log") or "").strip().splitlines()[-3:]
        return [judged["error"] + (f" ({' | '.join(log)})" if log else "")]
    problems = []
    kernel = judged.get("kernel") or {}
    if judged.get("stopped"):
        problems.append(f"{judged['stopped']} (later checks score 0)")
    if kernel.get("oom"):
        problems.append("out of memory: a process reached the notebook's memory limit")
    deaths = [d for d in kernel.get("deaths") or [] if isinstance(d, str)]
    if deaths:
        tail = str(kernel.get("output_tail") or "").strip().splitlines()[-2:]
        problems.append(f"your notebook's process was restarted {len(deaths)} time(s): {deaths[0]}"
                        + (f" (last output: {' | '.join(tail)})" if tail else ""))
    by_index = {c.index: c for c in nb.cells}
    for status in judged.get("cells") or []:
        if not isinstance(status, dict) or status.get("status") == "ok":
            continue
        cell = by_index.get(status.get("index"))
        where = (cell.grade_id or f"cell {cell.index + 1}") if cell else "one of your own cells"
        if status.get("status") == "timeout":
            problems.append(f"{where} ran past the cell time limit")
        elif status.get("status") == "not run":
            problems.append(f"{where}: {status.get('message') or 'not run'}")
        elif cell is None or cell.kind == "answer":
            line = f" (line {status['line']})" if isinstance(status.get("line"), int) else ""
            oom = " (out of memory)" if status.get("ename") == "MemoryError" else ""
            problems.append(f"{where} raised {status.get('ename') or 'an error'}{line}{oom}")
    return problems


# ---- the run's shared parts: the packages the sandbox sees, the font cache, and a preflight


def package_dir() -> Path:
    """The lecture2 package the grader's environment imports (bound read-only into every sandbox)."""
    import importlib.util

    spec = importlib.util.find_spec("lecture2")
    if spec is None or not spec.origin:
        raise SystemExit("error: the lecture2 package is not installed in this environment (run `make setup`)")
    return Path(spec.origin).resolve().parent


def font_cache(folder: Path) -> Path:
    """Matplotlib's font cache, built once outside the sandboxes and copied into each one."""
    cache = folder / "matplotlib-cache"
    cache.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-c", "import matplotlib.font_manager"], capture_output=True, timeout=300,
                   env=dict(os.environ, MPLCONFIGDIR=str(cache)))
    return cache


PREFLIGHT = '''
import sys, lecture2, torch
def _preflight():
    return {"lecture2": lecture2.__file__, "python": sys.executable,
            "cuda": torch.cuda.device_count() if torch.cuda.is_available() else 0}
'''


ISOLATED_FIND = "import importlib.util as u; s = u.find_spec('lecture2'); print(s.origin if s and s.origin else '')"


def isolated_package() -> Path | None:
    """The lecture2 package this environment's Python imports in isolated mode (`-I`: no current folder, no
    PYTHONPATH), as the student's process does in its sandbox; None when it finds none."""
    proc = subprocess.run([sys.executable, "-I", "-c", ISOLATED_FIND], capture_output=True, text=True, timeout=120,
                          env={k: v for k, v in os.environ.items() if not k.startswith("PYTHON")})
    found = proc.stdout.strip()
    return Path(found).resolve().parent if proc.returncode == 0 and found else None


def _path_entries_naming(folder: Path) -> list[str]:
    """The site-packages .pth files of this environment that put `folder` on the path (an editable install)."""
    import site

    named = []
    for packages in {*site.getsitepackages(), site.getusersitepackages()}:
        for pth in sorted(Path(packages).glob("*.pth")):
            try:
                lines = pth.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                continue
            if any(line.strip() and Path(line.strip()).resolve() == folder for line in lines):
                named.append(str(pth))
    return named


def check_package_binding(package: Path) -> None:
    """SystemExit, saying what is wrong and how to fix it, unless the Python the sandbox runs imports the
    lecture2 at `package` (the one the grader binds into the sandbox) on its own. The usual failure: the grader
    runs from one checkout while this environment's editable install points at another, so the sandboxed
    interpreter would look for lecture2 where nothing is bound and every notebook would end early."""
    theirs = isolated_package()
    if theirs == package:
        return
    here = Path.cwd()
    if theirs is None:
        raise SystemExit(
            f"error: this environment's Python ({sys.executable}) does not find lecture2 on its own: the grader "
            f"found it at {package} only through the current folder or PYTHONPATH, which the sandboxed "
            "interpreter does not use, so every notebook would end early.\n"
            f"  Install it into the environment from the course folder: `{sys.executable} -m pip install -e "
            f"{package.parent}` (or `make setup` there).")
    via = _path_entries_naming(theirs.parent)
    raise SystemExit(
        f"error: the grader binds lecture2 from {package} into each sandbox, but this environment's Python "
        f"imports lecture2 from {theirs} on its own"
        + (f" (its editable install: {', '.join(via)})" if via else "") + ".\n"
        f"  The environment was installed from another checkout ({theirs.parent}) than the one the grader runs "
        f"from ({here}); inside the sandbox only {package} is there, so every notebook would end early.\n"
        f"  Either run the grader from {theirs.parent}, or reinstall the environment from this checkout: "
        f"`{sys.executable} -m pip install -e {package.parent}` (or `rm -rf .venv && make setup` there).")


def preflight(runtime: Runtime) -> list[str]:
    """Prove, before the first notebook, that the student's process starts in its sandbox and imports this
    grader's lecture2. Returns notes for the report; raises SystemExit saying what is wrong and how to fix it."""
    from lecture2 import answers

    from .link import KernelLink, KernelSpec

    if runtime.package is not None:
        check_package_binding(runtime.package)
    spec = runtime.kernel_spec()
    link = KernelLink(KernelSpec(binds=spec["binds"], limits=runtime.limits, sandboxed=runtime.sandboxed,
                                 mpl_cache=spec["mpl_cache"], cell_timeout=300, start_timeout=300, max_starts=1))
    link.deadline = time.monotonic() + 300
    try:
        statuses = link.run_cells([{"index": 0, "at": 0.0, "kind": "code", "grade_id": None, "source": PREFLIGHT}], 300)
        found = link.request("call", "_preflight", None, (), {}) if statuses and statuses[0].get("status") == "ok" else None
    except (answers.AnswerUnavailable, Exception) as err:  # noqa: BLE001  reported below with the process's output
        statuses, found = [{"status": "error", "message": str(err)}], None
    finally:
        link.close()
    where = "in its sandbox" if runtime.sandboxed else "without a sandbox"
    if not isinstance(found, dict):
        detail = (statuses[0].get("message") if statuses and isinstance(statuses[0], dict) else "") or ""
        tail = link.events.output_tail.strip().splitlines()[-6:]
        raise SystemExit(f"error: the student's process does not start {where}: {detail}\n"
                         + "\n".join(f"    {line}" for line in tail)
                         + "\n  The grader runs each notebook with this environment's Python "
                           f"({sys.executable}); check that `make setup` finished in this folder.")
    theirs = Path(str(found.get("lecture2"))).resolve().parent
    if theirs != runtime.package:
        raise SystemExit(
            f"error: inside the sandbox, Python imports lecture2 from {theirs}, but this grader's is {runtime.package}.\n"
            "  The environment's editable install points at another checkout: the sandbox sees only this course's\n"
            "  package, so every notebook would fail. Reinstall it from this folder (`.venv/bin/python -m pip\n"
            "  install -e .`, or `rm -rf .venv && make setup`), or run the grader from the checkout the\n"
            "  environment was made from.")
    notes = []
    cuda = int(found.get("cuda") or 0)
    try:
        import torch

        here = torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:
        here = 0
    runtime.cuda = cuda > 0
    if here and not cuda:
        notes.append(f"the student's process cannot reach this machine's {here} GPU(s) {where}: grading on the CPU")
    return notes
