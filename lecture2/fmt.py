"""Numbers for people: bytes, FLOPs, FLOP/s and seconds as short strings with their units."""
from __future__ import annotations

import math
import numbers

__all__ = ["format_bytes", "format_flops", "format_rate", "format_seconds"]

_SI = [(1e24, "Y"), (1e21, "Z"), (1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K")]
_BINARY = [(2**50, "PiB"), (2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")]


def _number(value: object, what: str) -> float:
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise TypeError(f"{what} 应是一个数 (a real number)，得到 {type(value).__name__}")
    value = float(value)
    if math.isnan(value):
        raise ValueError(f"{what} 是 NaN")
    return value


def _si(value: float, unit: str, digits: int) -> str:
    for scale, prefix in _SI:
        if abs(value) >= scale:
            return f"{value / scale:.{digits}f} {prefix}{unit}"
    return f"{value:.{digits}f} {unit}"


def format_bytes(n: float, binary: bool = False, digits: int = 2) -> str:
    """Bytes as "14.00 GB" (decimal, 10**9) or, with binary=True, "13.04 GiB" (2**30)."""
    n = _number(n, "bytes")
    if not binary:
        return _si(n, "B", digits)
    for scale, unit in _BINARY:
        if abs(n) >= scale:
            return f"{n / scale:.{digits}f} {unit}"
    return f"{n:.0f} B"


def format_flops(n: float, digits: int = 3) -> str:
    """A FLOP count in scientific notation, e.g. "8.400e+22 FLOPs"."""
    return f"{_number(n, 'FLOPs'):.{digits}e} FLOPs"


def format_rate(flops_per_s: float, digits: int = 1) -> str:
    """FLOP/s with an SI prefix, e.g. "989.4 TFLOP/s"."""
    return _si(_number(flops_per_s, "FLOP/s"), "FLOP/s", digits)


def format_seconds(s: float) -> str:
    """A duration in the unit that reads best: ns, µs, ms, s, min, h or days."""
    s = _number(s, "seconds")
    if s < 0:
        raise ValueError(f"时长不能为负 (negative duration): {s}")
    for limit, scale, unit in ((1e-6, 1e9, "ns"), (1e-3, 1e6, "µs"), (1, 1e3, "ms"), (60, 1, "s"),
                               (3600, 1 / 60, "min"), (86400, 1 / 3600, "h")):
        if s < limit:
            return f"{s * scale:.3g} {unit}"
    return f"{s / 86400:.3g} days"
