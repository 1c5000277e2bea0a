"""`plan(shape, run, layout)`: one training step built from its parts, each a small named step below.

    check          the layout can exist (divisibility, TP in a node, the schedule's rules)
    stages         layers, parameters and in-flight activations of each pipeline stage; the fullest one's memory
    stage time     one micro-batch through each stage: its layers' kernels and collectives (lecture2.planning.costs),
                   the head on the last stage, the sends to the next stage; the slowest stage sets the pace
    pipeline       m micro-batches plus the schedule's bubble (lecture2.planning.schedule)
    data parallel  the gradients' reduce and the parameters' gather, by ZeRO stage, with what overlap leaves exposed:
                   ZeRO 0-1 once per step (behind the last micro-batch's backward and the next first forward, one
                   bucket always out), ZeRO-2 a reduce-scatter every micro-batch behind its backward, ZeRO-3 every
                   layer gathered twice and reduced once per micro-batch, behind the previous layer
    optimizer      memory-bound: the stage's shard of the states read and written once
    interference   collectives hidden behind compute still run on the SMs: NCCL takes one thread block per channel
                   (16 on an 8-NIC node), so the hidden seconds cost compute 16 / 132 of themselves on an H100
    FLOPs          model FLOPs (MFU) and executed FLOPs (HFU) per step
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from .. import estimate
from . import collectives, compute, costs, memory, reached, schedule
from .layout import Layout, Run
from .plan import Plan
from .shapes import ModelShape, check_divisible

__all__ = ["plan"]


@dataclass(frozen=True)
class Sizes:
    """The layout's derived sizes."""

    dp: int
    micro_batches: int
    counts: tuple[int, ...]  # layers of each pipeline stage
    moe_counts: tuple[int, ...]  # of them, MoE layers
    order: dict  # group sizes, fastest first (Megatron's tp-cp-dp-pp)


def check(shape: ModelShape, run: Run, layout: Layout) -> Sizes:
    """The derived sizes of `layout`, or ValueError saying why it cannot exist."""
    c = run.node
    t, p, v, cp, ep = layout.tp, layout.pp, layout.virtual_stages, layout.cp, layout.ep
    if run.gpus % (t * p * cp):
        raise ValueError(f"GPUs ({run.gpus}) 要被 tp x cp x pp = {t * cp * p} 整除 (must divide by tp x cp x pp)")
    d = run.gpus // (t * p * cp)
    if t > c.gpus_per_node:
        raise ValueError(f"tp={t} 超过一个节点的 {c.gpus_per_node} 个 GPU (tensor parallelism stays inside a node, on NVLink)")
    check_divisible(shape, t)
    if p > shape.n_layers:
        raise ValueError(f"pp={p} 超过 {shape.n_layers} 层 (more pipeline stages than layers)")
    if run.seq_len % (2 * cp if cp > 1 else 1):
        raise ValueError(f"seq_len ({run.seq_len}) 要被 2 x cp = {2 * cp} 整除 (context parallelism cuts a sequence into 2·cp chunks)")
    if run.sequences % (d * layout.micro_batch):
        raise ValueError(f"每步 {run.sequences} 个序列分不成 DP {d} x micro-batch {layout.micro_batch} (the global batch must divide by DP x micro-batch)")
    m = run.sequences // (d * layout.micro_batch)
    if v > 1 and (p == 1 or (layout.group is None and m % p)):
        raise ValueError(f"interleaving (virtual_stages > 1) 需要 pp > 1, 且 micro-batch 数 ({m}) 是 pp ({p}) 的倍数 "
                         f"(Megatron: micro-batches must be a multiple of pp; Llama 3's flexible N: give group)")
    if v > 1 and layout.group is not None:
        schedule.bubble_slots(p, m, v, layout.group)  # the order runs, or ValueError says why not
    if ep > 1 and (not shape.moe or (d * cp) % ep or shape.n_experts % ep):
        raise ValueError(f"ep={ep} 需要 MoE 模型, 且要整除 dp x cp = {d * cp} 和专家数 {shape.n_experts} (expert parallelism needs an MoE model and must divide dp x cp and the experts)")
    if run.dtype.startswith("fp8") and c.gpu_spec.arch == "ampere":
        raise ValueError(f"{c.gpu_spec.full_name} 没有 FP8 tensor core (no FP8 on this GPU): use bf16 GEMMs")
    if c.gpu_spec.arch == "ampere" and run.attention_kernel == "flash3":
        raise ValueError("FlashAttention-3 只在 Hopper 上 (flash3 needs Hopper)")
    counts, moe_counts = _split(shape, p, layout.fewer_layers_at_ends, layout.last_stage_layers)
    if 0 in counts[:-1]:
        raise ValueError(f"{shape.n_layers} 层分不成 {p} 段 (a pipeline stage without layers)")
    units = list(counts)  # Megatron-Core counts the embedding and the loss as a layer each where the ends hold fewer
    units[0] += layout.fewer_layers_at_ends  # (--account-for-embedding-in-pipeline-split, ...-loss-...)
    units[-1] += layout.fewer_layers_at_ends
    if v > 1 and any(u % v for u in units):
        raise ValueError(f"virtual_stages={v} 不整除每段的层数 {sorted(set(units))} (Megatron cuts each stage into v "
                         f"chunks of equal layers: a layout no framework can launch)")
    return Sizes(d, m, counts, moe_counts, {"tp": t, "cp": cp, "dp": d, "pp": p})


@functools.lru_cache(maxsize=4096)
def _split(shape: ModelShape, p: int, fewer: int, last: int | None) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(layers, MoE layers) of each stage."""
    counts = schedule.stage_layers(shape.n_layers, p, fewer, last=last)
    first, moe_counts = 0, []
    for n in counts:
        moe_counts.append(sum(shape.is_moe_layer(i) for i in range(first, first + n)))
        first += n
    return tuple(counts), tuple(moe_counts)


def stage_params(shape: ModelShape, layout: Layout, sizes: Sizes, i: int) -> tuple[float, float]:
    """(non-expert, expert) parameters one GPU of stage `i` holds."""
    t, p = layout.tp, layout.pp
    h = shape.d_model
    attn_norms = shape.layer_norm_params()  # the norms stay whole on every TP rank
    per_layer_dense = (shape.layer_params(0) - attn_norms) / t + attn_norms  # a dense layer (layer 0 where any is)
    n_moe, n_dense = sizes.moe_counts[i], sizes.counts[i] - sizes.moe_counts[i]
    non_expert = n_dense * per_layer_dense
    expert = 0.0
    if n_moe:
        routed = shape.n_experts * shape.expert_params()
        moe_layer = shape.layer_params(shape.n_layers - 1)
        non_expert += n_moe * ((moe_layer - routed - attn_norms) / t + attn_norms)
        expert = n_moe * routed / layout.ep / t
    emb = shape.embedding_params() / t
    if i == 0:
        non_expert += emb
    if i == p - 1:
        mtp_routed = shape.mtp_layers * shape.n_experts * shape.expert_params()
        non_expert += (emb if (p > 1 or not shape.tied_embeddings) else 0.0) + h + (shape.mtp_params() - mtp_routed) / t
        expert += mtp_routed / layout.ep / t
    return non_expert * shape.scale, expert * shape.scale


def stage_memory(shape: ModelShape, run: Run, layout: Layout, sizes: Sizes, i: int) -> dict[str, float]:
    """Bytes one GPU of stage `i` holds at its peak, by part."""
    r = estimate._recipe(run.recipe)
    red = 4 if run.reduce_dtype == "fp32" else 2
    d, cp, z = sizes.dp, layout.cp, layout.zero
    c = run.node
    dp_per_node = costs.group_per_node(c, sizes.order, "dp")[1]
    shard = (dp_per_node if layout.hsdp else d * cp)
    shard_e = max(1, shard // layout.ep)
    dense, expert = stage_params(shape, layout, sizes, i)
    copies = 2 if layout.schedule == "dualpipe" else 1  # DualPipe keeps two stages' parameters on a rank
    dense, expert = dense * copies, expert * copies

    def part(per_param: int, sharded: bool) -> float:
        return per_param * (dense / (shard if sharded else 1) + expert / (shard_e if sharded else 1))

    out = {"weights": part(r.weights, z >= 3), "gradients": part(r.gradients, z >= 2),
           "optimizer states": part(r.optimizer, z >= 1)}
    layer = (dense + expert) / max(1, sizes.counts[i])  # one layer's parameters on this GPU (a rough one if few)
    if z == 3:
        out["ZeRO-3: 2 gathered layers + 1 unsharded gradient"] = layer * (2 * r.weights + red)
    elif z == 2:
        out["ZeRO-2: one layer's gradient being reduced"] = layer * red
    per_dense = sum(memory.activation_terms(shape, layout, run, False).values())
    per_moe = sum(memory.activation_terms(shape, layout, run, True).values()) if shape.moe else per_dense
    n, n_moe = sizes.counts[i], sizes.moe_counts[i]
    if i == layout.pp - 1 and shape.mtp_layers:  # the MTP modules' layers sit on the last stage
        n, n_moe = n + shape.mtp_layers, n_moe + shape.mtp_layers * shape.moe
    per_layer = ((n - n_moe) * per_dense + n_moe * per_moe) / max(1, n)
    if layout.schedule == "dualpipe":
        kept = min(layout.pp + 1, sizes.micro_batches) * n  # DeepSeek-V3, Table 2: PP + 1 micro-batches
    else:
        kept = schedule.in_flight_layers(n, i, layout.pp, sizes.micro_batches, layout.virtual_stages, layout.group)
    acts = kept * per_layer
    out[f"activations: {kept:g} layer x micro-batch"] = acts
    if i == layout.pp - 1:
        rows = layout.micro_batch * run.seq_len / cp
        out["logits (bf16 + fp32 for the loss)"] = rows * math.ceil(shape.vocab_size / layout.tp) * (2 + 4)
    out["allocator transients and fragmentation"] = memory.fragmentation() * acts
    groups = sum(1 for k in (layout.tp, layout.cp, layout.pp, layout.ep, d) if k > 1)
    out["CUDA context, NCCL buffers"] = memory.runtime_bytes(groups)
    out["total"] = sum(out.values())
    return out


def _dp_groups(c, sizes: Sizes, layout: Layout):
    d, cp = sizes.dp, layout.cp
    _, per_node = costs.group_per_node(c, sizes.order, "dp")
    cp_per = costs.group_per_node(c, sizes.order, "cp")[1]
    ranks, node = d * cp, per_node * cp_per  # Megatron reduces gradients over DP x CP
    return collectives.group(c, ranks, min(node, ranks)), per_node


def data_parallel(shape, run, layout, sizes, cost_mb: dict, heavy: int) -> tuple[dict, float, float]:
    """(the DP comm record, seconds exposed once per step, seconds exposed per micro-batch)."""
    c = run.node
    r = estimate._recipe(run.recipe)
    red = 4 if run.reduce_dtype == "fp32" else 2
    d, z, m = sizes.dp, layout.zero, sizes.micro_batches
    record = {"bytes": 0.0, "seconds": 0.0, "exposed_s": 0.0, "calls": 0, "algorithm": "-"}
    if d * layout.cp == 1:
        return record, 0.0, 0.0
    g, dp_per_node = _dp_groups(c, sizes, layout)
    dense, expert = stage_params(shape, layout, sizes, heavy)
    if z in (0, 1):  # Megatron: buckets of max(40M, 1M x DP) parameters, reduced once per step
        step_exposed, mb_exposed = _dp_buckets(run, g, z, dense + expert, r, red, cost_mb, record)
    elif z == 2:  # every micro-batch reduce-scatters its gradients; the parameters are gathered once per step
        step_exposed, mb_exposed = _dp_zero2(run, g, sizes, dense + expert, r, red, cost_mb, heavy, record)
    else:  # ZeRO-3 / FSDP (HSDP: sharded inside a node, replicas all-reduce the shards once per step)
        step_exposed, mb_exposed = _dp_zero3(run, layout, sizes, g, dp_per_node, dense + expert, r, red, cost_mb,
                                             heavy, record)
    record["exposed_s"] = step_exposed + m * mb_exposed
    return record, step_exposed, mb_exposed


def _dp_buckets(run, g, z: int, P: float, r, red: int, cost_mb: dict, record: dict) -> tuple[float, float]:
    """ZeRO 0 or 1 (Megatron's buckets of max(40M, 1M x DP) parameters): the gradients all-reduced (0) or
    reduce-scattered and the weights all-gathered (1) once per step. Fills `record` (bytes, seconds, calls, the
    algorithm); returns (seconds exposed once per step, seconds exposed per micro-batch: 0)."""
    n = g.ranks
    fwd_mb, bwd_mb = cost_mb["forward"], cost_mb["backward"]
    buckets = max(1, math.ceil(P / max(40e6, 1e6 * n)))
    op = "all_reduce" if z == 0 else "reduce_scatter"
    red_s = collectives.seconds(op, P * red / buckets, g, buckets)
    ag_s = 0.0 if z == 0 else collectives.seconds("all_gather", P * r.weights / buckets, g, buckets)
    record.update(bytes=(2 if z == 0 else 1) * (n - 1) / n * P * red + (n - 1) / n * P * r.weights * (z == 1),
                  seconds=red_s + ag_s, calls=buckets * (1 + (z == 1)),
                  algorithm=collectives.choose(op, P * red / buckets, g).describe())
    if run.overlap:
        step_exposed = max(red_s - bwd_mb, red_s / buckets) + (max(ag_s - fwd_mb, ag_s / buckets) if ag_s else 0)
    else:
        step_exposed = red_s + ag_s
    return step_exposed, 0.0


def _dp_zero2(run, g, sizes, P: float, r, red: int, cost_mb: dict, heavy: int, record: dict) -> tuple[float, float]:
    """ZeRO-2: every micro-batch reduce-scatters its gradients, the parameters are all-gathered once per step.
    Fills `record`; returns (seconds exposed once per step, seconds exposed per micro-batch)."""
    n, m = g.ranks, sizes.micro_batches
    fwd_mb = cost_mb["forward"]
    rs_mb = collectives.seconds("reduce_scatter", P * red, g)
    ag_s = collectives.seconds("all_gather", P * r.weights, g)
    record.update(bytes=(n - 1) / n * (m * P * red + P * r.weights), seconds=m * rs_mb + ag_s, calls=m + 1,
                  algorithm=collectives.choose("reduce_scatter", P * red, g).describe())
    layers = max(1, sizes.counts[heavy])
    if run.overlap:  # a micro-batch's reduce-scatter runs on while the stage computes the next slot
        mb_exposed = max(0.0, rs_mb - cost_mb["slot"])
        step_exposed = rs_mb / layers + max(ag_s - fwd_mb, ag_s / layers)  # the last layer's share cannot hide
    else:
        mb_exposed, step_exposed = rs_mb, ag_s
    return step_exposed, mb_exposed


def _dp_zero3(run, layout, sizes, g, dp_per_node: int, P: float, r, red: int, cost_mb: dict, heavy: int,
              record: dict) -> tuple[float, float]:
    """ZeRO-3 / FSDP: each layer's weights all-gathered twice (forward, backward) and its gradients reduce-scattered,
    every micro-batch; with HSDP the sharding stays inside a node and the replicas all-reduce their shards once per
    step. Fills `record`; returns (seconds exposed once per step, seconds exposed per micro-batch)."""
    c, n, d, m = run.node, g.ranks, sizes.dp, sizes.micro_batches
    fwd_mb, bwd_mb = cost_mb["forward"], cost_mb["backward"]
    step_exposed = mb_exposed = 0.0
    zs = dp_per_node if layout.hsdp else n
    layers = max(1, sizes.counts[heavy])
    layer = P / layers
    if zs > 1:
        zg = collectives.group(c, zs, min(zs, dp_per_node))
        ag = collectives.seconds("all_gather", layer * r.weights, zg)
        rs = collectives.seconds("reduce_scatter", layer * red, zg)
        f_layer, b_layer = fwd_mb / layers, bwd_mb / layers
        per_mb = layers * (2 * ag + rs)
        record.update(bytes=m * layers * (zs - 1) / zs * (2 * layer * r.weights + layer * red),
                      seconds=m * per_mb, calls=m * layers * 3,
                      algorithm=collectives.choose("all_gather", layer * r.weights, zg).describe())
        mb_exposed = (ag + (layers - 1) * max(0.0, ag - f_layer) + rs + (layers - 1) * max(0.0, ag + rs - b_layer)
                      if run.overlap else per_mb)
    if layout.hsdp and d > dp_per_node:
        replicas = d // dp_per_node
        shard = P * red / dp_per_node
        rep = collectives.seconds("all_reduce", shard, collectives.group(c, replicas, 1))
        record["seconds"] += rep
        record["bytes"] += 2 * (replicas - 1) / replicas * shard
        record["calls"] += 1
        step_exposed += max(rep - bwd_mb, 0.0) if run.overlap else rep
    return step_exposed, mb_exposed


def stage_time(shape, run, layout, sizes, i: int) -> dict:
    """One micro-batch through stage `i`: kernels and collectives by kind (seconds), and the bytes it sends."""
    c = run.node
    dense = costs.layer_cost(shape, run, layout, False)
    moe = costs.layer_cost(shape, run, layout, True) if shape.moe else dense
    n, n_moe = sizes.counts[i], sizes.moe_counts[i]
    lay = [(n - n_moe, dense), (n_moe, moe)]
    parts = {"GEMMs": sum(k * (x.gemm_fwd + x.gemm_bwd) for k, x in lay),
             "attention": sum(k * (x.attention_fwd + x.attention_bwd) for k, x in lay),
             "memory-bound": sum(k * (x.memory_fwd + x.memory_bwd) for k, x in lay),
             "kernel launches between the GEMMs": sum(k * (x.launch_fwd + x.launch_bwd) for k, x in lay),
             "recompute": sum(k * x.recompute for k, x in lay)}
    forward = sum(k * x.forward for k, x in lay)
    backward = sum(k * x.backward for k, x in lay)
    if i == layout.pp - 1:
        head_f, head_b = costs.head_cost(shape, run, layout)
        parts["LM head and loss"] = head_f + head_b
        forward, backward = forward + head_f, backward + head_b
    tp = sum(k * x.tp_s for k, x in lay)
    tp_exposed = sum(k * (x.tp_exposed_fwd + x.tp_exposed_bwd) for k, x in lay)
    cp = sum(k * x.cp_s for k, x in lay)
    ep = sum(k * x.ep_s for k, x in lay)
    kernels = sum(parts.values())
    ep_exposed = max(0.0, ep - kernels) if layout.schedule == "dualpipe" else ep  # DualPipe hides it behind compute
    p2p = 0.0
    if layout.pp > 1:
        rows = layout.micro_batch * run.seq_len / layout.cp
        tensor = rows * shape.d_model * 2 / (layout.tp if layout.sp else 1)
        other_node = layout.tp * layout.cp * sizes.dp >= c.gpus_per_node
        p2p = 2 * layout.virtual_stages * costs.p2p_seconds(c, layout, tensor, other_node)
    return {"parts": parts, "forward": forward, "backward": backward, "tp": tp, "tp_exposed": tp_exposed,
            "cp": cp, "ep": ep, "ep_exposed": ep_exposed, "p2p": p2p,
            "slot": kernels + tp_exposed + cp + ep_exposed + p2p,
            "tp_bytes": sum(k * x.tp_bytes for k, x in lay), "tp_calls": sum(k * x.tp_calls for k, x in lay),
            "tp_algorithm": dense.tp_algorithm, "cp_bytes": sum(k * x.cp_bytes for k, x in lay),
            "ep_bytes": sum(k * x.ep_bytes for k, x in lay)}


def flops_per_step(shape: ModelShape, run: Run, layout: Layout) -> tuple[float, float]:
    """(model FLOPs, executed FLOPs) per step: model = 6 x matmul parameters + causal attention; executed adds the
    recomputed forward (full: the layers' matrices and attention; selective: an explicit attention's core) and, for
    an explicit attention kernel, the masked half of the square it computes anyway."""
    s, tokens = run.seq_len, run.batch_tokens
    model = shape.model_flops_per_token(s)
    explicit = run.attention_kernel == "explicit"
    attention = shape.attention_flops_per_token(s, causal=not explicit)
    executed = 6 * shape.matmul_params() + attention
    layers_matmul = shape.matmul_params() - shape.embedding_params() * shape.scale * (1 + shape.mtp_layers)
    if layout.recompute == "full":
        executed += 2 * layers_matmul + attention / 3
    elif layout.recompute == "selective":
        if explicit:
            executed += attention / 3
        if shape.mla:
            ups = sum(i * o for name, i, o in shape.attention_matrices() if name in ("q_up", "kv_up"))
            executed += 2 * ups * (shape.n_layers + shape.mtp_layers) * shape.scale
    return model * tokens, executed * tokens


def _stages(p: int) -> list[int]:
    """The stages that can be the fullest or the slowest: the first two and the last (the middle ones hold the same
    layers as stage 1 or fewer, the remainder going to the earlier ones, and keep fewer micro-batches in flight)."""
    return sorted({0, 1, p - 1} & set(range(p)))


def peak_memory(shape: ModelShape, run: Run, layout: Layout) -> float:
    """Bytes the fullest GPU of `layout` holds (no timing: what a search checks first); ValueError if it cannot be."""
    sizes = check(shape, run, layout)
    return max(stage_memory(shape, run, layout, sizes, i)["total"] for i in _stages(layout.pp))


def usable_memory(run: Run) -> float:
    """What the device reports, less the driver's reservation (bytes)."""
    return float(run.node.gpu_spec.memory_bytes - memory.DRIVER_RESERVED)


def plan(shape: ModelShape, run: Run, layout: Layout) -> Plan:
    """Memory, communication, time, MFU and HFU of training `shape` as `run` says, laid out as `layout`."""
    c = run.node
    gpu = c.gpu_spec
    sizes = check(shape, run, layout)
    p, m, v = layout.pp, sizes.micro_batches, layout.virtual_stages
    which = _stages(p)
    stages = {i: stage_memory(shape, run, layout, sizes, i) for i in which}
    fullest = max(which, key=lambda i: stages[i]["total"])
    times = {i: stage_time(shape, run, layout, sizes, i) for i in which}
    slow = max(which, key=lambda i: times[i]["slot"])
    st = times[slow]
    slot = st["slot"]
    if layout.schedule == "dualpipe":
        bubble = schedule.dualpipe_bubble_slots(p) * st["forward"]
    else:
        bubble = schedule.bubble_slots(p, m, v, layout.group) * slot
    dp, step_exposed, mb_exposed = data_parallel(shape, run, layout, sizes, st, slow)
    pipeline_s = m * (slot + mb_exposed) + bubble
    r = estimate._recipe(run.recipe)
    dense, expert = stage_params(shape, layout, sizes, slow)
    shard = sizes.dp * layout.cp if layout.zero >= 1 else 1
    opt_params = dense / shard + expert / max(1, shard // layout.ep)
    # Adam on this GPU's shard: read the gradient, read and write the states and the master weights, write the model
    # weights; before it the gradients' norm for clipping reads them once (Megatron's clip_grad_norm_fp32), after it
    # the gradient buffer (the whole stage's, unless ZeRO-2/3 shard it) is zeroed for the next step (zero_grad_buffer)
    grads_held = dense + expert if layout.zero < 2 else opt_params
    optimizer_s = compute.memory_seconds(opt_params * (2 * r.optimizer + 2 * r.gradients + r.weights)
                                         + grads_held * r.gradients, gpu)
    comm = {"tp": {"bytes": m * st["tp_bytes"], "seconds": m * st["tp"], "exposed_s": m * st["tp_exposed"],
                   "calls": m * st["tp_calls"], "algorithm": st["tp_algorithm"]},
            "pp": {"bytes": 0.0, "seconds": m * st["p2p"], "exposed_s": m * st["p2p"], "calls": 2 * v * m * (p > 1),
                   "algorithm": "p2p" if p > 1 else "-"},
            "dp": dp}
    if p > 1:
        comm["pp"]["bytes"] = 2 * v * m * layout.micro_batch * run.seq_len / layout.cp * shape.d_model * 2 / (
            layout.tp if layout.sp else 1)
    if layout.cp > 1:
        comm["cp"] = {"bytes": m * st["cp_bytes"], "seconds": m * st["cp"], "exposed_s": m * st["cp"],
                      "calls": m * 2 * sizes.counts[slow], "algorithm": "ring"}
    if layout.ep > 1:
        comm["ep"] = {"bytes": m * st["ep_bytes"], "seconds": m * st["ep"], "exposed_s": m * st["ep_exposed"],
                      "calls": m * 4 * sizes.moe_counts[slow], "algorithm": "all-to-all"}
    compute_parts = {k: m * x for k, x in st["parts"].items() if x}
    # communication hidden behind compute is not free: NCCL runs a thread block per channel on the SMs it shares
    hidden = sum(max(0.0, c_["seconds"] - c_["exposed_s"]) for kind, c_ in comm.items() if kind in ("dp", "tp"))
    interference = hidden * collectives.CHANNELS / (gpu.sms or 132)
    if interference:
        compute_parts["SMs taken by overlapped collectives"] = interference
    step_s = pipeline_s + step_exposed + optimizer_s + interference
    model_flops, executed = flops_per_step(shape, run, layout)
    notes = _notes(shape, run, layout, gpu) + caveats(shape, run, model_flops / (run.gpus * gpu.peak_flops("bf16") * step_s))
    return Plan(shape, run, layout, sizes.dp, m, stages[fullest], "only" if p == 1 else f"{fullest} of {p}",
                usable_memory(run), comm, compute_parts, bubble, optimizer_s, step_s,
                model_flops, executed, gpu.peak_flops("bf16"), notes)


def caveats(shape: ModelShape, run: Run, mfu: float) -> list[str]:
    """What the published runs say about a planned MFU: the band the conformance table's spread puts around it, and a
    caveat when it is above every published run of that size (half to twice the parameters) on that GPU generation
    (lecture2.planning.reached)."""
    lo, _, hi = reached.BAND
    notes = [f"how far to trust it: the published runs of the conformance table ran at {1 / hi:.2f}-{1 / lo:.2f} x "
             f"their planned speed (docs/planning.md §8); at that spread this plan's MFU is {mfu / hi:.2f}-{mfu / lo:.2f}"]
    arch = run.node.gpu_spec.arch
    near = [r for r in reached.REACHED if r[1] == arch and 0.5 <= r[2] / shape.n_params <= 2]
    if not near:
        notes.append(f"no published run of {shape.n_params / 1e9:.3g}B parameters (within 2x) on {arch.title() or 'this GPU'} "
                     "in the conformance table to hold this plan to")
    else:
        best = max(near, key=lambda r: r[3])
        if mfu > best[3]:
            notes.append(f"caveat: planned MFU {mfu:.2f} is above every published run of this size on this GPU "
                         f"generation (best: {best[0]}, {best[3]:.2f} counted as here): treat it as a ceiling, not a "
                         f"forecast")
    return notes


def _notes(shape, run, layout, gpu) -> list[str]:
    notes = []
    if gpu.arch not in ("hopper", "ampere"):
        notes.append(f"{gpu.full_name}: no measured GEMM or attention curve here; Hopper's at this GPU's peak")
    if run.compute_efficiency is not None:
        notes.append(f"every GEMM at {run.compute_efficiency:.0%} of the peak (--compute-efficiency), not by shape")
    if layout.recompute == "selective":
        notes.append("selective recompute: Megatron-Core's recompute modules (the norms, the activation function, MLA's "
                     "up-projections; an explicit attention's core); a fused attention kernel already recomputes its "
                     "attention weights")
    return notes
