"""Counting in a rank: the collectives a step issues (torch.distributed's functions wrapped) and the bytes the
process writes (/proc/self/io: on gloo, what it sent over its sockets).

"Bytes of a collective" is the size of the whole tensor it works on: the tensor of an all_reduce, broadcast or
reduce, the input of a reduce_scatter or all_to_all, the output of an all_gather. Runs inside a rank (imported by
lecture2.distributed.worker); imports torch when a log is installed.
"""
from __future__ import annotations

import threading

OPS = {  # torch.distributed function -> (op, which tensor's bytes count)
    "all_reduce": ("all_reduce", "tensor"), "broadcast": ("broadcast", "tensor"), "reduce": ("reduce", "tensor"),
    "reduce_scatter_single": ("reduce_scatter", "input"), "reduce_scatter_tensor": ("reduce_scatter", "input"),
    "reduce_scatter": ("reduce_scatter", "input_list"),
    "all_gather_single": ("all_gather", "output"), "all_gather_into_tensor": ("all_gather", "output"),
    "all_gather": ("all_gather", "output_list"), "all_to_all_single": ("all_to_all", "input"),
}
_POSITION = {"tensor": 0, "output": 0, "output_list": 0, "input": 1, "input_list": 1}  # positional index
_KEYWORD = {"tensor": "tensor", "output": "output_tensor", "output_list": "tensor_list", "input": "input",
            "input_list": "input_list"}  # ... or keyword name


class CollectiveLog:
    """Records every collective called through torch.distributed while recording is on.

    It wraps the functions of `torch.distributed` (and of `distributed_c10d`, where deprecated aliases call
    them), so it sees what DDP's communication hook, ZeroRedundancyOptimizer, FSDP2 and lecture2.zero call;
    a call made inside another recorded call counts once.
    """

    def __init__(self):
        import torch.distributed as dist
        import torch.distributed.distributed_c10d as c10d

        self.calls: list[dict] = []
        self.recording = False
        self._local = threading.local()  # the nesting depth of recorded calls, per thread
        for name, (op, which) in OPS.items():
            for module in (dist, c10d):
                original = getattr(module, name, None)
                if original is not None:
                    setattr(module, name, self._wrap(original, op, which))

    def _wrap(self, fn, op: str, which: str):
        log = self

        def recorded(*args, **kwargs):
            depth = getattr(log._local, "depth", 0)
            if depth or not log.recording:
                log._local.depth = depth + 1
                try:
                    return fn(*args, **kwargs)
                finally:
                    log._local.depth = depth
            log.calls.append(_describe(op, which, args, kwargs))
            log._local.depth = 1
            try:
                return fn(*args, **kwargs)
            finally:
                log._local.depth = 0

        recorded.__name__ = getattr(fn, "__name__", "collective")
        recorded.__doc__ = fn.__doc__
        return recorded

    def start(self) -> None:
        self.calls, self.recording = [], True

    def stop(self) -> list[dict]:
        self.recording = False
        return self.calls


def _describe(op: str, which: str, args: tuple, kwargs: dict) -> dict:
    """{"op", "bytes", "numel", "dtype"} of one call, from the tensor (or list of tensors) `which` names."""
    import torch

    arg = args[_POSITION[which]] if len(args) > _POSITION[which] else kwargs.get(_KEYWORD[which])
    if arg is None and which == "output":
        arg = kwargs.get("output")
    tensors = [t for t in (arg if isinstance(arg, (list, tuple)) else [arg]) if isinstance(t, torch.Tensor)]
    return {"op": op, "bytes": sum(t.numel() * t.element_size() for t in tensors),
            "numel": sum(t.numel() for t in tensors),
            "dtype": str(tensors[0].dtype).replace("torch.", "") if tensors else "?"}


_LOG: CollectiveLog | None = None


def install() -> CollectiveLog:
    """Wrap torch.distributed's collectives in this process (once); the log every job of this rank records into."""
    global _LOG
    if _LOG is None:
        _LOG = CollectiveLog()
    return _LOG


def log() -> CollectiveLog:
    """The log `install` made (a rank installs it before its first job)."""
    if _LOG is None:
        raise RuntimeError("no CollectiveLog installed in this process (lecture2.distributed.counting.install)")
    return _LOG


def written_bytes() -> int | None:
    """Bytes this process has written (write/writev/send to files and sockets), from /proc/self/io."""
    try:
        with open("/proc/self/io", encoding="ascii") as f:
            for line in f:
                if line.startswith("wchar:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None
