"""The figures beside reference.table: matmul FLOP/s by size and by dtype, and the MFU ladder, yours beside every
shipped profile. Each returns a matplotlib Figure (or draws on the axes it is given)."""
from __future__ import annotations

from .. import profile
from .rows import _MATMUL_KEYS, ISSUE_LADDER, _best, _get, ladder_mfu, references

# ---- figures ------------------------------------------------------------------------------------------------

_COLORS = {"fp32": "tab:blue", "tf32": "tab:green", "bf16": "tab:orange", "fp16": "tab:red", "fp8": "tab:purple"}
_MARKERS = ["s", "^", "D", "v", "P", "X"]


def plot_matmul_references(ax, dtypes: tuple[str, ...] = ("fp32", "bf16")) -> None:
    """Add every shipped profile's matmul FLOP/s vs n (dashed, hollow markers) to `ax`."""
    refs = references()
    for i, (name, p) in enumerate(refs.items()):
        for k in dtypes:
            m = _get(p, "matmul", k)
            if not m or "sizes" not in m:
                continue
            ax.plot([r["n"] for r in m["sizes"]], [r["flops_per_s"] for r in m["sizes"]], ls="--",
                    marker=_MARKERS[i % len(_MARKERS)], mfc="none", color=_COLORS.get(k, "gray"), alpha=0.8,
                    label=f"{k} {name} (shipped profile)")


def plot_dtypes(mine: dict | None = None):
    """Best matmul FLOP/s per dtype: yours beside every shipped profile (log scale). Returns a matplotlib Figure."""
    import matplotlib.pyplot as plt

    groups = ([("yours", mine)] if mine is not None else []) + list(references().items())
    bars: list[tuple[str, dict[str, float]]] = [
        (f"{name}\n{p['device']['name'][:24]}", {k: _best(p, k) for k in _MATMUL_KEYS if _best(p, k)})
        for name, p in groups]
    keys = [k for k in _MATMUL_KEYS if any(k in v for _, v in bars)]
    fig, ax = plt.subplots(figsize=(8, 3.6))
    width = 0.8 / max(1, len(keys))
    for j, k in enumerate(keys):
        for i, (_, values) in enumerate(bars):
            if k in values:
                ax.bar(i + (j - (len(keys) - 1) / 2) * width, values[k], width, color=_COLORS[k], alpha=0.9)
    from matplotlib.patches import Patch

    handles = [Patch(color=_COLORS[k], label=k) for k in keys]
    ax.set_xticks(range(len(bars)), [label for label, _ in bars], fontsize=8)
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
