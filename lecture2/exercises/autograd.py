"""Notebook 02's check cases: quadratic_grad and mse_grads, mlp_saved_bytes.

Every answer is reached through lecture2.answers (plain data both ways). One instrument runs beside it:

    without_graph(fn, *args)            fn(*args) under torch.no_grad(), with torch.autograd's backward and grad
                                        switched off: what it returns

Expected values are computed here, in the judge, from the same inputs: autograd's own gradients, and the bytes
`lecture2.measure.saved_bytes` finds autograd keeping for a real models.MLP.
"""
from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager

import torch

from lecture2 import answers, checks, measure, models


# ---- instruments (they run beside the answer and return only what they saw)


@contextmanager
def _autograd_switched_off():
    """torch.autograd.backward and torch.autograd.grad (and so Tensor.backward, torch.autograd.functional and
    torch.func.grad, which call them) raise while this is active, even under torch.enable_grad()."""
    def backward(*args, **kwargs):
        raise RuntimeError("检查调用你的函数时 autograd 的 backward 是关闭的 (switched off)")

    def grad(*args, **kwargs):
        raise RuntimeError("检查调用你的函数时 torch.autograd.grad 是关闭的 (switched off)")

    saved = torch.autograd.backward, torch.autograd.grad
    torch.autograd.backward, torch.autograd.grad = backward, grad
    try:
        yield
    finally:
        torch.autograd.backward, torch.autograd.grad = saved


@answers.observer
def without_graph(fn: Callable, *args):
    """fn(*args) under torch.no_grad() with autograd switched off (a formula works there; backward() and
    torch.autograd have no graph to use): what it returns. What it raises goes to the check."""
    with torch.no_grad(), _autograd_switched_off():
        return fn(*args)


# ---- exercise 1: gradients by hand


def _call_without_graph(what: str, fn, *args):
    """fn(*args) without a graph (the `without_graph` instrument); an autograd error draws its hint."""
    __tracebackhide__ = True
    try:
        return answers.observe(without_graph, fn, *args)
    except NotImplementedError:
        raise
    except RuntimeError as err:
        if "grad" not in str(err):
            raise
        checks.fail(f"{what} 出错 (raised) {answers.quoted(err, 120)}", "grad_by_autograd")


def _autograd_quadratic(x: float) -> float:
    """dy/dx of the lecture's y = x**2 + 3*x + 1 at x, by autograd (float64)."""
    t = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    (t ** 2 + 3 * t + 1).backward()
    return t.grad.item()


def quadratic_grad_case(fn, x: float, want: float | None = None, source: str | None = None) -> None:
    """fn(x), called under no_grad, against autograd's dy/dx of y = x**2 + 3*x + 1 at x, and against a reference
    number `want` from `source` where one is given."""
    __tracebackhide__ = True
    what = f"quadratic_grad({x:.4g})"
    got = _call_without_graph(what, fn, x)
    checks.expect_close(got, _autograd_quadratic(x), rtol=1e-9, atol=1e-9, what=what, mistakes=[
        checks.mistake("grad_3x_dropped", 2 * x),
        checks.mistake("grad_returned_y", x ** 2 + 3 * x + 1)])
    if want is not None:
        checks.expect_close(got, want, what=f"{what} ({source})" if source else what)


def _autograd_mse(X: torch.Tensor, y: torch.Tensor, w: torch.Tensor, b: torch.Tensor):
    """(dL/dw, dL/db) of L = mean((X @ w + b - y)**2), by autograd on copies of w and b."""
    w, b = w.clone().requires_grad_(True), b.clone().requires_grad_(True)
    ((X @ w + b - y) ** 2).mean().backward()
    return w.grad, b.grad


def _expect_tensor(got, want: torch.Tensor, what: str, mistakes: list[tuple[str, torch.Tensor]]) -> None:
    """`got` a Tensor of want's shape, within rtol 1e-4 / atol 1e-6 of it; else the hint (key) of a matching mistake."""
    __tracebackhide__ = True
    checks.expect_type(got, torch.Tensor, what=what)
    if tuple(got.shape) != tuple(want.shape):
        checks.fail(f"{what}: shape 应是 {tuple(want.shape)}，得到 {tuple(got.shape)}。",
                    "mse_grad_b_scalar" if want.dim() == 0 else None)

    def close(a: torch.Tensor, c: torch.Tensor) -> bool:
        return torch.allclose(a.detach().cpu().double(), c.detach().cpu().double(), rtol=1e-4, atol=1e-6)

    if close(got, want):
        return
    key = next((k for k, v in mistakes if close(got, v)), None)
    checks.fail(f"{what}: 期望 (expected) {[round(v, 5) for v in want.reshape(-1).tolist()][:6]}，"
                f"得到 (got) {[round(v, 5) for v in got.double().reshape(-1).tolist()][:6]}。", key)


def mse_grads_case(fn, X: torch.Tensor, y: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> None:
    """fn(X, y, w, b), called under no_grad, against autograd's (w.grad, b.grad) of the mean squared error."""
    __tracebackhide__ = True
    n, d = X.shape
    what = f"mse_grads(N={n}, d={d})"
    want_w, want_b = _autograd_mse(X, y, w, b)
    got = _call_without_graph(what, fn, X, y, w, b)
    checks.expect(type(got) is tuple and len(got) == 2,
                  f"mse_grads 应返回 (grad_w, grad_b) 这样的 tuple，得到 {type(got).__name__}。")
    for g, want, name in ((got[0], want_w, "grad_w"), (got[1], want_b, "grad_b")):
        _expect_tensor(g, want, f"{what} {name}", [("mse_two", want / 2), ("mse_mean", want * n), ("mse_sign", -want)])


# ---- exercise 2: the backward graph


def saved_bytes_case(fn, B: int, sizes: list[int], x_grad: bool = False, device: str = "cpu") -> None:
    """fn(B, sizes) against the bytes autograd really keeps for backward in models.MLP(sizes) on a (B, sizes[0])
    batch, measured live here with measure.saved_bytes (parameters excluded)."""
    __tracebackhide__ = True
    torch.manual_seed(B)
    mlp = models.MLP(sizes).to(device)
    x = torch.randn(B, sizes[0], device=device, requires_grad=x_grad)
    measured = measure.saved_bytes(lambda: mlp(x), exclude=mlp.parameters())  # live: what autograd keeps
    got = answers.call(fn, B, list(sizes))
    what = f"mlp_saved_bytes(B={B}, sizes={list(sizes)})"
    checks.expect_type(got, int, what=what)
    n_params = sum(p.numel() for p in mlp.parameters())
    per_row = 4 * B  # bytes of one fp32 feature over the batch
    hidden = sum(sizes[1:-1])
    checks.expect_equal(got, measured, what=what, mistakes=[
        checks.mistake("bits_for_bytes", measured * 8),
        checks.mistake("saved_params", measured + 4 * n_params),
        checks.mistake("saved_params", 4 * n_params),
        checks.mistake("saved_input", measured - per_row * sizes[0]),
        checks.mistake("saved_shared", measured + per_row * hidden),
        checks.mistake("saved_logits", measured + per_row * sizes[-1]),
        checks.mistake("saved_preact", measured + per_row * (hidden + sizes[-1])),
    ])


# How each exercise is graded (docs/grading.md's table is generated from every module's ORACLE).
ORACLE = {
    "hand_grads": answers.Oracle(
        returns="what quadratic_grad(x) and mse_grads(X, y, w, b) return, each called beside the answer by the "
                "without_graph instrument (under torch.no_grad(), torch.autograd.backward and .grad switched off)",
        expected="autograd's own gradients on the same inputs, computed here (x.grad of x**2 + 3x + 1; w.grad and "
                 "b.grad of the mean squared error), and the lecture's 7 at x = 2",
        tampering="the numbers are what is graded, and only the right ones pass. The rule 'by hand, not by autograd' is "
                  "enforced in the student's process, so an answer that restores autograd there (a reference to "
                  "torch.autograd.grad kept from before, under torch.enable_grad()) gets the right numbers by autograd "
                  "and passes: it gains nothing it could not compute by hand, and the static scan points to code "
                  "that rewrites torch"),
    "mlp_saved_bytes": answers.Oracle(
        returns="the int it returns for each (B, sizes)",
        expected="the bytes autograd keeps for backward in a real models.MLP(sizes) on a (B, sizes[0]) batch, measured "
                 "here with measure.saved_bytes (parameters excluded, storages deduplicated); on CUDA, the same "
                 "measured in GPU memory",
        tampering="nothing but the returned number"),
}
