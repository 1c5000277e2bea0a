"""Figures the notebooks share. Each function returns a matplotlib Figure and shows nothing itself."""
from __future__ import annotations

import math
from collections.abc import Sequence

import torch

__all__ = ["bytes_per_rank", "dtype_ranges", "matmul_rates", "pipeline_timeline", "roofline", "step_parts",
           "step_timeline"]


def matplotlib_ticker():
    import matplotlib.ticker

    return matplotlib.ticker


def _pyplot():
    import matplotlib.pyplot as plt  # imported on first use: the package itself never needs a display

    return plt


def dtype_ranges(dtypes: Sequence[torch.dtype] = (torch.float32, torch.bfloat16, torch.float16,
                                                 torch.float8_e5m2, torch.float8_e4m3fn)):
    """Two panels from `torch.finfo`: the range each dtype covers (smallest subnormal to max, log2 scale,
    the normal range darker), and its precision (eps, the spacing just above 1.0)."""
    plt = _pyplot()
    names = [str(d).replace("torch.", "") for d in dtypes]
    fig, (ax_range, ax_eps) = plt.subplots(1, 2, figsize=(11, 3.2), gridspec_kw={"width_ratios": [3, 1.3]})
    for row, dtype in enumerate(dtypes):
        info = torch.finfo(dtype)
        subnormal = info.smallest_normal * info.eps  # 2**(emin - m)
        lo, lo_normal, hi = math.log2(subnormal), math.log2(info.smallest_normal), math.log2(info.max)
        ax_range.barh(row, hi - lo, left=lo, color="#c6dbef")
        ax_range.barh(row, hi - lo_normal, left=lo_normal, color="#3182bd")
        ax_eps.barh(row, -math.log2(info.eps), color="#e6550d")
        ax_eps.text(-math.log2(info.eps), row, f" 2^{math.log2(info.eps):.0f}", va="center", fontsize=8)
    for x, label in ((math.log2(70000), "70000"), (math.log2(1e-8), "1e-8")):
        ax_range.axvline(x, color="k", ls="--", lw=0.8)
        ax_range.text(x, len(dtypes) - 0.4, label, ha="center", fontsize=8)
    ax_range.set_yticks(range(len(dtypes)), names)
    ax_eps.set_yticks(range(len(dtypes)), [])
    ax_range.set_xlabel("log2 |x|  (light: subnormal, dark: normal range)")
    ax_eps.set_xlabel("precision: -log2(eps)  (bits)")
    ax_range.set_title("range")
    ax_eps.set_title("precision")
    fig.tight_layout()
    return fig


def bytes_per_rank(predicted: dict[str, tuple[Sequence[float], Sequence[float]]],
                   measured: dict[str, tuple[Sequence[float], Sequence[float]]],
                   ylabel: str = "bytes per parameter per rank", title: str | None = None):
    """Bytes each rank holds against the number of ranks (notebook 10): for each label (e.g. a ZeRO stage) a
    predicted line and measured points, both given as (ranks, values) in the caller's units; log-log axes."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (label, (ranks, values)) in enumerate(predicted.items()):
        color = colors[i % len(colors)]
        ax.plot(ranks, values, "-", color=color, label=f"{label} (predicted)")
        if label in measured:
            ax.plot(*measured[label], "o", color=color, markersize=7, markerfacecolor="none", markeredgewidth=2,
                    label=f"{label} (measured)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    for axis in (ax.xaxis, ax.yaxis):  # 1, 2, 4, ... and 0.0625 rather than 2^k
        axis.set_major_formatter(matplotlib_ticker().FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel("ranks (GPUs) n")
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    return fig


# ---- notebook 11: a pipeline's schedule, and a planned step beside a published one ------------------------------


def pipeline_timeline(sim):
    """A simulated pipeline schedule (lecture2.planner.simulate) as a timeline: one row per stage (stage 0 on top),
    each forward (blue) and backward (orange) of a chunk a bar labelled with its micro-batch; the gaps are the
    bubble. Time in the simulation's units (a forward 1, a backward 2). Returns a Figure."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 0.5 + 0.45 * sim.pp))
    for stage, kind, mb, chunk, start, end in sim.events:
        y = sim.pp - 1 - stage
        ax.broken_barh([(start, end - start)], (y - 0.4, 0.8), color="#6baed6" if kind == "F" else "#fd8d3c",
                       edgecolor="white")
        label = str(mb) if sim.virtual == 1 else f"{mb}.{chunk}"
        ax.text((start + end) / 2, y, label, ha="center", va="center", fontsize=7)
    ax.set_yticks(range(sim.pp), [f"stage {s}" for s in reversed(range(sim.pp))])
    ax.set_xlim(0, sim.makespan)
    ax.set_xlabel("time (a forward 1, a backward 2)")
    ax.set_title(f"p={sim.pp}, m={sim.micro_batches}, v={sim.virtual}: blue forward, orange backward "
                 f"(the micro-batch{'' if sim.virtual == 1 else '.chunk'}); stage 0 idle {sim.bubble:.0%} of the time",
                 fontsize=9)
    fig.tight_layout()
    return fig


def step_parts(parts: dict[str, float], reported_s: float, reported_label: str, min_share: float = 0.005):
    """A planned step as a stacked bar of its named parts (seconds; parts under `min_share` of the step left out)
    beside a reported step time (`reported_label`, e.g. a paper's MFU turned into seconds), drawn black so that no
    part shares its colour. Returns a Figure."""
    plt = _pyplot()
    total = sum(parts.values())
    shown = {name: s for name, s in parts.items() if s > min_share * total}
    colors = [c for c in plt.get_cmap("tab10").colors if abs(c[0] - c[1]) + abs(c[1] - c[2]) > 0.05]  # no grey
    fig, ax = plt.subplots(figsize=(8, 2.4))
    left = 0.0
    for i, (name, seconds) in enumerate(shown.items()):
        ax.barh(["planned"], [seconds], left=left, color=colors[i % len(colors)], label=name.replace("compute: ", ""))
        left += seconds
    ax.barh([reported_label], [reported_s], color="black")
    ax.set_xlabel("seconds per step (one GPU's view)")
    ax.legend(fontsize=7, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.5))
    fig.tight_layout()
    return fig


# ---- notebook 08: a training step's timeline from the profiler's trace ------------------------------------------

_PHASE_COLORS = {"data": "#9467bd", "forward": "#1f77b4", "backward": "#ff7f0e", "optimizer": "#2ca02c"}
_MATMUL_WORDS = ("mm", "matmul", "linear", "Mm", "Linear")


def _is_matmul(name: str) -> bool:
    return any(word in name for word in _MATMUL_WORDS)


def step_timeline(trace, phases: Sequence[str] = ("data", "forward", "backward", "optimizer")):
    """A training step drawn from its Chrome trace (the file `prof.export_chrome_trace` writes, or its
    parsed JSON): one row of phases (the `torch.profiler.record_function` ranges named in `phases`), one
    of the top-level CPU operators (matmuls dark, everything else light) and, when the trace has GPU
    kernels, one of the kernels. Time in ms from the start of the first phase. Returns a Figure."""
    import json
    import os

    plt = _pyplot()
    if isinstance(trace, (str, os.PathLike)):
        with open(trace) as f:
            trace = json.load(f)
    events = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X" and "dur" in e]
    marks = [e for e in events if e.get("cat") == "user_annotation" and e.get("name") in phases]
    if not marks:
        raise ValueError(f"trace 里没有这些 record_function 区间 (no ranges named {list(phases)}) in the trace")
    t0 = min(e["ts"] for e in marks)
    t1 = max(e["ts"] + e["dur"] for e in marks)
    main_tid = marks[0].get("tid")
    ops = sorted((e for e in events if e.get("cat") == "cpu_op" and e.get("tid") == main_tid and t0 <= e["ts"] <= t1),
                 key=lambda e: (e["ts"], -e["dur"]))
    top, end = [], -math.inf  # operators not nested inside another one
    for e in ops:
        if e["ts"] >= end:
            top.append(e)
            end = e["ts"] + e["dur"]
    kernels = [e for e in events if e.get("cat") == "kernel" and e["ts"] >= t0]
    rows = ["phases", "CPU operators"] + (["GPU kernels"] if kernels else [])
    fig, ax = plt.subplots(figsize=(11, 1.0 + 0.6 * len(rows)))

    def ms(x: float) -> float:
        return (x - t0) / 1e3

    y = len(rows) - 1
    for e in marks:
        ax.broken_barh([(ms(e["ts"]), e["dur"] / 1e3)], (y - 0.4, 0.8), color=_PHASE_COLORS.get(e["name"], "gray"),
                       label=f"{e['name']} {e['dur'] / 1e3:.1f} ms")
        if e["dur"] > 0.08 * (t1 - t0):  # a label only where it fits; the legend names every phase
            ax.text(ms(e["ts"]) + e["dur"] / 2e3, y, f"{e['name']}\n{e['dur'] / 1e3:.1f} ms", ha="center", va="center",
                    fontsize=7, color="white")
    for row, chosen in ((y - 1, top), (y - 2, kernels)):
        if row < 0 or not chosen:
            continue
        for matmul in (False, True):
            spans = [(ms(e["ts"]), max(e["dur"] / 1e3, 1e-3)) for e in chosen if _is_matmul(e["name"]) == matmul]
            ax.broken_barh(spans, (row - 0.4, 0.8), color="#08519c" if matmul else "#9ecae1",
                           label=("matmul operators" if matmul else "other operators") if row == y - 1 else None)
    ax.set_yticks(range(len(rows)), list(reversed(rows)))
    ax.set_xlabel("time since the step started (ms)")
    ax.set_xlim(0, ms(t1) * 1.01)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7)
    ax.set_title("one training step, from the profiler's trace")
    fig.tight_layout()
    return fig


# ---- notebook 08: achieved FLOP/s against the roof of each dtype -------------------------------------------------

_DTYPE_COLORS = {"fp32": "tab:blue", "tf32": "tab:green", "bf16": "tab:orange", "fp16": "tab:red", "fp8": "tab:purple"}


def _key(dtype) -> str:
    from . import hardware

    return hardware.dtype_key(dtype)


def matmul_rates(achieved: dict, roofs: dict, device: str = "", references: bool = True):
    """Achieved FLOP/s of n x n matmuls against n (log-log), a line per dtype, and each dtype's peak as a dashed
    line of its colour. `achieved`: {(dtype, n): FLOP/s}; `roofs`: {dtype: hardware.Roof}; `references`: add the
    shipped profiles' curves (`reference.plot_matmul_references`). Returns a Figure."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(10, 4))
    for dtype, roof in roofs.items():
        color = _DTYPE_COLORS.get(_key(dtype), "gray")
        ns = sorted(n for dt, n in achieved if dt == dtype)
        ax.plot(ns, [achieved[dtype, n] for n in ns], "o-", color=color, label=f"{_key(dtype)} measured (median)")
        ax.axhline(roof.peak_flops_per_s, color=color, ls=":", lw=1.2, label=f"{_key(dtype)} peak here")
    if references:
        from . import reference

        reference.plot_matmul_references(ax, tuple(_key(dt) for dt in roofs))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("matrix size n (n×n @ n×n)")
    ax.set_ylabel("achieved FLOP/s")
    ax.set_title(f"matmul FLOP/s vs size and dtype{f' on {device}' if device else ''}")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1, 0.5))
    fig.tight_layout()
    return fig


def roofline(roofs: dict, points: dict):
    """The roofline of each dtype, min(peak, I x bandwidth) against the arithmetic intensity I (FLOP/byte), in its
    colour, with measured points: `points` {label: (dtype, [(intensity, FLOP/s), ...])}. The title says how high the
    highest point reaches against its own roof (a point above it means the roof was measured at a busier moment, or
    the timing is wrong). Returns a Figure."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    intensities = [2.0**k for k in range(-6, 13)]
    for dtype, roof in roofs.items():
        ax.plot(intensities, [roof.attainable(i) for i in intensities], color=_DTYPE_COLORS.get(_key(dtype), "gray"),
                label=f"roof {_key(dtype)}: min({roof.peak_flops_per_s / 1e9:,.0f} GFLOP/s, "
                      f"I × {roof.bandwidth_bytes_per_s / 1e9:,.0f} GB/s)")
    highest = 0.0
    markers = iter("os^Dv")
    for label, (dtype, xy) in points.items():
        roof = roofs[dtype]
        ax.plot([x for x, _ in xy], [y for _, y in xy], next(markers, "o"), mfc="none", mew=1.5,
                color=_DTYPE_COLORS.get(_key(dtype), "gray"), label=label)
        highest = max([highest] + [y / roof.attainable(x) for x, y in xy])
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity I (FLOP / byte)")
    ax.set_ylabel("FLOP/s")
    ax.set_title(f"roofline: the highest point reaches {highest:.0%} of its own roof", fontsize=10)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.highest_share = highest  # what the title says, for a caller that checks it
    return fig
