"""Bytes one GPU holds at its peak: the training state of its pipeline stage, the activations its schedule keeps in
flight, the last stage's logits, and what the runtime takes before any of it (all in bytes).

Training state: each layer's matrices / t (column- and row-parallel), its norms whole; routed experts / ep (and / t);
the embedding / t on the first stage, the head / t on the last (a tied embedding is a second copy under PP). Bytes
per parameter from the recipe (lecture2.estimate.MEMORY_RECIPES); ZeRO stage z divides the optimizer (z >= 1), the
gradients (z >= 2: reduce-scattered every micro-batch, DeepSpeed's stage 2 and FSDP's SHARD_GRAD_OP) and the weights
(z = 3) over the data-parallel ranks (x cp: Megatron shards over DP x CP; the experts over DP x CP / EP). ZeRO 0-1
keep no gradient bucket of their own: Megatron's buckets are views into the gradient buffer. ZeRO-2 holds one
layer's unsharded gradient while it is reduced; ZeRO-3 two gathered layers and one unsharded gradient.

Activations per layer and micro-batch (`activation_terms`), notebook 06's tensor-by-tensor count made general: the
norms' inputs (model dtype + fp32 rstd) and outputs, q, k, v (GQA: fewer k, v heads; MLA: the compressed vectors and
the heads), the attention output, FlashAttention's fp32 log-sum-exp, the MLP (a fused SwiGLU keeps [gate | up] and the
product, 3·f; GELU 2·f), per active expert the same plus its permuted input, dropout masks (1 byte per element) where
the run uses dropout, the explicit attention's scores (Korthikanti's 5·a·s per token) where it is not fused; TP
divides what lies between a column- and a row-parallel layer, SP and CP divide everything along the sequence (CP
gathers K and V again in backward rather than keep them). FP8 runs keep the linear layers' inputs in FP8 (DeepSeek-V3 §3.3.2). Full recompute keeps
the layer's input only. Selective recompute is Megatron-Core's recompute modules (--recompute-modules layernorm, mlp / moe_act, mla_up_proj,
core_attn): the norms' outputs, the activation function's output and MLA's up-projected heads are recomputed, not
kept; with an explicit attention kernel its scores too (Korthikanti et al. 2022's selective recompute).
In flight: lecture2.planning.schedule (1F1B, interleaved, DualPipe's p + 1).

Runtime: the driver's reservation (616 MiB: nvidia-smi's total less torch's total_memory on the course's H200), the
CUDA context and cuBLAS workspace (0.5 GiB, an assumption until `make profile` measures it: profile.cuda_context), and
NCCL's buffers for each communicator (NCCL_BUFFSIZE 4 MiB for Simple + LL128's 4.6 MiB per channel and peer: 16
channels, 2 ring peers, about 0.3 GB). Allocator transients and fragmentation: the measured gap between the caching
allocator's peak and the bytes saved for backward on the course's H200 (h200.json, checkpointing.plain: 4.5%),
applied to the activations.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path

from .. import estimate
from .layout import Layout, Run
from .shapes import ModelShape

__all__ = ["DRIVER_RESERVED", "NCCL_BUFFERS_PER_COMMUNICATOR", "activation_terms", "fragmentation", "runtime_bytes"]

DRIVER_RESERVED = 616 * 2**20  # lecture2.hardware: nvidia-smi total - torch total_memory on the course's H200
CUDA_CONTEXT = 0.5 * 2**30  # assumed until a profile measures it
NCCL_BUFFERS_PER_COMMUNICATOR = 16 * 2 * (4 * 2**20 + 4.6 * 2**20)  # channels x ring peers x (Simple + LL128)


@functools.lru_cache(maxsize=None)
def fragmentation() -> float:
    """Allocator transients over the activations, measured: the H200 profile's plain (no checkpointing) stack,
    peak memory over the bytes saved for backward, less one."""
    data = json.loads((Path(__file__).resolve().parent.parent / "profiles" / "h200.json").read_text())
    plain = data["models"]["checkpointing"]["plain"]
    return plain["peak_memory"] / plain["saved_bytes"] - 1


@functools.lru_cache(maxsize=None)
def cuda_context() -> float:
    """The CUDA context and workspaces of one process (bytes): the H200 profile's measurement when it has one."""
    data = json.loads((Path(__file__).resolve().parent.parent / "profiles" / "h200.json").read_text())
    return float(data.get("device", {}).get("cuda_context_bytes") or CUDA_CONTEXT)


def activation_terms(shape: ModelShape, layout: Layout, run: Run, moe_layer: bool) -> dict[str, float]:
    """Bytes one GPU keeps for backward for one layer and one micro-batch, term by term."""
    t, cp, b = layout.tp, layout.cp, layout.micro_batch
    tokens = b * run.seq_len / cp
    h, a, p = shape.d_model, shape.n_heads, 2
    lin = 1 if run.dtype.startswith("fp8") else p  # FP8 runs keep the linear layers' inputs in FP8
    whole = t if layout.sp else 1
    if run.activations == "korthikanti":
        return {"Korthikanti et al. 2022": cp_free_korthikanti(shape, layout, run) / cp}
    if layout.recompute == "full":
        return {"layer input (kept for recomputation)": tokens * h * p / whole}
    selective = layout.recompute == "selective"  # Megatron-Core's recompute modules: norms, activation, MLA up-proj
    norm_each = h * p + (8 if shape.norm == "layernorm" else 4)
    terms = {"norm inputs and statistics (2 norms)": tokens * 2 * norm_each / whole}
    if not selective:
        terms["norm outputs (inputs of the attention and MLP)"] = tokens * 2 * h * lin / whole
    if shape.mla:
        compressed = shape.q_lora_rank + shape.kv_lora_rank + shape.qk_rope_dim
        terms["MLA compressed q, kv (and their norms)"] = tokens * 2 * compressed * p
        if not selective:
            terms["q, k, v"] = tokens * a * (2 * shape.qk_dim + shape.v_dim) * p / t
    else:
        terms["q, k, v"] = tokens * (a + 2 * shape.kv) * shape.hd * p / t
    terms["attention output"] = tokens * a * shape.v_dim * lin / t
    terms["log-sum-exp (fp32)"] = tokens * a * 4 / t
    if run.attention_kernel == "explicit" and layout.recompute != "selective":
        terms["scores: softmax, dropout mask and output"] = tokens * 5 * a * run.seq_len / t
    # fused SwiGLU: [gate | up] and the product; GELU: up and GELU outputs; selective: the activation recomputed
    mlp = (3 if shape.ffn == "swiglu" else 2) - selective
    if moe_layer:
        experts = shape.top_k + shape.shared_experts
        terms["MLP: active experts' inputs"] = tokens * shape.top_k * h * lin / t
        terms["MLP: active experts"] = tokens * experts * mlp * shape.expert_ffn * p / t
        terms["router probabilities (fp32)"] = tokens * shape.n_experts * 4
    else:
        terms["MLP"] = tokens * mlp * shape.d_ff * p / t
    if run.dropout:
        terms["dropout masks (2 per layer)"] = tokens * 2 * h / whole
    return terms


def cp_free_korthikanti(shape: ModelShape, layout: Layout, run: Run) -> float:
    """Korthikanti et al. 2022's sbh(34 + 5as/h) family for this layer (dense shapes only: the paper's GPT)."""
    return estimate.korthikanti_bytes_per_layer(run.seq_len, layout.micro_batch, shape.d_model, shape.n_heads,
                                                tp=layout.tp, sp=layout.sp, recompute=layout.recompute)


def runtime_bytes(communicators: int) -> float:
    """What a training process takes before its own tensors: the CUDA context and NCCL's buffers."""
    return cuda_context() + communicators * NCCL_BUFFERS_PER_COMMUNICATOR
