"""Bytes in a rank: what it holds between steps (params, grads, optimizer states; each storage once, a DTensor
by its local shard) and the most it uses during a step (glibc's bytes in use after every aten op, on a CPU).

Runs inside a rank (lecture2.distributed.engines and tensor_parallel call it). Units: bytes.
"""
from __future__ import annotations


def local(t):
    """The rank's own tensor behind a DTensor (FSDP2's sharded parameters, gradients, optimizer states)."""
    to_local = getattr(t, "to_local", None)
    return to_local() if callable(to_local) else t


def held(groups: dict[str, list]) -> dict[str, int]:
    """Bytes per part, each storage counted once, in the first part that names it."""
    seen: set = set()
    out = {}
    for part, tensors in groups.items():
        total = 0
        for t in tensors:
            if t is None:
                continue
            t = local(t)
            storage = t.untyped_storage()
            key = (t.device.type, t.device.index, storage.data_ptr(), storage.nbytes())
            if storage.nbytes() == 0 or key in seen:
                continue
            seen.add(key)
            total += storage.nbytes()
        out[part] = total
    return out


def optimizer_groups(model, optimizer) -> dict[str, list]:
    """{"params", "grads", "optimizer", "step_counters"}: the tensors a model and its torch optimizer hold."""
    states = list(optimizer.state.values())
    return {
        "params": list(model.parameters()),
        "grads": [p.grad for p in model.parameters()],
        "optimizer": [v for s in states for k, v in s.items() if k != "step" and hasattr(v, "untyped_storage")],
        "step_counters": [v for s in states for k, v in s.items() if k == "step" and hasattr(v, "untyped_storage")],
    }


_MALLINFO = None  # glibc's mallinfo2, once looked up (False: not there)


def in_use_bytes() -> int | None:
    """glibc's bytes in use by malloc (small blocks + mmapped ones), or None where there is no mallinfo2."""
    import ctypes

    global _MALLINFO
    if _MALLINFO is None:
        class Info(ctypes.Structure):
            _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                       "fsmblks", "uordblks", "fordblks", "keepcost")]
        try:
            libc = ctypes.CDLL(None)
            libc.mallinfo2.restype = Info
            _MALLINFO = libc.mallinfo2
        except (OSError, AttributeError):
            _MALLINFO = False
    if not _MALLINFO:
        return None
    info = _MALLINFO()
    return int(info.uordblks + info.hblkhd)


def peak_watch():
    """A TorchDispatchMode that records the most bytes in use after any aten op while it is active, per phase
    (`phase(name)` starts one; lecture2.zero's engine announces its phases)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class PeakWatch(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.start = in_use_bytes()
            self.current = "step"
            self.peaks = {}

        def phase(self, name: str) -> None:
            self.current = name
            self._sample()

        def _sample(self) -> None:
            now = in_use_bytes()
            if now is not None and now > self.peaks.get(self.current, -1):
                self.peaks[self.current] = now

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            self._sample()
            return out

    return PeakWatch()
