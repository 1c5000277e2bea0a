"""The accounting calculator: FLOPs, time, cost and memory of a training run, as pure functions.

The lecture's §6 in code. Units are in every name and docstring: FLOPs (a count), FLOP/s, seconds,
GPU-hours, US dollars, bytes. Nothing here measures anything; `python -m lecture2 estimate` prints it.

    total FLOPs   = 6 * N * D                       (N parameters, D training tokens; lecture §3.2)
    per token     = 6 * N + 12 * L * d * T          (with attention: PaLM, Chowdhery et al. 2022, App. B; notebook 05)
    time (s)      = total FLOPs / (GPUs * peak FLOP/s * MFU)   (lecture §6.1)
    cost (USD)    = time (h) * GPUs * USD per GPU-hour          (lecture §6.3)
    bytes per GPU = weights + gradients + optimizer states, each divided by the GPUs that share it
                    (ZeRO stages, Rajbhandari et al. 2020; notebooks 10 and 11)
    activations   = per layer, tensor by tensor as notebook 06 counts them (fused attention, no dropout), or
                    Korthikanti et al. 2022's sbh(34 + 5as/h) family (explicit attention with dropout), both with
                    tensor and sequence parallelism and recomputation (`activation_bytes_per_layer`)

A whole run laid out over TP x PP x DP, with the network, is `lecture2.planner`.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

__all__ = ["ACTIVATION_CONVENTIONS", "MEMORY_RECIPES", "MemoryRecipe", "RECOMPUTE", "SECONDS_PER_DAY", "TRAINED_RECIPES",
           "SECONDS_PER_HOUR", "SHARD_STAGES", "activation_bytes_per_layer", "activation_terms",
           "cost_per_1k_tokens_usd", "cost_usd", "flops_per_token", "gpu_hours", "korthikanti_bytes_per_layer",
           "sharded_memory_bytes",
           "training_flops", "training_memory_bytes", "training_seconds"]

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


def flops_per_token(n_params: float, n_layers: int = 0, d_model: int = 0, seq_len: int = 0) -> float:
    """Training FLOPs per token (a count): 6N for the weights' matmuls, plus 12·L·d·T for attention's two
    matmuls (QK^T and softmax·V, forward and backward, the full T x T square as PaLM and the FLOP counter count
    it; Chowdhery et al. 2022, App. B, with H·Q = d). Without a shape (L = d = T = 0) it is the lecture's 6N;
    at T = 4096 on Llama 2 7B's shape the attention term adds 15%."""
    n = _positive(n_params, "n_params")
    for value, what in ((n_layers, "n_layers"), (d_model, "d_model"), (seq_len, "seq_len")):
        _positive(value, what, allow_zero=True)
    return 6 * n + 12 * n_layers * d_model * seq_len


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
    """Bytes per parameter a training recipe keeps for the whole run (activations not included): the course's one
    table of recipes (MEMORY_RECIPES). `name` is what the calculator and the planner take; the recipes the course's
    engines train (lecture2.zero, lecture2.distributed.Job) and notebooks 06 and 10's exercises count also have a
    `key` (an identifier) and say how they train: the model's dtype, the optimizer, and whether an fp32 master copy
    of the weights is kept (counted in `optimizer`)."""

    name: str
    weights: int  # bytes per parameter of the weights the forward pass reads
    gradients: int  # bytes per parameter of the gradients
    optimizer: int  # bytes per parameter of optimizer states (fp32 master copy, momenta)
    note: str
    key: str | None = None  # the identifier the engines and exercises use; None: the calculator's only
    dtype: str = "fp32"  # the model's weights and gradients: "fp32" or "bf16"
    algorithm: str = "adam"  # "adam", "sgd" (no state) or "sgd_momentum" (one buffer)
    master: bool = False  # an fp32 master copy of the weights, updated by the optimizer

    @property
    def bytes_per_param(self) -> int:
        return self.weights + self.gradients + self.optimizer

    @property
    def parts(self) -> tuple[int, int, int]:
        """(weights, gradients, optimizer) bytes per parameter."""
        return self.weights, self.gradients, self.optimizer


# fmt: off
MEMORY_RECIPES: dict[str, MemoryRecipe] = {r.name: r for r in [
    MemoryRecipe("fp32 Adam", 4, 4, 8, "fp32 weights and grads, Adam m and v in fp32", "fp32_adam"),
    MemoryRecipe("bf16 mixed Adam", 2, 2, 12, "lecture §4.1: bf16 weights/grads; fp32 master + m + v",
                 "bf16_mixed_adam", dtype="bf16", master=True),
    MemoryRecipe("bf16 mixed Adam, fp32 grads", 2, 4, 12, "the 18N convention: gradients accumulated in fp32"),
    MemoryRecipe("bf16 mixed Adam, bf16 moments", 2, 4, 8,
                 "DeepSeek-V3 §3.3.3: fp32 master weights and gradients, AdamW's moments in bf16"),
    MemoryRecipe("fp32 SGD momentum", 4, 4, 4, "one fp32 momentum buffer", "sgd_momentum", algorithm="sgd_momentum"),
    MemoryRecipe("fp32 SGD", 4, 4, 0, "plain SGD keeps no state", "sgd", algorithm="sgd"),
    MemoryRecipe("bf16 SGD", 2, 2, 0, "lecture §4.1: params and grads only, 4N", "bf16_sgd", dtype="bf16",
                 algorithm="sgd"),
]}
# fmt: on
# the recipes the course's engines train and notebooks 06 and 10 count, by key (in the order the notebooks list them)
TRAINED_RECIPES: dict[str, MemoryRecipe] = {r.key: r for r in (MEMORY_RECIPES[name] for name in (
    "fp32 Adam", "bf16 mixed Adam", "fp32 SGD", "fp32 SGD momentum", "bf16 SGD")) if r.key}


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


# --- activations per layer --------------------------------------------------------------------------------------
ACTIVATION_CONVENTIONS = ("course", "korthikanti")
RECOMPUTE = ("none", "selective", "full")
_FFNS = ("gelu", "swiglu")


def activation_terms(seq_len: int, micro_batch: int, d_model: int, n_heads: int, *, d_ff: int | None = None,
                     ffn: str = "gelu", kv_heads: int | None = None, dtype_bytes: int = 2, tp: int = 1,
                     sp: bool = False, recompute: str = "none", norm_kernel: str = "cuda",
                     mlp_kernel: str = "eager") -> dict[str, float]:
    """Bytes autograd keeps for backward in one pre-norm Transformer layer, tensor by tensor, as notebook 06
    counts them (its accounting: each tensor the backward needs once, values in the model dtype, per-row statistics
    in fp32; norm_kernel="cuda" is that accounting, which its exercise 2 checks against `measure.saved_bytes`):
    fused attention (FlashAttention keeps q, k, v, its output and one fp32 log-sum-exp per row and head, never the
    T x T matrix), no dropout (the course's models and Llama have none), RMSNorm.

    Per token, h = d_model, f = d_ff (default 4h), p = dtype_bytes:
        norm inputs      2 norms: x in the model dtype + fp32 rstd (CUDA's fused RMSNorm, measured on an H200 in
                         notebook 06); norm_kernel="cpu": fp32 x and x·rstd + rstd, as PyTorch's CPU kernel keeps
        norm outputs     2·h·p (the inputs of the QKV and up projections)
        q, k, v          (h + 2·kv_heads·h/n_heads)·p  (grouped-query attention: fewer k, v heads)
        attention out    h·p (the output projection's input)
        log-sum-exp      n_heads · 4
        FFN              gelu: up output and GELU output, 2·f·p; swiglu: gate, up, silu(gate) and their
                         product, 4·f·p, as PyTorch's eager module keeps them (mlp_kernel="eager", measured in
                         tests/test_estimate.py); a fused SwiGLU (mlp_kernel="fused": Megatron's bias_swiglu, Transformer
                         Engine) keeps its input [gate | up] and the product, 3·f·p, recomputing silu(gate) in backward
    Tensor parallelism (tp = t) divides what lies between a column- and a row-parallel layer (q, k, v, attention
    out, log-sum-exp, FFN) by t; the norms' tensors stay whole on every rank unless sequence parallelism (sp)
    divides them along the sequence too (Korthikanti et al. 2022, §4.2.2: the linear layers keep their input
    sharded and gather it again in backward). recompute="full" keeps only the layer's input, h·p per token;
    "selective" (recompute the attention core, Korthikanti §5) keeps the same as "none" here: a fused kernel
    already recomputes its attention weights in backward, there is no T^2 term left to drop.

    Returns {term: bytes for the whole micro-batch of seq_len x micro_batch tokens}.
    """
    s, b, h, a = (_count(seq_len, "seq_len"), _count(micro_batch, "micro_batch"), _count(d_model, "d_model"),
                  _count(n_heads, "n_heads"))
    f = _count(d_ff if d_ff is not None else 4 * h, "d_ff")
    kv = _count(kv_heads if kv_heads is not None else a, "kv_heads")
    p, t = _count(dtype_bytes, "dtype_bytes"), _count(tp, "tp")
    if ffn not in _FFNS:
        raise ValueError(f"ffn 应是 {_FFNS} 之一, 得到 {ffn!r}")
    if recompute not in RECOMPUTE:
        raise ValueError(f"recompute 应是 {RECOMPUTE} 之一, 得到 {recompute!r}")
    if norm_kernel not in ("cuda", "cpu"):
        raise ValueError(f"norm_kernel 应是 'cuda' 或 'cpu', 得到 {norm_kernel!r}")
    if mlp_kernel not in ("eager", "fused"):
        raise ValueError(f"mlp_kernel 应是 'eager' 或 'fused', 得到 {mlp_kernel!r}")
    if h % a or a % kv:
        raise ValueError(f"d_model ({h}) 要被 n_heads ({a}) 整除, n_heads 要被 kv_heads ({kv}) 整除")
    tokens = s * b
    whole = t if sp else 1  # the norms' tensors: whole on each TP rank, or divided along the sequence (SP)
    if recompute == "full":
        return {"layer input (kept for recomputation)": tokens * h * p / whole}
    norm_each = (2 * h + 1) * 4 if norm_kernel == "cpu" else h * p + 4
    kv_width = 2 * kv * (h // a)
    terms = {
        "norm inputs and rstd (2 norms)": tokens * 2 * norm_each / whole,
        "norm outputs (inputs of QKV and up)": tokens * 2 * h * p / whole,
        "q, k, v": tokens * (h + kv_width) * p / t,
        "attention output": tokens * h * p / t,
        "log-sum-exp (fp32)": tokens * a * 4 / t,
        "FFN": tokens * (2 if ffn == "gelu" else 3 if mlp_kernel == "fused" else 4) * f * p / t,
    }
    return terms


def korthikanti_bytes_per_layer(seq_len: int, micro_batch: int, d_model: int, n_heads: int, *, tp: int = 1,
                                sp: bool = False, recompute: str = "none") -> float:
    """Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models", §4-5), bytes per
    layer for 16-bit activations with dropout and explicit attention (the T x T scores, softmax and dropout kept):

        no parallelism          sbh(34 + 5as/h)
        tensor parallel (t)     sbh(10 + 24/t + 5as/(ht))
        + sequence parallel     sbh(34 + 5as/h) / t
        selective recompute     sbh(10 + 24/t), with SP 34·sbh/t   (the 5as/h attention-core term recomputed)
        full recompute          2·sbh (the layer's input), with SP 2·sbh/t
    """
    s, b, h, a = (_count(seq_len, "seq_len"), _count(micro_batch, "micro_batch"), _count(d_model, "d_model"),
                  _count(n_heads, "n_heads"))
    t = _count(tp, "tp")
    if recompute not in RECOMPUTE:
        raise ValueError(f"recompute 应是 {RECOMPUTE} 之一, 得到 {recompute!r}")
    sbh = s * b * h
    attention_core = 5 * a * s / h
    if recompute == "full":
        return 2 * sbh / (t if sp else 1)
    if recompute == "selective":
        attention_core = 0
    if sp:
        return sbh * (34 + attention_core) / t
    return sbh * (10 + 24 / t + attention_core / t)


def activation_bytes_per_layer(seq_len: int, micro_batch: int, d_model: int, n_heads: int, *,
                               convention: str = "course", **options) -> float:
    """Bytes one layer keeps for backward for a micro-batch of `micro_batch` sequences of `seq_len` tokens:
    convention="course" sums `activation_terms` (notebook 06's accounting; options d_ff, ffn, kv_heads,
    dtype_bytes, tp, sp, recompute, norm_kernel), "korthikanti" is `korthikanti_bytes_per_layer` (options tp,
    sp, recompute; 16-bit with dropout, as the paper)."""
    if convention == "course":
        return sum(activation_terms(seq_len, micro_batch, d_model, n_heads, **options).values())
    if convention == "korthikanti":
        allowed = {"tp", "sp", "recompute"}
        return korthikanti_bytes_per_layer(seq_len, micro_batch, d_model, n_heads,
                                           **{k: v for k, v in options.items() if k in allowed})
    raise ValueError(f"convention 应是 {ACTIVATION_CONVENTIONS} 之一, 得到 {convention!r}")


def _count(value: object, what: str) -> int:
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{what} 应是正整数 (a positive int), 得到 {value!r}")
    return int(value)
