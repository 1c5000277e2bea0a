"""Plan a training run laid out as tensor × pipeline × data parallelism: memory per GPU, communication per step
by kind, step time, MFU, days and dollars; and search the layouts for the cheapest one that fits.

    from lecture2 import planner
    p = planner.plan(planner.model("lecture-7b"), planner.Run(gpus=256), planner.Layout(zero=3))
    print(p.report())
    best = planner.search(planner.model("llama3-405b"), planner.Run(gpus=16384, seq_len=8192, batch_tokens=16 * 2**20))

The model (docs/planning.md has every formula, its source and the anchors it is tested against):

Layout  t GPUs share each layer (tensor parallel, Megatron's column/row split, within a node), p stages share the
        layers (pipeline, 1F1B, m micro-batches of b sequences), d = GPUs / (t p) replicas share the batch and,
        with ZeRO stage z, the training state (z = 1 is Megatron's distributed optimizer, 3 is FSDP; hsdp shards
        inside a node and replicates across). Ranks are ordered TP fastest, then DP, then PP (Megatron's default).
Memory  parameters per GPU: each layer's matrices / t, its norms whole, the embedding and head / t on the first and
        last stage; bytes per parameter from the recipe (lecture2.estimate.MEMORY_RECIPES), the ZeRO stage
        dividing its parts by d; ZeRO-3 also holds two gathered layers (the one computing, the one prefetched)
        and one layer's unsharded gradient; ZeRO 0-2 a gradient bucket of Megatron's size in the reduce dtype.
        Activations per layer by lecture2.estimate.activation_bytes_per_layer ("course": notebook 06's accounting,
        or "korthikanti"); under 1F1B stage s keeps min(m, p - s) micro-batches in flight (interleaved: Megatron's
        warm-up count), the last one adds the logits (bf16 + the loss's fp32 copy, vocabulary / t). The fullest
        stage is the GPU's need.
Compute model FLOPs per token 6N + 12·L·d·T (PaLM; what MFU counts); recomputation adds hardware FLOPs (full:
        one more forward, 2N + 4·L·d·T; selective: the attention core, 4·L·d·T). Time = FLOPs / (peak ×
        compute_efficiency): the fraction of peak the matmuls reach while nothing waits (the lecture's 0.4).
Network lecture2.network: NCCL's bus bandwidth (NVLink inside a node, the NICs across) and latency per call.
        TP: per layer and micro-batch 4 all-reduces of b·s·h (2 forward, 2 backward); with SP 6 all-gathers
        and 4 reduce-scatters (the column-parallel layers gather their input again in backward), as
        lecture2.parallel issues them on a live group; full recompute adds the forward's 2; on the critical
        path. PP: each micro-batch sends its activations forward and their gradient back, b·s·h / t per GPU
        (Megatron's scatter-gather). DP:
        z = 0 all-reduces the gradients, z = 1-2 reduce-scatter them and all-gather the parameters, once per
        step; z = 3 all-gathers every layer twice and reduce-scatters it, in every micro-batch (FSDP's default).
        Gradient collectives run in the reduce dtype (fp32 by default, as Megatron's main_grad and torchtitan's
        mixed_precision_reduce), parameter gathers in the weights' dtype.
Overlap DP traffic hides behind compute where real engines put it: DDP's buckets and the distributed optimizer's
        reduce-scatter behind the last micro-batch's backward, its parameter all-gather behind the first
        forward; FSDP's gathers behind the previous layer. What cannot hide stays exposed: the first layer's
        gather, the last layer's reduce-scatter, whatever is longer than the compute it overlaps, the
        optimizer step (memory-bound: its states read and written once at HBM bandwidth), TP's collectives and
        the pipeline's bubble (p - 1)/(m + p - 1).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from . import estimate, hardware, network

__all__ = ["MODELS", "Layout", "ModelShape", "Plan", "Run", "in_flight_layers", "layouts", "model", "plan", "search",
           "stage_layers", "with_layout", "zero3_model_states_bytes"]


@dataclass(frozen=True)
class ModelShape:
    """A decoder-only Transformer's shape (pre-norm, RMSNorm, no biases)."""

    name: str
    n_layers: int
    d_model: int
    n_heads: int
    d_ff: int
    vocab_size: int
    kv_heads: int | None = None  # grouped-query attention; None: as many as n_heads
    ffn: str = "swiglu"  # "swiglu" (3 matrices) or "gelu" (2)
    tied_embeddings: bool = False
    n_params_override: float | None = None  # a round figure to plan with (the lecture's "7B")
    source: str = ""

    @property
    def kv(self) -> int:
        return self.kv_heads or self.n_heads

    def layer_matrix_params(self) -> int:
        """Parameters of one layer's weight matrices (what tensor parallelism divides)."""
        h, hd = self.d_model, self.d_model // self.n_heads
        attention = h * (h + 2 * self.kv * hd) + h * h  # QKV, output projection
        ffn = (3 if self.ffn == "swiglu" else 2) * h * self.d_ff
        return attention + ffn

    def layer_params(self) -> int:
        return self.layer_matrix_params() + 2 * self.d_model  # + the two norms' weights

    def embedding_params(self) -> int:
        return self.vocab_size * self.d_model

    @property
    def n_params(self) -> float:
        if self.n_params_override is not None:
            return float(self.n_params_override)
        heads = 1 if self.tied_embeddings else 2  # input embedding, and the LM head if untied
        return float(self.n_layers * self.layer_params() + heads * self.embedding_params() + self.d_model)


# fmt: off
MODELS: dict[str, ModelShape] = {m.name: m for m in [
    ModelShape("llama2-7b", 32, 4096, 32, 11008, 32000, source="Touvron et al. 2023 (Llama 2), Table 1; its config.json"),
    ModelShape("lecture-7b", 32, 4096, 32, 11008, 32000, n_params_override=7e9,
               source="the lecture's 7B (N = 7e9) on Llama 2 7B's shape"),
    ModelShape("llama2-70b", 80, 8192, 64, 28672, 32000, kv_heads=8, source="Touvron et al. 2023 (Llama 2)"),
    ModelShape("llama3-8b", 32, 4096, 32, 14336, 128256, kv_heads=8, source="Dubey et al. 2024 (Llama 3), Table 3"),
    ModelShape("llama3-70b", 80, 8192, 64, 28672, 128256, kv_heads=8, source="Dubey et al. 2024 (Llama 3), Table 3"),
    ModelShape("llama3-405b", 126, 16384, 128, 53248, 128256, kv_heads=8, source="Dubey et al. 2024 (Llama 3), Table 3"),
    ModelShape("gpt3-175b", 96, 12288, 96, 4 * 12288, 50257, ffn="gelu", tied_embeddings=True,
               source="Brown et al. 2020, Table 2.1"),
]}
# fmt: on


def model(name: str) -> ModelShape:
    """The shape named `name` (a key of MODELS)."""
    if name not in MODELS:
        raise KeyError(f"未知的模型 {name!r}; known: {', '.join(MODELS)}")
    return MODELS[name]


@dataclass(frozen=True)
class Run:
    """What is trained where: GPUs, cluster, sequence length, global batch (tokens per step), tokens in all,
    the recipe, the reduce dtype, how fast the matmuls run, the price, the activation convention."""

    gpus: int
    cluster: str = "dgx-h100"
    seq_len: int = 4096
    batch_tokens: int = 4 * 2**20  # Llama 2's 4M tokens per step
    tokens: float = 2e12  # the lecture's 2T
    recipe: str = "bf16 mixed Adam"  # a key of lecture2.estimate.MEMORY_RECIPES (the lecture's 2 + 2 + 12)
    reduce_dtype: str = "fp32"  # Megatron (main_grad, --accumulate-allreduce-grads-in-fp32) and torchtitan defaults
    compute_efficiency: float = 0.4  # fraction of the dense bf16 peak the matmuls reach (the lecture's 0.4)
    usd_per_gpu_hour: float = 2.5
    activations: str = "course"  # or "korthikanti"
    overlap: bool = True  # DP communication hidden behind compute where the engines put it
    dtype: str = "bf16"  # the peak column

    def __post_init__(self):
        if not isinstance(self.gpus, int) or isinstance(self.gpus, bool) or self.gpus < 1:
            raise ValueError(f"gpus 应是正整数, 得到 {self.gpus!r}")
        if self.reduce_dtype not in ("bf16", "fp32"):
            raise ValueError(f"reduce_dtype 应是 'bf16' 或 'fp32', 得到 {self.reduce_dtype!r}")
        if self.activations not in estimate.ACTIVATION_CONVENTIONS:
            raise ValueError(f"activations 应是 {estimate.ACTIVATION_CONVENTIONS} 之一, 得到 {self.activations!r}")
        if not 0 < self.compute_efficiency <= 1:
            raise ValueError(f"compute_efficiency 应在 (0, 1] 内, 得到 {self.compute_efficiency!r}")
        hardware.cluster(self.cluster)
        estimate._recipe(self.recipe)  # a known recipe, or KeyError
        if self.batch_tokens % self.seq_len:
            raise ValueError(f"batch_tokens ({self.batch_tokens}) 应是 seq_len ({self.seq_len}) 的整数倍")


@dataclass(frozen=True)
class Layout:
    """How the GPUs are split: tp x pp x dp (dp = GPUs / (tp pp)), ZeRO stage over dp, sequence parallelism,
    micro-batch size (sequences), recomputation, HSDP (ZeRO-3 inside a node, replicas across nodes)."""

    tp: int = 1
    pp: int = 1
    zero: int = 1
    sp: bool = False
    micro_batch: int = 1
    recompute: str = "none"
    hsdp: bool = False
    virtual_stages: int = 1  # interleaved 1F1B: model chunks per pipeline stage (Megatron's virtual pipeline)
    fewer_layers_at_ends: int = 0  # the first and last stage hold this many layers fewer (Llama 3: 1)

    def __post_init__(self):
        if not isinstance(self.fewer_layers_at_ends, int) or self.fewer_layers_at_ends < 0:
            raise ValueError(f"fewer_layers_at_ends 应是 >= 0 的整数, 得到 {self.fewer_layers_at_ends!r}")
        for name in ("tp", "pp", "micro_batch", "virtual_stages"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} 应是正整数, 得到 {value!r}")
        if self.zero not in (0, 1, 2, 3):
            raise ValueError(f"zero 应是 0, 1, 2 或 3, 得到 {self.zero!r}")
        if self.recompute not in estimate.RECOMPUTE:
            raise ValueError(f"recompute 应是 {estimate.RECOMPUTE} 之一, 得到 {self.recompute!r}")
        if self.sp and self.tp == 1:
            raise ValueError("sequence parallelism (sp) 需要 tp > 1")
        if self.hsdp and self.zero != 3:
            raise ValueError("hsdp 是 ZeRO-3 的一种 (zero=3)")

    def describe(self) -> str:
        parts = [f"TP {self.tp}" + (" + SP" if self.sp else ""),
                 f"PP {self.pp}" + (f" (interleaved x{self.virtual_stages})" if self.virtual_stages > 1 else ""),
                 {0: "DDP", 1: "ZeRO-1", 2: "ZeRO-2", 3: "HSDP" if self.hsdp else "ZeRO-3"}[self.zero],
                 f"micro-batch {self.micro_batch}"]
        if self.recompute != "none":
            parts.append(f"{self.recompute} recompute")
        return ", ".join(parts)


@dataclass
class Plan:
    """What `plan` found: every number in bytes, seconds, FLOPs, per GPU unless said; `report()` prints it."""

    model: ModelShape
    run: Run
    layout: Layout
    dp: int
    micro_batches: int
    memory: dict[str, float]  # the GPU that needs the most: part -> bytes, and "total"
    memory_stage: str  # which pipeline stage needs the most ("3 of 16"), or "only"
    gpu_memory_bytes: float
    comm: dict[str, dict[str, float]]  # kind -> {"bytes", "seconds", "exposed_s", "calls"}
    compute_s: float
    bubble_s: float
    optimizer_s: float
    step_s: float
    model_flops_per_step: float
    peak_flops_per_gpu: float
    notes: list[str] = field(default_factory=list)

    @property
    def fits(self) -> bool:
        return self.memory["total"] <= self.gpu_memory_bytes

    @property
    def mfu(self) -> float:
        return self.model_flops_per_step / (self.run.gpus * self.peak_flops_per_gpu * self.step_s)

    @property
    def steps(self) -> float:
        return self.run.tokens / self.run.batch_tokens

    @property
    def days(self) -> float:
        return self.steps * self.step_s / estimate.SECONDS_PER_DAY

    @property
    def cost_usd(self) -> float:
        return estimate.cost_usd(estimate.gpu_hours(self.steps * self.step_s, self.run.gpus), self.run.usd_per_gpu_hour)

    @property
    def exposed_comm_s(self) -> float:
        return sum(c["exposed_s"] for c in self.comm.values())

    def bottleneck(self) -> str:
        """What the step's time goes to beyond the matmuls: the largest of the exposed parts."""
        parts = {"pipeline bubble": self.bubble_s, "optimizer step": self.optimizer_s,
                 **{f"{kind} communication": c["exposed_s"] for kind, c in self.comm.items()}}
        name, seconds = max(parts.items(), key=lambda kv: kv[1])
        if seconds < 0.05 * self.step_s:
            return f"compute: {self.compute_s / self.step_s:.0%} of the step is the matmuls (nothing else over 5%)"
        return f"{name}: {seconds / self.step_s:.0%} of the step"

    def summary(self) -> str:
        return (f"{self.layout.describe()} (DP {self.dp}, {self.micro_batches} micro-batches): "
                f"{self.memory['total'] / 1e9:.1f} GB per GPU, step {self.step_s:.2f} s, MFU {self.mfu:.3f}, "
                f"{self.days:.1f} days, ${self.cost_usd:,.0f}")

    def report(self) -> str:
        """The plan in words and tables (what `python -m lecture2 estimate --model ...` prints)."""
        gb = lambda x: f"{x / 1e9:8.2f} GB"  # noqa: E731
        lines = [f"{self.model.name} (N = {self.model.n_params:.4g}) on {self.run.gpus} x {self.run.cluster} GPUs: "
                 f"{self.layout.describe()}, DP {self.dp}; {self.micro_batches} micro-batches of "
                 f"{self.layout.micro_batch} x {self.run.seq_len} tokens per step",
                 f"  memory per GPU (pipeline stage {self.memory_stage}, the fullest):" if self.layout.pp > 1
                 else "  memory per GPU:"]
        for part, nbytes in self.memory.items():
            if part != "total":
                lines.append(f"    {part:<52}{gb(nbytes)}")
        verdict = "fits" if self.fits else "does NOT fit"
        lines.append(f"    {'total':<52}{gb(self.memory['total'])}  of {self.gpu_memory_bytes / 1e9:.1f} GB: {verdict}")
        lines.append("  communication per GPU per step:")
        for kind, c in self.comm.items():
            lines.append(f"    {kind:<4} {c['bytes'] / 1e9:9.2f} GB sent, {c['calls']:>6.0f} calls, "
                         f"{c['seconds']:7.3f} s on the wire, {c['exposed_s']:7.3f} s exposed")
        lines += [f"  step: compute {self.compute_s:.3f} s + bubble {self.bubble_s:.3f} s + exposed communication "
                  f"{self.exposed_comm_s:.3f} s + optimizer {self.optimizer_s:.3f} s = {self.step_s:.3f} s",
                  f"  MFU {self.mfu:.3f} (model FLOPs 6N + 12LdT per token at {self.peak_flops_per_gpu / 1e12:.1f} "
                  f"TFLOP/s peak); {self.days:.2f} days for {self.run.tokens:.3g} tokens, ${self.cost_usd:,.0f} at "
                  f"${self.run.usd_per_gpu_hour:g}/GPU-hour",
                  f"  beyond the matmuls the step goes to: {self.bottleneck()}"]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def _bytes(dtype: str) -> int:
    return {"bf16": 2, "fp16": 2, "fp32": 4}[dtype]


def stage_layers(n_layers: int, pp: int, fewer_at_ends: int = 0) -> list[int]:
    """Layers of each pipeline stage: as even as possible, the first and last stage `fewer_at_ends` fewer (Llama 3
    405B: 126 layers on 16 stages, one fewer on the first and last, which hold the embedding and the head)."""
    if pp == 1:
        return [n_layers]
    base = math.ceil((n_layers + 2 * fewer_at_ends) / pp)
    ends = base - fewer_at_ends
    if ends < 1 or (pp == 2 and 2 * ends != n_layers and fewer_at_ends):
        raise ValueError(f"{n_layers} 层分不成 {pp} 段 (首尾各少 {fewer_at_ends} 层)")
    middle_total = n_layers - 2 * ends
    counts = [ends] + [0] * (pp - 2) + [ends] if pp > 2 else [ends, n_layers - ends]
    for i in range(pp - 2):  # spread the rest over the middle stages, the earlier ones first
        counts[1 + i] = middle_total // (pp - 2) + (1 if i < middle_total % (pp - 2) else 0)
    if min(counts) < 1 or sum(counts) != n_layers:
        raise ValueError(f"{n_layers} 层分不成 {pp} 段")
    return counts


def in_flight_layers(layers: int, stage: int, pp: int, micro_batches: int, virtual: int = 1) -> float:
    """Layer-activations stage `stage` keeps at its peak under 1F1B (Narayanan et al. 2021): p - stage micro-batches
    in flight; interleaved with v chunks per stage (Megatron's schedule) 2(p - stage - 1) + (v - 1)p + 1 chunks of
    layers / v layers; never more than all m micro-batches."""
    if virtual == 1:
        chunks, per_chunk = pp - stage, layers
    else:
        chunks, per_chunk = 2 * (pp - stage - 1) + (virtual - 1) * pp + 1, layers / virtual
    return min(chunks * per_chunk, micro_batches * layers)


def plan(shape: ModelShape, run: Run, layout: Layout) -> Plan:
    """Memory, communication, time and MFU of training `shape` as `run` says, laid out as `layout`."""
    c = hardware.cluster(run.cluster)
    gpu = c.gpu_spec
    t, p, v = layout.tp, layout.pp, layout.virtual_stages
    g = c.gpus_per_node
    if run.gpus % (t * p):
        raise ValueError(f"GPUs ({run.gpus}) 要被 tp x pp = {t * p} 整除")
    d = run.gpus // (t * p)
    if t > g:
        raise ValueError(f"tp={t} 超过一个节点的 {g} 个 GPU: 张量并行留在 NVLink 之内")
    if shape.n_heads % t or shape.kv % t:
        raise ValueError(f"tp={t} 要整除 n_heads={shape.n_heads} 和 kv_heads={shape.kv}")
    if p > shape.n_layers:
        raise ValueError(f"pp={p} 超过 {shape.n_layers} 层")
    seqs = run.batch_tokens // run.seq_len
    if seqs % (d * layout.micro_batch):
        raise ValueError(f"每步 {seqs} 个序列分不成 DP {d} x micro-batch {layout.micro_batch}")
    m = seqs // (d * layout.micro_batch)
    if v > 1 and (p == 1 or m % p):
        raise ValueError("interleaving (virtual_stages > 1) 需要 pp > 1, 且 micro-batch 数是 pp 的倍数 (Megatron)")
    counts = stage_layers(shape.n_layers, p, layout.fewer_layers_at_ends)
    if v > min(counts):
        raise ValueError(f"virtual_stages={v} 多于一段的层数 {min(counts)}")
    r = estimate._recipe(run.recipe)
    red = _bytes(run.reduce_dtype)
    h, s, b, L = shape.d_model, run.seq_len, layout.micro_batch, shape.n_layers
    notes: list[str] = []

    # --- parameters on one GPU of each stage
    counted = L * shape.layer_params() + (1 if shape.tied_embeddings else 2) * shape.embedding_params() + h
    scale = shape.n_params / counted  # 1, or the round figure a preset plans with (the lecture's 7e9)
    layer_gpu = (shape.layer_matrix_params() / t + 2 * h) * scale  # one layer's parameters on one TP rank
    emb_gpu = shape.embedding_params() / t * scale  # vocabulary-parallel embedding (and head)
    params = []
    for i, n in enumerate(counts):
        extra = (emb_gpu if i == 0 else 0.0) + ((emb_gpu if (p > 1 or not shape.tied_embeddings) else 0.0) + h * scale
                                                if i == p - 1 else 0.0)
        params.append(n * layer_gpu + extra)  # a tied embedding is a second copy on the last stage under PP

    # --- the DP group: its size, where its ranks sit, how the state is sharded
    dp_per_node = max(1, min(d, g // t))
    if layout.hsdp and (d % dp_per_node or d == dp_per_node):
        raise ValueError("hsdp: DP 要是每节点 DP rank 数的整数倍 (且跨节点)")
    shard = dp_per_node if layout.hsdp else d  # ranks a ZeRO stage divides the state by
    z = layout.zero

    def bucket_params(n: float) -> float:  # Megatron's DDP buckets: max(40M, 1M x DP) parameters (core/distributed)
        return min(n, max(40e6, 1e6 * d))

    # --- activations per layer and micro-batch
    if run.activations == "korthikanti":
        per_layer = estimate.korthikanti_bytes_per_layer(s, b, h, shape.n_heads, tp=t, sp=layout.sp,
                                                         recompute=layout.recompute)
    else:
        per_layer = estimate.activation_bytes_per_layer(s, b, h, shape.n_heads, d_ff=shape.d_ff, ffn=shape.ffn,
                                                        kv_heads=shape.kv, dtype_bytes=2, tp=t, sp=layout.sp,
                                                        recompute=layout.recompute)
    logits = s * b * shape.vocab_size / t * (2 + 4)  # bf16 logits + the loss's fp32 copy (last stage)

    def memory_of(i: int) -> dict[str, float]:
        n = params[i]
        out = {"weights": r.weights * n / (shard if z >= 3 else 1),
               "gradients": r.gradients * n / (shard if z >= 2 else 1),
               "optimizer": r.optimizer * n / (shard if z >= 1 else 1)}
        if z == 3:
            out["ZeRO-3: 2 gathered layers + 1 unsharded gradient"] = layer_gpu * (2 * r.weights + red)
        elif d > 1:
            out["gradient reduce bucket"] = bucket_params(n) * red
        kept = in_flight_layers(counts[i], i, p, m, v)
        out[f"activations: {kept:g} layer x micro-batch"] = kept * per_layer
        if i == p - 1:
            out["logits (bf16 + fp32 for the loss)"] = logits
        out["total"] = sum(out.values())
        return out

    stages = [memory_of(i) for i in range(p)]
    worst = max(range(p), key=lambda i: stages[i]["total"])
    mem = stages[worst]
    stage = "only" if p == 1 else f"{worst} of {p}"

    # --- compute: one micro-batch on one stage of one GPU (the stage with the most layers sets the pace)
    model_per_token = estimate.flops_per_token(shape.n_params, L, h, s)
    extra_flops = {"none": 0.0, "selective": 4 * L * h * s, "full": 2 * shape.n_params + 4 * L * h * s}[layout.recompute]
    peak = gpu.peak_flops(run.dtype)
    speed = peak * run.compute_efficiency
    tokens_mb = b * s
    layers = max(counts)
    share = layers / L  # this stage's share of the model's work
    mb_compute = (model_per_token + extra_flops) * tokens_mb * share / t / speed
    layer_compute = mb_compute / layers
    mb_fwd, mb_bwd = mb_compute / 3, 2 * mb_compute / 3  # backward is twice the forward (2N + 4N)

    # --- TP: on the critical path (Megatron's default; TE's userbuffer overlap is not modelled)
    act_bytes = tokens_mb * h * 2  # one (b, s, h) bf16 tensor
    full = layout.recompute == "full"  # the forward runs again in backward: its collectives too
    if t > 1:
        tp_link = network.link(c, t, t)
        if layout.sp:  # lecture2.parallel, measured: 6 all-gathers and 4 reduce-scatters per layer and step
            calls = {"all_gather": 6 + 2 * full, "reduce_scatter": 4 + 2 * full}
        else:  # 4 all-reduces: 2 forward (after the row-parallel layers), 2 backward (the "f" operator)
            calls = {"all_reduce": 4 + 2 * full}
        tp_layer_s = sum(network.collective_seconds(op, act_bytes, tp_link, k) for op, k in calls.items())
        tp_layer_bytes = sum(k * network.bus_factor(op, t) * act_bytes for op, k in calls.items())
        calls_layer = sum(calls.values())
    else:
        tp_layer_s = tp_layer_bytes = calls_layer = 0
    tp_mb_s = layers * tp_layer_s
    tp_comm = {"bytes": tp_layer_bytes * layers * m, "seconds": tp_mb_s * m, "exposed_s": m * tp_mb_s,
               "calls": calls_layer * layers * m}

    # --- PP: each micro-batch sends its activations forward and their gradient back, 1/t per TP rank
    if p > 1:
        pp_link = network.link(c, 2, 1) if t * d >= g else network.link(c, 2, 2)  # next stage in another node?
        p2p_bytes = act_bytes / t
        p2p_s = 2 * v * network.collective_seconds("send", p2p_bytes, pp_link)
    else:
        p2p_bytes = p2p_s = 0.0
    pp_comm = {"bytes": 2 * v * p2p_bytes * m, "seconds": p2p_s * m, "exposed_s": p2p_s * m,
               "calls": 2 * v * m if p > 1 else 0}

    # --- DP
    P = max(params)  # the heaviest stage's DP group finishes last
    P_w, P_g = P * r.weights, P * red  # parameter gathers in the weights' dtype, gradients in the reduce dtype
    dp_bytes = dp_s = exposed_step = exposed_mb = 0.0
    dp_calls = 0
    if d > 1:
        dp_link = network.link(c, d, dp_per_node)
        if z in (0, 1, 2):
            buckets = max(1, math.ceil(P / bucket_params(P)))
            if z == 0:
                red_s, ag_s = network.collective_seconds("all_reduce", P_g / buckets, dp_link, buckets), 0.0
                dp_bytes, dp_calls = network.bus_factor("all_reduce", d) * P_g, buckets
            else:
                red_s = network.collective_seconds("reduce_scatter", P_g / buckets, dp_link, buckets)
                ag_s = network.collective_seconds("all_gather", P_w / buckets, dp_link, buckets)
                dp_bytes, dp_calls = network.bus_factor("reduce_scatter", d) * (P_g + P_w), 2 * buckets
            dp_s = red_s + ag_s
            if run.overlap:  # behind the last micro-batch's backward and the next first forward; a bucket stays out
                exposed_step = max(red_s - mb_bwd, red_s / buckets) + (max(ag_s - mb_fwd, ag_s / buckets) if ag_s else 0)
            else:
                exposed_step = dp_s
        else:  # ZeRO-3 / FSDP: every micro-batch gathers each layer twice and reduce-scatters it
            zs = dp_per_node if layout.hsdp else d
            if zs > 1:
                z_link = network.link(c, zs, min(zs, dp_per_node))
                layer_w, layer_g = layer_gpu * r.weights, layer_gpu * red
                ag = network.collective_seconds("all_gather", layer_w, z_link)
                rs = network.collective_seconds("reduce_scatter", layer_g, z_link)
                per_mb = layers * v * (2 * ag + rs) / v
                dp_bytes = m * layers * network.bus_factor("all_gather", zs) * (2 * layer_w + layer_g)
                dp_calls = m * layers * 3
                f_layer, b_layer = layer_compute / 3, 2 * layer_compute / 3
                if run.overlap:  # the first gather and the last reduce-scatter stay out, and any excess
                    exposed_mb = (ag + (layers - 1) * max(0.0, ag - f_layer) + rs
                                  + (layers - 1) * max(0.0, ag + rs - b_layer))
                else:
                    exposed_mb = per_mb
                dp_s = m * per_mb
            if layout.hsdp:  # the replicas all-reduce their gradient shards once per step, across nodes
                replicas = d // dp_per_node
                shard_g = P_g / dp_per_node
                rep_s = network.collective_seconds("all_reduce", shard_g, network.link(c, replicas, 1))
                dp_s += rep_s
                dp_bytes += network.bus_factor("all_reduce", replicas) * shard_g
                dp_calls += 1
                exposed_step += max(rep_s - mb_bwd, 0.0) if run.overlap else rep_s
    dp_comm = {"bytes": dp_bytes, "seconds": dp_s, "exposed_s": exposed_step + m * exposed_mb, "calls": dp_calls}

    # --- the step: m + (p - 1)/v slots on the pipeline's critical path, then what the DP step leaves exposed
    slot = mb_compute + tp_mb_s + p2p_s + exposed_mb
    pipeline_s = (m + (p - 1) / v) * slot
    compute_s = m * mb_compute
    bubble_s = (p - 1) / v * slot  # (p - 1)/(v m + p - 1) of the pipeline (Narayanan et al. 2021)
    opt_params = P / (shard if z >= 1 else 1)
    optimizer_s = opt_params * (2 * r.optimizer + r.gradients + r.weights) / gpu.bandwidth_bytes_per_s
    step_s = pipeline_s + exposed_step + optimizer_s
    if layout.recompute == "selective" and run.activations == "course":
        notes.append("selective recompute keeps the same bytes as none under fused attention (the kernel already "
                     "recomputes its attention weights) and costs 4LdT FLOPs per token more")
    comm = {"tp": tp_comm, "pp": pp_comm, "dp": dp_comm}
    return Plan(shape, run, layout, d, m, mem, stage, float(gpu.memory_bytes), comm, compute_s, bubble_s,
                optimizer_s, step_s, model_per_token * run.batch_tokens, peak, notes)


def layouts(shape: ModelShape, run: Run):
    """Every layout `search` tries: TP in a node, PP over the layers, ZeRO 0-3 and HSDP, SP with TP, micro-batch
    sizes that divide the batch, recomputation none/selective/full."""
    c = hardware.cluster(run.cluster)
    seqs = run.batch_tokens // run.seq_len
    for t in (1, 2, 4, 8, 16):
        if t > c.gpus_per_node or shape.n_heads % t or shape.kv % t or run.gpus % t:
            continue
        for p in range(1, shape.n_layers + 1):
            if run.gpus % (t * p):
                continue
            if shape.n_layers % p == 0:
                fewer = 0
            elif p > 2 and (shape.n_layers + 2) % p == 0:
                fewer = 1  # Llama 3's split: the first and last stage one layer fewer
            else:
                continue
            d = run.gpus // (t * p)
            if seqs % d:
                continue
            for b in (1, 2, 4, 8, 16):
                if (seqs // d) % b:
                    continue
                for zero, hsdp in ((0, False), (1, False), (2, False), (3, False), (3, True)):
                    for sp in ((False, True) if t > 1 else (False,)):
                        for rc in estimate.RECOMPUTE:
                            for v in ((1, 2, 4) if p > 1 else (1,)):
                                yield Layout(t, p, zero, sp, b, rc, hsdp, v, fewer)


def search(shape: ModelShape, run: Run, top: int = 5) -> list[Plan]:
    """The `top` layouts that fit in GPU memory, fastest step first (for a fixed number of GPUs the fastest
    is also the cheapest); ties go to the one that needs less memory."""
    found = []
    for layout in layouts(shape, run):
        try:
            candidate = plan(shape, run, layout)
        except ValueError:
            continue
        if candidate.fits:
            found.append(candidate)
    found.sort(key=lambda x: (round(x.step_s, 6), x.memory["total"]))
    return found[:top]


def zero3_model_states_bytes(n_params: float, largest_layer_params: float, n_gpus: int,
                             offload: str = "none") -> float:
    """Bytes per GPU of ZeRO-3's model states as DeepSpeed's `estimate_zero3_model_states_mem_needs` counts them
    (deepspeed/runtime/zero/stage3.py): 18 bytes per parameter sharded over the GPUs (2 fp16 weights + 16 for the
    fp32 master, m, v and gradient: MEMORY_RECIPES' "bf16 mixed Adam, fp32 grads" 2 + 4 + 12) plus the largest
    layer gathered whole, 4 bytes per parameter (its fp16 weights and gradient).

    offload: "none"; "optimizer" (the fp32 states and gradients live on the CPU, the GPU keeps 2N/n of weights);
    "all" (the weights too: only the gathered layer stays)."""
    if offload not in ("none", "optimizer", "all"):
        raise ValueError(f"offload 应是 'none', 'optimizer' 或 'all', 得到 {offload!r}")
    r = estimate.MEMORY_RECIPES["bf16 mixed Adam, fp32 grads"]
    gathered = 4 * largest_layer_params
    sharded = {"none": r.bytes_per_param, "optimizer": r.weights, "all": 0}[offload]
    return gathered + int(sharded * n_params / n_gpus)


def with_layout(p: Plan, **changes) -> Plan:
    """The same run with some of the layout changed (e.g. `with_layout(p, zero=1)`)."""
    return plan(p.model, p.run, replace(p.layout, **changes))

