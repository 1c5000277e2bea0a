from lecture2.checks import HINTS

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
    return {"params": p * (s if stage >= PARAMS else n_params), "grads": g * (s if stage >= GRADS else n_params),
            "optimizer": o * (s if stage >= OPTIMIZER else n_params)}
'''


def _rank(params=3, grads=2, optimizer=1, shard="math.ceil(n_params / n_ranks)", master=12):
    return (_RANK.replace("PARAMS", str(params)).replace("GRADS", str(grads)).replace("OPTIMIZER", str(optimizer))
            .replace("SHARD", shard).replace("MASTER", str(master)))


_COMM = '''
def comm_bytes_per_step(n_params, n_ranks, strategy, dtype_bytes):
    passes = {"ddp": DDP, "zero1": ZERO12, "zero2": ZERO12, "zero3": ZERO3}
    if strategy not in passes:
        raise ValueError(strategy)
    return passes[strategy] * FACTOR * n_params * dtype_bytes
'''


def _comm(ddp=2, zero12=2, zero3=3, factor="(n_ranks - 1) / n_ranks"):
    return (_COMM.replace("DDP", str(ddp)).replace("ZERO12", str(zero12)).replace("ZERO3", str(zero3))
            .replace("FACTOR", factor))


_MIN = '''
def min_gpus(n_params, stage, gpu_memory_bytes, other_bytes=0):
    replicated = REPLICATED
    sharded = 16 * n_params - replicated
    room = gpu_memory_bytes - OTHER - replicated
    if sharded == 0:
        return 1 if room >= 0 else None
    if room <= 0:
        return NONE
    return max(1, ROUND(sharded / room))
'''


def _min(replicated="{0: 16, 1: 4, 2: 2, 3: 0}[stage] * n_params", other="other_bytes", none="None",
         rounding="math.ceil"):
    return (_MIN.replace("REPLICATED", replicated).replace("OTHER", other).replace("NONE", none)
            .replace("ROUND", rounding))


MISTAKES = [
    # exercise 1: bytes per rank
    Planted("ex10_bytes_per_rank", "ZeRO-2 shards the parameters too", _rank(params=2), HINTS["zero2_params"]),
    Planted("ex10_bytes_per_rank", "ZeRO-1 leaves the optimizer states whole", _rank(optimizer=2),
            HINTS["zero1_optimizer_whole"]),
    Planted("ex10_bytes_per_rank", "ZeRO-1 shards the gradients", _rank(grads=1), HINTS["zero1_grads"]),
    Planted("ex10_bytes_per_rank", "ZeRO-3 keeps the parameters whole", _rank(params=4), HINTS["zero3_all_parts"]),
    Planted("ex10_bytes_per_rank", "a slice rounded down (N // n)", _rank(shard="n_params // n_ranks"),
            HINTS["shard_ceil"]),
    Planted("ex10_bytes_per_rank", "no fp32 master weights in mixed precision", _rank(master=8),
            HINTS["master_weights_state"]),
    Planted("ex10_bytes_per_rank", "the total instead of the three parts", '''
def bytes_per_rank(n_params, n_ranks, stage, recipe):
    return 16 * n_params // n_ranks
''', "应返回 dict"),
    Planted("ex10_bytes_per_rank", "the calculator called", '''
def bytes_per_rank(n_params, n_ranks, stage, recipe):
    from lecture2 import estimate
    names = {"fp32_adam": "fp32 Adam", "bf16_mixed_adam": "bf16 mixed Adam", "sgd": "fp32 SGD",
             "sgd_momentum": "fp32 SGD momentum", "bf16_sgd": "bf16 SGD"}
    per = estimate.sharded_memory_bytes(n_params, n_ranks, ["none", "zero1", "zero2", "zero3"][stage], names[recipe])
    return {"params": math.ceil(per["weights"]), "grads": math.ceil(per["gradients"]),
            "optimizer": math.ceil(per["optimizer"])}
''', "不能调用 lecture2.estimate"),
    Planted("ex10_bytes_per_rank", "no ValueError for an unknown stage", '''
def bytes_per_rank(n_params, n_ranks, stage, recipe):
    table = {"fp32_adam": (4, 4, 8), "bf16_mixed_adam": (2, 2, 12), "sgd": (4, 4, 0), "sgd_momentum": (4, 4, 4),
             "bf16_sgd": (2, 2, 0)}
    p, g, o = table[recipe]
    s = math.ceil(n_params / n_ranks)
    return {"params": p * (s if stage >= 3 else n_params), "grads": g * (s if stage >= 2 else n_params),
            "optimizer": o * (s if stage >= 1 else n_params)}
''', "raise ValueError"),
    # exercise 2: communication per step
    Planted("ex10_comm_bytes", "the (n-1)/n factor dropped", _comm(factor="1"), HINTS["ring_n_minus_1"]),
    Planted("ex10_comm_bytes", "ZeRO-3's all-gather counted once", _comm(zero3=2), HINTS["allgather_twice"]),
    Planted("ex10_comm_bytes", "an all-reduce counted as one pass", _comm(ddp=1), HINTS["allreduce_two_phases"]),
    Planted("ex10_comm_bytes", "ZeRO-1/2 as all-reduce + broadcast (torch's ZeroRedundancyOptimizer)", _comm(zero12=3),
            HINTS["zero1_allreduce"]),
    Planted("ex10_comm_bytes", "all ranks together", _comm(factor="(n_ranks - 1)"), HINTS["comm_per_rank"]),
    Planted("ex10_comm_bytes", "bits for bytes", _comm(factor="8 * (n_ranks - 1) / n_ranks"), HINTS["bits_for_bytes"]),
    Planted("ex10_comm_bytes", "measured on a group instead of computed", '''
def comm_bytes_per_step(n_params, n_ranks, strategy, dtype_bytes):
    from lecture2 import distributed
    [r] = distributed.run([distributed.Job("textbook", stage={"ddp": 0, "zero1": 1, "zero2": 2, "zero3": 3}[strategy])], n_ranks)
    return float(sum(c["bytes"] for c in r.ranks[0]["collectives"]))
''', "不能调用 lecture2.estimate / distributed / zero"),
    # exercise 3: the fewest GPUs
    Planted("ex10_min_gpus", "ZeRO-1/2 divided entirely by n, as if ZeRO-3",
            _min(replicated="{0: 16, 1: 0, 2: 0, 3: 0}[stage] * n_params"), HINTS["replicated_floor"]),
    Planted("ex10_min_gpus", "plain DDP divided by n", _min(replicated="{0: 0, 1: 4, 2: 2, 3: 0}[stage] * n_params"),
            "stage 0"),
    Planted("ex10_min_gpus", "other_bytes forgotten", _min(other="0"), "other_bytes"),
    Planted("ex10_min_gpus", "rounded down", _min(rounding="math.floor"), "向上取整"),
    Planted("ex10_min_gpus", "infinity instead of None", _min(none="math.inf"), "应返回 None"),
    Planted("ex10_min_gpus", "a float", _min(rounding="float"), "应返回 int"),
]
