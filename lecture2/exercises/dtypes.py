"""Notebook 01's check cases: tensor_bytes, float_format_limits.

Every answer is reached through lecture2.answers.call (plain data both ways); expected values are measured here
(a real tensor's nbytes, torch.finfo) or passed in by the test cell.
"""
from __future__ import annotations

import math

import torch

from lecture2 import answers, checks

# PyTorch's floating-point dtypes by (exponent bits, mantissa bits): their torch.finfo is the live reference.
TORCH_FORMATS = {(5, 10): torch.float16, (8, 7): torch.bfloat16, (8, 23): torch.float32, (11, 52): torch.float64,
                 (5, 2): torch.float8_e5m2, (4, 3): torch.float8_e4m3fn}


def tensor_bytes_case(fn, shape: tuple[int, ...], dtype: torch.dtype, want: int | None = None) -> None:
    """fn(shape, dtype) against `want` bytes, by default PyTorch's own count for a real tensor (nbytes)."""
    __tracebackhide__ = True
    what = f"tensor_bytes({shape}, {dtype})"
    if want is None:
        want = torch.empty(shape, dtype=dtype).nbytes
    try:
        got = answers.call(fn, shape, dtype)
    except NotImplementedError:
        raise
    except TypeError as err:
        if shape != ():
            raise
        checks.fail(f"{what} 出错 (raised) {answers.quoted(err)}", "shape_scalar")
    except (RuntimeError, MemoryError) as err:  # the answer allocated the tensor to ask for its size
        checks.fail(f"{what} 出错 (raised) {answers.quoted(err, 120)}", "tensor_allocated")
    size = torch.empty(0, dtype=dtype).element_size()
    checks.expect_type(got, int, what=what)
    checks.expect_equal(got, want, what=what, mistakes=[
        *([checks.mistake("shape_scalar", 0)] if shape == () else []),
        checks.mistake("bits_for_bytes", want * 8),
        checks.mistake("numel", sum(shape) * size),
        checks.mistake("element_size", math.prod(shape) * 4),
    ])


def finfo_limits(dtype: torch.dtype) -> dict[str, float]:
    """max, tiny and eps of a PyTorch dtype, as torch.finfo reports them."""
    fi = torch.finfo(dtype)
    return {"max": fi.max, "tiny": fi.tiny, "eps": fi.eps}


def _p2(k: int) -> float:  # 2.0**k, or inf where a wrong formula would overflow a Python float
    return 2.0 ** k if k < 1024 else math.inf


def float_format_case(fn, e: int, m: int, want: dict[str, float] | None = None, name: str | None = None) -> None:
    """fn(e, m) against `want` ({max, tiny, eps}), by default torch.finfo of PyTorch's dtype with these bits."""
    __tracebackhide__ = True
    name = name or (str(TORCH_FORMATS[(e, m)]).removeprefix("torch.") if (e, m) in TORCH_FORMATS else f"E{e}M{m}")
    want = want if want is not None else finfo_limits(TORCH_FORMATS[(e, m)])
    what = f"float_format_limits({e}, {m})"
    try:
        got = answers.call(fn, e, m)
    except LookupError as err:  # a table of PyTorch's dtypes has no row for this format
        checks.fail(f"{what} 出错 (raised) {answers.quoted(err)}", "format_from_table")
    checks.expect_type(got, dict, what=what)
    checks.expect(set(got) >= {"max", "tiny", "eps"}, f"{what} 应有键 (keys) 'max', 'tiny', 'eps'，得到 {sorted(got)}")
    for (e2, m2), dt in TORCH_FORMATS.items():  # another format's torch.finfo: looked up, not derived
        fi = torch.finfo(dt)
        if (e2, m2) != (e, m) and [got[k] for k in ("max", "tiny", "eps")] == [fi.max, fi.tiny, fi.eps]:
            checks.fail(f"{name}: {what} 返回的是 torch.finfo({dt}) 的值。", "format_from_table")
    bias, wrong_bias = 2 ** (e - 1) - 1, 2 ** (e - 1)
    checks.expect_close(got["eps"], want["eps"], what=f"{name} eps", rtol=1e-12,
                        mistakes=[checks.mistake("eps_half", want["eps"] / 2)])
    checks.expect_close(got["tiny"], want["tiny"], what=f"{name} tiny", rtol=1e-12, mistakes=[
        checks.mistake("subnormal", want["tiny"] * want["eps"]),
        checks.mistake("bias_off_by_one", _p2(1 - wrong_bias))])
    checks.expect_close(got["max"], want["max"], what=f"{name} max", rtol=1e-12, mistakes=[
        *([checks.mistake("e4m3fn_max", 448.0)] if (e, m) == (4, 3) else []),
        checks.mistake("mantissa_max", _p2(bias)),
        checks.mistake("bias_off_by_one", (2 - 2.0 ** -m) * _p2(wrong_bias))])


def allocated_bytes(tensor_maker) -> int:
    """Bytes the CUDA caching allocator was asked for while `tensor_maker()` ran (exact: allocated rounds)."""
    requested = lambda: torch.cuda.memory_stats().get("requested_bytes.all.current", 0)  # noqa: E731
    torch.cuda.synchronize()
    before = requested()
    tensor = tensor_maker()
    asked = requested() - before
    del tensor
    return asked


# How each exercise is graded (docs/grading.md's table is generated from every module's ORACLE).
ORACLE = {
    "tensor_bytes": answers.Oracle(
        returns="the int it returns for each (shape, dtype)",
        expected="PyTorch's nbytes of a real tensor of that shape and dtype; for shapes no machine can allocate, "
                 "the element count × itemsize; on CUDA, the bytes the caching allocator is asked for",
        tampering="nothing but the returned number, which is the answer asked for"),
    "float_format_limits": answers.Oracle(
        returns="the dict {max, tiny, eps} it returns for each (exponent bits, mantissa bits)",
        expected="torch.finfo of PyTorch's own dtypes; the IEEE formulas for formats PyTorch lacks (drawn bit counts)",
        tampering="nothing but the returned numbers"),
}
