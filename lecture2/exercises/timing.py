"""Notebook 08's check cases: my_benchmark; achieved_flops, training_flops_per_token and mfu;
training_checklist; grad_norm_report.

What a case compares with is measured here (torch.utils.benchmark.Timer on the same work and thread count,
a fake clock whose durations are known, PyTorch's FLOP counter on a real GPT training step, torch's own
total-norm instrument in float64, models whose answer is known by construction) or passed in by the test
cell (reference numbers with their sources). The usual wrong answers are named relative to that value.
"""
from __future__ import annotations

import copy
import math
import random
import statistics
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from unittest import mock

import torch
from torch.utils import benchmark as torch_benchmark
from torch.utils.data import DataLoader, TensorDataset

import lecture2.measure
from lecture2 import checks, measure, models


def _fail(message: str, hint: str | None = None) -> None:
    """A failed case: the message, and the usual mistake's hint (kept apart too, for the grader's feedback)."""
    __tracebackhide__ = True
    raise checks.CheckFailed(message + (f"\n提示 (hint): {hint}" if hint else ""), hint=hint)


# --- my_benchmark ---------------------------------------------------------------------------------------------

BENCHMARK_HINTS = {
    "mean": "看起来你返回的是平均值 (mean)：一个离群值 (outlier) 就把它拉高了；要中位数 (median)。",
    "min": "看起来你返回的是最小值 (min)：那是最乐观的一次；要中位数 (median)。",
    "sum": "看起来你返回的是 repeat 次的总时间：要的是一次调用的时间 (中位数 median)。",
    "ms": "看起来你返回的是毫秒 (ms)：要的是秒 (s)。",
    "warm-up timed": "看起来 warm-up 的调用也被计时了：warm-up 只运行、不计时。",
    "no warm-up": "少了 warm-up：先不计时地调用 fn() warmup 次。",
    "clock": "用 time.perf_counter() 计时 (检查用一个假的时钟来确定每次调用的时间)。",
    "no sync": "CUDA kernel 是异步 (asynchronous) 启动的：每次 fn() 之后、读时钟之前要 "
               "`if torch.cuda.is_available(): torch.cuda.synchronize()`，否则量到的只是启动时间。",
    "clock first": "顺序是 fn() → torch.cuda.synchronize() → time.perf_counter()：先同步，再读时钟。",
    "launch only": "快得不可能：计时前后没有 torch.cuda.synchronize()，只量到了 kernel 启动。",
    "course timer": "my_benchmark 要自己写 warm-up、synchronize 和 median，不能调用 lecture2.measure.benchmark (the course's timer)。",
}
_COURSE_TIMER_OFF = "my_benchmark 不能调用 lecture2.measure.benchmark (the course's timer)"


@contextmanager
def _course_timer_off():
    """lecture2.measure.benchmark raises while the answer runs (wherever it was imported to), restored afterwards:
    a my_benchmark that only calls the course's own timer earns nothing."""
    def switched_off(*args, **kwargs):
        raise RuntimeError("my_benchmark 不能调用 lecture2.measure.benchmark (the course's timer)：自己写 warm-up、synchronize 和 median。")

    timer = lecture2.measure.benchmark
    code = timer.__code__
    timer.__code__ = switched_off.__code__
    try:
        yield
    finally:
        timer.__code__ = code


def _timed(fn, work: Callable[[], object], warmup: int, repeat: int):
    """fn(work, warmup=warmup, repeat=repeat) with the course's timer switched off."""
    __tracebackhide__ = True
    with _course_timer_off():
        try:
            return fn(work, warmup=warmup, repeat=repeat)
        except RuntimeError as err:
            if _COURSE_TIMER_OFF not in str(err):
                raise
    _fail(f"my_benchmark(fn, warmup={warmup}, repeat={repeat}) 调用了 lecture2.measure.benchmark。",
          BENCHMARK_HINTS["course timer"])


def median_case(fn, warmup: int, base: float, rng: random.Random) -> None:
    """fn on a fake fn whose calls move a fake time.perf_counter() by known amounts: `warmup` slow warm-up calls
    (5·base each), then 5 timed calls [base, base, base, 12·base, 0.1·base] in a drawn order. Expected: exactly
    warmup + 5 calls, and `base` seconds (the median; up to 0.1 s of real time on top, for a busy machine)."""
    __tracebackhide__ = True
    timed = [base, base, base, 12 * base, 0.1 * base]
    rng.shuffle(timed)
    durations = [5 * base] * warmup + timed
    calls, offset, real_clock = [], [0.0], time.perf_counter

    def work():
        offset[0] += durations[len(calls)] if len(calls) < len(durations) else 0.0
        calls.append(1)

    with mock.patch("time.perf_counter", lambda: real_clock() + offset[0]):
        got = _timed(fn, work, warmup, 5)
    checks.expect_type(got, float, what=f"my_benchmark(fn, warmup={warmup}, repeat=5)")
    candidates = {  # what each way of summarising would return
        "median": base, "mean": statistics.mean(timed), "min": 0.1 * base, "sum": sum(timed), "ms": 1e3 * base,
        "warm-up timed": statistics.median([5 * base] * warmup + timed),
    }
    if len(calls) != warmup + 5:
        _fail(f"fn 应被调用 warmup + repeat = {warmup + 5} 次，实际 {len(calls)} 次。",
              BENCHMARK_HINTS["no warm-up"] if len(calls) == 5 else None)
    if not base <= got <= base + 0.1:
        nearest = min(candidates, key=lambda k: abs(math.log(max(got, 1e-9) / candidates[k])))
        hint = BENCHMARK_HINTS.get(nearest) if nearest != "median" else None
        if hint is None and got <= 1e-3 * base:
            hint = BENCHMARK_HINTS["clock"]
        _fail(f"my_benchmark 用一个已知耗时的 fn: 期望 (expected) 中位数 {base * 1e3:.1f} ms，得到 (got) {got * 1e3:.3f} ms。", hint)


def order_case(fn, warmup: int, repeat: int) -> None:
    """With torch.cuda pretending a GPU is there, every call of fn, synchronize and clock read is logged in order.
    Expected: exactly warmup + repeat calls, and after each timed call a synchronize, then the clock read."""
    __tracebackhide__ = True
    events, real_clock = [], time.perf_counter

    def clock():
        events.append("clock")
        return real_clock()

    with mock.patch("torch.cuda.is_available", return_value=True), \
         mock.patch("torch.cuda.synchronize", side_effect=lambda *a, **k: events.append("sync")), \
         mock.patch("time.perf_counter", clock):
        _timed(fn, lambda: events.append("call"), warmup, repeat)
    calls = [i for i, e in enumerate(events) if e == "call"]
    checks.expect(len(calls) == warmup + repeat,
                  f"my_benchmark(fn, warmup={warmup}, repeat={repeat}): fn 应被调用恰好 {warmup + repeat} 次，实际 {len(calls)} 次。")
    unsynced = clock_first = 0
    for i, j in zip(calls[warmup:], calls[warmup + 1:] + [len(events)]):
        after = events[i + 1:j]  # what happened between this timed call and the next call
        checks.expect("clock" in after, "每次计时的调用之后都要读一次时钟 (time.perf_counter())：一次调用一个时间。")
        if "sync" not in after[:after.index("clock")]:
            clock_first += "sync" in after
            unsynced += "sync" not in after
    if unsynced:
        _fail(f"在 GPU 上，{repeat} 次计时的调用里有 {unsynced} 次之后没有调用 torch.cuda.synchronize()。", BENCHMARK_HINTS["no sync"])
    if clock_first:
        _fail(f"在 GPU 上，{repeat} 次计时里有 {clock_first} 次先读了时钟、后同步：时钟停在 kernel 启动之后、完成之前。",
              BENCHMARK_HINTS["clock first"])


def calls_case(fn, warmup: int, repeat: int) -> None:
    """fn on a counting fn: exactly warmup + repeat calls (warmup=0: no warm-up at all)."""
    __tracebackhide__ = True
    calls = []
    _timed(fn, lambda: calls.append(1), warmup, repeat)
    checks.expect(len(calls) == warmup + repeat,
                  f"my_benchmark(fn, warmup={warmup}, repeat={repeat}) 应恰好调用 fn {warmup + repeat} 次"
                  + (" (warmup=0：不预热)" if warmup == 0 else "") + f"，实际 {len(calls)} 次。")


@dataclass(frozen=True)
class Work:
    """A workload to time: `run()` does it once; `what` says what it is."""

    run: Callable[[], object]
    what: str


def matmul(n: int, device: str = "cpu") -> Work:
    """An n×n float32 matmul on `device` (n about 450-512: 5-10 ms on one CPU thread)."""
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    return Work(lambda: a @ b, f"a {n}x{n} matmul on {device}")


def elementwise(n: int) -> Work:
    """tanh, then two in-place elementwise ops, on n float32 values on the CPU."""
    v = torch.randn(n)
    return Work(lambda: torch.tanh(v).mul_(2).add_(1), f"tanh of {n} floats on cpu")


def _on_threads(run: Callable[[], object], threads: int) -> Callable[[], object]:
    """`run`, doing its work on `threads` CPU threads in whichever Python thread calls it. torch.set_num_threads
    holds for the thread that calls it: a fresh thread (the course's grader calls an answer in one) starts with
    OpenMP's and MKL's default, every core, while Timer pins its own thread."""
    pinned = threading.local()

    def pinned_run():
        if not getattr(pinned, "done", False):  # the first call in this thread
            torch.set_num_threads(threads)
            pinned.done = True
        return run()

    return pinned_run


def timer_case(fn, work: Work, repeat: int) -> None:
    """fn(work.run, warmup=2, repeat) against torch.utils.benchmark.Timer's median for the same work, measured in
    the same run on the same number of threads: the ratio must lie in 0.5-2 (up to 3 tries on a noisy machine)."""
    __tracebackhide__ = True
    threads = torch.get_num_threads()  # Timer's default is one thread: give it this notebook's count
    run = _on_threads(work.run, threads)
    for _ in range(3):
        reference = torch_benchmark.Timer("work()", globals={"work": run}, num_threads=threads).blocked_autorange(
            min_run_time=0.2).median
        got = _timed(fn, run, 2, repeat)
        checks.expect_type(got, float, what=f"my_benchmark(fn, warmup=2, repeat={repeat})")
        ratio = got / reference
        if 0.5 <= ratio <= 2:
            return
    hint = None
    if 0.5 * repeat <= ratio <= 2 * repeat:
        hint = BENCHMARK_HINTS["sum"]
    elif 300 <= ratio <= 3000:
        hint = BENCHMARK_HINTS["ms"]
    elif ratio < 0.1 and torch.cuda.is_available():
        hint = BENCHMARK_HINTS["launch only"]
    _fail(f"{work.what}: my_benchmark 得到 {got * 1e3:.3f} ms，torch.utils.benchmark.Timer ({threads} 个线程) 得到 "
          f"{reference * 1e3:.3f} ms (比值 ratio {ratio:.3g}，应在 0.5–2 之间)。", hint)


# --- achieved_flops, training_flops_per_token, mfu ------------------------------------------------------------

_TFLOPS = "单位不对：这里所有量都用 FLOP/s，不是 TFLOP/s (差 1e12)。"
_INVERTED = "比值倒过来了：FLOP/s = FLOPs / seconds，MFU = achieved / peak。"


def achieved_case(fn, flops: float, seconds: float, want: float) -> None:
    """fn(flops, seconds) against `want` FLOP/s (rtol 1e-9)."""
    __tracebackhide__ = True
    checks.expect_close(fn(flops, seconds), want, rtol=1e-9, what=f"achieved_flops({flops:.4g}, {seconds:.4g})", mistakes=[
        checks.mistake(_TFLOPS, want / 1e12), checks.mistake(_INVERTED, 1 / want),
        checks.mistake("flops 已经是 FLOPs (乘加的 2 已经算在里面)，不要再乘 2。", 2 * want)])


def per_token_case(fn, n: float, layers: int, d_attn: int, seq: int, want: float, what: str = "") -> None:
    """fn(n, layers, d_attn, seq) against `want` training FLOPs per token (rtol 1e-9); the mistakes: forward
    only, multiply-add once, 6N without the attention term, that term forward only, per sequence."""
    __tracebackhide__ = True
    attention = want - 6 * n  # the attention term of the expected value
    what = f"training_flops_per_token({what or f'{n:.4g}, {layers}, {d_attn}, {seq}'})"
    checks.expect_close(fn(n, layers, d_attn, seq), want, rtol=1e-9, what=what, mistakes=[
        checks.mistake("forward_only", want / 3),
        checks.mistake("multiply_add", want / 2),
        checks.mistake("少了注意力 (attention) 项 12·L·d_attn·T：QKᵀ 和 AV 的 FLOPs 不在 6N 里。", 6 * n),
        checks.mistake("注意力项只算了前向 (4·L·d_attn·T)：前向 + 反向是 12·L·d_attn·T。", 6 * n + attention / 3),
        checks.mistake("这是每条序列 (sequence) 的 FLOPs (乘了 T)：要每个 token 的。", want * seq)])


def mfu_case(fn, per_token: float, tokens: float, seconds: float, peak: float, want: float, what: str = "") -> None:
    """fn(per_token, tokens, seconds, peak) against `want`, a fraction (rtol 1e-9)."""
    __tracebackhide__ = True
    checks.expect_close(fn(per_token, tokens, seconds, peak), want, rtol=1e-9,
                        what=f"mfu({what or f'{per_token:.4g}, {tokens:.4g}, {seconds:.4g}, {peak:.4g}'})", mistakes=[
        checks.mistake("MFU 要返回比例 (fraction, 0.4)，不是百分数 (40)。", 100 * want),
        checks.mistake(_TFLOPS, want * 1e12), checks.mistake(_TFLOPS, want / 1e12),
        checks.mistake(_INVERTED, 1 / want),
        checks.mistake("忘了乘 tokens_per_step：一步的 FLOPs = 每 token 的 FLOPs × token 数。", want / tokens)])


def live_gpt_case(fn, rng: random.Random) -> None:
    """fn on a lecture2 GPT of drawn size (1-3 layers, d 32-128, T 16-48, batch 2-4): N = its matmul weights
    (every Linear, lm_head included), d_attn = d_model. Expected: PyTorch's FLOP counter on its real training
    step (loss and backward), divided by the B·T tokens of the batch."""
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
    "on_gpu": "on_gpu 看的是模型每个参数的 device (p.device.type == 'cuda')，不是机器有没有 GPU "
              "(torch.cuda.is_available())，也不只是第一个参数。",
    "bf16": "bf16 要求每个浮点参数都是 torch.bfloat16：检查所有参数，不只是第一个。",
    "loader_workers": "loader_workers 是 loader.num_workers > 0 (0 表示在主进程里加载数据)。",
    "grad_finite": "grad_finite：还没有任何梯度 (.grad 都是 None) 时应为 False；NaN 和 inf 都不是有限值 "
                   "(torch.isfinite)；要检查每个参数的梯度。",
    "optimizer_has_params": "optimizer_has_params：按参数对象本身比较 (id 或 is)，不是按个数；"
                            "requires_grad=False 的参数不需要在优化器里。",
    "cuda runtime": "on_gpu 只看参数的 device，不需要问 CUDA 运行时 (torch.cuda.current_device() 等)："
                    "检查在没有 GPU 的机器上假装有一块 GPU。",
}


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


def checklist_setup(rng: random.Random, dtype: str = "fp32", workers: int = 0, grads: str = "finite", opt: str = "all",
                    device: str = "cpu"):
    """A small model (Linear, GELU, Linear of drawn width), its optimizer and a loader, and the checklist they
    should give (known by construction). dtype: "fp32", "bf16", "mixed" (first layer bf16); grads: "finite",
    "none" (no backward yet), "nan"/"inf" (in the last parameter); opt: "all", "frozen" (first layer frozen and
    left out), "partial" (first layer only), "copy" (built on a deep copy); device: "cpu", "cuda" (real; where
    there is no GPU, "fake-cuda"), "fake-cuda" (every parameter reports cuda:0), "half-cuda" (only the first layer's)."""
    if device == "cuda" and not torch.cuda.is_available():
        device = "fake-cuda"
    width = rng.randint(4, 12)
    model = torch.nn.Sequential(torch.nn.Linear(width, 2 * width), torch.nn.GELU(), torch.nn.Linear(2 * width, 3))
    if dtype == "bf16":
        model = model.to(torch.bfloat16)
    elif dtype == "mixed":  # the first layer bf16, the last fp32
        model[0].to(torch.bfloat16)
    if device == "cuda":
        model = model.to("cuda")
    elif device in ("fake-cuda", "half-cuda"):
        for layer in (model[0], model[2]) if device == "fake-cuda" else (model[0],):
            for name, p in list(layer.named_parameters(recurse=False)):
                setattr(layer, name, _CudaParameter(p.detach(), requires_grad=p.requires_grad))
    plist = list(model.parameters())
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
    if grads != "none":
        for p in plist:
            if p.requires_grad:
                p.grad = torch.randn_like(p)
        if grads in ("nan", "inf"):
            bad = plist[-1].grad  # in the last parameter: checking only the first one misses it
            bad.view(-1)[rng.randrange(bad.numel())] = float(grads)
    loader = DataLoader(TensorDataset(torch.randn(16, width)), batch_size=4, num_workers=workers)
    want = {"on_gpu": device in ("cuda", "fake-cuda"), "bf16": dtype == "bf16", "loader_workers": workers > 0,
            "grad_finite": grads == "finite", "optimizer_has_params": opt in ("all", "frozen")}
    return model, optimizer, loader, want


def checklist_case(fn, rng: random.Random, gpu_machine: bool = False, **setup) -> None:
    """fn(model, optimizer, loader) on `checklist_setup(rng, **setup)`: a dict of exactly CHECKLIST_KEYS, each a
    bool equal to what the setup gives by construction. `gpu_machine`: torch.cuda.is_available() is True while
    fn runs (mocked where there is no GPU). An error the answer raises is never hidden."""
    __tracebackhide__ = True
    model, optimizer, loader, want = checklist_setup(rng, **setup)
    described = {"dtype": "fp32", "workers": 0, "grads": "finite", "opt": "all", "device": "cpu", **setup}
    what = ", ".join(f"{k}={v}" for k, v in described.items()) + (", on a machine with a GPU" if gpu_machine else "")
    if gpu_machine and not torch.cuda.is_available():
        with mock.patch("torch.cuda.is_available", return_value=True), mock.patch("torch.cuda.device_count", return_value=1):
            try:
                got = fn(model, optimizer, loader)
            except NotImplementedError:
                raise
            except Exception as err:  # not hidden: the check fails, and says why the mock world broke the answer
                _fail(f"training_checklist({what}) 出错 (raised) {type(err).__name__}: {err}", CHECKLIST_HINTS["cuda runtime"])
    else:
        got = fn(model, optimizer, loader)
    checks.expect_type(got, dict, what=f"training_checklist({what})")
    checks.expect(set(got) == CHECKLIST_KEYS, f"training_checklist 的键 (keys) 应是 {sorted(CHECKLIST_KEYS)}，得到 {sorted(got)}")
    for key in sorted(CHECKLIST_KEYS):
        checks.expect_type(got[key], bool, what=f"training_checklist({what})[{key!r}]")
        if got[key] != want[key]:
            _fail(f"training_checklist({what})[{key!r}]: 期望 (expected) {want[key]}，得到 (got) {got[key]}。", CHECKLIST_HINTS[key])


# --- grad_norm_report -----------------------------------------------------------------------------------------

NORM_HINTS = {
    "sum_of_norms": "全局范数是所有梯度元素平方和的平方根 sqrt(Σ‖g_i‖²)，不是各个参数梯度范数之和 Σ‖g_i‖ (那样偏大)。",
    "squared": "忘了开方：Σ‖g_i‖² 是范数的平方，global_norm = sqrt(Σ‖g_i‖²)。",
    "skipped": "有 NaN/inf 梯度时全局范数也应是 NaN/inf (clip_grad_norm_ 也这样返回)：这正是监控要看到的信号，"
               "不要跳过它们或把它们换成 0。",
    "none": ".grad 是 None 的参数 (冻结的、这一步没用到的) 没有梯度：跳过它们，它们不进范数，也不是 nonfinite。",
    "names": "nonfinite 要列出梯度里有 NaN 或 inf 的每一个参数的名字 (model.named_parameters() 给的 name)，"
             "按 named_parameters() 的顺序；一个都没有时是 []。",
}


class _Net(torch.nn.Module):
    def __init__(self, d_in: int, d_h: int, spare: bool):
        super().__init__()
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
    put into gradients other than the first (checking only the first one misses them)."""
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


def _expected_norms(model: torch.nn.Module):
    """From the gradients, in float64 with torch's own total-norm instrument: the global norm, the names of the
    non-finite ones, what the usual mistakes give, and the norm of the finite gradients alone."""
    named = [(n, p.grad.detach().double()) for n, p in model.named_parameters() if p.grad is not None]
    total = lambda gs: float(torch.nn.utils.get_total_norm(gs)) if gs else 0.0  # noqa: E731
    norm = total([g for _, g in named])
    finite = [g for _, g in named if bool(torch.isfinite(g).all())]
    mistakes = {"sum_of_norms": sum(float(torch.linalg.vector_norm(g)) for _, g in named), "squared": norm ** 2}
    return norm, [n for n, g in named if not bool(torch.isfinite(g).all())], mistakes, total(finite)


def grad_norm_case(fn, model: torch.nn.Module, what: str, rtol: float = 1e-5) -> None:
    """fn(model): {"global_norm": float, "nonfinite": list} against torch.nn.utils.get_total_norm of the gradients
    in float64 (rtol; NaN/inf exactly) and the names of the gradients holding NaN or inf, in named_parameters()
    order; the gradients must be left unchanged."""
    __tracebackhide__ = True
    want_norm, want_bad, mistakes, finite_only = _expected_norms(model)
    before = [None if p.grad is None else p.grad.clone() for p in model.parameters()]
    has_none = any(p.grad is None for p in model.parameters())
    try:
        got = fn(model)
    except (AttributeError, TypeError) as err:  # not hidden: it fails, with the hint when None gradients cause it
        if has_none:
            _fail(f"grad_norm_report({what}) 出错 (raised) {type(err).__name__}: {err}", NORM_HINTS["none"])
        raise
    checks.expect_type(got, dict, what=f"grad_norm_report({what})")
    checks.expect(set(got) == {"global_norm", "nonfinite"},
                  f"grad_norm_report 的键 (keys) 应是 ['global_norm', 'nonfinite']，得到 {sorted(got)}")
    same = all((a is None and b is None) or (a is not None and b is not None and torch.equal(a.isnan(), b.isnan())
               and torch.equal(a.nan_to_num(), b.nan_to_num())) for a, b in zip(before, (p.grad for p in model.parameters())))
    checks.expect(same, f"grad_norm_report({what}) 改动了梯度：只读它们 (clip_grad_norm_ 会缩放梯度，不要用它来算)。")
    norm = got["global_norm"]
    checks.expect_type(norm, float, what=f"grad_norm_report({what})['global_norm']")
    if math.isfinite(want_norm):
        checks.expect_close(norm, want_norm, rtol=rtol, what=f"grad_norm_report({what})['global_norm']",
                            mistakes=[checks.mistake(NORM_HINTS[k], v) for k, v in mistakes.items()])
    else:
        ok = math.isnan(norm) if math.isnan(want_norm) else norm == want_norm
        skipped = math.isfinite(norm) and math.isclose(norm, finite_only, rel_tol=rtol)
        if not ok:
            _fail(f"grad_norm_report({what})['global_norm']: 期望 (expected) {want_norm}，得到 (got) {norm}。",
                  NORM_HINTS["skipped"] if skipped or math.isfinite(norm) else None)
    bad = got["nonfinite"]
    checks.expect_type(bad, list, what=f"grad_norm_report({what})['nonfinite']")
    if bad != want_bad:
        no_grad = {n for n, p in model.named_parameters() if p.grad is None}
        hint = NORM_HINTS["none"] if any(n in no_grad for n in bad if isinstance(n, str)) else NORM_HINTS["names"]
        _fail(f"grad_norm_report({what})['nonfinite']: 期望 (expected) {want_bad}，得到 (got) {bad}。", hint)
