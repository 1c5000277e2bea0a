"""The judge: runs a notebook's test cells, hidden tests included, and never a student's object.

    python -m lecture2_grader.judging.judge < job.json > results.json    (started by launch.py, or forked)

It reads one job (the test cells, the cells the student's process must run, the names the answer cells
define, and runtime.KernelSpec: how to start the student's process, with every limit) from its standard
input. Each name an answer cell defines is bound to a lecture2.answers.Remote, so a test cell reads and runs
as in the lab: its calls go to the student's process (judging/kernel.py, in its sandbox), which gets the
case's inputs and sends back plain data. Before each test cell, the student's process runs the cells that
come before it (the order of the notebook is kept). Expected values, tolerances, check groups and hints stay
here; each exercise's outcome comes from lecture2.checks.exercise, reported to this process's Sink
(checks.reporting_to). What it writes on its standard output is the results (JSON), read by the grader as its
own.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import sys
import time
import traceback

from .. import score
from ..course import hidden_range
from ..records import CellStatus, Judged, KernelReport, TestRun
from ..runtime import KernelSpec
from ..score import group_lines
from .link import WITHHELD, KernelLink


class Stopped(BaseException):
    """The grader stopped the judge (the notebook's time is up): the results so far are written."""


def _on_term(signum, frame):
    raise Stopped()


def _trim(value: object, limit: int = 4000) -> object:
    return value[:limit] if isinstance(value, str) else value


VERDICT = ("passed", "status", "hint", "hint_key")  # what the results keep of a hidden group
SHOWN = ("passed", "status") + score.SHOWN  # and of a visible one


class Sink:
    """Where lecture2.checks.exercise hands each exercise's outcome (the last report of an exercise counts).
    A group whose `with ex.group(...)` line lies in the test cell's hidden region keeps its verdict and hint
    only: its message, expected value and what came back never leave this process."""

    def __init__(self):
        self.reports: dict[str, dict] = {}
        self.hidden_labels: set[str] = set()
        self.link = None  # the running test cell's link to the student's process
        self.tainted: set[tuple[str, str]] = set()  # (exercise, group) that ended after a hidden case reached it

    def group_done(self, name: str, label: str) -> None:
        if self.link is not None and self.link.tainted:
            self.tainted.add((str(name), str(label)))

    def report(self, name: str, groups: dict | None) -> None:
        """Keep an exercise's groups: a hidden one's verdict and hint; a visible one's details too, unless it ended
        after its process had received a hidden case (then what it shows would be formatted from what that process
        sent back: its verdict, its hint and a fixed note)."""
        clean = {}
        from lecture2 import checks

        for label, outcome in (groups or {}).items():
            tainted = (str(name), str(label)) in self.tainted
            keep = VERDICT if str(label) in self.hidden_labels or tainted else SHOWN
            entry = {k: _trim(v) for k, v in dict(outcome).items() if k in keep}
            key = entry.get("hint_key")  # a hint is the course's text of its key, whatever the check passed
            entry["hint_key"] = key if isinstance(key, str) and key in checks.HINTS else None
            entry["hint"] = checks.HINTS[key] if entry["hint_key"] else None
            if tainted and entry.get("status") != "passed":
                entry["message"] = WITHHELD
            clean[str(label)] = entry
        self.reports[str(name)] = clean


def _error(err: BaseException, filename: str, hidden: tuple[int, int] | None, tainted: bool) -> dict:
    """The check's own error, for the instructor: its class and line; its message only when it was raised in the
    visible lines by a process that had seen no hidden case (else it could hold a hidden case's values)."""
    line = None
    for frame, lineno in traceback.walk_tb(err.__traceback__):
        if frame.f_code.co_filename == filename:
            line = lineno
    in_hidden = hidden is not None and line is not None and hidden[0] <= line <= hidden[1]
    message = WITHHELD if in_hidden or tainted else str(err)[:2000]
    hint_key = getattr(err, "hint_key", None)
    from lecture2 import checks

    ename = type(err).__name__
    if tainted:  # an answer's exception comes back under its own class name: its built-in base only
        ename = next((c.__name__ for c in type(err).__mro__ if c.__module__ == "builtins"), "Exception")
    return {"ename": ename, "message": message, "line": line,
            "hint_key": hint_key if isinstance(hint_key, str) and hint_key in checks.HINTS else None,
            "hint": checks.HINTS[hint_key] if isinstance(hint_key, str) and hint_key in checks.HINTS else None}


def run_test(link, sink: Sink, test: dict, answer_names: list[str]) -> TestRun:
    """Run one test cell here, its answer names reaching the student's process through `link`, its exercises
    reporting to `sink`, its calls within the cell's time limit (KernelLink.begin_test_cell)."""
    from lecture2 import answers, checks

    sink.reports, sink.tainted, sink.link = {}, set(), link
    filename = f"<test cell {test['grade_id']}>"
    hidden = hidden_range(test["source"])
    sink.hidden_labels = {label for label, line in group_lines(test["source"]).items()
                          if hidden and hidden[0] <= line <= hidden[1]}
    link.hidden = (filename, *hidden) if hidden else None
    namespace = {"__name__": "__main__", "__builtins__": __builtins__,
                 **{name: answers.Remote(name, link) for name in answer_names}}
    link.begin_test_cell()
    start = time.monotonic()
    entry = TestRun(test["grade_id"], test["index"])
    try:
        with contextlib.redirect_stdout(io.StringIO()), checks.reporting_to(sink):  # what a check prints is the
            exec(compile(test["source"], filename, "exec"), namespace)          # lab's: the verdicts are data
    except Exception as err:  # a failed exercise raises CheckFailed; anything else is the check's own error
        entry.status = "failed" if isinstance(err, checks.CheckFailed) else "error"
        entry.error = _error(err, filename, hidden, link.tainted) if entry.status == "error" else None
    finally:
        link.hidden = None
    entry.seconds, entry.reports = round(time.monotonic() - start, 3), sink.reports
    return entry


class Judge:
    """One notebook's judging, step by step: its link to the student's process (made from the job's KernelSpec), the
    sink its checks report to, the cells that have still to run and what each one that ran did. `judge` takes a job
    through it in the notebook's order; the course's exercise tests step it themselves (tests/judging.py)."""

    def __init__(self, job: dict):
        self.job = job
        self.link = KernelLink(KernelSpec.from_json(job["kernel"]))
        self.sink = Sink()
        self.pending = sorted(job["cells"], key=lambda c: c["at"])  # the plan's cells not run yet
        self.cells: dict[int, CellStatus] = {}  # each cell that ran: its latest status
        self.tests: list[TestRun] = []

    def run_cells(self, cells: list[dict]) -> list[dict]:
        """Run `cells` in the student's process (a new budget of starts); their statuses, each kept by its index."""
        self.link.new_budget()
        statuses = self.link.run_cells(cells)
        for status in statuses:
            cell = CellStatus.from_json(status)
            if cell is not None:
                self.cells[cell.index] = cell
        return statuses

    def run_cells_before(self, index: int) -> list[dict]:
        """The plan's cells that come before the cell at `index` (and have not run), run; their statuses."""
        before = [c for c in self.pending if c["at"] < index]
        self.pending = self.pending[len(before):]
        return self.run_cells(before) if before else []

    def run_test(self, test: dict) -> TestRun:
        """One test cell, its hidden cases drawn from the job's secret (draws.py; None: this process's own)."""
        from lecture2 import checks

        with checks.drawing_from(self.job.get("draw")):
            entry = run_test(self.link, self.sink, test, self.job["answer_names"])
        self.tests.append(entry)
        return entry

    def results(self, stopped: bool = False) -> Judged:
        events = self.link.events
        return Judged(list(self.tests), [self.cells[i] for i in sorted(self.cells)],
                      KernelReport(events.starts, events.deaths, events.oom, events.output_tail[-4000:]),
                      "stopped" if stopped else "")

    def close(self) -> None:
        self.link.close()


def judge(job: dict, wait=None) -> Judged:
    """Run a job's test cells in order, the student's process running the cells before each; the results. With
    `wait`, the student's process is started first, then `wait()` is called (the executor's turn to judge)."""
    session = Judge(job)
    stopped = False
    try:
        if wait is not None:
            session.link.warm()
            wait()
        for test in job["tests"]:
            session.run_cells_before(test["index"])
            session.run_test(test)
    except Stopped:
        stopped = True
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second request to stop must not interrupt the cleanup
    finally:
        session.close()
    return session.results(stopped)


def run_job(job: dict, wait=None) -> dict:
    """Set this process up for `job` (threads, GPU, the grading flag) and judge it; the results as JSON-able data
    (records.Judged). Call it in a fresh process: `python -m lecture2_grader.judging.judge`, or a child of the fork server."""
    signal.signal(signal.SIGTERM, _on_term)
    from ..sandbox import limit_data

    limit_data(job.get("judge_memory"))  # a check that formats or builds too much fails with MemoryError, here only
    if not job.get("cuda", True):
        os.environ["CUDA_VISIBLE_DEVICES"] = ""  # the student's process has no GPU: the checks must not use one
    os.environ["NBGRADER_EXECUTION"] = "autograde"
    os.environ.setdefault("MPLBACKEND", "agg")
    threads = job.get("threads")
    if threads:
        import torch

        torch.set_num_threads(int(threads))
    return judge(job, wait).to_json()


def grader_failure(err: BaseException) -> dict:
    """The results of a judge that failed: the grader's own words only (the exception's class where the grader or
    Python defines it, and where it was raised, as file and line). Never a message: an exception that left the judge
    may have been built from what the student's process sent."""
    module = getattr(type(err), "__module__", "") or ""
    ename = type(err).__name__ if module.split(".")[0] in ("builtins", "lecture2_grader", "lecture2", "json",
                                                             "multiprocessing", "subprocess", "os") else "an exception"
    frames = traceback.extract_tb(err.__traceback__)
    where = next((f for f in reversed(frames) if "lecture2" in f.filename), frames[-1] if frames else None)
    at = f" at {os.path.basename(where.filename)}:{where.lineno}" if where else ""
    log = "".join(f"{os.path.basename(f.filename)}:{f.lineno} in {f.name}\n" for f in frames)[-4000:]  # frames only
    return {"error": f"the grader's judge failed ({ename}{at})", "log": log}


def main() -> int:
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    sys.stdout = sys.stderr  # what anything prints goes to the log, never into the results
    job = json.loads(sys.stdin.read())
    try:
        results = run_job(job)
    except BaseException as err:  # noqa: BLE001  the grader's own failure, said in its own words
        results = grader_failure(err)
    json.dump(results, out)
    out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
