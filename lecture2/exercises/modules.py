"""Notebook 03's check cases: block_params, gpt_params, RMSNorm.

Parameter counts are measured live: `numel` of a real `TransformerBlock` or `GPT` of the same configuration,
built on the CPU or on the meta device (no memory), and on CUDA the bytes the allocator is asked for. RMSNorm
is compared with `torch.nn.RMSNorm`: outputs and gradients for the same input and weight.
"""
from __future__ import annotations

import inspect

import torch
import torch.nn as nn
from torch.nn.modules.module import register_module_parameter_registration_hook
from torch.overrides import TorchFunctionMode

from lecture2 import checks
from lecture2.models import GPT, GPT2_SMALL, GPTConfig, TransformerBlock


def _by_formula(fn, *args):
    """fn(*args), refused if it builds a module: registering a Parameter (even on the meta device) is seen."""
    __tracebackhide__ = True
    built = []
    handle = register_module_parameter_registration_hook(lambda module, name, param: built.append(name))
    try:
        result = fn(*args)
    finally:
        handle.remove()
    checks.expect(not built, f"{getattr(fn, '__name__', 'block_params')}{args}: 你的函数注册了 {len(built)} 个 Parameter。\n"
                             f"提示 (hint): {checks.HINTS['count_by_formula']}")
    return result


def block_params_case(fn, d_model: int, d_ff: int | None = None, bias: bool = False, norm: str = "rms", *,
                      heads: int = 1, on_meta: bool = False) -> None:
    """fn(d_model, d_ff, bias, norm) against the numel of a real TransformerBlock(d_model, heads, d_ff, bias, norm),
    built on the CPU or (on_meta) on the meta device."""
    __tracebackhide__ = True
    d = d_model
    with torch.device("meta" if on_meta else "cpu"):  # live: a real block of this configuration
        measured = sum(p.numel() for p in TransformerBlock(d, heads, d_ff, bias, norm).parameters())
    what = f"block_params({d}, d_ff={d_ff}, bias={bias}, norm={norm!r})"
    got = _by_formula(fn, d, d_ff, bias, norm)
    checks.expect_type(got, int, what=what)
    hidden = 4 * d if d_ff is None else d_ff
    norm_each = 2 * d if (norm == "layer" and bias) else d
    mistakes = [checks.mistake("norm_weights", measured - 2 * norm_each),
                checks.mistake("attention_proj", measured - d * d - (d if bias else 0))]
    if hidden != 4 * d:
        mistakes.append(checks.mistake("d_ff_ignored", measured + 2 * d * (4 * d - hidden) + ((4 * d - hidden) if bias else 0)))
    if bias:
        mistakes.append(checks.mistake("linear_bias", measured - (3 * d + d + hidden + d)))
        if norm == "rms":
            mistakes.append(checks.mistake("rms_norm_bias", measured + 2 * d))
        else:
            mistakes.append(checks.mistake("layernorm_bias", measured - 2 * d))
    terms = {"d (one norm's weight or bias)": d, "d·d (one d×d matrix)": d * d, "d·d_ff (one FFN matrix)": d * hidden,
             "d_ff (the up projection's bias)": hidden}
    checks.expect_equal(got, measured, what=what, mistakes=mistakes, terms=terms)


def block_params_reference(fn, args: tuple, want: int, source: str) -> None:
    """fn(*args), by formula, against a reference number `want` from `source` (e.g. the lecture)."""
    __tracebackhide__ = True
    shown = ", ".join(repr(a) for a in args)
    checks.expect_equal(_by_formula(fn, *args), want, what=f"block_params({shown}) ({source})")


def _gpt_params_alone(fn, cfg: GPTConfig) -> int:
    """fn(cfg), graded on its own: while it runs, the notebook's block_params is a measured stand-in (a block
    built on the meta device), so a mistake in exercise 1 does not cost exercise 2's points as well; building
    a module of its own is refused. The stand-in goes where fn looks the name up: the namespace of the function
    the student wrote (the course's grader hands the check a wrapper of it, made with functools.wraps)."""
    __tracebackhide__ = True
    g, inside, built = getattr(inspect.unwrap(fn), "__globals__", {}), [0], []

    def stand_in(d_model, d_ff=None, bias=False, norm="rms"):
        inside[0] += 1
        try:
            with torch.device("meta"):
                return sum(p.numel() for p in TransformerBlock(d_model, 1, d_ff, bias, norm).parameters())
        finally:
            inside[0] -= 1

    had, saved = "block_params" in g, g.get("block_params")
    g["block_params"] = stand_in
    handle = register_module_parameter_registration_hook(lambda m, n, p: None if inside[0] else built.append(n))
    try:
        result = fn(cfg)
    finally:
        handle.remove()
        if had:
            g["block_params"] = saved
        else:
            del g["block_params"]
    checks.expect(not built, f"gpt_params: 你的函数注册了 {len(built)} 个 Parameter。\n"
                             f"提示 (hint): {checks.HINTS['count_by_formula']}")
    return result


def gpt_params_case(fn, cfg: GPTConfig, name: str, want: int | None = None, source: str | None = None) -> None:
    """fn(cfg) against the numel of GPT(cfg) built on the meta device (each tied matrix once), and against a
    reference number `want` from `source` where one is given."""
    __tracebackhide__ = True
    with torch.device("meta"):  # live: the model built on the meta device, no memory allocated
        measured = sum(p.numel() for p in GPT(cfg).parameters())
    got = _gpt_params_alone(fn, cfg)
    what = f"gpt_params({name})"
    checks.expect_type(got, int, what=what)
    V, T, d = cfg.vocab_size, cfg.block_size, cfg.d_model
    mistakes = [checks.mistake("position_embeddings", measured - T * d),
                checks.mistake("final_norm", measured - d * (2 if (cfg.norm == "layer" and cfg.bias) else 1)),
                checks.mistake("tied_twice" if cfg.tie_embeddings else "untied_head",
                               measured + V * d if cfg.tie_embeddings else measured - V * d)]
    terms = {"V·d (the token embedding / lm_head matrix)": V * d, "T·d (the position embeddings)": T * d,
             "d (one norm's weight or bias)": d, "L·d (one norm in every block)": cfg.n_layer * d}
    checks.expect_equal(got, measured, what=what, mistakes=mistakes, terms=terms)
    if want is not None:
        checks.expect_equal(got, want, what=f"{what} ({source})" if source else what)


def gpt_allocator_case(fn, cfg: GPTConfig) -> None:
    """CUDA only: 4 bytes x fn(cfg) against the bytes the CUDA caching allocator is asked for (requested, exact,
    unlike its rounded blocks) while a real fp32 GPT(cfg) is moved to the GPU."""
    __tracebackhide__ = True
    requested = lambda: torch.cuda.memory_stats().get("requested_bytes.all.current", 0)  # noqa: E731
    model = GPT(cfg)
    torch.cuda.synchronize()
    before = requested()
    model = model.to("cuda")
    torch.cuda.synchronize()
    asked = requested() - before
    del model
    checks.expect_equal(4 * _gpt_params_alone(fn, cfg), asked,
                        what=f"gpt_params({cfg}) x 4 bytes against the bytes the CUDA allocator was asked for")


class _Calls(TorchFunctionMode):
    """Records the names of the torch functions called while it is active."""

    def __init__(self):
        super().__init__()
        self.names: set[str] = set()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.names.add(getattr(func, "__name__", str(func)))
        return func(*args, **(kwargs or {}))


# Tolerance of the comparison with torch.nn.RMSNorm, relative to max(1, max |expected|), by dtype.
TOLERANCE = {torch.float64: 1e-6, torch.float32: 1e-5, torch.float16: 8e-3, torch.bfloat16: 4e-2}


def _same(got: torch.Tensor, want: torch.Tensor, tol: float) -> bool:
    """NaNs in the same places, the rest within tol of the largest |want| (at least 1)."""
    got, want = got.detach().double(), want.detach().double()
    if got.shape != want.shape or not torch.equal(got.isnan(), want.isnan()):
        return False
    ok = ~want.isnan()
    if not ok.any():
        return True
    diff = (got[ok] - want[ok]).abs()
    return bool(torch.isfinite(diff).all()) and diff.max().item() <= tol * max(1.0, want[ok].abs().max().item())


def _expect_tensor(got, want: torch.Tensor, what: str, tol: float, mistakes=()) -> None:
    __tracebackhide__ = True
    checks.expect(isinstance(got, torch.Tensor), f"{what}: 应是 torch.Tensor，得到 {type(got).__name__}")
    checks.expect(tuple(got.shape) == tuple(want.shape),
                  f"{what}: 形状 (shape) 应是 {tuple(want.shape)}，得到 {tuple(got.shape)}")
    if _same(got, want, tol):
        return
    hint = next((m.hint for m in mistakes if _same(got, m.value, tol)), None)
    err = (got.detach().double() - want.detach().double()).abs().max().item()
    checks.expect(False, f"{what}: 与 torch.nn.RMSNorm 不一致，最大差 (max abs diff) {err:.3g}，允许 {tol:g} × max(1, max|expected|)。"
                  + (f"\n提示 (hint): {hint}" if hint else ""))


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


def rmsnorm_case(cls, shape: tuple[int, ...], dtype: torch.dtype, eps: float, scale: float, seed: int,
                 zero_row: bool = False, device: str = "cpu") -> None:
    """cls(d, eps) against torch.nn.RMSNorm(d, eps) holding the same random weight (loaded through the
    state_dict): the module's structure (state_dict key 'weight', d parameters, ones at init), then the output
    and the gradients of input and weight for a seeded input of `shape` x `scale` in `dtype` (with an all-zero
    row if zero_row), within TOLERANCE[dtype]; calling torch's rms_norm / layer_norm is refused."""
    __tracebackhide__ = True
    d = shape[-1]
    what = f"RMSNorm({d}, eps={eps:.3g}) on {tuple(shape)} {dtype}"
    mine = cls(d, eps=eps)
    checks.expect(isinstance(mine, nn.Module) and not isinstance(mine, nn.RMSNorm),
                  "RMSNorm 应是你自己写的 nn.Module 子类 (subclass of nn.Module, not of torch.nn.RMSNorm)")
    keys = list(mine.state_dict())
    checks.expect(keys == ["weight"], f"{what}: state_dict 的键应是 ['weight']，得到 {keys}\n"
                                      f"提示 (hint): {checks.HINTS['rms_state_dict_key']}")
    checks.expect(isinstance(mine.weight, nn.Parameter) and tuple(mine.weight.shape) == (d,),
                  f"{what}: weight 应是形状为 ({d},) 的 nn.Parameter")
    checks.expect_equal(sum(p.numel() for p in mine.parameters()), d, what=f"{what}: 参数量 (numel)")
    checks.expect(torch.equal(mine.weight.detach(), torch.ones(d)), f"{what}: weight 的初值应全为 1 (torch.ones)")
    gen = torch.Generator().manual_seed(seed)
    ref = nn.RMSNorm(d, eps=eps)
    with torch.no_grad():
        ref.weight.copy_(torch.randn(d, generator=gen))
    mine.load_state_dict(ref.state_dict())  # live: the reference's random weight, through the state_dict
    ref, mine = ref.to(device, dtype), mine.to(device, dtype)
    x = torch.randn(shape, generator=gen) * scale
    if zero_row:
        x.view(-1, d)[0] = 0.0  # an all-zero row: eps keeps it finite
    x = x.to(device, dtype)
    x_mine, x_ref = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    with _Calls() as calls:
        try:
            y_mine = mine(x_mine)
        except RuntimeError as e:
            checks.expect(False, f"{what}: forward 出错 (raised) {e}\n提示 (hint): 求均值时用 keepdim=True，结果才能和 x 广播 (broadcast)。")
    used = sorted(calls.names & {"rms_norm", "layer_norm", "group_norm"})
    checks.expect(not used, f"{what}: 你的 forward 调用了 {used}。\n提示 (hint): {checks.HINTS['rms_from_scratch']}")
    y_ref = ref(x_ref)
    tol = TOLERANCE[dtype]
    _expect_tensor(y_mine, y_ref, f"{what}: 输出 (output)", tol, _wrong_outputs(x, ref.weight, eps))
    checks.expect(y_mine.dtype == dtype, f"{what}: 输出 dtype 应是 {dtype}，得到 {y_mine.dtype}\n"
                                         f"提示 (hint): {checks.HINTS['rms_output_dtype']}")
    grad = torch.randn(shape, generator=gen).to(device, dtype)
    y_ref.backward(grad)
    checks.expect(y_mine.requires_grad, f"{what}: 输出没有梯度 (no grad_fn)\n提示 (hint): {checks.HINTS['rms_detached']}")
    y_mine.backward(grad)
    checks.expect(x_mine.grad is not None and mine.weight.grad is not None,
                  f"{what}: 输入或 weight 没有得到梯度 (.grad is None)\n提示 (hint): {checks.HINTS['rms_detached']}")
    _expect_tensor(x_mine.grad, x_ref.grad, f"{what}: 对输入的梯度 (x.grad)", tol)
    _expect_tensor(mine.weight.grad, ref.weight.grad, f"{what}: 对 weight 的梯度 (weight.grad)", tol)
