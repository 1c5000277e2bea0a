"""Comparisons for the notebooks' test cells, with messages a student can act on.

A test cell holds the reference numbers (with their sources) and the usual wrong answers as data; this
module only compares and explains. Messages are Chinese with the English technical terms.

While nbgrader grades or validates (it sets NBGRADER_EXECUTION) every failure raises, so the cell earns
no points. In the lab, an exercise that is still a stub (NotImplementedError) prints a notice instead of
stopping `Run All`, so a student can read the whole notebook before filling anything in.
"""
from __future__ import annotations

import math
import numbers
import os
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["CheckFailed", "HINTS", "Mistake", "exercise", "expect", "expect_close", "expect_equal",
           "expect_type", "grading", "mistake"]


class CheckFailed(AssertionError):
    """A check that did not pass; its message says what was expected, what came back, and a hint."""


# The usual mistakes, by name. A test cell pairs one with the value that mistake would produce.
HINTS: dict[str, str] = {
    "bits_for_bytes": "看起来你算的是 bits 而不是 bytes (1 byte = 8 bits)。",
    "bytes_for_bits": "看起来你把 bytes 当成了 bits (多除了 8)。",
    "gib_for_gb": "看起来你用了 GiB (2**30 bytes)，这里要的是 GB (10**9 bytes)。",
    "gb_for_gib": "看起来你用了 GB (10**9 bytes)，这里要的是 GiB (2**30 bytes)。",
    "element_size": "每个元素的字节数 (bytes per element) 不对：看看 dtype 的 itemsize。",
    "numel": "元素个数 (numel) 不对：应是 shape 各维的乘积 (product)，不是和 (sum)。",
    "bias_off_by_one": "指数偏置 (exponent bias) 差了一：bias = 2**(e-1) - 1。",
    "eps_half": "eps 是 1.0 与下一个可表示数的间距 (spacing) = 2**-m，不是它的一半 (那是舍入误差上界)。",
    "mantissa_max": "最大值的尾数部分 (mantissa) 是 2 - 2**-m，不是 1：所有尾数位都是 1。",
    "subnormal": "你算的是最小次正规数 (smallest subnormal)；tiny 指最小的正规数 (smallest normal)。",
    "multiply_add": "少了乘加 (multiply-add) 的 2：每个乘加是 2 FLOPs。",
    "forward_only": "只算了前向 (forward)；前向 + 反向 (backward) 约是前向的 3 倍。",
    "loss_not_divided": "loss 没有除以累积步数 (accumulation steps)：梯度大了 steps 倍。",
    "optimizer_states": "忘了优化器状态 (optimizer states)：Adam 每个参数还要存 m 和 v。",
    "adam_step": "忘了 Adam 的计步器 (step counter)：每个参数 Tensor 一个 state['step']，fp32 标量 4 bytes。",
    "master_weights": "忘了 fp32 master weights：混合精度的优化器状态是 master + m + v = 4 + 4 + 4 = 12 bytes/param。",
    "attention_per_head": "attention 矩阵每个 head 一份：softmax 保存 (B, H, T, T)，即 B·H·T² 个元素，不是 B·T²。",
    "rmsnorm_fp32": "RMSNorm 在 fp32 里计算：bf16/fp16 模型里它保存的 x、x̂ (归一化后) 和 rstd 都是 fp32 (4 bytes)。",
}


@dataclass(frozen=True)
class Mistake:
    """The value a known mistake produces, and the hint to show when a student's answer equals it."""

    value: object
    hint: str


def mistake(kind: str, value: object) -> Mistake:
    """A `Mistake` whose hint is `HINTS[kind]`; `kind` may also be a hint text of its own."""
    return Mistake(value, HINTS.get(kind, kind))


def grading() -> bool:
    """True while nbgrader grades or validates (it sets NBGRADER_EXECUTION)."""
    return bool(os.environ.get("NBGRADER_EXECUTION"))


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return repr(value)


def _is_number(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _fail(what: str, want: object, got: object, hint: str | None = None, extra: str = "") -> None:
    __tracebackhide__ = True
    message = f"{what}: 期望 (expected) {_fmt(want)}，得到 (got) {_fmt(got)}。{extra}"
    if hint:
        message += f"\n提示 (hint): {hint}"
    raise CheckFailed(message)


def _close(a: float, b: float, rtol: float, atol: float) -> bool:
    return math.isclose(a, b, rel_tol=rtol, abs_tol=atol) or (math.isinf(a) and a == b)


def _matching_hint(got: object, mistakes, rtol: float, atol: float) -> str | None:
    for m in mistakes:
        if _is_number(got) and _is_number(m.value):
            if _close(float(got), float(m.value), rtol, atol):
                return m.hint
        elif got == m.value:
            return m.hint
    return None


def expect_type(got: object, types: type | tuple[type, ...], *, what: str) -> None:
    """Fail unless `got` is an instance of `types` (bool is not accepted as a number)."""
    __tracebackhide__ = True
    types = types if isinstance(types, tuple) else (types,)
    if isinstance(got, bool) and bool not in types:
        ok = False
    else:
        ok = isinstance(got, types)
    if not ok:
        names = " 或 ".join(t.__name__ for t in types)
        raise CheckFailed(f"{what}: 应返回 {names}，得到 {type(got).__name__} ({_fmt(got)})。")


def expect_close(got: object, want: float, *, what: str, rtol: float = 1e-9, atol: float = 0.0,
                 mistakes: tuple[Mistake, ...] | list[Mistake] = ()) -> None:
    """Fail unless `got` is a real number within `rtol`/`atol` of `want`; name the matching mistake."""
    __tracebackhide__ = True
    if not _is_number(got):
        raise CheckFailed(f"{what}: 应返回一个数 (a real number)，得到 {type(got).__name__} ({_fmt(got)})。")
    if not _close(float(got), float(want), rtol, atol):
        hint = _matching_hint(got, mistakes, rtol, atol)
        ratio = ""
        if hint is None and want and got and _is_number(want):
            ratio = f"(比值 ratio got/expected = {float(got) / float(want):.4g})"
        _fail(what, want, got, hint, ratio)


def expect_equal(got: object, want: object, *, what: str,
                 mistakes: tuple[Mistake, ...] | list[Mistake] = ()) -> None:
    """Fail unless `got == want` exactly; name the matching mistake."""
    __tracebackhide__ = True
    if _is_number(want) and not _is_number(got):
        raise CheckFailed(f"{what}: 应返回一个数 (a number)，得到 {type(got).__name__} ({_fmt(got)})。")
    if got != want:
        _fail(what, want, got, _matching_hint(got, mistakes, 0.0, 0.0))


def expect(condition: bool, message: str) -> None:
    """Fail with `message` unless `condition` holds."""
    __tracebackhide__ = True
    if not condition:
        raise CheckFailed(message)


@contextmanager
def exercise(name: str):
    """Wrap an exercise's checks: a success line when they pass, a notice for an unfilled stub.

    In the lab an unfilled exercise (NotImplementedError) prints a notice and lets `Run All` go on;
    under nbgrader it raises so that the cell earns no points. Any other failure raises everywhere.
    """
    __tracebackhide__ = True
    try:
        yield
    except NotImplementedError:
        if grading():
            raise CheckFailed(f"练习 {name} 还没有完成 (not implemented yet)。") from None
        print(f"⏳ 练习 {name} 还没有完成 (not implemented yet)：填写上面的函数后再运行这个检查。")
        return
    print(f"✅ {name}: 检查通过 (all checks passed)")
