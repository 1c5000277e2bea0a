"""The profile's GEMM sweeps and its bandwidth: achieved FLOP/s of square matmuls and of real transformer GEMM
shapes per dtype, with the fraction of the peak that applies (`hardware.applicable_peak`), and the bytes/s of a large
copy. Times are the best of a few calls (seconds)."""
from __future__ import annotations

import contextlib

import torch

from .. import hardware, measure

_DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def _seconds(fn, device: str, repeat: int, warmup: int = 1) -> float:
    """The best of `repeat` timed calls: on a shared machine a neighbour slows some calls, never speeds one."""
    return measure.benchmark(fn, warmup=warmup, repeat=repeat, device=device).best


def _gemm_fn(key: str, m: int, n: int, k: int, device: str):
    """A zero-argument M x K by K x N GEMM in dtype `key`, or a ValueError saying why it cannot run here."""
    if key == "fp8":
        if device != "cuda" or torch.cuda.get_device_capability() < (8, 9):
            raise ValueError("fp8 matmul needs CUDA compute capability >= 8.9 (Ada, Hopper or newer)")
        a = torch.randn(m, k, device=device).to(torch.float8_e4m3fn)
        b = torch.randn(n, k, device=device).to(torch.float8_e4m3fn).t()  # column-major, as _scaled_mm wants
        one = torch.ones((), device=device)
        return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    if key == "tf32" and device != "cuda":
        raise ValueError("tf32 is a CUDA tensor-core mode")
    a = torch.randn(m, k, device=device, dtype=_DTYPES[key])
    b = torch.randn(k, n, device=device, dtype=_DTYPES[key])
    return lambda: a @ b


def _peak_for(key: str, device: str) -> tuple[float | None, str | None]:
    """`hardware.applicable_peak` of dtype `key` on `device` and its source; (None, None) where none applies (an
    unknown GPU, a dtype its datasheet row lacks)."""
    try:
        peak = hardware.applicable_peak(key, device)
    except (hardware.UnknownGPU, ValueError):
        return None, None
    return peak.flops_per_s, peak.source


@contextlib.contextmanager
def _tf32(enabled: bool):
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = enabled
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old


def _sweep(what: str, key: str, device: str, shapes: list[tuple[int, int, int]], names: list[str], repeat: int,
           progress=None) -> dict:
    """Achieved FLOP/s (2MNK / best time) of dtype `key` on each (m, n, k) of `shapes` (each called `names[i]` in the
    progress lines of sweep `what`), with the fraction of the peak
    that applies (`hardware.applicable_peak`). Returns {"rows": [{"m", "n", "k", "seconds", "flops_per_s",
    "fraction_of_peak"}], "peak_flops_per_s", "peak_source"(, "stopped": why the shapes after the last row did
    not run)} or {"skipped": why} when none ran."""
    rows, why = [], None
    try:
        for (m, n, k), name in zip(shapes, names):
            with _tf32(key == "tf32"):
                fn = _gemm_fn(key, m, n, k, device)
                seconds = _seconds(fn, device, repeat)
            rows.append({"m": m, "n": n, "k": k, "seconds": seconds, "flops_per_s": 2 * m * n * k / seconds})
            del fn
            if progress:
                progress(f"{what} {key} {name}")
    except (ValueError, RuntimeError, TypeError, NotImplementedError) as err:  # out of memory included
        why = f"{type(err).__name__}: {(str(err).splitlines() or [''])[0]}"
        if progress:
            progress(f"{what} {key} stopped", steps=len(shapes) - len(rows))
    if not rows:
        return {"skipped": why}
    peak, source = _peak_for(key, device)
    for r in rows:
        r["fraction_of_peak"] = r["flops_per_s"] / peak if peak else None
    return {"rows": rows, "peak_flops_per_s": peak, "peak_source": source, **({"stopped": why} if why else {})}


def matmul_sweep(device: str, sizes: dict[str, list[int]], repeat: int, progress=None) -> dict:
    """Achieved FLOP/s (2n^3 / best time) per dtype and size, with the fraction of the peak that applies.

    Returns {dtype: {"sizes": [{"n", "seconds", "flops_per_s", "fraction_of_peak"}], "best_flops_per_s",
    "peak_flops_per_s", "peak_source"}} or {dtype: {"skipped": why}}. The peak is `hardware.applicable_peak`'s for
    the dtype: on CPU the best call of `hardware.cpu_peak`'s own sweep on the current thread count, an upper bound
    taken apart from this sweep (a point lands above it only if every call of that sweep was slowed by a busier
    machine).
    """
    result: dict = {}
    for key, ns in sizes.items():
        swept = _sweep("matmul", key, device, [(n, n, n) for n in ns], [str(n) for n in ns], repeat, progress)
        if "rows" in swept:
            rows = [{"n": r["n"], "seconds": r["seconds"], "flops_per_s": r["flops_per_s"],
                     "fraction_of_peak": r["fraction_of_peak"]} for r in swept.pop("rows")]
            swept = {"sizes": rows, "best_flops_per_s": max(r["flops_per_s"] for r in rows), **swept}
        result[key] = swept
    return result


def gemm_shape_sweep(device: str, spec: dict, repeat: int, progress=None) -> dict:
    """Achieved FLOP/s (2MNK / best time) of each transformer GEMM shape in `spec["shapes"]` for each dtype of
    `spec["dtypes"]`, with the fraction of the peak that applies (as `matmul_sweep`). Returns
    {dtype: {"shapes": [{"m", "n", "k", "seconds", "flops_per_s", "fraction_of_peak"}], "peak_flops_per_s",
    "peak_source"}} or {dtype: {"skipped": why}}."""
    result: dict = {}
    for key in spec["dtypes"]:
        shapes = [tuple(s) for s in spec["shapes"]]
        swept = _sweep("gemm", key, device, shapes, [f"{m}x{n}x{k}" for m, n, k in shapes], repeat, progress)
        result[key] = {"shapes": swept.pop("rows"), **swept} if "rows" in swept else swept
    return result


def bandwidth(device: str, n_bytes: int, repeat: int) -> dict:
    """Achieved bytes/s of `dst.copy_(src)` on `n_bytes` of fp32: 2 x n_bytes move (read src, write dst)."""
    src = torch.randn(n_bytes // 4, device=device)
    dst = torch.empty_like(src)
    seconds = _seconds(lambda: dst.copy_(src), device, repeat)
    result = {"op": "copy", "bytes": n_bytes, "bytes_moved": 2 * n_bytes, "seconds": seconds,
              "bytes_per_s": 2 * n_bytes / seconds}
    if device == "cuda":
        with contextlib.suppress(hardware.UnknownGPU):
            spec = hardware.gpu_from_device_name(torch.cuda.get_device_name())
            result["datasheet_bytes_per_s"] = spec.bandwidth_bytes_per_s
            result["fraction_of_datasheet"] = result["bytes_per_s"] / spec.bandwidth_bytes_per_s
    return result
