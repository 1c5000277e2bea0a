"""A guard for grading kernels: before every cell, put back what a submission may have monkeypatched.

Installed by the class grader (tools/grade.py) through the kernel's `exec_lines`; never imported by a
notebook. Right after each cell runs, and again before the next, it restores the builtins, the top-level attributes of `math`, `random`,
`importlib`, `torch` and `torch.Tensor`, and lecture2's own modules, to what they were when the kernel
started, so a test cell always checks with the real functions. It replaces `os._exit` with an error, so a
submission cannot kill its kernel that way. Each restore is printed once with a marker the grader reports.
"""
from __future__ import annotations

import builtins
import importlib
import math
import os
import random
import sys

MARKER = "[lecture2-guard] restored"
# The builtins `restore` itself calls, taken now: a submission may have replaced the builtins it restores.
_vars, _setattr, _delattr, _isinstance, _sorted, _print, _type = vars, setattr, delattr, isinstance, sorted, print, type
_callable, _getattr = callable, getattr


def _modules():
    import torch

    import lecture2
    from lecture2 import checks, fmt, hardware, measure, models

    return {"builtins": builtins, "math": math, "random": random, "importlib": importlib, "torch": torch,
            "torch.Tensor": torch.Tensor, "lecture2": lecture2, "lecture2.checks": checks, "lecture2.fmt": fmt,
            "lecture2.hardware": hardware, "lecture2.measure": measure, "lecture2.models": models}


def _no_exit(status=0):
    raise RuntimeError(f"os._exit({status}) is disabled while grading (评分时不允许 os._exit)")


class Guard:
    def __init__(self):
        self.saved = {name: (module, dict(vars(module))) for name, module in _modules().items()}
        self.saved_modules = {name: sys.modules.get(name) for name in self.saved if name in sys.modules}

    def restore(self, *args) -> list[str]:
        """Put every changed attribute back; returns the names it restored."""
        restored = []
        for name, module in self.saved_modules.items():
            if sys.modules.get(name) is not module:
                sys.modules[name] = module
                restored.append(f"sys.modules[{name!r}]")
        for name, (module, snapshot) in self.saved.items():
            current = _vars(module)
            if _isinstance(module, _type):  # a class: an attribute added here shadows its base (Tensor.nbytes)
                for key in [k for k in current if k not in snapshot and k not in _BENIGN_CLASS_KEYS]:
                    try:
                        _delattr(module, key)
                        restored.append(f"{name}.{key}")
                    except (AttributeError, TypeError):
                        pass
            for key, value in snapshot.items():
                if key in ("__dict__", "__weakref__", "__doc__") or key in _IPYTHON_OWNED:
                    continue
                now = current.get(key, _MISSING)
                if now is value:
                    continue
                if name.startswith("lecture2") and (not _callable(value) or _same(now, value)):
                    continue  # a test cell's importlib.reload made new objects from the same file
                if name == "torch" and _getattr(now, "__wrapped__", None) is value:
                    continue  # torch wraps some of its own functions when torch._dynamo is imported
                try:
                    _setattr(module, key, value)
                except (AttributeError, TypeError):
                    continue
                restored.append(f"{name}.{key}")
        os._exit = _no_exit
        if restored:
            # stdout, not stderr: nbgrader gives no points to a test cell with any stderr output
            _print(f"{MARKER}: {', '.join(_sorted(restored))}", file=sys.stdout)
        return restored


_MISSING = object()
_BENIGN_CLASS_KEYS = {"__slotnames__"}  # copyreg caches this on a class the first time it is copied
# Names IPython itself rebinds while it runs cells: not a submission's doing.
_IPYTHON_OWNED = {"_", "__", "___", "get_ipython", "display", "exit", "quit", "__IPYTHON__", "input", "raw_input",
                  "getpass", "__builtins__", "__cached__", "__loader__", "__spec__", "__file__", "__package__"}


def _same(a, b) -> bool:
    """Is `a` the same thing as `b`, where a test cell's `importlib.reload(lecture2.checks)` makes new objects
    from the same file? Functions compare by their code, classes by their name, other values by ==."""
    if a is b:
        return True
    code_a, code_b = getattr(a, "__code__", None), getattr(b, "__code__", None)
    if code_a is not None and code_b is not None:
        return (code_a.co_filename, code_a.co_firstlineno, code_a.co_code) == (
            code_b.co_filename, code_b.co_firstlineno, code_b.co_code)
    if isinstance(a, type) and isinstance(b, type):
        return (a.__module__, a.__qualname__) == (b.__module__, b.__qualname__)
    wrapped_a, wrapped_b = getattr(a, "__wrapped__", None), getattr(b, "__wrapped__", None)
    if wrapped_a is not None and wrapped_b is not None:  # functools.lru_cache and other wrappers
        return _same(wrapped_a, wrapped_b)
    try:
        return bool(a == b) and type(a) is type(b)
    except Exception:
        return False


def install() -> Guard:
    """Snapshot now and restore before every cell of this IPython kernel."""
    guard = Guard()
    os._exit = _no_exit
    guard.saved["os"] = (os, dict(vars(os)))  # the patched _exit is the reference from now on
    ip = get_ipython()  # noqa: F821  (defined inside IPython)
    ip.events.register("post_execute", guard.restore)  # at once, before IPython itself needs the builtins
    ip.events.register("pre_run_cell", guard.restore)
    return guard
