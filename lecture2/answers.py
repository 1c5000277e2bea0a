"""The one seam between a check and a student's answer.

A check (lecture2.exercises) never touches a student's function or class itself. It asks for one of three
things, and gets plain data back (lecture2.wire):

    call(fn, *args)                    fn(*args): the answer's return value
    observe(observer, target, *args)   observer(target, *args): an instrument of lecture2 run beside the
                                       answer (FLOPs counted while it runs, a module's outputs and gradients,
                                       the calls it made), returning what it saw
    session(cls, target, *args)        cls(target, *args), kept where the answer lives; its public methods
                                       are then called the same way (a training loop the check steps through)

Observers and session classes are lecture2's own code, registered with `@observer`; they hold inputs, never
an expected value. In the lab `target` is the student's object and everything runs here, through the same
plain-data round trip as under the grader. When the course's grader runs a notebook, the test cells run in a
process of their own (the judge), where each name an answer cell defines is a `Remote`: the same calls go to
the student's process, which receives the inputs and sends back only data. Expected values, tolerances,
verdicts and hints stay with the check.
"""
from __future__ import annotations

import builtins
import importlib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from . import wire

__all__ = ["AnswerError", "AnswerUnavailable", "Oracle", "Remote", "Session", "call", "observe", "observer", "quoted",
           "session"]

_OBSERVERS: dict[str, object] = {}


@dataclass(frozen=True)
class Oracle:
    """How one exercise is graded, for the course's table (docs/grading.md is generated from these):
    what the student's process sends back, where the expected value comes from, and what a student who
    tampers with their own process could still do."""

    returns: str
    expected: str
    tampering: str


class AnswerError(Exception):
    """The answer raised something that is not an ordinary exception (SystemExit, KeyboardInterrupt, ...)."""


class AnswerUnavailable(Exception):
    """The answer's process could not answer: it timed out, died, or broke the protocol (the message says)."""


class AnswerTimeout(AnswerUnavailable):
    """The answer did not return within the time the check has left."""


def observer(obj):
    """Register a function or a session class of lecture2 as an instrument that runs beside the answer."""
    if not obj.__module__.startswith("lecture2."):
        raise ValueError(f"observers live in lecture2, not in {obj.__module__}")
    _OBSERVERS[key_of(obj)] = obj
    return obj


def key_of(obj) -> str:
    return f"{obj.__module__}:{obj.__qualname__}"


def find_observer(key: str):
    """The registered observer named `key` ("lecture2.exercises.modules:observe_rmsnorm"), importing its module."""
    module, _, name = key.partition(":")
    if not re.fullmatch(r"lecture2(\.[a-z_][a-z0-9_]*)+", module) or not name:
        raise LookupError(f"not an observer: {key[:100]!r}")
    if key not in _OBSERVERS:
        importlib.import_module(module)
    try:
        return _OBSERVERS[key]
    except KeyError:
        raise LookupError(f"not an observer: {key[:100]!r}") from None


class Remote:
    """A name an answer cell defines, as a test cell sees it in the judge: calling it calls the answer in the
    student's process, with plain data both ways. It has no other attributes."""

    __slots__ = ("__name__", "_link")

    def __init__(self, name: str, link):
        object.__setattr__(self, "__name__", name)
        object.__setattr__(self, "_link", link)

    def __call__(self, *args, **kwargs):
        return self._link.request("call", self.__name__, None, args, kwargs)

    def __getattr__(self, attribute: str):
        raise AttributeError(f"{self.__name__} is the student's: a check reaches it only through "
                             f"lecture2.answers (call, observe, session), not .{attribute}")

    def __setattr__(self, attribute, value):
        raise AttributeError("a Remote cannot be changed")

    def __repr__(self) -> str:
        return f"<answer {self.__name__}>"


class Session:
    """A session object that lives beside the answer; calling a method sends its arguments and returns its data."""

    def __init__(self, link, handle):
        self._link, self._handle = link, handle

    def __getattr__(self, method: str):
        if method.startswith("_"):
            raise AttributeError(method)

        def call_method(*args, **kwargs):
            if self._link is None:  # the lab: the instance is here
                args, kwargs = wire.roundtrip((args, kwargs))
                return wire.roundtrip(getattr(self._handle, method)(*args, **kwargs))
            return self._link.request("session_call", self._handle, method, args, kwargs)

        return call_method

    def close(self) -> None:
        if self._link is not None:
            self._link.request("session_close", self._handle, None, (), {})

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def call(fn, *args, **kwargs):
    """fn(*args, **kwargs) as a check makes it: the inputs and the return value as plain data."""
    __tracebackhide__ = True
    if isinstance(fn, Remote):
        return fn(*args, **kwargs)
    args, kwargs = wire.roundtrip((args, kwargs))
    return wire.roundtrip(fn(*args, **kwargs))


def observe(instrument, target, *args, **kwargs):
    """instrument(target, *args, **kwargs), run where the answer `target` lives; what it returns is data."""
    __tracebackhide__ = True
    if isinstance(target, Remote):
        return target._link.request("observe", target.__name__, key_of(instrument), args, kwargs)
    if _OBSERVERS.get(key_of(instrument)) is not instrument:
        raise LookupError(f"{key_of(instrument)} is not registered with @answers.observer")
    args, kwargs = wire.roundtrip((args, kwargs))
    return wire.roundtrip(instrument(target, *args, **kwargs))


def session(cls, target, *args, **kwargs) -> Session:
    """cls(target, *args, **kwargs), kept where the answer lives: a Session whose methods return data."""
    __tracebackhide__ = True
    if isinstance(target, Remote):
        handle = target._link.request("session_open", target.__name__, key_of(cls), args, kwargs)
        return Session(target._link, handle)
    if _OBSERVERS.get(key_of(cls)) is not cls:
        raise LookupError(f"{key_of(cls)} is not registered with @answers.observer")
    args, kwargs = wire.roundtrip((args, kwargs))
    return Session(None, cls(target, *args, **kwargs))


# ---- exceptions, as they cross


def describe_exception(err: BaseException) -> dict:
    """What crosses of an exception the answer raised: its classes' names (most derived first) and message."""
    names = []
    for cls in type(err).__mro__:
        name = getattr(cls, "__name__", "?")
        names.append(name if isinstance(name, str) else "?")
    try:
        message = str(err)
    except Exception:  # a __str__ that raises
        message = ""
    return {"types": names[:20], "builtin": _builtin_base(type(err)).__name__, "message": message[:2000]}


def _builtin_base(cls: type) -> type:
    for base in cls.__mro__:
        if getattr(builtins, base.__name__, None) is base and issubclass(base, Exception):
            return base
    return AnswerError


def rebuild_exception(info: object) -> Exception:
    """The exception a check sees for `info` from describe_exception (as data, from either side): an
    instance of the nearest built-in exception class, under the answer's own class name, so that
    `except ValueError` and `type(err).__name__` behave as in the lab."""
    if not isinstance(info, dict):
        return AnswerError("the answer raised an exception that could not be described")
    base = getattr(builtins, str(info.get("builtin", "")), None)
    if not (isinstance(base, type) and issubclass(base, Exception)) or base.__module__ != "builtins":
        base = AnswerError
    types = info.get("types")
    name = types[0] if isinstance(types, list) and types and isinstance(types[0], str) else base.__name__
    name = name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,60}", name) else base.__name__
    message = info.get("message") if isinstance(info.get("message"), str) else ""
    cls = base if name == base.__name__ else type(name, (base,), {"__module__": "answer"})
    try:
        return cls(message)
    except Exception:  # a built-in whose constructor wants other arguments (UnicodeDecodeError, ...)
        return type(name, (AnswerError,), {"__module__": "answer"})(message)


def quoted(err: BaseException, limit: int = 200) -> str:
    """An exception an answer raised, as a check's message may quote it: its class's name and the first line of its
    message, at most `limit` characters in all. Under the course's grader, an exception raised by a process that had
    received a hidden case reaches a check as its built-in class with a fixed note (lecture2_grader.judging.link), and a
    group that ended after that keeps its verdict and hint only (its message is not shown): quoting through here
    shows a student nothing that process said."""
    name = type(err).__name__ if isinstance(type(err).__name__, str) else "Exception"
    try:
        text = str(err)
    except Exception:  # a __str__ that raises
        text = ""
    line = (text.splitlines() or [""])[0]
    return f"{name}: {line}"[:limit] if line else name[:limit]


# ---- lecture2's own calculator and engines, switched off while an answer that must not use them runs

# The one list of what "switched off" means: the course's calculator (its formulas, which exercises ask students to
# write) and its engines (the live group and the textbook ZeRO, which can measure what an exercise asks to compute).
CALCULATOR = ("lecture2.estimate", "lecture2.planner", "lecture2.planning", "lecture2.network", "lecture2.parallel")
ENGINE_MODULES = ("lecture2.distributed", "lecture2.zero")
OFF = "lecture2 instrument switched off"  # what a switched-off function raises (RuntimeError)


def _instrument_off(*args, **kwargs):
    raise RuntimeError("lecture2 instrument switched off: 这个练习要你自己写公式，检查时课程的计算器和引擎 "
                       "(lecture2.estimate、planner、network、parallel ...) 被关掉了，调用它们会出错。")


_MODULES: dict[str, list] = {}  # a module's name -> it and, for a package, every module in it: looked up once


def _modules_of(name: str) -> list:
    """The module `name`, and if it is a package every module in it (imported; a `__main__` is never run)."""
    import pkgutil

    if name not in _MODULES:
        module = importlib.import_module(name)
        found = [module]
        for info in pkgutil.iter_modules(getattr(module, "__path__", [])):
            if info.name != "__main__":
                found += _modules_of(f"{name}.{info.name}")
        _MODULES[name] = found
    return _MODULES[name]


@contextmanager
def instruments_off(module_names: tuple[str, ...] = CALCULATOR) -> Iterator[None]:
    """While the block runs, every function and method defined in these lecture2 modules (a package: in any of
    its modules) runs `_instrument_off`'s code instead (wherever it was imported to): they hold the course's
    formulas, which some exercises ask a student to write. Restored afterwards."""
    for name in module_names:
        if not name.startswith("lecture2."):
            raise ValueError(f"only lecture2's modules are switched off, not {name!r}")
    # Every module imported before any is switched off (a module's import-time code may call another's); a closure's
    # code cannot take another's without its cells; a function met twice (a module's and a class's) is swapped once.
    modules = [m for name in module_names for m in _modules_of(name)]
    swapped, seen = [], set()
    try:
        for module in modules:
            for obj in list(vars(module).values()):
                for f in [obj] + (list(vars(obj).values()) if isinstance(obj, type) else []):
                    if getattr(f, "__module__", None) == module.__name__ and hasattr(f, "__code__") \
                            and not f.__code__.co_freevars and id(f) not in seen:
                        seen.add(id(f))
                        swapped.append((f, f.__code__))
                        f.__code__ = _instrument_off.__code__
        yield
    finally:
        for f, code in reversed(swapped):
            f.__code__ = code


@observer
def with_instruments_off(fn, module_names: tuple[str, ...], *args):
    """fn(*args) with lecture2's modules `module_names` switched off beside the answer: what it returns (what it
    raises goes to the check: a switched-off function's RuntimeError says `OFF`)."""
    with instruments_off(tuple(module_names)):
        return fn(*args)


@observer
def without_instruments(fn, module_names: tuple[str, ...], *args, **kwargs) -> dict:
    """fn(*args, **kwargs) with lecture2's modules `module_names` switched off beside the answer. What it saw:
    {"returned": fn's value, "used": whether fn called a switched-off function} (another exception fn raises
    goes to the check)."""
    with instruments_off(tuple(module_names)):
        try:
            return {"returned": fn(*args, **kwargs), "used": False}
        except RuntimeError as err:
            if OFF not in str(err):
                raise
    return {"returned": None, "used": True}
