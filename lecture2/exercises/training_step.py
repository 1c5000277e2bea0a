"""Notebook 04's check cases: accumulated_step, fp16_underflow_fraction, train_step.

Every expected value here is measured live: the big batch's gradient from one backward on the concatenated
micro-batches, a real cast to float16, the fp32 gradient of a copy of the student's model.
"""
from __future__ import annotations

import copy
import math
import random
from typing import Callable

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from lecture2 import checks, models


def _fail(message: str, hint_key: str | None = None) -> None:
    """Fail with `message` and the hint of usual mistake `hint_key`, kept on the failure too (for the grader's
    feedback and the class's table of mistakes), not only in the message."""
    __tracebackhide__ = True
    hint = checks.HINTS[hint_key] if hint_key else None
    raise checks.CheckFailed(message + (f"\n提示 (hint): {hint}" if hint else ""), hint=hint)

# ---- accumulated_step


def _grad_vec(model: torch.nn.Module) -> torch.Tensor:
    """Every parameter's .grad as one vector (zeros where a gradient is missing)."""
    return torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).flatten() for p in model.parameters()])


def _param_vec(model: torch.nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def _expect_grads(got: torch.Tensor, want: torch.Tensor, what: str, mistakes=()) -> None:
    """allclose as a relative error on the whole gradient (≤ 1e-4); name the usual mistake whose gradient
    `got` equals (within 1e-3 relative): `mistakes` is a list of (hint key, gradient that mistake gives)."""
    __tracebackhide__ = True
    err = ((got - want).norm() / want.norm()).item()
    if err <= 1e-4:
        return
    ratio = (got @ want / (want @ want)).item()
    hint = next((h for h, v in mistakes if (got - v).norm() <= 1e-3 * max(v.norm().item(), 1e-30)), None)
    _fail(f"{what}: 与大 batch 的梯度不一致 (not allclose)：relative error {err:.3g}，"
          f"比值 ratio (got·want / |want|²) = {ratio:.4g}。", hint)


def accumulation_case(fn, make_model: Callable[[], torch.nn.Module], make_batch: Callable[[int], tuple],
                      sizes: list[int], loss_fn, seed: int, lr: float = 0.1) -> None:
    """fn(model, SGD(lr), micro-batches of `sizes`, loss_fn) against one backward on the concatenated big batch
    (measured live on a copy): the .grad it leaves (relative error ≤ 1e-4), the SGD step it takes (parameters
    moved by lr × that gradient) and the loss it returns (the big batch's mean loss, rtol 1e-5). The model
    starts with a previous step's gradients left in .grad."""
    __tracebackhide__ = True
    torch.manual_seed(seed)
    model = make_model()
    batches = [make_batch(n) for n in sizes]
    x_all, y_all = torch.cat([b[0] for b in batches]), torch.cat([b[1] for b in batches])
    ref = copy.deepcopy(model)  # live reference: one backward on the concatenated big batch
    big = loss_fn(ref(x_all), y_all)
    big.backward()
    want = _grad_vec(ref)
    per = []  # each micro-batch's own mean-loss gradient: the usual mistakes are sums of these
    for xb, yb in batches:
        m = copy.deepcopy(model)
        loss_fn(m(xb), yb).backward()
        per.append(_grad_vec(m))
    stale_x, stale_y = make_batch(3)
    loss_fn(model(stale_x), stale_y).backward()  # a previous step's gradients left in .grad
    stale = _grad_vec(model)
    k, n_total = len(sizes), sum(sizes)
    before = _param_vec(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    got_loss = fn(model, optimizer, batches, loss_fn)
    what = f"accumulated_step: {type(model).__name__}, micro-batch sizes {sizes}"
    _expect_grads(_grad_vec(model), want, what + " 之后的 .grad", [
        ("loss_not_divided", sum(per)),
        ("accum_weights", sum(per) / k),
        ("zero_grad_in_loop", per[-1] / k), ("zero_grad_in_loop", per[-1] * sizes[-1] / n_total),
        ("zero_grad_in_loop", per[-1]),
        ("zero_grad_missing", want + stale),
        ("grads_cleared", torch.zeros_like(want))])
    moved = (before - _param_vec(model)) / lr
    _expect_grads(moved, want, what + ": 参数的变化 (before - after) / lr (SGD 做了一次 step)", [
        ("no_optimizer_step", torch.zeros_like(want))])
    checks.expect_type(got_loss, float, what=what + " 的返回值")
    checks.expect_close(got_loss, big.item(), rtol=1e-5, atol=1e-7, what=what + " 返回的 loss", mistakes=[
        checks.mistake("loss_not_divided", big.item() * k)])


def accumulation_mlp_case(fn, widths: list[int], sizes: list[int], seed: int) -> None:
    """`accumulation_case` on models.MLP(widths) with a cross-entropy loss (random inputs and class labels)."""
    __tracebackhide__ = True
    accumulation_case(fn, lambda: models.MLP(widths),
                      lambda n: (torch.randn(n, widths[0]), torch.randint(0, widths[-1], (n,))),
                      sizes, F.cross_entropy, seed)


def accumulation_regression_case(fn, d_in: int, d_out: int, sizes: list[int], seed: int) -> None:
    """`accumulation_case` on MLP([d_in, 32, d_out], Tanh) with a regression loss (mean squared error)."""
    __tracebackhide__ = True
    accumulation_case(fn, lambda: models.MLP([d_in, 32, d_out], activation=torch.nn.Tanh),
                      lambda n: (torch.randn(n, d_in), torch.randn(n, d_out)), sizes, F.mse_loss, seed)


def accumulation_gpt_case(fn, config: models.GPTConfig, T: int, sizes: list[int], seed: int) -> None:
    """`accumulation_case` on models.GPT(config): next-token cross-entropy, micro-batches of whole sequences
    of length T."""
    __tracebackhide__ = True
    accumulation_case(fn, lambda: models.GPT(config),
                      lambda n: (torch.randint(0, config.vocab_size, (n, T)), torch.randint(0, config.vocab_size, (n, T))),
                      sizes, lambda logits, y: F.cross_entropy(logits.flatten(0, 1), y.flatten()), seed)


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
    any tensor computed from it, in whatever thread that happens: the course's grader calls an answer in a
    thread of its own, which a TorchFunctionMode entered here does not reach."""
    seen = []

    class Tensor(torch.Tensor):  # named like torch.Tensor: a message about a returned tensor reads the same
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if _casts_to_fp16(func, args, kwargs):
                seen.append(getattr(func, "__name__", str(func)))
            return super().__torch_function__(func, types, args, kwargs)

    return grad.detach().clone().as_subclass(Tensor), Tensor, seen


def _fraction(hit: torch.Tensor, grad: torch.Tensor) -> float:
    """Fraction of grad's nonzero entries where `hit` holds (0.0 when none is nonzero)."""
    nz = grad != 0
    return hit[nz].double().mean().item() if nz.any() else 0.0


def underflow_case(fn, grad: torch.Tensor, scale: float, what: str) -> None:
    """fn(grad, scale) against the fraction of grad's nonzero entries that a real cast of grad * scale to
    float16 turns into 0 (measured here; within half an entry). The answer itself may not cast to float16."""
    __tracebackhide__ = True
    scaled = grad * scale
    measured = _fraction(scaled.to(torch.float16) == 0, grad)  # live: a real cast to fp16
    fi = torch.finfo(torch.float16)
    sub = fi.smallest_normal * fi.eps
    what = f"fp16_underflow_fraction({what}, scale={scale:g})"
    watched, watched_type, cast_calls = _watched(grad)
    with _Fp16Casts() as casts:
        got = fn(watched, scale)
    if type(got) is watched_type:  # a tensor computed from grad, returned: compared as the torch.Tensor it is
        got = got.as_subclass(torch.Tensor)
    if casts.seen or cast_calls:
        _fail(f"{what}: 你的函数把数据 cast 成了 float16。", "fp16_cast_for_real")
    checks.expect_type(got, float, what=what)
    if not (grad != 0).any():
        if math.isnan(got):
            _fail(f"{what}: 得到 (got) nan。", "fp16_no_nonzero")
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
    got = fn(torch.zeros(n))
    checks.expect_type(got, float, what=what)
    if math.isnan(got):
        _fail(f"{what}: 得到 (got) nan。", "fp16_no_nonzero")
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


def mlp_gradient(widths: list[int], batch: int, seed: int) -> torch.Tensor:
    """The real gradient (all parameters, one vector) of models.MLP(widths) on a random cross-entropy batch."""
    torch.manual_seed(seed)
    model = models.MLP(widths)
    F.cross_entropy(model(torch.randn(batch, widths[0])), torch.randint(0, widths[-1], (batch,))).backward()
    return torch.cat([p.grad.flatten() for p in model.parameters()])


# ---- train_step

_LOW = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def _vec(tensors) -> torch.Tensor:
    return torch.cat([t.detach().float().flatten() for t in tensors])


def _call(fn, what: str, *args):
    """fn(*args), with GradScaler's own errors for its misuses translated into the usual mistake's hint."""
    __tracebackhide__ = True
    try:
        return fn(*args)
    except (RuntimeError, AssertionError) as e:  # GradScaler raises both
        for text, hint in (("already been called since the last update", "scaler_update"),
                           ("No inf checks were recorded", "scaled_grads")):
            if text in str(e):
                _fail(f"{what}: GradScaler 报错 {str(e)!r}", hint)
        raise


def train_step_case(fn, precision: str, widths: list[int], n: int, seed: int, lr: float = 0.2, steps: int = 4,
                    dev: str = "cpu") -> None:
    """`steps` calls of fn(model, SGD(lr), x, y, precision, scaler) on models.MLP(widths) and n random samples.

    Each step: the loss returned is the fp32 loss (rtol 0.03), the parameters stay fp32 (master weights), the
    Linear outputs come in the precision's dtype (autocast), and the parameters move by lr × the fp32 gradient
    of a copy of the model (relative error ≤ 0.1); after all steps the loss is lower. fp16 (a GradScaler with
    growth_interval=1, starting at 2**12): every good step doubles the scale, a step whose gradient holds
    inf leaves the parameters as they were and halves the scale."""
    __tracebackhide__ = True
    torch.manual_seed(seed)
    model = models.MLP(widths).to(dev)
    x, y = torch.randn(n, widths[0], device=dev), torch.randint(0, widths[-1], (n,), device=dev)
    ref = copy.deepcopy(model)  # fp32 reference gradients at the student's current parameters
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    init = 2.0 ** 12
    scaler = torch.amp.GradScaler(dev, init_scale=init, growth_interval=1) if precision == "fp16" else None
    seen = []  # live: the dtype of every Linear output during the student's step
    hooks = [m.register_forward_hook(lambda mod, i, out: seen.append(out.dtype))
             for m in model.modules() if isinstance(m, torch.nn.Linear)]
    what = f"train_step(precision={precision!r}, MLP {widths}, {dev})"
    losses, prev = [], None
    try:
        for step in range(steps):
            ref.load_state_dict(model.state_dict())
            ref.zero_grad()
            ref_loss = F.cross_entropy(ref(x), y)
            ref_loss.backward()
            g = _vec(p.grad for p in ref.parameters())
            before = _vec(model.parameters())
            seen.clear()
            loss = _call(fn, what, model, optimizer, x, y, precision, scaler)
            checks.expect_type(loss, float, what=what + " 的返回值")
            dtypes = sorted({str(p.dtype) for p in model.parameters()})
            checks.expect_equal(dtypes, ["torch.float32"], what=what + " 之后参数的 dtype",
                                mistakes=[checks.mistake("master_weights", ["torch.bfloat16"]),
                                          checks.mistake("master_weights", ["torch.float16"])])
            checks.expect(bool(seen), what + ": model 的前向 (forward) 没有被调用")
            checks.expect_equal(str(seen[0]), str(_LOW[precision]), what=what + ": Linear 输出的 dtype",
                                mistakes=[checks.mistake("no_autocast", "torch.float32")])
            checks.expect_close(loss, ref_loss.item(), rtol=0.03, what=what + f" 第 {step + 1} 步返回的 loss (更新之前)")
            moved = (before - _vec(model.parameters())) / lr  # SGD: equals the (unscaled) gradient
            ratio = (moved @ g / (g @ g)).item()
            err = ((moved - g).norm() / g.norm()).item()
            if err > 0.1:
                hint = None
                if prev is not None and ((moved - g - prev).norm() / (g + prev).norm()).item() < 0.1:
                    hint = "zero_grad_missing"
                elif ratio > 100:
                    hint = "scaled_grads"
                elif abs(ratio) < 1e-6:
                    hint = "no_optimizer_step"
                _fail(f"{what} 第 {step + 1} 步：参数的变化 / lr 与 FP32 的梯度不一致："
                      f"relative error {err:.3g}，比值 ratio {ratio:.4g}。", hint)
            prev = g
            losses.append(loss)
        checks.expect(losses[-1] < losses[0], f"{what}: {steps} 步之后 loss 没有下降：{[round(v, 4) for v in losses]}")
        if precision == "fp16":
            # growth_interval=1: every good step doubles the scale
            used = scaler._scale is not None  # set by the first scaler.scale(...)
            checks.expect_close(scaler.get_scale(), init * 2 ** steps, what=what + f": {steps} 次正常的步之后 scaler.get_scale()",
                                mistakes=[checks.mistake("scaler_update" if used else "scaler_unused", init)])
            # live: a step whose gradient holds inf must be skipped, and the scale halved
            handle = model.layers[0].weight.register_hook(lambda gr: torch.full_like(gr, float("inf")))
            before, s = _vec(model.parameters()), scaler.get_scale()
            try:
                _call(fn, what, model, optimizer, x, y, precision, scaler)
            finally:
                handle.remove()
            if not torch.equal(before, _vec(model.parameters())):
                _fail(f"{what}: 梯度含 inf 的一步应被跳过 (skipped)，参数却变了。", "scaler_unused")
            checks.expect_close(scaler.get_scale(), s / 2, what=what + ": 含 inf 的一步之后 scale 应减半",
                                mistakes=[checks.mistake("scaler_update", s)])
    finally:
        for h in hooks:
            h.remove()


def train_step_rejects(fn, precision: str) -> None:
    """fn(..., precision) must raise ValueError for a precision other than "fp32", "bf16" and "fp16"."""
    __tracebackhide__ = True
    model = models.MLP([4, 2])
    raised = False
    try:
        fn(model, torch.optim.SGD(model.parameters(), lr=0.1), torch.randn(2, 4), torch.tensor([0, 1]), precision)
    except ValueError:
        raised = True
    if not raised:
        _fail(f"train_step(..., precision={precision!r}) 没有 raise ValueError。", "precision_unknown")
