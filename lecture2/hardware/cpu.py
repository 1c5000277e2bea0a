"""What this CPU reaches, measured once per process on torch's current thread count: the best matmul of a sweep of
sizes per dtype (`cpu_peak`, FLOP/s) and STREAM's bandwidth (`cpu_bandwidth`, bytes/s), upper bounds of what the
CPU reached here, stated as such (no datasheet figure is worth trusting for PyTorch on a CPU)."""
from __future__ import annotations

import functools
import statistics
import time
from dataclasses import dataclass, field

import torch

_CPU_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
CPU_SWEEP = (128, 256, 512, 1024, 2048)  # the sizes `cpu_peak` sweeps, until a call takes MAX_CALL_SECONDS


@dataclass(frozen=True)
class CPUPeak:
    """A CPU's matmul peak for one dtype: the best FLOP/s of a sweep of n x n x n matmuls, timed by the wall clock.

    Why the best of a sweep: a CPU has no datasheet figure PyTorch reaches, and no single size is the fastest on
    every CPU (the caches decide), so the peak is the fastest call of the fastest size. Noise (other processes,
    a lower clock) only ever slows a call, never speeds one: the best call is the closest to what the CPU can do,
    and an upper bound of what a matmul in this dtype reaches on `threads` threads here. A later measurement beats
    it only if every call of the sweep was slowed (a machine much busier then than now).

    `flops_per_s` is that best; `n` its size; `sweep` the best FLOP/s of each size measured, `(n, flops_per_s)`;
    `samples` the FLOP/s of each timed call at `n` (`spread`: their interquartile range over their median, a
    fraction). `threads` is the torch thread count it ran on: a peak measured on 1 thread applies to work done on
    1 thread.
    """

    flops_per_s: float
    samples: tuple[float, ...]
    n: int
    dtype: str
    threads: int
    seconds: float  # wall time the whole sweep took
    sweep: tuple[tuple[int, float], ...] = ()
    clock: str = "wall clock"

    @property
    def low(self) -> float:
        return min(self.samples)

    @property
    def high(self) -> float:
        return max(self.samples)

    @property
    def spread(self) -> float:
        if len(self.samples) < 2:
            return 0.0
        q1, median, q3 = statistics.quantiles(self.samples, n=4, method="inclusive")
        return (q3 - q1) / median

    def describe(self) -> str:
        """One line for reports: "103.8 GFLOP/s (fp32: best of a matmul sweep n=128…2048, at n=512; 1 thread, wall clock)"."""
        sizes = [n for n, _ in self.sweep] or [self.n]
        span = f"n={sizes[0]}…{sizes[-1]}" if len(sizes) > 1 else f"n={sizes[0]}"
        return (f"{_gflops(self.flops_per_s)} ({self.dtype}: best of a matmul sweep {span}, at n={self.n}; "
                f"{self.threads} thread{'s' if self.threads != 1 else ''}, {self.clock})")


def _gflops(x: float) -> str:
    return f"{x / 1e12:.2f} TFLOP/s" if x >= 1e12 else f"{x / 1e9:.1f} GFLOP/s"


def _threads_arg(threads: int | None) -> int:
    threads = torch.get_num_threads() if threads is None else threads
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        raise ValueError(f"threads 应是正整数 (int), 得到 {threads!r}")
    return threads


def measure_cpu_peak(dtype: torch.dtype = torch.float32, *, threads: int | None = None, repeat: int = 5,
                     warmup: int = 1, sizes: tuple[int, ...] = CPU_SWEEP, max_call_seconds: float = 0.05,
                     min_seconds: float = 0.05, max_calls: int = 50) -> CPUPeak:
    """Measure this CPU's matmul peak for `dtype` once (uncached; notebooks and tools use `cpu_peak`, which caches).

    For each n of `sizes` in turn: 1 + `warmup` untimed calls (thread pool, page faults, the kernel's choice), then
    calls timed by the wall clock, at least `repeat` and until they add up to `min_seconds` (at most `max_calls`: a
    small size gets dozens, so that a busy moment cannot slow them all); the size's figure is its best call,
    2 n^3 / seconds. The sweep stops
    after the first size whose best call takes `max_call_seconds` (the next would take 8 times longer: a slow
    dtype, emulated on this CPU, keeps the whole measurement around a second). The peak is the best of all sizes.
    `threads` (default: torch's current count) is set for the measurement and restored.
    """
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"dtype 应是 torch.dtype, 得到 {type(dtype).__name__}")
    key = {v: k for k, v in _CPU_DTYPES.items()}.get(dtype)
    if key is None:
        raise ValueError(f"CPU 峰值只测 fp32/bf16/fp16 的 matmul (only these), 得到 {dtype}")
    for name, value, least in (("repeat", repeat, 1), ("warmup", warmup, 0)):
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            raise ValueError(f"{name} 应是 >= {least} 的整数 (int), 得到 {value!r}")
    before, threads = torch.get_num_threads(), _threads_arg(threads)
    started = time.perf_counter()
    torch.set_num_threads(threads)
    sweep, calls = [], {}
    try:
        for n in sizes:
            a = torch.randn(n, n, dtype=dtype)
            b = torch.randn(n, n, dtype=dtype)
            for _ in range(1 + warmup):
                a @ b
            seconds = []
            while len(seconds) < repeat or (sum(seconds) < min_seconds and len(seconds) < max_calls):
                t0 = time.perf_counter()
                a @ b
                seconds.append(time.perf_counter() - t0)
            calls[n] = [2 * n**3 / t for t in seconds]
            sweep.append((n, max(calls[n])))
            if min(seconds) >= max_call_seconds:
                break
    finally:
        torch.set_num_threads(before)
    n, best = max(sweep, key=lambda row: row[1])
    return CPUPeak(best, tuple(calls[n]), n, key, threads, time.perf_counter() - started, tuple(sweep))


@functools.lru_cache(maxsize=None)
def _cached_cpu_peak(dtype: torch.dtype, threads: int) -> CPUPeak:
    return measure_cpu_peak(dtype, threads=threads)


def cpu_peak(dtype: torch.dtype = torch.float32, threads: int | None = None) -> CPUPeak:
    """The CPU's matmul peak for `dtype` on `threads` threads (default: torch's current count): the best call of a
    sweep of sizes (`measure_cpu_peak`), an upper bound of what a matmul in `dtype` reaches here.

    Measured once per process, dtype and thread count, then the same record is returned: every notebook cell,
    the CLI and the profile divide by one number per dtype.
    """
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"dtype 应是 torch.dtype, 得到 {type(dtype).__name__}")
    return _cached_cpu_peak(dtype, _threads_arg(threads))


@dataclass(frozen=True)
class CPUBandwidth:
    """A CPU's memory bandwidth as STREAM measures it: the best bytes/s of four streaming kernels over vectors
    larger than the caches, each counted as STREAM counts it (copy and scale 8 bytes per fp32 element, add and
    triad 12: what the kernel reads and writes, not the extra read a CPU makes of a line before writing it).

    The best of the four (often add or triad: two streams read at once keep more memory requests in flight than one)
    is the roofline's bandwidth: a memory-bound op on this many threads moves its bytes no faster. `kernels` holds
    each kernel's best bytes/s."""

    bytes_per_s: float
    kernels: dict[str, float] = field(repr=False)
    n_bytes: int  # bytes of one vector
    threads: int
    seconds: float

    def describe(self) -> str:
        best = max(self.kernels, key=self.kernels.get)
        return (f"{self.bytes_per_s / 1e9:.1f} GB/s (best of STREAM's copy, scale, add, triad on "
                f"{self.n_bytes / 2**20:.0f} MiB vectors: {best}; {self.threads} thread"
                f"{'s' if self.threads != 1 else ''}, wall clock)")


def measure_cpu_bandwidth(*, threads: int | None = None, n_bytes: int = 2**25, repeat: int = 10) -> CPUBandwidth:
    """Measure the STREAM bandwidth once (uncached; `cpu_bandwidth` caches it): copy (c = a), scale (b = 3c),
    add (c = a + b) and triad (a = b + 3c) on fp32 vectors of `n_bytes` each (32 MiB, three of them: beyond a
    laptop's last-level cache; the size notebook 08 times its add at, so that the bound covers it), each the best of
    `repeat` timed passes after one untimed, on `threads` threads."""
    if not isinstance(n_bytes, int) or n_bytes < 4:
        raise ValueError(f"n_bytes 应是 >= 4 的整数 (int), 得到 {n_bytes!r}")
    before, threads = torch.get_num_threads(), _threads_arg(threads)
    started = time.perf_counter()
    torch.set_num_threads(threads)
    try:
        n = n_bytes // 4
        a, b, c = torch.rand(n), torch.rand(n), torch.rand(n)
        kernels = {"copy": (lambda: c.copy_(a), 8), "scale": (lambda: torch.mul(c, 3.0, out=b), 8),
                   "add": (lambda: torch.add(a, b, out=c), 12), "triad": (lambda: torch.add(b, c, alpha=3.0, out=a), 12)}
        best = {}
        for name, (fn, per_element) in kernels.items():
            fn()
            seconds = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                fn()
                seconds.append(time.perf_counter() - t0)
            best[name] = per_element * n / min(seconds)
    finally:
        torch.set_num_threads(before)
    return CPUBandwidth(max(best.values()), best, 4 * n, threads, time.perf_counter() - started)


@functools.lru_cache(maxsize=None)
def _cached_cpu_bandwidth(threads: int) -> CPUBandwidth:
    return measure_cpu_bandwidth(threads=threads)


def cpu_bandwidth(threads: int | None = None) -> CPUBandwidth:
    """The CPU's STREAM bandwidth on `threads` threads (default: torch's current count), measured once per process
    and thread count (`measure_cpu_bandwidth`)."""
    return _cached_cpu_bandwidth(_threads_arg(threads))
