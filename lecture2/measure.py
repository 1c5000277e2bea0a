"""Instruments: FLOPs of a callable, bytes autograd saves for backward, peak CUDA memory, and timing.

Every function takes a callable and its arguments, runs it, and reports what happened; none of them
knows a formula. Units: FLOPs (floating-point operations, a multiply-add counts 2), bytes, seconds.
"""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch
from torch.utils import flop_counter
from torch.utils.flop_counter import FlopCounterMode

__all__ = ["Timing", "SavedTensor", "benchmark", "count_flops", "flop_breakdown", "peak_memory",
           "saved_bytes", "saved_tensors"]


def _check_callable(fn) -> None:
    if not callable(fn):
        raise TypeError(f"需要一个可调用对象 (callable), 例如 lambda: model(x); 得到 {type(fn).__name__}")


# PyTorch's FLOP counter registers the CUDA attention kernels but not the CPU one that
# scaled_dot_product_attention dispatches to, so on CPU it would count attention as 0 FLOPs.
# These formulas are the counter's own (sdpa_flop_count), applied to the CPU ops.
def _cpu_sdpa_forward(query, key, value, *args, out_shape=None, **kwargs) -> int:
    return flop_counter.sdpa_flop_count(query, key, value)


def _cpu_sdpa_backward(grad_out, query, key, value, *args, out_shape=None, **kwargs) -> int:
    return flop_counter.sdpa_backward_flop_count(grad_out, query, key, value)


_EXTRA_FLOP_RULES = {}
if hasattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu"):
    _EXTRA_FLOP_RULES[torch.ops.aten._scaled_dot_product_flash_attention_for_cpu] = _cpu_sdpa_forward
    _EXTRA_FLOP_RULES[torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward] = _cpu_sdpa_backward


def _flop_mode() -> FlopCounterMode:
    # custom_mapping wraps each rule so that it receives shapes, as the counter's own rules do
    return FlopCounterMode(display=False, custom_mapping=dict(_EXTRA_FLOP_RULES))


def count_flops(fn: Callable, *args, **kwargs) -> int:
    """FLOPs that `fn(*args, **kwargs)` performs, as PyTorch's FLOP counter sees them.

    Counts matmuls, convolutions and attention (the CPU attention kernel included); elementwise ops,
    norms and softmax count 0, as in the counter. Whatever backward `fn` runs is counted too.
    """
    return sum(flop_breakdown(fn, *args, **kwargs).values())


def flop_breakdown(fn: Callable, *args, **kwargs) -> dict[str, int]:
    """FLOPs of `fn(*args, **kwargs)` by aten op name (e.g. {"mm": 1024, "bmm": 512})."""
    _check_callable(fn)
    mode = _flop_mode()
    with mode:
        fn(*args, **kwargs)
    counts = mode.get_flop_counts().get("Global", {})
    return {getattr(op, "__name__", str(op)).split(".")[0]: int(n) for op, n in counts.items()}


@dataclass(frozen=True)
class SavedTensor:
    """One storage autograd keeps for backward: its shape, dtype and size in bytes."""

    shape: tuple[int, ...]
    dtype: torch.dtype
    nbytes: int


def _storage_key(t: torch.Tensor) -> tuple:
    storage = t.untyped_storage()
    return (t.device.type, t.device.index, storage.data_ptr())


def saved_tensors(fn: Callable, *args, exclude: Iterable[torch.Tensor] = (), **kwargs) -> list[SavedTensor]:
    """The storages autograd saves while `fn(*args, **kwargs)` builds its graph, one entry per storage.

    Deduplicated by storage (a tensor saved by two ops, or a view of a saved tensor, counts once) and
    parameters excluded: pass `exclude=model.parameters()` (they are held anyway, graph or not). Pass
    `fn` that runs the forward only; the graph it builds is dropped when this returns.
    """
    _check_callable(fn)
    skip = {_storage_key(p) for p in exclude}
    found: dict[tuple, SavedTensor] = {}
    keep_alive = []  # hold every packed tensor so no storage address is reused during the call

    def pack(t: torch.Tensor):
        keep_alive.append(t)
        key = _storage_key(t)
        if key not in skip and key not in found and t.device.type != "meta":
            storage = t.untyped_storage()
            found[key] = SavedTensor(tuple(t.shape), t.dtype, storage.nbytes())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn(*args, **kwargs)
    del out, keep_alive
    return list(found.values())


def saved_bytes(fn: Callable, *args, exclude: Iterable[torch.Tensor] = (), **kwargs) -> int:
    """Bytes autograd keeps for backward while `fn` runs: see `saved_tensors` (deduplicated, params excluded)."""
    return sum(t.nbytes for t in saved_tensors(fn, *args, exclude=exclude, **kwargs))


def peak_memory(fn: Callable, *args, device: str | torch.device = "cuda", **kwargs) -> int:
    """Peak bytes the CUDA caching allocator held above what was allocated before `fn` ran.

    CUDA only: on CPU PyTorch keeps no allocator statistics; use `saved_bytes` there.
    """
    _check_callable(fn)
    device = torch.device(device)
    if device.type != "cuda":
        raise ValueError("peak_memory 需要 CUDA (allocator statistics exist only on CUDA); on CPU use saved_bytes")
    if not torch.cuda.is_available():
        raise RuntimeError("没有可用的 CUDA 设备 (no CUDA device available)")
    torch.cuda.synchronize(device)
    before = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    fn(*args, **kwargs)
    torch.cuda.synchronize(device)
    return torch.cuda.max_memory_allocated(device) - before


@dataclass(frozen=True)
class Timing:
    """Wall-clock times (seconds) of repeated calls; `median` is the figure to report."""

    times: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def best(self) -> float:
        return min(self.times)


def _synchronize(device: str | torch.device | None) -> None:
    kind = torch.device(device).type if device is not None else None
    if kind == "cuda" or (kind is None and torch.cuda.is_available()):
        torch.cuda.synchronize()
    elif kind == "mps":
        torch.mps.synchronize()


def benchmark(fn: Callable, *args, warmup: int = 3, repeat: int = 10, device: str | torch.device | None = None,
              **kwargs) -> Timing:
    """Time `fn(*args, **kwargs)`: `warmup` untimed calls, then `repeat` timed ones, each between syncs.

    CUDA kernels launch asynchronously: without `torch.cuda.synchronize()` after the call the timer
    stops when the launch returns, not when the work is done. The device to synchronize defaults to
    CUDA when present.
    """
    _check_callable(fn)
    for name, value in (("warmup", warmup), ("repeat", repeat)):
        if not isinstance(value, int) or isinstance(value, bool) or value < (0 if name == "warmup" else 1):
            raise ValueError(f"{name} 应是{'非负' if name == 'warmup' else '正'}整数 (int), 得到 {value!r}")
    for _ in range(warmup):
        fn(*args, **kwargs)
    _synchronize(device)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args, **kwargs)
        _synchronize(device)
        times.append(time.perf_counter() - start)
    return Timing(tuple(times))
