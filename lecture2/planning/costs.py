"""What one layer costs one GPU for one micro-batch: its kernels (lecture2.planning.compute) and its collectives
(lecture2.planning.collectives), in seconds.

Per layer and micro-batch of b sequences of s tokens (s / cp per GPU under context parallelism):
    GEMMs      every matrix of the layer: forward M x (out / t) x in for a column-parallel layer, M x out x (in / t) for
               a row-parallel one (M = the tokens); backward the input-gradient and weight-gradient GEMMs of the same
               size; routed experts by the tokens each receives (b·s·top_k·ep / (cp·experts), balanced), shared ones
               by all; FP8 runs do these in FP8 (`Run.dtype`), the router in BF16
    attention  the kernel of `Run.attention` on the GPU's heads (a / t): its queries (s / cp) against all s keys
    memory     norms, residual adds, rotary, the activation function, dropout, FP8 casts, MoE permute / combine:
               bytes read and written per token (forward; backward moves about twice as much)
    recompute  full: the forward again; selective (Megatron-Core's recompute modules): the norms, the activation
               function, MLA's up-projections, and an explicit attention's core, again
TP  (within a node) per layer: 4 all-reduces of the (b·s, h) activation (2 forward, 2 backward), with SP 6 all-gathers
    and 4 reduce-scatters (the column-parallel layers gather their input again in backward), as lecture2.parallel
    issues them on a live group; full recompute repeats the forward's. Which of them wait and which run beside a
    GEMM is `Layout.tp_overlap` (_tp_exposed: Megatron's default hides the backward's behind the weight gradient).
CP  per layer: all-gather of K and V in forward (Llama 3, §3.3.2), again in backward (the gathered K and V are not
    kept: at 128K they would be another 67 MB per layer and micro-batch), reduce-scatter of their gradients.
EP  per MoE layer: dispatch and combine all-to-all in forward, the same in backward; tokens to other nodes travel on
    the GPU's NIC, to the node's other GPUs on NVLink; with node-limited routing (DeepSeek-V3: at most 4 nodes) each
    token crosses to a node once. Dispatch in FP8 where the GEMMs are, combine and backward in BF16.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from .. import hardware
from . import collectives, compute
from .layout import Layout, Run
from .shapes import ModelShape

__all__ = ["LayerCost", "group_per_node", "layer_cost", "head_cost", "p2p_seconds"]


@dataclass(frozen=True)
class LayerCost:
    """One layer, one micro-batch, one GPU (seconds; the collectives' bytes are whole tensors, per call)."""

    gemm_fwd: float
    gemm_bwd: float
    attention_fwd: float
    attention_bwd: float
    memory_fwd: float
    memory_bwd: float
    launch_fwd: float  # the non-GEMM kernels' launch and tail (compute.launch_seconds each, _kernels counts them)
    launch_bwd: float
    recompute: float
    tp_s: float
    tp_calls: int
    tp_bytes: float  # bytes one GPU sends for the layer's TP collectives (ring factors applied)
    tp_algorithm: str
    tp_exposed_fwd: float  # of tp_s, what the forward waits for (the overlap mode's, _tp_exposed)
    tp_exposed_bwd: float  # and the backward (a full recompute's forward collectives included)
    cp_s: float
    cp_bytes: float
    ep_s: float
    ep_bytes: float

    @property
    def forward(self) -> float:
        return self.gemm_fwd + self.attention_fwd + self.memory_fwd + self.launch_fwd

    @property
    def backward(self) -> float:
        return self.gemm_bwd + self.attention_bwd + self.memory_bwd + self.launch_bwd + self.recompute

    @property
    def compute(self) -> float:
        return self.forward + self.backward


def group_per_node(cluster: hardware.ClusterSpec, sizes: dict[str, int], dim: str) -> tuple[int, int]:
    """(ranks, ranks per node) of the `dim` group when ranks are ordered as `sizes` lists them (fastest first)."""
    g = cluster.gpus_per_node
    faster = 1
    for name, size in sizes.items():
        if name == dim:
            per_node = max(1, min(size, g // faster)) if faster < g else 1
            while size % per_node:  # a group that does not tile a node evenly
                per_node -= 1
            return size, per_node
        faster *= size
    raise KeyError(dim)


def _gemms(rows: int, matrices, t: int, row_parallel: set[str], gpu, kernel: str, share: float,
           chunks: int = 1) -> tuple[float, float, float]:
    """(forward, input-gradient, weight-gradient) seconds of `matrices` (name, in, out) for `rows` tokens, split
    over t GPUs; `chunks` > 1 runs the forward and input-gradient GEMMs as that many GEMMs of rows / chunks (how
    Transformer Engine's userbuffers pipeline a GEMM with its collective)."""
    fwd = dgrad = wgrad = 0.0
    part = max(1, rows // chunks)
    for name, i, o in matrices:
        i_, o_ = (i // t, o) if name in row_parallel else (i, max(1, o // t))
        fwd += chunks * compute.gemm_seconds(part, o_, i_, gpu, kernel, share)
        dgrad += chunks * compute.gemm_seconds(part, i_, o_, gpu, kernel, share)
        wgrad += compute.gemm_seconds(i_, o_, rows, gpu, kernel, share)
    return fwd, dgrad, wgrad


@dataclass(frozen=True)
class _Block:
    """One half of a layer as TP sees it: its column-parallel GEMMs (entered with the input gathered or copied) and
    its row-parallel ones (left with a reduce-scatter or all-reduce), each (forward, input-gradient, weight-gradient)
    seconds; `chunked` the same with the forward and input-gradient GEMMs in TP pieces (userbuffers)."""

    col: tuple[float, float, float]
    row: tuple[float, float, float]
    col_chunked: tuple[float, float, float]
    row_chunked: tuple[float, float, float]


def _tp_exposed(layout: Layout, ag: float, rs: float, ar: float, blocks: list[_Block]) -> tuple[float, float]:
    """(forward, backward) seconds one layer's TP collectives add to the critical path, one micro-batch.

    "none": every collective waits. "megatron" (Megatron-LM's default, LinearWithGradAccumulationAndAsyncCommunication
    in megatron/core/tensor_parallel/layers.py; Korthikanti et al. 2022, §6.2): in backward a column-parallel layer
    launches its input-gradient all-reduce (SP: the reduce-scatter) and computes its weight gradient meanwhile, and with
    SP gathers its input again beside its input-gradient GEMM; the rest wait. "userbuffers" (--tp-comm-overlap,
    Transformer Engine's initialize_ub; needs SP): every all-gather and reduce-scatter is cut into TP pieces and run
    beside the GEMM that consumes or produces it, the first piece's exchange exposed; the GEMMs run as TP pieces."""
    mode, t = layout.tp_overlap, layout.tp
    ub = mode == "userbuffers"

    def beside(comm: float, gemm: float, pieces: bool = False) -> float:
        return max(0.0, comm - gemm * ((t - 1) / t if pieces else 1.0))

    fwd = bwd = 0.0
    for blk in blocks:
        col, row = (blk.col_chunked, blk.row_chunked) if ub else (blk.col, blk.row)
        if not layout.sp:  # forward: the row-parallel output all-reduced; backward: the input gradient all-reduced
            fwd += ar
            bwd += ar if mode == "none" else beside(ar, col[2])
            continue
        fwd += (beside(ag, col[0], True) + beside(rs, row[0], True)) if ub else ag + rs
        bwd += beside(ag, row[1], True) if ub else ag  # the row-parallel layer's output gradient gathered
        if mode == "none":
            bwd += ag + rs
        else:  # the input gathered again beside the input-gradient GEMM, its gradient reduced beside the weight's
            bwd += beside(ag, col[1]) + beside(rs, col[2])
    if layout.recompute == "full":  # the recomputed forward issues its collectives again
        bwd += fwd
    return fwd, bwd


def _efficiency_override(run: Run, flops: float, gpu, kernel: str, share: float) -> float:
    peak = gpu.peak_flops("fp8" if kernel.startswith("fp8") else "bf16") * share
    return flops / (peak * run.compute_efficiency)


_CACHE: dict[tuple, LayerCost] = {}


def layer_cost(shape: ModelShape, run: Run, layout: Layout, moe: bool) -> LayerCost:
    """The cost of one (dense or MoE) layer for one micro-batch on one GPU of `layout` (cached on what it depends
    on: a search asks for the same layer under many pipeline and ZeRO choices)."""
    key = (shape, run.cluster, run.seq_len, run.dtype, run.attention_kernel, run.dropout, run.compute_efficiency,
           layout.tp, layout.sp, layout.cp, layout.ep, layout.micro_batch, layout.recompute, layout.tp_overlap,
           layout.comm_sms, moe)
    found = _CACHE.get(key)
    if found is None:
        if len(_CACHE) > 20000:
            _CACHE.clear()
        found = _CACHE[key] = _layer_cost(shape, run, layout, moe)
    return found


def _layer_cost(shape: ModelShape, run: Run, layout: Layout, moe: bool) -> LayerCost:
    c = run.node
    gpu = c.gpu_spec
    t, cp, b, s = layout.tp, layout.cp, layout.micro_batch, run.seq_len
    rows = b * s // cp
    h = shape.d_model
    share = 1 - layout.comm_sms / (gpu.sms or 132)
    kernel = run.dtype
    scale = shape.scale  # a preset planned with a round parameter count scales its matrices' work alike
    ub = layout.tp_overlap == "userbuffers" and t > 1

    def block(rows_: int, matrices, row_names: set[str], times: int = 1, kernel_: str = kernel) -> _Block:
        col = [m for m in matrices if m[0] not in row_names]
        row = [m for m in matrices if m[0] in row_names]
        parts = [tuple(times * x for x in _gemms(rows_, ms, t, row_names, gpu, kernel_, share, chunks))
                 for ms, chunks in ((col, 1), (row, 1), (col, t if ub else 1), (row, t if ub else 1))]
        return _Block(*parts)

    blocks = [block(rows, shape.attention_matrices(), {"out"})]
    extra = []  # GEMMs outside the TP blocks (the router)
    if moe:
        per_expert = b * s * shape.top_k * layout.ep // (cp * shape.n_experts)
        local = shape.n_experts // layout.ep
        experts = block(per_expert, shape.mlp_matrices(shape.expert_ffn), {"down"}, local)
        if shape.shared_experts:
            shared = block(rows, shape.mlp_matrices(shape.expert_ffn * shape.shared_experts), {"down"})
            experts = _Block(*(tuple(x + y for x, y in zip(p, q)) for p, q in zip(
                (experts.col, experts.row, experts.col_chunked, experts.row_chunked),
                (shared.col, shared.row, shared.col_chunked, shared.row_chunked))))
        blocks.append(experts)
        extra.append(_gemms(rows, [("router", h, shape.n_experts)], 1, set(), gpu, "bf16", share))
        matmul = (shape.top_k + shape.shared_experts) * sum(i * o for _, i, o in shape.mlp_matrices(shape.expert_ffn))
    else:
        blocks.append(block(rows, shape.mlp_matrices(shape.d_ff), {"down"}))
        matmul = sum(i * o for _, i, o in shape.mlp_matrices(shape.d_ff))
    matmul += sum(i * o for _, i, o in shape.attention_matrices())
    ran = [(blk.col_chunked, blk.row_chunked) if ub else (blk.col, blk.row) for blk in blocks]
    gemm_fwd = sum(col[0] + row[0] for col, row in ran) + sum(x[0] for x in extra)
    gemm_bwd = sum(col[1] + col[2] + row[1] + row[2] for col, row in ran) + sum(x[1] + x[2] for x in extra)
    if run.compute_efficiency is not None:  # a what-if: every GEMM at one fraction of the peak
        gemm_fwd = _efficiency_override(run, 2 * matmul * rows / t, gpu, kernel, share)
        gemm_bwd = 2 * gemm_fwd
    gemm_fwd, gemm_bwd = gemm_fwd * scale, gemm_bwd * scale
    heads = shape.n_heads // t
    attn = functools.partial(compute.attention_seconds, s // cp, s, heads, shape.qk_dim, shape.v_dim, gpu,
                             run.attention_kernel, causal=True, sm_share=share, batch=b)
    attention_fwd, attention_bwd = attn(passes="fwd"), attn(passes="bwd")
    mem_fwd = compute.memory_seconds(rows * _elementwise_bytes(shape, layout, run, moe), gpu)
    k_fwd, k_bwd = _kernels(shape, run, moe)
    launch_fwd, launch_bwd = k_fwd * compute.launch_seconds(), k_bwd * compute.launch_seconds()
    recompute = {"none": 0.0, "selective": _selective(shape, run, layout, moe, rows, gpu, share, attention_fwd),
                 "full": gemm_fwd + attention_fwd + mem_fwd + launch_fwd}[layout.recompute]
    tp_s, tp_calls, tp_bytes, tp_alg, per_call = _tp(c, layout, rows * h * 2)
    tp_fwd, tp_bwd = _tp_exposed(layout, per_call["all_gather"], per_call["reduce_scatter"], per_call["all_reduce"],
                                 blocks) if t > 1 else (0.0, 0.0)
    cp_s, cp_bytes = _cp(c, layout, shape, b * s)
    ep_s, ep_bytes = _ep(c, layout, run, shape, rows) if moe else (0.0, 0.0)
    return LayerCost(gemm_fwd, gemm_bwd, attention_fwd, attention_bwd, mem_fwd, 2 * mem_fwd, launch_fwd, launch_bwd,
                     recompute,
                     tp_s, tp_calls, tp_bytes, tp_alg, tp_fwd, tp_bwd, cp_s, cp_bytes, ep_s, ep_bytes)


def _kernels(shape: ModelShape, run: Run, moe: bool) -> tuple[int, int]:
    """(forward, backward) kernels one layer launches besides its GEMMs, as the fused frameworks run it (Megatron-LM,
    Transformer Engine): 2 norms, 2 residual adds (with the bias and dropout: bias_dropout_add), the activation (bias
    GELU or SwiGLU), rotary where the model has no learned positions (no biases: Llama-style), the attention (one
    FlashAttention kernel; explicit: scores, fused scale-mask-softmax, dropout where the run has it, the product);
    MoE: the router's softmax and top-k, the permute and the un-permute. The backward launches about two of each."""
    forward = 2 + 2 + 1 + (0 if shape.bias else 1)
    forward += (3 + run.dropout) if run.attention_kernel == "explicit" else 1
    if moe:
        forward += 4
    return forward, 2 * forward


def _selective(shape: ModelShape, run: Run, layout: Layout, moe: bool, rows: int, gpu, share: float,
               attention_fwd: float) -> float:
    """Seconds Megatron-Core's selective recompute adds to a layer's backward: the norms and the activation function
    again (memory-bound), MLA's up-projections again, an explicit attention's core again."""
    t, h = layout.tp, shape.d_model
    whole = t if layout.sp else 1
    width = shape.expert_ffn * (shape.top_k + shape.shared_experts) if moe else shape.d_ff
    nbytes = 2 * 2 * h * 2 / whole + (3 if shape.ffn == "swiglu" else 2) * width * 2 / t
    seconds = compute.memory_seconds(rows * nbytes, gpu)
    if shape.mla:
        ups = [m for m in shape.attention_matrices() if m[0] in ("q_up", "kv_up")]
        seconds += _gemms(rows, ups, t, set(), gpu, run.dtype, share)[0] * shape.scale
    return seconds + (attention_fwd if run.attention_kernel == "explicit" else 0.0)


def _elementwise_bytes(shape: ModelShape, layout: Layout, run: Run, moe: bool) -> float:
    """Bytes read and written per token by one layer's memory-bound kernels in forward (bf16 activations)."""
    t, h = layout.tp, shape.d_model
    whole = t if layout.sp else 1
    width = shape.expert_ffn * (shape.top_k + shape.shared_experts) if moe else shape.d_ff
    act = (3 if shape.ffn == "swiglu" else 2) * width * 2  # SwiGLU reads gate and up, writes the product
    total = (2 * 2 * h * 2 + 2 * 3 * h * 2) / whole  # 2 norms (read, write), 2 residual adds (read 2, write 1)
    total += 2 * 2 * (shape.n_heads + shape.kv) * shape.qk_dim / t  # rotary on q and k (read, write)
    total += act / t
    if run.dropout:
        total += 2 * 5 * h / whole  # 2 dropouts: read, write, and a 1-byte mask
    if run.dtype.startswith("fp8"):  # each GEMM input cast to FP8: read 2, write 1 byte
        total += 3 * (2 * h + shape.n_heads * shape.v_dim + width) / t
    if moe:  # permute to the experts and combine back: read and write every copy
        copy = 1 if run.dtype.startswith("fp8") else 2
        total += shape.top_k * h * (2 * copy + 2 * 2) / t
    return total


def _tp(c, layout: Layout, tensor: float) -> tuple[float, int, float, str, dict[str, float]]:
    """(seconds, calls, bytes sent, NCCL's algorithm, seconds of one call by op) of one layer's TP collectives for
    one micro-batch."""
    t = layout.tp
    if t == 1:
        return 0.0, 0, 0.0, "-", {}
    g = collectives.group(c, t, t)
    full = layout.recompute == "full"
    if layout.sp:
        calls = {"all_gather": 6 + 2 * full, "reduce_scatter": 4 + 2 * full}
    else:
        calls = {"all_reduce": 4 + 2 * full}
    seconds = sum(collectives.seconds(op, tensor, g, k) for op, k in calls.items())
    factor = {"all_reduce": 2 * (t - 1) / t, "all_gather": (t - 1) / t, "reduce_scatter": (t - 1) / t}
    sent = sum(k * factor[op] * tensor for op, k in calls.items())
    algorithm = collectives.choose(next(iter(calls)), tensor, g).describe()
    per_call = {op: collectives.seconds(op, tensor, g) for op in ("all_gather", "reduce_scatter", "all_reduce")}
    return seconds, sum(calls.values()), sent, algorithm, per_call


def _cp(c, layout: Layout, shape: ModelShape, tokens: int) -> tuple[float, float]:
    cp = layout.cp
    if cp == 1:
        return 0.0, 0.0
    sizes = {"tp": layout.tp, "cp": cp}
    _, per_node = group_per_node(c, sizes, "cp")
    g = collectives.group(c, cp, per_node)
    kv = tokens * 2 * shape.kv * shape.hd * 2 / layout.tp  # K and V of the whole sequence(s), bf16
    # forward all-gather; backward gathers them again (not kept: memory) and reduce-scatters their gradients
    seconds = 2 * collectives.seconds("all_gather", kv, g) + collectives.seconds("reduce_scatter", kv, g)
    return seconds, 3 * (cp - 1) / cp * kv


def _ep(c, layout: Layout, run: Run, shape: ModelShape, rows: int) -> tuple[float, float]:
    """Seconds and bytes one GPU sends for one MoE layer's dispatch + combine, forward and backward."""
    ep = layout.ep
    if ep == 1:
        return 0.0, 0.0
    _, per_node = group_per_node(c, {"tp": layout.tp, "cp": layout.cp, "ep": ep}, "ep")
    nodes = ep // per_node
    h = shape.d_model
    if nodes > 1 and shape.max_nodes_per_token:  # node-limited routing: a token crosses to each node once
        distinct = nodes * (1 - (1 - 1 / nodes) ** shape.top_k)
        remote_copies = min(distinct, shape.max_nodes_per_token) * (nodes - 1) / nodes
    else:
        remote_copies = shape.top_k * (ep - per_node) / ep
    dispatch = (1 + 1 / 32) if run.dtype.startswith("fp8") else 2  # FP8 with 1x128 fp32 scales, else bf16
    per_token = 2 + dispatch + 2 * 2  # bytes per element: forward dispatch + combine, backward both in bf16
    ib = rows * remote_copies * h * per_token / layout.tp
    nvlink = rows * shape.top_k * (per_node - 1) / per_node * h * per_token / layout.tp  # to the experts in a node
    seconds = ib / c.nic_busbw_per_gpu if nodes > 1 else 0.0
    seconds = max(seconds, nvlink / c.ring_busbw_bytes_per_s) + 4 * 20e-6  # 4 calls, about NCCL's latency each
    return seconds, ib + nvlink


def head_cost(shape: ModelShape, run: Run, layout: Layout) -> tuple[float, float]:
    """(forward, backward) seconds of the LM head and the loss on the last stage, per micro-batch: the vocabulary-
    parallel GEMM in BF16 and the cross-entropy's passes over the logits (bf16 written, fp32 read and written)."""
    c = run.node
    gpu = c.gpu_spec
    rows = layout.micro_batch * run.seq_len // layout.cp
    share = 1 - layout.comm_sms / (gpu.sms or 132)
    vocab = math.ceil(shape.vocab_size / layout.tp)
    fwd = compute.gemm_seconds(rows, vocab, shape.d_model, gpu, "bf16", share)
    bwd = (compute.gemm_seconds(rows, shape.d_model, vocab, gpu, "bf16", share)
           + compute.gemm_seconds(shape.d_model, vocab, rows, gpu, "bf16", share))
    loss = compute.memory_seconds(rows * vocab * (2 + 4 + 4 + 4), gpu)
    heads = 1 + shape.mtp_layers  # DeepSeek-V3's MTP modules sit on the last stage with their own pass of the head
    fwd, bwd = heads * (fwd + loss), heads * (bwd + loss)
    if shape.mtp_layers:
        mtp = layer_cost(shape, run, layout, shape.moe)
        fwd, bwd = fwd + shape.mtp_layers * mtp.forward, bwd + shape.mtp_layers * mtp.backward
    return fwd, bwd


def p2p_seconds(c: hardware.ClusterSpec, layout: Layout, tensor: float, next_in_other_node: bool) -> float:
    """One send of `tensor` bytes to the next pipeline stage, over NVLink or the GPU's own NIC."""
    g = collectives.group(c, 2, 1 if next_in_other_node else 2)
    return collectives.seconds("send", tensor, g)
