"""What a published throughput figure counts, and the same count computed from a plan.

A run's paper reports "MFU", "HFU" or "TFLOP/s per GPU", each by its own formula: whether the attention's T x T
square is counted whole or causal half, whether the recomputed forward is counted, which parameters are multiplied
by 6. The same step can read +0% or +41% by convention (Llama 3 405B at 131K tokens: causal half or whole square).
So every row of the conformance table names its convention, and the plan's figure beside it is computed with that
convention from the plan's step time, never the planner's own MFU.

Per token, with P the parameters a formula multiplies, A(T) = 2·T·a·(d_qk + d_v)·L the forward FLOPs of the whole
attention square (PaLM's 4·L·d·T) and `passes` 3 (forward and backward) or 4 (a recomputed forward counted too):

    "6N"         passes·2·N + attn_passes·A(T)·(1/2 if causal): N every parameter the paper counts (PaLM, App. B:
                 6N + 12·L·H·Q·T; llm-foundry's MFU 6N + 12·L·d·T and HFU 8N + 16·L·d·T)
    "megatron"   passes·2·P_layers + 6·P_head + attn_passes·A(T): P_layers the layers' matrices (12·h² each for
                 Megatron's GPT), P_head = V·h, which is not recomputed. Narayanan et al. 2021, Appendix:
                 96·B·s·l·h²(1 + s/6h + V/16lh) with full recomputation (passes 4); Korthikanti et al. 2022, §6:
                 72·B·s·l·h²(1 + s/6h + V/12lh) (passes 3, model FLOPs)

and the figure is FLOPs per token x tokens per step / (GPUs x step seconds), over the peak the paper divides by for
MFU and HFU. Units: FLOPs, seconds, FLOP/s.
"""
from __future__ import annotations

from dataclasses import dataclass

from .plan import Plan
from .shapes import ModelShape

__all__ = ["Convention", "GPU_HOURS", "KORTHIKANTI_MFU", "LLAMA3_MFU", "MEGATRON_CORE_MFU", "MEGATRON_DEEPSPEED_HFU",
           "MEGATRON_HFU", "METRICS", "MPT_MFU", "PLANNER_MFU"]

METRICS = ("mfu", "hfu", "tflops_per_gpu", "gpu_hours_per_trillion_tokens")


@dataclass(frozen=True)
class Convention:
    """How a published figure is computed (see the module's text); `describe()` says it in words."""

    name: str
    metric: str  # one of METRICS: "mfu" and "hfu" over `peak`, TFLOP/s per GPU, or GPU-hours per 10^12 tokens
    formula: str  # "6N" or "megatron" (the module's text); "planner" the planner's own model FLOPs
    passes: int = 3  # the layers' matrices: 3 (forward + backward) or 4 (the recomputed forward counted)
    attention: str = "full"  # "full" (the whole T x T square), "causal" (half of it)
    attn_passes: int | None = None  # None: as `passes`
    source: str = ""

    def __post_init__(self):
        if self.metric not in METRICS:
            raise ValueError(f"metric 应是 {METRICS} 之一, 得到 {self.metric!r}")
        if self.formula not in ("6N", "megatron", "planner", "none"):
            raise ValueError(f"formula 应是 '6N', 'megatron', 'planner' 或 'none', 得到 {self.formula!r}")
        if self.attention not in ("full", "causal"):
            raise ValueError(f"attention 应是 'full' 或 'causal', 得到 {self.attention!r}")

    def flops_per_token(self, shape: ModelShape, seq_len: int, n_params: float | None = None) -> float:
        """FLOPs this convention counts per trained token of `shape` at sequence length `seq_len`; `n_params` the
        paper's own N where the formula multiplies it (None: the shape's count)."""
        if self.formula == "planner":
            return shape.model_flops_per_token(seq_len)
        attn = shape.attention_flops_per_token(seq_len, causal=self.attention == "causal") / 3
        attn *= self.attn_passes or self.passes
        if self.formula == "6N":
            return 2 * self.passes * (shape.n_params if n_params is None else n_params) + attn
        head = shape.embedding_params() * shape.scale
        layers = shape.matmul_params() - head * (1 + shape.mtp_layers)
        return 2 * self.passes * layers + 6 * head + attn

    def value(self, p: Plan, peak: float, n_params: float | None = None) -> float:
        """The figure of this convention for plan `p` (its step time): MFU or HFU over `peak` FLOP/s per GPU,
        TFLOP/s per GPU, or GPU-hours per trillion tokens."""
        if self.metric == "gpu_hours_per_trillion_tokens":
            return p.gpu_hours_per_trillion_tokens
        per_gpu = self.flops_per_token(p.model, p.run.seq_len, n_params) * p.run.batch_tokens / p.run.gpus / p.step_s
        return per_gpu / 1e12 if self.metric == "tflops_per_gpu" else per_gpu / peak

    def describe(self) -> str:
        if self.metric == "gpu_hours_per_trillion_tokens":
            return "GPU-hours per 10^12 training tokens"
        square = "the whole T x T attention square" if self.attention == "full" else "causal attention (half the square)"
        what = {"6N": f"{2 * self.passes}N", "megatron": f"{2 * self.passes}·(layers' matrices) + 6·(head)",
                "planner": "6·(matmul parameters)"}[self.formula]
        label = {"mfu": "MFU", "hfu": "HFU", "tflops_per_gpu": "TFLOP/s per GPU"}[self.metric]
        recomputed = ", the recomputed forward counted" if self.passes == 4 else ""
        return f"{label}: {what} + {square}{recomputed}"


PLANNER_MFU = Convention("the planner's MFU", "mfu", "planner", attention="causal",
                         source="docs/planning.md §1: 6 x matmul parameters + causal attention")
LLAMA3_MFU = Convention(
    "Llama 3's BF16 MFU", "mfu", "6N", attention="full",
    source="Dubey et al. 2024, §3.3.2 and Table 4 cite Chowdhery et al. (PaLM) for MFU: App. B of PaLM counts 6N + "
           "12·L·H·Q·T, the whole square")
MEGATRON_HFU = Convention(
    "Megatron-LM's TFLOP/s", "tflops_per_gpu", "megatron", passes=4, attention="full",
    source="Narayanan et al. 2021, §5.1 and Appendix: 96·B·s·l·h²(1 + s/6h + V/16lh) FLOPs per iteration with "
           "activation recomputation (the recomputed forward and the whole attention square counted)")
MEGATRON_DEEPSPEED_HFU = Convention(
    "Megatron-DeepSpeed's TFLOP/s", "tflops_per_gpu", "megatron", passes=4, attention="full",
    source="Megatron-DeepSpeed's throughput log (24·checkpoint_activations_factor·B·s·l·h²(1 + s/6h + V/16lh), the "
           "factor 4 with activation checkpointing), the formula of Narayanan et al. 2021")
KORTHIKANTI_MFU = Convention(
    "Korthikanti et al.'s MFU", "mfu", "megatron", passes=3, attention="full",
    source="Korthikanti et al. 2022, §6: model FLOPs 72·B·s·l·h²(1 + s/6h + V/12lh) per iteration, no recomputation "
           "counted")
MPT_MFU = Convention(
    "llm-foundry's MFU", "mfu", "6N", passes=3, attention="full",
    source="mosaicml/llm-foundry, scripts/train/benchmarking/README.md: (6·n_params + 12·n_layers·d_model·seq_len) "
           "x tokens/s over GPUs x 312 or 989 TFLOP/s, n_params the table's NumParams")
MEGATRON_CORE_MFU = Convention(
    "Megatron-Core's MFU", "mfu", "megatron", passes=3, attention="full",
    source="Megatron-LM's num_floating_point_operations (megatron/training/training.py, 2024): 12·B·s·l·h²((1 + "
           "g/a + s/h)·(a·d/h) + (f/h)·(3/2 if gated) + V/2lh): 6 x every matrix a token passes (the logits included, "
           "the embedding lookup not) + the whole T x T square")
GPU_HOURS = Convention("GPU-hours", "gpu_hours_per_trillion_tokens", "none",
                       source="GPU-hours per 10^12 training tokens")
