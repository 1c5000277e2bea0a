"""The conformance table: published training runs, each with its layout as its paper states it, the figure it reports
and what that figure counts (lecture2.planning.conventions), beside the same figure computed from the plan.

A layout knob a paper does not state (virtual stages, micro-batch size, a stage split, recomputation or TP overlap
where unstated) is `free`: the planner takes the fastest value that fits, as the run's engineers would have, and the
row says which knobs those were. Nothing here is fitted to a row: the GEMM and attention curves, the bus bandwidths,
the overheads and the memory accounting are the same for every row. What each row fixes is a fact of the run: its
GPUs and network, its shape, its layout, the software of its time (explicit attention before FlashAttention, 2022;
FlashAttention-2 before FlashAttention-3, July 2024; Megatron's overlap of TP with the weight gradient from 2022).

Units: the reported figure's own (a fraction of the peak for MFU/HFU, TFLOP/s per GPU, GPU-hours per 10^12 tokens).
"""
from __future__ import annotations

import itertools
import statistics
from dataclasses import dataclass, field, replace

from . import conventions as cv
from .layout import Layout, Run
from .plan import Plan
from .shapes import ModelShape, model
from .step import peak_memory, plan, usable_memory

__all__ = ["PUBLISHED", "PublishedRun", "band", "conformance", "predict", "reached", "tie"]


@dataclass(frozen=True)
class PublishedRun:
    """One published run: what was trained where and how, what it reported and how it counted it."""

    name: str
    family: str  # the publication or model family
    source: str  # paper, table or section
    model: str | ModelShape  # a preset of lecture2.planning.shapes, or the run's own shape
    run: Run
    layout: Layout
    reported: float
    convention: cv.Convention
    free: dict = field(default_factory=dict)  # layout knob -> values tried (the paper does not state it)
    n_params: float | None = None  # the paper's own N where its formula multiplies it
    note: str = ""

    @property
    def shape(self) -> ModelShape:
        return model(self.model) if isinstance(self.model, str) else self.model

    @property
    def peak(self) -> float:
        """The dense BF16 peak per GPU the paper divides by (FLOP/s)."""
        return self.run.node.gpu_spec.peak_flops("bf16")

    @property
    def metric(self) -> str:
        return self.convention.metric

    @property
    def counts(self) -> str:
        return self.convention.describe()

    def predicted(self, p: Plan) -> float:
        """The row's figure, counted by its convention, for the plan `p`."""
        return self.convention.value(p, self.peak, self.n_params)


def _gpt(name: str, layers: int, hidden: int, heads: int, source: str, vocab: int = 51200) -> ModelShape:
    """Megatron's GPT: a GELU MLP of 4h, biases, LayerNorm, input embedding and head tied."""
    return ModelShape(name, layers, hidden, heads, 4 * hidden, vocab, ffn="gelu", tied_embeddings=True, bias=True,
                      norm="layernorm", source=source)


def _mpt(name: str, layers: int, hidden: int, heads: int) -> ModelShape:
    """MosaicML's MPT (llm-foundry's yamls): GELU MLP of 4d, no biases, LayerNorm, tied embedding, vocabulary 50,368."""
    return ModelShape(name, layers, hidden, heads, 4 * hidden, 50368, ffn="gelu", tied_embeddings=True,
                      norm="layernorm", source="mosaicml/llm-foundry, scripts/train/yamls/pretrain/mpt-*.yaml")


# ---- Megatron-LM 2021: Narayanan et al., Table 1 (weak scaling on Selene's DGX A100 80GB nodes)
_N21 = ("Narayanan et al. 2021, Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM, "
        "Table 1 (heads, hidden, layers, TP, PP, GPUs, batch, achieved TFLOP/s per GPU); seq 2,048, vocabulary 51,200, "
        "activation recomputation, fp16 mixed precision, data-parallel all-reduce")


def _narayanan(params: str, heads: int, hidden: int, layers: int, tp: int, pp: int, gpus: int, batch: int,
               tflops: float) -> PublishedRun:
    run = Run(gpus=gpus, cluster="dgx-a100", seq_len=2048, batch_tokens=batch * 2048, tokens=300e9,
              recipe="bf16 mixed Adam, fp32 grads", attention="explicit", dropout=True)
    free = {"micro_batch": (1, 2, 4, 8)} | ({"virtual_stages": (1, 2, 3, 4, 5)} if pp > 1 else {})
    return PublishedRun(f"Megatron-LM {params} on {gpus:,} A100", "Megatron-LM 2021", _N21,
                        _gpt(f"megatron-{params.lower()}", layers, hidden, heads, _N21), run,
                        Layout(tp=tp, pp=pp, zero=0, recompute="full", tp_overlap="none"), tflops, cv.MEGATRON_HFU,
                        free, note="explicit attention with dropout (before FlashAttention); the 2021 code waited "
                                   "for every TP all-reduce")


# ---- Megatron-LM 2022: Korthikanti et al., Table 5 (sequence parallelism + selective recomputation)
_K22 = ("Korthikanti et al. 2022, Reducing Activation Recomputation in Large Transformer Models, Table 3 (model "
        "configurations) and Table 5 (iteration time, MFU, HFU with sequence parallelism and selective recomputation)")


def _korthikanti(params: str, heads: int, hidden: int, layers: int, pp: int, gpus: int, batch: int,
                 mfu: float) -> PublishedRun:
    run = Run(gpus=gpus, cluster="dgx-a100", seq_len=2048, batch_tokens=batch * 2048, tokens=300e9,
              recipe="bf16 mixed Adam, fp32 grads", attention="explicit", dropout=True)
    free = {"micro_batch": (1, 2, 4)} | ({"virtual_stages": (1, 2, 3, 4, 5)} if pp > 1 else {})
    return PublishedRun(f"Megatron-LM {params}, SP + selective, {gpus} A100", "Megatron-LM 2022", _K22,
                        _gpt(f"korthikanti-{params.lower()}", layers, hidden, heads, _K22), run,
                        Layout(tp=8, sp=True, pp=pp, zero=0, recompute="selective"), mfu, cv.KORTHIKANTI_MFU, free,
                        note="data parallelism 1; explicit attention with dropout")


# ---- MT-NLG 530B: Smith et al. 2022 (DeepSpeed's pipeline with Megatron's TP)
_MTNLG = ("Smith et al. 2022, Using DeepSpeed and Megatron to Train Megatron-Turing NLG 530B, §3.3 and its "
          "throughput table: 280/350/420 DGX A100 nodes, TP 8, PP 35, global batch 1,920 of 2,048 tokens, "
          "micro-batch 1, iteration 60.1/50.2/44.4 s, 126/121/113 TFLOP/s per GPU")


def _mtnlg(gpus: int, tflops: float) -> PublishedRun:
    run = Run(gpus=gpus, cluster="dgx-a100", seq_len=2048, batch_tokens=1920 * 2048, tokens=270e9,
              recipe="bf16 mixed Adam, fp32 grads", attention="explicit", dropout=True)
    return PublishedRun(f"MT-NLG 530B on {gpus:,} A100", "MT-NLG", _MTNLG, "megatron-530b", run,
                        Layout(tp=8, pp=35, zero=1, micro_batch=1, recompute="full", tp_overlap="none"), tflops,
                        cv.MEGATRON_HFU, note="DeepSpeed's 1F1B (no interleaving), ZeRO-1 over DP, full recomputation")


# ---- BLOOM 176B
_BLOOM = ("BigScience 2022, BLOOM: A 176B-Parameter Open-Access Multilingual Language Model, §3.4 (48 nodes of 8 A100 "
          "80GB, TP 4, PP 12, DP 8, ZeRO-1, micro-batch 2, global batch 2,048 of 2,048 tokens, bf16); 156 TFLOP/s "
          "per GPU (GENCI's announcement of the run; the Megatron-DeepSpeed throughput log)")
BLOOM = ModelShape("bloom-176b", 70, 14336, 112, 4 * 14336, 250880, ffn="gelu", tied_embeddings=True, bias=True,
                   norm="layernorm", source="BLOOM paper, Table 3 (70 layers, 14,336, 112 heads, vocabulary 250,880)")

# ---- MPT (MosaicML's llm-foundry benchmark table; FSDP, no tensor or pipeline parallelism)
_MPT = ("mosaicml/llm-foundry, scripts/train/benchmarking/README.md (MPT training benchmarks: GPUs, sequence, "
        "micro-batch, gradient accumulation, global batch, FSDP sharding strategy, activation checkpointing, MFU, "
        "NumParams); the A100 tables of October 2023 (commit b2a43a1, submit_benchmarks.py's default attn_impl "
        "'triton', the .[gpu] extra: FlashAttention 1.0.x), the H100 large-scale table of January 2024 (commit "
        "5e85bd6: attn_impl 'flash', the .[gpu-flash2] extra)")
_MPT_SHAPES = {"1b": (24, 2048, 16), "3b": (32, 2560, 20), "7b": (32, 4096, 32), "13b": (40, 5120, 40),
               "30b": (48, 7168, 56), "70b": (80, 8192, 64)}


def _mpt_row(size: str, gpu: str, seq: int, gpus: int, mfu: float, micro: int, accum: int, precision: str,
             sharding: str, checkpointing: bool, n_params: int) -> PublishedRun:
    cluster = {"a100": "dgx-a100", "h100": "dgx-h100"}[gpu]
    kernel = {"a100": "flash1", "h100": "flash2"}[gpu]  # the table's own software (see _MPT)
    run = Run(gpus=gpus, cluster=cluster, seq_len=seq, batch_tokens=micro * accum * gpus * seq, tokens=1e12,
              recipe="bf16 mixed Adam", reduce_dtype="bf16" if precision == "PURE" else "fp32", attention=kernel)
    layout = Layout(zero={"FULL_SHARD": 3, "SHARD_GRAD_OP": 2}[sharding], micro_batch=micro,
                    recompute="full" if checkpointing else "none")
    words = {"flash1": "llm-foundry's Triton FlashAttention (FlashAttention-1 era)", "flash2": "FlashAttention-2"}
    return PublishedRun(f"MPT-{size.upper()}, {seq:,} tokens, {gpus} {gpu.upper()}", "MPT", _MPT,
                        _mpt(f"mpt-{size}", *_MPT_SHAPES[size]), run, layout, mfu / 100, cv.MPT_MFU,
                        n_params=n_params, note=f"FSDP {sharding}, {precision} mixed precision, {words[kernel]}; "
                                                f"{'8 x 200 Gb/s RoCE per node' if gpu == 'a100' else 'the H100 nodes taken as DGX H100'}")


# ---- Llama 3 405B
_L3 = Run(gpus=16384, cluster="dgx-h100", seq_len=8192, batch_tokens=16 * 2**20, tokens=15.6e12,
          recipe="bf16 mixed Adam, fp32 grads", reduce_dtype="fp32", attention="flash2")
_L3_LAYOUT = Layout(tp=8, sp=True, pp=16, zero=2, micro_batch=1, recompute="none", fewer_layers_at_ends=1)
_L3_SOURCE = ("Dubey et al. 2024, The Llama 3 Herd of Models, §3.3.2 and Table 4 (TP, CP, PP, DP, sequence, batch "
              "per DP rank, tokens per batch, TFLOPs/GPU, BF16 MFU); no activation checkpointing at 8K; optimizer "
              "states and gradients sharded; one layer fewer on the first and last stage; interleaved schedule")
_L3_NOTE = "attention by FlashAttention-2's figures: FlashAttention-3 (Shah et al., July 2024) came after the run"

# ---- Nemotron-4 340B
_NEMOTRON = ("NVIDIA 2024, Nemotron-4 340B Technical Report, §2.2 and Table 2 (768 DGX H100 nodes; TP 8, PP 12 "
             "interleaved, DP 16/32/64 with the distributed optimizer; batch 768/1,536/2,304 of 4,096 tokens; "
             "iteration 10.3/10.3/8.0 s; MFU 42.4/42.3/41.0%)")
NEMOTRON_340B = ModelShape("nemotron-4-340b", 96, 18432, 96, 73728, 256000, kv_heads=8, ffn="gelu", norm="layernorm",
                           source="Nemotron-4 340B Technical Report, Table 1 (96 layers, 18,432, 96 heads, 8 KV heads, "
                                  "squared-ReLU MLP of 73,728: two matrices; vocabulary 256,000, untied)")


def _nemotron(dp: int, batch: int, mfu: float) -> PublishedRun:
    run = Run(gpus=96 * dp, cluster="dgx-h100", seq_len=4096, batch_tokens=batch * 4096, tokens=9e12,
              recipe="bf16 mixed Adam, fp32 grads", attention="flash2")
    return PublishedRun(f"Nemotron-4 340B on {96 * dp:,} H100", "Nemotron-4", _NEMOTRON, NEMOTRON_340B, run,
                        Layout(tp=8, sp=True, pp=12, zero=1, micro_batch=1), mfu, cv.MEGATRON_CORE_MFU,
                        {"virtual_stages": (1, 2, 4, 8), "recompute": ("none", "selective"),
                         "tp_overlap": ("megatron", "userbuffers")},
                        note="Megatron-Core with Transformer Engine (early 2024: FlashAttention-2's figures)")


PUBLISHED: list[PublishedRun] = [
    _narayanan("1.7B", 24, 2304, 24, 1, 1, 32, 512, 137),
    _narayanan("3.6B", 32, 3072, 30, 2, 1, 64, 512, 138),
    _narayanan("7.5B", 32, 4096, 36, 4, 1, 128, 512, 142),
    _narayanan("18.4B", 48, 6144, 40, 8, 1, 256, 1024, 135),
    _narayanan("39.1B", 64, 8192, 48, 8, 2, 512, 1536, 138),
    _narayanan("76.1B", 80, 10240, 60, 8, 4, 1024, 1792, 140),
    _narayanan("145.6B", 96, 12288, 80, 8, 8, 1536, 2304, 148),
    _narayanan("310.1B", 128, 16384, 96, 8, 16, 1920, 2160, 155),
    _narayanan("529.6B", 128, 20480, 105, 8, 35, 2520, 2520, 163),
    _narayanan("1008B", 160, 25600, 128, 8, 64, 3072, 3072, 163),
    _korthikanti("22B", 64, 6144, 48, 1, 8, 4, 0.415),
    _korthikanti("175B", 96, 12288, 96, 8, 64, 64, 0.514),
    _korthikanti("530B", 128, 20480, 105, 35, 280, 280, 0.560),
    _korthikanti("1T", 160, 25600, 128, 64, 512, 512, 0.563),
    _mtnlg(2240, 126),
    _mtnlg(2800, 121),
    _mtnlg(3360, 113),
    PublishedRun("BLOOM 176B on 384 A100", "BLOOM", _BLOOM, BLOOM,
                 Run(gpus=384, cluster="jean-zay-a100", seq_len=2048, batch_tokens=2048 * 2048, tokens=366e9,
                     recipe="bf16 mixed Adam, fp32 grads", attention="explicit"),
                 Layout(tp=4, pp=12, zero=1, micro_batch=2, recompute="full", tp_overlap="none"), 156,
                 cv.MEGATRON_DEEPSPEED_HFU, note="Megatron-DeepSpeed: DeepSpeed's 1F1B, fused softmax, no dropout"),
    _mpt_row("70b", "a100", 2048, 64, 53.33, 8, 4, "PURE", "FULL_SHARD", True, 64862437376),
    _mpt_row("13b", "a100", 2048, 8, 59.57, 2, 3, "DEFAULT", "FULL_SHARD", False, 12853954560),
    _mpt_row("7b", "a100", 65536, 8, 46.97, 1, 2, "DEFAULT", "FULL_SHARD", True, 6918905856),
    _mpt_row("1b", "a100", 2048, 8, 59.86, 14, 4, "DEFAULT", "FULL_SHARD", False, 1315950592),
    _mpt_row("70b", "h100", 2048, 512, 41.25, 8, 1, "DEFAULT", "FULL_SHARD", True, 64862437376),
    _mpt_row("13b", "h100", 2048, 128, 42.18, 16, 1, "DEFAULT", "FULL_SHARD", True, 12853954560),
    _mpt_row("7b", "h100", 2048, 128, 45.71, 6, 1, "DEFAULT", "FULL_SHARD", False, 6658859008),
    _mpt_row("1b", "h100", 2048, 128, 40.60, 12, 1, "DEFAULT", "SHARD_GRAD_OP", False, 1315950592),
    PublishedRun("Llama 3 405B, 8K sequences, 16,384 H100", "Llama 3", _L3_SOURCE, "llama3-405b", _L3, _L3_LAYOUT,
                 0.41, cv.LLAMA3_MFU, {"virtual_stages": (1, 2, 4, 8)},
                 note="16 micro-batches of one 8,192-token sequence per DP rank; V not stated; " + _L3_NOTE),
    PublishedRun("Llama 3 405B, 8K sequences, 8,192 H100", "Llama 3", _L3_SOURCE, "llama3-405b",
                 replace(_L3, gpus=8192), _L3_LAYOUT, 0.43, cv.LLAMA3_MFU, {"virtual_stages": (1, 2, 4, 8)},
                 note="DP 64: 32 micro-batches per DP rank; " + _L3_NOTE),
    PublishedRun("Llama 3 405B, 131K sequences, CP 16, 16,384 H100", "Llama 3", _L3_SOURCE, "llama3-405b",
                 replace(_L3, seq_len=131072), replace(_L3_LAYOUT, cp=16), 0.38, cv.LLAMA3_MFU,
                 {"virtual_stages": (1, 2, 4, 8)},
                 note="CP by all-gathering K and V; 16 micro-batches per DP rank; " + _L3_NOTE),
    _nemotron(16, 768, 0.424),
    _nemotron(32, 1536, 0.423),
    _nemotron(64, 2304, 0.410),
    PublishedRun(
        "DeepSeek-V3 on 2,048 H800", "DeepSeek-V3",
        "DeepSeek-AI 2024, DeepSeek-V3 Technical Report: 180K H800 GPU hours per trillion tokens (abstract, §1); "
        "16-way PP (DualPipe), 64-way EP over 8 nodes, ZeRO-1 DP, no TP (§3.2); 20 SMs for communication (§3.2.2); "
        "FP8 GEMMs with 1x128 / 128x128 scales (§3.3); recomputed RMSNorm and MLA up-projections, BF16 AdamW moments "
        "(§3.3.3); batch 15,360 sequences of 4,096 (§4.2)", "deepseek-v3",
        Run(gpus=2048, cluster="hgx-h800", seq_len=4096, batch_tokens=15360 * 4096, tokens=14.8e12,
            recipe="bf16 mixed Adam, bf16 moments", dtype="fp8-blockwise", attention="flash3"),
        Layout(tp=1, pp=16, ep=64, zero=1, micro_batch=1, recompute="selective", schedule="dualpipe", comm_sms=20),
        180e3, cv.GPU_HOURS, {"last_stage_layers": (None, 0, 1, 2, 3)},
        note="the pre-training's average (its batch warm-up, checkpoints and restarts included: the plan has none); "
             "the last stage also runs the head and the MTP module"),
]


def predict(row: PublishedRun) -> Plan:
    """The plan of `row`'s run and layout; its free knobs set to the fastest values that fit (memory checked before
    anything is timed; a layout no framework can launch is skipped)."""
    shape = row.shape
    best = None
    names = list(row.free)
    usable = usable_memory(row.run)
    for values in itertools.product(*(row.free[k] for k in names)) if names else [()]:
        try:
            layout = replace(row.layout, **dict(zip(names, values)))
            if peak_memory(shape, row.run, layout) > usable:
                continue
            p = plan(shape, row.run, layout)
        except ValueError:
            continue
        if best is None or p.step_s < best.step_s:
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


def speed_ratio(r: dict) -> float:
    """Planned over published throughput of a conformance row: above 1, the plan is faster than the run (GPU-hours
    turned around)."""
    return 1 / r["ratio"] if r["row"].metric == "gpu_hours_per_trillion_tokens" else r["ratio"]


def band(table: list[dict]) -> tuple[float, float, float]:
    """(lowest, median, highest) planned / published throughput over a conformance table (reached.BAND)."""
    ratios = sorted(speed_ratio(r) for r in table)
    return round(ratios[0], 4), round(statistics.median(ratios), 4), round(ratios[-1], 4)


def tie(table: list[dict]) -> float:
    """The table's median error |planned / published - 1| (reached.TIE): two layouts closer than this are a tie."""
    return round(statistics.median(abs(speed_ratio(r) - 1) for r in table), 3)


def reached(table: list[dict]) -> tuple[tuple[str, str, float, float], ...]:
    """Per row (name, GPU architecture, parameters, the MFU the run reached counted as the planner counts MFU):
    reached.REACHED."""
    return tuple((r["row"].name, r["row"].run.node.gpu_spec.arch, float(f"{r['plan'].model.n_params:.4g}"),
                  round(r["plan"].mfu / speed_ratio(r), 3)) for r in table)
