"""How a check's message shows a value (`shown`: at most SHOWN_CHARACTERS characters, in time and memory that do
not grow with the value), and which values are built of built-in types only (`_foreign`: anything else shows as its
type, never its repr)."""
from __future__ import annotations

import sys

from .. import wire

SHOWN_CHARACTERS = 200  # of a value a message shows (what came back, what was expected)
SHOWN_ITEMS = 6  # elements of a tensor, items of a container, shown before "…"


def shown(value: object) -> str:
    """`value` as a message shows it, at most SHOWN_CHARACTERS characters, in time and memory that do not grow with
    it: a tensor as its shape, dtype and first elements (never torch's repr, which prints every element of a tensor
    whose dimensions are all small: 10 s and 860 MB for one of 2**20 bytes), a container as its first items, a string
    as its start. Anything that is not built of built-in types (and torch's) shows as its type, never its repr."""
    if type(value) is float:
        return f"{value:.6g}"
    try:
        text = _summary(value, 0) if _foreign(value) is None else _type_only(value)
    except Exception:  # noqa: BLE001  a value that cannot even be summarised: its type
        text = f"<{type(value).__name__}>"
    return text if len(text) <= SHOWN_CHARACTERS else text[:SHOWN_CHARACTERS] + "…"


def _type_only(value: object) -> str:
    """A value not built of built-in types, as its type (a value the wire could not carry, as the type it names):
    never its repr, nor object's (which holds a memory address: a page that differs at every run)."""
    from ..wire import Unsupported

    if isinstance(value, Unsupported):
        return repr(value)[:SHOWN_CHARACTERS]
    return f"<{type(value).__qualname__}>"



def _summary(value: object, depth: int) -> str:
    kind = type(value)
    torch = sys.modules.get("torch")
    if torch is not None and kind in (torch.Tensor, torch.nn.Parameter):
        return _tensor_summary(value)
    if kind is float:
        return f"{value:.6g}"
    if kind is str:
        return repr(value[:SHOWN_CHARACTERS]) + ("…" if len(value) > SHOWN_CHARACTERS else "")
    if kind is bytes:
        return repr(value[:SHOWN_CHARACTERS]) + ("…" if len(value) > SHOWN_CHARACTERS else "")
    if kind is int:
        return repr(value) if value.bit_length() < 700 else f"<an int of {value.bit_length()} bits>"
    if kind in (list, tuple, set, frozenset, dict):
        if depth >= 3:
            return f"<{kind.__name__} of {len(value)}>"
        items = list(value.items() if kind is dict else value)[:SHOWN_ITEMS] if len(value) <= SHOWN_ITEMS else \
            [item for item, _ in zip(value.items() if kind is dict else value, range(SHOWN_ITEMS))]
        parts = [f"{_summary(k, depth + 1)}: {_summary(v, depth + 1)}" if kind is dict else _summary(k, depth + 1)
                 for k, v in (items if kind is dict else ((i, None) for i in items))]
        more = ", …" if len(value) > SHOWN_ITEMS else ""
        body = ", ".join(parts) + more
        if kind is list:
            return f"[{body}]"
        if kind is tuple:
            return f"({body}{',' if len(value) == 1 else ''})"
        if kind is dict:
            return "{" + body + "}"
        if not value:
            return f"{kind.__name__}()"
        return "{" + body + "}" if kind is set else f"frozenset({{{body}}})"
    return repr(value)  # None, bool, complex, torch.dtype, torch.device, torch.Size, wire.Unsupported: short


def _tensor_summary(t) -> str:
    """tensor(shape=(2, 3), dtype=torch.float32, values [0, 1, 2, …]): a few elements read one by one."""
    shape = tuple(t.shape)
    numel = 1
    for n in shape:
        numel *= n
    values = ""
    if t.device.type != "meta" and numel:
        first = []
        for i in range(min(numel, SHOWN_ITEMS)):
            index, rest = [], i
            for n in reversed(shape):
                index.append(rest % n)
                rest //= n
            item = t.detach()[tuple(reversed(index))].item()
            first.append(f"{item:.6g}" if type(item) is float else repr(item))
        values = ", values [" + ", ".join(first) + (", …" if numel > SHOWN_ITEMS else "") + "]"
    return f"tensor(shape={shape}, dtype={t.dtype}{values})"


_SCALARS = (int, float, complex, str, bytes, bool, type(None))


def _exact_types() -> tuple[type, ...]:
    torch = sys.modules.get("torch")
    if torch is None:
        return ()
    return (torch.Tensor, torch.nn.Parameter, torch.dtype, torch.device, torch.Size)


def _foreign(value: object, depth: int = 0) -> str | None:
    """None when `value` is built only of exact built-in types (and exact torch Tensors, dtypes, devices,
    Sizes); else the name of the first type that is not, e.g. "MyFloat" or "numpy.float64"."""
    kind = type(value)
    if kind in _SCALARS or kind in _exact_types():
        return None
    if kind is wire.Unsupported:
        return value.type_name
    if depth > 20:
        return "a value nested more than 20 levels deep"
    if kind in (list, tuple, set, frozenset):
        for item in value:
            bad = _foreign(item, depth + 1)
            if bad:
                return bad
        return None
    if kind is dict:
        for key, item in value.items():
            bad = _foreign(key, depth + 1) or _foreign(item, depth + 1)
            if bad:
                return bad
        return None
    module = getattr(kind, "__module__", "") or ""
    return f"{module}.{kind.__qualname__}" if module not in ("builtins", "__main__", "") else kind.__qualname__
