"""The student's process: runs INSIDE the sandbox, beside the student's code, and holds nothing worth stealing.

    python kernel.py          (started by the judge, through lecture2_grader.sandbox)

It reads framed messages (lecture2.wire) on its standard input and answers each on file descriptor 3:

    {"op": "run", "cells": [{index, kind, grade_id, source}, ...]}   run these cells, in order, in one IPython
                 namespace (magics work); reply with each cell's status and what it printed (bounded), encoded
                 like any value
    {"op": "call", "name": N, "args", "kwargs"}                      N(*args, **kwargs): its value, as data
    {"op": "observe", "name": N, "key": K, ...}                       lecture2's registered instrument K on N
    {"op": "session_open" | "session_call" | "session_close", ...}    a session object of lecture2 beside N

Every request carries its `timeout`: the seconds it may take (each cell of a run, or the call), which the judge
computes from runtime.py's limits; a request without one is refused (the process exits, status 3, as for a
message that is not in the wire's grammar). Every reply carries the request's `id` (a random token the judge
chose for that request: a reply written before its request was made cannot carry it) and either `ok` (the
value, encoded; a tensor's bytes travel as a blob of the frame), `raised` (the exception's class names and
message) or `timeout` (it ran past the time the request allowed). What it receives is a case's inputs; what it sends is data about the student's
answer: never a verdict, an expected value or a check's source, which it never has. Whatever the student's
code does to this process (it runs in it) can only change that data. The judge decodes every reply strictly
and gives up on the process when it sends anything else, falls silent past the time left, or dies.
Only the standard library is imported before the first cell runs; lecture2 when a request needs it.
"""
from __future__ import annotations

import io
import os
import shutil
import signal
import struct
import sys
import time
import traceback

REPLY_FD = 3  # set from --reply-fd
MAX_STDOUT = 20_000  # characters of what one cell printed, kept for display
_clock = time.perf_counter  # bound now: a cell that replaces time.perf_counter changes its own timing, not this


class CellTimeout(BaseException):
    """Raised when a cell or a call ran past its time."""


def _seconds(msg: dict) -> float | None:
    """The time limit `msg` carries (seconds, positive and finite); None when it carries none."""
    seconds = msg.get("timeout")
    return float(seconds) if type(seconds) in (int, float) and 0 < seconds < float("inf") else None


def _read_exact(fd: int, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _send(reply: dict, blobs: list | None = None) -> None:
    from lecture2 import wire

    try:
        frame = wire.pack(reply, blobs or [])
    except (ValueError, TypeError) as err:  # too large, or not JSON-able: say so instead
        frame = wire.pack({"id": reply.get("id"), "raised": {"types": ["ValueError"], "builtin": "ValueError",
                                                            "message": f"the answer's value could not be sent: {err}"[:500]}})
    view = memoryview(frame)
    while view:
        written = os.write(REPLY_FD, view)
        view = view[written:]


def _alarm(seconds: float) -> None:
    signal.setitimer(signal.ITIMER_REAL, max(0.0, seconds))


def _on_alarm(signum, frame):
    raise CellTimeout("ran past its time")


class Kernel:
    def __init__(self):
        from IPython.core.interactiveshell import InteractiveShell

        self.shell = InteractiveShell.instance(colors="NoColor", history_length=0)
        self.shell.history_manager.enabled = False
        self.sessions: dict[int, object] = {}
        self.next_session = 1
        signal.signal(signal.SIGALRM, _on_alarm)

    # -- cells

    def run_cells(self, cells: list, timeout: float) -> list[dict]:
        from IPython.utils.capture import capture_output

        statuses = []
        for cell in cells:
            start = _clock()
            error = None
            with capture_output(stdout=True, stderr=True, display=False) as captured:
                _alarm(timeout)
                try:
                    result = self.shell.run_cell(str(cell.get("source", "")), store_history=False, silent=False)
                    error = result.error_before_exec or result.error_in_exec
                except CellTimeout as err:  # raised outside the cell's own frames
                    error = err
                finally:
                    _alarm(0)
            _close_figures()
            status = {"index": cell.get("index"), "seconds": round(_clock() - start, 3),
                      "stdout": (captured.stdout + captured.stderr)[-MAX_STDOUT:]}
            if error is None:
                status["status"] = "ok"
            else:
                status.update(status="timeout" if isinstance(error, CellTimeout) else "error", **_where(error))
            statuses.append(status)
        return statuses

    # -- requests

    def handle(self, msg: dict, seconds: float, blobs: list, out: list) -> dict:
        """The reply to request `msg` (its tensors' bytes in `blobs`), within its `seconds`; the reply's own blobs go
        to `out`."""
        from lecture2 import answers, wire

        op = msg.get("op")
        if op == "run":
            return {"cells": wire.encode(self.run_cells(list(msg.get("cells") or []), seconds))}
        instrument = None
        if op in ("observe", "session_open"):  # its module first: it may register the records its inputs use
            instrument = answers.find_observer(str(msg.get("key")))
        args, kwargs = wire.decode(msg.get("args", []), blobs), wire.decode(msg.get("kwargs", {"$d": []}), blobs)
        args = tuple(args) if isinstance(args, (list, tuple)) else ()
        kwargs = kwargs if isinstance(kwargs, dict) else {}
        if op == "session_call":
            target = self.sessions[msg["name"]]
            method = msg.get("key")
            if not isinstance(method, str) or method.startswith("_"):
                raise AttributeError(f"no method {method!r}")
            return {"ok": wire.encode(self._timed(getattr(target, method), args, kwargs, seconds), out)}
        if op == "session_close":
            self.sessions.pop(msg.get("name"), None)
            return {"ok": None}
        name = msg.get("name")
        namespace = self.shell.user_ns
        if not isinstance(name, str) or name not in namespace:
            raise NameError(f"name {name!r} is not defined (your answer cell does not define it)")
        target = namespace[name]
        if op == "call":
            return {"ok": wire.encode(self._timed(target, args, kwargs, seconds), out)}
        if op == "observe":
            return {"ok": wire.encode(self._timed(instrument, (target, *args), kwargs, seconds), out)}
        if op == "session_open":
            obj = self._timed(instrument, (target, *args), kwargs, seconds)
            handle, self.next_session = self.next_session, self.next_session + 1
            self.sessions[handle] = obj
            return {"ok": handle}
        raise ValueError(f"unknown request {op!r}")

    def _timed(self, fn, args: tuple, kwargs: dict, seconds: float):
        """fn(*args, **kwargs) within the request's `seconds`, and what it prints swallowed."""
        saved = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = io.StringIO()
        _alarm(seconds)
        try:
            return fn(*args, **kwargs)
        finally:
            _alarm(0)
            sys.stdout, sys.stderr = saved
            _close_figures()


def _where(error: BaseException) -> dict:
    """An exception's class, message and the line of the cell it came from (for the report and feedback)."""
    info = {"ename": type(error).__name__, "message": str(error)[:500], "line": None}
    for frame, line in traceback.walk_tb(error.__traceback__):
        if frame.f_code.co_filename.startswith("<ipython-input-") or "/ipykernel_" in frame.f_code.co_filename \
                or frame.f_code.co_name == "<module>":
            info["line"] = line
    return info


def _close_figures() -> None:
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        try:
            plt.close("all")
        except Exception:
            pass


def _prepare_matplotlib() -> None:
    """Matplotlib's font cache, built by the grader and bound read-only, copied where matplotlib may write."""
    cache, target = os.environ.get("LECTURE2_MPL_CACHE"), os.environ.get("MPLCONFIGDIR")
    if cache and target and os.path.isdir(cache) and not os.path.exists(target):
        shutil.copytree(cache, target)
    os.environ.setdefault("MPLBACKEND", "agg")


def main(argv: list[str]) -> int:
    global REPLY_FD
    if "--reply-fd" in argv:
        REPLY_FD = int(argv[argv.index("--reply-fd") + 1])
    os.environ["NBGRADER_EXECUTION"] = "autograde"
    _prepare_matplotlib()
    from lecture2 import answers, wire  # the real package, before any cell can shadow it

    kernel = Kernel()
    import lecture2
    if "--no-torch" not in argv:
        try:  # every notebook of the course uses it: imported before the first request, while the judge may still be
            import torch  # noqa: F401   waiting for its turn (a second of a notebook's fixed cost)
        except ImportError:
            pass

    _send({"id": "hello", "ok": wire.encode({"lecture2": os.path.realpath(lecture2.__file__),
                                             "python": sys.version.split()[0]})})
    while True:
        try:
            size = struct.unpack(">I", _read_exact(0, 4))[0]
            if size > wire.LIMITS.message:
                return 3
            msg, blobs = wire.unpack(_read_exact(0, size))
        except EOFError:
            return 0
        except wire.Malformed:
            return 3
        seconds = _seconds(msg) if isinstance(msg, dict) else None
        if seconds is None:  # not a request of the judge's: every one says how long it may take
            return 3
        out: list = []
        try:
            reply = kernel.handle(msg, seconds, blobs, out)
        except CellTimeout:
            reply, out = {"timeout": f"did not return within {msg.get('timeout')} s"}, []
        except BaseException as err:  # the answer raised (SystemExit and the like included): described as data
            reply, out = {"raised": answers.describe_exception(err)}, []
        reply["id"] = msg.get("id")
        _send(reply, out)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
