"""Which device is present and which peak and roof apply on it: `applicable_peak(dtype, device)` is the one rule
(the datasheet on a GPU, the measured best matmul on a CPU), read by `peak_flops`, `roof` (with the bandwidth) and
`training_peak` (the peak an MFU ladder divides by)."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .cpu import _CPU_DTYPES, cpu_bandwidth, cpu_peak
from .gpus import dtype_key, gpu_from_device_name


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
