"""Notebook 09's check cases: gpus_needed and tokens_affordable, the time formula of the lecture's §6 turned around.

Expected values are passed in by the test cell: reference numbers with their sources (the lecture, CS336,
Megatron-LM, Llama 2), or, for drawn cases, computed in the cell's hidden region. The usual wrong answers are
named relative to the expected value, each by its hint's key; an answer that matches none gets the exercise's
idea. Every answer is reached through lecture2.answers: an instrument beside it (`checks.by_formula`) calls it
with plain numbers while the course's calculator (lecture2.estimate) is switched off there, and returns what it
returned and whether it called the calculator: these exercises ask for a derivation, not for the calculator.
"""
from __future__ import annotations

import math

from lecture2 import answers, checks

checks.register_hints({
    "cost.gpus_idea": "思路 (idea)：要做的总 FLOPs 是固定的 (6ND)。一张 GPU 在期限内能做多少 FLOPs (每秒做 peak × MFU，期限有多少秒)？"
                      "需要的 GPU 数就是这两个数之比，再取成整数。",
    "cost.tokens_idea": "思路 (idea)：钱买的是 GPU-小时 (GPU-hours)：预算 ÷ 每 GPU-小时的价格。一个 GPU-小时能做多少 FLOPs？"
                        "每个 token 要 6N FLOPs。GPU 的个数只决定要等多久，不改变 GPU-小时的总数。",
})


def _call(fn, what: str, *args):
    """fn(*args) beside the answer with the course's calculator switched off (checks.by_formula); a call into it
    fails the case with its hint."""
    __tracebackhide__ = True
    return checks.by_formula(fn, *args, what=what)


def _args(*args) -> str:
    return ", ".join(f"{a:.4g}" if isinstance(a, float) else f"{a}" for a in args)


def _what(name: str, args: tuple, label: str) -> str:
    return f"{name}({_args(*args)})" + (f" [{label}]" if label else "")


def about_case(fn, args: tuple, want: float, within: float, label: str) -> None:
    """fn(*args) within ±`within` of a published figure `want` (a number, int or float)."""
    __tracebackhide__ = True
    what = _what(fn.__name__, args, label)
    checks.expect_close(_call(fn, what, *args), want, rtol=0.0, atol=within, what=f"{what}, 约 (about) ±{within:g}")


# --- gpus_needed, tokens_affordable ---------------------------------------------------------------------------

def gpus_case(fn, n: float, d: float, days: float, peak: float, mfu: float, want: int, exact: float | None = None,
              label: str = "") -> None:
    """fn(n, d, days, peak, mfu): an int equal to `want`; with `exact` (the unrounded GPU count), the usual
    mistakes are named: round or floor for ceil, the sparse peak, 2N, hours or seconds for days, MFU forgotten."""
    __tracebackhide__ = True
    what = _what("gpus_needed", (n, d, days, peak, mfu), label)
    got = _call(fn, what, n, d, days, peak, mfu)
    checks.expect_type(got, int, what=what)
    mistakes = [] if exact is None else [
        checks.mistake("ceil", round(exact)), checks.mistake("ceil", math.floor(exact)),
        checks.mistake("sparse_peak", math.ceil(exact / 2)), checks.mistake("two_n", math.ceil(exact / 3)),
        checks.mistake("hours_for_days", math.ceil(exact * 24)), checks.mistake("hours_for_days", math.ceil(exact / 24)),
        checks.mistake("seconds_for_days", math.ceil(exact * 86400)), checks.mistake("mfu_forgotten", math.ceil(exact * mfu)),
    ]
    checks.expect_equal(got, want, what=what, mistakes=mistakes, idea="cost.gpus_idea")


def tokens_case(fn, budget: float, n: float, peak: float, mfu: float, price: float, want: float, label: str = "") -> None:
    """fn(budget, n, peak, mfu, price) against `want` tokens (rtol 1e-9)."""
    __tracebackhide__ = True
    what = _what("tokens_affordable", (budget, n, peak, mfu, price), label)
    checks.expect_close(_call(fn, what, budget, n, peak, mfu, price), want, rtol=1e-9, what=what, mistakes=[
        checks.mistake("sparse_peak", want * 2), checks.mistake("two_n", want * 3),
        checks.mistake("seconds_for_hours", want / 3600), checks.mistake("seconds_for_hours", want * 3600),
        checks.mistake("hours_for_days", want * 24), checks.mistake("mfu_forgotten", want / mfu),
    ], idea="cost.tokens_idea")


# How each exercise is graded (docs/grading.md's table is generated from every module's ORACLE).
_CALCULATOR_TAMPERING = ("the returned number, which is the answer asked for; the switch that turns the calculator "
                         "off runs in the student's process, so an answer that restores lecture2.estimate there can "
                         "use the calculator and still be scored on its numbers alone")
ORACLE = {
    "gpus_needed, tokens_affordable": answers.Oracle(
        returns="the int gpus_needed and the float tokens_affordable return for plain numbers, and whether they "
                "called lecture2.estimate",
        expected="reference numbers with sources (the lecture's run, CS336, Megatron-LM, Llama 2's GPU-hours), and "
                 "on drawn runs the lecture's time formula solved for the GPU count (rounded up) and for the tokens a "
                 "budget's GPU-hours buy, computed in the judge",
        tampering=_CALCULATOR_TAMPERING),
}
