from lecture2.checks import HINTS

import lecture2.exercises.pipeline  # noqa: F401  (registers the pipeline.* hints)
import lecture2.exercises.sharding  # noqa: F401  (registers the sharding.* hints)

from . import Planted

NOTEBOOK = "11_parallel_plans.ipynb"

_HIDE = '''
def tokens_to_hide(strategy, n_ranks, flops_per_s, bus_bytes_per_s, dtype_bytes=2, reduce_bytes=None):
    gathers = {"ddp": 0, "zero1": 1, "zero2": 1, "zero3": ZERO3}
    if strategy not in gathers:
        raise ValueError(strategy)
    n, r = n_ranks, REDUCE
    gradients = DDP * r if strategy == "ddp" else r
    sent = FACTOR * (gradients + gathers[strategy] * dtype_bytes)
    return PER_GPU * sent * flops_per_s / (FLOPS * bus_bytes_per_s)
'''


def _hide(zero3="2", reduce="reduce_bytes or dtype_bytes", ddp="2", factor="(n - 1) / n", per_gpu="1", flops="6"):
    return (_HIDE.replace("ZERO3", zero3).replace("REDUCE", reduce).replace("DDP", ddp).replace("FACTOR", factor)
            .replace("PER_GPU", per_gpu).replace("FLOPS", flops))


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
    # exercise 1: tokens per GPU that hide the data-parallel traffic
    Planted("ex11_tokens_to_hide", "2N FLOPs per token (the forward only)", _hide(flops="2"), HINTS["forward_only"],
            visible=True),
    Planted("ex11_tokens_to_hide", "the (n-1)/n factor dropped", _hide(factor="1"), HINTS["ring_n_minus_1"],
            visible=True),
    Planted("ex11_tokens_to_hide", "ZeRO-3's all-gather counted once", _hide(zero3="1"), HINTS["allgather_twice"],
            visible=True),
    Planted("ex11_tokens_to_hide", "DDP's all-reduce counted as one pass", _hide(ddp="1"), HINTS["allreduce_two_phases"],
            visible=True),
    Planted("ex11_tokens_to_hide", "the gradients in the model dtype, reduce_bytes ignored", _hide(reduce="dtype_bytes"),
            HINTS["sharding.reduce_dtype"], visible=True),
    Planted("ex11_tokens_to_hide", "the tokens of all the ranks together", _hide(per_gpu="n"), HINTS["sharding.hide_per_gpu"],
            visible=True),
    Planted("ex11_tokens_to_hide", "bits for bytes", _hide(per_gpu="8"), HINTS["bits_for_bytes"]),
    Planted("ex11_tokens_to_hide", "the ratio upside down", '''
def tokens_to_hide(strategy, n_ranks, flops_per_s, bus_bytes_per_s, dtype_bytes=2, reduce_bytes=None):
    gathers = {"ddp": 0, "zero1": 1, "zero2": 1, "zero3": 2}
    if strategy not in gathers:
        raise ValueError(strategy)
    n, r = n_ranks, reduce_bytes or dtype_bytes
    sent = (n - 1) / n * ((2 * r if strategy == "ddp" else r) + gathers[strategy] * dtype_bytes)
    return 6 * bus_bytes_per_s / (sent * flops_per_s) if sent else 0.0
''', HINTS["sharding.hide_ratio"], visible=True),
    Planted("ex11_tokens_to_hide", "ZeRO-1/2 as torch's ZeroRedundancyOptimizer (all-reduce + broadcast)", '''
def tokens_to_hide(strategy, n_ranks, flops_per_s, bus_bytes_per_s, dtype_bytes=2, reduce_bytes=None):
    if strategy not in ("ddp", "zero1", "zero2", "zero3"):
        raise ValueError(strategy)
    n, r, p = n_ranks, reduce_bytes or dtype_bytes, dtype_bytes
    sent = (n - 1) / n * {"ddp": 2 * r, "zero1": 2 * r + p, "zero2": 2 * r + p, "zero3": 2 * p + r}[strategy]
    return sent * flops_per_s / (6 * bus_bytes_per_s)
''', HINTS["zero1_allreduce"], visible=True),
    Planted("ex11_tokens_to_hide", "the network model called", '''
def tokens_to_hide(strategy, n_ranks, flops_per_s, bus_bytes_per_s, dtype_bytes=2, reduce_bytes=None):
    from lecture2 import network
    r = reduce_bytes or dtype_bytes
    ops = {"ddp": [("all_reduce", r)], "zero1": [("reduce_scatter", r), ("all_gather", dtype_bytes)],
           "zero2": [("reduce_scatter", r), ("all_gather", dtype_bytes)],
           "zero3": [("reduce_scatter", r), ("all_gather", dtype_bytes), ("all_gather", dtype_bytes)]}[strategy]
    sent = sum(network.bus_factor(op, n_ranks) * b for op, b in ops)
    return sent * flops_per_s / (6 * bus_bytes_per_s)
''', HINTS["sharding.instrument_off"], visible=True),
    Planted("ex11_tokens_to_hide", "no ValueError for an unknown strategy", '''
def tokens_to_hide(strategy, n_ranks, flops_per_s, bus_bytes_per_s, dtype_bytes=2, reduce_bytes=None):
    n, r = n_ranks, reduce_bytes or dtype_bytes
    gathers = {"ddp": 0, "zero1": 1, "zero2": 1, "zero3": 2}.get(strategy, 0)
    sent = (n - 1) / n * ((2 * r if strategy == "ddp" else r) + gathers * dtype_bytes)
    return sent * flops_per_s / (6 * bus_bytes_per_s)
''', HINTS["raises_value_error"]),
    # exercise 2: the pipeline schedule
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
