"""Notebook 04's check cases: accumulated_step, AdamW.

Every answer is reached through lecture2.answers (plain data both ways). What the answer needs beside it (a
model, an optimizer, a loss function) is built there by this module's instruments from plain data (a model recipe
and its state_dict, tensors, a loss's name, parameter groups as indices and hyperparameters), and they send back
only what they saw: the .grad and the parameters after the answer's step, the loss it returned, the parameters
after each step of the answer's optimizer and after resuming it from its own state_dict. Every expected value is
measured here, in the check's own process: the big batch's gradient from one backward on the concatenated
micro-batches; torch.optim.AdamW stepping the check's own copy of the model on the same batch.
"""
from __future__ import annotations

import copy

import torch
import torch.nn.functional as F

from lecture2 import answers, checks, models

checks.register_hints({
    "training_step.accum_idea": "思路 (idea)：大 batch 的 loss 是它所有样本 loss 的平均。把这个平均写成各个 micro-batch 的平均 loss 的"
                                "加权和：每个 micro-batch 占多大的份额？每个 micro-batch 的 loss 乘上它的份额再 backward，.grad "
                                "累加起来就是大 batch 的梯度。",
    "training_step.adamw_idea": "思路 (idea)：每个参数 p 自己的状态 (self.state[p]) 里存一阶矩 m、二阶矩 v 和步数 t，每一步先更新它们，再用偏差修正后的 "
                  "m̂ / (√v̂ + eps) 更新 p；权重衰减 (weight decay) 单独作用在 p 上，不进梯度。每个 param_group 用它自己的超参数。",
    "training_step.bias_correction": "忘了偏差修正 (bias correction)：m 和 v 从 0 开始，前几步偏小；要除以 1 - beta1**t 和 1 - beta2**t (t 从 1 数起)。",
    "training_step.l2_not_decoupled": "权重衰减加进了梯度 (g + λp，这是 Adam 的 L2 正则)：AdamW 的衰减是解耦的 (decoupled)：p ← p - lr·λ·p，不经过 m 和 v。",
    "training_step.decay_without_lr": "权重衰减要乘学习率：p ← p - lr·λ·p (PyTorch 的 AdamW)，不是 p - λ·p。",
    "training_step.state_kept": "m 和 v 要跨步保留 (在 self.state[p] 里)：每一步从 0 重新开始，就只剩这一步的梯度。",
    "training_step.step_per_param": "步数 t 是每个参数自己的 (state['step'])，每一步每个参数加 1；整个优化器共用一个计数器并在参数循环里加 1，t 就跑快了。",
    "training_step.param_groups": "每个 param_group 有自己的 lr 和 weight_decay (group['lr'] ...)：不要只用构造函数的默认值。",
    "training_step.betas_swapped": "beta1 (一阶矩 m) 和 beta2 (二阶矩 v) 用反了：betas = (beta1, beta2)。",
    "training_step.state_dict": "状态要放在 self.state[p] 里：optimizer.state_dict() 只存它，load_state_dict() 之后才能从存档接着训练；存在别的属性里的 m、v 会丢。",
    "training_step.subclass": "要继承 torch.optim.Optimizer (class AdamW(torch.optim.Optimizer))，用它的 param_groups 和 state。",
})

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


def _expect_grads(got: object, want: torch.Tensor, what: str, mistakes=(), idea: str | None = None) -> None:
    """allclose as a relative error on the whole gradient (≤ 1e-4); name the usual mistake whose gradient
    `got` equals (within 1e-3 relative): `mistakes` is a list of (hint key, gradient that mistake gives); else
    give the hint `idea` (a key), if any."""
    __tracebackhide__ = True
    if type(got) is not torch.Tensor or got.shape != want.shape or not got.is_floating_point():
        raise checks.CheckFailed(f"{what}: 没有得到形状为 {tuple(want.shape)} 的梯度向量 (no gradient vector came back)。",
                                 what=what)
    got = got.to(want.dtype)
    err = ((got - want).norm() / want.norm()).item()
    if err <= 1e-4:
        return
    ratio = (got @ want / (want @ want)).item()
    hint = next((h for h, v in mistakes if (got - v).norm() <= 1e-3 * max(v.norm().item(), 1e-30)), idea)
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
        ("grads_cleared", torch.zeros_like(want))], idea="training_step.accum_idea")
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


# ---- AdamW


def _param_groups(params: list, groups: list | None) -> list:
    """What the optimizer is built on: `params` themselves, or for `groups` (a list of {"params": indices,
    "hyper": {...}}) a list of param groups with their own hyperparameters."""
    if groups is None:
        return params
    return [{**g["hyper"], "params": [params[i] for i in g["params"]]} for g in groups]


@answers.observer
class OptimizerSession:
    """The answer's optimizer class, kept beside it: models.MLP(widths) holding `state`, the batch (x, y), and
    cls(param groups, **hyper) built once. Each `step()` is one training step with it (zero_grad, cross-entropy
    backward, optimizer.step()); `resumed_step()` builds a second model and optimizer from the first one's
    state_dicts and steps both."""

    def __init__(self, cls, widths: list, state: dict, x: torch.Tensor, y: torch.Tensor, groups: list | None,
                 hyper: dict):
        self.cls, self.groups, self.hyper = cls, groups, hyper
        self.model = _build_with(("mlp", list(widths), "relu"), state)
        self.x, self.y = x, y
        self.optimizer = cls(_param_groups(list(self.model.parameters()), groups), **hyper)

    @staticmethod
    def _step(model, optimizer, x, y) -> None:
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()

    def step(self) -> dict:
        """One step. What it saw: whether the optimizer is a torch.optim.Optimizer, and the parameters after."""
        self._step(self.model, self.optimizer, self.x, self.y)
        return {"is_optimizer": isinstance(self.optimizer, torch.optim.Optimizer),
                "params": [p.detach().clone() for p in self.model.parameters()]}

    def resumed_step(self) -> dict:
        """A copy of the model and a new optimizer loaded from the first one's state_dicts (a checkpoint), then one
        step of each: the parameters after the step of the original and of the resumed one."""
        model = copy.deepcopy(self.model)
        optimizer = self.cls(_param_groups(list(model.parameters()), self.groups), **self.hyper)
        optimizer.load_state_dict(copy.deepcopy(self.optimizer.state_dict()))
        self._step(self.model, self.optimizer, self.x, self.y)
        self._step(model, optimizer, self.x, self.y)
        return {"params": [p.detach().clone() for p in self.model.parameters()],
                "resumed": [p.detach().clone() for p in model.parameters()]}


_DEFAULTS = {"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 1e-2}  # torch.optim.AdamW's


def _with(groups: list | None, hyper: dict, change) -> tuple[list | None, dict]:
    """`groups` and `hyper` with `change(h)` applied to the defaults and to every group's own hyperparameters (each
    completed from the defaults first)."""
    defaults = change({**_DEFAULTS, **hyper})
    if groups is None:
        return None, defaults
    return [{"params": g["params"], "hyper": change({**_DEFAULTS, **hyper, **g["hyper"]})} for g in groups], defaults


def _variant_trajectory(widths, state, x, y, groups, hyper, steps: int, variant: str) -> list[torch.Tensor]:
    """The parameter vector after each of `steps` training steps of PyTorch's own optimizers, set up to make one
    usual mistake (`variant`, a hint's suffix), on the check's own copy of the model."""
    model = _build_with(("mlp", list(widths), "relu"), state)
    params = list(model.parameters())
    kind = torch.optim.AdamW
    if variant == "l2_not_decoupled":  # Adam's weight_decay adds λ·p to the gradient
        kind = torch.optim.Adam
        groups, hyper = _with(groups, hyper, lambda h: h)
    elif variant == "decay_without_lr":  # AdamW multiplies p by 1 - lr·λ: λ / lr there is a decay of λ
        groups, hyper = _with(groups, hyper, lambda h: {**h, "weight_decay": h["weight_decay"] / h["lr"]})
    elif variant == "betas_swapped":
        groups, hyper = _with(groups, hyper, lambda h: {**h, "betas": tuple(reversed(h["betas"]))})
    elif variant == "param_groups":  # every parameter at the constructor's defaults
        groups = None
    optimizer = kind(_param_groups(params, groups), **hyper, foreach=False)
    order = [p for group in optimizer.param_groups for p in group["params"]]  # the order step() visits them
    out = []
    for k in range(steps):
        if variant == "state_kept":  # the moments and the step count start again every step
            optimizer.state.clear()
        elif variant in ("bias_correction", "step_per_param"):
            for i, p in enumerate(order):
                st = optimizer.state[p]
                if not st:
                    st["exp_avg"], st["exp_avg_sq"] = torch.zeros_like(p), torch.zeros_like(p)
                # the count step() adds 1 to: one so large that 1 - beta**t is 1 (no correction), or one counter for
                # the whole optimizer, counted once per parameter
                st["step"] = torch.tensor(float(10**6 if variant == "bias_correction" else k * len(order) + i))
        OptimizerSession._step(model, optimizer, x, y)
        out.append(_param_vec(model))
    return out


_VARIANTS = ("bias_correction", "l2_not_decoupled", "decay_without_lr", "state_kept", "step_per_param",
             "param_groups", "betas_swapped")


def _moved_error(got: torch.Tensor, want: torch.Tensor, start: torch.Tensor) -> float:
    """How far `got` is from `want`, relative to how far `want` moved from `start`."""
    return ((got - want).norm() / (want - start).norm().clamp_min(1e-30)).item()


def adamw_case(cls, widths: list[int], n: int, seed: int, hyper: dict, groups: list | None = None, steps: int = 4,
               resume: bool = False) -> None:
    """`steps` training steps of cls(param groups, **hyper) on models.MLP(widths) and n random samples against
    torch.optim.AdamW with the same groups and hyperparameters on the check's own copy (after each step the
    parameters within 1e-4 of how far the reference moved them); a wrong trajectory is named by the usual mistake
    whose trajectory it follows. With `resume`, one more step of the answer's optimizer and of a second one loaded
    from its state_dict must give the same parameters."""
    __tracebackhide__ = True
    torch.manual_seed(seed)
    ref_model = models.MLP(widths)
    x, y = torch.randn(n, widths[0]), torch.randint(0, widths[-1], (n,))
    state = {k: v.detach().clone() for k, v in ref_model.state_dict().items()}
    params = list(ref_model.parameters())
    reference = torch.optim.AdamW(_param_groups(params, groups), **hyper, foreach=False)
    variants = {v: _variant_trajectory(widths, state, x, y, groups, hyper, steps, v) for v in _VARIANTS}
    start = _param_vec(ref_model)
    where = "每个参数一组" if groups is None else f"{len(groups)} 个 param_groups"
    what = f"AdamW({', '.join([where, *(f'{k}={v}' for k, v in hyper.items())])}) on MLP {widths}"
    with answers.session(OptimizerSession, cls, list(widths), state, x, y, groups, hyper) as session:
        for k in range(steps):
            before = _param_vec(ref_model)
            OptimizerSession._step(ref_model, reference, x, y)
            want = _param_vec(ref_model)
            seen = session.step()
            if seen.get("is_optimizer") is not True:
                checks.fail(f"{what}: 你的类不是 torch.optim.Optimizer 的子类。", "training_step.subclass", what=what)
            got = seen.get("params")
            if type(got) is not list or len(got) != len(params) or not all(type(t) is torch.Tensor for t in got):
                raise checks.CheckFailed(f"{what}: 没有得到参数 (no parameters came back)。", what=what)
            got = torch.cat([t.detach().float().flatten() for t in got])
            if got.shape != want.shape:
                raise checks.CheckFailed(f"{what}: 参数的个数变了 (the model's parameters changed shape)。", what=what)
            err = _moved_error(got, want, before)
            if err <= 1e-4:
                continue
            near = min(_VARIANTS, key=lambda v: _moved_error(got, variants[v][k], before))  # the closest usual mistake
            hint = f"training_step.{near}" if _moved_error(got, variants[near][k], before) <= 1e-3 else None
            if hint is None and torch.equal(got, before):
                hint = "no_optimizer_step"
            checks.fail(f"{what} 第 {k + 1} 步之后的参数与 torch.optim.AdamW 不一致：差 / 参考这一步移动的距离 = {err:.3g}"
                        f"（允许 1e-4）。", hint or "training_step.adamw_idea", what=what)
        if resume:
            seen = session.resumed_step()
            kept, resumed = (torch.cat([t.float().flatten() for t in seen[key]]) for key in ("params", "resumed"))
            if _moved_error(resumed, kept, _param_vec(ref_model)) > 1e-6:
                checks.fail(f"{what}: 用 state_dict() 存档、load_state_dict() 恢复的优化器，下一步和原来的不一样。",
                            "training_step.state_dict", what=what)


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
    "AdamW": answers.Oracle(
        returns="what an OptimizerSession beside the answer saw (an MLP built from a state_dict, the answer's class on "
                "its parameters or param groups): the parameters after each training step, whether the class is a "
                "torch.optim.Optimizer, and the parameters after one more step of it and of a copy resumed from its "
                "state_dict",
        expected="torch.optim.AdamW with the same groups and hyperparameters stepping the check's own copy of the "
                 "model on the same batch, in the judge; the usual mistakes' trajectories from AdamW written out there "
                 "with one mistake each",
        tampering="the parameter trajectory is the work asked for and is compared with the judge's own torch.optim.AdamW; "
                  "a student who patches the session in their process could send torch's AdamW's parameters (computed "
                  "with torch's class, not their own) and pass: nothing independent observes which class stepped"),
}
