"""Notebook 02's check cases: quadratic_grad and mse_grads, backward_nodes, mlp_saved_bytes.

Every answer is reached through lecture2.answers (plain data both ways). Two instruments run beside it:

    without_graph(fn, *args)            fn(*args) under torch.no_grad(), with torch.autograd's backward and grad
                                        switched off: what it returns
    nodes_of_expression(fn, recipe)     fn(t) for a tensor t whose autograd graph is built there from a plain-data
                                        recipe (leaves, constants, ops): what it returns

Expected values are computed here, in the judge, from the same inputs: autograd's own gradients, the nodes an
expression is built from (known from its recipe, by construction), and the bytes `lecture2.measure.saved_bytes`
finds autograd keeping for a real models.MLP.
"""
from __future__ import annotations

import random
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


# Ops of the expressions backward_nodes is checked on: name -> (number of inputs, the op, the class of the one
# backward node it makes when an input needs a gradient). "div" is a / (b * b + 1): two more nodes (Mul, Add)
# when b needs a gradient.
OPS: dict[str, tuple[int, Callable, str]] = {
    "exp": (1, lambda t: t.exp(), "ExpBackward0"), "sin": (1, lambda t: t.sin(), "SinBackward0"),
    "tanh": (1, lambda t: t.tanh(), "TanhBackward0"), "sigmoid": (1, lambda t: t.sigmoid(), "SigmoidBackward0"),
    "relu": (1, lambda t: t.relu(), "ReluBackward0"), "neg": (1, lambda t: -t, "NegBackward0"),
    "mul2.5": (1, lambda t: t * 2.5, "MulBackward0"), "add1": (1, lambda t: t + 1, "AddBackward0"),
    "pow3": (1, lambda t: t ** 3, "PowBackward0"), "sum": (1, lambda t: t.sum(), "SumBackward0"),
    "pow2": (1, lambda t: t ** 2, "PowBackward0"), "3mul": (1, lambda t: 3 * t, "MulBackward0"),
    "mul2": (1, lambda t: t * 2, "MulBackward0"),
    "add": (2, lambda a, b: a + b, "AddBackward0"), "mul": (2, lambda a, b: a * b, "MulBackward0"),
    "sub": (2, lambda a, b: a - b, "SubBackward0"), "div": (2, lambda a, b: a / (b * b + 1), "DivBackward0"),
}
_UNARY = ["exp", "sin", "tanh", "sigmoid", "relu", "neg", "mul2.5", "add1", "pow3", "sum"]
_BINARY = ["add", "mul", "sub", "div"]


def expression(*ops: tuple, leaves: list[list[float]], constants: list[list[float]] = (), no_grad: bool = False) -> dict:
    """The recipe of an expression, as plain data: `leaves` (tensors that require grad) and `constants` (that do
    not), given by their values, then `ops` in order, each (name of OPS, index of an input, [index of a second]):
    inputs are indexed leaves first, then constants, then the ops' results; the expression is the last of them.
    With `no_grad` it is built under torch.no_grad()."""
    return {"leaves": [list(map(float, v)) for v in leaves], "constants": [list(map(float, v)) for v in constants],
            "ops": [list(op) for op in ops], "no_grad": bool(no_grad)}


def build_expression(recipe: dict) -> torch.Tensor:
    """The tensor a recipe describes (see `expression`), its graph built here."""
    pool = [torch.tensor(v, dtype=torch.float32, requires_grad=True) for v in recipe["leaves"]]
    pool += [torch.tensor(v, dtype=torch.float32) for v in recipe["constants"]]
    with torch.set_grad_enabled(not recipe["no_grad"]):
        for name, *inputs in recipe["ops"]:
            arity, op, _ = OPS[name]
            if len(inputs) != arity or not all(type(i) is int and 0 <= i < len(pool) for i in inputs):
                raise ValueError(f"bad op in a recipe: {[name, *inputs]}")
            pool.append(op(*(pool[i] for i in inputs)))
    return pool[-1]


@answers.observer
def nodes_of_expression(fn: Callable, recipe: dict):
    """fn(t) for the tensor t the recipe describes, built here with its live graph: what it returns."""
    return fn(build_expression(recipe))


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


def backward_nodes_case(fn, recipe: dict, want: list[str], what: str, mistakes: list[tuple[str, list[str]]] = ()) -> None:
    """fn(t), t built beside the answer from `recipe` (see `expression`), against the class names `want` (in any
    order); `mistakes`: (hint key, the list that mistake gives)."""
    __tracebackhide__ = True
    what = f"backward_nodes({what})"
    try:
        got = answers.observe(nodes_of_expression, fn, recipe)
    except AttributeError as err:
        if "NoneType" not in str(err):
            raise
        checks.fail(f"{what} 出错 (raised) {answers.quoted(err)}", "nodes_none")
    checks.expect_type(got, list, what=what)
    if "NoneType" in got:
        checks.fail(f"{what}: 列表里有 'NoneType'。", "nodes_none")
    checks.expect(all(type(n) is str for n in got),
                  f"{what}: 列表里应是 str (类名)，得到 {[type(n).__name__ for n in got][:4]}。")
    if any("object at" in n for n in got):
        checks.fail(f"{what}: 得到 {checks.shown(got[:2])} ...", "nodes_class_name")
    checks.expect_equal(sorted(got), sorted(want), what=what,
                        mistakes=[checks.mistake(h, sorted(v)) for h, v in mistakes])


def lecture_y(x: list[float]) -> dict:
    """The recipe of the lecture's y = x**2 + 3*x + 1 for a leaf x holding the values `x`."""
    return expression(("pow2", 0), ("3mul", 0), ("add", 1, 2), ("add1", 3), leaves=[x])


def lecture_y_case(fn, x: list[float], want: list[str]) -> None:
    """fn(y) for the lecture's y = x**2 + 3*x + 1 (x a leaf holding the values `x`) against `want`, naming the usual
    mistakes of this graph: the leaf x (reached through x**2 and 3*x) counted twice, the leaf skipped, only each
    node's first input followed."""
    __tracebackhide__ = True
    no_leaf = [n for n in want if n != "AccumulateGrad"]
    first_inputs = ["AddBackward0", "AddBackward0", "PowBackward0", "AccumulateGrad"]  # y -> y - 1 -> x**2 -> x
    backward_nodes_case(fn, lecture_y(x), want, "x**2 + 3*x + 1", mistakes=[
        ("nodes_dedup", want + ["AccumulateGrad"]), ("nodes_leaf", no_leaf), ("nodes_branch", first_inputs)])


def expression_nodes(recipe: dict) -> list[str]:
    """The class names of the backward nodes reachable from the grad_fn of the expression `recipe` describes, known
    by construction: one node per op call that involves a leaf (three for "div" when its divisor does), one
    AccumulateGrad per leaf reached; none under no_grad, none for a bare leaf."""
    n_leaves = len(recipe["leaves"])
    pool = [frozenset({("leaf", i)}) for i in range(n_leaves)] + [frozenset() for _ in recipe["constants"]]
    names = {("leaf", i): "AccumulateGrad" for i in range(n_leaves)}
    for k, (name, *inputs) in enumerate(recipe["ops"]):
        tokens = frozenset().union(*(pool[i] for i in inputs))
        if recipe["no_grad"] or not tokens:  # no input needs a gradient: no node, the result is a constant
            pool.append(frozenset())
            continue
        new = {("op", k, 0): OPS[name][2]}
        if name == "div" and pool[inputs[1]]:  # b * b + 1 makes two more nodes when b needs a gradient
            new.update({("op", k, 1): "MulBackward0", ("op", k, 2): "AddBackward0"})
        names.update(new)
        pool.append(tokens | frozenset(new))
    if not recipe["ops"] or not pool[-1]:
        return []  # a leaf or a constant, or a tensor built without a graph: no grad_fn to start from
    return [names[tok] for tok in pool[-1]]


def random_expression(rng: random.Random) -> dict:
    """The recipe of a random expression of 1-3 leaves and a constant, 1-9 ops deep, sharing subexpressions
    (ops on the constant only are left out: they make no node)."""
    n_leaves = rng.randint(1, 3)
    leaves = [[round(rng.uniform(-2.0, 2.0), 3) for _ in range(3)] for _ in range(n_leaves)]
    constant = [round(rng.uniform(-2.0, 2.0), 3) for _ in range(3)]  # no node: a None in next_functions
    needs_grad = [True] * n_leaves + [False]
    ops = []
    for _ in range(rng.randint(1, 9)):
        size = len(needs_grad)
        recent = list(range(max(0, size - 3), size)) if rng.random() < 0.7 else list(range(size))  # deep graphs
        if rng.random() < 0.5:
            op, a = rng.choice(_UNARY), rng.choice(recent)
            inputs = [a]
        else:
            op, a, b = rng.choice(_BINARY), rng.choice(recent), rng.randrange(size)  # may share subexpressions
            inputs = [a, b]
        if not any(needs_grad[i] for i in inputs):  # an op on constants only: no graph
            continue
        ops.append((op, *inputs))
        needs_grad.append(True)
    if not ops:  # every op drawn was on the constant: one on a leaf, so that there is a graph to walk
        ops.append((rng.choice(_UNARY), rng.randrange(n_leaves)))
    return expression(*ops, leaves=leaves, constants=[constant])


def random_expression_case(fn, rng: random.Random, label: str) -> None:
    """fn(t) for a random expression drawn with `rng` against the nodes it is built from."""
    __tracebackhide__ = True
    recipe = random_expression(rng)
    want = expression_nodes(recipe)
    backward_nodes_case(fn, recipe, want, label, mistakes=[("nodes_leaf", [n for n in want if n != "AccumulateGrad"])])


# ---- exercise 3: bytes saved for backward


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
    "backward_nodes": answers.Oracle(
        returns="the list of class names it returns for a tensor whose graph the nodes_of_expression instrument "
                "builds beside the answer from a plain-data recipe (the lecture's y, a leaf, a no_grad result, "
                "drawn expressions of 1-3 leaves and up to 9 ops sharing subexpressions)",
        expected="the lecture's graph as walked by hand in section 1; for drawn expressions, the nodes known from the "
                 "recipe by construction (one node per op involving a leaf, one AccumulateGrad per leaf reached)",
        tampering="nothing but the returned names: a student who derives them from the recipe instead of walking "
                  "the graph has done the same work"),
    "mlp_saved_bytes": answers.Oracle(
        returns="the int it returns for each (B, sizes)",
        expected="the bytes autograd keeps for backward in a real models.MLP(sizes) on a (B, sizes[0]) batch, measured "
                 "here with measure.saved_bytes (parameters excluded, storages deduplicated); on CUDA, the same "
                 "measured in GPU memory",
        tampering="nothing but the returned number"),
}
