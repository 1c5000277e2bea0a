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
    # notebook 03: counting parameters, RMSNorm
    "norm_weights": "忘了归一化层 (norm) 的 weight：每个 RMSNorm / LayerNorm 有 d_model 个参数，一个 block 有两个 (norm1, norm2)。",
    "attention_proj": "注意力有 4 个 d×d 矩阵：Q、K、V (合并成 qkv: d → 3d) 和输出投影 proj (d → d)，别漏了 proj。",
    "d_ff_ignored": "给了 d_ff 就要用它：FFN 是 d → d_ff → d，参数 2·d·d_ff，只有 d_ff=None 时才是 4d。",
    "linear_bias": "bias=True 时每个 Linear 还有 out_features 个 bias：qkv 3d、proj d、up d_ff、down d。",
    "rms_norm_bias": "RMSNorm 没有 bias (只有 weight)：bias=True 只给 Linear 和 LayerNorm 加 bias。",
    "layernorm_bias": "LayerNorm(bias=True) 除了 weight 还有 d_model 个 bias。",
    "position_embeddings": "忘了位置嵌入 (position embeddings, pos_emb)：block_size × d_model 个参数。",
    "final_norm": "忘了最后一个归一化层 norm_f (在 lm_head 之前)。",
    "tied_twice": "共享 (tied) 的矩阵被数了两次：lm_head.weight 就是 tok_emb.weight，parameters() 只算一次。",
    "untied_head": "tie_embeddings=False 时 lm_head 有自己的 vocab_size × d_model 权重，别漏了。",
    "rms_mean_not_square": "RMSNorm 用平方的均值 mean(x²) (mean of squares)，不是 x 的均值 mean(x)。",
    "rms_layernorm": "这是 LayerNorm (减去了均值 mean)：RMSNorm 不做中心化 (no centering)，只除以 RMS。",
    "rms_sum": "用了 sum(x²) 而不是 mean(x²)：要除以 d (特征维的长度)。",
    "rms_no_sqrt": "忘了开方 (sqrt / rsqrt)：RMS = sqrt(mean(x²) + eps)。",
    "rms_no_eps": "忘了 eps：y = x / sqrt(mean(x²) + eps) · weight (全 0 的输入会变成 NaN)。",
    "rms_eps_outside": "eps 应加在 sqrt 里面：sqrt(mean(x²) + eps)，不是 sqrt(mean(x²)) + eps。",
    "rms_dim": "归一化的维度不对：对最后一维 (dim=-1，特征维 d_model) 求均值，并用 keepdim=True。",
    "rms_weight": "忘了乘以可学习的 weight (scale)。",
    "rms_detached": "梯度要能流过 forward：不要用 .detach()、.data、.item() 或 torch.no_grad()。",
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
