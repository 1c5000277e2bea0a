from lecture2.checks import HINTS

import lecture2.exercises.pipeline  # noqa: F401  (registers the pipeline.* hints)
import lecture2.exercises.sharding  # noqa: F401  (registers the sharding.* hints)

from . import Planted

NOTEBOOK = "10_sharding.ipynb"

_RANK = '''
def bytes_per_rank(n_params, n_ranks, stage, recipe):
    table = {"fp32_adam": (4, 4, 8), "bf16_mixed_adam": (2, 2, MASTER), "sgd": (4, 4, 0), "sgd_momentum": (4, 4, 4),
             "bf16_sgd": (2, 2, 0)}
    if recipe not in table or stage not in (0, 1, 2, 3):
        raise ValueError(recipe)
    p, g, o = table[recipe]
    s = SHARD
    full = FULL
    return {"params": p * (s if stage >= PARAMS else full), "grads": g * (s if stage >= GRADS else full),
            "optimizer": o * (s if stage >= OPTIMIZER else full)}
'''


def _rank(params=3, grads=2, optimizer=1, shard="math.ceil(n_params / n_ranks)", master=12,
          full="n_params if stage == 0 else n_ranks * s"):
    return (_RANK.replace("PARAMS", str(params)).replace("GRADS", str(grads)).replace("OPTIMIZER", str(optimizer))
            .replace("SHARD", shard).replace("MASTER", str(master)).replace("FULL", full))


_COMM = '''
def comm_bytes_per_step(n_params, n_ranks, strategy, dtype_bytes, reduce_bytes=None):
    gathers = {"ddp": 0, "zero1": 1, "zero2": 1, "zero3": ZERO3}
    if strategy not in gathers:
        raise ValueError(strategy)
    r = REDUCE
    n = n_ranks
    if strategy == "ddp":
        return DDP * FACTOR * n_params * r
    s = SIZE
    return float(ZERO12 * FACTOR * s * (gathers[strategy] * dtype_bytes + r))
'''


def _comm(ddp=2, zero12=1, zero3=2, factor="(n - 1) / n", size="n * math.ceil(n_params / n)",
          reduce="reduce_bytes or dtype_bytes"):
    return (_COMM.replace("DDP", str(ddp)).replace("ZERO12", str(zero12)).replace("ZERO3", str(zero3))
            .replace("FACTOR", factor).replace("SIZE", size).replace("REDUCE", reduce))


_MIN = '''
def min_gpus(n_params, stage, gpu_memory_bytes, other_bytes=0):
    replicated = REPLICATED
    sharded = 16 * n_params - replicated
    room = gpu_memory_bytes - OTHER - replicated
    if sharded == 0:
        return 1 if room >= 0 else NONE
    if room <= 0:
        return NONE
    return max(1, ROUND(sharded / room))
'''


def _min(replicated="{0: 16, 1: 4, 2: 2, 3: 0}[stage] * n_params", other="other_bytes", none="None",
         rounding="math.ceil"):
    return (_MIN.replace("REPLICATED", replicated).replace("OTHER", other).replace("NONE", none)
            .replace("ROUND", rounding))


_TP = '''
def tp_block_bytes(tokens, d, d_ff, t, dtype_bytes, bias=False):
    matrices = (4 * d * d + 2 * d * d_ff) // MATRIX_T
    norms = 2 * d // NORM_T
    biases = ((3 * d + d_ff) // t + 2 * d // ROW_BIAS_T) if bias else 0
    return {"params": PER_RANK * dtype_bytes * (matrices + norms + biases),
            "allreduce": int(CALLS * tokens * d * dtype_bytes * FACTOR) * PER_RANK}
'''


def _tp(matrix_t="t", norm_t="1", row_bias_t="1", calls="4", factor="1", per_rank="1"):
    return (_TP.replace("MATRIX_T", matrix_t).replace("NORM_T", norm_t).replace("ROW_BIAS_T", row_bias_t)
            .replace("CALLS", calls).replace("FACTOR", factor).replace("PER_RANK", per_rank))


_PIPE = '''
def pipeline_schedule(p, m, v, stage):
    if v > 1 and m % p:
        raise ValueError(f"m={m} is not a multiple of p={p}")
    bubble = BUBBLE
    if v == 1:
        in_flight = PLAIN
    else:
        in_flight = INTERLEAVED
    return {"bubble": float(bubble), "in_flight": float(in_flight)}
'''


def _pipe(bubble="(p - 1) / (v * m + p - 1)", plain="min(p - stage, m)",
          interleaved="min(2 * (p - stage - 1) + (v - 1) * p + 1, v * m) / v"):
    return _PIPE.replace("BUBBLE", bubble).replace("PLAIN", plain).replace("INTERLEAVED", interleaved)


MISTAKES = [
    # exercise 1: bytes per rank
    Planted("ex10_bytes_per_rank", "ZeRO-2 shards the parameters too", _rank(params=2), HINTS["zero2_params"]),
    Planted("ex10_bytes_per_rank", "ZeRO-1 leaves the optimizer states whole", _rank(optimizer=2),
            HINTS["zero1_optimizer_whole"]),
    Planted("ex10_bytes_per_rank", "ZeRO-1 shards the gradients", _rank(grads=1), HINTS["zero1_grads"]),
    Planted("ex10_bytes_per_rank", "ZeRO-3 keeps the parameters whole", _rank(params=4), HINTS["zero3_all_parts"]),
    Planted("ex10_bytes_per_rank", "a slice rounded down (N // n)", _rank(shard="n_params // n_ranks"),
            HINTS["shard_ceil"]),
    Planted("ex10_bytes_per_rank", "a slice of N // n + 1 (one too many when n divides N)",
            _rank(shard="n_params // n_ranks + 1"), HINTS["sharding.shard_plus_one"], visible=True),
    Planted("ex10_bytes_per_rank", "the unsharded parts without the padding (N, not n ceil(N/n))",
            _rank(full="n_params"), HINTS["sharding.padded_buffer"], visible=True),
    Planted("ex10_bytes_per_rank", "no fp32 master weights in mixed precision", _rank(master=8),
            HINTS["master_weights_state"]),
    Planted("ex10_bytes_per_rank", "the total instead of the three parts", '''
def bytes_per_rank(n_params, n_ranks, stage, recipe):
    return 16 * n_params // n_ranks
''', HINTS["returns_dict"]),
    Planted("ex10_bytes_per_rank", "the calculator called", '''
def bytes_per_rank(n_params, n_ranks, stage, recipe):
    from lecture2 import estimate
    names = {"fp32_adam": "fp32 Adam", "bf16_mixed_adam": "bf16 mixed Adam", "sgd": "fp32 SGD",
             "sgd_momentum": "fp32 SGD momentum", "bf16_sgd": "bf16 SGD"}
    per = estimate.sharded_memory_bytes(n_params, n_ranks, ["none", "zero1", "zero2", "zero3"][stage], names[recipe])
    return {"params": math.ceil(per["weights"]), "grads": math.ceil(per["gradients"]),
            "optimizer": math.ceil(per["optimizer"])}
''', HINTS["sharding.instrument_off"], visible=True),
    Planted("ex10_bytes_per_rank", "no ValueError for an unknown stage", '''
def bytes_per_rank(n_params, n_ranks, stage, recipe):
    table = {"fp32_adam": (4, 4, 8), "bf16_mixed_adam": (2, 2, 12), "sgd": (4, 4, 0), "sgd_momentum": (4, 4, 4),
             "bf16_sgd": (2, 2, 0)}
    p, g, o = table[recipe]
    s = math.ceil(n_params / n_ranks)
    full = n_params if stage == 0 else n_ranks * s
    return {"params": p * (s if stage >= 3 else full), "grads": g * (s if stage >= 2 else full),
            "optimizer": o * (s if stage >= 1 else full)}
''', HINTS["raises_value_error"]),
    # exercise 2: communication per step
    Planted("ex10_comm_bytes", "the (n-1)/n factor dropped", _comm(factor="1"), HINTS["ring_n_minus_1"]),
    Planted("ex10_comm_bytes", "ZeRO-3's all-gather counted once", _comm(zero3=1), HINTS["allgather_twice"]),
    Planted("ex10_comm_bytes", "an all-reduce counted as one pass", _comm(ddp=1), HINTS["allreduce_two_phases"]),
    Planted("ex10_comm_bytes", "ZeRO-1/2 as all-reduce + broadcast (torch's ZeroRedundancyOptimizer)", '''
def comm_bytes_per_step(n_params, n_ranks, strategy, dtype_bytes, reduce_bytes=None):
    if strategy not in ("ddp", "zero1", "zero2", "zero3"):
        raise ValueError(strategy)
    n, r, p = n_ranks, reduce_bytes or dtype_bytes, dtype_bytes
    s = math.ceil(n_params / n)
    if strategy == "ddp":
        return 2 * (n - 1) / n * n_params * r
    if strategy == "zero3":
        return float((n - 1) * s * (2 * p + r))
    return 2 * (n - 1) / n * n_params * r + (n - 1) / n * n_params * p
''', HINTS["zero1_allreduce"]),
    Planted("ex10_comm_bytes", "all ranks together", _comm(factor="(n - 1)"), HINTS["comm_per_rank"]),
    Planted("ex10_comm_bytes", "bits for bytes", _comm(factor="8 * (n - 1) / n"), HINTS["bits_for_bytes"]),
    Planted("ex10_comm_bytes", "divided by the number of ranks twice", _comm(factor="(n - 1) / n / n"),
            HINTS["sharding.comm_divided_twice"], visible=True),
    Planted("ex10_comm_bytes", "the ZeRO collectives on N elements, not the padded buffer", _comm(size="n_params"),
            HINTS["sharding.padded_comm"], visible=True),
    Planted("ex10_comm_bytes", "the gradients reduced in the model dtype, reduce_bytes ignored",
            _comm(reduce="dtype_bytes"), HINTS["sharding.reduce_dtype"], visible=True),
    Planted("ex10_comm_bytes", "measured on a group instead of computed", '''
def comm_bytes_per_step(n_params, n_ranks, strategy, dtype_bytes, reduce_bytes=None):
    from lecture2 import distributed
    [r] = distributed.run([distributed.Job("textbook", stage={"ddp": 0, "zero1": 1, "zero2": 2, "zero3": 3}[strategy])], n_ranks)
    return float(sum(c["bytes"] for c in r.ranks[0]["collectives"]))
''', HINTS["sharding.instrument_off"]),
    # exercise 3: the fewest GPUs
    Planted("ex10_min_gpus", "ZeRO-1/2 divided entirely by n, as if ZeRO-3",
            _min(replicated="{0: 16, 1: 0, 2: 0, 3: 0}[stage] * n_params"), HINTS["replicated_floor"]),
    Planted("ex10_min_gpus", "plain DDP divided by n", _min(replicated="{0: 0, 1: 4, 2: 2, 3: 0}[stage] * n_params"),
            HINTS["sharding.ddp_floor"]),
    Planted("ex10_min_gpus", "other_bytes forgotten", _min(other="0"), HINTS["sharding.other_bytes"]),
    Planted("ex10_min_gpus", "rounded down", _min(rounding="math.floor"), HINTS["sharding.min_gpus_ceil"]),
    Planted("ex10_min_gpus", "infinity instead of None", _min(none="math.inf"), HINTS["sharding.none_not_inf"]),
    Planted("ex10_min_gpus", "a float", _min(rounding="float"), HINTS["returns_int"]),
    Planted("ex10_min_gpus", "the planner called", '''
def min_gpus(n_params, stage, gpu_memory_bytes, other_bytes=0):
    from lecture2 import estimate
    for n in range(1, 100_000):
        per = estimate.sharded_memory_bytes(n_params, n, ["none", "zero1", "zero2", "zero3"][stage])
        if per["total"] + other_bytes <= gpu_memory_bytes:
            return n
    return None
''', HINTS["sharding.instrument_off"]),
    # exercise 4: tensor parallelism
    Planted("ex10_tp_block_bytes", "the norms divided by t (they are replicated)", _tp(norm_t="t"),
            HINTS["sharding.tp_norms"], visible=True),
    Planted("ex10_tp_block_bytes", "the all-reduces of backward forgotten", _tp(calls="2"),
            HINTS["sharding.tp_backward"], visible=True),
    Planted("ex10_tp_block_bytes", "an all-reduce after every Linear, forward and backward", _tp(calls="8"),
            HINTS["sharding.tp_row_only"]),
    Planted("ex10_tp_block_bytes", "the ring's bytes sent instead of the tensors' size", _tp(factor="2 * (t - 1) / t"),
            HINTS["sharding.tp_tensor_size"]),
    Planted("ex10_tp_block_bytes", "the row-parallel biases divided by t", _tp(row_bias_t="t"),
            HINTS["sharding.tp_row_bias"]),
    Planted("ex10_tp_block_bytes", "the matrices not divided", _tp(matrix_t="1"), HINTS["sharding.tp_unsharded"]),
    Planted("ex10_tp_block_bytes", "all ranks together", _tp(per_rank="t"), HINTS["sharding.tp_per_rank"]),
    Planted("ex10_tp_block_bytes", "the planner called", '''
def tp_block_bytes(tokens, d, d_ff, t, dtype_bytes, bias=False):
    from lecture2 import planner
    shape = planner.ModelShape("x", 1, d, t, d_ff, 1, ffn="gelu")
    return {"params": int(dtype_bytes * (shape.layer_matrix_params() / t + 2 * d)), "allreduce": 4 * tokens * d * dtype_bytes}
''', HINTS["sharding.instrument_off"]),
    # exercise 5: the pipeline schedule
    Planted("ex10_pipeline_schedule", "the bubble over the compute time, not over the pipeline's",
            _pipe(bubble="(p - 1) / (v * m)"), HINTS["pipeline.bubble_over_compute"], visible=True),
    Planted("ex10_pipeline_schedule", "the bubble without the virtual stages", _pipe(bubble="(p - 1) / (m + p - 1)"),
            HINTS["pipeline.bubble_no_v"], visible=True),
    Planted("ex10_pipeline_schedule", "the bubble's slots in chunks, the pipeline's in micro-batches",
            _pipe(bubble="(p - 1) / v / (m + p - 1)"), HINTS["pipeline.bubble_units"]),
    Planted("ex10_pipeline_schedule", "1F1B's in-flight count under interleaving",
            _pipe(interleaved="min(p - stage, m)"), HINTS["pipeline.in_flight_plain"], visible=True),
    Planted("ex10_pipeline_schedule", "the warm-up not capped by the micro-batches there are",
            _pipe(plain="p - stage", interleaved="(2 * (p - stage - 1) + (v - 1) * p + 1) / v"),
            HINTS["pipeline.in_flight_uncapped"], visible=True),
    Planted("ex10_pipeline_schedule", "chunks counted instead of micro-batches' worth",
            _pipe(interleaved="min(2 * (p - stage - 1) + (v - 1) * p + 1, v * m)"),
            HINTS["pipeline.in_flight_chunks"], visible=True),
    Planted("ex10_pipeline_schedule", "stages counted from 1",
            _pipe(plain="min(p - stage + 1, m)", interleaved="min(2 * (p - stage) + (v - 1) * p + 1, v * m) / v"),
            HINTS["pipeline.stage_from_one"], visible=True),
    Planted("ex10_pipeline_schedule", "the interleaved warm-up used for plain 1F1B too",
            _pipe(plain="min(2 * (p - stage - 1) + 1, m)"), HINTS["pipeline.interleaved_at_v1"], visible=True),
    Planted("ex10_pipeline_schedule", "the planner called", '''
def pipeline_schedule(p, m, v, stage):
    from lecture2 import planner
    return {"bubble": planner.bubble_fraction(p, m, v),
            "in_flight": planner.in_flight_chunks(stage, p, m, v) / v}
''', HINTS["pipeline.instrument_off"], visible=True),
    Planted("ex10_pipeline_schedule", "a tuple instead of the dict", '''
def pipeline_schedule(p, m, v, stage):
    return ((p - 1) / (v * m + p - 1), min(p - stage, m))
''', "dict"),
    Planted("ex10_pipeline_schedule", "no ValueError when m is not a multiple of p", '''
def pipeline_schedule(p, m, v, stage):
    bubble = (p - 1) / (v * m + p - 1)
    in_flight = min(p - stage, m) if v == 1 else min(2 * (p - stage - 1) + (v - 1) * p + 1, v * m) / v
    return {"bubble": float(bubble), "in_flight": float(in_flight)}
''', HINTS["raises_value_error"]),
]
