"""Notebook 03's check cases: gpt_params, RMSNorm.

Every answer is reached through lecture2.answers (plain data both ways). Two instruments run beside it:

    watch_parameters(fn, *args)      fn(*args) with a watch on Parameter registration: what it returned and how
                                     many Parameters it registered (building a module to count is refused)
    observe_rmsnorm(cls, ...)        the student's RMSNorm class instantiated, loaded with a given weight, run
                                     forward (the torch functions it calls recorded) and backward: what it saw

Expected values are computed here, in the judge: `numel` of a real `GPT` of the same configuration (built on the
meta device), on CUDA the bytes the allocator is asked for, and for RMSNorm `torch.nn.RMSNorm` run here on the
same input, weight and output gradient.
"""
from __future__ import annotations

import torch
import torch.nn as nn
from torch.nn.modules.module import register_module_parameter_registration_hook
from torch.overrides import TorchFunctionMode

from lecture2 import answers, checks
from lecture2.models import GPT, GPT2_SMALL, GPTConfig  # noqa: F401  (GPT2_SMALL: spec.GPT2_SMALL in test cells)

checks.register_hints({
    "modules.rms_keepdim": "求均值时用 keepdim=True (mean(dim=-1, keepdim=True))，结果的形状是 (..., 1)，才能和 x 广播 (broadcast)。",
    "modules.rms_init_ones": "weight 的初值要全为 1 (nn.Parameter(torch.ones(d_model)))，和 torch.nn.RMSNorm 一样：开始时 RMSNorm 只做归一化，不缩放。",
})


# ---- instruments (they run beside the answer and return only what they saw)


@answers.observer
def watch_parameters(fn, *args) -> dict:
    """fn(*args) while every Parameter registration (on any module, the meta device included) is counted:
    {"returned": what fn returned, "registered": how many Parameters were registered}."""
    built = []
    handle = register_module_parameter_registration_hook(lambda module, name, param: built.append(name))
    try:
        result = fn(*args)
    finally:
        handle.remove()
    return {"returned": result, "registered": len(built)}


class _Calls(TorchFunctionMode):
    """Records the names of the torch functions called while it is active."""

    def __init__(self):
        super().__init__()
        self.names: set[str] = set()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", None)
        self.names.add(name if isinstance(name, str) else str(func)[:80])
        return func(*args, **(kwargs or {}))


def _error(stage: str, err: BaseException) -> dict:
    return {"stage": stage, **answers.describe_exception(err)}


@answers.observer
def observe_rmsnorm(cls, d: int, eps: float, weight: torch.Tensor, x: torch.Tensor, grad: torch.Tensor,
                    dtype: torch.dtype, device: str) -> dict:
    """cls(d, eps=eps) as the check needs to see it, as data: the module's structure (is it an nn.Module, a
    torch.nn.RMSNorm, its state_dict keys, its weight's kind, shape and initial value, its number of
    parameters); then, loaded with `weight` through load_state_dict and moved to (device, dtype): the output of
    its forward on a copy of `x` that requires grad, the names of the torch functions that forward called, the
    output's requires_grad, and after output.backward(grad) the gradients of x and of the weight. The first
    stage that raised (load_state_dict, to, forward, backward) is reported under "error", and what follows it
    is not run. A NotImplementedError (a stub) and what the constructor raises go to the check as they are."""
    module = cls(d, eps=eps)
    seen: dict = {"is_module": isinstance(module, nn.Module), "is_torch_rmsnorm": isinstance(module, nn.RMSNorm),
                  "error": None}
    if not seen["is_module"]:
        return seen
    w = getattr(module, "weight", None)
    seen.update(state_dict_keys=[str(k) for k in module.state_dict()], weight_is_parameter=isinstance(w, nn.Parameter),
                weight_shape=tuple(w.shape) if isinstance(w, torch.Tensor) else None,
                numel=sum(p.numel() for p in module.parameters()),
                initial_weight=w.detach().clone() if isinstance(w, torch.Tensor) else None)
    stage = "load_state_dict"
    try:
        module.load_state_dict({"weight": weight})
        stage = "to"
        module = module.to(device, dtype)
        x_in = x.to(device, dtype).clone().requires_grad_(True)
        stage = "forward"
        calls = _Calls()
        try:
            with calls:
                y = module(x_in)
        finally:
            seen["called"] = sorted(calls.names)
        seen["output"] = y
        seen["output_requires_grad"] = bool(isinstance(y, torch.Tensor) and y.requires_grad)
        if seen["output_requires_grad"]:
            stage = "backward"
            y.backward(grad.to(device, dtype))
        seen["x_grad"] = x_in.grad
        w = getattr(module, "weight", None)
        seen["weight_grad"] = w.grad if isinstance(w, torch.Tensor) else None
    except NotImplementedError:
        raise
    except Exception as err:  # what the answer raised, at this stage: the check says what it means
        seen["error"] = _error(stage, err)
    return seen


# ---- exercise 1: parameters by formula


def _returned(seen: object, what: str):
    """What the answer returned, from the observation of watch_parameters; building a module to count is
    refused."""
    __tracebackhide__ = True
    checks.expect(type(seen) is dict and type(seen.get("registered")) is int and "returned" in seen,
                  f"{what}: 检查的观测 (observation) 不完整，得到 {type(seen).__name__}。")
    if seen["registered"]:
        checks.fail(f"{what}: 你的函数注册了 {checks.shown(seen['registered'])} 个 Parameter。", "count_by_formula")
    return seen["returned"]


def _by_formula(fn, *args, what: str):
    """fn(*args) beside the answer, refused if it builds a module: registering a Parameter (even on the meta
    device) is seen."""
    __tracebackhide__ = True
    return _returned(answers.observe(watch_parameters, fn, *args), what)


def gpt_params_case(fn, cfg: GPTConfig, name: str, want: int | None = None, source: str | None = None) -> None:
    """fn(cfg) against the numel of GPT(cfg) built here on the meta device (each tied matrix once), and against a
    reference number `want` from `source` where one is given. The usual mistakes are named by the count each
    would give: a part of the model left out or counted twice, in one block (times n_layer) or once."""
    __tracebackhide__ = True
    with torch.device("meta"):  # live: the model built on the meta device, no memory allocated
        measured = sum(p.numel() for p in GPT(cfg).parameters())
    what = f"gpt_params({name})"
    got = _by_formula(fn, cfg, what=what)
    checks.expect_type(got, int, what=what)
    V, T, d, L = cfg.vocab_size, cfg.block_size, cfg.d_model, cfg.n_layer
    hidden = 4 * d if cfg.d_ff is None else cfg.d_ff
    norm_each = 2 * d if (cfg.norm == "layer" and cfg.bias) else d
    mistakes = [checks.mistake("position_embeddings", measured - T * d),
                checks.mistake("final_norm", measured - norm_each),
                checks.mistake("tied_twice" if cfg.tie_embeddings else "untied_head",
                               measured + V * d if cfg.tie_embeddings else measured - V * d),
                checks.mistake("norm_weights", measured - 2 * L * norm_each),
                checks.mistake("attention_proj", measured - L * (d * d + (d if cfg.bias else 0)))]
    if hidden != 4 * d:
        mistakes.append(checks.mistake("d_ff_ignored", measured + L * (2 * d * (4 * d - hidden) + ((4 * d - hidden) if cfg.bias else 0))))
    if cfg.bias:
        mistakes.append(checks.mistake("linear_bias", measured - L * (3 * d + d + hidden + d)))
        if cfg.norm == "rms":
            mistakes.append(checks.mistake("rms_norm_bias", measured + (2 * L + 1) * d))
        else:
            mistakes.append(checks.mistake("layernorm_bias", measured - (2 * L + 1) * d))
    terms = {"V·d (the token embedding / lm_head matrix)": V * d, "T·d (the position embeddings)": T * d,
             "d (one norm's weight or bias)": d, "L·d (one norm in every block)": L * d,
             "L·d·d (one d×d matrix in every block)": L * d * d, "L·d·d_ff (one FFN matrix in every block)": L * d * hidden}
    checks.expect_equal(got, measured, what=what, mistakes=mistakes, terms=terms)
    if want is not None:
        checks.expect_equal(got, want, what=f"{what} ({source})" if source else what)


def gpt_allocator_case(fn, cfg: GPTConfig) -> None:
    """CUDA only: 4 bytes x fn(cfg) against the bytes the CUDA caching allocator is asked for (requested, exact,
    unlike its rounded blocks) while a real fp32 GPT(cfg) is moved to the GPU, here in the check's process."""
    __tracebackhide__ = True
    requested = lambda: torch.cuda.memory_stats().get("requested_bytes.all.current", 0)  # noqa: E731
    model = GPT(cfg)
    torch.cuda.synchronize()
    before = requested()
    model = model.to("cuda")
    torch.cuda.synchronize()
    asked = requested() - before
    del model
    what = f"gpt_params({cfg}) x 4 bytes against the bytes the CUDA allocator was asked for"
    got = _by_formula(fn, cfg, what=what)
    checks.expect_type(got, int, what=what)
    checks.expect_equal(4 * got, asked, what=what)


# ---- exercise 3: RMSNorm


# Tolerance of the comparison with torch.nn.RMSNorm, relative to max(1, max |expected|), by dtype.
TOLERANCE = {torch.float64: 1e-6, torch.float32: 1e-5, torch.float16: 8e-3, torch.bfloat16: 4e-2}


def _is_tensor(value: object) -> bool:
    return type(value) in (torch.Tensor, nn.Parameter)


def _same(got: torch.Tensor, want: torch.Tensor, tol: float) -> bool:
    """NaNs in the same places, the rest within tol of the largest |want| (at least 1)."""
    got, want = got.detach().cpu().double(), want.detach().cpu().double()
    if got.shape != want.shape or not torch.equal(got.isnan(), want.isnan()):
        return False
    ok = ~want.isnan()
    if not ok.any():
        return True
    diff = (got[ok] - want[ok]).abs()
    return bool(torch.isfinite(diff).all()) and diff.max().item() <= tol * max(1.0, want[ok].abs().max().item())


def _expect_tensor(got, want: torch.Tensor, what: str, tol: float, mistakes: list[checks.Mistake] = ()) -> None:
    __tracebackhide__ = True
    checks.expect(_is_tensor(got), f"{what}: 应是 torch.Tensor，得到 {getattr(got, 'type_name', type(got).__name__)}")
    checks.expect(tuple(got.shape) == tuple(want.shape),
                  f"{what}: 形状 (shape) 应是 {tuple(want.shape)}，得到 {tuple(got.shape)}")
    if _same(got, want, tol):
        return
    key = next((m.key for m in mistakes if _same(got, m.value, tol)), None)
    err = (got.detach().cpu().double() - want.detach().cpu().double()).abs().max().item()
    checks.fail(f"{what}: 与 torch.nn.RMSNorm 不一致，最大差 (max abs diff) {err:.3g}，允许 {tol:g} × max(1, max|expected|)。", key)


def _wrong_outputs(x: torch.Tensor, w: torch.Tensor, eps: float) -> list[checks.Mistake]:
    """What the usual mistakes return for input x and weight w, each paired with its hint."""
    x, w = x.detach().double(), w.detach().double()
    ms, mu = x.square().mean(-1, keepdim=True), x.mean(-1, keepdim=True)
    return [checks.mistake("rms_mean_not_square", x / torch.sqrt(mu + eps) * w),
            checks.mistake("rms_mean_not_square", x / torch.sqrt(mu.abs() + eps) * w),
            checks.mistake("rms_layernorm", (x - mu) / torch.sqrt((x - mu).square().mean(-1, keepdim=True) + eps) * w),
            checks.mistake("rms_sum", x / torch.sqrt(x.square().sum(-1, keepdim=True) + eps) * w),
            checks.mistake("rms_no_sqrt", x / (ms + eps) * w),
            checks.mistake("rms_no_eps", x / torch.sqrt(ms) * w),
            checks.mistake("rms_eps_outside", x / (torch.sqrt(ms) + eps) * w),
            checks.mistake("rms_dim", x / torch.sqrt(x.square().mean(0, keepdim=True) + eps) * w),
            checks.mistake("rms_dim", x / torch.sqrt(x.square().mean() + eps) * w),
            checks.mistake("rms_weight", x / torch.sqrt(ms + eps))]


def _raised(seen: dict, what: str) -> None:
    """Fail with what the answer raised at the stage the observation names, if it raised."""
    __tracebackhide__ = True
    error = seen.get("error")
    if error is None:
        return
    err = answers.rebuild_exception(error)
    stage = error.get("stage") if isinstance(error, dict) else None
    stage = stage if stage in ("load_state_dict", "to", "forward", "backward") else "?"
    message = f"{what}: {stage} 出错 (raised) {answers.quoted(err, 300)}"
    broadcast = stage == "forward" and isinstance(err, RuntimeError) and "must match the size" in str(err)
    checks.fail(message, "modules.rms_keepdim" if broadcast else None)


def rmsnorm_case(cls, shape: tuple[int, ...], dtype: torch.dtype, eps: float, scale: float, seed: int,
                 zero_row: bool = False, device: str = "cpu") -> None:
    """cls(d, eps) against torch.nn.RMSNorm(d, eps) holding the same random weight (loaded through the
    state_dict): the module's structure (state_dict key 'weight', d parameters, ones at init), then the output
    and the gradients of input and weight for a seeded input of `shape` x `scale` in `dtype` (with an all-zero
    row if zero_row), within TOLERANCE[dtype]; calling torch's rms_norm / layer_norm is refused. The student's
    module runs beside the answer (observe_rmsnorm); torch.nn.RMSNorm runs here on the same tensors."""
    __tracebackhide__ = True
    d = shape[-1]
    what = f"RMSNorm({d}, eps={eps:.3g}) on {tuple(shape)} {dtype}"
    gen = torch.Generator().manual_seed(seed)
    ref = nn.RMSNorm(d, eps=eps)
    with torch.no_grad():
        ref.weight.copy_(torch.randn(d, generator=gen))
    weight = ref.weight.detach().clone()  # fp32, as the reference's state_dict holds it
    ref = ref.to(device, dtype)
    x = torch.randn(shape, generator=gen) * scale
    if zero_row:
        x.view(-1, d)[0] = 0.0  # an all-zero row: eps keeps it finite
    x = x.to(device, dtype)
    grad = torch.randn(shape, generator=gen).to(device, dtype)

    seen = answers.observe(observe_rmsnorm, cls, d, eps, weight, x, grad, dtype, device)
    checks.expect(type(seen) is dict and seen.get("is_module") is True,
                  "RMSNorm 应是你自己写的 nn.Module 子类 (a subclass of nn.Module)")
    if seen.get("is_torch_rmsnorm") is not False:
        checks.fail("RMSNorm 应是你自己写的 nn.Module 子类，不是 torch.nn.RMSNorm 的子类 (not a subclass of torch.nn.RMSNorm)。",
                    "rms_from_scratch")
    keys = seen.get("state_dict_keys")
    if keys != ["weight"]:
        checks.fail(f"{what}: state_dict 的键应是 ['weight']，得到 {keys}", "rms_state_dict_key")
    checks.expect(seen.get("weight_is_parameter") is True and seen.get("weight_shape") == (d,),
                  f"{what}: weight 应是形状为 ({d},) 的 nn.Parameter")
    checks.expect_equal(seen.get("numel"), d, what=f"{what}: 参数量 (numel)")
    initial = seen.get("initial_weight")
    if not (_is_tensor(initial) and initial.shape == (d,) and torch.equal(initial.detach().cpu().float(), torch.ones(d))):
        checks.fail(f"{what}: weight 的初值应全为 1 (torch.ones)", "modules.rms_init_ones")
    if seen.get("error") is not None and seen["error"].get("stage") in ("load_state_dict", "to", "forward"):
        _raised(seen, what)
    called = seen.get("called")
    checks.expect(type(called) is list and all(type(n) is str for n in called), f"{what}: 检查的观测 (observation) 不完整")
    used = sorted(set(called) & {"rms_norm", "layer_norm", "group_norm"})
    if used:
        checks.fail(f"{what}: 你的 forward 调用了 {used}。", "rms_from_scratch")

    x_ref = x.clone().requires_grad_(True)
    y_ref = ref(x_ref)
    y_ref.backward(grad)
    tol = TOLERANCE[dtype]
    y = seen.get("output")
    _expect_tensor(y, y_ref, f"{what}: 输出 (output)", tol, _wrong_outputs(x, ref.weight, eps))
    if y.dtype != dtype:
        checks.fail(f"{what}: 输出 dtype 应是 {dtype}，得到 {y.dtype}", "rms_output_dtype")
    if seen.get("output_requires_grad") is not True:
        checks.fail(f"{what}: 输出没有梯度 (no grad_fn)", "rms_detached")
    _raised(seen, what)  # backward
    if not (_is_tensor(seen.get("x_grad")) and _is_tensor(seen.get("weight_grad"))):
        checks.fail(f"{what}: 输入或 weight 没有得到梯度 (.grad is None)", "rms_detached")
    _expect_tensor(seen["x_grad"], x_ref.grad, f"{what}: 对输入的梯度 (x.grad)", tol)
    _expect_tensor(seen["weight_grad"], ref.weight.grad, f"{what}: 对 weight 的梯度 (weight.grad)", tol)


# How each exercise is graded (docs/grading.md's table is generated from every module's ORACLE).
ORACLE = {
    "gpt_params": answers.Oracle(
        returns="the int gpt_params(config) returns, and how many Parameters it registered while it ran (the "
                "watch_parameters instrument: a module-registration hook around the call)",
        expected="numel of a real lecture2.models.GPT(config) built here on the meta device (a tied matrix once); "
                 "HuggingFace's counts for GPT-2 small to XL; on CUDA, the bytes the allocator is asked for while a "
                 "real fp32 GPT(config) moves to the GPU, measured here",
        tampering="the count is what is graded, and only the right one passes. The rule 'by formula' is watched in "
                  "the student's process, so an answer that removes the hook there can count a model it builds and "
                  "pass: it gets the number the exercise asks for and nothing else, and the static scan points to "
                  "code that rewrites torch or lecture2"),
    "RMSNorm": answers.Oracle(
        returns="what observe_rmsnorm sees of the student's class: its structure (nn.Module or not, a "
                "torch.nn.RMSNorm subclass or not, state_dict keys, weight kind, shape and initial value, numel), "
                "after loading the check's weight: the output tensor (dtype included), whether it requires grad, "
                "the names of the torch functions forward called, x.grad and weight.grad after backward, and the "
                "first exception, as data",
        expected="torch.nn.RMSNorm run here with the same weight on the same input and output gradient (output, "
                 "x.grad, weight.grad) within a tolerance per dtype; the usual mistakes' outputs computed here",
        tampering="outputs and gradients are compared with the reference computed here, so they must be right. "
                  "Two facts are observed in the student's process and could be faked there: the names of the torch "
                  "functions called (the 'from scratch' rule: a student who disables the TorchFunctionMode could "
                  "call torch's rms_norm unseen) and the structure facts. Faking them gains only the right outputs "
                  "by torch's own kernel; nothing closes that inside the sandbox, and the static scan points to "
                  "answers that reach torch.overrides or rewrite lecture2's instruments"),
}
