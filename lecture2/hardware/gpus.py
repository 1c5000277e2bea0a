"""The GPU table: dense peak FLOP/s by dtype, memory and bandwidth of each GPU, one datasheet per row, and the
dtype keys its columns use (`dtype_key`). Peaks are dense (no 2:4 structured sparsity: NVIDIA's headline tensor
figures are often the sparse ones, exactly 2x these); FLOP/s, memory in bytes, bandwidth in bytes/s."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import torch

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
        "Measure it with `python -m lecture2 env`, or add a row with its datasheet to lecture2/hardware/gpus.py."
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
