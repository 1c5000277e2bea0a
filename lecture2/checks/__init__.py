"""Comparisons for the notebooks' test cells, with messages a student can act on.

A test cell holds the reference numbers (with their sources); lecture2.exercises holds the cases and the
usual wrong answers as data; this module only compares and explains. Messages are Chinese with the English
technical terms. Every hint has a key (`HINTS`, extended by each exercise module with `register_hints`): a
failure carries its key to the grader's feedback and to the class's table of mistakes.

An answer's values reach a check through lecture2.answers as plain data (lecture2.wire): exact built-in types
and torch values; anything else arrives as a `wire.Unsupported` marker, which the comparisons refuse with a
message that says what to return instead.

Checks come in named groups (`with checks.exercise(name, points={...}) as ex:` then `with ex.group(label):`);
each group's outcome is recorded and the next group still runs. A group whose answer raised
NotImplementedError is "not implemented"; an exercise all of whose groups are is still a stub: in the lab
that prints a notice and lets `Run All` go on. The outcomes go to the sink the caller chose (`reporting_to`):
under the course's grader that is the judge's, a process that holds the checks and never a student's object;
what a cell prints earns nothing.

One name space, three rooms: this module (the failure, the comparisons, the exercise and its groups), `shown` (how
a message shows a value) and `draws` (hidden cases, drawn from a secret); the usual mistakes' hints are
lecture2.hints (HINTS, register_hints: read here as checks.HINTS), beside their English, lecture2.hints_en.
"""
from __future__ import annotations

import math
import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass

from .. import editions, messages
from ..answers import AnswerTimeout, AnswerUnavailable  # noqa: F401  (checks.AnswerUnavailable: for test cells)
from .draws import DRAW_SECRET_ENV, drawing_from, drawn  # noqa: F401  (checks.drawn: for test cells)
from ..hints import HINTS, hint_key, key_of_hint, register_hints
from .shown import _SCALARS, SHOWN_CHARACTERS, SHOWN_ITEMS, _exact_types, _foreign, shown  # noqa: F401

_fmt = shown  # the name the comparisons below use

__all__ = ["CheckFailed", "Exercise", "HINTS", "Mistake", "by_formula", "drawing_from", "drawn", "exercise", "expect",
           "expect_close", "expect_equal", "expect_type", "fail", "grading", "hint_key", "mistake", "register_hints",
           "reporting_to", "shown"]


class CheckFailed(AssertionError):
    """A check that did not pass; its message says what was expected, what came back, and a hint.

    `what`, `want`, `got` (what came back, as the check formats it), `ratio` (got / expected), `difference`
    (got − expected), `hint` and `hint_key` are kept apart from the message for the grader's feedback, which shows
    them for a failed visible check (for a hidden one, the hint only).
    """

    def __init__(self, message: str, *, what: str | None = None, want: object = None, hint: str | None = None,
                 hint_key: str | None = None, got: str | None = None, ratio: float | None = None,
                 difference: float | None = None):
        super().__init__(message)
        if hint_key is not None and hint is None:
            hint = HINTS[hint_key]
        self.what, self.want, self.hint = what, want, hint
        self.got, self.ratio, self.difference = got, ratio, difference
        self.hint_key = hint_key if hint_key is not None else (key_of_hint(hint) if hint else None)


@dataclass(frozen=True)
class Mistake:
    """The value a known mistake produces, and the hint (text and key) to show when an answer equals it."""

    value: object
    hint: str
    key: str | None = None


def mistake(kind: str, value: object) -> Mistake:
    """A `Mistake` whose hint is `HINTS[kind]`."""
    return Mistake(value, HINTS[kind], kind)


def fail(message: str, hint_key: str | None = None, *, what: str | None = None) -> None:
    """Fail with `message` and the hint of usual mistake `hint_key` (shown, and carried by key)."""
    __tracebackhide__ = True
    hint = HINTS[hint_key] if hint_key else None
    raise CheckFailed(message + (f"\n提示 (hint): {hint}" if hint else ""), what=what, hint=hint, hint_key=hint_key)


def by_formula(fn, *args, what: str, **kwargs):
    """fn(*args, **kwargs), an answer that must compute a formula itself, called with the course's calculator
    (lecture2.estimate, planner, network, parallel) switched off beside it: its value; calling the calculator
    fails with the hint "calculator_off"."""
    __tracebackhide__ = True
    from .. import answers

    seen = answers.observe(answers.without_instruments, fn, answers.CALCULATOR, *args, **kwargs)
    if type(seen) is not dict or "used" not in seen:
        raise CheckFailed(f"{what}: 没有得到结果 (no observation came back)", what=what)
    if seen["used"] is True:
        fail(f"{what}: 你的函数调用了课程的计算器 (lecture2.estimate 等)。", "calculator_off", what=what)
    return seen.get("returned")


def with_instruments_off(fn, *args, instruments: tuple[str, ...], what: str, hint_key: str):
    """fn(*args), called beside the answer with lecture2's modules `instruments` switched off
    (answers.with_instruments_off): its value; an answer that called one of them fails with the hint `hint_key`,
    saying what it raised."""
    __tracebackhide__ = True
    from .. import answers

    try:
        return answers.observe(answers.with_instruments_off, fn, tuple(instruments), *args)
    except RuntimeError as err:
        if answers.OFF not in str(err):
            raise
        fail(f"{what} 出错 (raised) {answers.quoted(err, 140)}", hint_key)


def grading() -> bool:
    """True while nbgrader grades or validates (it sets NBGRADER_EXECUTION)."""
    return bool(os.environ.get("NBGRADER_EXECUTION"))


def _is_number(value: object) -> bool:
    """An exact int or float (bool is not a number here; subclasses are not either)."""
    return type(value) in (int, float)


def _refuse_foreign(got: object, what: str) -> None:
    __tracebackhide__ = True
    bad = _foreign(got)
    if bad:
        raise CheckFailed(f"{what}: 应返回 Python 内置类型 (built-in types: int, float, str, list, tuple, dict) "
                          f"或 torch.Tensor 组成的值，得到 {bad}。用 int(...) / float(...) / .item() / .tolist() 转换。",
                          what=what, hint_key="builtin_types", got=bad)


def _fail(what: str, want: object, got: object, found: Mistake | None = None, extra: str = "") -> None:
    __tracebackhide__ = True
    message = f"{what}: 期望 (expected) {_fmt(want)}，得到 (got) {_fmt(got)}。{extra}"
    if found:
        message += f"\n提示 (hint): {found.hint}"
    ratio = difference = None
    if _is_number(got) and _is_number(want) and math.isfinite(got) and math.isfinite(want):
        difference = float(got) - float(want)
        ratio = float(got) / float(want) if want else None
    raise CheckFailed(message, what=what, want=want, hint=found.hint if found else None,
                      hint_key=found.key if found else None, got=_fmt(got), ratio=ratio, difference=difference)


def _close(a: float, b: float, rtol: float, atol: float) -> bool:
    return math.isclose(a, b, rel_tol=rtol, abs_tol=atol) or (math.isinf(a) and a == b)


def _matching_hint(got: object, mistakes, rtol: float, atol: float) -> Mistake | None:
    """The first usual mistake whose value `got` equals (numbers within rtol/atol)."""
    for m in mistakes:
        if _is_number(got) and _is_number(m.value):
            if _close(float(got), float(m.value), rtol, atol):
                return m
        elif _foreign(m.value) is None and type(got) is type(m.value) and got == m.value:
            return m
    return None


def _explain_difference(got: float, want: float, terms: dict[str, float] | None, rtol: float) -> str:
    """For a wrong number that matches no single mistake: the ratio, the difference, and which named term, or
    sum of two (each up to 2 times, either sign), the difference equals: often two mistakes at once."""
    parts = []
    if want and got:
        parts.append(f"比值 ratio got/expected = {got / want:.4g}")
    diff = got - want
    parts.append(f"差 difference got − expected = {diff:+.6g}")
    named = [(name, value) for name, value in (terms or {}).items() if value]
    coefficients = (1, -1, 2, -2)

    def close(value: float) -> bool:
        return math.isclose(diff, value, rel_tol=max(rtol, 1e-9), abs_tol=0.0)

    def said(k: int, name: str) -> str:
        return f"{'多算' if k > 0 else '漏算'}了{'' if abs(k) == 1 else f' {abs(k)} 次'} {name}"

    found = next(([(k, n)] for n, v in named for k in coefficients if close(k * v)), None)
    if found is None:
        found = next(([(k1, n1), (k2, n2)] for i, (n1, v1) in enumerate(named) for n2, v2 in named[i + 1:]
                      for k1 in coefficients for k2 in coefficients if close(k1 * v1 + k2 * v2)), None)
    if found:
        formula = " ".join(f"{k:+d} × {n}" for k, n in found)
        parts.append(f"= {formula}：是不是{'、'.join(said(k, n) for k, n in found)}？")
    return "(" + "，".join(parts) + ")"


def expect_type(got: object, types: type | tuple[type, ...], *, what: str) -> None:
    """Fail unless `got` is exactly of one of `types` (a subclass of a built-in type or of torch.Tensor
    does not count; bool is not accepted as a number). Other classes are matched with isinstance."""
    __tracebackhide__ = True
    types = types if isinstance(types, tuple) else (types,)
    exact = set(_SCALARS) | {list, tuple, set, frozenset, dict} | set(_exact_types())
    ok = False
    for t in types:
        if t in exact:
            torch = sys.modules.get("torch")
            ok = type(got) is t or (torch is not None and t is torch.Tensor and type(got) is torch.nn.Parameter)
        else:
            ok = isinstance(got, t) and not (isinstance(got, bool) and t is not bool)
        if ok:
            break
    if not ok:
        names = " 或 ".join(t.__name__ for t in types)
        key = RETURNS.get(types, "returns_type")
        raise CheckFailed(f"{what}: 应返回 {names}，得到 {type(got).__name__} ({_fmt(got)})。", what=what, want=names,
                          got=f"{type(got).__name__} ({_fmt(got)})", hint_key=key)


RETURNS = {(int,): "returns_int", (float,): "returns_float", (dict,): "returns_dict", (bool,): "returns_bool",
           (int, float): "returns_number", (float, int): "returns_number"}  # expect_type's hint by the types asked


def _idea(key: str | None) -> Mistake | None:
    """The hint of an exercise's idea (a key of HINTS), shown when a wrong answer matches no usual mistake."""
    return Mistake(None, HINTS[key], key) if key else None


def expect_close(got: object, want: float, *, what: str, rtol: float = 1e-9, atol: float = 0.0,
                 mistakes: tuple[Mistake, ...] | list[Mistake] = (), terms: dict[str, float] | None = None,
                 idea: str | None = None) -> None:
    """Fail unless `got` is an exact int or float within `rtol`/`atol` of `want`; name the matching
    mistake, or else explain the difference with the named `terms` (e.g. {"d": d, "V·d": V * d}) and give the
    hint `idea` (a key of HINTS: the exercise's idea, the first step towards the formula) when there is one."""
    __tracebackhide__ = True
    if not _is_number(got):
        _refuse_foreign(got, what)
        raise CheckFailed(f"{what}: 应返回一个数 (a real number: int or float)，得到 {type(got).__name__} ({_fmt(got)})。",
                          what=what, want=want, got=f"{type(got).__name__} ({_fmt(got)})", hint_key="returns_number")
    if not _close(float(got), float(want), rtol, atol):
        hint = _matching_hint(got, mistakes, rtol, atol)
        extra = "" if hint or not _is_number(want) else _explain_difference(float(got), float(want), terms, rtol)
        _fail(what, want, got, hint or _idea(idea), extra)


def expect_equal(got: object, want: object, *, what: str,
                 mistakes: tuple[Mistake, ...] | list[Mistake] = (), terms: dict[str, float] | None = None,
                 idea: str | None = None) -> None:
    """Fail unless `got == want` exactly, `got` built of exact built-in types; name the matching mistake,
    or else explain a numeric difference with the named `terms` and give the hint `idea` (see expect_close)."""
    __tracebackhide__ = True
    _refuse_foreign(got, what)
    if _is_number(want) and not _is_number(got):
        raise CheckFailed(f"{what}: 应返回一个数 (a number)，得到 {type(got).__name__} ({_fmt(got)})。", what=what, want=want,
                          got=f"{type(got).__name__} ({_fmt(got)})", hint_key="returns_number")
    if got != want:
        hint = _matching_hint(got, mistakes, 0.0, 0.0)
        extra = ""
        if hint is None and _is_number(got) and _is_number(want):
            extra = _explain_difference(float(got), float(want), terms, 0.0)
        _fail(what, want, got, hint or _idea(idea), extra)


def expect(condition: object, message: str) -> None:
    """Fail with `message` unless `condition` is True: a bool, a numpy bool or a one-element bool
    torch.Tensor (anything else is refused: a student's object could claim to be true)."""
    __tracebackhide__ = True
    kind = type(condition)
    if kind is not bool:
        torch = sys.modules.get("torch")
        numpy = sys.modules.get("numpy")
        if numpy is not None and kind is numpy.bool_:
            condition = bool(condition)
        elif torch is not None and kind is torch.Tensor and condition.dtype == torch.bool and condition.numel() == 1:
            condition = bool(condition)
        else:
            raise CheckFailed(f"{message}\n(检查得到的不是 True/False，而是 {kind.__name__}：返回值的类型不对)")
    if not condition:
        raise CheckFailed(message)


_SINK = None  # where exercises' outcomes go while a test cell runs: chosen by the caller (`reporting_to`)


@contextmanager
def reporting_to(sink):
    """While the block runs, every exercise reports its groups' outcomes to `sink` (`sink.report(name, groups)`,
    and `sink.group_done(name, label)` when a group ends, if it has one). The caller chooses: the course's grader
    passes its judge's results; the lab and a plain run pass nothing, and a check only prints."""
    global _SINK
    saved, _SINK = _SINK, sink
    try:
        yield sink
    finally:
        _SINK = saved


def _report(name: str, groups: dict[str, dict] | None) -> None:
    """Hand exercise `name`'s outcome to the sink chosen for this test cell, if any."""
    if _SINK is not None:
        _SINK.report(name, groups)


def _group_done(name: str, label: str) -> None:
    """Tell the sink, if it wants to know, that group `label` of exercise `name` has ended (the judge notes whether
    the answer's process had received a hidden case by then)."""
    done = getattr(_SINK, "group_done", None)
    if done is not None:
        done(name, label)


def _outcome(error: BaseException | None) -> dict:
    """A group's outcome from how its checks ended (None: they passed)."""
    if error is None:
        return {"passed": True, "status": "passed", "hint": None, "hint_key": None, "message": ""}
    if isinstance(error, NotImplementedError):
        return {"passed": False, "status": "not implemented", "hint": None, "hint_key": None,
                "message": "not implemented"}
    if isinstance(error, CheckFailed):
        return {"passed": False, "status": "failed", "hint": error.hint, "hint_key": error.hint_key,
                "message": str(error)[:4000], "what": error.what, "want": None if error.want is None else _fmt(error.want),
                "got": error.got, "ratio": error.ratio, "difference": error.difference}
    status = "timeout" if isinstance(error, AnswerTimeout) else "error"
    return {"passed": False, "status": status, "hint": None, "hint_key": None,
            "message": f"{type(error).__name__}: {error}"[:1000]}


NOT_RUN = {"passed": False, "status": "not run", "hint": None, "hint_key": None, "message": "not run"}


class Exercise:
    """The exercise a test cell checks, as `exercise(...)` yields it: `with ex.group("drawn"):` runs one
    named group of checks; a failure in a group is recorded and the next group still runs."""

    def __init__(self, name: str, points: dict[str, float] | None):
        self.name, self.points = name, dict(points or {})
        self.outcomes: dict[str, dict] = {}  # group -> {"passed", "status", "hint", "hint_key", "message", ...}

    @contextmanager
    def group(self, label: str):
        """Run one group of checks; its outcome is recorded, a failure does not stop the other groups."""
        __tracebackhide__ = True
        if label not in self.points:
            raise KeyError(f"group {label!r} is not among the exercise's groups {sorted(self.points)}")
        try:
            yield
        except Exception as err:  # a failed check, or the answer raised: this group fails, the others run
            self.outcomes[label] = _outcome(err)
        else:
            self.outcomes[label] = _outcome(None)
        finally:
            _group_done(self.name, label)

    def summary(self, lang: str = "zh") -> str:
        parts = []
        for label, weight in self.points.items():
            if label in self.outcomes:
                status = self.outcomes[label]["status"]
                mark = "✅" if status == "passed" else "⏳" if status == "not implemented" else "❌"
                parts.append(f"{mark} {label} ({weight:g})")
        return ("，" if lang == "zh" else ", ").join(parts)

    def report(self) -> dict[str, dict]:
        return {g: self.outcomes.get(g, NOT_RUN) for g in self.points}


@contextmanager
def exercise(name: str, points: dict[str, float] | None = None):
    """Wrap an exercise's checks: a success line when they pass, a notice for an unfilled stub.

    With `points` ({group: weight}, e.g. {"lecture": 1, "drawn": 2}) the checks come in named groups
    (`with ex.group("drawn"):`), each worth its share of the cell's points when all its cases pass; the
    grader reads the weights from the instructor's notebook and awards the shares of the groups this context
    reports passed. A group that did not run (the hidden ones, in the lab) counts for nothing and is not shown.
    Without `points` the whole exercise is one group.

    An exercise whose every group that ran raised NotImplementedError is a stub: in the lab it prints a notice
    and lets `Run All` go on; under grading it fails. Any other failure raises, with the first failed group's
    message and every group's mark.
    """
    __tracebackhide__ = True
    ex = Exercise(name, points or {name: 1.0})
    whole = not points
    try:
        if whole:
            with ex.group(name):
                yield ex
        else:
            yield ex
    except BaseException:  # an error in the check itself, or a timeout: the groups that finished still count
        _report(name, ex.report())
        raise
    ran = list(ex.outcomes.values())
    stub = bool(ran) and all(o["status"] == "not implemented" for o in ran)
    _report(name, ex.report())
    if stub:
        if grading():
            raise CheckFailed(f"练习 {name} 还没有完成 (not implemented yet)。", what=name)
        print(messages.say("check.not_implemented", editions.kernel_edition(), name=name))
        return
    failed = [g for g, o in ex.outcomes.items() if not o["passed"]]
    if failed:
        first = ex.outcomes[failed[0]]
        if whole:
            raise CheckFailed(first["message"], what=first.get("what"), hint=first["hint"], hint_key=first["hint_key"])
        raise CheckFailed(f"{first['message']}\n[{name}: {ex.summary()}]", what=None, hint=first["hint"],
                          hint_key=first["hint_key"])
    lang = editions.kernel_edition()  # the lab's notebook's edition: what the student reads is in its language
    print(messages.say("check.passed", lang, name=name) + ("" if whole else f" — {ex.summary(lang)}"))
