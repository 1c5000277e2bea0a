"""The shipped device profiles set beside the student's own run (notebooks 01 and 05-08).

A notebook measures one section of `lecture2.profile` on the student's machine, with the sizes the profile
uses on that kind of device (`profile.config`), so both columns come from the same code:

    mine = reference.measure_here("checkpointing")   # a partial profile of this machine
    print(reference.table("checkpointing", mine))    # yours | every shipped profile (GPU first)

Sections: "dtypes" (01), "flops" (05), "memory" (06), "checkpointing" (07), "mfu" and "ladder" (08). The shipped
profiles are a CPU's and an H200's (lecture2/profiles/). Until a shipped GPU profile holds the MFU ladder, the "ladder" table and figure add issue 40's H200 measurement of a GPT-2-small step, marked
as that (not a profile of this package).
Units: FLOP/s, bytes, bytes/s, seconds.

One name space, three rooms: this module (measuring a section here, the table), `rows` (the shipped profiles and
what each row of a table reads from a profile) and `figures` (the plots beside them).
"""
from __future__ import annotations

from .. import hardware, profile
from .figures import plot_dtypes, plot_ladder, plot_matmul_references
from .rows import (ISSUE_LADDER, _get, _rows, bf16_over_fp32, gpu_references, ladder_gains, ladder_mfu,
                   references)

__all__ = ["SECTIONS", "ISSUE_LADDER", "references", "gpu_references", "measure_here", "table",
           "bf16_over_fp32", "ladder_gains", "ladder_mfu", "plot_matmul_references", "plot_dtypes", "plot_ladder"]

SECTIONS = ("dtypes", "flops", "memory", "checkpointing", "mfu", "ladder")


def _section(section: object) -> str:
    if section not in SECTIONS:
        raise ValueError(f"未知的 section (unknown section) {section!r}; one of: {', '.join(SECTIONS)}")
    return section  # type: ignore[return-value]


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


def table(section: str, mine: dict | None = None) -> str:
    """Your figures (a `measure_here` result; None: references only) beside every shipped profile.

    Rows the section has no figure for print "-"; each shipped profile's column ends with the command and date
    that made it.
    """
    section = _section(section)
    if mine is not None and not (isinstance(mine, dict) and "device" in mine and "config" in mine):
        raise TypeError("mine 应是 reference.measure_here(...) 的结果 (a partial profile dict), "
                        f"得到 {type(mine).__name__}")
    rows = _rows(section)
    columns: list[tuple[str, dict[str, str]]] = []
    profiles = ([("yours", mine)] if mine is not None else []) + list(references().items())
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
    return "\n".join(lines)
