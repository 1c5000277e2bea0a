"""Notebook 02's check cases: quadratic_grad and mse_grads, backward_nodes, mlp_saved_bytes.

Every expected value is measured live: autograd's own gradients, the nodes a drawn expression was built from,
and the bytes `lecture2.measure.saved_bytes` finds autograd keeping.
"""
from __future__ import annotations

import random
from collections.abc import Callable
from contextlib import contextmanager

import torch

from lecture2 import checks, measure, models


@contextmanager
def _autograd_switched_off():
    """torch.autograd.backward and torch.autograd.grad (and so Tensor.backward, torch.autograd.functional and
    torch.func.grad, which call them) raise while this is active, in every thread: the course's grader runs an
    answer in a thread of its own, where the check's torch.no_grad() (thread-local) does not reach."""
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


def _without_graph(what: str, fn: Callable, *args):
    """fn(*args) under torch.no_grad() with autograd switched off: a formula works there; backward() and
    torch.autograd have no graph to use."""
    __tracebackhide__ = True
    try:
        with torch.no_grad(), _autograd_switched_off():
            return fn(*args)
    except NotImplementedError:
        raise
    except RuntimeError as err:
        if "grad" not in str(err):
            raise
        checks.expect(False, f"{what} 出错 (raised) RuntimeError: {str(err).splitlines()[0][:100]}\n"
                             f"提示 (hint): {checks.HINTS['grad_by_autograd']}")


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
    got = _without_graph(what, fn, x)
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
    """`got` a Tensor of want's shape, within rtol 1e-4 / atol 1e-6 of it; else the hint of a matching mistake."""
    __tracebackhide__ = True
    checks.expect(isinstance(got, torch.Tensor), f"{what}: 应返回 torch.Tensor，得到 {type(got).__name__}。")
    checks.expect(tuple(got.shape) == tuple(want.shape),
                  f"{what}: shape 应是 {tuple(want.shape)}，得到 {tuple(got.shape)}。"
                  + (f"\n提示 (hint): {checks.HINTS['mse_grad_b_scalar']}" if want.dim() == 0 else ""))

    def close(a: torch.Tensor, c: torch.Tensor) -> bool:
        return torch.allclose(a.double(), c.double(), rtol=1e-4, atol=1e-6)

    if close(got, want):
        return
    hint = next((h for h, v in mistakes if close(got, v)), None)
    checks.expect(False, f"{what}: 期望 (expected) {[round(v, 5) for v in want.reshape(-1).tolist()][:6]}，"
                         f"得到 (got) {[round(v, 5) for v in got.reshape(-1).tolist()][:6]}。"
                         + (f"\n提示 (hint): {hint}" if hint else ""))


def mse_grads_case(fn, X: torch.Tensor, y: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> None:
    """fn(X, y, w, b), called under no_grad, against autograd's (w.grad, b.grad) of the mean squared error."""
    __tracebackhide__ = True
    n, d = X.shape
    what = f"mse_grads(N={n}, d={d})"
    want_w, want_b = _autograd_mse(X, y, w, b)
    got = _without_graph(what, fn, X, y, w, b)
    checks.expect(isinstance(got, tuple) and len(got) == 2, f"mse_grads 应返回 (grad_w, grad_b)，得到 {type(got).__name__}。")
    for g, want, name in ((got[0], want_w, "grad_w"), (got[1], want_b, "grad_b")):
        _expect_tensor(g, want, f"{what} {name}", [(checks.HINTS["mse_two"], want / 2),
                                                   (checks.HINTS["mse_mean"], want * n),
                                                   (checks.HINTS["mse_sign"], -want)])


def backward_nodes_case(fn, t: torch.Tensor, want: list[str], what: str,
                        mistakes: list[tuple[str, list[str]]] = ()) -> None:
    """fn(t) against the class names `want` (in any order); `mistakes`: (hint key, the list that mistake gives)."""
    __tracebackhide__ = True
    what = f"backward_nodes({what})"
    try:
        got = fn(t)
    except AttributeError as err:
        if "NoneType" not in str(err):
            raise
        checks.expect(False, f"{what} 出错 (raised) AttributeError: {err}\n提示 (hint): {checks.HINTS['nodes_none']}")
    checks.expect_type(got, list, what=what)
    checks.expect("NoneType" not in got, f"{what}: 列表里有 'NoneType'。\n提示 (hint): {checks.HINTS['nodes_none']}")
    checks.expect(all(isinstance(n, str) for n in got),
                  f"{what}: 列表里应是 str (类名)，得到 {[type(n).__name__ for n in got][:4]}。")
    checks.expect(not any("object at" in n for n in got),
                  f"{what}: 得到 {got[:2]} ...\n提示 (hint): {checks.HINTS['nodes_class_name']}")
    checks.expect_equal(sorted(got), sorted(want), what=what,
                        mistakes=[checks.mistake(h, sorted(v)) for h, v in mistakes])


def lecture_y_case(fn, x: torch.Tensor, want: list[str]) -> None:
    """fn(y) for the lecture's y = x**2 + 3*x + 1 against `want`, naming the usual mistakes of this graph: the
    leaf x (reached through x**2 and 3*x) counted twice, the leaf skipped, only each node's first input followed."""
    __tracebackhide__ = True
    y = x ** 2 + 3 * x + 1
    no_leaf = [n for n in want if n != "AccumulateGrad"]
    first_inputs = ["AddBackward0", "AddBackward0", "PowBackward0", "AccumulateGrad"]  # y -> y - 1 -> x**2 -> x
    backward_nodes_case(fn, y, want, "x**2 + 3*x + 1", mistakes=[
        ("nodes_dedup", want + ["AccumulateGrad"]), ("nodes_leaf", no_leaf), ("nodes_branch", first_inputs)])


# Ops for random expressions: each call makes exactly one backward node of this class (checked in section 1).
_UNARY = [(lambda t: t.exp(), "ExpBackward0"), (lambda t: t.sin(), "SinBackward0"), (lambda t: t.tanh(), "TanhBackward0"),
          (lambda t: t.sigmoid(), "SigmoidBackward0"), (lambda t: t.relu(), "ReluBackward0"), (lambda t: -t, "NegBackward0"),
          (lambda t: t * 2.5, "MulBackward0"), (lambda t: t + 1, "AddBackward0"), (lambda t: t ** 3, "PowBackward0"),
          (lambda t: t.sum(), "SumBackward0")]
_BINARY = [(lambda a, b: a + b, "AddBackward0"), (lambda a, b: a * b, "MulBackward0"),
           (lambda a, b: a - b, "SubBackward0"), (lambda a, b: a / (b * b + 1), None)]


def random_expression(rng: random.Random) -> tuple[torch.Tensor, list[str]]:
    """A random expression of 1-3 leaves and a constant, 1-9 ops deep, sharing subexpressions, and the class
    names of its backward nodes, known by construction (one node per op call that involves a leaf)."""
    n_leaves = rng.randint(1, 3)
    pool = [(torch.randn(3, requires_grad=True), frozenset({("leaf", i)})) for i in range(n_leaves)]
    pool.append((torch.randn(3), frozenset()))  # a constant: no node, a None in next_functions
    names = {("leaf", i): "AccumulateGrad" for i in range(n_leaves)}
    for k in range(rng.randint(1, 9)):
        recent = pool[-3:] if rng.random() < 0.7 else pool  # mostly build on recent results: deep graphs
        if rng.random() < 0.5:
            op, name = rng.choice(_UNARY)
            t, tokens = rng.choice(recent)
            out = op(t)
            new = {("op", k, 0): name}
        else:
            op, name = rng.choice(_BINARY)
            (ta, sa), (tb, sb) = rng.choice(recent), rng.choice(pool)  # may share subexpressions
            tokens = sa | sb
            out = op(ta, tb)
            new = {("op", k, 0): name or "DivBackward0"}
            if name is None and sb:  # b * b + 1 makes two more nodes when b needs a gradient
                new.update({("op", k, 1): "MulBackward0", ("op", k, 2): "AddBackward0"})
        if not tokens:  # an op on constants only: no graph
            continue
        names.update(new)
        pool.append((out, tokens | frozenset(new)))
    t, tokens = pool[-1]
    return t, [names[tok] for tok in tokens]


def random_expression_case(fn, rng: random.Random, label: str) -> None:
    """fn(t) for a random expression drawn with `rng` against the nodes it was built from."""
    __tracebackhide__ = True
    t, want = random_expression(rng)
    backward_nodes_case(fn, t, want, label, mistakes=[("nodes_leaf", [n for n in want if n != "AccumulateGrad"])])


def saved_bytes_case(fn, B: int, sizes: list[int], x_grad: bool = False, device: str = "cpu") -> None:
    """fn(B, sizes) against the bytes autograd really keeps for backward in models.MLP(sizes) on a (B, sizes[0])
    batch, measured live with measure.saved_bytes (parameters excluded)."""
    __tracebackhide__ = True
    torch.manual_seed(B)
    mlp = models.MLP(sizes).to(device)
    x = torch.randn(B, sizes[0], device=device, requires_grad=x_grad)
    measured = measure.saved_bytes(lambda: mlp(x), exclude=mlp.parameters())  # live: what autograd keeps
    got = fn(B, list(sizes))
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
