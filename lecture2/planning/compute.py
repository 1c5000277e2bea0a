"""How long the kernels of a training step take on one GPU: GEMMs by shape, attention kernels by sequence length,
memory-bound elementwise work by bytes moved. Every efficiency here is fitted to a measurement with its source.

GEMM (M x K by K x N) on a GPU of S SMs, dense peak P (lecture2.hardware), with 128 x 128 output tiles:

    tiles = ceil(M/128) ceil(N/128),  waves = ceil(tiles / S)
    time  = fixed + waves x (2·128·128·K / (P / S) / e_max + per_wave),   at least the bytes moved / HBM bandwidth

Three numbers per kernel family, fitted (least squares on log time) to measured GEMMs:
    bf16 (Hopper)          the course's own H200 profile, lecture2/profiles/h200.json (`make profile`): n³ matmuls,
                           n = 1024 ... 16384, 9.5% to 81.5% of the peak, and the 24 GEMMs of Llama 3 layers
                           (profile.gemm_shapes, 42% to 80%): 7.4% rms, the worst shape off by 1.20x
    fp8 (Hopper)           the same profile's torch._scaled_mm (per-tensor scales, cuBLAS), the same shapes
    fp8-blockwise (Hopper) DeepGEMM's published H800 table (deepseek-ai/DeepGEMM README, Feb 2025: M = 4096, 1-128
                           fine-grained scales, 590-1358 TFLOP/s), the kernels DeepSeek-V3 trained with
    bf16 (Ampere)          three published A100 SXM measurements (A100_GEMMS): the two best shapes of ml-engineering's
                           "Maximum Achievable Matmul FLOPS" sweeps (267.9 TFLOP/s at 6912 x 16384 x 2048, CUDA 12.1;
                           271.2 at 1024 x 10240 x 5120, torch 2.6) and CUTLASS's profiler example (235.1 at 3456 x
                           4096 x 8192, an sm_80 tensor-op kernel: faster than any sm_80 part but the A100 can run);
                           e_max and the per-wave overhead fitted, the launch overhead as Hopper's (GEMMs of a
                           millisecond cannot separate it). The best shapes alone gave e_max 0.864: a curve through the
                           maxima of a sweep, which real layers' GEMMs do not reach
Other architectures take Hopper's curve at their own peak and SM count (not measured: said in the plan's notes).

Attention (FlashAttention-style kernels, causal work only): efficiency = e_16k x (T / (T + 1024)) / (16384 / 17408),
the saturation with sequence length T of FlashAttention-3's measured curve (Shah et al. 2024, Fig. 5: 197 to 616
TFLOP/s from T = 512 to 16k, causal, head dim 128). e_16k by kernel and architecture, forward / backward:
    flash2, Hopper   0.35 / 0.35   "FlashAttention-2 achieves only 35% utilization on H100" (Shah et al. 2024)
    flash3, Hopper   0.62 / 0.56   616 TFLOP/s forward (Fig. 5d); backward 1.6 x FlashAttention-2's (1.5-1.75x, §4.1)
    flash2, Ampere   0.73 / 0.50   "50-73% of the theoretical maximum FLOPs/s on A100" (Dao 2023): forward the top,
                                   backward (the slower pass) the bottom of that range
    flash1, Ampere   0.40 / 0.25   FlashAttention (and its Triton port) "only reaches 25-40% of the theoretical maximum
                                   FLOPs/s" on A100 (Dao 2023, §1): the same reading of the range
    explicit         the two batched GEMMs (the whole T x T square) by the GEMM model, plus the scores' traffic
                     (Megatron's fused scale-mask-softmax, dropout) at HBM bandwidth: what runs before FlashAttention

Memory-bound work (norms, residual adds, activation functions, rotary, dropout, FP8 casts, MoE permutes, the
optimizer): bytes / (datasheet HBM bandwidth x 0.832), the fraction a 2 GiB copy reached on the course's H200
(h200.json: 3.99 of 4.8 TB/s). Units: seconds, FLOPs, bytes.
"""
from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..hardware import GPUSpec

__all__ = ["A100_GEMMS", "ATTENTION_KERNELS", "DEEPGEMM_H800", "GemmFit", "HBM_EFFICIENCY", "SUSTAINED", "attention_seconds", "gemm_fit",
           "gemm_seconds", "launch_seconds", "memory_seconds"]

PROFILES = Path(__file__).resolve().parent.parent / "profiles"
TILE = 128

# DeepGEMM (deepseek-ai/DeepGEMM README, Feb 2025), "normal GEMMs for dense models" on H800 SXM5 with NVCC 12.8,
# FP8 with 1 x 128 / 128 x 128 scales: (M, N, K, TFLOP/s). The M = 64 and 128 rows are inference shapes (memory-bound,
# another tiling); training runs M of thousands of tokens, so the fit takes the M = 4096 rows.
DEEPGEMM_H800 = ((4096, 2112, 7168, 1058), (4096, 24576, 1536, 990), (4096, 32768, 512, 590),
                 (4096, 7168, 16384, 1358), (4096, 4096, 7168, 1304), (4096, 7168, 2048, 1025))
# A100 SXM GEMMs with their measured TFLOP/s (M, N, K, TFLOP/s, source): the two best shapes ml-engineering's mamf-finder
# found in two sweeps (Bekman, compute/accelerator README, "Maximum Achievable Matmul FLOPS comparison table", BF16: the
# CUDA 12.1 row of 2024 and the torch 2.6.0+cu126 row of 2025), and the tensor-op example of CUTLASS's profiler
# documentation (media/docs/profiler.md: 231,956,545,536 FLOPs in 0.98647 ms, fp16 inputs with fp32 accumulation, the
# A100's BF16 rate; min_cc 80, and 235 TFLOP/s is above the peak of every other sm_80 part).
A100_GEMMS = ((6912, 16384, 2048, 267.9, "ml-engineering MAMF, CUDA 12.1"),
              (1024, 10240, 5120, 271.2, "ml-engineering MAMF, torch 2.6.0+cu126"),
              (3456, 4096, 8192, 235.1, "CUTLASS profiler documentation, tensor-op GEMM"))
HBM_EFFICIENCY = 0.832  # lecture2/profiles/h200.json, bandwidth.fraction_of_datasheet (a 2 GiB copy)
# A GPU computing for minutes runs at its power limit, below the boost clock a short measurement sees: the maximum
# sustainable over the maximum achievable matmul FLOP/s (MSMF / MAMF, ml-engineering's mamf-finder, all 8 GPUs of a
# node busy): H200 BF16 755.5 / 852.1, B200 BF16 1437.5 / 1746.7. The profiles and kernel papers time short bursts, so
# compute-bound kernels of a training step run at this fraction of what they measured. Ampere: not measured (1).
SUSTAINED = {"hopper": 755.5 / 852.1, "blackwell": 1437.5 / 1746.7, "ampere": 1.0}


@dataclass(frozen=True)
class GemmFit:
    """A GEMM kernel family's three fitted numbers, what they were fitted to, and how well (rms of log error)."""

    kernel: str
    e_max: float  # the fraction of peak a tile's main loop reaches
    per_wave_s: float  # a wave's prologue/epilogue (seconds)
    fixed_s: float  # launch and tail (seconds)
    points: tuple  # (M, N, K, measured seconds) fitted
    source: str
    rms_log_error: float = 0.0


def _gemm_time(fit_params: tuple[float, float, float], m: int, n: int, k: int, peak: float, sms: int,
               in_bytes: float, hbm: float, batch: int = 1) -> float:
    """One launch of `batch` independent M x K by K x N products (a batched GEMM: cuBLAS's strided-batched kernel
    schedules every product's tiles in the same waves; batch = 1 is a plain GEMM)."""
    e_max, per_wave, fixed = fit_params
    waves = math.ceil(batch * math.ceil(m / TILE) * math.ceil(n / TILE) / sms)
    compute = fixed + waves * (2 * TILE * TILE * k / (peak / sms) / e_max + per_wave)
    moved = batch * ((m * k + k * n) * in_bytes + m * n * 2)
    return max(compute, moved / hbm)


def _fit(points, peak: float, sms: int, in_bytes: float, hbm: float, given: dict[int, float] | None = None
         ) -> tuple[tuple, float]:
    """Least squares on log(time) by a coarse-to-fine grid (deterministic: 11 x 11 x 11 values, then zoom in around
    the best point, four times), evaluated on the whole grid at once; `given` holds parameters not fitted (index ->
    value: 1 the per-wave overhead, 2 the fixed one)."""
    m, n, k, t = (np.array(column, dtype=float) for column in zip(*points))
    waves = np.ceil(np.ceil(m / TILE) * np.ceil(n / TILE) / sms)
    tile_s = 2 * TILE * TILE * k / (peak / sms)  # one wave at e_max = 1
    floor = ((m * k + k * n) * in_bytes + m * n * 2) / hbm

    def errors(e_max, per_wave, fixed):  # arrays of candidate parameters -> sum of squared log errors for each
        time = fixed[..., None] + waves * (tile_s / e_max[..., None] + per_wave[..., None])
        return (np.log(np.maximum(time, floor) / t) ** 2).sum(axis=-1)

    lo, hi = [0.3, 0.0, 0.0], [1.0, 20e-6, 40e-6]
    for i, value in (given or {}).items():
        lo[i] = hi[i] = value
    best = None
    for _ in range(4):
        axes = np.meshgrid(*[np.linspace(lo[i], hi[i], 11) for i in range(3)], indexing="ij")
        err = errors(*axes)
        flat = int(np.argmin(err))  # the first minimum in the grid's order, as the loop it replaced chose
        best = tuple(float(a.flat[flat]) for a in axes)
        span = [(hi[i] - lo[i]) / 5 for i in range(3)]
        lo = [max(0.0 if i else 0.05, best[i] - span[i]) for i in range(3)]
        hi = [best[i] + span[i] for i in range(3)]
    return best, math.sqrt(float(errors(*(np.array(x) for x in best))) / len(points))


def _profile_points(name: str, dtype: str) -> list[tuple[int, int, int, float]]:
    """Measured (M, N, K, seconds) of a shipped profile: the n³ sweep and, when present, the transformer shapes."""
    path = PROFILES / f"{name}.json"
    data = json.loads(path.read_text())
    points = [(r["n"], r["n"], r["n"], r["seconds"]) for r in data["matmul"].get(dtype, {}).get("sizes", [])]
    for r in data.get("gemm_shapes", {}).get(dtype, {}).get("shapes", []):
        points.append((r["m"], r["n"], r["k"], r["seconds"]))
    return points


@functools.lru_cache(maxsize=None)
def gemm_fit(arch: str, kernel: str) -> GemmFit:
    """The fitted GEMM model of `kernel` ("bf16", "fp8", "fp8-blockwise") on `arch` ("hopper", "ampere", other)."""
    from ..hardware import GPUS

    h200 = GPUS["h200"]
    hbm = h200.bandwidth_bytes_per_s * HBM_EFFICIENCY
    if arch == "ampere" and kernel == "bf16":
        a100 = GPUS["a100"]
        points = tuple((m, n, k, 2 * m * n * k / (tflops * 1e12)) for m, n, k, tflops, _ in A100_GEMMS)
        params, err = _fit(points, a100.peak["bf16"], a100.sms, 2, a100.bandwidth_bytes_per_s * HBM_EFFICIENCY,
                           given={2: gemm_fit("hopper", "bf16").fixed_s})
        return GemmFit("bf16", *params, points, "three published A100 SXM GEMMs (ml-engineering's two MAMF shapes, "
                       "CUTLASS's profiler example); the launch overhead as Hopper's", err)
    if kernel == "fp8-blockwise":
        points = tuple((m, n, k, 2 * m * n * k / (tf * 1e12)) for m, n, k, tf in DEEPGEMM_H800)
        params, err = _fit(points, h200.peak["fp8"], h200.sms, 1, hbm)
        return GemmFit(kernel, *params, points, "DeepGEMM README, H800, FP8 1x128 scales (M = 4096 rows)", err)
    if kernel not in ("bf16", "fp8"):
        raise ValueError(f"未知的 GEMM kernel {kernel!r}; known: bf16, fp8, fp8-blockwise")
    points = tuple(_profile_points("h200", kernel))
    params, err = _fit(points, h200.peak[kernel], h200.sms, 2 if kernel == "bf16" else 1, hbm)
    return GemmFit(kernel, *params, points, f"lecture2/profiles/h200.json, matmul {kernel}", err)


def gemm_seconds(m: int, n: int, k: int, gpu: GPUSpec, kernel: str = "bf16", sm_share: float = 1.0,
                 batch: int = 1) -> float:
    """Seconds of one M x K by K x N GEMM on `gpu` with `kernel`'s fitted model; `sm_share` of the SMs computing
    (the rest run communication kernels); `batch` products of that shape in one batched launch (torch.bmm /
    baddbmm: one launch, their tiles scheduled together)."""
    if m <= 0 or n <= 0 or k <= 0 or batch <= 0:
        return 0.0
    arch = gpu.arch if gpu.arch in ("hopper", "ampere") else "hopper"
    if arch == "ampere" and kernel != "bf16":
        raise ValueError(f"{gpu.full_name} 没有 FP8 tensor core (no FP8 on Ampere)")
    fit = gemm_fit(arch, kernel)
    peak = gpu.peak_flops("fp8" if kernel.startswith("fp8") else "bf16") * SUSTAINED.get(gpu.arch, 1.0)
    sms = max(1, round((gpu.sms or 132) * sm_share))
    return _gemm_time((fit.e_max, fit.per_wave_s, fit.fixed_s), m, n, k, peak * sm_share, sms,
                      1 if kernel.startswith("fp8") else 2, gpu.bandwidth_bytes_per_s * HBM_EFFICIENCY, batch)


# kernel -> arch -> (forward, backward) fraction of the bf16 peak at T = 16384 (see the module's text)
ATTENTION_KERNELS = {
    "flash1": {"ampere": (0.40, 0.25)},
    "flash2": {"hopper": (0.35, 0.35), "ampere": (0.73, 0.50)},
    "flash3": {"hopper": (0.62, 0.56)},
}
_HALF_T = 1024  # FlashAttention-3's measured causal curve reaches half its plateau near T = 1k (Fig. 5d)


def attention_seconds(queries: int, keys: int, heads: int, qk_dim: int, v_dim: int, gpu: GPUSpec,
                      kernel: str = "flash2", causal: bool = True, passes: str = "fwd+bwd",
                      sm_share: float = 1.0, batch: int = 1) -> float:
    """Seconds of attention's core for `batch` sequences of `queries` query tokens against `keys` keys, `heads`
    heads: FlashAttention-style kernels skip the masked half (causal), the explicit one computes the whole square
    and moves the scores through HBM. passes: "fwd", "bwd" or "fwd+bwd" (backward: 2.5 x the forward's FLOPs, its 5
    matmuls with the recomputed scores).

    The explicit kernel is Megatron's CoreAttention (megatron/core/transformer/dot_product_attention.py): one
    torch.baddbmm for the scores Q·Kᵀ over all batch x heads products, the fused scale-mask-softmax, dropout, one
    torch.bmm for P·V; backward the two gradients of each product (dQ, dK; dP, dV), each one batched launch."""
    full = 2 * queries * keys * heads * (qk_dim + v_dim) * batch  # forward FLOPs of the whole square
    peak = gpu.peak_flops("bf16") * sm_share * SUSTAINED.get(gpu.arch, 1.0)
    if kernel == "explicit":
        bmm = functools.partial(gemm_seconds, gpu=gpu, sm_share=sm_share, batch=batch * heads)
        fwd_gemm = bmm(queries, keys, qk_dim) + bmm(queries, v_dim, keys)  # S = Q Kᵀ, O = P V
        bwd_gemm = (bmm(queries, qk_dim, keys) + bmm(keys, qk_dim, queries)  # dQ = dS K, dK = dSᵀ Q
                    + bmm(queries, keys, v_dim) + bmm(keys, v_dim, queries))  # dP = dO Vᵀ, dV = Pᵀ dO
        scores = queries * keys * heads * batch
        fwd = fwd_gemm + memory_seconds(scores * 11, gpu)  # write 2, softmax r/w 4, dropout r/w + mask 5 bytes
        bwd = bwd_gemm + memory_seconds(scores * 16, gpu)
        return {"fwd": fwd, "bwd": bwd, "fwd+bwd": fwd + bwd}[passes]
    arch = gpu.arch if gpu.arch in ("hopper", "ampere") else "hopper"
    table = ATTENTION_KERNELS.get(kernel)
    if table is None or arch not in table:
        raise ValueError(f"没有 {kernel} 在 {arch} 上的测量 (no measured {kernel} on {arch}); known: "
                         + ", ".join(f"{k}/{a}" for k, v in ATTENTION_KERNELS.items() for a in v))
    e_fwd, e_bwd = table[arch]
    saturation = (keys / (keys + _HALF_T)) / (16384 / (16384 + _HALF_T))
    work = full / 2 if causal else full
    fwd = work / (peak * e_fwd * saturation)
    bwd = 2.5 * work / (peak * e_bwd * saturation)
    return {"fwd": fwd, "bwd": bwd, "fwd+bwd": fwd + bwd}[passes]


def launch_seconds() -> float:
    """What one kernel costs beyond its work (seconds): the launch and the tail the H200 profile measured around every
    GEMM it timed (the bf16 fit's fixed term, 15.6 µs). Every GEMM carries it in its fitted time; the memory-bound
    and attention kernels between them pay it too (lecture2.planning.costs counts them)."""
    return gemm_fit("hopper", "bf16").fixed_s


def memory_seconds(nbytes: float, gpu: GPUSpec) -> float:
    """Seconds to move `nbytes` through HBM at the measured fraction of the datasheet bandwidth."""
    return nbytes / (gpu.bandwidth_bytes_per_s * HBM_EFFICIENCY)
