"""Notebook 08's check cases: my_benchmark; mfu (a run's MFU from its throughput).

Every answer is reached through lecture2.answers (plain data both ways). What needs more than a call runs beside
the answer in an instrument of this module (`@answers.observer`), built there from plain-data inputs: a fake
clock whose durations the case chose, a fake GPU that logs each call, synchronize and clock read, a real workload
described by its kind and size. An instrument returns only what it saw (what the answer returned, call counts, the
order of events); it never judges.

What a case compares with is computed here, in the process that runs the check: torch.utils.benchmark.Timer on
the same workload (same kind, size and thread count), the durations the case gave the fake clock, PyTorch's FLOP
counter on a real GPT training step; or passed in by the test cell (reference numbers with their sources). The
usual wrong answers are named relative to that value, each by its hint's key.
"""
from __future__ import annotations

import math
import random
import statistics
import time
from contextlib import contextmanager
from unittest import mock

import torch
from torch.utils import benchmark as torch_benchmark

import lecture2.measure
from lecture2 import answers, checks, measure, models


def _seen(observation: object, *keys: str) -> dict:
    """An instrument's observation: a dict holding `keys` (anything else fails the case, saying so)."""
    __tracebackhide__ = True
    if type(observation) is not dict or not all(k in observation for k in keys):
        checks.fail(f"答案所在的进程送回的不是检查要的观测 (observation with keys {list(keys)})，而是 "
                    f"{type(observation).__name__}。")
    return observation


# --- my_benchmark ---------------------------------------------------------------------------------------------

BENCHMARK_HINTS = {
    "timing.mean": "看起来你返回的是平均值 (mean)：一个离群值 (outlier) 就把它拉高了；要中位数 (median)。",
    "timing.min": "看起来你返回的是最小值 (min)：那是最乐观的一次；要中位数 (median)。",
    "timing.sum": "看起来你返回的是 repeat 次的总时间：要的是一次调用的时间 (中位数 median)。",
    "timing.ms": "看起来你返回的是毫秒 (ms)：要的是秒 (s)。",
    "timing.warmup_timed": "看起来 warm-up 的调用也被计时了：warm-up 只运行、不计时。",
    "timing.no_warmup": "少了 warm-up：先不计时地调用 fn() warmup 次。",
    "timing.call_count": "fn 要被调用恰好 warmup + repeat 次：先 warmup 次不计时 (warmup=0：不预热，一次也不多调)，"
                         "再 repeat 次、每次单独计时。",
    "timing.clock": "用 time.perf_counter() 计时 (检查用一个假的时钟来确定每次调用的时间)。",
    "timing.clock_per_call": "每次计时的 fn() 之后都要读一次时钟 (time.perf_counter())：一次调用一个时间，"
                             "repeat 个时间取中位数。",
    "timing.no_sync": "CUDA kernel 是异步 (asynchronous) 启动的：每次 fn() 之后、读时钟之前要 "
                      "`if torch.cuda.is_available(): torch.cuda.synchronize()`，否则量到的只是启动时间。",
    "timing.clock_first": "顺序是 fn() → torch.cuda.synchronize() → time.perf_counter()：先同步，再读时钟。",
    "timing.launch_only": "快得不可能：计时前后没有 torch.cuda.synchronize()，只量到了 kernel 启动。",
    "timing.course_timer": "my_benchmark 要自己写 warm-up、synchronize 和 median，不能调用 lecture2.measure.benchmark "
                           "(the course's timer)。",
}
checks.register_hints(BENCHMARK_HINTS)
_COURSE_TIMER_OFF = "my_benchmark 不能调用 lecture2.measure.benchmark (the course's timer)"
_MAX_EVENTS = 10_000  # events an order log keeps (an answer that loops without end still returns a bounded log)


@contextmanager
def _course_timer_off():
    """lecture2.measure.benchmark raises while the answer runs (wherever it was imported to), restored afterwards:
    a my_benchmark that only calls the course's own timer earns nothing. Runs beside the answer."""
    def switched_off(*args, **kwargs):
        raise RuntimeError("my_benchmark 不能调用 lecture2.measure.benchmark (the course's timer)：自己写 warm-up、synchronize 和 median。")

    timer = lecture2.measure.benchmark
    code = timer.__code__
    timer.__code__ = switched_off.__code__
    try:
        yield
    finally:
        timer.__code__ = code


def _run_benchmark(fn, work, warmup: int, repeat: int) -> dict:
    """fn(work, warmup=warmup, repeat=repeat) with the course's timer switched off: what it returned, and whether
    it called that timer (an error of its own is raised, as the answer raised it)."""
    with _course_timer_off():
        try:
            return {"returned": fn(work, warmup=warmup, repeat=repeat), "course_timer": False}
        except RuntimeError as err:
            if _COURSE_TIMER_OFF not in str(err):
                raise
    return {"returned": None, "course_timer": True}


@answers.observer
def observe_fake_clock(fn, durations: list, warmup: int, repeat: int) -> dict:
    """Beside the answer: fn(work, warmup, repeat) where the k-th call of `work` moves time.perf_counter() forward
    by durations[k] seconds (real time still passes underneath; calls past the list move it by nothing).
    Returns what fn returned, how many times it called `work`, and whether it called the course's timer."""
    durations = [float(d) for d in durations]
    calls, offset, real_clock = [0], [0.0], time.perf_counter

    def work():
        offset[0] += durations[calls[0]] if calls[0] < len(durations) else 0.0
        calls[0] += 1

    with mock.patch("time.perf_counter", lambda: real_clock() + offset[0]):
        seen = _run_benchmark(fn, work, warmup, repeat)
    return {**seen, "calls": calls[0]}


@answers.observer
def observe_event_order(fn, warmup: int, repeat: int) -> dict:
    """Beside the answer, with torch.cuda pretending a GPU is there: fn(work, warmup, repeat), logging in order
    every call of `work` ("call"), torch.cuda.synchronize() ("sync") and time.perf_counter() ("clock"). Returns
    what fn returned, the log (its first 10,000 events), the number of calls, and whether it called the course's timer."""
    events, calls, real_clock = [], [0], time.perf_counter

    def log(event: str) -> None:
        if len(events) < _MAX_EVENTS:
            events.append(event)

    def clock():
        log("clock")
        return real_clock()

    def work():
        calls[0] += 1
        log("call")

    with mock.patch("torch.cuda.is_available", return_value=True), \
         mock.patch("torch.cuda.synchronize", side_effect=lambda *a, **k: log("sync")), \
         mock.patch("time.perf_counter", clock):
        seen = _run_benchmark(fn, work, warmup, repeat)
    return {**seen, "events": events, "calls": calls[0]}


@answers.observer
def observe_calls(fn, warmup: int, repeat: int) -> dict:
    """Beside the answer: fn(work, warmup, repeat) on a `work` that only counts its calls. Returns what fn returned,
    the number of calls, and whether it called the course's timer."""
    calls = [0]

    def work():
        calls[0] += 1

    return {**_run_benchmark(fn, work, warmup, repeat), "calls": calls[0]}


def matmul(n: int, device: str = "cpu", seed: int = 0) -> dict:
    """A workload, as data: an n×n float32 matmul on `device` (n about 450-512: a few ms on one CPU thread)."""
    return {"kind": "matmul", "n": int(n), "device": str(device), "seed": int(seed)}


def elementwise(n: int, seed: int = 0) -> dict:
    """A workload, as data: tanh, then two in-place elementwise ops, on n float32 values on the CPU."""
    return {"kind": "elementwise", "n": int(n), "device": "cpu", "seed": int(seed)}


def describe_work(work: dict) -> str:
    if work["kind"] == "matmul":
        return f"a {work['n']}x{work['n']} matmul on {work['device']}"
    return f"tanh of {work['n']:,} floats on {work['device']}"


def build_work(work: dict):
    """The zero-argument callable a workload (from `matmul` or `elementwise`) describes, with its tensors made
    here: the check times it with torch's Timer in its own process, the instrument beside the answer builds its
    own copy from the same data."""
    kind, n, device = work.get("kind"), int(work.get("n", 0)), str(work.get("device", "cpu"))
    g = torch.Generator().manual_seed(int(work.get("seed", 0)))
    if kind == "matmul" and 1 <= n <= 16384:
        a, b = torch.randn(n, n, generator=g).to(device), torch.randn(n, n, generator=g).to(device)
        return lambda: a @ b
    if kind == "elementwise" and 1 <= n <= 10**8:
        v = torch.randn(n, generator=g).to(device)
        return lambda: torch.tanh(v).mul_(2).add_(1)
    raise ValueError(f"not a workload: {work!r}"[:200])


@answers.observer
def observe_timed_work(fn, work: dict, warmup: int, repeat: int, threads: int) -> dict:
    """Beside the answer: fn(run, warmup, repeat) on the real workload `work` describes (built here), with torch
    on `threads` CPU threads while it runs (the check's Timer uses as many). Returns what fn returned, how many
    times it called the workload, and whether it called the course's timer."""
    run, calls = build_work(work), [0]

    def counted():
        calls[0] += 1
        return run()

    before = torch.get_num_threads()
    torch.set_num_threads(int(threads))
    try:
        seen = _run_benchmark(fn, counted, warmup, repeat)
    finally:
        torch.set_num_threads(before)
    return {**seen, "calls": calls[0]}


def _benchmark_seen(observation: object, what: str, warmup: int, repeat: int, *keys: str) -> dict:
    """An observation of my_benchmark, with the course timer's and the call count's failures named."""
    __tracebackhide__ = True
    seen = _seen(observation, "returned", "course_timer", "calls", *keys)
    if seen["course_timer"] is not False:
        checks.fail(f"{what} 调用了 lecture2.measure.benchmark。", "timing.course_timer")
    calls = seen["calls"]
    if calls != warmup + repeat:
        key = "timing.no_warmup" if warmup and calls == repeat else "timing.call_count"
        checks.fail(f"{what}: fn 应被调用恰好 warmup + repeat = {warmup + repeat} 次"
                    + (" (warmup=0：不预热)" if warmup == 0 else "") + f"，实际 {calls} 次。", key)
    return seen


def median_case(fn, warmup: int, base: float, rng: random.Random) -> None:
    """fn on a fake fn whose calls move a fake time.perf_counter() by known amounts: `warmup` slow warm-up calls
    (5·base each), then 5 timed calls [base, base, base, 12·base, 0.1·base] in a drawn order. Expected: exactly
    warmup + 5 calls, and `base` seconds (the median; up to 0.1 s of real time on top, for a busy machine)."""
    __tracebackhide__ = True
    timed = [base, base, base, 12 * base, 0.1 * base]
    rng.shuffle(timed)
    durations = [5 * base] * warmup + timed
    what = f"my_benchmark(fn, warmup={warmup}, repeat=5)"
    seen = _benchmark_seen(answers.observe(observe_fake_clock, fn, durations, warmup, 5), what, warmup, 5)
    got = seen["returned"]
    checks.expect_type(got, float, what=what)
    candidates = {  # what each way of summarising would return
        "median": base, "timing.mean": statistics.mean(timed), "timing.min": 0.1 * base, "timing.sum": sum(timed),
        "timing.ms": 1e3 * base, "timing.warmup_timed": statistics.median([5 * base] * warmup + timed),
    }
    if not base <= got <= base + 0.1:
        if got <= 1e-3 * base:  # the fake clock never moved: the answer read another clock
            hint = "timing.clock"
        else:
            nearest = min(candidates, key=lambda k: abs(math.log(max(got, 1e-12) / candidates[k])))
            hint = nearest if nearest != "median" else None
        checks.fail(f"my_benchmark 用一个已知耗时的 fn: 期望 (expected) 中位数 {base * 1e3:.1f} ms，"
                    f"得到 (got) {got * 1e3:.3f} ms。", hint)


def order_case(fn, warmup: int, repeat: int) -> None:
    """With torch.cuda pretending a GPU is there, every call of fn, synchronize and clock read is logged in order.
    Expected: exactly warmup + repeat calls, and after each timed call a synchronize, then the clock read."""
    __tracebackhide__ = True
    what = f"my_benchmark(fn, warmup={warmup}, repeat={repeat})"
    seen = _benchmark_seen(answers.observe(observe_event_order, fn, warmup, repeat), what, warmup, repeat, "events")
    events = seen["events"]
    if type(events) is not list or not all(e in ("call", "sync", "clock") for e in events):
        checks.fail(f"{what}: 记录的事件 (event log) 不是 'call' / 'sync' / 'clock' 的列表。")
    calls = [i for i, e in enumerate(events) if e == "call"]
    if len(calls) != warmup + repeat:  # the log ended early: an answer that made more than 10,000 events
        checks.fail(f"{what}: 记录了 {len(calls)} 次调用，应是 {warmup + repeat} 次。", "timing.call_count")
    unsynced = clock_first = 0
    for i, j in zip(calls[warmup:], calls[warmup + 1:] + [len(events)]):
        after = events[i + 1:j]  # what happened between this timed call and the next call
        if "clock" not in after:
            checks.fail(f"{what}: 有一次计时的 fn() 之后没有读时钟 (time.perf_counter())。", "timing.clock_per_call")
        if "sync" not in after[:after.index("clock")]:
            clock_first += "sync" in after
            unsynced += "sync" not in after
    if unsynced:
        checks.fail(f"在 GPU 上，{repeat} 次计时的调用里有 {unsynced} 次之后没有调用 torch.cuda.synchronize()。",
                    "timing.no_sync")
    if clock_first:
        checks.fail(f"在 GPU 上，{repeat} 次计时里有 {clock_first} 次先读了时钟、后同步：时钟停在 kernel 启动之后、完成之前。",
                    "timing.clock_first")


def calls_case(fn, warmup: int, repeat: int) -> None:
    """fn on a counting fn: exactly warmup + repeat calls (warmup=0: no warm-up at all)."""
    __tracebackhide__ = True
    _benchmark_seen(answers.observe(observe_calls, fn, warmup, repeat), f"my_benchmark(fn, warmup={warmup}, repeat={repeat})",
                    warmup, repeat)


def timer_case(fn, work: dict, repeat: int) -> None:
    """fn(run, warmup=2, repeat) on the workload `work` describes (built beside the answer) against
    torch.utils.benchmark.Timer's median for the same workload, built and timed here, both on one CPU thread
    (a busy machine's other processes slow one thread far less erratically than a team of them). Each try
    brackets the answer's time between two reference measurements, one before and one after it: the answer must
    lie within half the faster and twice the slower (up to 4 tries on a noisy machine)."""
    __tracebackhide__ = True
    threads = 1
    run = build_work(work)
    what = f"my_benchmark(fn, warmup=2, repeat={repeat})"

    def reference() -> float:
        saved = torch.get_num_threads()
        try:
            return torch_benchmark.Timer("work()", globals={"work": run}, num_threads=threads).blocked_autorange(
                min_run_time=0.1).median
        finally:
            torch.set_num_threads(saved)

    for _ in range(4):
        before = reference()
        seen = _benchmark_seen(answers.observe(observe_timed_work, fn, work, 2, repeat, threads), what, 2, repeat)
        after = reference()
        got = seen["returned"]
        checks.expect_type(got, float, what=what)
        low, high = min(before, after), max(before, after)
        if 0.5 * low <= got <= 2 * high:
            return
    ratio = got / math.sqrt(low * high)
    hint = None
    if 0.5 * repeat <= ratio <= 2 * repeat:
        hint = "timing.sum"
    elif 300 <= ratio <= 3000:
        hint = "timing.ms"
    elif 0 <= ratio < 0.1 and torch.cuda.is_available():
        hint = "timing.launch_only"
    checks.fail(f"{describe_work(work)}: my_benchmark 得到 {got * 1e3:.3f} ms，torch.utils.benchmark.Timer (1 个线程) "
                f"在它前后得到 {before * 1e3:.3f} 和 {after * 1e3:.3f} ms (比值 ratio {ratio:.3g}，应在 0.5–2 之间)。", hint)


# --- mfu: a run's MFU from its throughput -----------------------------------------------------------------------

FLOPS_HINTS = {
    "timing.mfu_idea": "从思路出发：MFU = 模型每秒做的 FLOPs / 峰值 (peak)；模型每秒的 FLOPs = 每个 token 训练一次的 FLOPs × "
                       "每秒处理的 token 数 (tokens/s)。每个 token 的 FLOPs 先从权重的矩阵乘法数起 (notebook 05)。",
    "timing.tflops": "单位不对：这里所有量都用 FLOP/s，不是 TFLOP/s (差 1e12)。",
    "timing.inverted": "比值倒过来了：MFU = 模型每秒的 FLOPs / peak，不是 peak / 它。",
    "timing.no_attention": "少了注意力 (attention) 里两个激活值之间的矩阵乘法：QKᵀ 和 AV 不在权重 N 里。一个 token 的 query "
                           "和 T 个 key 各做 d_attn 次乘加 (2·T·d_attn FLOPs)，AV 同样多，每层前向 4·T·d_attn，"
                           "前向 + 反向 ×3：每层每 token 12·T·d_attn，L 层 12·L·d_attn·T。",
    "timing.attention_forward": "注意力项只算了前向 (4·L·d_attn·T)：反向约是前向的 2 倍，前向 + 反向是 12·L·d_attn·T。",
    "timing.per_sequence": "差了 T 倍：每个 token 的 FLOPs 不要再乘序列长度 T (那是每条序列的)；tokens/s 已经数的是 token。",
    "timing.percent": "MFU 要返回比例 (fraction, 0.4)，不是百分数 (40)。",
    "timing.throughput": "忘了乘每秒处理的 token 数 (tokens/s)：模型每秒的 FLOPs = 每个 token 的 FLOPs × tokens/s。",
}
checks.register_hints(FLOPS_HINTS)


def mfu_case(fn, n: float, layers: int, d_attn: int, seq: int, tokens_per_s: float, peak: float, want: float,
             what: str = "") -> None:
    """fn(n, layers, d_attn, seq, tokens_per_s, peak) against `want`, a fraction (rtol 1e-9), the answer computing its
    formula itself (lecture2's calculators switched off beside it). A wrong value is named by the usual mistake it
    equals (forward only, multiply-add once, no attention term or its forward only, per sequence, a percentage, TFLOP/s,
    inverted, tokens/s forgotten); one that matches none gets the idea (timing.mfu_idea)."""
    __tracebackhide__ = True
    rate = tokens_per_s / peak
    attention = want / rate - 6 * n  # the attention term of the expected FLOPs per token
    what = f"mfu({what or f'{n:.4g}, {layers}, {d_attn}, {seq}, {tokens_per_s:.4g}, {peak:.4g}'})"
    got = checks.by_formula(fn, n, layers, d_attn, seq, tokens_per_s, peak, what=what)
    mistakes = [checks.mistake("forward_only", want / 3), checks.mistake("multiply_add", want / 2),
                checks.mistake("timing.no_attention", 6 * n * rate),
                checks.mistake("timing.attention_forward", (6 * n + attention / 3) * rate),
                checks.mistake("timing.per_sequence", want * seq), checks.mistake("timing.percent", 100 * want),
                checks.mistake("timing.tflops", want * 1e12), checks.mistake("timing.tflops", want / 1e12),
                checks.mistake("timing.inverted", 1 / want), checks.mistake("timing.throughput", want / tokens_per_s)]
    close = lambda a, b: math.isclose(a, b, rel_tol=1e-9)  # noqa: E731
    if type(got) in (int, float) and not close(got, want) and not any(close(got, m.value) for m in mistakes):
        checks.fail(f"{what}: 期望 (expected) {want:.6g}，得到 (got) {checks.shown(got)}。", "timing.mfu_idea", what=what)
    checks.expect_close(got, want, rtol=1e-9, what=what, mistakes=mistakes)


def live_gpt_case(fn, rng: random.Random, tokens_per_s: float, peak: float) -> None:
    """fn on a lecture2 GPT of drawn size (1-3 layers, d 32-128, T 16-48, batch 2-4): N = its matmul weights (every
    Linear, lm_head included), d_attn = d_model. Expected: PyTorch's FLOP counter on its real training step (loss and
    backward), run here, divided by the B·T tokens of the batch, times tokens_per_s / peak; the answer gets the plain
    numbers."""
    __tracebackhide__ = True
    layers, heads, head_dim = rng.randint(1, 3), rng.choice([2, 4]), rng.choice([16, 32])
    d, seq, batch, vocab = heads * head_dim, rng.choice([16, 32, 48]), rng.randint(2, 4), rng.choice([256, 384])
    torch.manual_seed(rng.randint(0, 10**6))
    net = models.GPT(models.GPTConfig(vocab_size=vocab, block_size=64, n_layer=layers, n_head=heads, d_model=d))
    x, y = torch.randint(0, vocab, (batch, seq)), torch.randint(0, vocab, (batch, seq))
    counted = measure.count_flops(lambda: net.loss(x, y).backward())  # live: the FLOP counter on the real step
    n_matmul = sum(m.weight.numel() for m in net.modules() if isinstance(m, torch.nn.Linear))
    mfu_case(fn, n_matmul, layers, d, seq, tokens_per_s, peak, counted / (batch * seq) * tokens_per_s / peak,
             f"N={n_matmul:,}, L={layers}, d={d}, T={seq}, {tokens_per_s:,.0f} tok/s, peak {peak:.3g}: a live GPT, "
             "the FLOP counter's count / (B·T)")


# How each exercise is graded (docs/grading.md's table is generated from every module's ORACLE).
ORACLE = {
    "my_benchmark": answers.Oracle(
        returns="the float my_benchmark returns, with what the instruments beside it saw: how many times it called "
                "the workload, the order of its calls, synchronizes and clock reads on a pretended GPU, whether it "
                "called lecture2.measure.benchmark",
        expected="the median of the durations the case gave the fake clock (and the value each usual summary would "
                 "give: mean, min, sum, ms, warm-up timed); the call count and the call → synchronize → clock order "
                 "by definition; torch.utils.benchmark.Timer's median of the same workload (kind, size, seed, "
                 "thread count), built and timed in the judge in the same run",
        tampering="the fake clock's schedule crosses as an input and the instruments run in the student's process: "
                  "a student who controls it can read the durations and return their median, patch the clock or "
                  "the event log, or report any call count, so the fake-clock, order and count groups can be passed "
                  "without timing anything. What still holds is the live group: the judge times the same workload "
                  "with its own Timer, which the answer cannot reach, and a forged number passes only within 0.5-2x "
                  "of that real time, a second, independent observation of the answer"),
    "mfu": answers.Oracle(
        returns="the float mfu returns for plain numbers (a model's size, its throughput and a peak), and whether it "
                "called lecture2.estimate",
        expected="reference numbers with sources (PaLM 540B App. B: 46.2%), PyTorch's FLOP counter on a real GPT "
                 "training step of drawn size run in the judge (its count over B·T tokens, times tokens/s over the "
                 "peak), the formula on drawn runs",
        tampering="the returned number, which is the answer asked for; the switch that turns the calculator off runs "
                  "in the student's process, so an answer that restores lecture2.estimate there can use the calculator "
                  "and still be scored on its number alone"),
}
