"""Notebook 10's check cases: bytes_per_rank, comm_bytes_per_step, min_gpus, tp_block_bytes.

Every answer is reached through lecture2.answers (plain data both ways), always through one instrument:

    without_instruments(fn, *args)   fn(*args) with lecture2's calculator and engines switched off beside the answer
                                     (estimate, planner, network, parallel, distributed, zero: calling them raises),
                                     what it returns; what it raises goes to the check

Expected values are computed in the judge: reference numbers the test cell passes in (with their sources; for
the drawn cases, the formula written in the cell's hidden region), and, for the live cases, what a live
torch.distributed group (`LiveGroup`, started here when a check first needs it, never in the student's process)
measures: the bytes every rank of lecture2.zero holds between steps, the
collectives one step issues (counted by wrapping torch.distributed), the parameter bytes and the all-reduces of a
TransformerBlock split Megatron-style by lecture2.parallel. Units: bytes.
"""
from __future__ import annotations

import math
import random

from lecture2 import answers, checks, distributed

SMALL_GPT = distributed.SMALL_GPT  # the course's small GPT, the model of the live cases (N = 33,952)
# notebook 06's recipes as exercise 1 states them: (params, grads, optimizer states) bytes per parameter
RECIPE_BYTES = {"fp32_adam": (4, 4, 8), "bf16_mixed_adam": (2, 2, 12), "sgd": (4, 4, 0), "sgd_momentum": (4, 4, 4),
                "bf16_sgd": (2, 2, 0)}
PARTS = ("params", "grads", "optimizer")
STRATEGIES = {"ddp": 0, "zero1": 1, "zero2": 2, "zero3": 3}  # exercise 2's strategies -> lecture2.zero's stage
INSTRUMENTS = answers.CALCULATOR + answers.ENGINE_MODULES
OFF = answers.OFF  # what an instrument raises while an answer runs

checks.register_hints({
    "sharding.instrument_off": "这个练习要你自己写公式：检查调用你的函数时，课程的计算器和引擎 (lecture2.estimate、planner、"
                               "planning、network、parallel、distributed、zero) 都被关掉了，调用它们会出错。",
    "sharding.padded_buffer": "ZeRO-1/2/3 的平坦缓冲区补零到 n·⌈N/n⌉ 个元素 (每个 rank 一样大的一片)：没切开的部分 "
                              "(ZeRO-1 的参数和梯度、ZeRO-2 的参数) 存的是整个补零后的缓冲区，n·⌈N/n⌉ 个，不是 N 个。"
                              "普通数据并行 (stage 0) 不补零。",
    "sharding.padded_comm": "ZeRO-1/2/3 的集合通信作用在补零后的平坦缓冲区上：S = n·⌈N/n⌉ 个元素，每次 (n-1)/n·S = "
                            "(n-1)·⌈N/n⌉ 个元素；只有 DDP 的 all-reduce 作用在 N 个元素上。",
    "sharding.reduce_dtype": "梯度的集合通信 (all-reduce、reduce-scatter) 在 reduce_bytes (reduce dtype) 上做，参数的 "
                             "all-gather 在 dtype_bytes 上做：Megatron 和 torchtitan 把 bf16 模型的梯度放在 fp32 里规约。",
    "sharding.shard_plus_one": "N // n + 1 只在 N 不能被 n 整除时等于 ⌈N/n⌉：能整除时每片多了一个元素。用 math.ceil(N / n) "
                               "或 -(-N // n) 向上取整。",
    "sharding.comm_divided_twice": "差了 n 倍 (少了)：(n-1)/n · S 已经是每个 rank 发送的那一份，不要再除以 rank 的个数 n。",
    "sharding.min_gpus_ceil": "GPU 个数要向上取整 (math.ceil)：少一块就放不下。",
    "sharding.other_bytes": "other_bytes (激活值等) 也占每块 GPU 的显存：没切的部分 + 切开的部分 / n + other_bytes ≤ 显存。",
    "sharding.ddp_floor": "普通数据并行 (stage 0) 什么都不切：每块 GPU 都存完整的 16N，加卡没用；放不下就返回 None。",
    "sharding.none_not_inf": "放不下时返回 None (不是 math.inf、0 或 -1)：调用者要能一眼看出\"多少块都不够\"。",
    "sharding.tp_norms": "两个 RMSNorm 的 weight 不切：它们作用在完整的 d 维向量上，每个 rank 都存完整的一份 (2·d 个参数)。"
                         "只有 column/row-parallel 的矩阵除以 t。",
    "sharding.tp_backward": "反向也有两次 all-reduce：column-parallel 层 (QKV、up) 的输入梯度在每个 rank 上只是部分和，"
                            "要 all-reduce 之后才能传给 RMSNorm (Megatron 的 f 算子)。每个 block 每一步共 4 次。",
    "sharding.tp_row_only": "只有 row-parallel 层 (proj、down) 的输出要 all-reduce；column-parallel 层 (QKV、up) 的输出本来就是"
                            "各 rank 自己那几列，接着给本 rank 的 row-parallel 层用，不通信。前向 2 次，反向 2 次。",
    "sharding.tp_tensor_size": "这里要的是被 all-reduce 的张量本身的字节数 S (每次 tokens·d·dtype_bytes)，不是 ring 算法里"
                               "每个 rank 发送的 2(t-1)/t·S。",
    "sharding.tp_row_bias": "row-parallel 层 (proj、down) 的 bias 不切：它在 all-reduce 之后加一次，每个 rank 存完整的 d 个；"
                            "column-parallel 层 (QKV 的 3d、up 的 d_ff) 的 bias 才切成 t 份。",
    "sharding.tp_unsharded": "张量并行把每层的四个矩阵切成 t 份：QKV 和 up 按输出 (行) 切，proj 和 down 按输入 (列) 切，"
                             "每个 rank 存 1/t。",
    "sharding.tp_per_rank": "要的是一个 rank 的字节数：每个 rank 存自己的 1/t，all-reduce 的张量每个 rank 各有一份完整的 S，"
                            "不要乘以 t。",
})


# ---- the instrument: the answer with lecture2's calculator and engines switched off


@answers.observer
def without_instruments(fn, *args):
    """fn(*args) with lecture2's calculator and engines switched off (answers.instruments_off): what it returns
    (what it raises goes to the check)."""
    with answers.instruments_off(INSTRUMENTS):
        return fn(*args)


def _answer(fn, *args, what: str):
    """fn(*args) beside the answer, the instruments off; an answer that called one of them draws its hint."""
    __tracebackhide__ = True
    try:
        return answers.observe(without_instruments, fn, *args)
    except RuntimeError as err:
        if OFF not in str(err):
            raise
        checks.fail(f"{what} 出错 (raised) {answers.quoted(err, 140)}", "sharding.instrument_off")


def _raises_value_error(fn, *args, what: str) -> bool:
    __tracebackhide__ = True
    try:
        _answer(fn, *args, what=what)
    except ValueError:
        return True
    return False


# ---- the live group (in the judge)


class LiveGroup:
    """A live torch.distributed group of `n_ranks` processes for one test cell: this process's warm group of that
    size (lecture2.distributed.warm_group: started once, kept between the cells and checks of one run) taken when a
    check first runs jobs on it and handed back when the `with` block exits; a group that failed is not handed
    back, and the next cell starts a fresh one. Only lecture2's code runs in the ranks, on the configs the checks
    send. A group that failed to start is not started again: later checks get the same error at once (no second
    timeout)."""

    def __init__(self, n_ranks: int, timeout: float = 100.0):
        self.n_ranks, self.timeout = n_ranks, timeout
        self._group: distributed.Group | None = None
        self._start_error: BaseException | None = None

    def __enter__(self) -> LiveGroup:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        group, self._group = self._group, None
        if group is not None:
            distributed.pool.release(group)

    def run(self, jobs: list[distributed.Job]) -> list[distributed.JobResult]:
        """Run `jobs` on the group (taking it the first time); one JobResult per job."""
        if self._start_error is not None:
            raise self._start_error
        if self._group is None:
            try:
                self._group = distributed.pool.acquire(self.n_ranks, timeout=self.timeout)
            except Exception as err:
                self._start_error = err
                raise
        return self._group.run(jobs)


def drawn_gpt(rng: random.Random) -> dict:
    """A small GPT config drawn with `rng`: N need not divide by the ranks (the slices are padded)."""
    d = rng.choice([12, 24, 36, 48])
    return {"vocab_size": rng.randint(20, 300), "block_size": 16, "n_layer": rng.randint(1, 3),
            "n_head": rng.choice([h for h in (1, 2, 3, 4) if d % h == 0]), "d_model": d}


# ---- exercise 1: bytes per rank


def _padded(n_params: int, n_ranks: int, stage: int) -> int:
    """Elements of the flat buffer: N for plain data parallelism, n·ceil(N/n) for the ZeRO stages."""
    return n_params if stage == 0 else n_ranks * math.ceil(n_params / n_ranks)


def rank_case(fn, n_params: int, n_ranks: int, stage: int, recipe: str, want, what: str | None = None) -> None:
    """fn(n_params, n_ranks, stage, recipe) against `want` bytes per rank, (params, grads, optimizer) or a dict with
    these keys, part by part, each an exact int."""
    __tracebackhide__ = True
    want = dict(want) if isinstance(want, dict) else dict(zip(PARTS, want))
    what = what or f"bytes_per_rank({n_params:,}, {n_ranks}, {stage}, '{recipe}')"
    got = _answer(fn, n_params, n_ranks, stage, recipe, what=what)
    checks.expect_type(got, dict, what=what)
    checks.expect(set(got) == set(PARTS), f"{what}: 应返回 {{'params', 'grads', 'optimizer'}} 三个键，得到 {sorted(got)}")
    s, full = math.ceil(n_params / n_ranks), _padded(n_params, n_ranks, stage)
    for part, per in zip(PARTS, RECIPE_BYTES[recipe]):
        wrong = []
        if part == "params" and stage == 2:
            wrong.append(checks.mistake("zero2_params", per * s))
        if part == "optimizer" and stage == 1:
            wrong.append(checks.mistake("zero1_optimizer_whole", per * n_params))
        if part == "grads" and stage == 1:
            wrong.append(checks.mistake("zero1_grads", per * s))
        if stage == 3:
            wrong.append(checks.mistake("zero3_all_parts", per * n_params))
        if part == "optimizer" and recipe == "bf16_mixed_adam":
            wrong += [checks.mistake("master_weights_state", 8 * s), checks.mistake("master_weights_state", 8 * n_params)]
        if want[part] == per * full and full != n_params:  # an unsharded part of a ZeRO stage: the padded buffer
            wrong.append(checks.mistake("sharding.padded_buffer", per * n_params))
            wrong.append(checks.mistake("shard_ceil", per * n_ranks * (n_params // n_ranks)))  # slices rounded down
        if n_ranks > 1 and want[part] == per * s and s * n_ranks != n_params:  # a sharded part: ceil(N / n), padded
            wrong.append(checks.mistake("shard_ceil", per * (n_params // n_ranks)))
        if n_ranks > 1 and n_params % n_ranks == 0 and stage > 0:  # ceil(N / n) written N // n + 1: one too many
            if want[part] == per * s:
                wrong.append(checks.mistake("sharding.shard_plus_one", per * (s + 1)))
            elif want[part] == per * full:
                wrong.append(checks.mistake("sharding.shard_plus_one", per * n_ranks * (s + 1)))
        checks.expect_type(got[part], int, what=f"{what}['{part}']")
        checks.expect_equal(got[part], want[part], what=f"{what}['{part}']", mistakes=wrong)


def rank_total(fn, n_params: int, n_ranks: int, stage: int, recipe: str, want: int) -> None:
    """The three parts of fn(n_params, n_ranks, stage, recipe) added up, against `want` bytes per rank."""
    __tracebackhide__ = True
    what = f"bytes_per_rank({n_params:,}, {n_ranks}, {stage}, '{recipe}'): total bytes per GPU"
    got = _answer(fn, n_params, n_ranks, stage, recipe, what=what)
    checks.expect_type(got, dict, what=what)
    checks.expect(all(type(v) is int for v in got.values()), f"{what}: 每一项都应是 int，得到 {checks.shown(got)}")
    checks.expect_equal(sum(got.values()), want, what=what)


def rank_totals_per_param(fn, n_ranks: int, want: list[float], recipe: str = "bf16_mixed_adam") -> None:
    """Bytes per parameter at stages 0-3 (all three parts, N = 1000 n parameters: no padding) against `want`."""
    __tracebackhide__ = True
    n_params = n_ranks * 1000
    totals = []
    for stage in range(4):
        got = _answer(fn, n_params, n_ranks, stage, recipe, what=f"bytes_per_rank({n_params}, {n_ranks}, {stage})")
        checks.expect_type(got, dict, what=f"bytes_per_rank({n_params}, {n_ranks}, {stage}, '{recipe}')")
        totals.append(sum(got.values()) / n_params)
    checks.expect(totals == want, f"n={n_ranks}, '{recipe}': stage 0-3 每参数字节应是 {want}，得到 {totals}")


def rank_rejects(fn, *args) -> None:
    """fn(*args) (an unknown stage or recipe) must raise ValueError."""
    __tracebackhide__ = True
    if not _raises_value_error(fn, *args, what=f"bytes_per_rank{args}"):
        checks.fail(f"bytes_per_rank{args} 应该 raise ValueError", "raises_value_error")


def rank_live(fn, live: LiveGroup, cases) -> None:
    """Each case (model config, ranks, stage, recipe) trained by lecture2.zero on the live group; fn against the
    bytes every rank holds between steps, measured."""
    __tracebackhide__ = True
    jobs = [distributed.Job("textbook", stage=s, recipe=r, n_ranks=n, model=m, seed=i)
            for i, (m, n, s, r) in enumerate(cases)]
    for res, (_, n, s, r) in zip(live.run(jobs), cases):
        n_params = res.ranks[0]["n_params"]
        for rank, report in enumerate(res.ranks):
            rank_case(fn, n_params, n, s, r, {p: report["held"][p] for p in PARTS},
                      what=f"bytes_per_rank({n_params:,}, {n}, {s}, '{r}')  vs rank {rank} measured")


# ---- exercise 2: bytes sent per step


def ring_sent(calls: list[dict], n_ranks: int) -> float:
    """Bytes each rank sends for one step's counted collectives, by the ring algorithms of section 2's table:
    all-reduce 2(n-1)/n S, the others (n-1)/n S (S: the bytes of the whole tensor)."""
    return sum((2 if c["op"] == "all_reduce" else 1) * (n_ranks - 1) / n_ranks * c["bytes"] for c in calls)


def comm_case(fn, n_params: int, n_ranks: int, strategy: str, dtype_bytes: int, want: float,
              what: str | None = None, reduce_bytes: int | None = None) -> None:
    """fn(n_params, n_ranks, strategy, dtype_bytes[, reduce_bytes]) against `want` bytes sent per rank (rtol 1e-9),
    a float."""
    __tracebackhide__ = True
    args = (n_params, n_ranks, strategy, dtype_bytes) + (() if reduce_bytes is None else (reduce_bytes,))
    what = what or f"comm_bytes_per_step({', '.join(repr(a) if isinstance(a, str) else f'{a:,}' for a in args)})"
    got = _answer(fn, *args, what=what)
    n, p, r = n_ranks, dtype_bytes, reduce_bytes or dtype_bytes
    s = math.ceil(n_params / n)
    psi, padded = n_params * p, n * s * p
    wrong = [
        checks.mistake("ring_n_minus_1", want * n / (n - 1) if n > 1 else -1.0),
        checks.mistake("comm_per_rank", want * n),
        checks.mistake("bits_for_bytes", want * 8),
        checks.mistake("sharding.comm_divided_twice", want / n),
    ]
    if r != p:  # the gradients' collectives in the model dtype (before the ZeRO-3 mistake: for r = 2p both give
        # the same number, and a case that names reduce_bytes is about it)
        wrong.append(checks.mistake("sharding.reduce_dtype",
                                    want * p / r if strategy == "ddp" else want - (n - 1) * s * (r - p)))
    if strategy == "zero3":
        wrong.append(checks.mistake("allgather_twice", (n - 1) * s * (p + r)))
    if strategy == "ddp":
        wrong.append(checks.mistake("allreduce_two_phases", (n - 1) / n * n_params * r))
    if strategy in ("zero1", "zero2"):
        wrong.append(checks.mistake("zero1_allreduce", 2 * (n - 1) / n * n_params * r + (n - 1) / n * psi))
    if strategy != "ddp" and padded != psi:  # the collectives on N elements instead of the padded buffer
        wrong.append(checks.mistake("sharding.padded_comm",
                                    (n - 1) / n * n_params * ((2 if strategy == "zero3" else 1) * p + r)))
    checks.expect_close(got, want, rtol=1e-9, atol=1e-6, what=what, mistakes=wrong)
    checks.expect_type(got, float, what=what)


def comm_one_rank(fn, strategy: str) -> None:
    """fn(1e9, 1, strategy, 2): a single rank sends nothing, exactly 0."""
    __tracebackhide__ = True
    what = f"comm_bytes_per_step(1e9, 1, '{strategy}', 2)"
    checks.expect_close(_answer(fn, 10**9, 1, strategy, 2, what=what), 0.0, atol=0.0, rtol=0.0, what=what)


def comm_rejects(fn, strategy: str) -> None:
    """fn(1000, 2, strategy, 2) for an unknown strategy must raise ValueError."""
    __tracebackhide__ = True
    if not _raises_value_error(fn, 1000, 2, strategy, 2, what=f"comm_bytes_per_step(..., {strategy!r})"):
        checks.fail(f"comm_bytes_per_step(..., strategy={strategy!r}) 应该 raise ValueError", "raises_value_error")


def comm_live(fn, live: LiveGroup, cases) -> None:
    """Each case (model config, ranks, strategy, recipe[, "float32"]) trained by lecture2.zero on the live group; fn
    against the bytes each rank sends for the collectives its last step issued (counted, converted by the ring
    model). The parameters are gathered in the model's dtype (2 bytes for the bf16 recipes, else 4), the gradients
    reduced in it or in fp32."""
    __tracebackhide__ = True
    cases = [tuple(c) + (None,) * (5 - len(c)) for c in cases]
    jobs = [distributed.Job("textbook", stage=STRATEGIES[st], recipe=r, n_ranks=n, model=m, seed=i, reduce_dtype=red)
            for i, (m, n, st, r, red) in enumerate(cases)]
    for res, (_, n, st, r, red) in zip(live.run(jobs), cases):
        calls = res.ranks[0]["collectives"]
        checks.expect(all(rep["collectives"] == calls for rep in res.ranks), "每个 rank 发出的集合通信应当相同")
        n_params, dtype_bytes = res.ranks[0]["n_params"], 2 if r.startswith("bf16") else 4
        reduce_bytes = 4 if red == "float32" else None
        listing = ", ".join(f"{c['op']} {c['bytes']:,} B ({c['dtype']})" for c in calls)
        comm_case(fn, n_params, n, st, dtype_bytes, ring_sent(calls, n), reduce_bytes=reduce_bytes,
                  what=f"comm_bytes_per_step({n_params:,}, {n}, '{st}', {dtype_bytes}"
                       f"{'' if reduce_bytes is None else ', 4'})  vs the step's collectives [{listing}]")


# ---- exercise 3: the fewest GPUs


def min_gpus_case(fn, n_params: float, stage: int, memory: float, other: float, want: int | None,
                  what: str | None = None) -> None:
    """fn(n_params, stage, memory, other) against `want` GPUs (an exact int), or None where no number fits."""
    __tracebackhide__ = True
    what = what or f"min_gpus({n_params:.4g}, {stage}, {memory:.4g}, {other:.3g})"
    got = _answer(fn, n_params, stage, memory, other, what=what)
    if want is None:
        if got is None:
            return
        if got == math.inf or (type(got) in (int, float) and got <= 0):
            checks.fail(f"{what}: 多少块 GPU 都放不下，应返回 None，得到 {checks.shown(got)}", "sharding.none_not_inf")
        checks.fail(f"{what}: 多少块 GPU 都放不下，应返回 None，得到 {checks.shown(got)}",
                    "sharding.ddp_floor" if stage == 0 else "replicated_floor")
    checks.expect(got is not None, f"{what}: 应返回 {want}，得到 None")
    checks.expect_type(got, int, what=what)
    wrong = [checks.mistake("sharding.min_gpus_ceil", want - 1)]
    if stage in (1, 2):  # everything divided by n, as if ZeRO-3
        wrong.append(checks.mistake("replicated_floor", max(1, math.ceil(16 * n_params / (memory - other)))))
    if stage == 0 and want == 1:  # DDP divided by n: more than one GPU "needed"
        wrong.append(checks.mistake("sharding.ddp_floor", max(1, math.ceil(16 * n_params / (memory - other)))))
    if other:  # the answer's own value with nothing else on the GPU
        wrong.append(checks.mistake("sharding.other_bytes", _answer(fn, n_params, stage, memory, 0, what=what)))
    checks.expect_equal(got, want, what=what, mistakes=wrong)


def held_per_rank(live: LiveGroup, n_ranks: int, recipe: str = "bf16_mixed_adam") -> list[tuple[int, int]]:
    """(N, the most bytes a rank holds between steps) at ZeRO stages 0-3: the small GPT trained by lecture2.zero
    on `n_ranks` ranks of the live group."""
    results = live.run([distributed.Job("textbook", stage=s, recipe=recipe, n_ranks=n_ranks) for s in range(4)])
    return [(res.ranks[0]["n_params"], max(res.held("total"))) for res in results]


def min_gpus_live(fn, held: list[tuple[int, int]], want: list[int], n_ranks: int = 2, other: int = 0) -> None:
    """For each stage s (0-3), with `held[s]` = (N, bytes a rank of an n_ranks group holds): a GPU of that many
    bytes plus `other`, `other` bytes of it taken, needs want[s] GPUs; with no `other`, one byte less no longer fits
    on want[s] GPUs (stage 0: on any number)."""
    __tracebackhide__ = True
    for stage, ((n_params, nbytes), expected) in enumerate(zip(held, want)):
        extra = f", other {other:,} B" if other else ""
        min_gpus_case(fn, n_params, stage, nbytes + other, other, expected,
                      what=f"min_gpus({n_params:,}, {stage}, {nbytes + other:,} B (measured per rank, n={n_ranks}){extra})")
        if other:
            continue
        what = f"min_gpus({n_params:,}, {stage}, {nbytes - 1:,} B)"
        fewer = _answer(fn, n_params, stage, nbytes - 1, 0, what=what)
        checks.expect(fewer is None if stage == 0 else (fewer is not None and fewer > expected),
                      f"{what}: 比 {n_ranks} 个 rank 实测少一个字节，{expected} 块就放不下了，得到 {fewer!r}")


# ---- exercise 4: tensor parallelism


def tp_case(fn, tokens: int, d: int, d_ff: int, t: int, dtype_bytes: int, bias: bool, want: dict,
            what: str | None = None) -> None:
    """fn(tokens, d, d_ff, t, dtype_bytes, bias) against `want` {"params", "allreduce"} bytes per rank, each an
    exact int."""
    __tracebackhide__ = True
    what = what or f"tp_block_bytes({tokens:,}, {d}, {d_ff}, {t}, {dtype_bytes}, bias={bias})"
    got = _answer(fn, tokens, d, d_ff, t, dtype_bytes, bias, what=what)
    checks.expect_type(got, dict, what=what)
    checks.expect(set(got) == {"params", "allreduce"}, f"{what}: 应返回 {{'params', 'allreduce'}} 两个键，得到 {sorted(got)}")
    p = dtype_bytes
    norms = 2 * d * p
    row_bias = 2 * d * p if bias else 0
    matrices = (4 * d * d + 2 * d * d_ff) * p
    checks.expect_type(got["params"], int, what=f"{what}['params']")
    divided = [checks.mistake("sharding.tp_norms", want["params"] - norms + norms // t),
               checks.mistake("sharding.tp_row_bias", want["params"] - row_bias + row_bias // t)]
    if bias and got["params"] != want["params"]:
        # the norms divided by t and the row biases divided by t give the same number (both 2d): the same block
        # without biases says which; right there, the mistake is in the biases
        plain = _answer(fn, tokens, d, d_ff, t, dtype_bytes, False, what=what.replace("bias=True", "bias=False"))
        bias_bytes = p * ((3 * d + d_ff) // t + 2 * d)  # the biases one rank holds
        if type(plain) is dict and plain.get("params") == want["params"] - bias_bytes:
            divided.reverse()
    checks.expect_equal(got["params"], want["params"], what=f"{what}['params']", mistakes=[
        *divided,
        checks.mistake("sharding.tp_norms", want["params"] - norms - row_bias + (norms + row_bias) // t),
        checks.mistake("sharding.tp_unsharded", want["params"] + matrices - matrices // t),
        checks.mistake("sharding.tp_per_rank", want["params"] * t),
        checks.mistake("bits_for_bytes", want["params"] * 8),
    ], terms={"2·d·dtype_bytes (the two norms)": norms, "d·dtype_bytes (one row-parallel bias)": d * p})
    S = tokens * d * p
    checks.expect_type(got["allreduce"], int, what=f"{what}['allreduce']")
    checks.expect_equal(got["allreduce"], want["allreduce"], what=f"{what}['allreduce']", mistakes=[
        checks.mistake("sharding.tp_backward", want["allreduce"] // 2),
        checks.mistake("sharding.tp_row_only", 2 * want["allreduce"]),
        checks.mistake("sharding.tp_tensor_size", round(want["allreduce"] * 2 * (t - 1) / t)),
        checks.mistake("sharding.tp_per_rank", want["allreduce"] * t),
        checks.mistake("bits_for_bytes", want["allreduce"] * 8),
    ], terms={"S = tokens·d·dtype_bytes (one all-reduce)": S})


def tp_live(fn, live: LiveGroup, cases) -> None:
    """Each case (model config, tensor-parallel ranks t, recipe, batch, seq) run by lecture2.parallel on the live
    group: one TransformerBlock of that shape split over t ranks, one forward + backward. fn against the parameter
    bytes each rank holds and the bytes of the all-reduces its step issued, measured."""
    __tracebackhide__ = True
    jobs = [distributed.Job("tp", n_ranks=t, model=m, recipe=r, batch=b, seq=s, seed=i)
            for i, (m, t, r, b, s) in enumerate(cases)]
    for res, (m, t, r, b, s) in zip(live.run(jobs), cases):
        d, d_ff = m["d_model"], m.get("d_ff") or 4 * m["d_model"]
        bias = bool(m.get("bias", False))
        p = 2 if r.startswith("bf16") else 4
        for rank, report in enumerate(res.ranks):
            checks.expect(max(report["errors"].values()) < (0.5 if p == 2 else 1e-3),
                          f"the split block disagrees with the whole one ({report['errors']}): a bug of lecture2.parallel")
            reduced = sum(c["bytes"] for c in report["collectives"] if c["op"] == "all_reduce")
            tp_case(fn, b * s, d, d_ff, t, p, bias, want={"params": report["held"]["params"], "allreduce": reduced},
                    what=f"tp_block_bytes({b * s}, {d}, {d_ff}, {t}, {p}, bias={bias})  vs rank {rank} measured "
                         f"({len(report['collectives'])} all-reduces in its step)")


# How each exercise is graded (docs/grading.md's table is generated from every module's ORACLE).
ORACLE = {
    "bytes_per_rank": answers.Oracle(
        returns="the dict {params, grads, optimizer} of ints it returns, called beside the answer by the "
                "without_instruments instrument (lecture2's calculator and engines switched off there)",
        expected="the bytes every rank of a live process group, started in the judge, holds between steps under "
                 "lecture2.zero (2, 3 and 4 ranks, drawn GPTs whose N need not divide, every recipe); the paper's "
                 "7B over 256 GPUs and the notebook's table (padded to n·ceil(N/n)) for drawn sizes",
        tampering="only the returned numbers are graded. The switch-off of the calculator happens in the student's "
                  "process: an answer that restores it there gets the calculator's numbers, which equal the formula "
                  "the exercise asks for (it gains nothing it could not write itself; the static scan points to it)"),
    "comm_bytes_per_step": answers.Oracle(
        returns="the float it returns, called beside the answer with the instruments switched off",
        expected="the collectives one step of lecture2.zero issues on a live group in the judge (counted by wrapping "
                 "torch.distributed), converted by the ring model; bf16 and fp32 reduce dtypes, 2-4 ranks; the "
                 "lecture's 7B references and the table for drawn sizes",
        tampering="only the returned number is graded (as for bytes_per_rank)"),
    "min_gpus": answers.Oracle(
        returns="the int or None it returns, called beside the answer with the instruments switched off",
        expected="the lecture's H100 cases from the table; budgets equal to the bytes a rank of a live 2-rank group "
                 "in the judge holds (and one byte less); drawn budgets from the notebook's rule",
        tampering="only the returned values are graded (as for bytes_per_rank)"),
    "tp_block_bytes": answers.Oracle(
        returns="the dict {params, allreduce} of ints it returns, called beside the answer with the instruments "
                "switched off",
        expected="the parameter bytes each rank holds and the all-reduce bytes its forward + backward issues when "
                 "lecture2.parallel splits a TransformerBlock Megatron-style over a live group in the judge (2 and 4 "
                 "ranks, with and without biases, fp32 and bf16), its outputs and gradients checked against the "
                 "whole block; the 7B layer on 8 GPUs and the table for drawn shapes",
        tampering="only the returned numbers are graded (as for bytes_per_rank)"),
}
