"""The accounting calculator: FLOPs, time, cost and memory of a training run, as pure functions.

The lecture's §6 in code. Units are in every name and docstring: FLOPs (a count), FLOP/s, seconds,
GPU-hours, US dollars, bytes. Nothing here measures anything; `python -m lecture2 estimate` prints it.

    total FLOPs   = 6 * N * D                       (N parameters, D training tokens; lecture §3.2)
    time (s)      = total FLOPs / (GPUs * peak FLOP/s * MFU)   (lecture §6.1)
    cost (USD)    = time (h) * GPUs * USD per GPU-hour          (lecture §6.3)
    bytes per GPU = weights + gradients + optimizer states, each divided by the GPUs that share it
                    (ZeRO stages, Rajbhandari et al. 2020; notebook 10)
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

__all__ = ["MEMORY_RECIPES", "MemoryRecipe", "SECONDS_PER_DAY", "SECONDS_PER_HOUR", "SHARD_STAGES",
           "cost_per_1k_tokens_usd", "cost_usd", "gpu_hours", "sharded_memory_bytes", "training_flops",
           "training_memory_bytes", "training_seconds"]

SECONDS_PER_HOUR = 3600
SECONDS_PER_DAY = 24 * SECONDS_PER_HOUR


def _positive(value: object, what: str, *, allow_zero: bool = False) -> float:
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise TypeError(f"{what} 应是一个数 (a real number)，得到 {type(value).__name__}")
    value = float(value)
    if math.isnan(value) or math.isinf(value) or value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{what} 应 {bound} 且有限 (finite)，得到 {value!r}")
    return value


def _mfu(value: object) -> float:
    mfu = _positive(value, "MFU")
    if mfu > 1:
        raise ValueError(f"MFU 是峰值的比例 (a fraction of peak), 应在 (0, 1] 内，得到 {mfu!r}")
    return mfu


def training_flops(n_params: float, n_tokens: float) -> float:
    """Total training FLOPs (a count) of N parameters on D tokens: 6 * N * D.

    2N per token forward (one multiply-add per parameter), 4N backward (gradients of inputs and of
    weights). Attention scores and recomputation (activation checkpointing) are not included.
    """
    return 6 * _positive(n_params, "n_params") * _positive(n_tokens, "n_tokens")


def training_seconds(total_flops: float, n_gpus: int, peak_flops_per_s: float, mfu: float) -> float:
    """Wall-clock seconds to do `total_flops` on `n_gpus` GPUs of dense peak `peak_flops_per_s` (FLOP/s each)
    running at model FLOPs utilization `mfu` (a fraction in (0, 1])."""
    effective = _positive(n_gpus, "n_gpus") * _positive(peak_flops_per_s, "peak_flops_per_s") * _mfu(mfu)
    return _positive(total_flops, "total_flops") / effective


def gpu_hours(seconds: float, n_gpus: int) -> float:
    """GPU-hours of a run that lasts `seconds` (wall clock) on `n_gpus` GPUs: what a cloud bills."""
    return _positive(seconds, "seconds", allow_zero=True) / SECONDS_PER_HOUR * _positive(n_gpus, "n_gpus")


def cost_usd(n_gpu_hours: float, usd_per_gpu_hour: float) -> float:
    """US dollars for `n_gpu_hours` GPU-hours at `usd_per_gpu_hour` (USD per GPU per hour)."""
    price = _positive(usd_per_gpu_hour, "usd_per_gpu_hour", allow_zero=True)
    return _positive(n_gpu_hours, "n_gpu_hours", allow_zero=True) * price


def cost_per_1k_tokens_usd(total_usd: float, n_tokens: float) -> float:
    """US dollars per 1,000 training tokens of a run that cost `total_usd` for `n_tokens` tokens."""
    return _positive(total_usd, "total_usd", allow_zero=True) / _positive(n_tokens, "n_tokens") * 1000


@dataclass(frozen=True)
class MemoryRecipe:
    """Bytes per parameter a training recipe keeps for the whole run (activations not included)."""

    name: str
    weights: int  # bytes per parameter of the weights the forward pass reads
    gradients: int  # bytes per parameter of the gradients
    optimizer: int  # bytes per parameter of optimizer states (fp32 master copy, momenta)
    note: str

    @property
    def bytes_per_param(self) -> int:
        return self.weights + self.gradients + self.optimizer


# fmt: off
MEMORY_RECIPES: dict[str, MemoryRecipe] = {r.name: r for r in [
    MemoryRecipe("fp32 Adam", 4, 4, 8, "fp32 weights and grads, Adam m and v in fp32"),
    MemoryRecipe("bf16 mixed Adam", 2, 2, 12, "lecture §4.1: bf16 weights/grads; fp32 master + m + v"),
    MemoryRecipe("bf16 mixed Adam, fp32 grads", 2, 4, 12, "the 18N convention: gradients accumulated in fp32"),
    MemoryRecipe("fp32 SGD momentum", 4, 4, 4, "one fp32 momentum buffer"),
    MemoryRecipe("fp32 SGD", 4, 4, 0, "plain SGD keeps no state"),
    MemoryRecipe("bf16 SGD", 2, 2, 0, "lecture §4.1: params and grads only, 4N"),
]}
# fmt: on


def _recipe(recipe: str | MemoryRecipe) -> MemoryRecipe:
    if isinstance(recipe, MemoryRecipe):
        return recipe
    if recipe not in MEMORY_RECIPES:
        raise KeyError(f"未知的 recipe {recipe!r}; known: {', '.join(MEMORY_RECIPES)}")
    return MEMORY_RECIPES[recipe]


def training_memory_bytes(n_params: float, recipe: str | MemoryRecipe = "bf16 mixed Adam") -> float:
    """Bytes of weights + gradients + optimizer states for `n_params` parameters under `recipe`
    (a name of MEMORY_RECIPES). Activations, buffers and fragmentation are not included."""
    return _positive(n_params, "n_params") * _recipe(recipe).bytes_per_param


# which parts each ZeRO stage divides among the GPUs (Rajbhandari et al. 2020, "ZeRO: Memory Optimizations
# Toward Training Trillion Parameter Models", §5: P_os, P_os+g, P_os+g+p); "none" is plain data parallelism
SHARD_STAGES: dict[str, tuple[str, ...]] = {
    "none": (),
    "zero1": ("optimizer",),
    "zero2": ("optimizer", "gradients"),
    "zero3": ("optimizer", "gradients", "weights"),
}


def sharded_memory_bytes(n_params: float, n_gpus: int, shard: str = "zero3",
                         recipe: str | MemoryRecipe = "bf16 mixed Adam") -> dict[str, float]:
    """Bytes per GPU of weights, gradients and optimizer states when `n_gpus` data-parallel GPUs train
    `n_params` parameters under `recipe`, sharded as `shard` (a key of SHARD_STAGES):

        none   every GPU holds all of it          (2 + 2 + 12 = 16 bytes/param for the lecture's recipe)
        zero1  optimizer states / n               (4 + 12/n)
        zero2  + gradients / n                    (2 + 14/n)
        zero3  + weights / n  (FSDP)              (16/n: 7B over 256 GPUs -> 437.5 MB)

    Returns {"weights", "gradients", "optimizer", "total"} in bytes (floats: an even split, no padding).
    Activations, communication buffers and fragmentation are not included.
    """
    n = _positive(n_params, "n_params")
    if not isinstance(n_gpus, numbers.Integral) or isinstance(n_gpus, bool) or n_gpus < 1:
        raise ValueError(f"n_gpus 应是正整数 (a positive int), 得到 {n_gpus!r}")
    if shard not in SHARD_STAGES:
        raise ValueError(f"未知的 shard {shard!r}; known: {', '.join(SHARD_STAGES)}")
    r = _recipe(recipe)
    parts = {"weights": r.weights * n, "gradients": r.gradients * n, "optimizer": r.optimizer * n}
    per_gpu = {k: v / n_gpus if k in SHARD_STAGES[shard] else v for k, v in parts.items()}
    per_gpu["total"] = sum(per_gpu.values())
    return per_gpu
