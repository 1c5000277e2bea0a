"""Notebook 05's check cases: matmul_flops, block_flops, flops_per_token.

Every answer is reached through lecture2.answers.call (plain data both ways: shapes as tuples, a GPTConfig as
the transportable record it is); every answer here is a formula, so its return value is all a check needs.
Every expected value is counted here, in the check's own process, by PyTorch's FLOP counter (lecture2.measure)
on real tensors (or meta tensors, for shapes no machine can allocate), on the sub-modules of a real
TransformerBlock, or on a real training step of a GPT; reference numbers a test cell passes in come with their
sources there.
"""
from __future__ import annotations

import math

import torch

from lecture2 import answers, checks, measure, models

# ---- matmul_flops


def _matmul_flops_of(fn, a_shape: tuple[int, ...], b_shape: tuple[int, ...]):
    __tracebackhide__ = True
    try:
        return answers.call(fn, a_shape, b_shape)
    except NotImplementedError:  # the unfilled stub (a RuntimeError too): reported as such
        raise
    except (RuntimeError, MemoryError) as err:  # the answer built tensors of these shapes
        checks.fail(f"matmul_flops({a_shape}, {b_shape}) 出错 (raised) {answers.quoted(err, 120)}", "matmul_allocated")


def matmul_case(fn, a_shape: tuple[int, ...], b_shape: tuple[int, ...], device: str = "cpu",
                want: int | None = None) -> None:
    """fn(a_shape, b_shape) against `want` FLOPs, by default PyTorch's FLOP counter on a @ b for tensors of
    these shapes on `device` ("meta": shapes only, for sizes no machine can allocate)."""
    __tracebackhide__ = True
    if want is None:
        a, b = torch.empty(a_shape, device=device), torch.empty(b_shape, device=device)
        want = measure.count_flops(lambda: a @ b)  # live: PyTorch's FLOP counter
    *a_batch, m, k = a_shape
    *b_batch, _, n = b_shape
    what = f"matmul_flops({a_shape}, {b_shape})"
    got = _matmul_flops_of(fn, a_shape, b_shape)
    checks.expect_type(got, int, what=what)
    out_batch = want // (2 * m * k * n)
    checks.expect_equal(got, want, what=what, mistakes=[
        checks.mistake("multiply_add", want // 2),
        checks.mistake("matmul_fma", out_batch * m * n * (2 * k - 1)),
        checks.mistake("matmul_batch", 2 * m * k * n),
        checks.mistake("matmul_broadcast", 2 * math.prod(a_batch) * m * k * n),
        checks.mistake("matmul_broadcast", 2 * math.prod(b_batch) * m * k * n),
        checks.mistake("matmul_broadcast", 2 * math.prod(a_batch) * math.prod(b_batch) * m * k * n),
    ])


def matmul_rejects(fn, a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> None:
    """fn(a_shape, b_shape) must raise ValueError when the inner dimensions differ (and no other exception)."""
    __tracebackhide__ = True
    raised = None
    try:
        answers.call(fn, a_shape, b_shape)
    except ValueError:
        raised = "ValueError"
    except (NotImplementedError, answers.AnswerUnavailable):  # the stub; a process that timed out or died
        raise
    except Exception as err:  # another exception, e.g. torch's own RuntimeError from a real matmul
        raised = type(err).__name__
    if raised != "ValueError":
        checks.fail(f"matmul_flops({a_shape}, {b_shape}) {'raise 了 ' + raised if raised else '没有 raise'}，"
                    f"应该 raise ValueError (内维 {a_shape[-1]} ≠ {b_shape[-2]})。", "matmul_inner")


# ---- block_flops

BLOCK_KEYS = ("qkv", "scores", "attn_v", "proj", "ffn")


def block_counts(B: int, T: int, d: int, H: int, device: str = "cpu") -> tuple[dict[str, int], int]:
    """FLOPs of each matmul of a real models.TransformerBlock(d, H) on a (B, T, d) input, counted on its
    sub-modules and on attention's two matmuls with the shapes MultiHeadAttention.forward gives them, and the
    whole block's forward counted at once."""
    block = models.TransformerBlock(d, H).to(device)
    x = torch.randn(B, T, d, device=device)
    q, k, v = (torch.randn(B, H, T, d // H, device=device) for _ in range(3))  # (B, H, T, d/H)
    w = torch.randn(B, H, T, T, device=device)                                  # softmax(scores): (B, H, T, T)
    with torch.no_grad():
        parts = {"qkv": measure.count_flops(lambda: block.attention.qkv(x)),
                 "scores": measure.count_flops(lambda: q @ k.transpose(-2, -1)),
                 "attn_v": measure.count_flops(lambda: w @ v),
                 "proj": measure.count_flops(lambda: block.attention.proj(x)),
                 "ffn": measure.count_flops(lambda: block.ffn(x))}
        whole = measure.count_flops(lambda: block(x))
    assert sum(parts.values()) == whole, "instrument: the five parts must add up to the whole block"
    return parts, whole


def block_case(fn, B: int, T: int, d: int, H: int, keys: tuple[str, ...] = BLOCK_KEYS, whole: bool = False,
               device: str = "cpu") -> None:
    """fn(B, T, d): a dict with exactly the keys BLOCK_KEYS; each of `keys` (ints) against the FLOP counter on
    that matmul of a real TransformerBlock(d, H) (`block_counts`); with `whole`, the sum of all five against the
    whole block counted at once."""
    __tracebackhide__ = True
    parts, total = block_counts(B, T, d, H, device)
    what = f"block_flops({B}, {T}, {d})"
    got = answers.call(fn, B, T, d)
    checks.expect_type(got, dict, what=what)
    checks.expect(set(got) == set(BLOCK_KEYS), f"{what} 的键 (keys) 应是 {sorted(BLOCK_KEYS)}，得到 {sorted(map(str, got))}")
    literal = checks.mistake("attn_bt_literal", 2 * (B * T) ** 2 * d)
    swapped = checks.mistake("scores_t_squared", 2 * B * T * d * d)
    usual = {"qkv": [checks.mistake("qkv_one_projection", 2 * B * T * d * d)],
             "scores": [literal, swapped], "attn_v": [literal, swapped], "proj": [],
             "ffn": [checks.mistake("ffn_one_matrix", 8 * B * T * d * d)]}
    # every key half the count: the 2 of multiply-add forgotten (ffn's 8BTd² alone would also be one FFN matrix)
    halved = all(type(got[k]) is int and 2 * got[k] == parts[k] for k in BLOCK_KEYS)
    for key in keys:
        want = parts[key]
        checks.expect_type(got[key], int, what=f"{what}[{key!r}]")
        multiply_add = [checks.mistake("multiply_add", want // 2)]
        checks.expect_equal(got[key], want, what=f"{what}[{key!r}] (H = {H})",
                            mistakes=multiply_add + usual[key] if halved else usual[key] + multiply_add)
    if whole:
        checks.expect_equal(sum(got.values()), total, what=f"sum of {what}, against the whole block counted at once")


def block_total_case(fn, B: int, T: int, d: int, want: int, source: str) -> None:
    """sum(fn(B, T, d).values()) against a reference total `want` (from `source`)."""
    __tracebackhide__ = True
    what = f"block_flops({B}, {T}, {d})"
    got = answers.call(fn, B, T, d)
    checks.expect_type(got, dict, what=what)
    checks.expect(set(got) == set(BLOCK_KEYS), f"{what} 的键 (keys) 应是 {sorted(BLOCK_KEYS)}，得到 {sorted(map(str, got))}")
    for key in BLOCK_KEYS:
        checks.expect_type(got[key], int, what=f"{what}[{key!r}]")
    checks.expect_equal(sum(got.values()), want, what=f"sum of {what}: {source}",
                        mistakes=[checks.mistake("multiply_add", want // 2)])


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
    ])


# How each exercise is graded (docs/grading.md's table is generated from every module's ORACLE).
ORACLE = {
    "matmul_flops": answers.Oracle(
        returns="the int it returns for each pair of shapes; whether it raises ValueError when the inner dimensions "
                "differ (and which exception it raises)",
        expected="PyTorch's FLOP counter on a @ b for real tensors of those shapes (meta tensors for shapes no machine "
                 "can allocate) in the judge; the lecture's QKV row (6BTd²) passed in by the test cell",
        tampering="nothing but the returned number, which is the answer asked for"),
    "block_flops": answers.Oracle(
        returns="the dict {qkv, scores, attn_v, proj, ffn} of ints it returns for each (B, T, d)",
        expected="PyTorch's FLOP counter in the judge on each matmul of a real TransformerBlock(d, H) on a (B, T, d) "
                 "input (the five add up to the whole block counted at once); the lecture's 24BTd² + 4BT²d passed in",
        tampering="nothing but the returned numbers"),
    "flops_per_token": answers.Oracle(
        returns="the int it returns for each (GPTConfig, T, attention); the config crosses as a GPTConfig record",
        expected="PyTorch's FLOP counter in the judge on a real loss.backward() of models.GPT(config) at batch B, "
                 "divided by B·T (attention's bmm left out for attention=False); GPT-2 small's count and GPT-3's "
                 "6N + 12LTd (Brown et al. 2020, PaLM's formula) passed in by the test cell",
        tampering="nothing but the returned number"),
}
