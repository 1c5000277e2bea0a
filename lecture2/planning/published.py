"""The conformance table: published training runs, their layouts as their papers state them, the figure each
reports and what it counts, beside the planner's prediction for the same run.

A layout knob a paper does not state (Llama 3's virtual stages; Megatron-LM's and DeepSeek-V3's micro-batch size and
stage split) is `free`: the planner takes the fastest value that fits, the way the run's engineers would have, and
the table says which knobs those were. Nothing here is fitted to a row: the GEMM and attention efficiencies, the bus
bandwidths and the memory accounting are the same for every row (lecture2.planning.compute, collectives, memory).

    what a row counts
    MFU          model FLOPs per second over the GPUs' dense BF16 peak (Llama 3: "BF16 MFU"; 6N + causal attention)
    HFU          FLOPs the kernels execute: Megatron-LM's 96·B·s·l·h²(1 + s/6h + V/16lh) counts the recomputed forward
                 and the whole T x T attention square (Narayanan et al. 2021, §5.1 and Appendix)
    GPU-hours    per trillion training tokens (DeepSeek-V3: "180K H800 GPU hours", the whole pre-training's average)
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace

from .layout import Layout, Run
from .plan import Plan
from .shapes import model
from .step import plan

__all__ = ["PUBLISHED", "PublishedRun", "conformance", "predict"]


@dataclass(frozen=True)
class PublishedRun:
    """One published run: what was trained where and how, what it reported, and what that figure counts."""

    name: str
    source: str
    model: str  # a preset of lecture2.planning.shapes
    run: Run
    layout: Layout
    reported: float
    metric: str  # "mfu", "hfu" or "gpu_hours_per_trillion_tokens"
    counts: str  # what the reported figure counts, in words
    free: dict = field(default_factory=dict)  # layout knob -> values tried (the paper does not state it)
    note: str = ""

    def predicted(self, p: Plan) -> float:
        return getattr(p, self.metric)


_L3 = Run(gpus=16384, cluster="dgx-h100", seq_len=8192, batch_tokens=16 * 2**20, tokens=15.6e12,
          recipe="bf16 mixed Adam, fp32 grads", reduce_dtype="fp32", attention="flash3")
_L3_LAYOUT = Layout(tp=8, sp=True, pp=16, zero=2, micro_batch=1, recompute="none", fewer_layers_at_ends=1)
_L3_SOURCE = ("Dubey et al. 2024, The Llama 3 Herd of Models, §3.3.2 and Table 4 (TP, CP, PP, DP, sequence, batch "
              "per DP rank, tokens per batch, TFLOPs/GPU, BF16 MFU); no activation checkpointing at 8K; optimizer "
              "states and gradients sharded; one layer fewer on the first and last stage; interleaved schedule")
_L3_COUNTS = "BF16 MFU: model FLOPs over 16,384 x 989 TFLOP/s (the paper's TFLOPs/GPU / 989)"
_MEGATRON = ("Narayanan et al. 2021, Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM, "
             "Table 1: TP, PP, GPUs, batch, achieved TFLOP/s per GPU (seq 2,048, vocabulary 51,200, Selene's DGX A100 "
             "80GB nodes, 8 x HDR InfiniBand each, activation recomputation, mixed precision)")
_MEGATRON_COUNTS = ("HFU-like: Megatron's 96·B·s·l·h²(1 + s/6h + V/16lh) per iteration counts the recomputed forward "
                    "and the whole attention square; compared with the plan's HFU x 312 TFLOP/s")


def _megatron(name: str, gpus: int, tp: int, pp: int, batch: int, tflops: float) -> PublishedRun:
    run = Run(gpus=gpus, cluster="dgx-a100", seq_len=2048, batch_tokens=batch * 2048, tokens=300e9,
              recipe="bf16 mixed Adam, fp32 grads", attention="explicit", dropout=True)
    return PublishedRun(f"Megatron-LM {name} on {gpus:,} A100", _MEGATRON, f"megatron-{name}", run,
                        Layout(tp=tp, pp=pp, zero=0, micro_batch=1, recompute="full"), tflops / 312, "hfu",
                        _MEGATRON_COUNTS, {"virtual_stages": (1, 2, 3, 4)},
                        "micro-batch 1 assumed; before FlashAttention (2022): explicit attention with dropout; "
                        "plain data parallelism (the distributed optimizer came later)")


PUBLISHED: list[PublishedRun] = [
    PublishedRun("Llama 3 405B, 8K sequences, 16,384 H100", _L3_SOURCE, "llama3-405b", _L3, _L3_LAYOUT, 0.41, "mfu",
                 _L3_COUNTS, {"virtual_stages": tuple(range(1, 8))},
                 "16 micro-batches of one 8,192-token sequence per DP rank; V not stated"),
    PublishedRun("Llama 3 405B, 8K sequences, 8,192 H100", _L3_SOURCE, "llama3-405b", replace(_L3, gpus=8192),
                 _L3_LAYOUT, 0.43, "mfu", _L3_COUNTS, {"virtual_stages": tuple(range(1, 8))},
                 "DP 64: 32 micro-batches per DP rank"),
    PublishedRun("Llama 3 405B, 131K sequences, CP 16, 16,384 H100", _L3_SOURCE, "llama3-405b",
                 replace(_L3, seq_len=131072), replace(_L3_LAYOUT, cp=16), 0.38, "mfu", _L3_COUNTS,
                 {"virtual_stages": tuple(range(1, 8))}, "CP by all-gathering K and V; 16 micro-batches per DP rank"),
    _megatron("145b", 1536, 8, 8, 2304, 148),
    _megatron("530b", 2520, 8, 35, 2520, 163),
    _megatron("1t", 3072, 8, 64, 3072, 163),
    PublishedRun(
        "DeepSeek-V3 on 2,048 H800", "DeepSeek-AI 2024, DeepSeek-V3 Technical Report: 180K H800 GPU hours per trillion "
        "tokens (abstract, §1); 16-way PP (DualPipe), 64-way EP over 8 nodes, ZeRO-1 DP, no TP (§3.2); 20 SMs for "
        "communication (§3.2.2); FP8 GEMMs with 1x128 / 128x128 scales (§3.3); recomputed RMSNorm and MLA "
        "up-projections, BF16 AdamW moments (§3.3.3); batch 15,360 sequences of 4,096 (§4.2)", "deepseek-v3",
        Run(gpus=2048, cluster="hgx-h800", seq_len=4096, batch_tokens=15360 * 4096, tokens=14.8e12,
            recipe="bf16 mixed Adam, bf16 moments", dtype="fp8-blockwise", attention="flash3"),
        Layout(tp=1, pp=16, ep=64, zero=1, micro_batch=1, recompute="selective", schedule="dualpipe", comm_sms=20),
        180e3, "gpu_hours_per_trillion_tokens", "GPU-hours per 10^12 tokens, the pre-training's average (its batch "
        "warm-up over the first 469B tokens, checkpoints and restarts included: the plan has none of them)",
        {"last_stage_layers": (None, 0, 1, 2, 3)}, "the last stage also runs the head and the MTP module"),
]


def predict(row: PublishedRun) -> Plan:
    """The plan of `row`'s run and layout; its free knobs set to the fastest values that fit."""
    shape = model(row.model)
    best = None
    names = list(row.free)
    for values in itertools.product(*(row.free[k] for k in names)) if names else [()]:
        try:
            p = plan(shape, row.run, replace(row.layout, **dict(zip(names, values))))
        except ValueError:
            continue
        if p.fits and (best is None or p.step_s < best.step_s):
            best = p
    if best is None:
        raise ValueError(f"{row.name}: no value of {names} fits")
    return best


def conformance() -> list[dict]:
    """Every published run beside its prediction: {"row", "plan", "predicted", "ratio"} (predicted / reported)."""
    out = []
    for row in PUBLISHED:
        p = predict(row)
        value = row.predicted(p)
        out.append({"row": row, "plan": p, "predicted": value, "ratio": value / row.reported})
    return out
