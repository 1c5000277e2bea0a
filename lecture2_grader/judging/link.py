"""The judge's end of the wire to a student's process (judging/kernel.py, in its sandbox).

`KernelLink` starts the kernel when it is first needed, runs the cells the student's answers need, and makes
the calls the test cells ask for (lecture2.answers.Remote calls `request`). Every request carries a random id
that its reply must carry back; every reply is read with the time the current test cell has left and at most
wire.LIMITS.message bytes, then decoded strictly (wire: linear, bounded, stopped at the cell's deadline). A
reply that is late, malformed, for another request, sent before its request was made, or missing (the process
died) is a protocol error: that call fails with AnswerUnavailable, and the process is killed. The next request starts a fresh one, which runs the same cells again first (but a
cell that hung or killed its process: at most `max_starts` times a test cell, `max_total_starts` a notebook),
so that one crash costs the checks that were waiting on it, not the notebook's later exercises.
"""
from __future__ import annotations

import os
import secrets
import select
import struct
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from lecture2 import answers, wire

from .. import sandbox
from ..runtime import KERNEL, LATE_REPLY_SECONDS, KernelSpec


@dataclass
class KernelEvents:
    """What happened to the student's process, for the report."""

    starts: int = 0
    deaths: list[str] = field(default_factory=list)  # one line per time it had to be given up
    oom: bool = False
    output_tail: str = ""  # the last of what it wrote outside the protocol (its stderr): for "ended early"


class _Tail:
    """Drains a pipe in a thread, keeping its last `limit` bytes."""

    def __init__(self, fd: int, limit: int = 16_384):
        self.fd, self.limit, self.data = fd, limit, b""
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            self.data = (self.data + chunk)[-self.limit:]
        os.close(self.fd)

    def text(self) -> str:
        self.thread.join(2)
        return self.data.decode("utf-8", "replace")


def _clean_statuses(statuses: object, cells: list[dict]) -> list[dict]:
    """The student's process's report on the cells it ran, as the judge keeps it: one entry per cell asked
    for, each field checked and bounded (whatever the process sent, nothing else gets through)."""
    sent = statuses if isinstance(statuses, list) else []
    clean = []
    for k, cell in enumerate(cells):
        raw = sent[k] if k < len(sent) and isinstance(sent[k], dict) else {}
        status = raw.get("status") if raw.get("status") in ("ok", "error", "timeout") else "not run"
        entry = {"index": cell.get("index"), "status": status,
                 "seconds": float(raw["seconds"]) if type(raw.get("seconds")) in (int, float) and
                 0 <= raw["seconds"] < 1e6 else 0.0,
                 "stdout": raw["stdout"][-20_000:] if isinstance(raw.get("stdout"), str) else ""}
        if status != "ok":
            entry["ename"] = raw["ename"][:100] if isinstance(raw.get("ename"), str) else ""
            entry["message"] = raw["message"][:500] if isinstance(raw.get("message"), str) else ""
            entry["line"] = raw["line"] if type(raw.get("line")) is int and 0 < raw["line"] < 10**6 else None
        clean.append(entry)
    return clean


class KernelLink:
    def __init__(self, spec: KernelSpec):
        self.spec = spec
        self.events = KernelEvents()
        self.deadline = float("inf")  # monotonic time by which the current test cell's calls must return
        self.hidden: tuple[str, int, int] | None = None  # the running test cell's code name and hidden lines
        self.tainted = False  # the current process has received a hidden case's inputs (see `request`)
        self._run = None
        self._cells_sent: list[dict] = []  # every cell run so far: a new process runs them again
        self._answered: set[str] = set()  # the ids of the requests answered so far
        self._tail: _Tail | None = None
        self._gave_up = False
        self._starts_here = 0  # starts since new_budget()
        self._printed = 0  # characters of cells' output kept so far, for the whole notebook (PRINTED)

    # ---- process

    def warm(self) -> None:
        """Start the student's process now, before anything is asked of it (it runs nothing until then). A process
        that does not start is tried again, as usual, by the first request."""
        if self._run is None:
            try:
                self._start()
            except answers.AnswerUnavailable:
                pass

    def new_budget(self) -> None:
        """A new test cell, or the cells before it: they may start the student's process `max_starts` times again."""
        self._starts_here = 0
        if self.events.starts < self.spec.max_total_starts:
            self._gave_up = False

    def begin_test_cell(self, seconds: float | None = None) -> None:
        """A test cell begins: its calls must return within the cell's time limit from now (the spec's; a test may
        give `seconds` instead), and may start the student's process `max_starts` times again. The one place the
        cell's deadline is set (run_cells keeps its own per cell, and a restart's time is the grader's)."""
        self.new_budget()
        self.deadline = time.monotonic() + (self.spec.cell_timeout if seconds is None else seconds)

    def _start(self) -> None:
        if self._starts_here >= self.spec.max_starts or self.events.starts >= self.spec.max_total_starts:
            self._gave_up = True
            raise answers.AnswerUnavailable(f"your notebook's process stopped {len(self.events.deaths)} times; "
                                            "the checks left in this cell are not run")
        self.events.starts += 1
        self._starts_here += 1
        self.tainted = False  # a new process has seen no case yet
        req_read, req_write = os.pipe()
        rep_read, rep_write = os.pipe()
        out_read, out_write = os.pipe()
        argv = [sys.executable, "-I", "-X", "utf8", str(KERNEL), "--reply-fd", str(rep_write)]
        if not self.spec.import_torch:
            argv.append("--no-torch")
        try:
            self._run = sandbox.start(argv, binds=[Path(b) for b in self.spec.binds], limits=self.spec.limits,
                                      sandboxed=self.spec.sandboxed, stdin=req_read, stdout=out_write,
                                      pass_fds=(rep_write,), env={"LECTURE2_MPL_CACHE": self.spec.mpl_cache or ""})
        finally:
            os.close(req_read)
            os.close(rep_write)
            os.close(out_write)
        self._req, self._rep = req_write, rep_read
        self._tail = _Tail(out_read)
        hello = self._read("hello", time.monotonic() + self.spec.start_timeout, "hello")
        if not isinstance(hello, dict) or "lecture2" not in hello:
            self._give_up("the student's process did not start")
        if self._cells_sent:  # a fresh process: the cells the answers need, again (those that ran to the end)
            self._exchange({"op": "run", "cells": self._cells_sent}, replay=True)

    def _give_up(self, why: str, exc: type[Exception] = answers.AnswerUnavailable, detail: str = "") -> None:
        """Kill the process, note why (the judge's words; `detail`, what the process itself sent or did, only while
        it had received no hidden case), and fail the call that was waiting."""
        if detail and not self.tainted:
            why = f"{why} ({detail})"
        elif detail:
            why = f"{why} ({TAINTED_DETAIL})"
        self.close()
        if self.events.oom and "memory" not in why:
            why += " (out of memory: the notebook's memory limit was reached)"
        self.events.deaths.append(why)
        raise exc(why)

    def close(self) -> None:
        """End the student's process: everything it sent is read already, so it is killed at once (an interpreter that
        imported torch takes most of a second to tear itself down, for nothing)."""
        if self._run is not None:
            self._run.kill()
            self.events.oom = self.events.oom or self._run.oom_killed()
            for fd in (self._req, self._rep):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self._run = None
        self._keep_tail()

    def _keep_tail(self) -> None:
        """What the process wrote outside the protocol, for the report; nothing of a process that had received a
        hidden case (what it printed could be that case's inputs)."""
        if self._tail is not None:
            text = self._tail.text()
            self.events.output_tail = WITHHELD if self.tainted else text
            self._tail = None

    # ---- messages

    def _read(self, call: str, deadline: float, op: str = "call") -> object:
        """The reply to request `call` (of kind `op`: "hello", "run" or a call), decoded. A call's reply is its `ok`
        value, the answer's exception raised (`raised`) or a timeout; a run's is its cells' statuses (through the
        decoder's grammar, like any value). Anything else, an exception in reply to a run included, is a protocol
        error of this call."""
        header = self._read_exact(4, deadline)
        size = struct.unpack(">I", header)[0]
        if size > wire.LIMITS.message:
            self._give_up("the student's process sent a message over the size limit (protocol error)",
                          detail=f"{size:,} bytes")
        body = self._read_exact(size, deadline)
        try:
            reply, blobs = wire.unpack(body)
        except wire.Malformed as err:
            self._give_up("the student's process sent something that is not data (protocol error)", detail=str(err))
        if isinstance(reply, dict) and reply.get("id") in self._answered:  # late: the cell in flight did not cause it
            self._give_up("the student's process answered out of turn: a second reply to an earlier request "
                          "(protocol error)", Unasked)
        allowed = {"ok"} if op == "hello" else {"cells", "timeout"} if op == "run" else {"ok", "raised", "timeout"}
        if not isinstance(reply, dict) or reply.get("id") != call or len(set(reply) - {"id"}) != 1:
            self._give_up("the student's process answered out of turn: a reply that is not to the request in "
                          "flight (protocol error)")
        if not set(reply) - {"id"} <= allowed:
            self._give_up("the student's process sent a reply of another kind than its request asks for (protocol "
                          "error)")
        if call != "hello":
            self._answered.add(call)
        if "raised" in reply:  # the check may tell the usual mistake by it; after a hidden case nothing of it is kept
            raise answers.rebuild_exception(reply["raised"])  # (judge.Sink, judge._error)
        if "timeout" in reply:
            raise answers.AnswerTimeout("did not return within the time the check had left")
        try:
            return wire.decode(reply["cells" if op == "run" else "ok"], blobs, deadline=deadline)
        except wire.Malformed as err:
            self._give_up("the student's process sent something that is not data (protocol error)", detail=str(err))

    def _read_exact(self, n: int, deadline: float) -> bytes:
        chunks, got = [], 0
        while got < n:
            left = deadline - time.monotonic()
            if left <= 0:
                self._give_up("did not return within the time the check had left", answers.AnswerTimeout)
            ready, _, _ = select.select([self._rep], [], [], min(left, 5.0))
            if not ready:
                if not self._run.alive():
                    self._give_up(*self._died())
                continue
            chunk = os.read(self._rep, min(n - got, 1 << 20))
            if not chunk:
                self._run.proc.wait()
                self._give_up(*self._died())
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def _pending(self) -> bool:
        """Has the process written anything that no request in flight asked for?"""
        ready, _, _ = select.select([self._rep], [], [], 0)
        return bool(ready)

    def _died(self) -> tuple[str, type[Exception], str]:
        """Why the process is gone, for _give_up: the judge's words, and the signal or exit status as its detail."""
        code = self._run.proc.poll() if self._run else None
        if code is not None and code < 0:
            return "the student's process was killed", answers.AnswerUnavailable, f"signal {-code}"
        return "the student's process ended", answers.AnswerUnavailable, f"exit status {code}"

    def _exchange(self, message: dict, replay: bool = False) -> object:
        """Send one request and read its reply: within the test cell's time left, or (a new process running
        the cells again) within the cells' own time."""
        now = time.monotonic()
        if replay:
            deadline = now + min(self.spec.replay_timeout, self.spec.cell_timeout * max(1, len(message["cells"])))
            timeout = self.spec.cell_timeout
        else:
            if self.deadline - now <= 0:
                raise answers.AnswerTimeout("the test cell's time was used up before this check")
            if self._run is None:
                if self._gave_up:
                    raise answers.AnswerUnavailable("the checks left are not run: your notebook's process stopped too often")
                self._start()
                # a new process's start and the cells it ran again are the grader's time, not the test cell's: on a
                # busy machine they took the rest of the cell's time from the checks after a restart
                self.deadline += time.monotonic() - now
            now = time.monotonic()
            timeout = max(0.001, min(self.deadline - now, float(message.get("timeout", self.deadline - now))))
            deadline = self.deadline + LATE_REPLY_SECONDS  # the process's own alarm fires first
        call = secrets.token_hex(8)  # unguessable: a reply written before this request cannot carry it
        blobs = message.pop("blobs", [])
        message = {**message, "id": call, "timeout": round(timeout, 3)}
        try:
            frame = wire.pack(message, blobs)
        except wire.Malformed as err:
            raise answers.AnswerUnavailable(f"the check's inputs are too large to send ({err})") from None
        if self._pending():
            self._give_up("the student's process answered out of turn: a reply sent before its request (protocol error)", Unasked)
        try:
            os.write(self._req, frame) if len(frame) < 65536 else self._write_all(frame)
        except (BrokenPipeError, OSError):
            self._give_up(*self._died())
        return self._read(call, deadline, "run" if message.get("op") == "run" else "call")

    def _write_all(self, frame: bytes) -> None:
        view = memoryview(frame)
        while view:
            _, ready, _ = select.select([], [self._req], [], 5.0)
            if not ready and not self._run.alive():
                raise BrokenPipeError
            if ready:
                view = view[os.write(self._req, view[:65536]):]

    # ---- what the judge and lecture2.answers.Remote use

    def run_cells(self, cells: list[dict]) -> list[dict]:
        """Run `cells` (plan entries) in the student's process, one at a time, each within the cell time limit; their
        statuses. A cell that ran past its time or ended the process is not run again by a new process (its status
        says why)."""
        statuses = []
        saved = self.deadline
        try:
            for cell in cells:
                self.deadline = time.monotonic() + self.spec.cell_timeout
                try:
                    try:
                        status = self._run_one(cell)
                    except Unasked:  # not this cell's doing: it runs in the new process
                        status = self._run_one(cell)
                except answers.AnswerUnavailable as err:
                    status = {"index": cell.get("index"), "seconds": 0.0, "stdout": "", "line": None,
                              "status": "timeout" if isinstance(err, answers.AnswerTimeout) else "not run",
                              "ename": type(err).__name__, "message": str(err)[:500]}
                if status["status"] in ("ok", "error"):
                    self._cells_sent.append(cell)  # replayed by a new process; a cell that hung would hang again
                statuses.append(status)
        finally:
            self.deadline = saved
        return statuses

    def _run_one(self, cell: dict) -> dict:
        """One cell's status, its seconds measured here (the judge's clock, never the process's word); what a
        process that had received a hidden case printed or raised is not kept, not even its exception's class."""
        start = time.monotonic()
        status = _clean_statuses(self._exchange({"op": "run", "cells": [cell], "timeout": self.spec.cell_timeout}),
                                 [cell])[0]
        status["seconds"] = round(time.monotonic() - start, 3)
        room = max(0, PRINTED - self._printed)
        if len(status["stdout"]) > room:
            status["stdout"] = status["stdout"][-room:] if room else PRINTED_NOTE
        self._printed += len(status["stdout"])
        if self.tainted:
            status["stdout"] = WITHHELD if status["stdout"] else ""
            if status["status"] != "ok":
                status.update(ename="", message=WITHHELD, line=None)
        return status

    def request(self, op: str, name, key, args: tuple, kwargs: dict) -> object:
        """One call of a check (op: call, observe, session_open, session_call, session_close). A call made from
        the hidden lines of the running test cell taints the process: from then on nothing it prints, raises or
        writes outside the protocol is kept (see `WITHHELD`), until a new process starts."""
        if self.hidden is not None and not self.tainted and _called_from(*self.hidden):
            self.tainted = True
        blobs: list = []
        return self._exchange({"op": op, "name": name, "key": key, "args": wire.encode(list(args), blobs),
                               "kwargs": wire.encode(dict(kwargs), blobs), "blobs": blobs})


WITHHELD = "(not kept: the process had received a hidden check's inputs by then)"
PRINTED = 200_000  # characters of what a notebook's cells printed, kept for its autograded notebook, all together
PRINTED_NOTE = "(not kept: the notebook's cells had printed more than the grader keeps)"
TAINTED_DETAIL = "what it sent is not kept: it had received a hidden check's inputs"


class Unasked(answers.AnswerUnavailable):
    """The process wrote a reply before the request in flight was made (protocol error)."""


def _called_from(filename: str, first: int, last: int) -> bool:
    """Is code named `filename` (a test cell) on the stack at one of the lines first..last (its hidden region)?"""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename == filename and first <= frame.f_lineno <= last:
            return True
        frame = frame.f_back
    return False
