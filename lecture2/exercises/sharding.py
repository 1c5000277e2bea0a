"""The check cases of notebook 10's bytes_per_rank and comm_bytes_per_step, and of notebook 11's tokens_to_hide.

Every answer is reached through lecture2.answers (plain data both ways), always through one instrument:

    answers.with_instruments_off(fn, INSTRUMENTS, *args)
        fn(*args) with lecture2's calculator and engines switched off beside the answer (estimate, planner, network,
        parallel, distributed, zero: calling them raises), what it returns; what it raises goes to the check

Expected values are computed in the judge: reference numbers the test cell passes in (with their sources; for
the drawn cases, the formula written in the cell's hidden region), and, for the live cases, what a live
torch.distributed group (`LiveGroup`, started here when a check first needs it, never in the student's process)
measures: the bytes every rank of lecture2.zero holds between steps, and the collectives one step issues (counted
by wrapping torch.distributed). Units: bytes, FLOP/s, bytes/s, tokens.
"""
from __future__ import annotations

import math
import random

from lecture2 import answers, checks, distributed, estimate

SMALL_GPT = distributed.SMALL_GPT  # the course's small GPT, the model of the live cases (N = 33,952)
# notebook 06's recipes as exercise 1 states them: (params, grads, optimizer states) bytes per parameter
RECIPE_BYTES = {key: r.parts for key, r in estimate.TRAINED_RECIPES.items()}
PARTS = ("params", "grads", "optimizer")
STRATEGIES = {"ddp": 0, "zero1": 1, "zero2": 2, "zero3": 3}  # the strategies of comm_bytes_per_step, tokens_to_hide -> lecture2.zero's stage
INSTRUMENTS = answers.CALCULATOR + answers.ENGINE_MODULES

# Each hint goes from the idea to the formula: what the mistake misses first, the rule last.
checks.register_hints({
    "sharding.instrument_off": "这个练习要你自己推出公式：检查调用你的函数时，课程的计算器和引擎 (lecture2.estimate、planner、"
                               "planning、network、parallel、distributed、zero) 都被关掉了，调用它们会出错。",
    "sharding.padded_buffer": "集合通信 (reduce-scatter、all-gather) 要求每个 rank 的一片一样大，所以 ZeRO 的平坦缓冲区补零到 "
                              "n 片：没切开的部分 (ZeRO-1 的参数和梯度、ZeRO-2 的参数) 存的是整个补零后的缓冲区，n·⌈N/n⌉ "
                              "个元素，不是 N 个。普通数据并行 (stage 0) 不切，也不补零。",
    "sharding.padded_comm": "ZeRO 的集合通信作用在补零后的平坦缓冲区上 (每片 ⌈N/n⌉ 个元素)：每次每个 rank 发送 n−1 片，"
                            "即 (n−1)·⌈N/n⌉ 个元素；只有 DDP 的 all-reduce 作用在 N 个元素上。",
    "sharding.reduce_dtype": "梯度和参数的集合通信可以用不同的 dtype：梯度 (all-reduce、reduce-scatter) 在 reduce_bytes 上做，"
                             "参数的 all-gather 在 dtype_bytes 上做 (Megatron 和 torchtitan 把 bf16 模型的梯度放在 fp32 里规约)。",
    "sharding.shard_plus_one": "N // n + 1 只在 N 不能被 n 整除时等于 ⌈N/n⌉：能整除时每片多了一个元素。用 math.ceil(N / n) "
                               "或 -(-N // n) 向上取整。",
    "sharding.comm_divided_twice": "差了 n 倍 (少了)：一次 ring 集合通信里每个 rank 发送 n−1 片、每片 S/n，(n−1)/n·S 已经是"
                                   "一个 rank 的那一份，不要再除以 rank 的个数 n。",
    "sharding.hide_ratio": "比的是两段时间：每块 GPU 算 b 个 token 要 6N·b / flops_per_s 秒，发送它的字节要 "
                           "(每参数发送的字节)·N / bus_bytes_per_s 秒；令两者相等解出 b (N 约掉了)。",
    "sharding.hide_per_gpu": "要的是每块 GPU 的 token 数：每块 GPU 只算自己的 b 个 token、只发自己那份字节，两边都是一个 rank "
                             "的量，不要乘以 (或除以) rank 的个数。",
})


# ---- the instrument: the answer with lecture2's calculator and engines switched off


def _answer(fn, *args, what: str):
    """fn(*args) beside the answer, the instruments off; an answer that called one of them draws its hint."""
    __tracebackhide__ = True
    return checks.with_instruments_off(fn, *args, instruments=INSTRUMENTS, what=what, hint_key="sharding.instrument_off")


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


def _trained(live: LiveGroup, cases):
    """Each case (model config, ranks, strategy, recipe[, "float32"]) trained by lecture2.zero on the live group, in
    order: (its result, ranks, strategy, recipe, reduce dtype or None)."""
    cases = [tuple(c) + (None,) * (5 - len(c)) for c in cases]
    jobs = [distributed.Job("textbook", stage=STRATEGIES[st], recipe=r, n_ranks=n, model=m, seed=i, reduce_dtype=red)
            for i, (m, n, st, r, red) in enumerate(cases)]
    for res, (_, n, st, r, red) in zip(live.run(jobs), cases):
        yield res, n, st, r, red


def comm_live(fn, live: LiveGroup, cases) -> None:
    """Each case (model config, ranks, strategy, recipe[, "float32"]) trained by lecture2.zero on the live group; fn
    against the bytes each rank sends for the collectives its last step issued (counted, converted by the ring
    model). The parameters are gathered in the model's dtype (2 bytes for the bf16 recipes, else 4), the gradients
    reduced in it or in fp32."""
    __tracebackhide__ = True
    for res, n, st, r, red in _trained(live, cases):
        calls = res.ranks[0]["collectives"]
        checks.expect(all(rep["collectives"] == calls for rep in res.ranks), "每个 rank 发出的集合通信应当相同")
        n_params, dtype_bytes = res.ranks[0]["n_params"], 2 if r.startswith("bf16") else 4
        reduce_bytes = 4 if red == "float32" else None
        listing = ", ".join(f"{c['op']} {c['bytes']:,} B ({c['dtype']})" for c in calls)
        comm_case(fn, n_params, n, st, dtype_bytes, ring_sent(calls, n), reduce_bytes=reduce_bytes,
                  what=f"comm_bytes_per_step({n_params:,}, {n}, '{st}', {dtype_bytes}"
                       f"{'' if reduce_bytes is None else ', 4'})  vs the step's collectives [{listing}]")


# ---- notebook 11, exercise 1: tokens per GPU that hide the data-parallel traffic


def hide_case(fn, strategy: str, n_ranks: int, flops_per_s: float, bus_bytes_per_s: float, dtype_bytes: int,
              reduce_bytes: int | None, want: float, what: str | None = None, rtol: float = 1e-9) -> None:
    """fn(strategy, n_ranks, flops_per_s, bus_bytes_per_s, dtype_bytes, reduce_bytes) against `want` tokens per
    GPU (a float, within rtol), naming the usual mistakes by the number each gives."""
    __tracebackhide__ = True
    what = what or (f"tokens_to_hide({strategy!r}, {n_ranks}, {flops_per_s:.4g}, {bus_bytes_per_s:.4g}, "
                    f"{dtype_bytes}, {reduce_bytes})")
    got = _answer(fn, strategy, n_ranks, flops_per_s, bus_bytes_per_s, dtype_bytes, reduce_bytes, what=what)
    n, p, r = n_ranks, dtype_bytes, reduce_bytes or dtype_bytes
    per_byte = flops_per_s / (6 * bus_bytes_per_s)  # tokens per byte sent per parameter
    wrong = [checks.mistake("forward_only", want * 3),  # 2N FLOPs per token (the forward only): 3x the tokens
             checks.mistake("bits_for_bytes", want * 8), checks.mistake("bits_for_bytes", want / 8),
             checks.mistake("sharding.hide_per_gpu", want * n), checks.mistake("sharding.hide_per_gpu", want / n)]
    if n > 1:
        wrong.append(checks.mistake("ring_n_minus_1", want * n / (n - 1)))
        if want:
            wrong.append(checks.mistake("sharding.hide_ratio", 1 / want))
            wrong.append(checks.mistake("sharding.hide_ratio", want / (6 * per_byte) ** 2))  # bus / flops, not flops / bus
    if r != p:
        gradients = 2 if strategy == "ddp" else 1
        wrong.append(checks.mistake("sharding.reduce_dtype", want - (n - 1) / n * gradients * (r - p) * per_byte))
    if strategy == "zero3":
        wrong.append(checks.mistake("allgather_twice", want - (n - 1) / n * p * per_byte))
    if strategy == "ddp":
        wrong.append(checks.mistake("allreduce_two_phases", want / 2))
    if strategy in ("zero1", "zero2"):
        wrong.append(checks.mistake("zero1_allreduce", (n - 1) / n * (2 * r + p) * per_byte))
    checks.expect_close(got, want, rtol=rtol, atol=1e-9, what=what, mistakes=wrong)
    checks.expect_type(got, float, what=what)


def hide_rejects(fn, strategy: str) -> None:
    """fn(strategy, 8, ...) for an unknown strategy must raise ValueError."""
    __tracebackhide__ = True
    if not _raises_value_error(fn, strategy, 8, 1e15, 4e11, 2, None, what=f"tokens_to_hide({strategy!r}, ...)"):
        checks.fail(f"tokens_to_hide({strategy!r}, ...) 应该 raise ValueError", "raises_value_error")


def hide_live(fn, live: LiveGroup, cases, flops_per_s: float, bus_bytes_per_s: float) -> None:
    """Each case (model config, ranks, strategy, recipe[, "float32"]) trained by lecture2.zero on the live group; fn
    against the tokens per GPU whose 6N FLOPs each at `flops_per_s` last as long as the bytes each rank sends for the
    collectives its last step issued (counted, converted by the ring model) at `bus_bytes_per_s` (rtol 1e-3: the
    ZeRO buffers are padded by a few elements)."""
    __tracebackhide__ = True
    for res, n, st, r, red in _trained(live, cases):
        calls = res.ranks[0]["collectives"]
        n_params, dtype_bytes = res.ranks[0]["n_params"], 2 if r.startswith("bf16") else 4
        reduce_bytes = 4 if red == "float32" else None
        sent = ring_sent(calls, n)
        want = sent / n_params * flops_per_s / (6 * bus_bytes_per_s)
        listing = ", ".join(f"{c['op']} {c['bytes']:,} B ({c['dtype']})" for c in calls)
        hide_case(fn, st, n, flops_per_s, bus_bytes_per_s, dtype_bytes, reduce_bytes, want, rtol=1e-3,
                  what=f"tokens_to_hide({st!r}, {n}, {flops_per_s:.4g}, {bus_bytes_per_s:.4g}, {dtype_bytes}, "
                       f"{reduce_bytes})  vs a step of N = {n_params:,} that sent {sent:,.0f} B per rank [{listing}]")


# How each exercise is graded (docs/grading.md's table is generated from every module's ORACLE).
ORACLE = {
    "bytes_per_rank": answers.Oracle(
        returns="the dict {params, grads, optimizer} of ints it returns, called beside the answer by the "
                "answers.with_instruments_off instrument (lecture2's calculator and engines switched off there)",
        expected="the bytes every rank of a live process group, started in the judge, holds between steps under "
                 "lecture2.zero (2, 3 and 4 ranks, drawn GPTs whose N need not divide, every recipe); the paper's "
                 "7B over 256 GPUs; for drawn sizes the closed form in the test cell's hidden region (the buffer "
                 "padded to n·ceil(N/n))",
        tampering="only the returned numbers are graded. The switch-off of the calculator happens in the student's "
                  "process: an answer that restores it there gets the calculator's numbers, which equal the formula "
                  "the exercise asks for (it gains nothing it could not write itself; the static scan points to it)"),
    "comm_bytes_per_step": answers.Oracle(
        returns="the float it returns, called beside the answer with the instruments switched off",
        expected="the collectives one step of lecture2.zero issues on a live group in the judge (counted by wrapping "
                 "torch.distributed), converted by the ring model; bf16 and fp32 reduce dtypes, 2-4 ranks; the "
                 "lecture's 7B references; for drawn sizes the closed form in the test cell's hidden region",
        tampering="only the returned number is graded (as for bytes_per_rank)"),
    "tokens_to_hide": answers.Oracle(
        returns="the float it returns, called beside the answer with the instruments switched off",
        expected="the bytes each rank sends for the collectives one step of lecture2.zero issues on a live group in "
                 "the judge (counted, converted by the ring model), per parameter, times flops_per_s / (6 "
                 "bus_bytes_per_s); DGX H100 references with sources; the closed form for drawn strategies, ranks, "
                 "rates and dtypes",
        tampering="only the returned number is graded (as for bytes_per_rank)"),
}
