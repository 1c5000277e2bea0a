"""Notebook 08's check cases: my_benchmark; achieved_flops, training_flops_per_token and mfu;
training_checklist; grad_norm_report.

Every answer is reached through lecture2.answers (plain data both ways). What needs more than a call runs beside
the answer in an instrument of this module (`@answers.observer`), built there from plain-data inputs: a fake
clock whose durations the case chose, a fake GPU that logs each call, synchronize and clock read, a real workload
described by its kind and size, a model, optimizer and loader from a recipe, a network rebuilt from its state and
gradients. An instrument returns only what it saw (what the answer returned, call counts, the order of events,
the gradients after the call); it never judges.

What a case compares with is computed here, in the process that runs the check: torch.utils.benchmark.Timer on
the same workload (same kind, size and thread count), the durations the case gave the fake clock, PyTorch's FLOP
counter on a real GPT training step, torch's own total-norm instrument in float64 on the gradients the case sent,
checklists known by construction from the recipe; or passed in by the test cell (reference numbers with their
sources). The usual wrong answers are named relative to that value, each by its hint's key.
"""
from __future__ import annotations

import copy
import math
import random
import statistics
import time
from contextlib import contextmanager
from unittest import mock

import torch
from torch.utils import benchmark as torch_benchmark
from torch.utils.data import DataLoader, TensorDataset

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


# --- achieved_flops, training_flops_per_token, mfu ------------------------------------------------------------

FLOPS_HINTS = {
    "timing.tflops": "单位不对：这里所有量都用 FLOP/s，不是 TFLOP/s (差 1e12)。",
    "timing.inverted": "比值倒过来了：FLOP/s = FLOPs / seconds，MFU = achieved / peak。",
    "timing.flops_doubled": "flops 已经是 FLOPs (乘加的 2 已经算在里面)，不要再乘 2。",
    "timing.no_attention": "少了注意力 (attention) 项 12·L·d_attn·T：QKᵀ 和 AV 的 FLOPs 不在 6N 里。",
    "timing.attention_forward": "注意力项只算了前向 (4·L·d_attn·T)：前向 + 反向是 12·L·d_attn·T。",
    "timing.per_sequence": "这是每条序列 (sequence) 的 FLOPs (乘了 T)：要每个 token 的。",
    "timing.percent": "MFU 要返回比例 (fraction, 0.4)，不是百分数 (40)。",
    "timing.tokens_per_step": "忘了乘 tokens_per_step：一步的 FLOPs = 每 token 的 FLOPs × token 数。",
}
checks.register_hints(FLOPS_HINTS)


def achieved_case(fn, flops: float, seconds: float, want: float) -> None:
    """fn(flops, seconds) against `want` FLOP/s (rtol 1e-9)."""
    __tracebackhide__ = True
    checks.expect_close(answers.call(fn, flops, seconds), want, rtol=1e-9, what=f"achieved_flops({flops:.4g}, {seconds:.4g})",
                        mistakes=[checks.mistake("timing.tflops", want / 1e12), checks.mistake("timing.inverted", 1 / want),
                                  checks.mistake("timing.flops_doubled", 2 * want)])


def per_token_case(fn, n: float, layers: int, d_attn: int, seq: int, want: float, what: str = "") -> None:
    """fn(n, layers, d_attn, seq) against `want` training FLOPs per token (rtol 1e-9); the mistakes: forward
    only, multiply-add once, 6N without the attention term, that term forward only, per sequence."""
    __tracebackhide__ = True
    attention = want - 6 * n  # the attention term of the expected value
    what = f"training_flops_per_token({what or f'{n:.4g}, {layers}, {d_attn}, {seq}'})"
    got = checks.by_formula(fn, n, layers, d_attn, seq, what=what)  # lecture2.estimate has the formula
    checks.expect_close(got, want, rtol=1e-9, what=what, mistakes=[
        checks.mistake("forward_only", want / 3),
        checks.mistake("multiply_add", want / 2),
        checks.mistake("timing.no_attention", 6 * n),
        checks.mistake("timing.attention_forward", 6 * n + attention / 3),
        checks.mistake("timing.per_sequence", want * seq)])


def mfu_case(fn, per_token: float, tokens: float, seconds: float, peak: float, want: float, what: str = "") -> None:
    """fn(per_token, tokens, seconds, peak) against `want`, a fraction (rtol 1e-9)."""
    __tracebackhide__ = True
    checks.expect_close(answers.call(fn, per_token, tokens, seconds, peak), want, rtol=1e-9,
                        what=f"mfu({what or f'{per_token:.4g}, {tokens:.4g}, {seconds:.4g}, {peak:.4g}'})", mistakes=[
        checks.mistake("timing.percent", 100 * want),
        checks.mistake("timing.tflops", want * 1e12), checks.mistake("timing.tflops", want / 1e12),
        checks.mistake("timing.inverted", 1 / want),
        checks.mistake("timing.tokens_per_step", want / tokens)])


def live_gpt_case(fn, rng: random.Random) -> None:
    """fn on a lecture2 GPT of drawn size (1-3 layers, d 32-128, T 16-48, batch 2-4): N = its matmul weights
    (every Linear, lm_head included), d_attn = d_model. Expected: PyTorch's FLOP counter on its real training
    step (loss and backward), run here, divided by the B·T tokens of the batch; the answer gets the plain numbers."""
    __tracebackhide__ = True
    layers, heads, head_dim = rng.randint(1, 3), rng.choice([2, 4]), rng.choice([16, 32])
    d, seq, batch, vocab = heads * head_dim, rng.choice([16, 32, 48]), rng.randint(2, 4), rng.choice([256, 384])
    torch.manual_seed(rng.randint(0, 10**6))
    net = models.GPT(models.GPTConfig(vocab_size=vocab, block_size=64, n_layer=layers, n_head=heads, d_model=d))
    x, y = torch.randint(0, vocab, (batch, seq)), torch.randint(0, vocab, (batch, seq))
    counted = measure.count_flops(lambda: net.loss(x, y).backward())  # live: the FLOP counter on the real step
    n_matmul = sum(m.weight.numel() for m in net.modules() if isinstance(m, torch.nn.Linear))
    per_token_case(fn, n_matmul, layers, d, seq, counted / (batch * seq),
                   f"N={n_matmul:,}, L={layers}, d={d}, T={seq}: a live GPT, the FLOP counter's count / (B·T)")


# --- training_checklist ---------------------------------------------------------------------------------------

CHECKLIST_KEYS = {"on_gpu", "bf16", "loader_workers", "grad_finite", "optimizer_has_params"}
CHECKLIST_HINTS = {
    "timing.on_gpu": "on_gpu 看的是模型每个参数的 device (p.device.type == 'cuda')，不是机器有没有 GPU "
                     "(torch.cuda.is_available())，也不只是第一个参数。",
    "timing.bf16": "bf16 要求每个浮点参数都是 torch.bfloat16：检查所有参数，不只是第一个。",
    "timing.loader_workers": "loader_workers 是 loader.num_workers > 0 (0 表示在主进程里加载数据)。",
    "timing.grad_finite": "grad_finite：还没有任何梯度 (.grad 都是 None) 时应为 False；NaN 和 inf 都不是有限值 "
                          "(torch.isfinite)；要检查每个参数的梯度。",
    "timing.optimizer_has_params": "optimizer_has_params：按参数对象本身比较 (id 或 is)，不是按个数；"
                                   "requires_grad=False 的参数不需要在优化器里。",
    "timing.cuda_runtime": "on_gpu 只看参数的 device，不需要问 CUDA 运行时 (torch.cuda.current_device() 等)："
                           "检查在没有 GPU 的机器上假装有一块 GPU。",
}
checks.register_hints(CHECKLIST_HINTS)


class _CudaParameter(torch.nn.Parameter):
    """A CPU parameter that reports itself as one on cuda:0: a GPU model on a grader without a GPU."""

    @property
    def device(self):
        return torch.device("cuda", 0)

    @property
    def is_cuda(self):
        return True

    def get_device(self):
        return 0


def checklist_recipe(rng: random.Random, dtype: str = "fp32", workers: int = 0, grads: str = "finite", opt: str = "all",
                     device: str = "cpu") -> dict:
    """A training setup as data (drawn width, seed and bad element), for `build_checklist_setup`. dtype: "fp32",
    "bf16", "mixed" (first layer bf16); grads: "finite", "none" (no backward yet), "nan"/"inf" (in the last
    parameter); opt: "all", "frozen" (first layer frozen and left out), "partial" (first layer only), "copy" (built
    on a deep copy); device: "cpu", "cuda" (real; where there is no GPU, "fake-cuda"), "fake-cuda" (every
    parameter reports cuda:0), "half-cuda" (only the first layer's)."""
    return {"width": rng.randint(4, 12), "dtype": dtype, "workers": int(workers), "grads": grads, "opt": opt,
            "device": device, "seed": rng.randint(0, 2**31 - 1), "bad_index": rng.randrange(3)}


def checklist_want(recipe: dict) -> dict[str, bool]:
    """The checklist a setup gives, by construction of `build_checklist_setup`."""
    return {"on_gpu": recipe["device"] in ("cuda", "fake-cuda"), "bf16": recipe["dtype"] == "bf16",
            "loader_workers": recipe["workers"] > 0, "grad_finite": recipe["grads"] == "finite",
            "optimizer_has_params": recipe["opt"] in ("all", "frozen")}


def build_checklist_setup(recipe: dict):
    """The model (Linear, GELU, Linear), optimizer and loader a recipe describes (see `checklist_recipe`)."""
    device = recipe["device"]
    if device == "cuda" and not torch.cuda.is_available():
        device = "fake-cuda"
    torch.manual_seed(int(recipe["seed"]))
    width = int(recipe["width"])
    model = torch.nn.Sequential(torch.nn.Linear(width, 2 * width), torch.nn.GELU(), torch.nn.Linear(2 * width, 3))
    if recipe["dtype"] == "bf16":
        model = model.to(torch.bfloat16)
    elif recipe["dtype"] == "mixed":  # the first layer bf16, the last fp32
        model[0].to(torch.bfloat16)
    if device == "cuda":
        model = model.to("cuda")
    elif device in ("fake-cuda", "half-cuda"):
        for layer in (model[0], model[2]) if device == "fake-cuda" else (model[0],):
            for name, p in list(layer.named_parameters(recurse=False)):
                setattr(layer, name, _CudaParameter(p.detach(), requires_grad=p.requires_grad))
    plist = list(model.parameters())
    opt = recipe["opt"]
    if opt == "frozen":  # the first layer frozen: the optimizer rightly holds only the trainable ones
        for p in model[0].parameters():
            p.requires_grad_(False)
        optimizer = torch.optim.SGD([p for p in plist if p.requires_grad], lr=0.1)
    elif opt == "partial":
        optimizer = torch.optim.SGD(model[0].parameters(), lr=0.1)
    elif opt == "copy":  # built on a copy of the model: the same count, other objects
        optimizer = torch.optim.AdamW(copy.deepcopy(model).parameters(), lr=0.1)
    else:
        optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)
    if recipe["grads"] != "none":
        for p in plist:
            if p.requires_grad:
                p.grad = torch.randn_like(p)
        if recipe["grads"] in ("nan", "inf"):
            bad = plist[-1].grad  # in the last parameter (3 elements): checking only the first one misses it
            bad.view(-1)[int(recipe["bad_index"]) % bad.numel()] = float(recipe["grads"])
    loader = DataLoader(TensorDataset(torch.randn(16, width)), batch_size=4, num_workers=int(recipe["workers"]))
    return model, optimizer, loader


@answers.observer
def observe_checklist(fn, recipe: dict, gpu_machine: bool) -> dict:
    """Beside the answer: fn(model, optimizer, loader) on the setup `recipe` describes, built here; with
    `gpu_machine`, torch.cuda.is_available() is True while fn runs (mocked where there is no GPU). Returns what
    fn returned (an error it raises is raised)."""
    model, optimizer, loader = build_checklist_setup(recipe)
    if gpu_machine and not torch.cuda.is_available():
        with mock.patch("torch.cuda.is_available", return_value=True), mock.patch("torch.cuda.device_count", return_value=1):
            return {"returned": fn(model, optimizer, loader)}
    return {"returned": fn(model, optimizer, loader)}


def checklist_case(fn, rng: random.Random, gpu_machine: bool = False, **setup) -> None:
    """fn(model, optimizer, loader) on the setup `checklist_recipe(rng, **setup)` describes, built beside the
    answer: a dict of exactly CHECKLIST_KEYS, each a bool equal to what the recipe gives by construction.
    `gpu_machine`: torch.cuda.is_available() is True while fn runs (mocked where there is no GPU). An error the
    answer raises is never hidden."""
    __tracebackhide__ = True
    recipe = checklist_recipe(rng, **setup)
    want = checklist_want(recipe)
    described = {"dtype": "fp32", "workers": 0, "grads": "finite", "opt": "all", "device": "cpu", **setup}
    what = ", ".join(f"{k}={v}" for k, v in described.items()) + (", on a machine with a GPU" if gpu_machine else "")
    mocked = gpu_machine and not torch.cuda.is_available()
    try:
        observed = answers.observe(observe_checklist, fn, recipe, gpu_machine)
    except (NotImplementedError, answers.AnswerUnavailable):
        raise
    except Exception as err:  # not hidden: the check fails, and says why the mock world broke the answer
        if not mocked:
            raise
        checks.fail(f"training_checklist({what}) 出错 (raised) {answers.quoted(err)}", "timing.cuda_runtime")
    got = _seen(observed, "returned")["returned"]
    checks.expect_type(got, dict, what=f"training_checklist({what})")
    checks.expect(set(got) == CHECKLIST_KEYS, f"training_checklist 的键 (keys) 应是 {sorted(CHECKLIST_KEYS)}，得到 {sorted(map(str, got))}")
    for key in sorted(CHECKLIST_KEYS):
        checks.expect_type(got[key], bool, what=f"training_checklist({what})[{key!r}]")
        if got[key] != want[key]:
            checks.fail(f"training_checklist({what})[{key!r}]: 期望 (expected) {want[key]}，得到 (got) {checks.shown(got[key])}。",
                        f"timing.{key}")


# --- grad_norm_report -----------------------------------------------------------------------------------------

NORM_HINTS = {
    "timing.sum_of_norms": "全局范数是所有梯度元素平方和的平方根 sqrt(Σ‖g_i‖²)，不是各个参数梯度范数之和 Σ‖g_i‖ (那样偏大)。",
    "timing.squared": "忘了开方：Σ‖g_i‖² 是范数的平方，global_norm = sqrt(Σ‖g_i‖²)。",
    "timing.skipped": "有 NaN/inf 梯度时全局范数也应是 NaN/inf (clip_grad_norm_ 也这样返回)：这正是监控要看到的信号，"
                      "不要跳过它们或把它们换成 0。",
    "timing.none_grads": ".grad 是 None 的参数 (冻结的、这一步没用到的) 没有梯度：跳过它们，它们不进范数，也不是 nonfinite。",
    "timing.names": "nonfinite 要列出梯度里有 NaN 或 inf 的每一个参数的名字 (model.named_parameters() 给的 name)，"
                    "按 named_parameters() 的顺序；一个都没有时是 []。",
    "timing.grads_changed": "grad_norm_report 只读梯度，不改它们：clip_grad_norm_ 会缩放梯度 (NaN 范数时把它们都变成 NaN)，"
                            "不要用它来算。",
}
checks.register_hints(NORM_HINTS)


class _Net(torch.nn.Module):
    def __init__(self, d_in: int, d_h: int, spare: bool):
        super().__init__()
        self.arch = {"kind": "net", "d_in": d_in, "d_h": d_h, "spare": spare}
        self.inp = torch.nn.Linear(d_in, d_h)
        self.norm = torch.nn.LayerNorm(d_h)
        self.out = torch.nn.Linear(d_h, 2)
        if spare:  # defined but never called in forward: its .grad stays None
            self.spare = torch.nn.Linear(d_h, 2)

    def forward(self, x):
        return self.out(torch.relu(self.norm(self.inp(x))))


def small_net(rng: random.Random, dtype: torch.dtype = torch.float32, frozen: bool = False, spare: bool = False,
              bad: tuple[str, ...] = (), scale: float = 1.0, device: str = "cpu") -> torch.nn.Module:
    """A small network (Linear, LayerNorm, Linear of drawn sizes) after one backward on inputs of scale `scale`;
    `frozen`: the first weight requires no grad; `spare`: a layer forward never calls; `bad`: "nan"/"inf" values
    put into gradients other than the first (checking only the first one misses them). Built where the check runs:
    the case sends its state and gradients."""
    net = _Net(rng.randint(3, 12), rng.randint(4, 16), spare).to(device=device, dtype=dtype)
    if frozen:
        net.inp.weight.requires_grad_(False)
    x = scale * torch.randn(rng.randint(2, 8), net.inp.in_features, device=device, dtype=dtype)
    net(x).pow(2).mean().backward()
    with_grad = [p for p in net.parameters() if p.grad is not None]
    for kind, p in zip(bad, rng.sample(with_grad[1:], len(bad))):
        p.grad.view(-1)[rng.randrange(p.numel())] = float(kind)
    return net


def untrained_net() -> torch.nn.Module:
    """A small network before any backward: every .grad is None."""
    return _Net(4, 5, False)


def gpt_with_nan(rng: random.Random) -> torch.nn.Module:
    """lecture2's GPT (2 layers, nested names) after one backward, with a NaN in blocks.1.ffn.up.weight's gradient."""
    torch.manual_seed(rng.randint(0, 10**6))
    gpt = models.GPT(models.GPTConfig(vocab_size=64, block_size=16, n_layer=2, n_head=2, d_model=16))
    ids = torch.randint(0, 64, (2, 16))
    gpt.loss(ids, ids).backward()
    dict(gpt.named_parameters())["blocks.1.ffn.up.weight"].grad[0, 0] = float("nan")
    return gpt


def net_recipe(model: torch.nn.Module) -> dict:
    """A network of this module (or lecture2's GPT) as data: its architecture, dtype, device, state_dict, which
    parameters require grad, and every parameter's gradient (None where there is none)."""
    if isinstance(model, _Net):
        arch = dict(model.arch)
    elif isinstance(model, models.GPT):
        arch = {"kind": "gpt", "config": model.config}
    else:
        raise TypeError(f"not a network of the checks: {type(model).__name__}")
    first = next(model.parameters())
    named = list(model.named_parameters())
    return {"arch": arch, "dtype": first.dtype, "device": str(first.device),
            "state": {k: v.detach() for k, v in model.state_dict().items()},
            "requires_grad": {n: p.requires_grad for n, p in named},
            "grads": {n: None if p.grad is None else p.grad.detach() for n, p in named}}


def build_net(recipe: dict) -> torch.nn.Module:
    """The network `net_recipe` described, rebuilt with the same parameters and gradients."""
    arch = recipe["arch"]
    if arch["kind"] == "gpt":
        model = models.GPT(arch["config"])
    elif arch["kind"] == "net":
        model = _Net(int(arch["d_in"]), int(arch["d_h"]), bool(arch["spare"]))
    else:
        raise ValueError(f"not a network of the checks: {arch!r}"[:200])
    device = recipe["device"] if not recipe["device"].startswith("cuda") or torch.cuda.is_available() else "cpu"
    model = model.to(device=device, dtype=recipe["dtype"])
    model.load_state_dict(recipe["state"])
    for name, p in model.named_parameters():
        p.requires_grad_(bool(recipe["requires_grad"][name]))
        grad = recipe["grads"][name]
        p.grad = None if grad is None else grad.to(device=p.device, dtype=p.dtype).clone()
    return model


@answers.observer
def observe_grad_norm(fn, recipe: dict) -> dict:
    """Beside the answer: fn(model) on the network `recipe` describes (rebuilt here with the same parameters and
    gradients). Returns what fn returned and every parameter's gradient after the call (None where there is none)."""
    model = build_net(recipe)
    got = fn(model)
    return {"returned": got,
            "grads": {n: None if p.grad is None else p.grad.detach() for n, p in model.named_parameters()}}


def _expected_norms(model: torch.nn.Module):
    """From the gradients, in float64 with torch's own total-norm instrument: the global norm, the names of the
    non-finite ones, what the usual mistakes give, and the norm of the finite gradients alone."""
    named = [(n, p.grad.detach().double()) for n, p in model.named_parameters() if p.grad is not None]
    total = lambda gs: float(torch.nn.utils.get_total_norm(gs)) if gs else 0.0  # noqa: E731
    norm = total([g for _, g in named])
    finite = [g for _, g in named if bool(torch.isfinite(g).all())]
    mistakes = {"timing.sum_of_norms": sum(float(torch.linalg.vector_norm(g)) for _, g in named), "timing.squared": norm ** 2}
    return norm, [n for n, g in named if not bool(torch.isfinite(g).all())], mistakes, total(finite)


def _same_grads(sent: dict, back: object) -> bool:
    """Are the gradients the instrument saw after the call those the case sent (NaN where NaN, equal elsewhere)?"""
    if type(back) is not dict or set(back) != set(sent):
        return False
    for name, a in sent.items():
        b = back[name]
        if a is None or b is None:
            if a is not b:
                return False
            continue
        if type(b) not in (torch.Tensor, torch.nn.Parameter) or b.shape != a.shape or b.dtype != a.dtype:
            return False
        a, b = a.cpu(), b.cpu()
        if not (torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(), b.nan_to_num())):
            return False
    return True


def grad_norm_case(fn, model: torch.nn.Module, what: str, rtol: float = 1e-5) -> None:
    """fn(model) on a copy of `model` rebuilt beside the answer from its state and gradients: {"global_norm": float,
    "nonfinite": list} against torch.nn.utils.get_total_norm of the gradients in float64 (rtol; NaN/inf exactly)
    and the names of the gradients holding NaN or inf, in named_parameters() order; the gradients must be left
    unchanged."""
    __tracebackhide__ = True
    want_norm, want_bad, mistakes, finite_only = _expected_norms(model)
    recipe = net_recipe(model)
    has_none = any(g is None for g in recipe["grads"].values())
    try:
        observed = answers.observe(observe_grad_norm, fn, recipe)
    except (AttributeError, TypeError) as err:  # not hidden: it fails, with the hint when None gradients cause it
        if has_none:
            checks.fail(f"grad_norm_report({what}) 出错 (raised) {answers.quoted(err)}", "timing.none_grads")
        raise
    seen = _seen(observed, "returned", "grads")
    got = seen["returned"]
    checks.expect_type(got, dict, what=f"grad_norm_report({what})")
    checks.expect(set(got) == {"global_norm", "nonfinite"},
                  f"grad_norm_report 的键 (keys) 应是 ['global_norm', 'nonfinite']，得到 {sorted(map(str, got))}")
    if not _same_grads(recipe["grads"], seen["grads"]):
        checks.fail(f"grad_norm_report({what}) 改动了梯度。", "timing.grads_changed")
    norm = got["global_norm"]
    checks.expect_type(norm, float, what=f"grad_norm_report({what})['global_norm']")
    if math.isfinite(want_norm):
        checks.expect_close(norm, want_norm, rtol=rtol, what=f"grad_norm_report({what})['global_norm']",
                            mistakes=[checks.mistake(k, v) for k, v in mistakes.items()])
    else:
        ok = math.isnan(norm) if math.isnan(want_norm) else norm == want_norm
        skipped = math.isfinite(norm) and math.isclose(norm, finite_only, rel_tol=rtol)
        if not ok:
            checks.fail(f"grad_norm_report({what})['global_norm']: 期望 (expected) {want_norm}，得到 (got) {norm}。",
                        "timing.skipped" if skipped or math.isfinite(norm) else None)
    bad = got["nonfinite"]
    checks.expect_type(bad, list, what=f"grad_norm_report({what})['nonfinite']")
    if bad != want_bad:
        no_grad = {n for n, g in recipe["grads"].items() if g is None}
        hint = "timing.none_grads" if any(n in no_grad for n in bad if isinstance(n, str)) else "timing.names"
        checks.fail(f"grad_norm_report({what})['nonfinite']: 期望 (expected) {want_bad}，得到 (got) {bad}。", hint)


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
        returns="the floats achieved_flops, training_flops_per_token and mfu return for plain numbers",
        expected="reference numbers with sources (PaLM 540B App. B, nanoGPT's GPT-2), PyTorch's FLOP counter on a "
                 "real GPT training step of drawn size run in the judge, the formulas on drawn runs",
        tampering="nothing but the returned numbers"),
    "training_checklist": answers.Oracle(
        returns="the dict of bools training_checklist returns for a model, optimizer and loader built beside it "
                "from a recipe (width, dtypes, gradients, optimizer, device, workers, seed)",
        expected="the checklist the recipe gives by construction, computed in the judge from the recipe alone",
        tampering="nothing but the returned booleans, which are the answer asked for"),
    "grad_norm_report": answers.Oracle(
        returns="the dict {global_norm, nonfinite} grad_norm_report returns for a network rebuilt beside it from "
                "the state and gradients the case sends, and that network's gradients after the call",
        expected="torch.nn.utils.get_total_norm in float64 of the gradients the judge built and sent, and the names "
                 "of those holding NaN or inf",
        tampering="the returned norm and names are the answer asked for; the gradients after the call are an "
                  "observation the student's process could forge, which only hides a report that changed them"),
}
