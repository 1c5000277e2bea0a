"""Notebook 10's check cases: bytes_per_rank, comm_bytes_per_step, min_gpus, some against a live process group.

The live cases train the course's GPT with `lecture2.zero` on a `lecture2.distributed` group (`LiveGroup`, started
when a check first needs it) and compare the student's function with what every rank really holds between steps
and with the collectives one step really issues. While the student's function runs, the instruments that could
answer for it (the calculator `lecture2.estimate`, and for exercises 1 and 2 also `lecture2.distributed` and
`lecture2.zero`) are switched off: calling them raises. Units: bytes.
"""
from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType

from lecture2 import checks, distributed, estimate, zero

SMALL_GPT = distributed.SMALL_GPT  # the course's small GPT, the model of the live cases
# notebook 06's recipes as exercise 1 states them: (params, grads, optimizer states) bytes per parameter
RECIPE_BYTES = {"fp32_adam": (4, 4, 8), "bf16_mixed_adam": (2, 2, 12), "sgd": (4, 4, 0), "sgd_momentum": (4, 4, 4),
                "bf16_sgd": (2, 2, 0)}
PARTS = ("params", "grads", "optimizer")
STRATEGIES = {"ddp": 0, "zero1": 1, "zero2": 2, "zero3": 3}  # exercise 2's strategies -> lecture2.zero's stage

CEIL_HINT = "GPU 个数要向上取整 (math.ceil)：少一块就放不下。"
OTHER_HINT = "other_bytes (激活值等) 也占每块 GPU 的显存：没切的部分 + 切开的部分 / n + other_bytes ≤ 显存。"
DDP_FLOOR_HINT = "普通数据并行 (stage 0) 什么都不切：每块 GPU 都存完整的 16N，加卡没用；放不下就返回 None。"


# --- instruments off while the student's function runs ----------------------------------------------------------
def _counting_off(*args, **kwargs):
    raise RuntimeError("这个练习不能调用 lecture2.estimate / distributed / zero：请按阶段自己数字节。")


def _comm_off(*args, **kwargs):
    raise RuntimeError("这个练习不能调用 lecture2.estimate / distributed / zero：请按集合通信自己算字节。")


def _calculator_off(*args, **kwargs):
    raise RuntimeError("这个练习不能调用 lecture2.estimate (the calculator)：请自己写公式。")


@contextmanager
def instruments_off(modules: tuple[ModuleType, ...], off: Callable) -> Iterator[None]:
    """While the block runs, every function (and method) defined in `modules` runs `off`'s code instead: the
    calculator and the process group are instruments, not answers."""
    swapped = []
    for module in modules:
        for obj in list(vars(module).values()):
            for f in [obj] + (list(vars(obj).values()) if isinstance(obj, type) else []):
                if getattr(f, "__module__", None) == module.__name__ and hasattr(f, "__code__") \
                        and not f.__code__.co_freevars:
                    swapped.append((f, f.__code__))
                    f.__code__ = off.__code__
    try:
        yield
    finally:
        for f, code in swapped:
            f.__code__ = code


def _call(fn, args, off, modules=(estimate, distributed, zero)):
    with instruments_off(modules, off):
        return fn(*args)


def _raises_value_error(fn, args, off, modules=(estimate, distributed, zero)) -> bool:
    try:
        _call(fn, args, off, modules)
    except ValueError:
        return True
    return False


# --- the live group ----------------------------------------------------------------------------------------------
class LiveGroup:
    """A live torch.distributed group of `n_ranks` processes (lecture2.distributed.Group) for one test cell: started
    when a check first runs jobs on it, ended when the `with` block exits, whatever happens in it. A group that
    failed to start is not started again: later checks get the same error at once (no second timeout)."""

    def __init__(self, n_ranks: int, timeout: float = 100.0):
        self.n_ranks, self.timeout = n_ranks, timeout
        self._group: distributed.Group | None = None
        self._start_error: BaseException | None = None

    def __enter__(self) -> LiveGroup:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        group, self._group = self._group, None
        if group is not None:
            group.__exit__(exc_type, exc, tb)

    def run(self, jobs: list[distributed.Job]) -> list[distributed.JobResult]:
        """Run `jobs` on the group (starting it the first time); one JobResult per job."""
        if self._start_error is not None:
            raise self._start_error
        if self._group is None:
            group = distributed.Group(self.n_ranks, timeout=self.timeout)
            try:
                group.start()
            except Exception as err:
                self._start_error = err
                raise
            self._group = group
        return self._group.run(jobs)


def drawn_gpt(rng: random.Random) -> dict:
    """A small GPT config drawn with `rng`: d_model a multiple of 12, so N divides by 2, 3 and 4 (no padding)."""
    d = rng.choice([12, 24, 36, 48])
    return {"vocab_size": rng.randint(20, 300), "block_size": 16, "n_layer": rng.randint(1, 3),
            "n_head": rng.choice([h for h in (1, 2, 3, 4) if d % h == 0]), "d_model": d}


# --- exercise 1: bytes per rank -----------------------------------------------------------------------------------
def rank_case(fn, n_params: int, n_ranks: int, stage: int, recipe: str, want, what: str | None = None) -> None:
    """fn(n_params, n_ranks, stage, recipe) against `want` bytes per rank, (params, grads, optimizer) or a dict with
    these keys, part by part, each an exact int."""
    __tracebackhide__ = True
    want = dict(want) if isinstance(want, dict) else dict(zip(PARTS, want))
    what = what or f"bytes_per_rank({n_params:,}, {n_ranks}, {stage}, '{recipe}')"
    got = _call(fn, (n_params, n_ranks, stage, recipe), _counting_off)
    checks.expect_type(got, dict, what=what)
    checks.expect(set(got) == set(PARTS), f"{what}: 应返回 {{'params', 'grads', 'optimizer'}} 三个键，得到 {sorted(got)}")
    s = math.ceil(n_params / n_ranks)
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
        if n_ranks > 1 and want[part] != per * n_params:  # a sharded part: a slice is ceil(N / n), padded
            wrong.append(checks.mistake("shard_ceil", per * (n_params // n_ranks)))
        checks.expect_type(got[part], int, what=f"{what}['{part}']")
        checks.expect_equal(got[part], want[part], what=f"{what}['{part}']", mistakes=wrong)


def rank_total(fn, n_params: int, n_ranks: int, stage: int, recipe: str, want: int) -> None:
    """The three parts of fn(n_params, n_ranks, stage, recipe) added up, against `want` bytes per rank."""
    __tracebackhide__ = True
    what = f"bytes_per_rank({n_params:,}, {n_ranks}, {stage}, '{recipe}'): total bytes per GPU"
    got = _call(fn, (n_params, n_ranks, stage, recipe), _counting_off)
    checks.expect_type(got, dict, what=what)
    checks.expect_equal(sum(got.values()), want, what=what)


def rank_totals_per_param(fn, n_ranks: int, want: list[float], recipe: str = "bf16_mixed_adam") -> None:
    """Bytes per parameter at stages 0-3 (all three parts, N = 1000 n parameters) against `want`."""
    __tracebackhide__ = True
    n_params = n_ranks * 1000
    totals = [sum(_call(fn, (n_params, n_ranks, s, recipe), _counting_off).values()) / n_params for s in range(4)]
    checks.expect(totals == want, f"n={n_ranks}, '{recipe}': stage 0-3 每参数字节应是 {want}，得到 {totals}")


def rank_rejects(fn, *args) -> None:
    """fn(*args) (an unknown stage or recipe) must raise ValueError."""
    __tracebackhide__ = True
    checks.expect(_raises_value_error(fn, args, _counting_off), f"bytes_per_rank{args} 应该 raise ValueError")


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


# --- exercise 2: bytes sent per step ------------------------------------------------------------------------------
def ring_sent(calls: list[dict], n_ranks: int) -> float:
    """Bytes each rank sends for one step's counted collectives, by the ring algorithms of section 2's table:
    all-reduce 2(n-1)/n S, the others (n-1)/n S (S: the bytes of the whole tensor)."""
    return sum((2 if c["op"] == "all_reduce" else 1) * (n_ranks - 1) / n_ranks * c["bytes"] for c in calls)


def comm_case(fn, n_params: int, n_ranks: int, strategy: str, dtype_bytes: int, want: float,
              what: str | None = None) -> None:
    """fn(n_params, n_ranks, strategy, dtype_bytes) against `want` bytes sent per rank (rtol 1e-9), a float."""
    __tracebackhide__ = True
    what = what or f"comm_bytes_per_step({n_params:,}, {n_ranks}, '{strategy}', {dtype_bytes})"
    got = _call(fn, (n_params, n_ranks, strategy, dtype_bytes), _comm_off)
    n, psi = n_ranks, n_params * dtype_bytes
    checks.expect_close(got, want, rtol=1e-9, atol=1e-6, what=what, mistakes=[
        checks.mistake("ring_n_minus_1", want * n / (n - 1) if n > 1 else -1.0),
        checks.mistake("allgather_twice", 2 * (n - 1) / n * psi if strategy == "zero3" else -1.0),
        checks.mistake("allreduce_two_phases", (n - 1) / n * psi if strategy == "ddp" else -1.0),
        checks.mistake("zero1_allreduce", 3 * (n - 1) / n * psi if strategy in ("zero1", "zero2") else -1.0),
        checks.mistake("comm_per_rank", want * n),
        checks.mistake("bits_for_bytes", want * 8),
    ])
    checks.expect_type(got, float, what=what)


def comm_one_rank(fn, strategy: str) -> None:
    """fn(1e9, 1, strategy, 2): a single rank sends nothing, exactly 0."""
    __tracebackhide__ = True
    checks.expect_close(_call(fn, (10**9, 1, strategy, 2), _comm_off), 0.0, atol=0.0, rtol=0.0,
                        what=f"comm_bytes_per_step(1e9, 1, '{strategy}', 2)")


def comm_rejects(fn, strategy: str) -> None:
    """fn(1000, 2, strategy, 2) for an unknown strategy must raise ValueError."""
    __tracebackhide__ = True
    checks.expect(_raises_value_error(fn, (1000, 2, strategy, 2), _comm_off),
                  f"comm_bytes_per_step(..., strategy={strategy!r}) 应该 raise ValueError")


def comm_live(fn, live: LiveGroup, cases) -> None:
    """Each case (model config, ranks, strategy, recipe) trained by lecture2.zero on the live group; fn against the
    bytes each rank sends for the collectives its last step issued (counted, converted by the ring model). The
    collectives are in the model's dtype: 2 bytes for the bf16 recipes, else 4."""
    __tracebackhide__ = True
    jobs = [distributed.Job("textbook", stage=STRATEGIES[st], recipe=r, n_ranks=n, model=m, seed=i)
            for i, (m, n, st, r) in enumerate(cases)]
    for res, (_, n, st, r) in zip(live.run(jobs), cases):
        calls = res.ranks[0]["collectives"]
        checks.expect(all(rep["collectives"] == calls for rep in res.ranks), "每个 rank 发出的集合通信应当相同")
        n_params, dtype_bytes = res.ranks[0]["n_params"], 2 if r.startswith("bf16") else 4
        listing = ", ".join(f"{c['op']} {c['bytes']:,} B" for c in calls)
        comm_case(fn, n_params, n, st, dtype_bytes, ring_sent(calls, n),
                  what=f"comm_bytes_per_step({n_params:,}, {n}, '{st}', {dtype_bytes})  vs the step's collectives [{listing}]")


# --- exercise 3: the fewest GPUs ------------------------------------------------------------------------------------
def min_gpus_case(fn, n_params: float, stage: int, memory: float, other: float, want: int | None,
                  what: str | None = None) -> None:
    """fn(n_params, stage, memory, other) against `want` GPUs (an exact int), or None where no number fits."""
    __tracebackhide__ = True
    what = what or f"min_gpus({n_params:.4g}, {stage}, {memory:.4g}, {other:.3g})"
    got = _call(fn, (n_params, stage, memory, other), _calculator_off, (estimate,))
    if want is None:
        hint = DDP_FLOOR_HINT if stage == 0 else checks.HINTS["replicated_floor"]
        checks.expect(got is None, f"{what}: 多少块 GPU 都放不下，应返回 None，得到 {got!r}\n提示 (hint): {hint}")
        return
    checks.expect(got is not None, f"{what}: 应返回 {want}，得到 None")
    checks.expect_type(got, int, what=what)
    wrong = [checks.mistake(CEIL_HINT, want - 1)]
    if stage in (1, 2):  # everything divided by n, as if ZeRO-3
        wrong.append(checks.mistake("replicated_floor", max(1, math.ceil(16 * n_params / (memory - other)))))
    if other:  # the same answer as with nothing else on the GPU
        wrong.append(checks.mistake(OTHER_HINT, _call(fn, (n_params, stage, memory, 0), _calculator_off, (estimate,))))
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
        fewer = _call(fn, (n_params, stage, nbytes - 1), _calculator_off, (estimate,))
        checks.expect(fewer is None if stage == 0 else (fewer is not None and fewer > expected),
                      f"min_gpus({n_params:,}, {stage}, {nbytes - 1:,} B): 比 {n_ranks} 个 rank 实测少一个字节，"
                      f"{expected} 块就放不下了，得到 {fewer!r}")
