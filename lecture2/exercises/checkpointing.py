"""Notebook 07's check cases: CheckpointedStack, checkpoint_memory and best_segments.

Every answer is reached through lecture2.answers (plain data both ways). The functions are called
(`answers.call`); the class CheckpointedStack is run by the instrument `run_stack` beside it: it builds the
blocks from their size and a state_dict the check sends, instantiates the student's class on them, runs forward
and backward on the input the check sends, and returns what it saw (the output, the gradients of the input and
of every block parameter, the bytes saved for backward and the FLOPs counted while the stack ran, the CUDA peak).
The expected values are computed here, in the process that runs the check, on the same blocks and inputs: the
plain stack's outputs and gradients, `measure.saved_bytes` of one block and one layer input, `measure.count_flops`
of the plain step, PyTorch's own non-reentrant checkpoint, the CUDA allocator's peak; or passed in by the test
cell (reference numbers, and the memory model's formula for drawn sizes, which stays in the cell).
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint, checkpoint_sequential

from lecture2 import answers, checks, measure, models


checks.register_hints({
    # CheckpointedStack
    "checkpointing.not_module": "CheckpointedStack 要是 nn.Module 的子类 (class CheckpointedStack(nn.Module))，"
                                "它的实例才有参数、能 .to(device)，像普通 stack 一样用。",
    "checkpointing.outputs_differ": "每个 block 都要按顺序恰好运行一次；L 不能被 segments 整除时，别漏掉余下的层。",
    "checkpointing.grads_differ": "不要 detach() 段的输入，也不要复制 blocks：checkpoint 自己会把梯度传回去。",
    "checkpointing.no_checkpoint": "没有 checkpoint：普通前向保存了每一层的全部激活 (all activations)。",
    "checkpointing.every_layer": "你给每一层都设了检查点 (every layer)：保存了 L 个层输入，而不是 segments 个。",
    "checkpointing.segments_as_length": "segments 是段数 (number of segments)，不是每段的层数 (layers per segment)。",
    "checkpointing.last_segment_kept": "最后一段没有 checkpoint（checkpoint_sequential 就是这样做的）：它的激活全部被保存了。"
                                       "这个练习要求每一段都 checkpoint。",
    "checkpointing.reentrant": "重算了完整的前向 (a full forward)：这是 use_reentrant=True（或没写 use_reentrant）的行为。"
                               "请用 checkpoint(..., use_reentrant=False)。",
    "checkpointing.no_recompute": "没有重算：看起来没有用 checkpoint。",
    "checkpointing.segments_range": "segments 不在 1..L 之间 (0、负数、比层数还多) 时要 raise ValueError，不能悄悄改成一个合法的段数。",
    "checkpointing.cuda_peak": "有 checkpoint 时前向 + 反向的 CUDA 峰值显存应低于普通 stack：前向只留每段的输入，反向时一次只重算一段。",
    # checkpoint_memory, best_segments
    "checkpointing.memory_no_checkpoint": "没有考虑 checkpoint：L 层的激活全部存着。",
    "checkpointing.memory_no_recompute": "忘了反向时重算的那一段：它的激活也要存着，直到这段的反向结束。",
    "checkpointing.memory_ceil": "最长的一段有 ceil(L/s) 层 (向上取整)，不是 L/s 或 L//s。",
    "checkpointing.best_tie": "有并列 (tie) 时取较大的 segments：显存一样，段越多重算越少。",
    "checkpointing.best_sqrt_l": "sqrt(L) 只在每层激活 A 约等于层输入 a 时成立：最优段数约是 sqrt(L*A/a)。",
    "checkpointing.best_search": "连续的最优点 sqrt(L*A/a) 只是近似：要在整数 s = 1..L 上搜索 (ceil 让曲线成台阶)，而且 s 不能超过 L。",
})


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

@answers.observer
def run_stack(cls, blocks: dict, x: torch.Tensor, segments: int, steps: list, device: str = "cpu") -> dict:
    """cls(blocks, segments) beside the answer, on an nn.ModuleList of blocks["n"] TransformerBlock(blocks["d"],
    blocks["n_heads"]) loaded with blocks["state"] (their state_dict) and moved to `device`. What it saw:
    "is_module" and "type" of the instance; then, for each of `steps` asked for, in this order:
      "grads"  the output of its forward on a copy of x that requires grad ("output", "output_type"), and after
               output.square().mean().backward() the gradients of x and of every block parameter, in
               parameters() order ("grads", None where there is none; "backward_error" if backward raised)
      "saved"  measure.saved_bytes of its forward on x, block parameters excluded
      "flops"  measure.count_flops of its forward + backward on x
      "peak"   on CUDA, with no gradients held: measure.peak_memory of its forward + backward (None without CUDA)
    What the constructor or a forward raises goes to the check as it is."""
    mods = nn.ModuleList(models.TransformerBlock(blocks["d"], blocks["n_heads"]) for _ in range(blocks["n"]))
    mods.load_state_dict(blocks["state"])
    if device == "cuda" and not torch.cuda.is_available():
        return {"is_module": None, "type": None, "peak": None}
    mods.to(device)
    params = list(mods.parameters())
    stack = cls(mods, segments)
    seen: dict = {"is_module": isinstance(stack, nn.Module), "type": type(stack).__name__}
    if not seen["is_module"]:
        return seen
    inp = x.detach().to(device).requires_grad_()

    def clear():
        inp.grad = None
        mods.zero_grad(set_to_none=True)

    for step in steps:
        if step == "grads":
            out = stack(inp)
            seen["output_type"] = type(out).__name__
            seen["output"] = out.detach() if isinstance(out, torch.Tensor) else None
            if isinstance(out, torch.Tensor):
                try:
                    out.square().mean().backward()
                except RuntimeError as err:  # e.g. an output that does not require grad
                    seen["backward_error"] = str(err)[:300]
            seen["grads"] = [inp.grad] + [p.grad for p in params]
            clear()
        elif step == "saved":
            seen["saved"] = measure.saved_bytes(lambda: stack(inp), exclude=params)
        elif step == "flops":
            seen["flops"] = measure.count_flops(lambda: stack(inp).sum().backward())
            clear()
        elif step == "peak":
            clear()
            seen["peak"] = (measure.peak_memory(lambda: stack(inp).sum().backward())
                            if inp.device.type == "cuda" else None)
            clear()
    return seen


def _see_stack(cls, mods: nn.ModuleList, d: int, n_heads: int, inp: torch.Tensor, s: int, steps: list[str],
               what: str, device: str = "cpu") -> dict:
    """run_stack beside the answer on blocks holding the same parameters as `mods` and the same input."""
    __tracebackhide__ = True
    state = {k: v.detach().clone() for k, v in mods.state_dict().items()}
    seen = answers.observe(run_stack, cls, {"n": len(mods), "d": d, "n_heads": n_heads, "state": state},
                           inp.detach(), s, steps, device)
    if type(seen) is not dict or "is_module" not in seen:
        raise checks.CheckFailed(f"{what}: 检查的测量 (the instrument beside your class) 没有返回它该返回的数据，"
                                 f"得到 {type(seen).__name__}。", what=what)
    if seen["is_module"] is False:
        checks.fail(f"{what}: CheckpointedStack(blocks, segments) 应是一个 nn.Module，得到 {str(seen.get('type'))[:60]}。",
                    "checkpointing.not_module")
    return seen


def _tensor_like(got: object, want: torch.Tensor) -> bool:
    return type(got) in (torch.Tensor, nn.Parameter) and got.shape == want.shape and got.dtype == want.dtype


def stack_case(cls, n: int, s: int, b: int, t: int, d: int, n_heads: int, seed: int, flops: bool = False):
    """cls(blocks, s) on n live blocks: outputs and gradients equal to the plain stack's, and its forward saves
    exactly s layer inputs (measure.saved_bytes, parameters excluded); with `flops`, the FLOPs of forward +
    backward too (see stack_flops_case). Returns (blocks, params, x, what run_stack saw)."""
    __tracebackhide__ = True
    mods, ps, inp = _blocks(n, b, t, d, n_heads, seed)
    what = f"CheckpointedStack(L={n}, segments={s}) on x of shape {tuple(inp.shape)}"
    seen = _see_stack(cls, mods, d, n_heads, inp, s, ["grads", "saved"] + (["flops"] if flops else []), what)
    want = _run_plain(mods, inp)
    want.square().mean().backward()
    want_grads = [inp.grad.clone()] + [p.grad.clone() for p in ps]
    inp.grad = None
    mods.zero_grad(set_to_none=True)
    got = seen.get("output")
    if not (_tensor_like(got, want) and torch.allclose(got, want.detach(), rtol=1e-5, atol=1e-6)):
        shown = f"形状 {tuple(got.shape)}" if _tensor_like(got, got) else f"{str(seen.get('output_type'))[:40]}"
        checks.fail(f"{what}: 输出与普通 stack 不同 (outputs differ; got {shown})。", "checkpointing.outputs_differ")
    got_grads = seen.get("grads")
    if not (type(got_grads) is list and len(got_grads) == len(want_grads)
            and all(_tensor_like(g, w) and torch.allclose(g, w, rtol=1e-4, atol=1e-6) for g, w in zip(got_grads, want_grads))):
        why = f" (backward: {str(seen['backward_error'])[:120]})" if seen.get("backward_error") else ""
        checks.fail(f"{what}: 梯度 (gradients) 与普通 stack 不同，或者 x / 参数没有得到梯度{why}。", "checkpointing.grads_differ")
    a_ = inp.nbytes                                                  # live: one layer input
    A_ = measure.saved_bytes(lambda: mods[0](inp), exclude=ps)       # live: what one block saves
    last = n - (s - 1) * (n // s)                                    # checkpoint_sequential's last segment
    checks.expect_equal(seen.get("saved"), s * a_, what=f"{what}: 前向保存的字节数 (saved bytes, parameters excluded)", mistakes=[
        checks.mistake("checkpointing.no_checkpoint", n * A_),
        checks.mistake("checkpointing.every_layer", n * a_),
        checks.mistake("checkpointing.segments_as_length", -(-n // s) * a_),
        checks.mistake("checkpointing.last_segment_kept", (s - 1) * a_ + last * A_),
    ])
    return mods, ps, inp, seen


def stack_flops_case(cls, n: int, s: int, b: int, t: int, d: int, n_heads: int, seed: int) -> None:
    """stack_case, then the FLOPs of forward + backward through the stack (count_flops, beside the answer): the
    plain step, plus one recomputed forward, less the down projection of each segment's last block (non-reentrant
    checkpoint stops recomputing once the last saved tensor is back), all three counted live here."""
    __tracebackhide__ = True
    mods, ps, inp, seen = stack_case(cls, n, s, b, t, d, n_heads, seed, flops=True)
    f_step = measure.count_flops(lambda: _run_plain(mods, inp).sum().backward())
    f_fwd = measure.count_flops(lambda: _run_plain(mods, inp))
    f_down = measure.count_flops(lambda: mods[0].ffn.down(torch.randn(b, t, 4 * d)))
    checks.expect_equal(seen.get("flops"), f_step + f_fwd - s * f_down,
                        what=f"FLOPs of forward + backward through CheckpointedStack(L={n}, segments={s})", mistakes=[
        checks.mistake("checkpointing.reentrant", f_step + f_fwd),
        checks.mistake("checkpointing.no_recompute", f_step),
    ])


def stack_rejects(cls, segments: int, n: int = 6) -> None:
    """cls(n blocks, segments) must raise ValueError for segments outside 1..n."""
    __tracebackhide__ = True
    mods, _, inp = _blocks(n, 1, 4, 8, 2, seed=3)
    what = f"CheckpointedStack({n} blocks, segments={segments})"
    try:
        _see_stack(cls, mods, 8, 2, inp, segments, [], what)
    except ValueError:
        return
    checks.fail(f"{what} 应该 raise ValueError (segments 必须在 1..L 之间)", "checkpointing.segments_range")


def stack_cuda_case(cls) -> None:
    """On CUDA: the allocator's peak during forward + backward through cls(8 blocks, 4), with no gradients held
    before (measured beside the answer), is below the plain stack's on the same blocks (measured here)."""
    __tracebackhide__ = True
    mods, _, inp = _blocks(8, 4, 256, 256, 4, seed=4)
    seen = _see_stack(cls, mods, 256, 4, inp, 4, ["peak"], "CheckpointedStack(8 blocks, 4) on CUDA", device="cuda")
    if seen.get("peak") is None:  # the answer's process has no GPU: points never depend on the hardware
        return
    mods.cuda()
    xc = inp.detach().cuda().requires_grad_()
    plain = measure.peak_memory(lambda: _run_plain(mods, xc).sum().backward())
    got = seen["peak"]
    if not (type(got) is int and got < plain):
        checks.fail(f"CUDA 峰值显存 (peak memory) 没有下降: plain {plain} B, checkpointed {str(got)[:40]} B",
                    "checkpointing.cuda_peak")


# --- checkpoint_memory, best_segments -------------------------------------------------------------------------

def memory_case(fn, n: int, s: int, a: float, A: float, want: float) -> None:
    """fn(n, s, a, A) against `want` bytes (rtol 1e-12): the model that counts every checkpoint and the longest
    segment's activations whole. `want - a` is right too and accepted: it counts the recomputed segment's input once
    (it is that segment's checkpoint and the first tensor its recompute saves, one storage), as the measurement does;
    both give the same best number of segments."""
    __tracebackhide__ = True
    got = answers.call(fn, n, s, a, A)
    if type(got) in (int, float) and math.isclose(got, want - a, rel_tol=1e-12):
        return
    checks.expect_close(got, want, rtol=1e-12,
                        what=f"checkpoint_memory(L={n}, segments={s}, a={a}, A={A})", mistakes=[
        checks.mistake("checkpointing.memory_no_checkpoint", n * A),
        checks.mistake("checkpointing.memory_no_recompute", s * a),
        checks.mistake("checkpointing.memory_ceil", s * a + n / s * A),
        checks.mistake("checkpointing.memory_ceil", s * a + n // s * A),
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
    checks.expect_close(answers.call(fn, n, s, a_, A_), peak, rtol=0, atol=a_,
                        what=f"checkpoint_memory vs measured peak stored bytes (L={n}, s={s}, a={a_}, A={A_})", mistakes=[
        checks.mistake("checkpointing.memory_no_checkpoint", n * A_),
        checks.mistake("checkpointing.memory_no_recompute", s * a_),
    ])


def best_case(fn, n: int, a: float, A: float, want: int, fewest: int) -> None:
    """fn(n, a, A) against `want` segments; `fewest` is the smallest s among those tied with `want`."""
    __tracebackhide__ = True
    checks.expect_equal(answers.call(fn, n, a, A), want, what=f"best_segments(L={n}, a={a}, A={A})", mistakes=[
        checks.mistake("checkpointing.best_tie", fewest),
        checks.mistake("checkpointing.best_sqrt_l", round(math.sqrt(n))),
        checks.mistake("checkpointing.best_sqrt_l", math.isqrt(n)),
        checks.mistake("checkpointing.best_search", round(math.sqrt(n * A / a))),
    ])


# How each exercise is graded (docs/grading.md's table is generated from every module's ORACLE).
ORACLE = {
    "CheckpointedStack": answers.Oracle(
        returns="from the instrument run_stack beside the answer (it builds the blocks from their size and the "
                "state_dict the check sends, then instantiates the class on them): whether the instance is an "
                "nn.Module, its output and the gradients of the input and of every block parameter after a fixed "
                "loss, the bytes measure.saved_bytes counts in its forward, the FLOPs measure.count_flops counts in "
                "its forward + backward, and on CUDA its allocator peak; whether the constructor raises ValueError "
                "for a segment count outside 1..L",
        expected="the plain stack's output and gradients on the same blocks and input, computed in the check's own "
                 "process; segments x one layer input's nbytes; count_flops of the plain step and forward and of "
                 "one down projection (plain step + one forward - one down projection per segment); the plain "
                 "stack's CUDA peak",
        tampering="the output and the gradients are compared with the check's own reference and cannot be faked "
                  "without computing them. The saved bytes, the FLOPs and the CUDA peak are counted by lecture2's "
                  "instruments in the student's process, which a student who patches that process (or the "
                  "instrument) could make report a checkpointed stack's figures for a plain one: those groups "
                  "observe how the answer computes, and nothing the answer cannot reach closes that; faking them "
                  "is more work than the exercise (a checkpoint call per segment), and the static scan shows the "
                  "instructor an answer that rewrites lecture2's or torch's modules"),
    "checkpoint_memory / best_segments": answers.Oracle(
        returns="the numbers checkpoint_memory and best_segments return for each (L, segments, a, A) and (L, a, A)",
        expected="the memory model s a + ceil(L/s) A on drawn sizes (in the test cell); against the bytes "
                 "checkpoint_sequential saves on live blocks, measured in the check's own process (tolerance one "
                 "layer input); best_segments against a brute-force search over s = 1..L (ties: the larger s)",
        tampering="nothing but the returned numbers"),
}
