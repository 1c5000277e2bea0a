"""The shipped device profiles set beside the student's own run (notebooks 01 and 05-08).

A notebook measures one section of `lecture2.profile` on the student's machine, with the sizes the profile
uses on that kind of device (`profile.config`), so both columns come from the same code:

    mine = reference.measure_here("checkpointing")   # a partial profile of this machine
    print(reference.table("checkpointing", mine))    # yours | every shipped profile (GPU first)

Sections: "dtypes" (01), "flops" (05), "memory" (06), "checkpointing" (07), "mfu" and "ladder" (08). Until a GPU
profile is shipped, the tables of "dtypes" and "mfu" add the H200's datasheet figures, marked as such (a datasheet
is a promise, not a measurement), and every table says how to add the measured one. Until a shipped GPU profile
holds the MFU ladder, the "ladder" table and figure add issue 40's H200 measurement of a GPT-2-small step, marked
as that (not a profile of this package).
Units: FLOP/s, bytes, bytes/s, seconds.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import torch

from . import fmt, hardware, models, profile

__all__ = ["SECTIONS", "DATASHEET_GPU", "ISSUE_LADDER", "references", "gpu_references", "measure_here", "table",
           "bf16_over_fp32", "ladder_gains", "ladder_mfu", "plot_matmul_references", "plot_dtypes", "plot_ladder"]

SECTIONS = ("dtypes", "flops", "memory", "checkpointing", "mfu", "ladder")
DATASHEET_GPU = "h200"  # shown from the datasheet while no measured GPU profile is shipped
_MATMUL_KEYS = ("fp32", "tf32", "bf16", "fp16", "fp8")

# Issue 40 (this course's tracker), measured on an H200 with torch 2.11: a standard GPT-2-small training step (bf16
# autocast where the rung has it, fused AdamW in every rung, batch 16 x 1,024 tokens), MFU against the bf16 dense
# peak. Not a profile of this package (another model, another order of rungs): shown, marked as such, until a shipped
# GPU profile holds the course's own ladder (tools/gpu_checks.sh measures it first).
ISSUE_LADDER = {"name": "h200 (issue 40: GPT-2 small, 16 x 1,024)",
                "mfu": {"fp32": 0.103, "bf16": 0.121, "sdpa": 0.294, "compile": 0.417}}


def _section(section: object) -> str:
    if section not in SECTIONS:
        raise ValueError(f"未知的 section (unknown section) {section!r}; one of: {', '.join(SECTIONS)}")
    return section  # type: ignore[return-value]


def references() -> dict[str, dict]:
    """Every shipped profile by name, GPU profiles first (then by name)."""
    loaded = {name: profile.load(name) for name in profile.shipped()}
    return dict(sorted(loaded.items(), key=lambda kv: (kv[1]["device"]["device"] != "cuda", kv[0])))


def gpu_references() -> dict[str, dict]:
    """The shipped profiles measured on a GPU (CUDA)."""
    return {k: v for k, v in references().items() if v["device"]["device"] == "cuda"}


def measure_here(section: str, device: str | None = None) -> dict:
    """Run the part of the profile that `section` shows, on this machine, at the profile's sizes for it.

    Returns a partial profile (the same keys as a shipped one). Time on a 2-core CPU: dtypes ~2 s,
    flops/memory < 1 s, checkpointing < 1 s, mfu ~5 s, ladder ~5 s (no torch.compile on a CPU); on a GPU a few
    seconds each, the ladder a few minutes (it compiles).
    """
    section = _section(section)
    if device is None:
        device = "cuda" if hardware.detect_device() == "cuda" else "cpu"  # MPS: no profile config, use its CPU
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device 应是 'cpu' 或 'cuda' (profiles measure these two), 得到 {device!r}")
    cfg = profile.config(device)
    mine: dict = {"schema_version": profile.SCHEMA_VERSION, "made": {"command": f"reference.measure_here({section!r})"},
                  "config": cfg, "device": profile.device_info(device), "models": {}}
    if section in ("dtypes", "mfu"):
        mine["matmul"] = profile.matmul_sweep(device, cfg["matmul_sizes"], cfg["matmul_repeat"])
    if section in ("flops", "memory"):
        mine["models"] = profile.model_counts(cfg, device)
    if section == "checkpointing":
        mine["models"]["checkpointing"] = profile.checkpointing(cfg, device, cfg["step_repeat"])
    if section == "ladder":  # torch.compile only on a GPU: on a CPU it compiles C++ for tens of seconds
        mine["models"]["ladder"] = profile.mfu_ladder(cfg, device, cfg["step_repeat"], compile_model=device == "cuda")
    if section == "mfu":
        mine["bandwidth"] = profile.bandwidth(device, cfg["copy_bytes"], cfg["matmul_repeat"])
        mine["models"]["train_step"] = profile.train_step(cfg, device, cfg["step_repeat"],
                                                          profile.peaks(mine["matmul"], device))
    return mine


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


def _datasheet_rows(section: str, spec: hardware.GPUSpec) -> dict[str, str]:
    """The datasheet's figures for the rows that have one (peaks, memory, bandwidth), marked as such."""
    rows = {"device": f"{spec.full_name} (datasheet)"}
    if section == "dtypes":
        rows["memory"] = f"{fmt.format_bytes(spec.memory_bytes, binary=True)} (as the device reports it)"
    for k in _MATMUL_KEYS:
        if k in spec.peak:
            rows[f"matmul {k} (best)"] = f"peak {fmt.format_rate(spec.peak[k])}"
    if "bf16" in spec.peak:
        rows["bf16 / fp32, same n"] = f"{spec.peak['bf16'] / spec.peak['fp32']:.2f}x (peaks)"
    rows["copy bandwidth"] = f"peak {fmt.format_bytes(spec.bandwidth_bytes_per_s)}/s"
    return rows


def table(section: str, mine: dict | None = None) -> str:
    """Your figures (a `measure_here` result; None: references only) beside every shipped profile.

    Rows the section has no figure for print "-". While no GPU profile is shipped, the "dtypes" and "mfu"
    tables add a column of the H200's datasheet peaks, and every table ends with how to add a measured one.
    """
    section = _section(section)
    if mine is not None and not (isinstance(mine, dict) and "device" in mine and "config" in mine):
        raise TypeError("mine 应是 reference.measure_here(...) 的结果 (a partial profile dict), "
                        f"得到 {type(mine).__name__}")
    rows = _rows(section)
    columns: list[tuple[str, dict[str, str]]] = []
    profiles = ([("yours", mine)] if mine is not None else []) + list(references().items())
    has_gpu = any(p["device"]["device"] == "cuda" for _, p in profiles[1 if mine is not None else 0:])
    if section == "ladder":  # a shipped profile made before the ladder existed has nothing to show here
        profiles = [(name, p) for name, p in profiles if name == "yours" or _get(p, "models", "ladder")]
    for name, p in profiles:
        values = {}
        for label, get in rows:
            try:
                values[label] = get(p)
            except (KeyError, TypeError, ZeroDivisionError):  # a profile from an older schema: show a gap
                values[label] = None
        columns.append((name, {k: v for k, v in values.items() if v is not None}))
    if not has_gpu and section in ("dtypes", "mfu"):
        columns.append((f"{DATASHEET_GPU} datasheet", _datasheet_rows(section, hardware.gpu(DATASHEET_GPU))))
    gpu_ladder = any(ladder_mfu(p) for _, p in profiles[1 if mine is not None else 0:] if p["device"]["device"] == "cuda")
    if section == "ladder" and not gpu_ladder:
        issue = {f"{i}. {label}": f"MFU {ISSUE_LADDER['mfu'][key]:.1%}" if key in ISSUE_LADDER["mfu"] else "-"
                 for i, (key, label, _) in enumerate(profile.LADDER, 1)}
        columns.append((ISSUE_LADDER["name"], {"device": "NVIDIA H200 (torch 2.11)", "MFU divides by": "as issue 40 reports it",
                                               "GPT size": "L=12 d=768 V=50304 B=16 T=1024", **issue}))
    labels = [label for label, _ in rows if any(label in values for _, values in columns)]
    w0 = max(len(label) for label in labels)
    widths = [max(len(name), *(len(values.get(label, "-")) for label in labels)) for name, values in columns]
    lines = ["  ".join([" " * w0] + [name.ljust(w) for (name, _), w in zip(columns, widths)]).rstrip(),
             "  ".join(["-" * w0] + ["-" * w for w in widths])]
    for label in labels:
        cells = [values.get(label, "-").ljust(w) for (_, values), w in zip(columns, widths)]
        lines.append("  ".join([label.ljust(w0)] + cells).rstrip())
    for name, p in profiles:
        if name != "yours":
            made = p.get("made", {})
            lines.append(f"[{name}] {made.get('date', '?')}: {made.get('command', '?')}")
    if section == "ladder" and not gpu_ladder:
        lines.append(f"[{ISSUE_LADDER['name']}] issue 40's measurement (fused AdamW in every rung), not a profile of "
                     "this package; the course's own GPU ladder: bash tools/gpu_checks.sh (its first step) on a GPU.")
    if not has_gpu:
        lines.append("还没有在 GPU 上实测的参考 profile (no measured GPU profile shipped yet)"
                     + ("：datasheet 一列是数据手册上的峰值，不是测量。" if section in ("dtypes", "mfu") else "。")
                     + f"在 GPU 上运行 python -m lecture2 profile --out lecture2/profiles/{DATASHEET_GPU}.json 即可补上。")
    return "\n".join(lines)


# ---- figures ------------------------------------------------------------------------------------------------

_COLORS = {"fp32": "tab:blue", "tf32": "tab:green", "bf16": "tab:orange", "fp16": "tab:red", "fp8": "tab:purple"}
_MARKERS = ["s", "^", "D", "v", "P", "X"]


def plot_matmul_references(ax, dtypes: tuple[str, ...] = ("fp32", "bf16")) -> None:
    """Add every shipped profile's matmul FLOP/s vs n (dashed, hollow markers) to `ax`; while no GPU profile
    is shipped, add the H200 datasheet peaks as dotted lines labelled "datasheet, not measured"."""
    refs = references()
    for i, (name, p) in enumerate(refs.items()):
        for k in dtypes:
            m = _get(p, "matmul", k)
            if not m or "sizes" not in m:
                continue
            ax.plot([r["n"] for r in m["sizes"]], [r["flops_per_s"] for r in m["sizes"]], ls="--",
                    marker=_MARKERS[i % len(_MARKERS)], mfc="none", color=_COLORS.get(k, "gray"), alpha=0.8,
                    label=f"{k} {name} (shipped profile)")
    if not any(p["device"]["device"] == "cuda" for p in refs.values()):
        spec = hardware.gpu(DATASHEET_GPU)
        for k in dtypes:
            if k in spec.peak:
                ax.axhline(spec.peak[k], color=_COLORS.get(k, "gray"), ls=":", lw=1.2,
                           label=f"{k} {DATASHEET_GPU} datasheet peak (not measured)")


def plot_dtypes(mine: dict | None = None):
    """Best matmul FLOP/s per dtype: yours beside every shipped profile (log scale); while no GPU profile is
    shipped, the H200's datasheet peaks as hatched bars. Returns a matplotlib Figure."""
    import matplotlib.pyplot as plt

    groups = ([("yours", mine)] if mine is not None else []) + list(references().items())
    bars: list[tuple[str, dict[str, float], bool]] = [
        (f"{name}\n{p['device']['name'][:24]}", {k: _best(p, k) for k in _MATMUL_KEYS if _best(p, k)}, False)
        for name, p in groups]
    if not any(p["device"]["device"] == "cuda" for _, p in groups[1 if mine is not None else 0:]):
        spec = hardware.gpu(DATASHEET_GPU)
        bars.append((f"{DATASHEET_GPU}\ndatasheet (not measured)", dict(spec.peak), True))
    keys = [k for k in _MATMUL_KEYS if any(k in v for _, v, _ in bars)]
    fig, ax = plt.subplots(figsize=(8, 3.6))
    width = 0.8 / max(1, len(keys))
    for j, k in enumerate(keys):
        for i, (_, values, datasheet) in enumerate(bars):
            if k in values:
                ax.bar(i + (j - (len(keys) - 1) / 2) * width, values[k], width, color=_COLORS[k],
                       hatch="//" if datasheet else None, alpha=0.5 if datasheet else 0.9)
    from matplotlib.patches import Patch

    handles = [Patch(color=_COLORS[k], label=k) for k in keys]
    if any(datasheet for _, _, datasheet in bars):
        handles.append(Patch(facecolor="white", edgecolor="gray", hatch="//", label="datasheet peak"))
    ax.set_xticks(range(len(bars)), [label for label, _, _ in bars], fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("matmul FLOP/s (best)")
    ax.set_title("matmul FLOP/s by dtype: your machine vs the references")
    ax.legend(handles=handles, fontsize=8, ncol=len(handles))
    fig.tight_layout()
    return fig


def plot_ladder(mine: dict | None = None):
    """The MFU ladder as grouped bars, a group per rung: yours (a `measure_here("ladder")` result) beside every
    shipped profile that holds a ladder, and issue 40's H200 measurement while no shipped GPU profile holds one
    (hatched: not this package's profile). A rung not measured in a column has no bar. Returns a Figure."""
    import matplotlib.pyplot as plt

    groups = ([("yours", mine)] if mine is not None else []) + list(references().items())
    series = [(f"{name} ({p['device']['name'][:20]})", ladder_mfu(p), False) for name, p in groups if ladder_mfu(p)]
    if not any(ladder_mfu(p) for name, p in groups if name != "yours" and p["device"]["device"] == "cuda"):
        series.append((ISSUE_LADDER["name"], ISSUE_LADDER["mfu"], True))
    keys = [key for key, _, _ in profile.LADDER]
    fig, ax = plt.subplots(figsize=(9, 3.4))
    width = 0.8 / max(1, len(series))
    for j, (name, mfu, borrowed) in enumerate(series):
        xs = [i + (j - (len(series) - 1) / 2) * width for i, k in enumerate(keys) if k in mfu]
        ys = [100 * mfu[k] for k in keys if k in mfu]
        bars = ax.bar(xs, ys, width, label=name, hatch="//" if borrowed else None, alpha=0.6 if borrowed else 0.9)
        ax.bar_label(bars, fmt="%.0f", fontsize=7)
    ax.set_xticks(range(len(keys)), [label.replace("scaled_dot_product_attention", "SDPA") for _, label, _ in profile.LADDER],
                  fontsize=8, rotation=15)
    ax.set_ylabel("MFU (%)")
    ax.set_title("the MFU ladder: each rung adds one change to the rungs before it")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
