"""Notebook 09's check cases: training_days; training_cost and cost_per_1k_tokens; gpus_needed and
tokens_affordable.

Expected values are passed in by the test cell: reference numbers with their sources (the lecture, CS336,
Megatron-LM, Llama 2), or, for drawn cases, the formula written in the cell's hidden region; parameter counts
of real model sizes are measured here on the meta device. The usual wrong answers are named relative to the
expected value, each by its hint's key. Every answer is reached through lecture2.answers: an instrument beside
it (`checks.by_formula`) calls it with plain numbers while the course's calculator (lecture2.estimate)
is switched off there, and returns what it returned and whether it called the calculator: these exercises ask
for the formula, not for the calculator that already has it.
"""
from __future__ import annotations

import math

import torch

from lecture2 import answers, checks, models



def _call(fn, what: str, *args):
    """fn(*args) beside the answer with the course's calculator switched off (checks.by_formula); a call into it
    fails the case with its hint."""
    __tracebackhide__ = True
    return checks.by_formula(fn, *args, what=what)


def _args(*args) -> str:
    return ", ".join(f"{a:.4g}" if isinstance(a, float) else f"{a}" for a in args)


def _what(name: str, args: tuple, label: str) -> str:
    return f"{name}({_args(*args)})" + (f" [{label}]" if label else "")


def meta_param_count(config: models.GPTConfig) -> int:
    """Parameters of models.GPT(config), built on the meta device (no memory)."""
    with torch.device("meta"):
        model = models.GPT(config)
    return sum(p.numel() for p in model.parameters())


def about_case(fn, args: tuple, want: float, within: float, label: str) -> None:
    """fn(*args) within ±`within` of a published figure `want` (a number, int or float)."""
    __tracebackhide__ = True
    what = _what(fn.__name__, args, label)
    checks.expect_close(_call(fn, what, *args), want, rtol=0.0, atol=within, what=f"{what}, 约 (about) ±{within:g}")


# --- training_days --------------------------------------------------------------------------------------------

def days_case(fn, n: float, d: float, gpus: int, peak: float, mfu: float, want: float, label: str = "") -> None:
    """fn(n, d, gpus, peak, mfu) against `want` days (rtol 1e-9)."""
    __tracebackhide__ = True
    what = _what("training_days", (n, d, gpus, peak, mfu), label)
    checks.expect_close(_call(fn, what, n, d, gpus, peak, mfu), want, rtol=1e-9, what=what, mistakes=[
        checks.mistake("sparse_peak", want / 2),
        checks.mistake("two_n", want / 3),
        checks.mistake("hours_for_days", want * 24),
        checks.mistake("seconds_for_days", want * 86400),
        checks.mistake("gpu_count", want * gpus),
        checks.mistake("mfu_forgotten", want * mfu),
        checks.mistake("mfu_inverted", want * mfu * mfu),
    ])


# --- training_cost, cost_per_1k_tokens ------------------------------------------------------------------------

def cost_case(fn, days: float, gpus: int, price: float, want: float, label: str = "") -> None:
    """fn(days, gpus, price) against `want` US dollars (rtol 1e-9)."""
    __tracebackhide__ = True
    what = _what("training_cost", (days, gpus, price), label)
    checks.expect_close(_call(fn, what, days, gpus, price), want, rtol=1e-9, what=what, mistakes=[
        checks.mistake("hours_for_days", want / 24),
        checks.mistake("seconds_for_hours", want * 3600),
        checks.mistake("gpu_count", want / gpus),
    ])


def per_1k_case(fn, cost: float, tokens: float, want: float, label: str = "") -> None:
    """fn(cost, tokens) against `want` US dollars per 1,000 tokens (rtol 1e-9)."""
    __tracebackhide__ = True
    what = _what("cost_per_1k_tokens", (cost, tokens), label)
    checks.expect_close(_call(fn, what, cost, tokens), want, rtol=1e-9, what=what, mistakes=[
        checks.mistake("per_token", want / 1000),
        checks.mistake("per_million", want * 1000),
    ])


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
    checks.expect_equal(got, want, what=what, mistakes=mistakes)


def tokens_case(fn, budget: float, n: float, peak: float, mfu: float, price: float, want: float, label: str = "") -> None:
    """fn(budget, n, peak, mfu, price) against `want` tokens (rtol 1e-9)."""
    __tracebackhide__ = True
    what = _what("tokens_affordable", (budget, n, peak, mfu, price), label)
    checks.expect_close(_call(fn, what, budget, n, peak, mfu, price), want, rtol=1e-9, what=what, mistakes=[
        checks.mistake("sparse_peak", want * 2), checks.mistake("two_n", want * 3),
        checks.mistake("seconds_for_hours", want / 3600), checks.mistake("seconds_for_hours", want * 3600),
        checks.mistake("hours_for_days", want * 24), checks.mistake("mfu_forgotten", want / mfu),
    ])


# How each exercise is graded (docs/grading.md's table is generated from every module's ORACLE).
_CALCULATOR_TAMPERING = ("the returned number, which is the answer asked for; the switch that turns the calculator "
                         "off runs in the student's process, so an answer that restores lecture2.estimate there can "
                         "use the calculator and still be scored on its numbers alone")
ORACLE = {
    "training_days": answers.Oracle(
        returns="the float training_days returns for plain numbers, and whether it called lecture2.estimate",
        expected="reference numbers with sources (the lecture's 9.6 days, CS336's 144 days, Megatron-LM's GPT-3), "
                 "6ND / (GPUs × peak × MFU) on drawn runs, GPT-2 small's parameter count built on the meta device",
        tampering=_CALCULATOR_TAMPERING),
    "training_cost": answers.Oracle(
        returns="the floats training_cost and cost_per_1k_tokens return for plain numbers, and whether they called "
                "lecture2.estimate",
        expected="reference numbers with sources (the lecture's $147k and $0.0000735 per 1K tokens, CS336's 70B), "
                 "days × 24 × GPUs × price and cost / tokens × 1000 on drawn runs",
        tampering=_CALCULATOR_TAMPERING),
    "gpus_needed, tokens_affordable": answers.Oracle(
        returns="the int gpus_needed and the float tokens_affordable return for plain numbers, and whether they "
                "called lecture2.estimate",
        expected="reference numbers with sources (the lecture's run, CS336, Megatron-LM, Llama 2's GPU-hours), "
                 "ceil(6ND / (peak × MFU × days × 86400)) and budget / price × 3600 × peak × MFU / 6N on drawn runs",
        tampering=_CALCULATOR_TAMPERING),
}
