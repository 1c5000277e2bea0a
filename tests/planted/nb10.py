from lecture2.checks import HINTS

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
]
