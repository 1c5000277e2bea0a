"""Instruments: FLOPs of a callable, bytes autograd saves for backward, peak CUDA memory, and timing.

Every function takes a callable and its arguments, runs it, and reports what happened; none of them
knows a formula. Units: FLOPs (floating-point operations, a multiply-add counts 2), bytes, seconds.
"""
from __future__ import annotations

import linecache
import os
import re
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch
from torch.utils import flop_counter
from torch.utils.flop_counter import FlopCounterMode

__all__ = ["Timing", "PairedTiming", "SavedTensor", "LineTime", "SlowDataset", "benchmark", "block_saved_bytes",
           "count_flops", "flop_breakdown", "frame_in_files", "kept_bytes", "model_files", "paired_times",
           "peak_memory", "peak_rss", "saved_bytes", "saved_tensors", "time_by_line"]


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


def block_saved_bytes(B: int, T: int, d_model: int, n_heads: int, dtype: torch.dtype = torch.float32,
                      fused_attention: bool = False, seed: int = 0) -> int:
    """Bytes autograd saves for backward in one fresh `models.TransformerBlock(d_model, n_heads)` (explicit or
    fused attention, in `dtype`, on the CPU) run on an input (B, T, d_model) that requires grad, as every layer's
    input in a stack does: `saved_bytes`, the block's parameters excluded."""
    from .models import TransformerBlock

    torch.manual_seed(seed)
    block = TransformerBlock(d_model, n_heads, fused_attention=fused_attention).to(dtype)
    x = torch.randn(B, T, d_model, dtype=dtype, requires_grad=True)
    return saved_bytes(lambda: block(x), exclude=block.parameters())


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

    @property
    def spread(self) -> float:
        """Interquartile range over the median (a fraction): how much the middle half of the calls differ."""
        if len(self.times) < 2:
            return 0.0
        q1, _, q3 = statistics.quantiles(self.times, n=4, method="inclusive")
        return (q3 - q1) / self.median if self.median > 0 else 0.0


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


@dataclass(frozen=True)
class PairedTiming:
    """Two callables timed alternately (a neighbour's load slows both alike): median seconds of each, the median
    of the per-pair ratios b / a, and the 25th-75th percentile of those ratios (the noise band)."""

    a: float
    b: float
    ratio: float
    band: tuple[float, float]

    def verdict(self, margin: float = 0.05) -> str:
        """"faster" or "slower" (b against a) only when the whole band lies beyond 1 -/+ `margin`; else "unclear"."""
        if self.band[1] < 1 - margin:
            return "faster"
        if self.band[0] > 1 + margin:
            return "slower"
        return "unclear"


def paired_times(fn_a: Callable, fn_b: Callable, repeat: int = 9, warmup: int = 2,
                 device: str | torch.device | None = None) -> PairedTiming:
    """Time `fn_a()` and `fn_b()` alternately, `repeat` pairs after `warmup` untimed ones (seconds, each call
    between syncs as in `benchmark`): see PairedTiming."""
    _check_callable(fn_a), _check_callable(fn_b)
    for _ in range(warmup):
        fn_a(), fn_b()
    times_a, times_b = [], []
    for _ in range(repeat):
        times_a.append(benchmark(fn_a, warmup=0, repeat=1, device=device).median)
        times_b.append(benchmark(fn_b, warmup=0, repeat=1, device=device).median)
    ratios = sorted(b / a for a, b in zip(times_a, times_b))
    band = (ratios[round(0.25 * (len(ratios) - 1))], ratios[round(0.75 * (len(ratios) - 1))])
    return PairedTiming(statistics.median(times_a), statistics.median(times_b), statistics.median(ratios), band)


def kept_bytes(fn: Callable, inp: torch.Tensor, exclude: Iterable[torch.Tensor] = ()) -> int:
    """Bytes the forward `fn(inp)` leaves alive for backward, whoever keeps them: autograd's saved tensors, a
    checkpoint's inputs, or selective checkpointing's cache of chosen outputs (which `saved_bytes` cannot see).

    Counted as: the input's storage, plus every storage an op made during the call (seen by a TorchDispatchMode,
    held only by weak references, so it keeps nothing alive) that is still alive when `fn` returns, its output
    and the `exclude`d tensors (the parameters) left out."""
    from torch.multiprocessing.reductions import StorageWeakRef
    from torch.utils._python_dispatch import TorchDispatchMode

    _check_callable(fn)

    class _MadeStorages(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.made: dict[int, tuple[StorageWeakRef, int]] = {}

        def __torch_dispatch__(self, op, types, args=(), kwargs=None):
            out = op(*args, **(kwargs or {}))
            for t in out if isinstance(out, (tuple, list)) else [out]:
                if isinstance(t, torch.Tensor):
                    storage = t.untyped_storage()
                    self.made[storage.data_ptr()] = (StorageWeakRef(storage), storage.nbytes())  # the latest here
            return out

    skip = {p.untyped_storage().data_ptr() for p in exclude}
    with _MadeStorages() as mode:
        out = fn(inp)
    skip.add(out.untyped_storage().data_ptr())
    alive = sum(n for ptr, (ref, n) in mode.made.items() if ptr not in skip and not ref.expired())
    return inp.untyped_storage().nbytes() + alive


def peak_rss() -> int:
    """Peak resident set size of this process so far, in bytes (`resource.getrusage`; Linux and macOS).

    The peak since the process started: to see what one piece of work needs, run it in a fresh process
    and compare the peak before and after it. On a CPU this is the counterpart of CUDA's
    `max_memory_allocated`, including what the allocator and the libraries hold.
    """
    try:
        import resource
    except ImportError:  # Windows
        raise RuntimeError("peak_rss 需要 resource 模块 (Linux/macOS); on Windows use the Task Manager") from None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024  # macOS reports bytes, Linux KiB


class SlowDataset(torch.utils.data.Dataset):
    """`n_items` random (x, y) pairs, each taking `seconds_per_item` to "load": a stand-in for reading and
    decoding real data. The wait releases the CPU, as waiting for a disk or a network does, and the pairs are
    made once up front, so a loader's workers spend no CPU time of their own (on a 2-core machine they
    would otherwise compete with the training step for the cores).

    Defined in a module, not a notebook, so that DataLoader workers started by "spawn" (macOS, Windows)
    can import it. Item i is the same pair in every loader configuration.
    """

    def __init__(self, n_items: int, in_features: int, out_features: int, seconds_per_item: float, seed: int = 0):
        for name, value in (("n_items", n_items), ("in_features", in_features), ("out_features", out_features)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} 应是正整数 (int), 得到 {value!r}")
        if not isinstance(seconds_per_item, (int, float)) or isinstance(seconds_per_item, bool) or seconds_per_item < 0:
            raise ValueError(f"seconds_per_item 应是非负的秒数, 得到 {seconds_per_item!r}")
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n_items, in_features, generator=g)
        self.y = torch.randn(n_items, out_features, generator=g)
        self.seconds_per_item = float(seconds_per_item)

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        if self.seconds_per_item:
            time.sleep(self.seconds_per_item)
        return self.x[i], self.y[i]

    def __getitems__(self, indices: list[int]) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """A whole batch at once (DataLoader uses this when it exists): one wait of len(indices) items, so the
        batch takes its nominal time instead of adding up the clock's overshoot of every short sleep."""
        if self.seconds_per_item:
            time.sleep(self.seconds_per_item * len(indices))
        return [(self.x[i], self.y[i]) for i in indices]


# ---- time by source line -------------------------------------------------------------------------------------

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
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    _check_callable(fn)
    files = model_files(model)
    cuda = (torch.device(device).type == "cuda") if device is not None else torch.cuda.is_available()
    current_node = getattr(torch._C, "_current_autograd_node", lambda: None)

    class _TagNodes(TorchFunctionMode):  # above autograd: the graph nodes a line creates get its (file, line)
        def __torch_function__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            where = _model_line(files)
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

    class _TimeOps(TorchDispatchMode):  # below autograd: every operator, forward and backward
        def __init__(self):
            super().__init__()
            self.seconds: dict = defaultdict(float)
            self.ops: dict = defaultdict(int)

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            node = current_node()
            key = ("backward", node.metadata.get(_LINE_KEY)) if node is not None else ("forward", _model_line(files))
            if cuda:
                torch.cuda.synchronize()
            start = time.perf_counter()
            out = func(*args, **(kwargs or {}))
            if cuda:
                torch.cuda.synchronize()
            self.seconds[key] += time.perf_counter() - start
            self.ops[key] += 1
            return out

    steps = []
    for i in range(warmup + repeat):
        timer = _TimeOps()
        with _TagNodes(), timer:
            fn()
        if i >= warmup:
            steps.append(timer)
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
