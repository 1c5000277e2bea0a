"""The judge's end of the wire to a student's process (lecture2_grader.kernel in its sandbox).

`KernelLink` starts the kernel when it is first needed, runs the cells the student's answers need, and makes
the calls the test cells ask for (lecture2.answers.Remote calls `request`). Every reply is read with the time
the current test cell has left and at most wire.MAX_MESSAGE bytes, then decoded strictly; a reply that is
late, malformed, out of sequence or missing (the process died) makes that call fail with AnswerUnavailable,
and the process is killed. The next request starts a fresh one, which runs the same cells again first (at
most `max_starts` times a notebook), so that one crash costs the checks that were waiting on it, not the
notebook's later exercises.
"""
from __future__ import annotations

import os
import select
import struct
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from lecture2 import answers, wire

from . import sandbox

KERNEL = Path(__file__).resolve().parent / "kernel.py"


@dataclass
class KernelSpec:
    """How to start the student's process for one notebook."""

    binds: list[str]  # read-only paths it may see (the lecture2 package, the kernel script, the font cache)
    limits: sandbox.Limits
    sandboxed: bool = True
    mpl_cache: str | None = None
    cell_timeout: float = 120.0
    start_timeout: float = 120.0
    max_starts: int = 3


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


class KernelLink:
    def __init__(self, spec: KernelSpec):
        self.spec = spec
        self.events = KernelEvents()
        self.deadline = float("inf")  # monotonic time by which the current test cell's calls must return
        self._run = None
        self._cells_sent: list[dict] = []  # every cell run so far: a new process runs them again
        self._seq = 0
        self._tail: _Tail | None = None
        self._gave_up = False

    # ---- process

    def _start(self) -> None:
        if self.events.starts >= self.spec.max_starts:
            self._gave_up = True
            raise answers.AnswerUnavailable(f"your notebook's process stopped {self.events.starts} times; "
                                            "the checks left are not run")
        self.events.starts += 1
        req_read, req_write = os.pipe()
        rep_read, rep_write = os.pipe()
        out_read, out_write = os.pipe()
        argv = [sys.executable, "-I", "-X", "utf8", str(KERNEL), "--reply-fd", str(rep_write)]
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
        hello = self._read(-1, time.monotonic() + self.spec.start_timeout)
        if not isinstance(hello, dict) or "lecture2" not in hello:
            self._give_up("the student's process did not start")
        if self._cells_sent:  # a fresh process: the cells the answers need, again
            self._exchange({"op": "run", "cells": self._cells_sent, "timeout": self.spec.cell_timeout}, replay=True)

    def _give_up(self, why: str, exc: type[Exception] = answers.AnswerUnavailable) -> None:
        """Kill the process, note why, and fail the call that was waiting."""
        if self._run is not None:
            self._run.kill()
            self.events.oom = self.events.oom or self._run.oom_killed()
            for fd in (self._req, self._rep):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self._run = None
        if self._tail is not None:
            self.events.output_tail = self._tail.text()
            self._tail = None
        if self.events.oom and "memory" not in why:
            why += " (out of memory: the notebook's memory limit was reached)"
        self.events.deaths.append(why)
        raise exc(why)

    def close(self) -> None:
        if self._run is not None:
            try:
                os.write(self._req, wire.pack({"op": "bye"}))
            except OSError:
                pass
            deadline = time.monotonic() + 2
            while self._run.alive() and time.monotonic() < deadline:
                time.sleep(0.02)
            self._run.kill()
            self.events.oom = self.events.oom or self._run.oom_killed()
            for fd in (self._req, self._rep):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self._run = None
        if self._tail is not None:
            self.events.output_tail = self._tail.text()
            self._tail = None

    # ---- messages

    def _read(self, seq: int, deadline: float) -> object:
        """The `ok` value of the reply to `seq`, decoded; raises the answer's exception for `raised`."""
        header = self._read_exact(4, deadline)
        size = struct.unpack(">I", header)[0]
        if size > wire.MAX_MESSAGE:
            self._give_up(f"the student's process sent a message of {size:,} bytes, over the limit")
        try:
            reply = wire.unpack(self._read_exact(size, deadline))
        except wire.Malformed as err:
            self._give_up(f"the student's process sent something that is not data ({err})")
        if not isinstance(reply, dict) or reply.get("seq") != seq or not ({"ok"} == set(reply) - {"seq"}
                                                                         or {"raised"} == set(reply) - {"seq"}
                                                                         or {"cells"} == set(reply) - {"seq"}):
            self._give_up("the student's process answered out of turn (a reply it was not asked for)")
        if "raised" in reply:
            raise answers.rebuild_exception(reply["raised"])
        if "cells" in reply:
            return reply["cells"]
        try:
            return wire.decode(reply["ok"])
        except wire.Malformed as err:
            self._give_up(f"the student's process sent something that is not data ({err})")

    def _read_exact(self, n: int, deadline: float) -> bytes:
        data = b""
        while len(data) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                self._give_up("did not return within the time the check had left", answers.AnswerTimeout)
            ready, _, _ = select.select([self._rep], [], [], min(left, 5.0))
            if not ready:
                if not self._run.alive():
                    self._give_up(self._died())
                continue
            chunk = os.read(self._rep, min(n - len(data), 1 << 20))
            if not chunk:
                self._run.proc.wait()
                self._give_up(self._died())
            data += chunk
        return data

    def _died(self) -> str:
        code = self._run.proc.poll() if self._run else None
        if code is not None and code < 0:
            return f"the student's process was killed by signal {-code}"
        return f"the student's process ended (exit status {code})"

    def _exchange(self, message: dict, replay: bool = False) -> object:
        if self._run is None:
            if self._gave_up:
                raise answers.AnswerUnavailable("the checks left are not run: your notebook's process stopped too often")
            self._start()
        self._seq += 1
        seq = self._seq
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise answers.AnswerTimeout("the test cell's time was used up before this check")
        message = {**message, "seq": seq, "timeout": round(min(left, float(message.get("timeout", left))), 3)}
        try:
            frame = wire.pack(message)
        except wire.Malformed as err:
            raise answers.AnswerUnavailable(f"the check's inputs are too large to send ({err})") from None
        try:
            os.write(self._req, frame) if len(frame) < 65536 else self._write_all(frame)
        except (BrokenPipeError, OSError):
            self._give_up(self._died())
        deadline = self.deadline + 2.0 if not replay else time.monotonic() + 600
        return self._read(seq, deadline)

    def _write_all(self, frame: bytes) -> None:
        view = memoryview(frame)
        while view:
            _, ready, _ = select.select([], [self._req], [], 5.0)
            if not ready and not self._run.alive():
                raise BrokenPipeError
            if ready:
                view = view[os.write(self._req, view[:65536]):]

    # ---- what the judge and lecture2.answers.Remote use

    def run_cells(self, cells: list[dict], timeout: float) -> list[dict]:
        """Run `cells` (plan entries) in the student's process; their statuses (or one entry saying why not)."""
        self._cells_sent += cells
        saved, self.deadline = self.deadline, time.monotonic() + timeout * max(1, len(cells))
        try:
            statuses = self._exchange({"op": "run", "cells": cells, "timeout": timeout})
        except answers.AnswerUnavailable as err:
            return [{"index": c.get("index"), "status": "not run", "message": str(err)} for c in cells]
        finally:
            self.deadline = saved
        return statuses if isinstance(statuses, list) else []

    def request(self, op: str, name, key, args: tuple, kwargs: dict) -> object:
        return self._exchange({"op": op, "name": name, "key": key, "args": wire.encode(list(args)),
                               "kwargs": wire.encode(dict(kwargs))})
