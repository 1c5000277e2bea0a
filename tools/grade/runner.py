"""Stage 3b: run one notebook's cells. This file runs INSIDE the sandbox, beside the student's code.

    python runner.py KEY_FD EVENTS_FD PLAN.json [--cell-timeout SECONDS]

It reads the HMAC key once from the inherited file descriptor KEY_FD and closes it, reads the plan (the
cells to run, hidden tests included) and deletes the file, all before any cell runs; then it executes the
plan's code cells in order in one IPython shell (magics and `!` commands work, figures are captured), as
nbgrader's kernel would. It appends one signed line per event to EVENTS_FD, a file the grader opened
outside the sandbox (no path to it exists inside):

    {"seq": n, "type": "start" | "end" | "check" | "done", ...}<TAB>hex HMAC-SHA256(key, json)

`check` events come only from `lecture2.checks.exercise` itself (the caller's code object is verified),
while a test cell runs; `end` events carry the cell's status and, for a failed check, its message fields.

Every plain function an answer cell defines is replaced by a wrapper that runs it in a thread of its own:
while a student's function runs, no frame of the check that called it (with its expected values) is on
its stack. PyTorch keeps some state per thread (grad mode, inference mode, autocast, dispatch and function
modes such as the FLOP counter, saved-tensor hooks): a call made while any of it differs from a new
thread's defaults runs in the caller's thread instead, so that a check's `torch.no_grad()` or FLOP counter
applies to the answer as in the lab. (Classes run as they are.)
The grader trusts nothing else this process writes (outputs.json holds what cells printed, for display).
Only the standard library and IPython are imported before the notebook's own cells run.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import hmac
import json
import os
import signal
import sys
import threading
import time
import types

MAX_TEXT = 100_000  # characters of stdout kept per cell (display only)
MAX_IMAGES = 4  # figures kept per cell (display only)


class CellTimeout(BaseException):
    """Raised in a cell that ran past --cell-timeout: the notebook goes on with the next cell."""


def _signer(key: bytes, fd: int):
    """emit(**fields): append one signed event to `fd`. The key lives only in this closure."""
    seq = [0]

    def emit(**fields) -> None:
        fields["seq"] = seq[0]
        seq[0] += 1
        body = json.dumps(fields, ensure_ascii=True, sort_keys=True, default=str)
        tag = hmac.new(key, body.encode(), hashlib.sha256).hexdigest()
        os.write(fd, f"{body}\t{tag}\n".encode())

    return emit


_in_answer = threading.local()


def _isolated(fn):
    """`fn`, called in a fresh thread (its stack holds none of the caller's frames); exceptions and the
    return value come back as if called directly. A cell timeout in the caller stops the thread too."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        if getattr(_in_answer, "active", False) or not _plain_torch_state():
            return fn(*args, **kwargs)  # already isolated, or the check set thread-local torch state
        box = {}

        def target():
            _in_answer.active = True
            try:
                box["value"] = fn(*args, **kwargs)
            except BaseException as err:  # noqa: BLE001  handed back to the caller below
                box["error"] = err

        thread = threading.Thread(target=target, name="answer", daemon=True)
        thread.start()
        try:
            while thread.is_alive():
                thread.join(0.05)
        except BaseException:  # the cell's timeout (or an interrupt) in the caller: stop the answer as well
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(CellTimeout))
            thread.join(5)
            raise
        if "error" in box:
            raise box.pop("error")
        return box.pop("value")

    return call


def _plain_torch_state() -> bool:
    """Is the calling thread's PyTorch state what a new thread starts with? (Any doubt says no.)"""
    torch = sys.modules.get("torch")
    if torch is None:
        return True
    try:
        if not torch.is_grad_enabled() or torch.is_inference_mode_enabled():
            return False
        if any(torch.is_autocast_enabled(device) for device in ("cpu", "cuda")):
            return False
        c = torch._C
        if c._len_torch_function_stack() or c._len_torch_dispatch_stack():
            return False
        return c._autograd._top_saved_tensors_default_hooks(False) is None
    except Exception:  # an API this torch lacks: keep the caller's thread
        return False


def _made_in_a_cell(value: object) -> bool:
    return type(value) is types.FunctionType and not os.path.exists(value.__code__.co_filename)


def _short(value: object, limit: int = 300) -> str:
    try:
        text = repr(value) if type(value) in (int, float, str, bool, list, tuple, dict, type(None)) else type(value).__name__
    except Exception:
        text = type(value).__name__
    return text if len(text) <= limit else text[:limit] + "…"


def _failure(error: BaseException) -> dict:
    """What the grader may show of an exception: its type, the top-level line of the cell that raised, and
    for a failed check its fields (what, expected, hint). The message is kept for the instructor only."""
    info = {"ename": type(error).__name__, "message": str(error)[:2000]}
    tb, line = error.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code.co_name == "<module>":
            line = tb.tb_lineno
            break
        tb = tb.tb_next
    info["line"] = line
    if type(error).__name__ == "CheckFailed":
        what, hint = getattr(error, "what", None), getattr(error, "hint", None)
        info["what"] = what if isinstance(what, str) else None
        info["hint"] = hint if isinstance(hint, str) else None
        info["want"] = _short(getattr(error, "want", None))
    return info


def main(argv: list[str]) -> int:
    key_fd, events_fd, plan_path = int(argv[0]), int(argv[1]), argv[2]
    cell_timeout = float(argv[argv.index("--cell-timeout") + 1]) if "--cell-timeout" in argv else 120.0
    key = b""
    while len(key) < 32:
        chunk = os.read(key_fd, 64)
        if not chunk:
            break
        key += chunk
    os.close(key_fd)
    if len(key) < 32:
        print("runner: no key on the inherited descriptor", file=sys.stderr)
        return 2
    emit = _signer(key, events_fd)
    del key
    with open(plan_path, encoding="utf-8") as f:
        plan = json.load(f)
    os.unlink(plan_path)
    os.environ["NBGRADER_EXECUTION"] = "autograde"
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")

    import lecture2  # noqa: F401  the real package, before any cell can shadow it
    from lecture2 import checks

    checks_file = os.path.realpath(checks.__file__)
    current = {"cell": None, "kind": None}

    def report(name: str, groups: dict | None = None) -> None:
        """Called by lecture2.checks._report from lecture2.checks.exercise, and by nothing else."""
        frame = sys._getframe(1)
        caller, outer = frame.f_code, frame.f_back.f_code if frame.f_back else None
        genuine = (caller.co_name == "_report" and outer is not None and outer.co_name == "exercise"
                   and os.path.realpath(caller.co_filename) == checks_file
                   and os.path.realpath(outer.co_filename) == checks_file)
        if not (genuine and current["kind"] == "test" and type(name) is str):
            emit(type="foreign_report", cell=current["cell"])
            return
        clean = None
        if type(groups) is dict:
            clean = {}
            for label, outcome in list(groups.items())[:50]:
                if type(label) is str and type(outcome) is dict:
                    text = {k: outcome.get(k)[:1000] if type(outcome.get(k)) is str else None
                            for k in ("hint", "what", "want", "message")}
                    clean[label[:100]] = {"passed": outcome.get("passed") is True, **text}
        emit(type="check", cell=current["cell"], name=name[:200], groups=clean)

    import types

    sink = types.ModuleType("_lecture2_result_sink")
    sink.report = report
    sys.modules["_lecture2_result_sink"] = sink

    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    shell = InteractiveShell.instance(colors="NoColor", history_length=0)
    shell.history_manager.enabled = False
    try:
        shell.enable_matplotlib("inline")
    except Exception:
        pass

    def on_alarm(signum, frame):
        raise CellTimeout(f"cell ran past {cell_timeout:g} s")

    signal.signal(signal.SIGALRM, on_alarm)
    outputs = []
    for cell in plan["cells"]:
        index, kind = cell["index"], cell["kind"]
        current.update(cell=index, kind=kind)
        emit(type="start", cell=index)
        start = time.perf_counter()
        error = None
        before = {id(v) for v in shell.user_ns.values()}
        with capture_output(stdout=True, stderr=True, display=True) as captured:
            signal.setitimer(signal.ITIMER_REAL, cell_timeout)
            try:
                result = shell.run_cell(cell["source"], store_history=False, silent=False)
                error = result.error_before_exec or result.error_in_exec
            except CellTimeout as err:  # raised outside the cell's own frames
                error = err
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        current.update(cell=None, kind=None)
        if kind == "answer":
            for name, value in list(shell.user_ns.items()):
                if id(value) not in before and _made_in_a_cell(value):
                    shell.user_ns[name] = _isolated(value)
        seconds = round(time.perf_counter() - start, 3)
        if error is None:
            emit(type="end", cell=index, status="ok", seconds=seconds)
        else:
            status = "timeout" if isinstance(error, CellTimeout) else "error"
            emit(type="end", cell=index, status=status, seconds=seconds, **_failure(error))
        images = [o.data["image/png"] for o in captured.outputs if "image/png" in o.data][:MAX_IMAGES]
        outputs.append({"cell": index, "stdout": captured.stdout[-MAX_TEXT:], "stderr": captured.stderr[-MAX_TEXT:],
                        "images": images})
    emit(type="done")
    with open("outputs.json", "w", encoding="utf-8") as f:
        json.dump(outputs, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
