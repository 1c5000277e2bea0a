"""Time by source line: where a training step's operator time goes, charged to the lines of the model's code that
ran them (the forward) or created their autograd nodes (the backward), seconds per step."""
from __future__ import annotations

import linecache
import os
import re
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from .timing import _check_callable


_TORCH_DIR = os.path.dirname(torch.__file__)
_LINE_KEY = "lecture2_source_line"


@dataclass(frozen=True)
class LineTime:
    """Operator time attributed to one source line of a model, per step (median over the timed steps).

    `forward_s`: operators the line ran in the forward; `backward_s`: operators the autograd engine ran
    for the graph nodes that line created. `line == 0` collects what ran outside the model's files
    (the loss in the caller, the optimizer, ...). Seconds.
    """

    file: str
    line: int
    code: str
    forward_s: float
    backward_s: float
    ops: int  # operators per step

    @property
    def seconds(self) -> float:
        return self.forward_s + self.backward_s


def model_files(model: torch.nn.Module) -> set[str]:
    """The source files of the `forward` methods of `model` and its submodules, PyTorch's own excluded:
    the files whose lines `time_by_line` attributes time to (a class defined in a notebook counts too). Full paths,
    as the code objects name them; `frame_in_files` matches them with torch.profiler's stack frames."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model 应是 torch.nn.Module, 得到 {type(model).__name__}")
    files = set()
    for module in model.modules():
        code = getattr(type(module).forward, "__code__", None)
        if code is not None and not os.path.abspath(code.co_filename).startswith(_TORCH_DIR):
            files.add(code.co_filename)
    return files


_FRAME = re.compile(r"^(?P<file>.+)\((?P<line>\d+)\): ")


def frame_in_files(frame_name: str, files: set[str]) -> bool:
    """Is a Python frame of torch.profiler's stacks (`with_stack=True`), named like "lecture2/models.py(95): forward",
    in one of `files` (from `model_files`: full paths)? The profiler names a file relative to the entry of
    sys.path (or of site-packages) it lies under, so a package's file reads "lecture2/models.py"; a file under no
    such entry (a notebook's cell) keeps its full path."""
    match = _FRAME.match(frame_name)
    if match is None:
        return False
    path = match.group("file")
    return any(f == path or f.endswith(os.sep + path) for f in files)


def _model_line(files: set[str]):
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename in files:
            return frame.f_code.co_filename, frame.f_lineno
        frame = frame.f_back
    return None


def time_by_line(fn: Callable[[], object], model: torch.nn.Module, *, warmup: int = 1, repeat: int = 5,
                 device: str | torch.device | None = None) -> list[LineTime]:
    """Where the time of `fn()` (e.g. one training step) goes, by source line of `model`'s code.

    Every PyTorch operator `fn` runs is timed and charged to the innermost line of the model's files on
    the Python stack when it ran (the forward), or, for the backward, to the line that created the
    autograd node it belongs to. Returns one `LineTime` per line, largest first, per step (the median over
    `repeat` timed calls after `warmup`). The profiler's stacks (`with_stack=True`) name only the function
    (its `def` line); this names the line.

    Each operator's time includes what the instrument itself costs around it (its Python dispatch mode, the
    stack walk): a few microseconds to tens of microseconds per operator, so lines that run many small operators
    are inflated, on every device. On CUDA each operator is also synchronized before and after, so the CPU's
    launches no longer overlap the GPU's work and each small kernel pays a full launch and wait: the total is
    longer than a real step and the split leans towards lines of many small operators; for the GPU's own time
    per operator read the profiler's CUDA time.
    """
    _check_callable(fn)
    files = model_files(model)
    cuda = (torch.device(device).type == "cuda") if device is not None else torch.cuda.is_available()
    steps = []
    for i in range(warmup + repeat):
        timer = _TimeOps(files, cuda)
        with _TagNodes(files), timer:
            fn()
        if i >= warmup:
            steps.append(timer)
    return _per_line(steps)


class _TagNodes(TorchFunctionMode):
    """Above autograd: the graph nodes a line of the model's `files` creates get its (file, line)."""

    def __init__(self, files: set[str]):
        super().__init__()
        self.files = files

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        where = _model_line(self.files)
        if where is not None:
            outs = out if isinstance(out, (tuple, list)) else (out,)
            stack = [t.grad_fn for t in outs if isinstance(t, torch.Tensor) and t.grad_fn is not None]
            while stack:
                node = stack.pop()
                if node is None or _LINE_KEY in node.metadata:
                    continue
                node.metadata[_LINE_KEY] = where
                stack.extend(next_node for next_node, _ in node.next_functions)
        return out


class _TimeOps(TorchDispatchMode):
    """Below autograd: every operator, forward and backward, timed (seconds) and counted under its line's key,
    ("forward", the innermost model line on the stack) or ("backward", the line its autograd node was tagged with);
    on CUDA synchronized before and after."""

    def __init__(self, files: set[str], cuda: bool):
        super().__init__()
        self.files, self.cuda = files, cuda
        self.seconds: dict = defaultdict(float)
        self.ops: dict = defaultdict(int)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        node = _current_node()
        key = ("backward", node.metadata.get(_LINE_KEY)) if node is not None else ("forward", _model_line(self.files))
        if self.cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        out = func(*args, **(kwargs or {}))
        if self.cuda:
            torch.cuda.synchronize()
        self.seconds[key] += time.perf_counter() - start
        self.ops[key] += 1
        return out


def _current_node():
    """The autograd node whose backward is running now (None in the forward, or on a torch without the hook)."""
    return getattr(torch._C, "_current_autograd_node", lambda: None)()


def _per_line(steps: list[_TimeOps]) -> list[LineTime]:
    """One LineTime per line the timed steps charged, the median over the steps, largest first."""
    wheres = {where for step in steps for (_, where) in step.seconds}
    result = []
    for where in wheres:
        fwd = statistics.median(step.seconds.get(("forward", where), 0.0) for step in steps)
        bwd = statistics.median(step.seconds.get(("backward", where), 0.0) for step in steps)
        ops = round(statistics.median(step.ops.get(("forward", where), 0) + step.ops.get(("backward", where), 0)
                                      for step in steps))
        file, line = where if where is not None else ("", 0)
        code = linecache.getline(file, line).strip() if line else "(outside the model's files: loss, optimizer, ...)"
        result.append(LineTime(file, line, code, fwd, bwd, ops))
    return sorted(result, key=lambda r: -r.seconds)
