"""What a device can do: dense peak FLOP/s by GPU and dtype, memory, and which device is present.

One row per GPU, one source per row. Peaks are **dense** (no 2:4 structured sparsity: NVIDIA's headline
tensor figures are often the sparse ones, exactly 2x these). All figures are FLOP/s, memory in bytes,
bandwidth in bytes/s. On a CPU there is no datasheet worth trusting for PyTorch, so the roof that applies to a
dtype is measured on this machine, once per process: the best matmul of a sweep of sizes in that dtype (`cpu_peak`)
and STREAM's bandwidth (`cpu_bandwidth`), upper bounds of what the CPU reached. `roof(dtype, device)` is the one
place that decides which peak and bandwidth apply; `training_peak(device)` the peak an MFU ladder divides by.

Clusters (`CLUSTERS`, `cluster(name)`) are the nodes GPUs are trained on: GPUs per node, NVLink bandwidth per GPU,
NICs per node and their bandwidth, each row from its system's datasheet. `lecture2.network` turns a row into the
time of a collective (NCCL's bus bandwidth and latency model).

Memory is what the device itself reports (nvidia-smi's total, in MiB; rocm-smi's, in bytes), not the name on
the box, whose "GB" is neither 10**9 bytes nor always exactly 2**30: an A100 80GB reports 81,920 MiB = 80 GiB,
an H100 80GB 81,559 MiB, an L4 24GB 23,034 MiB and an H200 "141GB" 143,771 MiB = 140.4 GiB. Each row names
where its figure was read.
PyTorch's `torch.cuda.get_device_properties(0).total_memory` is a little smaller still: nvidia-smi's total
less what the driver reserves (616 MiB on the course's H200: 150,109,880,320 B = 139.8 GiB).
"""
from __future__ import annotations

import functools
import re
import statistics
import time
from dataclasses import dataclass, field

import torch

__all__ = [
    "CLUSTERS", "CPUBandwidth", "CPUPeak", "ClusterSpec", "DTYPES", "GPUS", "GPUSpec", "Roof", "UnknownGPU",
    "cluster", "cpu_bandwidth", "cpu_peak", "detect_device", "dtype_key", "gpu", "gpu_from_device_name",
    "known_clusters", "known_gpus", "matmul_works", "measure_cpu_bandwidth", "measure_cpu_peak", "peak_flops",
    "peak_table", "roof", "training_peak", "device_summary",
]

T = 1e12
GB = 1e9
MiB = 2**20

# The dtype keys of the table: a torch dtype maps onto one of these (see `dtype_key`). "tf32" is fp32
# matmul on tensor cores (torch.backends.cuda.matmul.allow_tf32 / set_float32_matmul_precision("high")).
DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8")


@dataclass(frozen=True)
class GPUSpec:
    """One GPU: datasheet dense peak FLOP/s per dtype key and bandwidth (bytes/s); memory (bytes) as the
    device reports it, with `memory_source` saying where that figure was read."""

    name: str
    full_name: str
    peak: dict[str, float] = field(repr=False)
    memory_bytes: int
    bandwidth_bytes_per_s: float
    source: str
    memory_source: str
    arch: str = ""  # "ampere", "hopper", ...: which measured kernel efficiencies apply (lecture2.planning.compute)
    sms: int = 0  # streaming multiprocessors (the datasheet's count): GEMM tiles are scheduled in waves of them

    def peak_flops(self, dtype: torch.dtype | str) -> float:
        """Dense peak in FLOP/s for `dtype` (a torch dtype or one of DTYPES)."""
        key = dtype_key(dtype)
        if key not in self.peak:
            supported = ", ".join(self.peak)
            raise ValueError(f"{self.full_name} 没有 {key} 的 tensor-core 峰值 (no {key} peak); it supports: {supported}")
        return self.peak[key]


def _spec(name, full_name, memory_mib, memory_source, bandwidth_gbs, source, arch="", sms=0, **tflops) -> GPUSpec:
    return GPUSpec(name, full_name, {k: v * T for k, v in tflops.items()}, memory_mib * MiB, bandwidth_gbs * GB,
                   source, memory_source, arch, sms)


_SMI = "nvidia-smi memory.total"


# Each row: name, full name, memory in MiB as the device reports it (and where it was read), datasheet
# bandwidth in GB/s and the datasheet, then dense peaks in TFLOP/s.
# fmt: off
GPUS: dict[str, GPUSpec] = {s.name: s for s in [
    # NVIDIA V100 datasheet (SXM2 32GB): 15.7 TF fp32, 125 TF tensor (fp16 in, fp32 accumulate); no bf16/tf32.
    _spec("v100", "NVIDIA V100 SXM2 32GB", 32_768, f"{_SMI} of a Tesla V100-SXM2-32GB",
          900, "NVIDIA V100 Tensor Core GPU datasheet",
          fp32=15.7, fp16=125),
    # NVIDIA A100 datasheet (SXM 80GB): fp32 19.5, TF32 156, BF16/FP16 312 (dense; 624 with sparsity); 108 SMs
    # (NVIDIA A100 Tensor Core GPU Architecture whitepaper). "a100-80gb" names the same row.
    _spec("a100", "NVIDIA A100 SXM4 80GB", 81_920, f"{_SMI} of an NVIDIA A100-SXM4-80GB",
          2039, "NVIDIA A100 Tensor Core GPU datasheet", arch="ampere", sms=108,
          fp32=19.5, tf32=156, bf16=312, fp16=312),
    # Same datasheet, SXM 40GB column: the same compute, 40 GB HBM2 at 1,555 GB/s; nvidia-smi reports 40,960 MiB.
    _spec("a100-40gb", "NVIDIA A100 SXM4 40GB", 40_960, f"{_SMI} of an NVIDIA A100-SXM4-40GB (40,960 MiB = 40 GiB)",
          1555, "NVIDIA A100 Tensor Core GPU datasheet (SXM 40GB)", arch="ampere", sms=108,
          fp32=19.5, tf32=156, bf16=312, fp16=312),
    # NVIDIA H100 datasheet, SXM column: fp32 67, TF32 494.7, BF16/FP16 989.4, FP8 1978.9 (the sheet
    # prints 989/1979/3958 *with sparsity*; dense is half).
    _spec("h100-sxm", "NVIDIA H100 SXM5 80GB", 81_559, f"{_SMI} of an NVIDIA H100 80GB HBM3",
          3350, "NVIDIA H100 Tensor Core GPU datasheet (SXM)", arch="hopper", sms=132,
          fp32=67, tf32=494.7, bf16=989.4, fp16=989.4, fp8=1978.9),
    # NVIDIA H800 SXM5 (the export variant DeepSeek-V3 trained on): the H100 SXM5's compute, memory and 132 SMs with
    # NVLink cut to 400 GB/s per GPU (H800 product brief; DeepSeek-V3 technical report, §3.1). Memory as the H100's.
    _spec("h800", "NVIDIA H800 SXM5 80GB", 81_559, f"{_SMI} of an NVIDIA H100 80GB HBM3 (the H800 is the same part)",
          3350, "NVIDIA H800 product brief (H100 SXM5 compute, NVLink 400 GB/s)", arch="hopper", sms=132,
          fp32=67, tf32=494.7, bf16=989.4, fp16=989.4, fp8=1978.9),
    # Same datasheet, PCIe column: fp32 51, TF32 378, BF16/FP16 756, FP8 1513 (dense).
    _spec("h100-pcie", "NVIDIA H100 PCIe 80GB", 81_559, f"{_SMI} of an NVIDIA H100 PCIe",
          2000, "NVIDIA H100 Tensor Core GPU datasheet (PCIe)", arch="hopper", sms=114,
          fp32=51, tf32=378, bf16=756, fp16=756, fp8=1513),
    # NVIDIA H200 datasheet (SXM): the H100's compute with 141 GB HBM3e at 4.8 TB/s.
    # Memory read on the course's GPU machine (2026-11-30): nvidia-smi total 143,771 MiB, reserved 616 MiB;
    # torch.cuda.get_device_properties(0).total_memory 150,109,880,320 B (= total - reserved).
    _spec("h200", "NVIDIA H200 SXM 141GB", 143_771, f"{_SMI} of an NVIDIA H200 (the course's GPU machine)",
          4800, "NVIDIA H200 Tensor Core GPU datasheet (SXM)", arch="hopper", sms=132,
          fp32=67, tf32=494.7, bf16=989.4, fp16=989.4, fp8=1978.9),
    # NVIDIA HGX B200 datasheet, per GPU at 1000 W: fp32 80, TF32 1100, BF16/FP16 2250, FP8 4500 (dense).
    _spec("b200", "NVIDIA B200 (HGX) 180GB", 183_359, f"{_SMI} of an NVIDIA B200",
          8000, "NVIDIA HGX B200 datasheet, per GPU", arch="blackwell", sms=148,
          fp32=80, tf32=1100, bf16=2250, fp16=2250, fp8=4500),
    # NVIDIA L4 datasheet: fp32 30.3, TF32 60, BF16/FP16 121, FP8 242.5 (dense; sheet prints sparse x2).
    _spec("l4", "NVIDIA L4 24GB", 23_034, f"{_SMI} of an NVIDIA L4", 300, "NVIDIA L4 Tensor Core GPU datasheet",
          fp32=30.3, tf32=60, bf16=121, fp16=121, fp8=242.5),
    # NVIDIA L40S datasheet: fp32 91.6, TF32 183, BF16/FP16 362.05, FP8 733 (dense).
    _spec("l40s", "NVIDIA L40S 48GB", 46_068, f"{_SMI} of an NVIDIA L40S", 864, "NVIDIA L40S datasheet",
          fp32=91.6, tf32=183, bf16=362.05, fp16=362.05, fp8=733),
    # NVIDIA Ada Lovelace whitepaper, RTX 4090: fp32 82.6; tensor with fp32 accumulate (what PyTorch uses):
    # TF32 82.6, BF16/FP16 165.2, FP8 330.3 (GeForce cards run fp16-accumulate at twice these rates).
    _spec("rtx4090", "NVIDIA GeForce RTX 4090 24GB", 24_564, f"{_SMI} of an NVIDIA GeForce RTX 4090",
          1008, "NVIDIA Ada Lovelace architecture whitepaper",
          fp32=82.6, tf32=82.6, bf16=165.2, fp16=165.2, fp8=330.3),
    # AMD Instinct MI300X datasheet: fp32 163.4 (vector), TF32 653.7, BF16/FP16 1307.4, FP8 2614.9 (dense).
    _spec("mi300x", "AMD Instinct MI300X 192GB", 196_592,
          "rocm-smi VRAM Total Memory of an AMD Instinct MI300X (206,141,652,992 B)",
          5300, "AMD Instinct MI300X data sheet",
          fp32=163.4, tf32=653.7, bf16=1307.4, fp16=1307.4, fp8=2614.9),
]}
# fmt: on

# What torch.cuda.get_device_name() says, as whole words (tokens), mapped to table rows. The rule with the
# most tokens that all appear wins, so "H100 PCIe" beats "H100"; a token never matches part of a word, so
# "L40" and "L40S" are not "L4". Rules mapped to None are variants known to differ from every row (their
# own datasheets, or less memory), refused rather than given a neighbour's peaks or memory.
_DEVICE_NAME_RULES: list[tuple[tuple[str, ...], str | None]] = [
    (("h100",), "h100-sxm"), (("h100", "pcie"), "h100-pcie"), (("h100", "nvl"), None),
    (("h200",), "h200"), (("h200", "nvl"), None), (("b200",), "b200"),
    (("a100",), "a100"), (("a100", "40gb"), "a100-40gb"), (("v100",), "v100"), (("v100", "16gb"), None),
    (("h800",), "h800"),
    (("l4",), "l4"), (("l40s",), "l40s"), (("l40",), None), (("4090",), "rtx4090"),
    (("mi300x",), "mi300x"),
]


def _name_tokens(device_name: str) -> set[str]:
    """Lower-case words of a device name: "NVIDIA A100-SXM4-80GB" -> {"nvidia", "a100", "sxm4", "80gb"}."""
    return set(re.findall(r"[a-z0-9]+", device_name.lower()))


class UnknownGPU(KeyError):
    """A GPU name that is not in the table; the message lists the known names."""

    def __str__(self) -> str:  # KeyError would print the repr of its argument
        return str(self.args[0])


_GPU_ALIASES = {"a100-80gb": "a100"}  # another name of a row, never a second row


def known_gpus() -> list[str]:
    """The names `gpu()` accepts."""
    return list(GPUS)


def gpu(name: str) -> GPUSpec:
    """The table row for `name` (case-insensitive, e.g. "h100-sxm"); unknown names list the known ones."""
    if not isinstance(name, str):
        raise TypeError(f"GPU 名称应是字符串 (str), 得到 {type(name).__name__}; known: {', '.join(GPUS)}")
    key = name.strip().lower().replace("_", "-").replace(" ", "-")
    key = _GPU_ALIASES.get(key, key)
    if key not in GPUS:
        raise UnknownGPU(f"未知的 GPU (unknown GPU) {name!r}; known GPUs: {', '.join(GPUS)}")
    return GPUS[key]


def gpu_from_device_name(device_name: str) -> GPUSpec:
    """The row matching a CUDA device name such as "NVIDIA H100 80GB HBM3" (the longest rule whose words all
    appear in it; see `_DEVICE_NAME_RULES`)."""
    if not isinstance(device_name, str):
        raise TypeError(f"device_name 应是字符串 (str), 得到 {type(device_name).__name__}")
    tokens = _name_tokens(device_name)
    matches = [(len(words), key) for words, key in _DEVICE_NAME_RULES if set(words) <= tokens]
    key = max(matches, key=lambda m: m[0])[1] if matches else None
    if key is not None:
        return GPUS[key]
    raise UnknownGPU(
        f"GPU {device_name!r} 不在峰值表中 (not in the peak table); known GPUs: {', '.join(GPUS)}. "
        "Measure it with `python -m lecture2 env`, or add a row with its datasheet to lecture2/hardware.py."
    )


_TORCH_DTYPES = {
    torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16",
    torch.float8_e4m3fn: "fp8", torch.float8_e5m2: "fp8",
}
_ALIASES = {"float32": "fp32", "float": "fp32", "bfloat16": "bf16", "float16": "fp16", "half": "fp16",
            "float8": "fp8", "float8_e4m3fn": "fp8", "float8_e5m2": "fp8"}


def dtype_key(dtype: torch.dtype | str) -> str:
    """The table key ("fp32", "tf32", "bf16", "fp16", "fp8") for a torch dtype or a name."""
    if isinstance(dtype, torch.dtype):
        if dtype not in _TORCH_DTYPES:
            raise ValueError(f"峰值表没有 {dtype} 这一列 (no peak column); columns: {', '.join(DTYPES)}")
        return _TORCH_DTYPES[dtype]
    if isinstance(dtype, str):
        key = _ALIASES.get(dtype.lower(), dtype.lower())
        if key in DTYPES:
            return key
        raise ValueError(f"未知的 dtype {dtype!r} (unknown dtype); use one of {', '.join(DTYPES)} or a torch dtype")
    raise TypeError(f"dtype 应是 torch.dtype 或 str, 得到 {type(dtype).__name__}")


def detect_device() -> str:
    """The best device present: "cuda", then "mps", then "cpu"."""
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def matmul_works(dtype: torch.dtype, device: str) -> bool:
    """Whether a small matmul in `dtype` runs on `device` (a dtype the device cannot multiply says False)."""
    try:
        a = torch.ones(16, 16, dtype=dtype, device=device)
        (a @ a).sum().item()
        return True
    except (RuntimeError, TypeError, NotImplementedError):
        return False


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


@dataclass(frozen=True)
class Peak:
    """The dense peak that applies to one dtype on one device: `flops_per_s` (FLOP/s) and where it comes from
    (`source`: a datasheet on a GPU, a measurement on a CPU)."""

    dtype: str
    flops_per_s: float
    source: str


def applicable_peak(dtype: torch.dtype | str, device: str | None = None) -> Peak:
    """The peak FLOP/s that applies to `dtype` on `device` (default: the detected one). The one rule, read by
    `peak_flops`, `roof`, `training_peak`, the profile's sweeps and `python -m lecture2 env`:

    CUDA: the present GPU's datasheet dense peak for the dtype ("tf32": fp32 matmuls on tensor cores, which fp32
    training on Ampere and Hopper uses once `torch.backends.cuda.matmul.allow_tf32` is on); an unknown GPU raises
    UnknownGPU, a dtype its row lacks ValueError. CPU: the best matmul in that dtype measured here on torch's
    current thread count (`cpu_peak`: once per process; "tf32" is fp32 on a CPU), an upper bound for work in that
    dtype: each dtype its own. Apple's MPS has no published dense peak per dtype, so it raises rather than guess.
    """
    device = device or detect_device()
    if device == "cuda":
        spec = gpu_from_device_name(torch.cuda.get_device_name())
        key = dtype_key(dtype)
        return Peak(key, spec.peak_flops(key), f"{spec.full_name} datasheet ({spec.source})")
    if device == "cpu":
        key = dtype_key(dtype)
        torch_dtype = {**_CPU_DTYPES, "tf32": torch.float32}.get(key)
        if torch_dtype is None:
            raise ValueError(f"CPU 上没有 {key} matmul (no {key} matmul on CPU)")
        measured = cpu_peak(torch_dtype)
        return Peak(key, measured.flops_per_s, f"measured here: {measured.describe()}")
    raise ValueError(f"没有 {device!r} 的峰值 (no peak for device {device!r}); use 'cuda' or 'cpu'")


def peak_flops(dtype: torch.dtype | str = torch.bfloat16, device: str | None = None) -> float:
    """The peak FLOP/s that applies on `device` (default: the detected one) for `dtype` (`applicable_peak`)."""
    return applicable_peak(dtype, device).flops_per_s


@dataclass(frozen=True)
class Roof:
    """The roofline of one dtype on one device: an op doing I FLOPs per byte it moves reaches at most
    min(peak, I x bandwidth) FLOP/s. `ridge` is the intensity where the two meet (FLOP/byte). `source` says where
    each figure comes from (a datasheet on a GPU; measurements on a CPU)."""

    dtype: str
    peak_flops_per_s: float
    bandwidth_bytes_per_s: float
    source: str

    @property
    def ridge(self) -> float:
        return self.peak_flops_per_s / self.bandwidth_bytes_per_s

    def attainable(self, intensity: float) -> float:
        """The most FLOP/s an op of `intensity` FLOP/byte can reach under this roof."""
        return min(self.peak_flops_per_s, intensity * self.bandwidth_bytes_per_s)


def roof(dtype: torch.dtype | str, device: str | None = None) -> Roof:
    """The roof that applies to `dtype` on `device` (default: the detected one): the peak of `applicable_peak` and
    the memory bandwidth: the GPU's datasheet bandwidth; on a CPU the STREAM bandwidth (`cpu_bandwidth`) measured
    here once per process on torch's current thread count, an upper bound of what this CPU reached, stated as such.
    """
    device = device or detect_device()
    peak = applicable_peak(dtype, device)
    if device == "cuda":
        spec = gpu_from_device_name(torch.cuda.get_device_name())
        return Roof(peak.dtype, peak.flops_per_s, spec.bandwidth_bytes_per_s, peak.source)
    bandwidth = cpu_bandwidth()
    return Roof(peak.dtype, peak.flops_per_s, bandwidth.bytes_per_s, f"{peak.source}; bandwidth {bandwidth.describe()}")


def training_peak(device: str | None = None) -> tuple[str, float]:
    """(dtype key, FLOP/s): the peak a training step's MFU is quoted against when its precision varies (the MFU
    ladder of notebook 08): the highest dense peak among the dtypes a training step runs its matmuls in.
    A GPU's bf16 (what PaLM and the lecture quote: A100 312, H100 989.4 TFLOP/s); on a CPU the higher of its
    measured fp32 and bf16 peaks (bf16 is far faster on CPUs with BF16 instructions, far slower elsewhere), so
    that no rung reads above it."""
    device = device or detect_device()
    if device == "cuda":
        spec = gpu_from_device_name(torch.cuda.get_device_name())
        keys = [k for k in ("bf16", "fp16", "tf32", "fp32") if k in spec.peak]
    elif device == "cpu":
        keys = ["fp32", "bf16"]
    else:
        raise ValueError(f"没有 {device!r} 的峰值 (no peak for device {device!r}); use 'cuda' or 'cpu'")
    best = max(keys, key=lambda k: peak_flops(k, device))
    return best, peak_flops(best, device)


def peak_table(names: tuple[str, ...] = ("a100", "h100-sxm", "h200", "b200"),
               dtypes: tuple[str, ...] = DTYPES) -> str:
    """The datasheet's dense peaks (TFLOP/s) of the GPUs `names`, a row each, a column per dtype, and their memory
    bandwidth: the peak table MFU divides by."""
    rows = [f"{'GPU':<26}" + "".join(f"{k:>9}" for k in dtypes) + f"{'HBM TB/s':>10}"]
    for name in names:
        spec = gpu(name)
        cells = "".join(f"{spec.peak[k] / T:>9.1f}" if k in spec.peak else f"{'-':>9}" for k in dtypes)
        rows.append(f"{spec.full_name:<26}{cells}{spec.bandwidth_bytes_per_s / 1e12:>10.2f}")
    return "\n".join(rows)


def device_summary(device: str | None = None) -> dict:
    """Facts about `device` for reports: name, memory (bytes), dtype support."""
    device = device or detect_device()
    info: dict = {"device": device, "torch": torch.__version__}
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        info.update(name=props.name, memory_bytes=props.total_memory,
                    capability=f"{props.major}.{props.minor}", bf16=torch.cuda.is_bf16_supported())
    else:
        import platform
        info.update(name=platform.processor() or platform.machine(), threads=torch.get_num_threads())
    return info


# ---- clusters: the nodes GPUs are trained on --------------------------------------------------------------


@dataclass(frozen=True)
class ClusterSpec:
    """One kind of GPU node, as its datasheet states it, with the bus bandwidths NCCL is measured to reach on it.

    Bandwidths are bytes/s **per direction**: NVIDIA quotes NVLink as the bidirectional total per GPU (H100:
    "900 GB/s") and NICs in Gb/s per port, one direction (ConnectX-7: 400 Gb/s = 50 GB/s). A collective's bus
    bandwidth is limited by what one GPU sends, so the per-direction figure is the one that counts.

    The link rate is not what a collective gets: nccl-tests' bus bandwidth (`busbw`, PERFORMANCE.md) on the real
    machine is about 80% of NVLink's rate (protocol overhead) and 92-96% of a NIC's. `ring_busbw_bytes_per_s`,
    `nvls_busbw_bytes_per_s` and `nic_busbw_bytes_per_s` are those measured figures, `measured` says where each was
    read; lecture2.network and lecture2.planning.collectives time collectives with them."""

    name: str
    full_name: str
    gpu: str  # a key of GPUS
    gpus_per_node: int
    nvlink_bytes_per_s: float  # per GPU, one direction, through the NVSwitch fabric (datasheet)
    nics_per_node: int  # compute-fabric NICs (storage/management ports not counted)
    nic_bytes_per_s: float  # per NIC, one direction (datasheet)
    source: str
    ring_busbw_bytes_per_s: float = 0.0  # nccl-tests busbw of a ring collective inside one node (measured)
    nvls_busbw_bytes_per_s: float = 0.0  # nccl-tests busbw of an NVLink SHARP all-reduce in one node; 0: no NVLS
    nic_busbw_bytes_per_s: float = 0.0  # what one NIC carries in an inter-node ring (measured per NIC)
    measured: str = ""

    @property
    def nic_bytes_per_s_per_gpu(self) -> float:
        """The compute fabric's bandwidth one GPU gets when every GPU of the node sends at once (rail-aligned)."""
        return self.nics_per_node * self.nic_bytes_per_s / self.gpus_per_node

    @property
    def nic_busbw_per_gpu(self) -> float:
        """The measured counterpart of `nic_bytes_per_s_per_gpu`: NICs x measured busbw per NIC / GPUs per node."""
        return self.nics_per_node * self.nic_busbw_bytes_per_s / self.gpus_per_node

    @property
    def gpu_spec(self) -> GPUSpec:
        return GPUS[self.gpu]


def _node(name, full_name, gpu_name, gpus, nvlink_bidirectional_gbs, nics, nic_gbit, source, *, ring_busbw_gbs,
          nvls_busbw_gbs, nic_busbw_gbs, measured) -> ClusterSpec:
    return ClusterSpec(name, full_name, gpu_name, gpus, nvlink_bidirectional_gbs / 2 * GB, nics, nic_gbit / 8 * GB,
                       source, ring_busbw_gbs * GB, nvls_busbw_gbs * GB, nic_busbw_gbs * GB, measured)


# Measured bus bandwidths (nccl-tests busbw, large messages):
#   H100 NVLink: "450GB/s is the line rate. With the protocol overhead (~20%) NCCL can get an effective NVLink bandwidth
#     of 370GB/s ... running with NCCL_ALGO=RING"; NVLink SHARP all-reduce on 8 GPUs "a peak busBw of ~480GB/s (algbw
#     ~275GB/s)" (NCCL maintainer, NVIDIA/nccl-tests issue #212, 2024); 476 GB/s measured in nccl-tests #290 (2025).
#   NDR 400 Gb/s InfiniBand: "For NDR @ 400Gbps you should see 46-48GB/s per NIC" (NVIDIA, nccl-tests #290): 47.
#   A100 NVLink: 232.5 GB/s all-reduce busbw on one 8 x A100 SXM4 node (nccl-tests issue #175, 2023), 78% of 300.
#   HDR 200 Gb/s: not measured here; NDR's measured 94% of the link rate, 23.5 of 25 GB/s.
#   H800 NVLink (400 GB/s bidirectional): "NVLink offers a bandwidth of 160 GB/s" (DeepSeek-V3 technical report,
#     §3.2.2), and an NVLS all-reduce busBW of 215 GB/s on 8 x H800 (NVIDIA/nccl issue #1374, 2024).
#   B200 NVLink 5: not measured here; H100's measured 82% of the line rate (740 of 900 GB/s), NVLS as H100's ratio.
_H100_NET = "nccl-tests #212 (NVLink ring 370, NVLS 480 GB/s), #290 (NDR 47 GB/s per NIC)"
# fmt: off
CLUSTERS: dict[str, ClusterSpec] = {c.name: c for c in [
    # NVIDIA DGX A100 datasheet: 8x A100 SXM4 80GB, NVLink 3 600 GB/s per GPU (bidirectional) through 6 NVSwitches,
    # 8x single-port ConnectX-6 HDR 200 Gb/s InfiniBand for the compute fabric (+ 2 dual-port for storage).
    # Selene (Megatron-LM's and MT-NLG's cluster) is built of these nodes.
    _node("dgx-a100", "NVIDIA DGX A100 (8 GPUs)", "a100", 8, 600, 8, 200, "NVIDIA DGX A100 datasheet",
          ring_busbw_gbs=232.5, nvls_busbw_gbs=0, nic_busbw_gbs=23.5,
          measured="nccl-tests #175 (A100 NVLink 232.5 GB/s); HDR at NDR's measured 94%"),
    # The DGX A100 40GB variant of the same datasheet: 8x A100 SXM4 40GB, the same NVLink and NICs.
    _node("dgx-a100-40gb", "NVIDIA DGX A100 40GB (8 GPUs)", "a100-40gb", 8, 600, 8, 200,
          "NVIDIA DGX A100 datasheet (40GB system)", ring_busbw_gbs=232.5, nvls_busbw_gbs=0, nic_busbw_gbs=23.5,
          measured="nccl-tests #175 (A100 NVLink 232.5 GB/s); HDR at NDR's measured 94%"),
    # NVIDIA DGX H100 datasheet: 8x H100 SXM5 80GB, NVLink 4 900 GB/s per GPU (18 links x 50 GB/s, bidirectional)
    # through 4 NVSwitches, 8x ConnectX-7 400 Gb/s (4 OSFP ports, one NIC per GPU) for the compute fabric.
    _node("dgx-h100", "NVIDIA DGX H100 (8 GPUs)", "h100-sxm", 8, 900, 8, 400, "NVIDIA DGX H100 datasheet",
          ring_busbw_gbs=370, nvls_busbw_gbs=480, nic_busbw_gbs=47, measured=_H100_NET),
    # NVIDIA DGX H200 datasheet: the DGX H100's NVLink and ConnectX-7 fabric with H200 GPUs (141 GB HBM3e).
    _node("dgx-h200", "NVIDIA DGX H200 (8 GPUs)", "h200", 8, 900, 8, 400, "NVIDIA DGX H200 datasheet",
          ring_busbw_gbs=370, nvls_busbw_gbs=475, nic_busbw_gbs=47,
          measured="nccl-tests #272 (8 x H200 NVLS all-reduce 475 GB/s); #212, #290 as the H100's"),
    # An HGX H800 node as DeepSeek-V3 describes its cluster (technical report §3.1): 8 GPUs on NVLink/NVSwitch
    # (400 GB/s bidirectional per GPU), InfiniBand between nodes, one 400 Gb/s ConnectX-7 per GPU ("IB (50 GB/s)").
    _node("hgx-h800", "NVIDIA HGX H800 (8 GPUs)", "h800", 8, 400, 8, 400,
          "DeepSeek-V3 technical report §3.1-3.2; NVIDIA H800 product brief", ring_busbw_gbs=160, nvls_busbw_gbs=215,
          nic_busbw_gbs=47, measured="DeepSeek-V3 §3.2.2 (NVLink 160 GB/s), NVIDIA/nccl #1374 (NVLS 215 GB/s), #290"),
    # Jean Zay's A100 partition, where BLOOM trained (BigScience 2022, BLOOM paper §3.4.1): 8 A100 80GB per node on
    # NVLink (taken as an HGX A100 board's NVSwitch, the DGX A100's 600 GB/s), four Omni-Path 100 Gb/s links per node.
    # Not measured here: the DGX A100's measured fractions (NVLink 232.5 of 300; a NIC at 94% of its rate).
    _node("jean-zay-a100", "Jean Zay A100 80GB node (8 GPUs, 4 x Omni-Path 100 Gb/s)", "a100", 8, 600, 4, 100,
          "BLOOM paper (BigScience 2022), §3.4.1: 48 nodes of 8 A100 80GB, NVLink, 4 x Omni-Path 100 Gbps per node",
          ring_busbw_gbs=232.5, nvls_busbw_gbs=0, nic_busbw_gbs=11.75,
          measured="not measured: DGX A100's NVLink busbw (nccl-tests #175); Omni-Path at NDR's measured 94%"),
    # NVIDIA DGX B200 datasheet: 8x B200, NVLink 5 1.8 TB/s per GPU (bidirectional), 8x ConnectX-7 400 Gb/s.
    _node("dgx-b200", "NVIDIA DGX B200 (8 GPUs)", "b200", 8, 1800, 8, 400, "NVIDIA DGX B200 datasheet",
          ring_busbw_gbs=740, nvls_busbw_gbs=960, nic_busbw_gbs=47,
          measured="not measured here: H100's measured fractions of the line rate (82% ring, NVLS 480/450)"),
]}
# fmt: on


def known_clusters() -> list[str]:
    """The names `cluster()` accepts."""
    return list(CLUSTERS)


def cluster(name: str) -> ClusterSpec:
    """The cluster row for `name` (case-insensitive, e.g. "dgx-h100"); unknown names list the known ones."""
    if not isinstance(name, str):
        raise TypeError(f"cluster 名称应是字符串 (str), 得到 {type(name).__name__}; known: {', '.join(CLUSTERS)}")
    key = name.strip().lower().replace("_", "-").replace(" ", "-")
    if key not in CLUSTERS:
        raise UnknownGPU(f"未知的 cluster {name!r}; known clusters: {', '.join(CLUSTERS)}")
    return CLUSTERS[key]
