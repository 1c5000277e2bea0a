"""What is trained where (`Run`) and how the GPUs are split (`Layout`), each checked when made.

Ranks are ordered tensor fastest, then context, then data (experts are placed inside data x context), then pipeline
(Megatron-Core's tp-cp-ep-dp-pp order): the TP group fills a node first, and whichever group comes next gets what is
left of the node. Llama 3 orders [TP, CP, PP, DP] (Dubey et al. 2024, §3.3.2); with TP = 8 filling a node both orders
put every other group one rank per node, so the plans agree.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from .. import estimate, hardware

__all__ = ["ATTENTION", "GEMM_DTYPES", "Layout", "Run", "SCHEDULES", "TP_OVERLAP"]

GEMM_DTYPES = ("bf16", "fp8", "fp8-blockwise")  # fp8: per-tensor scales (Transformer Engine, cuBLAS); -blockwise: 1x128
ATTENTION = ("auto", "flash1", "flash2", "flash3", "explicit")  # auto: FlashAttention-3 on Hopper, else FlashAttention-2
SCHEDULES = ("1f1b", "dualpipe")  # 1f1b with virtual_stages > 1 is Megatron's interleaved schedule
# how TP's collectives meet the GEMMs (lecture2.planning.costs._tp_exposed): none; Megatron-LM's default (the backward's
# input-gradient collective beside the weight-gradient GEMM); Transformer Engine's userbuffers (--tp-comm-overlap)
TP_OVERLAP = ("none", "megatron", "userbuffers")


@dataclass(frozen=True)
class Run:
    """What is trained where: GPUs, cluster, sequence length, global batch (tokens per step), tokens in all, the
    recipe, the reduce dtype, the GEMMs' dtype and the attention kernel, the price, the activation convention."""

    gpus: int
    cluster: str = "dgx-h100"
    seq_len: int = 4096
    batch_tokens: int = 4 * 2**20  # Llama 2's 4M tokens per step
    tokens: float = 2e12  # the lecture's 2T
    recipe: str = "bf16 mixed Adam"  # a key of lecture2.estimate.MEMORY_RECIPES (the lecture's 2 + 2 + 12)
    reduce_dtype: str = "fp32"  # Megatron (main_grad, --accumulate-allreduce-grads-in-fp32) and torchtitan defaults
    usd_per_gpu_hour: float = 2.5
    activations: str = "course"  # or "korthikanti"
    overlap: bool = True  # DP communication hidden behind compute where the engines put it
    dtype: str = "bf16"  # the GEMMs: one of GEMM_DTYPES (attention, embedding, head and router stay BF16)
    attention: str = "auto"  # the attention kernel: one of ATTENTION
    dropout: bool = False  # hidden-state dropout (Megatron's GPT of 2021 trained with 0.1; Llama, DeepSeek without)
    compute_efficiency: float | None = None  # None: every GEMM by its shape; a fraction: every GEMM at it (a what-if)

    def __post_init__(self):
        if not isinstance(self.gpus, int) or isinstance(self.gpus, bool) or self.gpus < 1:
            raise ValueError(f"gpus 应是正整数 (a positive int), 得到 {self.gpus!r}")
        for name in ("seq_len", "batch_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} 应是正整数 (a positive int), 得到 {value!r}")
        if self.reduce_dtype not in ("bf16", "fp32"):
            raise ValueError(f"reduce_dtype 应是 'bf16' 或 'fp32', 得到 {self.reduce_dtype!r}")
        if self.activations not in estimate.ACTIVATION_CONVENTIONS:
            raise ValueError(f"activations 应是 {estimate.ACTIVATION_CONVENTIONS} 之一, 得到 {self.activations!r}")
        if self.dtype not in GEMM_DTYPES:
            raise ValueError(f"dtype (the GEMMs) 应是 {GEMM_DTYPES} 之一, 得到 {self.dtype!r}")
        if self.attention not in ATTENTION:
            raise ValueError(f"attention 应是 {ATTENTION} 之一, 得到 {self.attention!r}")
        if self.compute_efficiency is not None and not 0 < self.compute_efficiency <= 1:
            raise ValueError(f"compute_efficiency 应在 (0, 1] 内, 得到 {self.compute_efficiency!r}")
        self.node  # a known cluster, or UnknownGPU (looked up once, here)
        estimate._recipe(self.recipe)  # a known recipe, or KeyError
        if self.batch_tokens % self.seq_len:
            raise ValueError(f"batch_tokens ({self.batch_tokens}) 应是 seq_len ({self.seq_len}) 的整数倍 "
                             f"(a whole number of sequences)")

    @cached_property
    def node(self) -> hardware.ClusterSpec:
        """The cluster's row (lecture2.hardware.CLUSTERS), looked up once: every part of the plan reads it here."""
        return hardware.cluster(self.cluster)

    @property
    def attention_kernel(self) -> str:
        """The attention kernel the run uses: "auto" is the fastest published one for the cluster's GPU."""
        if self.attention != "auto":
            return self.attention
        return "flash3" if self.node.gpu_spec.arch == "hopper" else "flash2"

    @property
    def sequences(self) -> int:
        """Sequences per step (the global batch)."""
        return self.batch_tokens // self.seq_len


@dataclass(frozen=True)
class Layout:
    """How the GPUs are split: tp x cp x dp x pp (dp = GPUs / (tp cp pp)), experts over ep of the dp x cp ranks, the
    ZeRO stage over dp (x cp), sequence parallelism, micro-batch size (sequences), recomputation, HSDP, the pipeline
    schedule (virtual stages, micro-batch group, DualPipe), TP communication overlap, SMs given to communication."""

    tp: int = 1
    pp: int = 1
    zero: int = 1
    sp: bool = False
    micro_batch: int = 1
    recompute: str = "none"
    hsdp: bool = False
    virtual_stages: int = 1  # interleaved 1F1B: model chunks per pipeline stage (Megatron's virtual pipeline)
    fewer_layers_at_ends: int = 0  # the first and last stage hold this many layers fewer (Llama 3: 1)
    cp: int = 1  # context parallelism: the sequence split over cp GPUs (Llama 3: all-gather of K and V)
    ep: int = 1  # expert parallelism: the routed experts split over ep GPUs (all-to-all dispatch and combine)
    schedule: str = "1f1b"
    group: int | None = None  # micro-batches per virtual-stage group, Llama 3's N (None: Megatron's, = pp)
    tp_overlap: str = "megatron"  # one of TP_OVERLAP: Megatron-LM's default unless said
    comm_sms: int = 0  # SMs running communication kernels during the whole step (DeepSeek-V3: 20 of 132)
    last_stage_layers: int | None = None  # layers on the last stage (the rest spread evenly; it also runs the head)

    def __post_init__(self):
        if not isinstance(self.fewer_layers_at_ends, int) or self.fewer_layers_at_ends < 0:
            raise ValueError(f"fewer_layers_at_ends 应是 >= 0 的整数, 得到 {self.fewer_layers_at_ends!r}")
        for name in ("tp", "pp", "micro_batch", "virtual_stages", "cp", "ep"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} 应是正整数 (a positive int), 得到 {value!r}")
        if self.zero not in (0, 1, 2, 3):
            raise ValueError(f"zero 应是 0, 1, 2 或 3, 得到 {self.zero!r}")
        if self.recompute not in estimate.RECOMPUTE:
            raise ValueError(f"recompute 应是 {estimate.RECOMPUTE} 之一, 得到 {self.recompute!r}")
        if self.sp and self.tp == 1:
            raise ValueError("sequence parallelism (sp) 需要 tp > 1 (needs tensor parallelism)")
        if self.hsdp and self.zero != 3:
            raise ValueError("hsdp 是 ZeRO-3 的一种 (hsdp is a kind of ZeRO-3: zero=3)")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule 应是 {SCHEDULES} 之一, 得到 {self.schedule!r}")
        if self.schedule == "dualpipe" and (self.virtual_stages != 1 or self.pp % 2):
            raise ValueError("dualpipe 需要偶数个 pipeline stage, 且不再切 virtual stages (DualPipe needs an even pp, no virtual stages)")
        if self.group is not None and (self.group < 1 or self.virtual_stages == 1):
            raise ValueError("group (micro-batches per virtual-stage group, Llama 3's N) 只用于 interleaving, 且 >= 1")
        if self.last_stage_layers is not None and (self.last_stage_layers < 0 or self.fewer_layers_at_ends):
            raise ValueError("last_stage_layers 应 >= 0, 且不和 fewer_layers_at_ends 一起用")
        if self.tp_overlap not in TP_OVERLAP:
            raise ValueError(f"tp_overlap 应是 {TP_OVERLAP} 之一, 得到 {self.tp_overlap!r}")
        if self.tp_overlap == "userbuffers" and not self.sp:
            raise ValueError("tp_overlap='userbuffers' 需要 sp (Transformer Engine's TP comm overlap needs sequence "
                             "parallelism)")
        if not isinstance(self.comm_sms, int) or self.comm_sms < 0:
            raise ValueError(f"comm_sms 应是 >= 0 的整数, 得到 {self.comm_sms!r}")

    def describe(self) -> str:
        parts = [f"TP {self.tp}" + (" + SP" if self.sp else "")
                 + {"megatron": "", "none": " (no TP overlap)", "userbuffers": " (userbuffers overlap)"}[
                     self.tp_overlap if self.tp > 1 else "megatron"]]
        if self.cp > 1:
            parts.append(f"CP {self.cp}")
        pipe = f"PP {self.pp}"
        if self.virtual_stages > 1:
            pipe += f" (interleaved x{self.virtual_stages})"
        elif self.schedule == "dualpipe":
            pipe += " (DualPipe)"
        parts.append(pipe)
        if self.ep > 1:
            parts.append(f"EP {self.ep}")
        parts += [{0: "DDP", 1: "ZeRO-1", 2: "ZeRO-2", 3: "HSDP" if self.hsdp else "ZeRO-3"}[self.zero],
                  f"micro-batch {self.micro_batch}"]
        if self.recompute != "none":
            parts.append(f"{self.recompute} recompute")
        return ", ".join(parts)
