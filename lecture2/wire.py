"""Plain data between a check and a student's answer: what may cross, and how it is framed.

A check never holds a student's object, and a student's process never holds a check's expected value. What
passes between them is data that cannot execute code when it is read:

    None, bool, int (at most 4,000 digits), float (nan and ±inf included), complex, str, bytes,
    list, tuple, dict, set, frozenset (nested at most 32 deep),
    torch.dtype, torch.device, torch.Size,
    torch.Tensor and nn.Parameter: dtype, shape and raw bytes (no pickle); meta tensors: dtype and shape,
    instances of lecture2's own plain records registered with `transportable` (e.g. models.GPTConfig),
    anything else: an `Unsupported` marker that names its type (a numpy scalar, a student's class, ...).

`encode` turns a value into JSON-able data, `decode` checks and rebuilds it; `pack`/`unpack` frame one
message as 4 bytes of length and UTF-8 JSON. The decoder is the boundary: it refuses (raises `Malformed`)
anything outside this grammar or over the limits, whoever wrote the bytes. Both sides use the same code, and
the lab runs every call through the same round trip, so an answer sees the same inputs in the lab and when it
is graded, and a check sees the same outputs.
"""
from __future__ import annotations

import base64
import dataclasses
import json
import math
import struct
import sys
from dataclasses import dataclass

MAX_DEPTH = 32
MAX_ITEMS = 1_000_000  # list, dict and set entries in one message, all levels together
MAX_TEXT = 4_000_000  # characters of one string
MAX_INT_DIGITS = 4_000
MAX_MESSAGE = 256 * 2**20  # bytes of one framed message
MAX_TENSOR_BYTES = 192 * 2**20

_TRANSPORTABLE: dict[str, type] = {}


class Malformed(ValueError):
    """Data that is not in the wire's grammar, or over its limits; the message says what."""


@dataclass(frozen=True)
class Unsupported:
    """A value that cannot cross as data (a numpy scalar, a student's own class, a function, ...): its type's
    name and a short description, so that a check can say what came back instead."""

    type_name: str
    text: str = ""

    def __repr__(self) -> str:
        return f"<{self.type_name}>" if not self.text else f"<{self.type_name}: {self.text}>"


def transportable(cls: type) -> type:
    """Class decorator: instances of this dataclass of plain fields cross the wire and are rebuilt with
    cls(**fields) (so that its own validation runs again on the other side)."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls.__name__} is not a dataclass")
    _TRANSPORTABLE[f"{cls.__module__}:{cls.__qualname__}"] = cls
    return cls


def _torch():
    return sys.modules.get("torch")


def _type_name(value: object) -> str:
    kind = type(value)
    module = getattr(kind, "__module__", "") or ""
    name = getattr(kind, "__qualname__", None) or getattr(kind, "__name__", "?")
    name = name if isinstance(name, str) else "?"
    return name if module in ("builtins", "__main__", "") or not isinstance(module, str) else f"{module}.{name}"


# ---- encoding (runs on either side; on the student's side its result is not trusted)


def encode(value: object) -> object:
    """`value` as JSON-able data: exact built-in types as themselves (tuples, dicts, sets, non-finite floats
    and bytes tagged), torch values by their parts, anything else as an Unsupported marker."""
    budget = [MAX_ITEMS]
    return _encode(value, 0, budget)


def _encode(value: object, depth: int, budget: list[int]) -> object:
    if depth > MAX_DEPTH:
        return {"$unsupported": ["a value nested more than 32 levels deep", ""]}
    kind = type(value)
    if value is None or kind is bool or kind is str:
        if kind is str and len(value) > MAX_TEXT:
            return {"$unsupported": ["str", f"{len(value):,} characters, over the limit"]}
        return value
    if kind is int:
        if value.bit_length() > MAX_INT_DIGITS * 3.3:
            return {"$unsupported": ["int", f"{value.bit_length()} bits, over the limit"]}
        return value
    if kind is float:
        return value if math.isfinite(value) else {"$f": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
    if kind is complex:
        return {"$c": [_encode(value.real, depth + 1, budget), _encode(value.imag, depth + 1, budget)]}
    if kind is bytes:
        return {"$b": base64.b64encode(value).decode("ascii")}
    if kind in (list, tuple, set, frozenset):
        budget[0] -= len(value)
        if budget[0] < 0:
            return {"$unsupported": [kind.__name__, "too many items"]}
        items = [_encode(v, depth + 1, budget) for v in (sorted(value, key=repr) if kind in (set, frozenset) else value)]
        return items if kind is list else {{tuple: "$t", set: "$set", frozenset: "$fset"}[kind]: items}
    if kind is dict:
        budget[0] -= len(value)
        if budget[0] < 0:
            return {"$unsupported": ["dict", "too many items"]}
        return {"$d": [[_encode(k, depth + 1, budget), _encode(v, depth + 1, budget)] for k, v in value.items()]}
    torch = _torch()
    if torch is not None:
        if kind is torch.dtype:
            return {"$dtype": str(value).removeprefix("torch.")}
        if kind is torch.device:
            return {"$device": str(value)}
        if kind is torch.Size:
            return {"$size": [int(v) for v in value]}
        if kind is torch.Tensor or kind is torch.nn.Parameter:
            return _encode_tensor(value, kind is torch.nn.Parameter)
    key = f"{getattr(kind, '__module__', '')}:{getattr(kind, '__qualname__', '')}"
    if key in _TRANSPORTABLE and dataclasses.is_dataclass(value):  # by name: a reloaded module's class is the same record
        fields = {f.name: _encode(getattr(value, f.name), depth + 1, budget) for f in dataclasses.fields(value)}
        return {"$obj": [key, fields]}
    return {"$unsupported": [_type_name(value), _describe(value)]}


def _describe(value: object) -> str:
    """A short, safe description of a value that cannot cross: a number's or a tensor's own repr."""
    torch = _torch()
    try:
        if torch is not None and isinstance(value, torch.Tensor):
            return f"shape {tuple(value.shape)}, {value.dtype}"
        if type(value).__module__ == "numpy" or isinstance(value, (int, float, complex)):
            text = repr(value)
            return text if len(text) <= 120 else text[:120] + "…"
    except Exception:  # a repr that raises: the type name says enough
        pass
    return ""


def _encode_tensor(t, is_param: bool) -> dict:
    torch = _torch()
    t = t.detach()
    if t.layout != torch.strided or t.is_quantized:
        return {"$unsupported": ["torch.Tensor", f"layout {t.layout}"]}
    head = {"dtype": str(t.dtype).removeprefix("torch."), "shape": [int(s) for s in t.shape],
            "device": str(t.device), "param": is_param}
    if t.device.type == "meta":
        return {"$tensor": head}
    nbytes = t.numel() * t.element_size()
    if nbytes > MAX_TENSOR_BYTES:
        return {"$unsupported": ["torch.Tensor", f"{nbytes:,} bytes, over the limit"]}
    flat = t.cpu().contiguous().reshape(-1)
    raw = flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b""
    return {"$tensor": {**head, "data": base64.b64encode(raw).decode("ascii")}}


# ---- decoding (the boundary: strict, bounded)


def decode(data: object) -> object:
    """The value `data` (from `encode`, or from anywhere) stands for; Malformed for anything else."""
    budget = [MAX_ITEMS]
    return _decode(data, 0, budget)


def _decode(data: object, depth: int, budget: list[int]) -> object:
    if depth > MAX_DEPTH + 1:
        raise Malformed("nested too deep")
    kind = type(data)
    if data is None or kind is bool:
        return data
    if kind is int:
        if data.bit_length() > MAX_INT_DIGITS * 3.33:
            raise Malformed("int too large")
        return data
    if kind is float:
        if not math.isfinite(data):
            raise Malformed("a bare non-finite float")
        return data
    if kind is str:
        if len(data) > MAX_TEXT:
            raise Malformed("str too long")
        return data if data.isascii() else data.encode("utf-8", "replace").decode("utf-8")  # no lone surrogates
    if kind is list:
        budget[0] -= len(data)
        if budget[0] < 0:
            raise Malformed("too many items")
        return [_decode(v, depth + 1, budget) for v in data]
    if kind is not dict or len(data) != 1:
        raise Malformed(f"not in the wire's grammar: {kind.__name__}")
    (tag, body), = data.items()
    if tag == "$f":
        if body not in ("nan", "inf", "-inf"):
            raise Malformed("bad float tag")
        return float(body)
    if tag == "$b":
        return _b64(body)
    if tag == "$c":
        parts = _decode(body, depth + 1, budget) if type(body) is list and len(body) == 2 else None
        if parts is None or not all(type(p) is float for p in parts):
            raise Malformed("bad complex")
        return complex(*parts)
    if tag in ("$t", "$set", "$fset"):
        if type(body) is not list:
            raise Malformed(f"{tag} needs a list")
        items = _decode(body, depth, budget)
        if tag == "$t":
            return tuple(items)
        try:
            return set(items) if tag == "$set" else frozenset(items)
        except TypeError:
            raise Malformed("unhashable set item") from None
    if tag == "$d":
        if type(body) is not list:
            raise Malformed("$d needs a list of pairs")
        budget[0] -= len(body)
        if budget[0] < 0:
            raise Malformed("too many items")
        out = {}
        for pair in body:
            if type(pair) is not list or len(pair) != 2:
                raise Malformed("$d needs pairs")
            key = _decode(pair[0], depth + 1, budget)
            try:
                out[key] = _decode(pair[1], depth + 1, budget)
            except TypeError:
                raise Malformed("unhashable dict key") from None
        return out
    if tag == "$unsupported":
        if type(body) is not list or len(body) != 2 or not all(type(s) is str for s in body):
            raise Malformed("bad $unsupported")
        return Unsupported(body[0][:200], body[1][:200])
    if tag == "$obj":
        if type(body) is not list or len(body) != 2 or type(body[0]) is not str or type(body[1]) is not dict:
            raise Malformed("bad $obj")
        cls = _TRANSPORTABLE.get(body[0])
        if cls is None:
            raise Malformed(f"not a transportable class: {body[0][:80]}")
        names = {f.name for f in dataclasses.fields(cls)}
        if set(body[1]) - names:
            raise Malformed(f"unknown fields of {cls.__name__}")
        fields = {k: _decode(v, depth + 1, budget) for k, v in body[1].items()}
        try:
            return cls(**fields)
        except Exception as err:  # the class's own validation refused the fields
            return Unsupported(cls.__qualname__, f"refused: {str(err)[:150]}")
    torch = _torch()
    if torch is None:
        raise Malformed(f"{tag} needs torch")
    if tag == "$dtype":
        dtype = getattr(torch, body, None) if type(body) is str and body.isidentifier() else None
        if type(dtype) is not torch.dtype:
            raise Malformed("bad dtype")
        return dtype
    if tag == "$device":
        if type(body) is not str or len(body) > 20:
            raise Malformed("bad device")
        try:
            return torch.device(body)
        except (RuntimeError, ValueError):
            raise Malformed("bad device") from None
    if tag == "$size":
        if type(body) is not list or len(body) > 64 or not all(type(s) is int and 0 <= s < 2**62 for s in body):
            raise Malformed("bad size")
        return torch.Size(body)
    if tag == "$tensor":
        return _decode_tensor(body)
    raise Malformed(f"unknown tag {str(tag)[:20]!r}")


def _b64(body: object) -> bytes:
    if type(body) is not str or len(body) > 4 * MAX_TENSOR_BYTES // 3 + 8:
        raise Malformed("bad base64")
    try:
        return base64.b64decode(body.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise Malformed("bad base64") from None


def _decode_tensor(body: object):
    torch = _torch()
    if type(body) is not dict or not {"dtype", "shape", "device", "param"} <= set(body) <= {"dtype", "shape", "device", "param", "data"}:
        raise Malformed("bad tensor header")
    dtype = _decode({"$dtype": body["dtype"]}, 0, [1])
    shape = body["shape"]
    if type(shape) is not list or len(shape) > 16 or not all(type(s) is int and 0 <= s < 2**40 for s in shape):
        raise Malformed("bad tensor shape")
    numel = math.prod(shape)
    if type(body["param"]) is not bool or type(body["device"]) is not str:
        raise Malformed("bad tensor header")
    if "data" not in body:
        if body["device"] != "meta":
            raise Malformed("a tensor without data")
        return torch.empty(shape, dtype=dtype, device="meta")
    raw = _b64(body["data"])
    try:
        if len(raw) != numel * torch.empty(0, dtype=dtype).element_size():
            raise Malformed("tensor data does not match its shape")
        flat = torch.frombuffer(bytearray(raw), dtype=torch.uint8) if raw else torch.empty(0, dtype=torch.uint8)
        t = flat.view(dtype).reshape(shape)
    except (RuntimeError, TypeError, ValueError) as err:  # a dtype whose bytes cannot be viewed (quantized, ...)
        raise Malformed(f"bad tensor: {str(err)[:80]}") from None
    device = body["device"]
    if device != "cpu":
        try:
            t = t.to(device)
        except (RuntimeError, ValueError, AssertionError):  # a device this side does not have: stays on the CPU
            pass
    return torch.nn.Parameter(t, requires_grad=t.is_floating_point() or t.is_complex()) if body["param"] else t


def roundtrip(value: object) -> object:
    """What `value` becomes after crossing the wire (the lab uses it, so that it behaves as under the grader)."""
    return decode(json.loads(json.dumps(encode(value), allow_nan=False)))


# ---- framing


def pack(message: object) -> bytes:
    """One framed message: 4 bytes of big-endian length, then the JSON text of `message` (already encoded)."""
    body = json.dumps(message, allow_nan=False, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "replace")
    if len(body) > MAX_MESSAGE:
        raise Malformed(f"a message of {len(body):,} bytes, over the limit")
    return struct.pack(">I", len(body)) + body


def unpack(body: bytes) -> object:
    """The JSON value of one message's body (without its length prefix); Malformed if it is not JSON."""
    try:
        return json.loads(body.decode("utf-8"))
    except (ValueError, RecursionError, UnicodeDecodeError) as err:
        raise Malformed(f"not JSON: {type(err).__name__}") from None
