"""Timing instruments: the median of repeated calls (`benchmark`, seconds), two callables timed in turns
(`paired_times`), the process's peak resident memory (`peak_rss`, bytes), and a dataset that waits as real loading
does (`SlowDataset`)."""
from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch


def _check_callable(fn) -> None:
    if not callable(fn):
        raise TypeError(f"需要一个可调用对象 (callable), 例如 lambda: model(x); 得到 {type(fn).__name__}")


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
