"""Notebook 07's check cases: CheckpointedStack, checkpoint_memory and best_segments, recompute_overhead.

Expected values are measured here on live stacks of TransformerBlocks (outputs and gradients of the plain
stack, `measure.saved_bytes`, `measure.count_flops` of PyTorch's own non-reentrant checkpoint, the CUDA
allocator's peak) or passed in by the test cell (reference numbers, and the memory model's formula for drawn
sizes, which stays in the cell). The FLOPs a wrong answer would give are counted too, on the meta device.
"""
from __future__ import annotations

import importlib
import math

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint, checkpoint_sequential

import lecture2.measure
import lecture2.models
from lecture2 import checks

# fresh copies of the instruments (test cells reload this module): nothing a notebook's cells did to them counts
measure = importlib.reload(lecture2.measure)
models = importlib.reload(lecture2.models)


def _blocks(n: int, b: int, t: int, d: int, n_heads: int, seed: int) -> tuple[nn.ModuleList, list, torch.Tensor]:
    """n fresh TransformerBlock(d, n_heads), their parameters, and an input (b, t, d) that requires grad."""
    torch.manual_seed(seed)
    mods = nn.ModuleList(models.TransformerBlock(d, n_heads) for _ in range(n))
    return mods, list(mods.parameters()), torch.randn(b, t, d, requires_grad=True)


def _run_plain(mods, inp: torch.Tensor) -> torch.Tensor:
    for mod in mods:
        inp = mod(inp)
    return inp


# --- CheckpointedStack ----------------------------------------------------------------------------------------

def stack_case(cls, n: int, s: int, b: int, t: int, d: int, n_heads: int, seed: int):
    """cls(blocks, s) on n live blocks: outputs and gradients equal to the plain stack's, and its forward saves
    exactly s layer inputs (measure.saved_bytes, parameters excluded). Returns (blocks, params, x, stack)."""
    __tracebackhide__ = True
    mods, ps, inp = _blocks(n, b, t, d, n_heads, seed)
    what = f"CheckpointedStack(L={n}, segments={s}) on x of shape {tuple(inp.shape)}"
    stack = cls(mods, s)
    checks.expect_type(stack, nn.Module, what=what)
    want = _run_plain(mods, inp)
    want.square().mean().backward()
    want_grads = [inp.grad.clone()] + [p.grad.clone() for p in ps]
    inp.grad = None
    mods.zero_grad(set_to_none=True)
    got = stack(inp)
    checks.expect(isinstance(got, torch.Tensor) and got.shape == want.shape
                  and torch.allclose(got, want.detach(), rtol=1e-5, atol=1e-6),
                  f"{what}: 输出与普通 stack 不同 (outputs differ)。每个 block 都要按顺序恰好运行一次；"
                  f"L 不能被 segments 整除时，别漏掉余下的层。")
    got.square().mean().backward()
    got_grads = [inp.grad] + [p.grad for p in ps]
    checks.expect(all(g is not None and torch.allclose(g, w, rtol=1e-4, atol=1e-6) for g, w in zip(got_grads, want_grads)),
                  f"{what}: 梯度 (gradients) 与普通 stack 不同，或者 x / 参数没有得到梯度。"
                  f"不要 detach() 段的输入，也不要复制 blocks：checkpoint 自己会把梯度传回去。")
    a_ = inp.nbytes                                                  # live: one layer input
    A_ = measure.saved_bytes(lambda: mods[0](inp), exclude=ps)       # live: what one block saves
    last = n - (s - 1) * (n // s)                                    # checkpoint_sequential's last segment
    checks.expect_equal(measure.saved_bytes(lambda: stack(inp), exclude=ps), s * a_,
                        what=f"{what}: 前向保存的字节数 (saved bytes, parameters excluded)", mistakes=[
        checks.mistake("没有 checkpoint：普通前向保存了每一层的全部激活 (all activations)。", n * A_),
        checks.mistake("你给每一层都设了检查点 (every layer)：保存了 L 个层输入，而不是 segments 个。", n * a_),
        checks.mistake("segments 是段数 (number of segments)，不是每段的层数 (layers per segment)。", -(-n // s) * a_),
        checks.mistake("最后一段没有 checkpoint（checkpoint_sequential 就是这样做的）：它的激活全部被保存了。"
                       "这个练习要求每一段都 checkpoint。", (s - 1) * a_ + last * A_),
    ])
    return mods, ps, inp, stack


def stack_flops_case(cls, n: int, s: int, b: int, t: int, d: int, n_heads: int, seed: int) -> None:
    """stack_case, then the FLOPs of forward + backward through the stack (count_flops): the plain step, plus one
    recomputed forward, less the down projection of each segment's last block (non-reentrant checkpoint stops
    recomputing once the last saved tensor is back), all three counted live."""
    __tracebackhide__ = True
    mods, ps, inp, stack = stack_case(cls, n, s, b, t, d, n_heads, seed)
    f_step = measure.count_flops(lambda: _run_plain(mods, inp).sum().backward())
    f_fwd = measure.count_flops(lambda: _run_plain(mods, inp))
    f_down = measure.count_flops(lambda: mods[0].ffn.down(torch.randn(b, t, 4 * d)))
    checks.expect_equal(measure.count_flops(lambda: stack(inp).sum().backward()), f_step + f_fwd - s * f_down,
                        what=f"FLOPs of forward + backward through CheckpointedStack(L={n}, segments={s})", mistakes=[
        checks.mistake("重算了完整的前向 (a full forward)：这是 use_reentrant=True（或没写 use_reentrant）的行为。"
                       "请用 checkpoint(..., use_reentrant=False)。", f_step + f_fwd),
        checks.mistake("没有重算：看起来没有用 checkpoint。", f_step),
    ])


def stack_rejects(cls, segments: int, n: int = 6) -> None:
    """cls(n blocks, segments) must raise ValueError for segments outside 1..n."""
    __tracebackhide__ = True
    mods, _, _ = _blocks(n, 1, 4, 8, 2, seed=3)
    raised = False
    try:
        cls(mods, segments)
    except ValueError:
        raised = True
    checks.expect(raised, f"CheckpointedStack({n} blocks, segments={segments}) 应该 raise ValueError (segments 必须在 1..L 之间)")


def stack_cuda_case(cls) -> None:
    """On CUDA: the allocator's peak during forward + backward through cls(8 blocks, 4) is below the plain
    stack's (measure.peak_memory)."""
    __tracebackhide__ = True
    mods, _, inp = _blocks(8, 4, 256, 256, 4, seed=4)
    mods.cuda()
    xc = inp.detach().cuda().requires_grad_()
    peaks = []
    for model in (lambda z: _run_plain(mods, z), cls(mods, 4)):
        mods.zero_grad(set_to_none=True)
        xc.grad = None
        peaks.append(measure.peak_memory(lambda: model(xc).sum().backward()))
    checks.expect(peaks[1] < peaks[0], f"CUDA 峰值显存 (peak memory) 没有下降: plain {peaks[0]} B, checkpointed {peaks[1]} B")


# --- checkpoint_memory, best_segments -------------------------------------------------------------------------

def memory_case(fn, n: int, s: int, a: float, A: float, want: float) -> None:
    """fn(n, s, a, A) against `want` bytes (rtol 1e-12)."""
    __tracebackhide__ = True
    checks.expect_close(fn(n, s, a, A), want, rtol=1e-12,
                        what=f"checkpoint_memory(L={n}, segments={s}, a={a}, A={A})", mistakes=[
        checks.mistake("没有考虑 checkpoint：L 层的激活全部存着。", n * A),
        checks.mistake("忘了反向时重算的那一段：它的激活也要存着，直到这段的反向结束。", s * a),
        checks.mistake("最长的一段有 ceil(L/s) 层 (向上取整)，不是 L/s 或 L//s。", s * a + n / s * A),
        checks.mistake("最长的一段有 ceil(L/s) 层 (向上取整)，不是 L/s 或 L//s。", s * a + n // s * A),
    ])


def memory_measured_case(fn, n: int, s: int, b: int, t: int, d: int, n_heads: int, seed: int) -> None:
    """fn(n, s, a, A) with a and A measured on live blocks, against the bytes stored while the last segment is
    recomputed: what checkpoint_sequential(s) saves in its forward (s divides n). Tolerance: one layer input a
    (the formula counts the recomputed segment's input twice: as a checkpoint and as the first tensor its
    recompute saves, one storage; so formula - measured = a exactly)."""
    __tracebackhide__ = True
    torch.manual_seed(seed)
    mods = nn.Sequential(*[models.TransformerBlock(d, n_heads) for _ in range(n)])
    ps, inp = list(mods.parameters()), torch.randn(b, t, d, requires_grad=True)
    a_ = inp.nbytes                                               # live: one layer input
    A_ = measure.saved_bytes(lambda: mods[0](inp), exclude=ps)    # live: what one block saves
    peak = measure.saved_bytes(lambda: checkpoint_sequential(mods, s, inp, use_reentrant=False), exclude=ps)
    checks.expect_close(fn(n, s, a_, A_), peak, rtol=0, atol=a_,
                        what=f"checkpoint_memory vs measured peak stored bytes (L={n}, s={s}, a={a_}, A={A_})", mistakes=[
        checks.mistake("没有考虑 checkpoint：L 层的激活全部存着。", n * A_),
        checks.mistake("忘了反向时重算的那一段：它的激活也要存着，直到这段的反向结束。", s * a_),
    ])


def best_case(fn, n: int, a: float, A: float, want: int, fewest: int) -> None:
    """fn(n, a, A) against `want` segments; `fewest` is the smallest s among those tied with `want`."""
    __tracebackhide__ = True
    checks.expect_equal(fn(n, a, A), want, what=f"best_segments(L={n}, a={a}, A={A})", mistakes=[
        checks.mistake("有并列 (tie) 时取较大的 segments：显存一样，段越多重算越少。", fewest),
        checks.mistake("sqrt(L) 只在每层激活 A 约等于层输入 a 时成立：最优段数约是 sqrt(L*A/a)。", round(math.sqrt(n))),
        checks.mistake("sqrt(L) 只在每层激活 A 约等于层输入 a 时成立：最优段数约是 sqrt(L*A/a)。", math.isqrt(n)),
        checks.mistake("连续的最优点 sqrt(L*A/a) 只是近似：要在整数 s = 1..L 上搜索 (ceil 让曲线成台阶)，"
                       "而且 s 不能超过 L。", round(math.sqrt(n * A / a))),
    ])


# --- recompute_overhead ---------------------------------------------------------------------------------------

def _counted_ratio(n: int, s: int, b: int, t: int, d: int, n_heads: int, seed: int) -> float:
    """Live: count_flops of a training step through n blocks cut into s segments (sizes differing by at most
    one), each under PyTorch's non-reentrant checkpoint, over count_flops of the plain step."""
    torch.manual_seed(seed)
    mods = [models.TransformerBlock(d, n_heads) for _ in range(n)]
    inp = torch.randn(b, t, d, requires_grad=True)
    bounds = [round(i * n / s) for i in range(s + 1)]

    def plain():
        _run_plain(mods, inp).sum().backward()

    def checkpointed():
        z = inp
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            z = checkpoint(nn.Sequential(*mods[lo:hi]), z, use_reentrant=False)
        z.sum().backward()

    return measure.count_flops(checkpointed) / measure.count_flops(plain)


def _overhead_mistakes(n: int, s: int, t: int, d: int, want: float) -> list[checks.Mistake]:
    """The ratios the usual mistakes give, from FLOPs counted on the meta device (any size; the batch cancels):
    one block's forward, its Linear layers alone, and its down projection."""
    with torch.device("meta"):
        blk = models.TransformerBlock(d, 1)
    x, h = torch.empty(1, t, d, device="meta"), torch.empty(1, t, 4 * d, device="meta")
    forward = n * measure.count_flops(blk, x)  # the plain stack's forward
    down = measure.count_flops(blk.ffn.down, h)  # what non-reentrant checkpoint skips once per segment
    dense = sum(measure.count_flops(lin, inp) for lin, inp in
                [(blk.attention.qkv, x), (blk.attention.proj, x), (blk.ffn.up, x), (blk.ffn.down, h)])
    return [
        checks.mistake("这是讲义的上界 4/3（use_reentrant=True 的行为）。non-reentrant checkpoint 会早停："
                       "每段最后一个 block 的 down projection 不重算。", 4 / 3),
        checks.mistake("返回的应是比值 (with / without)，不是多出来的部分 (ratio - 1)。", want - 1),
        checks.mistake("每一段 (segment) 都早停一次，不是整个 stack 只一次。", want + (s - 1) * down / (3 * forward)),
        checks.mistake("只有每段最后一个 block 的 down projection 不重算，不是每一层的。", want - (n - s) * down / (3 * forward)),
        checks.mistake("忘了注意力 (attention) 的 4BT^2d：它也会被重算。", (4 * n * dense - s * down) / (3 * n * dense)),
        checks.mistake("forward_only", 3 * want - 2),
    ]


def overhead_case(fn, n: int, s: int, b: int, t: int, d: int, n_heads: int, seed: int) -> None:
    """fn(n, s, t, d) against the ratio count_flops measures on a live checkpointed stack (rtol 1e-9)."""
    __tracebackhide__ = True
    measured = _counted_ratio(n, s, b, t, d, n_heads, seed)
    checks.expect_close(fn(n, s, t, d), measured, rtol=1e-9,
                        what=f"recompute_overhead(L={n}, segments={s}, T={t}, d={d}) vs count_flops",
                        mistakes=_overhead_mistakes(n, s, t, d, measured))


def overhead_reference(fn, n: int, s: int, t: int, d: int, want: float) -> None:
    """fn(n, s, t, d) against a reference ratio `want` (rtol 1e-9), for sizes too big to run on a CPU."""
    __tracebackhide__ = True
    checks.expect_close(fn(n, s, t, d), want, rtol=1e-9, what=f"recompute_overhead(L={n}, segments={s}, T={t}, d={d})",
                        mistakes=_overhead_mistakes(n, s, t, d, want))
