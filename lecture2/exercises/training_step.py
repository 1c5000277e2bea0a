"""Notebook 04's check cases: accumulated_step, fp16_underflow_fraction, train_step.

Every answer is reached through lecture2.answers (plain data both ways). What the answer needs beside it (a
model, an optimizer, a GradScaler, a loss function) is built there by this module's instruments from plain
data (a model recipe and its state_dict, tensors, a loss's name), and they send back only what they saw: the
.grad and the parameters after the answer's step, the loss it returned, the dtypes of the Linear outputs, the
scaler's scale, whether anything was cast to float16. Every expected value is measured here, in the check's
own process: the big batch's gradient from one backward on the concatenated micro-batches, a real cast to
float16, the fp32 gradient of the check's own copy of the model at the answer's current parameters.
"""
from __future__ import annotations

import copy
import math
import random

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from lecture2 import answers, checks, models

# ---- models and losses, built the same way on both sides from plain data

# A model recipe: ("mlp", widths, activation name) or ("gpt", GPTConfig).
_ACTIVATIONS = {"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh}


def _build(recipe: tuple) -> torch.nn.Module:
    kind = recipe[0]
    if kind == "mlp":
        return models.MLP(list(recipe[1]), activation=_ACTIVATIONS[recipe[2]])
    if kind == "gpt":
        return models.GPT(recipe[1])
    raise ValueError(f"unknown model recipe {kind!r}")


def _build_with(recipe: tuple, state: dict, device: str = "cpu") -> torch.nn.Module:
    """The model of `recipe` holding the parameters of `state` (a state_dict), on `device`."""
    model = _build(recipe)
    model.load_state_dict(state)
    return model.to(device)


def _next_token_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy of (B, T, V) logits against (B, T) targets."""
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


_LOSSES = {"cross_entropy": F.cross_entropy, "mse": F.mse_loss, "next_token": _next_token_loss}


def _grad_vec(model: torch.nn.Module) -> torch.Tensor:
    """Every parameter's .grad as one vector (zeros where a gradient is missing)."""
    return torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).detach().flatten()
                      for p in model.parameters()])


def _param_vec(model: torch.nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in model.parameters()])


# ---- accumulated_step


@answers.observer
def observe_accumulated_step(fn, recipe: tuple, state: dict, batches: list, stale: list, loss: str,
                             lr: float) -> dict:
    """fn(model, SGD(lr), batches, loss_fn) on the model of `recipe` holding `state`, with the gradients
    `stale` (one per parameter, in parameters() order) left in .grad as a previous step would leave them.
    What it saw: the value fn returned, the .grad it left (one vector, zeros where .grad is None) and the
    parameters after its step (one vector)."""
    model = _build_with(recipe, state)
    for p, g in zip(model.parameters(), stale):
        p.grad = g.clone()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    returned = fn(model, optimizer, batches, _LOSSES[loss])
    return {"returned": returned, "grad": _grad_vec(model), "params": _param_vec(model)}


def _expect_grads(got: object, want: torch.Tensor, what: str, mistakes=()) -> None:
    """allclose as a relative error on the whole gradient (≤ 1e-4); name the usual mistake whose gradient
    `got` equals (within 1e-3 relative): `mistakes` is a list of (hint key, gradient that mistake gives)."""
    __tracebackhide__ = True
    if type(got) is not torch.Tensor or got.shape != want.shape or not got.is_floating_point():
        raise checks.CheckFailed(f"{what}: 没有得到形状为 {tuple(want.shape)} 的梯度向量 (no gradient vector came back)。",
                                 what=what)
    got = got.to(want.dtype)
    err = ((got - want).norm() / want.norm()).item()
    if err <= 1e-4:
        return
    ratio = (got @ want / (want @ want)).item()
    hint = next((h for h, v in mistakes if (got - v).norm() <= 1e-3 * max(v.norm().item(), 1e-30)), None)
    checks.fail(f"{what}: 与大 batch 的梯度不一致 (not allclose)：relative error {err:.3g}，"
                f"比值 ratio (got·want / |want|²) = {ratio:.4g}。", hint, what=what)


def accumulation_case(fn, recipe: tuple, make_batch, sizes: list[int], loss: str, seed: int, lr: float = 0.1) -> None:
    """fn(model, SGD(lr), micro-batches of `sizes`, loss_fn) against one backward on the concatenated big batch
    (measured here, on the check's own copy of the model): the .grad it leaves (relative error ≤ 1e-4), the
    SGD step it takes (parameters moved by lr × that gradient) and the loss it returns (the big batch's mean
    loss, rtol 1e-5). The model starts with a previous step's gradients left in .grad. `recipe` is plain data
    (see `_build`); `loss` names one of the loss functions the answer receives."""
    __tracebackhide__ = True
    loss_fn = _LOSSES[loss]
    torch.manual_seed(seed)
    model = _build(recipe)
    batches = [make_batch(n) for n in sizes]
    stale_x, stale_y = make_batch(3)
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    x_all, y_all = torch.cat([b[0] for b in batches]), torch.cat([b[1] for b in batches])
    ref = copy.deepcopy(model)  # the reference: one backward on the concatenated big batch
    big = loss_fn(ref(x_all), y_all)
    big.backward()
    want = _grad_vec(ref)
    per = []  # each micro-batch's own mean-loss gradient: the usual mistakes are sums of these
    for xb, yb in batches:
        m = copy.deepcopy(model)
        loss_fn(m(xb), yb).backward()
        per.append(_grad_vec(m))
    old = copy.deepcopy(model)
    loss_fn(old(stale_x), stale_y).backward()  # a previous step's gradients, left in the answer's .grad
    stale = [(p.grad if p.grad is not None else torch.zeros_like(p)).detach().clone() for p in old.parameters()]
    k, n_total = len(sizes), sum(sizes)
    before = _param_vec(model)
    seen = answers.observe(observe_accumulated_step, fn, recipe, state, batches, stale, loss, lr)
    what = f"accumulated_step: {type(model).__name__}, micro-batch sizes {sizes}"
    _expect_grads(seen["grad"], want, what + " 之后的 .grad", [
        ("loss_not_divided", sum(per)),
        ("accum_weights", sum(per) / k),
        ("zero_grad_in_loop", per[-1] / k), ("zero_grad_in_loop", per[-1] * sizes[-1] / n_total),
        ("zero_grad_in_loop", per[-1]),
        ("zero_grad_missing", want + torch.cat([g.flatten() for g in stale])),
        ("grads_cleared", torch.zeros_like(want))])
    params = seen["params"]
    moved = (before - params.to(before.dtype)) / lr if type(params) is torch.Tensor and params.shape == before.shape else params
    _expect_grads(moved, want, what + ": 参数的变化 (before - after) / lr (SGD 做了一次 step)", [
        ("no_optimizer_step", torch.zeros_like(want))])
    got_loss = seen["returned"]
    checks.expect_type(got_loss, float, what=what + " 的返回值")
    checks.expect_close(got_loss, big.item(), rtol=1e-5, atol=1e-7, what=what + " 返回的 loss", mistakes=[
        checks.mistake("loss_not_divided", big.item() * k)])


def accumulation_mlp_case(fn, widths: list[int], sizes: list[int], seed: int) -> None:
    """`accumulation_case` on models.MLP(widths) with a cross-entropy loss (random inputs and class labels)."""
    __tracebackhide__ = True
    accumulation_case(fn, ("mlp", list(widths), "relu"),
                      lambda n: (torch.randn(n, widths[0]), torch.randint(0, widths[-1], (n,))),
                      sizes, "cross_entropy", seed)


def accumulation_regression_case(fn, d_in: int, d_out: int, sizes: list[int], seed: int) -> None:
    """`accumulation_case` on MLP([d_in, 32, d_out], Tanh) with a regression loss (mean squared error)."""
    __tracebackhide__ = True
    accumulation_case(fn, ("mlp", [d_in, 32, d_out], "tanh"),
                      lambda n: (torch.randn(n, d_in), torch.randn(n, d_out)), sizes, "mse", seed)


def accumulation_gpt_case(fn, config: models.GPTConfig, T: int, sizes: list[int], seed: int) -> None:
    """`accumulation_case` on models.GPT(config): next-token cross-entropy, micro-batches of whole sequences
    of length T."""
    __tracebackhide__ = True
    accumulation_case(fn, ("gpt", config),
                      lambda n: (torch.randint(0, config.vocab_size, (n, T)), torch.randint(0, config.vocab_size, (n, T))),
                      sizes, "next_token", seed)


# ---- fp16_underflow_fraction


def _casts_to_fp16(func, args, kwargs) -> bool:
    """Whether a torch call casts to float16: `.half()`, or float16 among its arguments (`.to(torch.float16)`)."""
    return getattr(func, "__name__", "") == "half" or any(a is torch.float16 for a in (*args[1:], *kwargs.values()))


class _Fp16Casts(TorchFunctionMode):
    """Notes whether the code it wraps, in this thread, casts anything to float16."""

    def __init__(self):
        super().__init__()
        self.seen = False

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if _casts_to_fp16(func, args, kwargs):
            self.seen = True
        return func(*args, **kwargs)


def _watched(grad: torch.Tensor) -> tuple[torch.Tensor, type, list]:
    """A copy of `grad` as a tensor subclass that notes (in the list returned) every float16 cast of itself or of
    any tensor computed from it, in whatever thread that happens (a TorchFunctionMode reaches only its own)."""
    seen = []

    class Tensor(torch.Tensor):  # named like torch.Tensor: a message about a returned tensor reads the same
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if _casts_to_fp16(func, args, kwargs):
                seen.append(getattr(func, "__name__", str(func)))
            return super().__torch_function__(func, types, args, kwargs)

    return grad.detach().clone().as_subclass(Tensor), Tensor, seen


@answers.observer
def observe_underflow(fn, grad: torch.Tensor, scale: float) -> dict:
    """fn(grad, scale) on a watched copy of `grad`, under a TorchFunctionMode. What it saw: the value fn returned
    (a tensor computed from the watched copy as a plain torch.Tensor) and whether the call cast anything to
    float16 (`.half()`, `.to(torch.float16)`, a float16 dtype argument), with the calls that did."""
    watched, watched_type, cast_calls = _watched(grad)
    with _Fp16Casts() as casts:
        got = fn(watched, scale)
    if type(got) is watched_type:  # a tensor computed from grad, returned: it crosses as the torch.Tensor it is
        got = got.as_subclass(torch.Tensor)
    return {"value": got, "cast_to_fp16": bool(casts.seen or cast_calls), "cast_calls": cast_calls[:10]}


def _fraction(hit: torch.Tensor, grad: torch.Tensor) -> float:
    """Fraction of grad's nonzero entries where `hit` holds (0.0 when none is nonzero)."""
    nz = grad != 0
    return hit[nz].double().mean().item() if nz.any() else 0.0


def underflow_case(fn, grad: torch.Tensor, scale: float, what: str) -> None:
    """fn(grad, scale) against the fraction of grad's nonzero entries that a real cast of grad * scale to
    float16 turns into 0 (measured here; within half an entry). The answer itself may not cast to float16."""
    __tracebackhide__ = True
    scaled = grad * scale
    measured = _fraction(scaled.to(torch.float16) == 0, grad)  # a real cast to fp16, here
    fi = torch.finfo(torch.float16)
    sub = fi.smallest_normal * fi.eps
    what = f"fp16_underflow_fraction({what}, scale={scale:g})"
    seen = answers.observe(observe_underflow, fn, grad, scale)
    if seen["cast_to_fp16"] is not False:
        checks.fail(f"{what}: 你的函数把数据 cast 成了 float16。", "fp16_cast_for_real", what=what)
    got = seen["value"]
    checks.expect_type(got, float, what=what)
    if not (grad != 0).any() and math.isnan(got):
        checks.fail(f"{what}: 得到 (got) nan。", "fp16_no_nonzero", what=what)
    checks.expect_close(got, measured, rtol=0.0, atol=0.5 / grad.numel(), what=what, mistakes=[
        checks.mistake("fp16_round_half_even", _fraction(scaled.abs() < sub / 2, grad)),
        checks.mistake("fp16_tiny_threshold", _fraction(scaled.abs() < fi.smallest_normal, grad)),
        checks.mistake("fp16_subnormal_not_half", _fraction(scaled.abs() < sub, grad)),
        checks.mistake("fp16_subnormal_not_half", _fraction(scaled.abs() <= sub, grad)),
        checks.mistake("forgot_scale", _fraction(grad.to(torch.float16) == 0, grad)),
        checks.mistake("zeros_counted", (scaled.to(torch.float16) == 0).double().mean().item())])


def no_nonzero_case(fn, n: int = 10) -> None:
    """fn(torch.zeros(n)) must return exactly 0.0: no nonzero entry, none to flush (0 / 0 would be NaN)."""
    __tracebackhide__ = True
    what = f"fp16_underflow_fraction(torch.zeros({n}))"
    got = answers.call(fn, torch.zeros(n))
    checks.expect_type(got, float, what=what)
    if math.isnan(got):
        checks.fail(f"{what}: 得到 (got) nan。", "fp16_no_nonzero", what=what)
    checks.expect_equal(got, 0.0, what=what)


def drawn_gradient(rng: random.Random, n: int, lo: float, hi: float, zeros: float = 0.0, ties: float = 0.0,
                   tie_scale: float = 1.0) -> torch.Tensor:
    """n fp32 entries: magnitudes log-uniform in [2**lo, 2**hi], random signs, a share `zeros` of exact zeros
    and a share `ties` of exact fp16 ties (±2**-25 / tie_scale, which land on 2**-25 once scaled)."""
    values = []
    for _ in range(n):
        u, sign = rng.random(), rng.choice((-1, 1))
        values.append(0.0 if u < zeros else sign * 2.0 ** -25 / tie_scale if u < zeros + ties
                      else sign * 2.0 ** rng.uniform(lo, hi))
    return torch.tensor(values, dtype=torch.float32)


def mlp_gradient(widths: list[int], batch: int, seed: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The real gradient (all parameters, one fp32 vector) of models.MLP(widths) on a random cross-entropy batch,
    computed in `dtype` (float64: the same on every CPU, whatever its matmul kernels)."""
    torch.manual_seed(seed)
    model = models.MLP(widths).to(dtype)
    x = torch.randn(batch, widths[0]).to(dtype)
    F.cross_entropy(model(x), torch.randint(0, widths[-1], (batch,))).backward()
    return _grad_vec(model).float()


# ---- train_step

_LOW = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def _vec(tensors) -> torch.Tensor:
    return torch.cat([t.detach().float().cpu().flatten() for t in tensors])


@answers.observer
class TrainStepSession:
    """The answer's training loop, kept beside it: models.MLP(widths) holding `state` on `device`, an
    SGD(lr) optimizer, the batch (x, y) and, for precision "fp16", a GradScaler(device, init_scale,
    growth_interval=1), built once and stepped by the check. Forward hooks note the dtype of every Linear
    output. Each `step()` is one call of fn(model, optimizer, x, y, precision, scaler) and returns what it saw."""

    def __init__(self, fn, widths: list, state: dict, x: torch.Tensor, y: torch.Tensor, precision: str, lr: float,
                 init_scale: float, device: str = "cpu"):
        self.fn, self.precision = fn, precision
        self.model = _build_with(("mlp", list(widths), "relu"), state, device)
        self.x, self.y = x.to(device), y.to(device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=lr)
        self.scaler = (torch.amp.GradScaler(device, init_scale=init_scale, growth_interval=1)
                       if precision == "fp16" else None)
        self.linear_dtypes: list = []
        for m in self.model.modules():
            if isinstance(m, torch.nn.Linear):
                m.register_forward_hook(lambda mod, i, out: self.linear_dtypes.append(getattr(out, "dtype", None)))

    def step(self, inf_gradient: bool = False) -> dict:
        """One call of the answer. With `inf_gradient`, the first layer's weight gets an all-inf gradient in
        backward (a hook). What it saw: the value returned, the parameters after the step (fp32 copies, in
        parameters() order) and their dtypes, the dtypes of the Linear outputs in this call (in order), and for
        fp16 the scaler's scale after the call and whether scaler.scale(...) was ever used."""
        self.linear_dtypes.clear()
        handle = None
        if inf_gradient:
            handle = self.model.layers[0].weight.register_hook(lambda gr: torch.full_like(gr, float("inf")))
        try:
            returned = self.fn(self.model, self.optimizer, self.x, self.y, self.precision, self.scaler)
        finally:
            if handle is not None:
                handle.remove()
        params = list(self.model.parameters())
        return {"returned": returned,
                "params": [p.detach().float().cpu().clone() for p in params],
                "param_dtypes": sorted({str(p.dtype) for p in params}),
                "linear_dtypes": list(self.linear_dtypes),
                "scale": self.scaler.get_scale() if self.scaler is not None else None,
                "scaler_used": self.scaler is not None and self.scaler._scale is not None}


@answers.observer
def observe_train_step_call(fn, widths: list, state: dict, x: torch.Tensor, y: torch.Tensor, precision: str) -> dict:
    """fn(model, SGD(0.1), x, y, precision) once, on models.MLP(widths) holding `state`: the value it returned
    (an exception it raises crosses as itself)."""
    model = _build_with(("mlp", list(widths), "relu"), state)
    return {"returned": fn(model, torch.optim.SGD(model.parameters(), lr=0.1), x, y, precision)}


def _call(step, what: str, *args):
    """step(*args), with GradScaler's own errors for its misuses translated into the usual mistake's hint."""
    __tracebackhide__ = True
    try:
        return step(*args)
    except (RuntimeError, AssertionError) as e:  # GradScaler raises both
        for text, hint in (("already been called since the last update", "scaler_update"),  # step() or unscale_() twice
                           ("is being called after step()", "scaler_update"),  # unscale_() of the next step, no update()
                           ("No inf checks were recorded", "scaled_grads")):
            if text in str(e):
                checks.fail(f"{what}: GradScaler 报错 {str(e)[:300]!r}", hint, what=what)
        raise


def _as_vector(params: object, like: torch.Tensor, what: str) -> torch.Tensor:
    __tracebackhide__ = True
    if type(params) is not list or not all(type(p) is torch.Tensor for p in params):
        raise checks.CheckFailed(f"{what}: 没有得到参数 (no parameters came back)。", what=what)
    vec = _vec(params)
    if vec.shape != like.shape:
        raise checks.CheckFailed(f"{what}: 参数的个数变了 (the model's parameters changed shape)。", what=what)
    return vec


def train_step_case(fn, precision: str, widths: list[int], n: int, seed: int, lr: float = 0.2, steps: int = 4,
                    dev: str = "cpu") -> None:
    """`steps` calls of fn(model, SGD(lr), x, y, precision, scaler) on models.MLP(widths) and n random samples.

    Each step: the loss returned is the fp32 loss (rtol 0.03), the parameters stay fp32 (master weights), the
    Linear outputs come in the precision's dtype (autocast), and the parameters move by lr × the fp32 gradient
    of the check's own copy of the model at the answer's current parameters (relative error ≤ 0.1); after all
    steps the loss is lower. fp16 (a GradScaler with growth_interval=1, starting at 2**12): every good step
    doubles the scale, a step whose gradient holds inf leaves the parameters as they were and halves the scale."""
    __tracebackhide__ = True
    torch.manual_seed(seed)
    ref = models.MLP(widths).to(dev)  # the check's own fp32 copy: reference gradients at the answer's parameters
    x, y = torch.randn(n, widths[0], device=dev), torch.randint(0, widths[-1], (n,), device=dev)
    state = {k: v.detach().clone() for k, v in ref.state_dict().items()}
    init = 2.0 ** 12
    what = f"train_step(precision={precision!r}, MLP {widths}, {dev})"
    current = [p.detach().clone() for p in ref.parameters()]  # the answer's parameters, as it last reported them
    losses, prev = [], None
    with answers.session(TrainStepSession, fn, list(widths), state, x, y, precision, lr, init, dev) as session:
        for step in range(steps):
            with torch.no_grad():
                for p, t in zip(ref.parameters(), current):
                    p.copy_(t)
            ref.zero_grad()
            ref_loss = F.cross_entropy(ref(x), y)
            ref_loss.backward()
            g = _vec(p.grad for p in ref.parameters())
            before = _vec(current)
            seen = _call(session.step, what)
            loss = seen["returned"]
            checks.expect_type(loss, float, what=what + " 的返回值")
            checks.expect_equal(seen["param_dtypes"], ["torch.float32"], what=what + " 之后参数的 dtype",
                                mistakes=[checks.mistake("master_weights", ["torch.bfloat16"]),
                                          checks.mistake("master_weights", ["torch.float16"])])
            linear = seen["linear_dtypes"]
            checks.expect(type(linear) is list and bool(linear), what + ": model 的前向 (forward) 没有被调用")
            checks.expect_equal(str(linear[0]), str(_LOW[precision]), what=what + ": Linear 输出的 dtype",
                                mistakes=[checks.mistake("no_autocast", "torch.float32")])
            checks.expect_close(loss, ref_loss.item(), rtol=0.03, what=what + f" 第 {step + 1} 步返回的 loss (更新之前)")
            after = _as_vector(seen["params"], before, what)
            moved = (before - after) / lr  # SGD: equals the (unscaled) gradient
            ratio = (moved @ g / (g @ g)).item()
            err = ((moved - g).norm() / g.norm()).item()
            if not err <= 0.1:
                hint = None
                if prev is not None and ((moved - g - prev).norm() / (g + prev).norm()).item() < 0.1:
                    hint = "zero_grad_missing"
                elif ratio > 100:
                    hint = "scaled_grads"
                elif abs(ratio) < 1e-6:
                    hint = "no_optimizer_step"
                checks.fail(f"{what} 第 {step + 1} 步：参数的变化 / lr 与 FP32 的梯度不一致："
                            f"relative error {err:.3g}，比值 ratio {ratio:.4g}。", hint, what=what)
            current, prev = seen["params"], g
            losses.append(loss)
        checks.expect(losses[-1] < losses[0], f"{what}: {steps} 步之后 loss 没有下降：{[round(v, 4) for v in losses]}")
        if precision == "fp16":
            # growth_interval=1: every good step doubles the scale
            checks.expect_close(seen["scale"], init * 2 ** steps, what=what + f": {steps} 次正常的步之后 scaler.get_scale()",
                                mistakes=[checks.mistake("scaler_update" if seen["scaler_used"] else "scaler_unused", init)])
            # a step whose gradient holds inf must be skipped, and the scale halved
            before, s = _vec(current), seen["scale"]
            seen = _call(session.step, what, True)
            if not torch.equal(before, _as_vector(seen["params"], before, what)):
                checks.fail(f"{what}: 梯度含 inf 的一步应被跳过 (skipped)，参数却变了。", "scaler_unused", what=what)
            checks.expect_close(seen["scale"], s / 2, what=what + ": 含 inf 的一步之后 scale 应减半",
                                mistakes=[checks.mistake("scaler_update", s)])


def train_step_rejects(fn, precision: str) -> None:
    """fn(..., precision) must raise ValueError for a precision other than "fp32", "bf16" and "fp16"."""
    __tracebackhide__ = True
    model = models.MLP([4, 2])
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    raised = False
    try:
        answers.observe(observe_train_step_call, fn, [4, 2], state, torch.randn(2, 4), torch.tensor([0, 1]), precision)
    except ValueError:
        raised = True
    if not raised:
        checks.fail(f"train_step(..., precision={precision!r}) 没有 raise ValueError。", "precision_unknown")


# How each exercise is graded (docs/grading.md's table is generated from every module's ORACLE).
ORACLE = {
    "accumulated_step": answers.Oracle(
        returns="what observe_accumulated_step saw on a model it built beside the answer (the recipe, a state_dict, "
                "stale .grad, the micro-batches as tensors, the loss by name): the value returned, the .grad the "
                "answer left and the parameters after its SGD step",
        expected="one backward of the check's own copy of the model on all micro-batches concatenated (the big "
                 "batch's gradient and mean loss); the usual mistakes' gradients from each micro-batch's own backward "
                 "and the stale gradients, all computed in the judge",
        tampering="outputs only: the .grad, the parameters after the step and the loss are the work asked for; a "
                  "student who patches the instrument must still send the big batch's gradient, parameters moved by "
                  "lr × it and its loss, which is the answer (how they are computed, accumulated or not, is not graded)"),
    "fp16_underflow_fraction": answers.Oracle(
        returns="the float it returns for each (gradient, scale), and whether observe_underflow saw it cast to "
                "float16 (a TorchFunctionMode and a watched tensor subclass around the call)",
        expected="a real cast of grad * scale to torch.float16 in the judge (the fraction of nonzero entries that "
                 "become 0); the usual mistakes' fractions from the wrong thresholds, computed there",
        tampering="the number is the answer and is compared with the judge's own cast. The rule 'predict, do not "
                  "cast' rests on an observation the student's process makes: a cast through numpy, or a patched "
                  "instrument, goes unseen; it gains nothing but the right number, which a real cast gives anyway, "
                  "so it costs only the exercise's point of learning the threshold, never another student's grade"),
    "train_step": answers.Oracle(
        returns="what a TrainStepSession beside the answer saw at each step (an MLP built from a state_dict, SGD, "
                "a GradScaler for fp16): the loss returned, the parameters after the step and their dtypes, the "
                "dtypes of the Linear outputs (forward hooks), the scaler's scale; whether it raises ValueError for "
                "an unknown precision",
        expected="the check's own fp32 copy of the model, loaded with the answer's parameters before each step: its "
                 "loss and gradient (parameters must move by lr × it); the scale GradScaler's rules give (×2 per good "
                 "step with growth_interval=1, ½ after the inf step the session injects)",
        tampering="the parameter trajectory is checked against the judge's own fp32 reference and must be a real "
                  "training step. The low precision is not: Linear output dtypes, the scale and 'scaler used' are "
                  "observed in the student's process, so a student who patches the session or the hooks there can "
                  "report autocast and a GradScaler while training in fp32 (an fp32 step passes the numeric checks "
                  "by design, within rtol 0.03 / 0.1); no independent observation closes this, and it wins only "
                  "this exercise's precision groups"),
}
