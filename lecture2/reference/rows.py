"""The shipped profiles (`references`) and the rows of reference.table: for each section, a label and what to print
for a profile (None: not measured there); issue 40's H200 ladder, which stands in until a shipped GPU profile holds
the course's own."""
from __future__ import annotations

import math
from collections.abc import Callable

import torch

from .. import fmt, models, profile

_MATMUL_KEYS = ("fp32", "tf32", "bf16", "fp16", "fp8")

# Issue 40 (this course's tracker), measured on an H200 with torch 2.11: a standard GPT-2-small training step (bf16
# autocast where the rung has it, fused AdamW in every rung, batch 16 x 1,024 tokens), MFU against the bf16 dense
# peak. Not a profile of this package (another model, another order of rungs): shown, marked as such, until a shipped
# GPU profile holds the course's own ladder (tools/gpu_checks.sh measures it first).
ISSUE_LADDER = {"name": "h200 (issue 40: GPT-2 small, 16 x 1,024)",
                "mfu": {"fp32": 0.103, "bf16": 0.121, "sdpa": 0.294, "compile": 0.417}}


def references() -> dict[str, dict]:
    """Every shipped profile by name, GPU profiles first (then by name)."""
    loaded = {name: profile.load(name) for name in profile.shipped()}
    return dict(sorted(loaded.items(), key=lambda kv: (kv[1]["device"]["device"] != "cuda", kv[0])))


def gpu_references() -> dict[str, dict]:
    """The shipped profiles measured on a GPU (CUDA)."""
    return {k: v for k, v in references().items() if v["device"]["device"] == "cuda"}


# ---- one row of a table: a label and what to print for a profile (None: not measured there) ----------------

Getter = Callable[[dict], "str | None"]


def _get(p: dict, *keys):
    for k in keys:
        if not isinstance(p, dict) or k not in p:
            return None
        p = p[k]
    return p


def _device(p: dict) -> str:
    d = p["device"]
    if d["device"] == "cpu":
        return f"{d['name']} (CPU, threads={d.get('threads', '?')})"
    return d["name"]


def _memory(p: dict) -> str | None:
    m = _get(p, "device", "memory_bytes")
    return None if m is None else fmt.format_bytes(m, binary=True)


def _matmul(key: str) -> Getter:
    def get(p: dict) -> str | None:
        m = _get(p, "matmul", key)
        if m is None:
            return None
        if "sizes" not in m:
            return "n/a"
        best = max(m["sizes"], key=lambda r: r["flops_per_s"])
        text = f"{fmt.format_rate(best['flops_per_s'])} @ n={best['n']}"
        if p["device"]["device"] == "cuda" and best.get("fraction_of_peak") is not None:
            text += f" = {best['fraction_of_peak']:.0%} of datasheet"
        return text
    return get


def _best(p: dict, key: str) -> float | None:
    m = _get(p, "matmul", key)
    return m.get("best_flops_per_s") if m and "sizes" in m else None


def bf16_over_fp32(p: dict) -> tuple[list[int], float] | None:
    """(sizes, ratio): bf16 FLOP/s over fp32 FLOP/s at the matmul sizes both dtypes ran in profile `p`, the
    geometric mean over those sizes (one size alone is at the mercy of a busy machine); None if none."""
    rows = {k: {r["n"]: r["flops_per_s"] for r in (_get(p, "matmul", k) or {}).get("sizes", [])}
            for k in ("fp32", "bf16")}
    common = sorted(set(rows["fp32"]) & set(rows["bf16"]))
    if not common:
        return None
    log_mean = sum(math.log(rows["bf16"][n] / rows["fp32"][n]) for n in common) / len(common)
    return common, math.exp(log_mean)


def _bf16_over_fp32(p: dict) -> str | None:
    found = bf16_over_fp32(p)
    return None if found is None else f"{found[1]:.2f}x (n={', '.join(map(str, found[0]))})"


def _bandwidth(p: dict) -> str | None:
    b = p.get("bandwidth")
    if not b:
        return None
    text = f"{fmt.format_bytes(b['bytes_per_s'])}/s"
    if b.get("fraction_of_datasheet") is not None:
        text += f" = {b['fraction_of_datasheet']:.0%} of datasheet"
    return text


def _block_size(p: dict) -> str:
    b = p["config"]["block"]
    return f"B={b['B']} T={b['T']} d={b['d']} H={b['n_heads']}"


def _gpt_size(p: dict) -> str:
    g = p["config"]["gpt"]
    return f"L={g['n_layer']} d={g['d_model']} V={g['vocab_size']} B={g['B']} T={g['T']}"


def _pred_counted(section: str) -> Getter:
    def get(p: dict) -> str | None:
        f = _get(p, "models", section)
        if f is None:
            return None
        same = "exact" if f["predicted"] == f["counted"] else f"counted/predicted {f['counted'] / f['predicted']:.4f}"
        return f"{f['counted']:.4g} counted ({same})"
    return get


def _bytes(*keys: str) -> Getter:
    def get(p: dict) -> str | None:
        v = _get(p, "models", *keys)
        return None if v is None else f"{v:,} B ({fmt.format_bytes(v)})"
    return get


def _act_ratio(p: dict) -> str | None:
    a = _get(p, "models", "block_activation_bytes")
    return None if a is None else f"{a['saved_bytes'] / a['lecture_rough_predicted']:.2f}x the rough formula"


def _allocator(p: dict) -> str | None:
    a = _get(p, "models", "block_activation_bytes")
    if a is None:
        return None
    if "held_after_forward" not in a:
        return "(CUDA only)"
    return f"{a['held_after_forward']:,} B ({a['held_after_forward'] / a['saved_bytes'] - 1:+.2%} vs saved)"


def _state(p: dict) -> str | None:
    s = _get(p, "models", "gpt_state_bytes")
    if s is None:
        return None
    return f"{s['held_total']:,} B = 16N {s['held_total'] - s['predicted']:+,} B"


# PyTorch's default cuBLAS workspace (CUBLAS_WORKSPACE_CONFIG ":4096:8" on sm90, ":4096:2:16:8" on other GPUs):
# allocated through the caching allocator for each cuBLAS handle, i.e. for each thread that runs a matmul
_CUBLAS_WORKSPACE = {"sm90": 4096 * 8 * 1024, "other": 4096 * 1024 * 2 + 16 * 1024 * 8}


def _state_rounding(p: dict, n_tensors: int | None) -> int | None:
    """The caching allocator's rounding of the GPT's fp32 training state on the device (each parameter, its
    gradient and Adam's m and v, rounded up to a multiple of 512 bytes), from the profile's own sizes; None when
    the profile's tensor count is not that of its config's GPT (the shapes are then not known)."""
    g = _get(p, "config", "gpt")
    if not isinstance(g, dict):
        return None
    with torch.device("meta"):
        model = models.GPT(models.GPTConfig(**{k: v for k, v in g.items() if k not in ("B", "T")}))
    params = list(model.parameters())
    if n_tensors != 4 * len(params):
        return None
    return 4 * sum(-(t.numel() * 4) % 512 for t in params)


def _state_allocator(p: dict) -> str | None:
    """memory_allocated after the step, and what it holds beyond the state's bytes: the allocator's 512-byte
    rounding (exact, from the shapes) and, beyond that, allocations that are not training state (the cuBLAS
    workspace PyTorch allocates for the autograd thread's first matmul, inside the measured window)."""
    s = _get(p, "models", "gpt_state_bytes")
    if s is None:
        return None
    if "memory_allocated" not in s:
        return "(CUDA only)"
    extra = s["memory_allocated"] - s.get("held_on_device", s["held_total"])
    rounding = _state_rounding(p, s.get("n_tensors"))
    if rounding is None or extra == rounding:
        return f"{s['memory_allocated']:,} B ({extra:+,} B rounding)"
    rest = extra - rounding
    sm90 = _get(p, "device", "capability") == "9.0"
    if rest == _CUBLAS_WORKSPACE["sm90" if sm90 else "other"]:
        what = "= PyTorch's cuBLAS workspace" + (" on sm90" if sm90 else "")
    else:
        what = "not training state (cuBLAS workspaces, other buffers)"
    return f"{s['memory_allocated']:,} B ({rounding:+,} B rounding, {rest:+,} B {what})"


def _ckpt(mode: str, what: str) -> Getter:
    def get(p: dict) -> str | None:
        c = _get(p, "models", "checkpointing", mode)
        if c is None:
            return None
        if what == "seconds":
            return fmt.format_seconds(c["seconds"])
        if what == "peak_memory":
            if "peak_memory" not in c:
                return "(CUDA only)"
            held = f"{fmt.format_bytes(c['peak_memory'])} grads held before"
            if "peak_memory_from_no_grads" not in c:  # profiles before 2026-12 measured this one only
                return held + " (not counted)"
            return f"{fmt.format_bytes(c['peak_memory_from_no_grads'])} incl. grads | {held}"
        return fmt.format_bytes(c["saved_bytes"])
    return get


def _ckpt_grads(p: dict) -> str | None:
    """The bytes of the gradients one forward + backward allocates (every block parameter and the input, fp32):
    counted by a CUDA peak taken with no gradients held before, not by one taken with them held."""
    c = _get(p, "models", "checkpointing")
    if c is None:
        return None
    if "grad_bytes" in c:
        return fmt.format_bytes(c["grad_bytes"])
    d = c["d"]  # a TransformerBlock without biases: 12 d^2 + 2 d parameters
    return fmt.format_bytes(4 * (c["n_layer"] * (12 * d * d + 2 * d) + c["B"] * c["T"] * d))


def _ckpt_ratio(p: dict) -> str | None:
    c = _get(p, "models", "checkpointing")
    if c is None:
        return None
    flops = f", {c['flops_overhead']:+.1%} FLOPs" if "flops_overhead" in c else ""
    return f"{c['saved_bytes_ratio']:.1%} of the bytes{flops}, {c['time_overhead']:+.0%} time"


def _ckpt_size(p: dict) -> str | None:
    c = _get(p, "models", "checkpointing")
    return None if c is None else f"L={c['n_layer']} x block {_block_size(p)}"


def _step(name: str) -> Getter:
    def get(p: dict) -> str | None:
        s = _get(p, "models", "train_step", name)
        if s is None:
            return None
        if "skipped" in s:
            return "n/a"
        mfu = f", MFU {s['mfu']:.1%}" if s.get("mfu") is not None else ""
        return f"{fmt.format_seconds(s['seconds'])}, {s['tokens_per_s']:,.0f} tok/s{mfu}"
    return get


def _rung(key: str) -> Getter:
    def get(p: dict) -> str | None:
        r = _get(p, "models", "ladder", "rungs", key)
        if r is None:
            return None
        if "skipped" in r:
            return "skipped" if r["skipped"].startswith("torch.compile not run") else "n/a"
        s = r["settings"]
        notes = [f"B={s['B']}"] if key == "batch" else []
        if not s["compiled"] and key in ("fused_adamw", "batch"):
            notes.append("not compiled")
        note = f" ({', '.join(notes)})" if notes else ""
        mfu = f", MFU {r['mfu']:.1%}" if r.get("mfu") is not None else ""
        return f"{fmt.format_seconds(r['seconds'])}, {r['tokens_per_s']:,.0f} tok/s{mfu}{note}"
    return get


def _ladder_gpt_size(p: dict) -> str | None:
    g = _get(p, "models", "ladder", "gpt") or _get(p, "config", "gpt")  # the ladder's own GPT, else the profile's
    if g is None:
        return None
    return f"L={g['n_layer']} d={g['d_model']} V={g['vocab_size']} B={g['B']} T={g['T']}"


def _ladder_peak(p: dict) -> str | None:
    peak = _get(p, "models", "ladder", "peak")
    if peak is None:
        return None
    return f"{peak['dtype']} peak {fmt.format_rate(peak['flops_per_s'])}" if peak.get("flops_per_s") else "no peak known"


def ladder_mfu(p: dict) -> dict[str, float]:
    """{rung key: MFU} of the rungs profile `p` measured (none: {})."""
    rungs = _get(p, "models", "ladder", "rungs") or {}
    return {k: r["mfu"] for k, r in rungs.items() if r.get("mfu") is not None}


def ladder_gains(p: dict) -> dict[str, float]:
    """{rung key: its MFU over the MFU of the last rung measured before it} for the rungs profile `p` measured."""
    mfu, gains, before = ladder_mfu(p), {}, None
    for key, _, _ in profile.LADDER:
        if key in mfu:
            if before is not None:
                gains[key] = mfu[key] / before
            before = mfu[key]
    return gains


def _rows(section: str) -> list[tuple[str, Getter]]:
    common = [("device", _device)]
    if section == "dtypes":
        return common + [("memory", _memory)] + [(f"matmul {k} (best)", _matmul(k)) for k in _MATMUL_KEYS] + [
            ("bf16 / fp32, same n", _bf16_over_fp32)]
    if section == "flops":
        return common + [("block size", _block_size),
                         ("block fwd: 24BTd²+4BT²d", _pred_counted("block_forward_flops")),
                         ("GPT size", _gpt_size),
                         ("GPT step: (6N+12LdT)BT", _pred_counted("gpt_train_flops"))]
    if section == "memory":
        return common + [("block size", _block_size),
                         ("act: rough 20BTd+2BT² (x2 fp32)", _bytes("block_activation_bytes", "lecture_rough_predicted")),
                         ("act: saved for backward", _bytes("block_activation_bytes", "saved_bytes")),
                         ("act: saved / rough", _act_ratio),
                         ("act: CUDA allocator", _allocator),
                         ("GPT size", _gpt_size),
                         ("fp32 Adam: 16N", _bytes("gpt_state_bytes", "predicted")),
                         ("fp32 Adam: held", _state),
                         ("fp32 Adam: CUDA allocator", _state_allocator)]
    if section == "checkpointing":
        return common + [("size", _ckpt_size),
                         ("saved: plain", _ckpt("plain", "saved")),
                         ("saved: per-block checkpoint", _ckpt("per_block", "saved")),
                         ("fwd+bwd: plain", _ckpt("plain", "seconds")),
                         ("fwd+bwd: per-block checkpoint", _ckpt("per_block", "seconds")),
                         ("checkpointing keeps / costs", _ckpt_ratio),
                         ("gradients (params + x)", _ckpt_grads),
                         ("CUDA peak: plain", _ckpt("plain", "peak_memory")),
                         ("CUDA peak: checkpointed", _ckpt("per_block", "peak_memory"))]
    if section == "ladder":
        return common + [("GPT size", _ladder_gpt_size), ("MFU divides by", _ladder_peak)] + [
            (f"{i}. {label}", _rung(key)) for i, (key, label, _) in enumerate(profile.LADDER, 1)]
    return common + [(f"matmul {k} (best)", _matmul(k)) for k in _MATMUL_KEYS] + [
        ("copy bandwidth", _bandwidth), ("GPT size", _gpt_size),
        ("train step fp32", _step("fp32")), ("train step bf16", _step("bf16")),
        ("train step bf16 compiled", _step("bf16_compiled"))]
