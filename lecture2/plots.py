"""Figures the notebooks share. Each function returns a matplotlib Figure and shows nothing itself."""
from __future__ import annotations

import math
from collections.abc import Sequence

import torch

__all__ = ["bytes_per_rank", "dtype_ranges"]


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
    fig.tight_layout()
    return fig
