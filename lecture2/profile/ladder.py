"""The MFU ladder (notebook 08): the course's GPT from naive to tuned, one change a rung, each rung's MFU against
one peak (`hardware.training_peak`)."""
from __future__ import annotations

import torch

from .. import fmt, hardware
from .modelruns import _gpt, _gpt_flops_per_token
from .sweeps import _seconds, _tf32


# ---- the MFU ladder (notebook 08): the course's GPT from naive to tuned, one change a rung -------------------------

# (key, label, the change the rung makes). Each rung keeps every change above it; every rung's MFU divides the same
# model FLOPs, (6N + 12 L d T) per token, by the same peak (`hardware.training_peak`): only the time changes.
LADDER = (
    ("fp32", "fp32, explicit attention", {}),
    ("bf16", "+ bf16 autocast", {"bf16": True}),
    ("sdpa", "+ scaled_dot_product_attention", {"sdpa": True}),
    ("compile", "+ torch.compile", {"compile": True}),
    ("fused_adamw", "+ fused AdamW", {"fused_adamw": True}),
    ("batch", "+ larger batch", {"batch": "large"}),
)


def _ladder_step(model, fwd, idx, settings: dict, device: str):
    """One training step of the ladder's GPT as `settings` says (autocast, fused AdamW), and its optimizer."""
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True if settings["fused_adamw"] else None)

    def step():
        with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=settings["bf16"]):
            logits = fwd(idx)  # (B, T, V)
            loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), idx.flatten())
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step, opt


def mfu_ladder(cfg: dict, device: str, repeat: int, compile_model: bool | None = None, progress=None) -> dict:
    """Time and MFU of the course's GPT training step (AdamW) rung by rung of `LADDER`: fp32 with explicit attention
    (TF32 matmuls on CUDA, as fp32 training runs on Ampere and Hopper), then bf16 autocast, then
    `scaled_dot_product_attention` (FlashAttention on a GPU), then `torch.compile`, then fused AdamW, then
    `cfg["ladder"]["batch_large"]` sequences instead of `cfg["gpt"]["B"]`.

    MFU = (6N + 12 L d T) x B T / step time / `hardware.training_peak(device)`, one peak for every rung (bf16's on a
    GPU; on a CPU the higher of its measured fp32 and bf16 peaks). Times are the best of `repeat` steps after a
    warm-up (3 steps once compiled: the first compiles). `compile_model` (default `cfg["ladder"]["compile"]`, else
    only on CUDA) False: the compile rung is skipped and the rungs after it run eagerly (`settings["compiled"]`
    says so). A rung that fails (out of memory, a compiler missing) records why and the ladder goes on.
    Returns {"gpt": cfg["gpt"], "peak": {"dtype", "flops_per_s", "source"}, "rungs": {key: {"label", "settings", "seconds",
    "model_flops", "flops_per_s", "tokens_per_s", "mfu"(, "peak_memory_bytes" on CUDA)} or {"label", "skipped"}}}.
    """
    g, lad = cfg["gpt"], cfg.get("ladder", {})
    compile_model = lad.get("compile", device == "cuda") if compile_model is None else compile_model
    result: dict = {"gpt": dict(g), "peak": _ladder_peak(device), "rungs": {}}
    settings = {"bf16": False, "sdpa": False, "compiled": False, "fused_adamw": False, "B": g["B"], "T": g["T"],
                "tf32": device == "cuda"}
    built: dict = {}  # sdpa -> (model, compiled module or None): one model per attention kind, compiled once
    with _tf32(device == "cuda"):
        for name, label, change in LADDER:
            if progress:
                progress(f"ladder {name}")
            if change.get("compile") and not compile_model:
                result["rungs"][name] = {"label": label, "skipped": "torch.compile not run here (on a CPU its C++ "
                                         "compilation takes tens of seconds: `python -m lecture2 profile` measures it)"}
                continue
            settings = _with_change(settings, change, lad.get("batch_large", 2 * g["B"]))
            result["rungs"][name] = _rung(label, settings, built, g, device, repeat, result["peak"]["flops_per_s"])
    built.clear()
    if compile_model:
        torch._dynamo.reset()  # the compiled graphs hold the models: let them go
    return result


def _ladder_peak(device: str) -> dict:
    """{"dtype", "flops_per_s", "source"}: the one peak every rung divides by (`hardware.training_peak`); on a GPU
    without a datasheet row, no peak and why (times and tokens/s, no MFU)."""
    try:
        key, peak = hardware.training_peak(device)
        source = hardware.applicable_peak(key, device).source
    except hardware.UnknownGPU as err:
        key, peak, source = None, None, str(err)
    return {"dtype": key, "flops_per_s": peak, "source": source}


def _with_change(settings: dict, change: dict, batch_large: int) -> dict:
    """The settings of the next rung: those of the rung before with `change` made (every change above it kept)."""
    settings = {**settings, **{k: v for k, v in change.items() if k not in ("compile", "batch")}}
    settings["compiled"] = settings["compiled"] or bool(change.get("compile"))
    if change.get("batch"):
        settings["B"] = batch_large
    return settings


def _rung(label: str, settings: dict, built: dict, g: dict, device: str, repeat: int, peak: float | None) -> dict:
    """One rung measured: its best step time (seconds) after a warm-up, model FLOPs, FLOP/s, tokens/s and MFU (and
    on CUDA the allocator's peak, bytes), or why it was skipped (out of memory, a compiler that fails here: the
    ladder goes on). `built` keeps one model per attention kind, and its compiled module once compiled."""
    try:
        if settings["sdpa"] not in built:
            built.clear()
            if device == "cuda":
                torch.cuda.empty_cache()
            model, _ = _gpt({**g, "fused_attention": settings["sdpa"]}, device)
            built[settings["sdpa"]] = [model, None]
        model, compiled = built[settings["sdpa"]]
        if settings["compiled"] and compiled is None:
            compiled = built[settings["sdpa"]][1] = torch.compile(model, dynamic=False)
        fwd = compiled if settings["compiled"] else model
        torch.manual_seed(1)
        idx = torch.randint(0, g["vocab_size"], (settings["B"], g["T"]), device=device)
        step, opt = _ladder_step(model, fwd, idx, settings, device)
        if device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        seconds = _seconds(step, device, repeat, warmup=3 if settings["compiled"] else 1)
        flops = _gpt_flops_per_token(model, g["T"])["total"] * settings["B"] * g["T"]
        rung = {"label": label, "settings": dict(settings), "seconds": seconds, "model_flops": flops,
                "flops_per_s": flops / seconds, "tokens_per_s": settings["B"] * g["T"] / seconds,
                "mfu": flops / seconds / peak if peak else None}
        if device == "cuda":
            rung["peak_memory_bytes"] = torch.cuda.max_memory_allocated()
        del step, opt
    except Exception as err:  # out of memory, a compiler that fails on this machine: record why, go on
        rung = {"label": label, "settings": dict(settings),
                "skipped": f"{type(err).__name__}: {(str(err).splitlines() or [''])[0]}"[:300]}
        if device == "cuda":
            torch.cuda.empty_cache()
    return rung


def ladder_summary(p: dict) -> str:
    """The ladder's rungs of profile `p`, one per line: time, tokens/s and MFU (or why a rung was skipped)."""
    ladder = p["models"]["ladder"]
    peak = ladder["peak"]
    lines = [f"MFU over the {peak['dtype']} peak, {fmt.format_rate(peak['flops_per_s'])}:" if peak["flops_per_s"]
             else f"no MFU: {peak['source']}"]
    for key, rung in ladder["rungs"].items():
        if "seconds" in rung:
            mfu = f"  MFU {rung['mfu']:.1%}" if rung["mfu"] is not None else ""
            lines.append(f"  {rung['label']:<34} {fmt.format_seconds(rung['seconds']):>9}  "
                         f"{rung['tokens_per_s']:>12,.0f} tok/s{mfu}")
        else:
            lines.append(f"  {rung['label']:<34} skipped: {rung['skipped'][:80]}")
    return "\n".join(lines)
