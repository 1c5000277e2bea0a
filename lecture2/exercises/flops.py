"""Notebook 05's check cases: flops_per_token; matmul_intensity and ridge_tokens.

Every answer is reached through lecture2.answers (plain data both ways: numbers, a GPTConfig as the transportable
record it is); every answer here is a formula, so its return value is all a check needs. Every expected value is
measured here, in the check's own process: PyTorch's FLOP counter (lecture2.measure) on a real training step of a
GPT, or on a matmul of real or meta tensors whose nbytes give the bytes it must move; reference numbers a test cell
passes in come with their sources there. The intensity answers run with lecture2.measure switched off beside them:
they ask for a derivation, not for a count.
"""
from __future__ import annotations

import math

import torch

from lecture2 import answers, checks, measure, models

checks.register_hints({
    "flops.per_token_idea": "思路 (idea)：6 = 2 (前向，一个乘加 2 FLOPs) × 3 (前向 + 反向)，对每个做矩阵乘法的权重成立：先数清楚"
                            "哪些参数做矩阵乘法。attention 的两个矩阵乘法没有权重，另算：从每层前向的计数出发，反向再加 2 倍，"
                            "最后除以 token 数 B·T。",
    "flops.intensity_idea": "思路 (idea)：强度 = FLOPs ÷ 搬动的字节数。FLOPs：这个矩阵乘法有多少个乘加，每个 2 FLOPs；字节：按约定，"
                            "A、B 各读一次、C 写一次，每个矩阵的元素数 × 每个元素的字节数。",
    "flops.intensity_output": "忘了输出：C (m×n) 也要写回显存，它的字节数算在搬动的字节里。",
    "flops.intensity_per_element": "没有乘每个元素的字节数 (bytes_per_element)：强度的单位是 FLOP/byte，不是 FLOP/元素。",
    "flops.intensity_weights_only": "只数了一个矩阵的字节：A、B 两个输入都要读、C 要写；T 和 d 相比不小时，输入和输出的字节不可忽略。",
    "flops.ridge_idea": "思路 (idea)：写出 (T×d)×(d×d) 的强度，它随 T 增大；解 '强度 ≥ ridge' 得到 T 的下界，再取满足它的最小整数。"
                        "T 很大时强度趋近一个上限 (权重不变，输入和输出随 T 增长)：拐点不低于上限就到不了。",
    "flops.ridge_weights_only": "只数了权重 d×d 的字节 (或者用了 '强度 ≈ T' 的近似)：输入 T×d 和输出 T×d 也要搬，T 到几百时已不能忽略。",
    "flops.ridge_round": "要的是强度**达到**拐点的最小整数 T：解出的下界向上取整 (math.ceil)；round 或 floor 得到的 T 还没到拐点。",
    "flops.ridge_never": "强度有上限：T 很大时它趋近 d / bytes_per_element (权重只读一次，输入和输出随 T 增长)。拐点不低于这个上限时，T 多大都到不了：返回 None。",
    "flops.measured_not_derived": "这是推导练习：检查调用你的函数时 lecture2.measure 被关掉了。用 FLOPs 和字节的公式算，不要建张量去数。",
})

# ---- flops_per_token


def per_token_counts(config: models.GPTConfig, B: int, T: int, device: str = "cpu") -> tuple[int, int]:
    """Training FLOPs per token of models.GPT(config) at batch B and sequence length T, counted by PyTorch's
    FLOP counter on a real loss.backward() and divided by B·T: (all of them, all but attention's two matmuls,
    the only bmm)."""
    torch.manual_seed(0)
    model = models.GPT(config).to(device)
    idx, targets = torch.randint(0, config.vocab_size, (2, B, T), device=device)
    ops = measure.flop_breakdown(lambda: model.loss(idx, targets).backward())
    total, attn = sum(ops.values()), ops.get("bmm", 0)
    assert total % (B * T) == 0 and attn % (B * T) == 0
    return total // (B * T), (total - attn) // (B * T)


def flops_per_token_case(fn, config: models.GPTConfig, T: int, attention: bool | None = None, B: int = 2,
                         device: str = "cpu", want: tuple[int, int] | None = None) -> None:
    """fn(config, T, attention) against the FLOPs per token with (attention=True) or without (False) attention's
    matmuls, both (True, then False) when `attention` is None: `want` = (with, without) reference numbers, by
    default counted live (`per_token_counts` at batch B)."""
    __tracebackhide__ = True
    with_attention, without = want if want is not None else per_token_counts(config, B, T, device)
    L, d, V = config.n_layer, config.d_model, config.vocab_size
    d_ff = config.d_ff if config.d_ff is not None else 4 * d
    attention_term = with_attention - without  # attention's bmm FLOPs per token
    for flag in (True, False) if attention is None else (attention,):
        target = with_attention if flag else without
        what = (f"flops_per_token(GPTConfig(n_layer={L}, d_model={d}, vocab_size={V}, d_ff={config.d_ff}, "
                f"block_size={config.block_size}), T={T}, attention={flag})")
        got = checks.by_formula(fn, config, T, attention=flag, what=what)  # lecture2.estimate has the formula
        checks.expect_type(got, int, what=what)
        _expect_per_token(got, target, what, config, T, flag, without, attention_term, d_ff)


def _expect_per_token(got, target: int, what: str, config: models.GPTConfig, T: int, attention: bool, without: int,
                      attention_term: int, d_ff: int) -> None:
    __tracebackhide__ = True
    L, d, V = config.n_layer, config.d_model, config.vocab_size
    checks.expect_equal(got, target, what=what, mistakes=[
        checks.mistake("forward_only", target // 3),
        checks.mistake("six_n_embeddings", target + 6 * config.block_size * d),                 # pos_emb
        checks.mistake("six_n_embeddings", target + 6 * (config.block_size + V) * d),           # pos_emb and tok_emb
        checks.mistake("six_n_embeddings", target + 6 * (config.block_size + 2 * L + 1) * d),   # every parameter, tied
        checks.mistake("six_n_embeddings", target + 6 * (config.block_size + V + 2 * L + 1) * d),
        checks.mistake("six_n_lm_head", target - 6 * V * d),
        checks.mistake("attention_term", without + (0 if attention else attention_term)),
        checks.mistake("attention_term", without + attention_term * T),
        # block_size for T only matters where the attention term is counted (with attention=False its value could
        # equal another mistake's, e.g. d_ff taken as 4d)
        *([checks.mistake("attention_block_size", without + attention_term * config.block_size // T)] if attention else []),
        checks.mistake("d_ff_per_token", target + 6 * L * 2 * d * (4 * d - d_ff)),
    ], idea="flops.per_token_idea")


# ---- matmul_intensity, ridge_tokens


def _by_formula(fn, what: str, *args):
    """fn(*args) beside the answer with lecture2.measure (and the calculator) switched off: its value."""
    __tracebackhide__ = True
    seen = answers.observe(answers.without_instruments, fn, ("lecture2.measure", *answers.CALCULATOR), *args)
    if type(seen) is not dict or "used" not in seen:
        raise checks.CheckFailed(f"{what}: 没有得到结果 (no observation came back)", what=what)
    if seen["used"] is True:
        checks.fail(f"{what}: 你的函数调用了课程的仪器 (lecture2.measure)。", "flops.measured_not_derived", what=what)
    return seen.get("returned")


_DTYPES = {4: torch.float32, 2: torch.bfloat16, 8: torch.float64}


def matmul_traffic(m: int, k: int, n: int, dtype: torch.dtype, device: str = "meta") -> dict[str, int]:
    """What (m x k) @ (k x n) in `dtype` does and moves, measured on tensors of `device` ("meta": shapes only, any
    size): {"flops": PyTorch's FLOP counter on the matmul, "a", "b", "out": each tensor's nbytes, "elements": their
    numel together}."""
    a = torch.empty(m, k, device=device, dtype=dtype)
    b = torch.empty(k, n, device=device, dtype=dtype)
    out = []
    flops = measure.count_flops(lambda: out.append(a @ b))
    return {"flops": flops, "a": a.nbytes, "b": b.nbytes, "out": out[0].nbytes,
            "elements": a.numel() + b.numel() + out[0].numel()}


def _intensities(m: int, k: int, n: int, dtype: torch.dtype, device: str = "meta") -> dict[str, float]:
    """The measured intensity (FLOPs over the bytes of A, B and C, the convention: inputs read once, the output written
    once) and, by hint key, what each usual mistake makes of the same measurements."""
    t = matmul_traffic(m, k, n, dtype, device)
    moved = t["a"] + t["b"] + t["out"]
    return {"": t["flops"] / moved,
            "multiply_add": t["flops"] / 2 / moved,
            "bits_for_bytes": t["flops"] / (8 * moved),
            "flops.intensity_output": t["flops"] / (t["a"] + t["b"]),
            "flops.intensity_per_element": t["flops"] / t["elements"],
            "flops.intensity_weights_only": t["flops"] / t["b"],
            "flops.intensity_weights_only ": t["flops"] / t["a"]}  # the other operand taken for "the weights"


def intensity_case(fn, m: int, k: int, n: int, dtype: torch.dtype, device: str = "meta") -> None:
    """fn(m, k, n, bytes_per_element) against the intensity measured on tensors of these shapes and `dtype`, rtol
    1e-9; the usual mistakes named from the same measurements."""
    __tracebackhide__ = True
    seen = _intensities(m, k, n, dtype, device)
    what = f"matmul_intensity({m}, {k}, {n}, bytes_per_element={dtype.itemsize})"
    got = _by_formula(fn, what, m, k, n, dtype.itemsize)
    checks.expect_close(got, seen[""], rtol=1e-9, what=what, idea="flops.intensity_idea",
                        mistakes=[checks.mistake(key.strip(), value) for key, value in seen.items() if key])


def _smallest_tokens(intensity, ridge: float, limit: int = 10**12) -> int | None:
    """The smallest integer T >= 1 with intensity(T) >= ridge (intensity rising with T), or None if not even at
    `limit` tokens."""
    if intensity(limit) < ridge:
        return None
    lo, hi = 1, limit
    while lo < hi:
        mid = (lo + hi) // 2
        if intensity(mid) >= ridge:
            hi = mid
        else:
            lo = mid + 1
    return lo


def ridge_case(fn, d: int, ridge: float, dtype: torch.dtype, label: str = "") -> None:
    """fn(d, ridge, bytes_per_element) against the smallest T at which (T x d) @ (d x d) in `dtype`, measured on meta
    tensors, reaches `ridge` FLOP/byte (a search over T); None when no T does. The usual mistakes: the same search on
    what each intensity mistake makes of the measurements, and the T just below."""
    __tracebackhide__ = True
    b = dtype.itemsize
    want = _smallest_tokens(lambda T: _intensities(T, d, d, dtype)[""], ridge)
    what = f"ridge_tokens({d}, {ridge:.6g}, bytes_per_element={b})" + (f" [{label}]" if label else "")
    got = _by_formula(fn, what, d, ridge, b)
    if want is None:
        if got is not None:
            checks.fail(f"{what}: 期望 (expected) None (T 多大都到不了这个拐点)，得到 (got) {checks.shown(got)}。",
                        "flops.ridge_never", what=what)
        return
    if got is None:
        checks.fail(f"{what}: 期望 (expected) {want}，得到 (got) None：这个拐点是到得了的。", "flops.ridge_idea", what=what)
    checks.expect_type(got, int, what=what)
    mistakes = [checks.mistake("flops.ridge_round", want - 1)] if want > 1 else []  # the bound rounded down
    wrong = {"flops.ridge_weights_only": ("flops.intensity_weights_only",), "multiply_add": ("multiply_add",),
             "bits_for_bytes": ("bits_for_bytes",), "flops.intensity_output": ("flops.intensity_output",)}
    for key, kinds in wrong.items():
        for kind in kinds:
            value = _smallest_tokens(lambda T: _intensities(T, d, d, dtype)[kind], ridge)
            if value is not None and value != want:
                mistakes.append(checks.mistake(key, value))
    approx = math.ceil(ridge)  # "the intensity is about T": the weights-only bound of bf16
    if approx != want:
        mistakes.append(checks.mistake("flops.ridge_weights_only", approx))
    checks.expect_equal(got, want, what=what, mistakes=mistakes, idea="flops.ridge_idea")


# How each exercise is graded (docs/grading.md's table is generated from every module's ORACLE).
ORACLE = {
    "flops_per_token": answers.Oracle(
        returns="the int it returns for each (GPTConfig, T, attention); the config crosses as a GPTConfig record",
        expected="PyTorch's FLOP counter in the judge on a real loss.backward() of models.GPT(config) at batch B, "
                 "divided by B·T (attention's bmm left out for attention=False); GPT-2 small's and GPT-3's counts "
                 "passed in by the test cell with their sources",
        tampering="nothing but the returned number"),
    "matmul_intensity, ridge_tokens": answers.Oracle(
        returns="the float matmul_intensity and the int (or None) ridge_tokens return for plain numbers, and whether "
                "they called lecture2.measure",
        expected="PyTorch's FLOP counter in the judge on a matmul of meta tensors of those shapes and dtype, over the "
                 "tensors' nbytes; for ridge_tokens the smallest T whose measured intensity reaches the ridge "
                 "(a search over T in the judge); ridges from lecture2.hardware's datasheet rows or drawn",
        tampering="the returned number is the answer asked for; the switch that turns lecture2.measure off runs in the "
                  "student's process, so an answer that restores it there can count instead of derive and still be "
                  "scored on its numbers alone"),
}
