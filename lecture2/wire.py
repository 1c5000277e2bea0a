"""Plain data between a check and a student's answer: what may cross, and how it is framed.

A check never holds a student's object, and a student's process never holds a check's expected value. What
passes between them is data that cannot execute code when it is read:

    None, bool, int (at most 4,000 digits), float (nan and ±inf included), complex, str, bytes,
    list, tuple, dict, set, frozenset (nested at most 32 deep),
    torch.dtype, torch.device, torch.Size,
    torch.Tensor and nn.Parameter: dtype, shape and raw bytes (no pickle); meta tensors: dtype and shape,
    instances of lecture2's own plain records registered with `transportable` (e.g. models.GPTConfig),
    anything else: an `Unsupported` marker that names its type (a numpy scalar, a student's class, ...).

`encode` turns a value into JSON-able data (a tensor's bytes set apart as a blob), `decode` checks and rebuilds
it; `pack`/`unpack` frame one message as its length, a small JSON part and the raw blobs. The decoder is the
boundary: it refuses (raises `Malformed`) anything outside this grammar or over the limits (`LIMITS`, every bound
in one place), whoever wrote the bytes, and nothing it does costs more than linear time and memory: a dict or
set whose keys were chosen to share one hash value is refused before Python's hash table sees it. Both sides use the same code, and
the lab runs every call through the same round trip, so an answer sees the same inputs in the lab and when it
is graded, and a check sees the same outputs.
"""
from __future__ import annotations

import base64
import dataclasses
import itertools
import json
import math
import struct
import sys
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """Every bound of the wire, in one place. The decoder holds a message to them whoever wrote it, so that
    nothing it does with a student's bytes costs more than time and memory linear in the message's size."""

    depth: int = 32  # containers nested in one value
    items: int = 1_000_000  # list, tuple, dict and set entries in one message, all levels together
    container: int = 1_000_000  # entries of one list, tuple, dict or set
    same_hash: int = 8  # keys of one dict or set that share a hash (honest values almost never do; chosen ones
    #                     make Python's hash table quadratic: a set of 10**6 such ints is hours in one C call)
    text: int = 1_000_000  # characters of one string
    int_digits: int = 4_000  # decimal digits of one int
    json: int = 16 * 2**20  # bytes of a message's JSON part (its structure: parsed whole, so kept small)
    blobs: int = 4_096  # raw byte strings (tensors' data) attached to one message
    tensor: int = 192 * 2**20  # bytes of one tensor's data
    message: int = 256 * 2**20  # bytes of one framed message, JSON and blobs together
    check_every: int = 4_096  # items decoded between two looks at the deadline


LIMITS = Limits()

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


def encode(value: object, blobs: list | None = None) -> object:
    """`value` as JSON-able data: exact built-in types as themselves (tuples, dicts, sets, non-finite floats
    and bytes tagged), torch values by their parts, anything else as an Unsupported marker. A tensor's bytes
    are appended to `blobs` (sent beside the JSON by `pack`) and named by their index; without a `blobs` list
    a tensor with data cannot be encoded (ValueError)."""
    budget = [LIMITS.items]
    return _encode(value, 0, budget, blobs)


def _encode(value: object, depth: int, budget: list[int], blobs: list | None) -> object:
    if depth > LIMITS.depth:
        return {"$unsupported": [f"a value nested more than {LIMITS.depth} levels deep", ""]}
    kind = type(value)
    if value is None or kind is bool or kind is str:
        if kind is str and len(value) > LIMITS.text:
            return {"$unsupported": ["str", f"{len(value):,} characters, over the limit"]}
        return value
    if kind is int:
        if value.bit_length() > LIMITS.int_digits * 3.3:
            return {"$unsupported": ["int", f"{value.bit_length()} bits, over the limit"]}
        return value
    if kind is float:
        return value if math.isfinite(value) else {"$f": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
    if kind is complex:
        return {"$c": [_encode(value.real, depth + 1, budget, blobs), _encode(value.imag, depth + 1, budget, blobs)]}
    if kind is bytes:
        return {"$b": base64.b64encode(value).decode("ascii")}
    if kind in (list, tuple, set, frozenset):
        budget[0] -= len(value)
        if budget[0] < 0 or len(value) > LIMITS.container:
            return {"$unsupported": [kind.__name__, "too many items"]}
        items = [_encode(v, depth + 1, budget, blobs) for v in (sorted(value, key=repr) if kind in (set, frozenset) else value)]
        return items if kind is list else {{tuple: "$t", set: "$set", frozenset: "$fset"}[kind]: items}
    if kind is dict:
        budget[0] -= len(value)
        if budget[0] < 0 or len(value) > LIMITS.container:
            return {"$unsupported": ["dict", "too many items"]}
        return {"$d": [[_encode(k, depth + 1, budget, blobs), _encode(v, depth + 1, budget, blobs)] for k, v in value.items()]}
    torch = _torch()
    if torch is not None:
        if kind is torch.dtype:
            return {"$dtype": str(value).removeprefix("torch.")}
        if kind is torch.device:
            return {"$device": str(value)}
        if kind is torch.Size:
            return {"$size": [int(v) for v in value]}
        if kind is torch.Tensor or kind is torch.nn.Parameter:
            return _encode_tensor(value, kind is torch.nn.Parameter, blobs)
    key = f"{getattr(kind, '__module__', '')}:{getattr(kind, '__qualname__', '')}"
    if key in _TRANSPORTABLE and dataclasses.is_dataclass(value):  # by name: a reloaded module's class is the same record
        fields = {f.name: _encode(getattr(value, f.name), depth + 1, budget, blobs) for f in dataclasses.fields(value)}
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


def _encode_tensor(t, is_param: bool, blobs: list | None) -> dict:
    torch = _torch()
    t = t.detach()
    if t.layout != torch.strided or t.is_quantized:
        return {"$unsupported": ["torch.Tensor", f"layout {t.layout}"]}
    head = {"dtype": str(t.dtype).removeprefix("torch."), "shape": [int(s) for s in t.shape],
            "device": str(t.device), "param": is_param}
    if t.device.type == "meta":
        return {"$tensor": head}
    nbytes = t.numel() * t.element_size()
    if nbytes > LIMITS.tensor:
        return {"$unsupported": ["torch.Tensor", f"{nbytes:,} bytes, over the limit"]}
    if blobs is None:
        raise ValueError("a tensor's data crosses as a blob: pass encode() a list of blobs")
    if len(blobs) >= LIMITS.blobs:
        return {"$unsupported": ["torch.Tensor", "too many tensors in one message"]}
    flat = t.cpu().contiguous().reshape(-1)
    blobs.append(flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b"")
    return {"$tensor": {**head, "blob": len(blobs) - 1}}


# ---- decoding (the boundary: strict, bounded, linear)


class _Budget:
    """What one message may still spend while it is decoded: items, blobs, time."""

    __slots__ = ("items", "blobs", "used", "deadline", "countdown")

    def __init__(self, blobs, deadline: float | None):
        self.items, self.blobs, self.used = LIMITS.items, blobs, set()  # used: the blobs a tensor took
        self.deadline, self.countdown = deadline, LIMITS.check_every

    def spend(self, n: int) -> None:
        if n > LIMITS.container:
            raise Malformed("a container over the limit")
        self.items -= n
        if self.items < 0:
            raise Malformed("too many items")
        self.countdown -= n + 1
        if self.countdown <= 0:
            self.countdown = LIMITS.check_every
            if self.deadline is not None and time.monotonic() > self.deadline:
                raise Malformed("decoding ran past the time the check had left")


def decode(data: object, blobs=(), deadline: float | None = None) -> object:
    """The value `data` (from `encode`, or from anywhere) stands for, its tensors' bytes taken from `blobs`;
    Malformed for anything else, or when decoding runs past `deadline` (time.monotonic()). Time and memory are
    linear in the size of `data` and `blobs`, whatever they hold."""
    budget = _Budget(blobs, deadline)
    try:
        return _decode(data, 0, budget)
    except Malformed:
        raise
    except (RecursionError, MemoryError):
        raise Malformed("too large or too deep to decode") from None
    except Exception as err:  # noqa: BLE001  whatever else malformed data makes a constructor raise: refused the same way
        raise Malformed(f"not decodable ({type(err).__name__})") from None


def _keys(items: list, what: str) -> list:
    """`items` (a set's entries or a dict's keys) after making sure hashing them is linear: each must be
    hashable, and at most LIMITS.same_hash of them may share a hash value (distinct hash values never collide
    in the table below: an int's hash is itself, but for -1)."""
    counts: dict[int, int] = {}
    for item in items:
        try:
            h = hash(item)
        except TypeError:
            raise Malformed(f"unhashable {what}") from None
        n = counts.get(h, 0) + 1
        if n > LIMITS.same_hash:
            raise Malformed(f"{what}s that share one hash value: more than {LIMITS.same_hash}")
        counts[h] = n
    return items


def _decode(data: object, depth: int, budget: _Budget) -> object:
    """One value of the grammar: JSON's own (bounded), a list item by item, or a tagged value (_decode_tagged)."""
    if depth > LIMITS.depth + 1:
        raise Malformed("nested too deep")
    kind = type(data)
    if data is None or kind is bool:
        return data
    if kind is int:
        if data.bit_length() > LIMITS.int_digits * 3.33:
            raise Malformed("int too large")
        return data
    if kind is float:
        if not math.isfinite(data):
            raise Malformed("a bare non-finite float")
        return data
    if kind is str:
        if len(data) > LIMITS.text:
            raise Malformed("str too long")
        return data if data.isascii() else data.encode("utf-8", "replace").decode("utf-8")  # no lone surrogates
    if kind is list:
        budget.spend(len(data))
        return [_decode(v, depth + 1, budget) for v in data]
    if kind is not dict or len(data) != 1:
        raise Malformed(f"not in the wire's grammar: {kind.__name__}")
    (tag, body), = data.items()
    return _decode_tagged(tag, body, depth, budget)


def _decode_tagged(tag: object, body: object, depth: int, budget: _Budget) -> object:
    """A value of Python's own tagged by its kind ($f, $b, $c, $t, $set, $fset, $d, $unsupported, $obj), else one of
    torch's (_decode_torch)."""
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
        items = _keys(items, "set item")
        return set(items) if tag == "$set" else frozenset(items)
    if tag == "$d":
        if type(body) is not list:
            raise Malformed("$d needs a list of pairs")
        budget.spend(len(body))
        pairs = []
        for pair in body:
            if type(pair) is not list or len(pair) != 2:
                raise Malformed("$d needs pairs")
            pairs.append((_decode(pair[0], depth + 1, budget), _decode(pair[1], depth + 1, budget)))
        _keys([k for k, _ in pairs], "dict key")
        return dict(pairs)
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
        if set(body[1]) - {f.name for f in dataclasses.fields(cls)}:
            raise Malformed(f"unknown fields of {cls.__name__}")
        budget.spend(len(body[1]))
        fields = {k: _decode(v, depth + 1, budget) for k, v in body[1].items()}
        try:
            return cls(**fields)
        except Exception as err:  # the class's own validation refused the fields
            return Unsupported(cls.__qualname__, f"refused: {str(err)[:150]}")
    return _decode_torch(tag, body, budget)


def _decode_torch(tag: object, body: object, budget: _Budget) -> object:
    """A torch.dtype, torch.device, torch.Size or tensor (_decode_tensor); Malformed where this side has no torch."""
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
        return _decode_tensor(body, budget)
    raise Malformed(f"unknown tag {str(tag)[:20]!r}")


def _b64(body: object) -> bytes:
    if type(body) is not str or len(body) > 4 * LIMITS.text // 3 + 8:
        raise Malformed("bad base64")
    try:
        return base64.b64decode(body.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise Malformed("bad base64") from None


_HEADER = {"dtype", "shape", "device", "param"}


def _decode_tensor(body: object, budget: _Budget):
    torch = _torch()
    if type(body) is not dict or not _HEADER <= set(body) <= _HEADER | {"blob"}:
        raise Malformed("bad tensor header")
    dtype = _decode({"$dtype": body["dtype"]}, 0, budget)
    shape = body["shape"]
    if type(shape) is not list or len(shape) > 16 or not all(type(s) is int and 0 <= s < 2**40 for s in shape):
        raise Malformed("bad tensor shape")
    if type(body["param"]) is not bool or type(body["device"]) is not str:
        raise Malformed("bad tensor header")
    nbytes = math.prod(shape) * torch.empty(0, dtype=dtype).element_size()
    if "blob" not in body:
        if body["device"] != "meta":
            raise Malformed("a tensor without data")
        if nbytes >= 2**62:  # even a meta tensor's size must be a number PyTorch can hold
            raise Malformed("a meta tensor too large to describe")
        return torch.empty(shape, dtype=dtype, device="meta")
    index = body["blob"]
    if type(index) is not int or not 0 <= index < len(budget.blobs) or index in budget.used:
        raise Malformed("a tensor's data is missing or used twice")
    budget.used.add(index)
    raw = budget.blobs[index]
    if len(raw) != nbytes or nbytes > LIMITS.tensor:
        raise Malformed("tensor data does not match its shape")
    try:
        flat = torch.frombuffer(bytearray(raw), dtype=torch.uint8) if nbytes else torch.empty(0, dtype=torch.uint8)
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
    blobs: list = []
    frame = pack(encode(value, blobs), blobs)
    return decode(*unpack(frame[4:]))


# ---- framing: [4 bytes: body length] then the body:
#      [4: JSON length] [JSON, UTF-8] [4: number of blobs] [8 each: blob lengths] [the blobs' bytes, in order]


def pack(message: object, blobs=()) -> bytes:
    """One framed message: `message` (already encoded) as JSON, and the raw `blobs` its tensors name."""
    body = json.dumps(message, allow_nan=False, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "replace")
    if len(body) > LIMITS.json:
        raise Malformed(f"a message whose JSON part has {len(body):,} bytes, over the limit")
    if len(blobs) > LIMITS.blobs:
        raise Malformed("too many blobs")
    size = 8 + len(body) + 8 * len(blobs) + sum(len(b) for b in blobs)
    if size > LIMITS.message:
        raise Malformed(f"a message of {size:,} bytes, over the limit")
    lengths = [struct.pack(">Q", len(b)) for b in blobs]
    return b"".join([struct.pack(">II", size, len(body)), body, struct.pack(">I", len(blobs)), *lengths, *blobs])


def unpack(body) -> tuple[object, list]:
    """The JSON value and the blobs of one message's body (without its length prefix); Malformed if it is not
    a frame of `pack`'s shape within the limits."""
    view = memoryview(body)
    if len(view) < 8:
        raise Malformed("a frame too short")
    (size,) = struct.unpack(">I", view[:4])
    if size > LIMITS.json or 8 + size > len(view):
        raise Malformed("a JSON part over the limit or past the frame")
    text = bytes(view[4:4 + size])
    (count,) = struct.unpack(">I", view[4 + size:8 + size])
    if count > LIMITS.blobs or 8 + size + 8 * count > len(view):
        raise Malformed("too many blobs")
    lengths = struct.unpack(f">{count}Q", view[8 + size:8 + size + 8 * count])
    at = 8 + size + 8 * count
    if at + sum(lengths) != len(view):
        raise Malformed("blobs that do not fill the frame")
    starts = itertools.accumulate(lengths[:-1], initial=at)
    blobs = [view[start:start + n] for start, n in zip(starts, lengths)]
    try:
        return json.loads(text.decode("utf-8")), blobs
    except (ValueError, RecursionError, UnicodeDecodeError, MemoryError) as err:
        raise Malformed(f"not JSON: {type(err).__name__}") from None
