"""A device profile: what this machine achieves, and how the course's predictions hold up on it.

`run()` measures on the device present (CUDA or CPU) and returns one JSON-serialisable dict:
    device     name, memory, torch version, dtype support
    matmul     achieved FLOP/s over a size sweep per dtype, with the fraction of the peak that applies to that
               dtype (`hardware.applicable_peak`: the datasheet row on CUDA; on CPU the best matmul of `hardware.cpu_peak`'s
               own sweep in that dtype, an upper bound measured apart from this sweep)
    gemm_shapes the same for the GEMMs of real transformer layers (`transformer_gemm_shapes`: QKV, output, MLP up
               and down of Llama 3 8B / 70B / 405B after their TP split, 2,048 and 8,192 tokens): the planner's
               GEMM efficiency by shape (lecture2.planning.compute) is fitted to them when a shipped profile has
               them. `python -m lecture2 profile --gemm-only` measures just these (tools/gpu_checks.sh runs it first)
    bandwidth  achieved bytes/s of a memory-bound op (a large copy: read + write)
    models     lecture2's models: FLOPs predicted vs counted, activation and training-state bytes
               predicted vs measured, checkpointing's saving and overhead, a training step's time and MFU, and
               the MFU ladder (`mfu_ladder`): the course's GPT from naive to tuned, one change a rung
Counts and bytes are exact and the same on every run of the same `config`; timings are the best of a
few calls.
Sizes come from `config(device)`: small on a CPU (under 2 minutes), large on CUDA (a few minutes).

Profiles shipped with the package (lecture2/profiles/*.json) load by name: `shipped()`, `load(name)`;
`compare(mine, reference)` sets two side by side. Make one with `python -m lecture2 profile --out FILE`;
`--gemm-only` and `--ladder-only` measure one part (tools/gpu_checks.sh runs them first and merges them into the
shipped profile, saying when in made.gemm_shapes and made.ladder).
Units: FLOPs, FLOP/s, bytes, bytes/s, seconds.
"""
from __future__ import annotations

import contextlib
import datetime
import json
import platform
import sys
import time
from pathlib import Path

import torch
from torch.utils.checkpoint import checkpoint

from . import fmt, hardware, measure, models, training_state

__all__ = ["SCHEMA_VERSION", "LADDER", "UnknownProfile", "config", "device_info", "gemm_shape_sweep", "matmul_sweep",
           "transformer_gemm_shapes", "bandwidth", "model_counts", "checkpointing", "train_step", "mfu_ladder", "peaks",
           "run", "gemm_only", "ladder_only", "ladder_summary", "save", "summary", "shipped", "load", "compare"]

SCHEMA_VERSION = 1
PROFILES = Path(__file__).resolve().parent / "profiles"
_DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def transformer_gemm_shapes(scale: int = 1) -> list[list[int]]:
    """(M tokens, N outputs, K inputs) of one layer's forward GEMMs in Llama 3 8B (TP 1), 70B and 405B (TP 8):
    QKV (grouped-query), the output projection, the SwiGLU's gate and up together, the down projection, at 2,048
    and 8,192 tokens; `scale` divides every size (a CPU measures the same shapes shrunk)."""
    shapes = []
    for h, f, heads, kv, tp in ((4096, 14336, 32, 8, 1), (8192, 28672, 64, 8, 8), (16384, 53248, 128, 8, 8)):
        hd = h // heads
        for m in (2048, 8192):
            for n, k in (((heads + 2 * kv) * hd // tp, h), (h, heads * hd // tp), (2 * f // tp, h), (h, f // tp)):
                shapes.append([max(16, m // scale), max(16, n // scale), max(16, k // scale)])
    return shapes


def config(device: str, memory_bytes: float | None = None) -> dict:
    """The sizes to profile `device` with.

    "cpu": small (the whole profile in well under a minute on 2 cores). "cuda": large on a datacenter GPU
    (>= 40 GiB: a few minutes on an H200), medium on a smaller card so that a laptop GPU does not run out of
    memory; `memory_bytes` defaults to the memory of CUDA device 0.
    """
    if device == "cuda":
        if memory_bytes is None and torch.cuda.is_available():
            memory_bytes = torch.cuda.get_device_properties(0).total_memory
        if memory_bytes is not None and memory_bytes < 40 * 2**30:
            return {
                "matmul_sizes": {"fp32": [1024, 2048, 4096], "tf32": [1024, 2048, 4096],
                                 "bf16": [1024, 2048, 4096, 8192], "fp16": [1024, 2048, 4096, 8192],
                                 "fp8": [1024, 2048, 4096, 8192]},
                "matmul_repeat": 10,
                "gemm_shapes": {"dtypes": ["bf16", "fp8"], "shapes": transformer_gemm_shapes()},
                "copy_bytes": 2**29,  # 512 MiB
                "block": {"B": 4, "T": 512, "d": 1024, "n_heads": 8},
                "gpt": {"vocab_size": 50304, "block_size": 512, "n_layer": 6, "n_head": 12, "d_model": 768,
                        "B": 4, "T": 512},
                "step_repeat": 10,
                "ladder": {"batch_large": 8, "compile": True},
            }
        return {
            "matmul_sizes": {"fp32": [1024, 2048, 4096, 8192], "tf32": [1024, 2048, 4096, 8192],
                             "bf16": [1024, 2048, 4096, 8192, 16384], "fp16": [1024, 2048, 4096, 8192, 16384],
                             "fp8": [1024, 2048, 4096, 8192, 16384]},
            "matmul_repeat": 10,
            "gemm_shapes": {"dtypes": ["bf16", "fp8"], "shapes": transformer_gemm_shapes()},
            "copy_bytes": 2**31,  # 2 GiB: far beyond any cache
            "block": {"B": 8, "T": 1024, "d": 2048, "n_heads": 16},
            "gpt": {"vocab_size": 50304, "block_size": 1024, "n_layer": 12, "n_head": 16, "d_model": 1024,
                    "B": 8, "T": 1024},
            "step_repeat": 10,
            # the MFU ladder's last rung takes 4x the batch (32 x 1,024 tokens: about 40 GB in bf16 with SDPA)
            "ladder": {"batch_large": 32, "compile": True},
        }
    return {
        # bf16/fp16 matmuls are emulated on most CPUs (~1 GFLOP/s): smaller sizes keep them quick
        "matmul_sizes": {"fp32": [256, 512, 1024], "bf16": [128, 256, 512], "fp16": [128, 256, 512]},
        "matmul_repeat": 3,
        # the same layers shrunk 64 times, in fp32 (bf16 is emulated on most CPUs): the sweep's code path, quickly
        "gemm_shapes": {"dtypes": ["fp32"], "shapes": transformer_gemm_shapes(scale=64)},
        "copy_bytes": 2**27,  # 128 MiB: beyond the last-level cache
        "block": {"B": 4, "T": 64, "d": 128, "n_heads": 4},
        "gpt": {"vocab_size": 512, "block_size": 64, "n_layer": 2, "n_head": 4, "d_model": 128, "B": 4, "T": 64},
        "step_repeat": 5,
        # torch.compile on a CPU: about 20 s of C++ compilation, in the profile only (notebooks skip that rung here)
        "ladder": {"batch_large": 16, "compile": True},
    }


def _seconds(fn, device: str, repeat: int, warmup: int = 1) -> float:
    """The best of `repeat` timed calls: on a shared machine a neighbour slows some calls, never speeds one."""
    return measure.benchmark(fn, warmup=warmup, repeat=repeat, device=device).best


def _cpu_name() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def device_info(device: str) -> dict:
    """Device name, memory (bytes), torch version, which matmul dtypes run, and the datasheet row if any."""
    info = {"device": device, "torch": torch.__version__, "python": platform.python_version()}
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        info.update(name=props.name, memory_bytes=props.total_memory, capability=f"{props.major}.{props.minor}")
        free, total = torch.cuda.mem_get_info()
        # what the process holds that PyTorch's allocator did not reserve: its CUDA context and library workspaces
        # (lecture2.planning.memory counts it per GPU of a planned run)
        info["cuda_context_bytes"] = total - free - torch.cuda.memory_reserved()
        try:
            info["datasheet"] = hardware.gpu_from_device_name(props.name).name
        except hardware.UnknownGPU:
            info["datasheet"] = None
    else:
        import os
        info.update(name=_cpu_name(), threads=torch.get_num_threads(), cores=os.cpu_count(), datasheet=None)
        with contextlib.suppress(OSError, ValueError):
            pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
            info["memory_bytes"] = int(pages)
    info["dtypes"] = {k: hardware.matmul_works(d, device) for k, d in (("fp32", torch.float32), ("bf16", torch.bfloat16),
                                                                ("fp16", torch.float16))}
    return info


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


def _gpt(cfg: dict, device: str) -> tuple[models.GPT, torch.Tensor]:
    torch.manual_seed(0)
    gc = models.GPTConfig(**{k: v for k, v in cfg.items() if k not in ("B", "T")})
    model = models.GPT(gc).to(device)
    idx = torch.randint(0, gc.vocab_size, (cfg["B"], cfg["T"]), device=device)
    return model, idx


def _matmul_params(model: models.GPT) -> int:
    """Parameters that enter a matmul: the blocks' Linear weights and the LM head (embeddings are lookups)."""
    return sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))


def _gpt_flops_per_token(model: models.GPT, T: int) -> dict:
    """The lecture's 6N + 12 L d T per token (PaLM appendix B): N the matmul parameters, attention at length T."""
    c = model.config
    n = _matmul_params(model)
    return {"n_matmul_params": n, "six_n": 6 * n, "attention": 12 * c.n_layer * c.d_model * T,
            "total": 6 * n + 12 * c.n_layer * c.d_model * T}


def model_counts(cfg: dict, device: str = "cpu") -> dict:
    """Exact counts on lecture2's models: FLOPs, activation bytes, training-state bytes, predicted vs measured."""
    b = cfg["block"]
    B, T, d, H = b["B"], b["T"], b["d"], b["n_heads"]
    torch.manual_seed(0)
    block = models.TransformerBlock(d, H).to(device)
    x = torch.randn(B, T, d, device=device, requires_grad=True)
    counted = measure.count_flops(lambda: block(x))
    out: dict = {"block_forward_flops": {
        "formula": "24 B T d^2 + 4 B T^2 d", "predicted": 24 * B * T * d**2 + 4 * B * T**2 * d, "counted": counted}}

    saved = measure.saved_bytes(lambda: block(x), exclude=block.parameters())
    # the lecture's rough per-layer formula (§4.2): 20 B T d + 2 B T^2 bytes in bf16, here in fp32 (x2)
    rough = 2 * (20 * B * T * d + 2 * B * T * T)
    act = {"dtype": "fp32", "lecture_rough_predicted": rough, "saved_bytes": saved}
    if device == "cuda":
        act["peak_memory"] = measure.peak_memory(lambda: block(x))
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        y = block(x)
        torch.cuda.synchronize()
        # what the graph holds: allocated during the forward, less its output, plus the input it keeps
        # (norm1 saves x, which was allocated before); comparable with saved_bytes up to 512-byte rounding
        act["held_after_forward"] = (torch.cuda.memory_allocated() - before - y.untyped_storage().nbytes()
                                     + x.untyped_storage().nbytes())
        del y
    out["block_activation_bytes"] = act

    g = cfg["gpt"]
    if device == "cuda":
        torch.cuda.synchronize()
        baseline = torch.cuda.memory_allocated()
    model, idx = _gpt(g, device)
    per_token = _gpt_flops_per_token(model, g["T"])
    step_flops = measure.count_flops(lambda: model.loss(idx, idx).backward())
    out["gpt_train_flops"] = {"formula": "(6 N + 12 L d T) B T", "per_token_predicted": per_token,
                              "predicted": per_token["total"] * g["B"] * g["T"], "counted": step_flops}

    n_params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    opt.step()
    held = training_state.state_bytes(model.parameters(), opt)
    state = {"recipe": "fp32 Adam", "n_params": n_params, "predicted": 16 * n_params,
             "held": held, "held_total": sum(held.values())}
    if device == "cuda":
        torch.cuda.synchronize()
        # allocated since the model was built, less the token ids; each block is rounded up to 512 bytes
        state["memory_allocated"] = torch.cuda.memory_allocated() - baseline - idx.untyped_storage().nbytes()
        on_device = [t for p in model.parameters() for t in (p, p.grad, *opt.state[p].values())
                     if isinstance(t, torch.Tensor) and t.is_cuda]  # Adam's step counters stay on the CPU
        state["held_on_device"] = training_state.held_bytes(on_device)
        state["n_tensors"] = len(on_device)
    out["gpt_state_bytes"] = state
    return out


class _Blocks(torch.nn.Module):
    def __init__(self, n: int, d: int, h: int, use_checkpoint: bool):
        super().__init__()
        self.blocks = torch.nn.ModuleList(models.TransformerBlock(d, h) for _ in range(n))
        self.use_checkpoint = use_checkpoint

    def forward(self, x):
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=False) if self.use_checkpoint else block(x)
        return x


def checkpointing(cfg: dict, device: str, repeat: int) -> dict:
    """Bytes saved for backward, FLOPs and time of forward + backward of the GPT's blocks, plain vs
    checkpointed per block (non-reentrant, as the lecture's code). On CUDA also the allocator's peak of forward +
    backward above what was allocated before it: `peak_memory` with the gradients of a step before already held
    (they are accumulated in place and not counted), `peak_memory_from_no_grads` with none held (the step
    allocates them, `grad_bytes`, and they are counted, as notebook 07's own cell measures).

    The two are timed alternately (best of `repeat` each), so that a busy neighbour slows both alike.
    """
    b, g = cfg["block"], cfg["gpt"]
    result: dict = {"n_layer": g["n_layer"], **b}
    steps = {}
    for mode in ("plain", "per_block"):
        torch.manual_seed(0)
        stack = _Blocks(g["n_layer"], b["d"], b["n_heads"], mode == "per_block").to(device)
        x = torch.randn(b["B"], b["T"], b["d"], device=device, requires_grad=True)
        r = {"saved_bytes": measure.saved_bytes(lambda s=stack, x=x: s(x), exclude=stack.parameters())}
        steps[mode] = lambda s=stack, x=x: s(x).sum().backward()
        r["flops"] = measure.count_flops(steps[mode])  # forward + backward, the recompute included
        if device == "cuda":
            # two peaks above what was allocated before the step: with the gradients the step before left held
            # (accumulated in place: not counted), and with none held, as notebook 07 measures (the step
            # allocates them: counted)
            r["peak_memory"] = measure.peak_memory(steps[mode])
            stack.zero_grad(set_to_none=True)
            x.grad = None
            r["peak_memory_from_no_grads"] = measure.peak_memory(steps[mode])
            r["grad_bytes"] = training_state.held_bytes([x.grad] + [p.grad for p in stack.parameters()])
        steps[mode]()  # warm-up
        result[mode] = r
    times = {mode: [] for mode in steps}
    for _ in range(repeat):
        for mode, fn in steps.items():
            times[mode].append(measure.benchmark(fn, warmup=0, repeat=1, device=device).best)
    for mode in steps:
        result[mode]["seconds"] = min(times[mode])
    result["saved_bytes_ratio"] = result["per_block"]["saved_bytes"] / result["plain"]["saved_bytes"]
    result["flops_overhead"] = result["per_block"]["flops"] / result["plain"]["flops"] - 1
    result["time_overhead"] = result["per_block"]["seconds"] / result["plain"]["seconds"] - 1
    return result


def train_step(cfg: dict, device: str, repeat: int, peak: dict, compile_model: bool = False) -> dict:
    """Time and MFU of a GPT training step (forward, backward, Adam) in fp32 and in bf16 autocast.

    MFU = (6N + 12 L d T) x B T / step time / peak; the peak is `peak[dtype]`, the dtype's own (CUDA: datasheet;
    CPU: the best matmul measured in that dtype).
    """
    g = cfg["gpt"]
    result: dict = {}
    variants = [("fp32", False), ("bf16", False)] + ([("bf16", True)] if compile_model else [])
    for dtype, compiled in variants:
        name = dtype + ("_compiled" if compiled else "")
        model, idx = _gpt(g, device)
        opt = torch.optim.Adam(model.parameters(), lr=1e-4)
        fwd = torch.compile(model) if compiled else model

        def step():
            with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=dtype == "bf16"):
                logits = fwd(idx)
                loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), idx.flatten())
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

        try:
            seconds = _seconds(step, device, repeat, warmup=3 if compiled else 1)
        except Exception as err:  # torch.compile fails in many ways on unusual setups; record why
            result[name] = {"skipped": f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"}
            continue
        flops = _gpt_flops_per_token(model, g["T"])["total"] * g["B"] * g["T"]
        p = peak.get(dtype)
        result[name] = {"seconds": seconds, "model_flops": flops, "flops_per_s": flops / seconds,
                        "tokens_per_s": g["B"] * g["T"] / seconds, "peak_flops_per_s": p,
                        "mfu": flops / seconds / p if p else None}
    return result


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
    try:
        key, peak = hardware.training_peak(device)
        source = hardware.applicable_peak(key, device).source
    except hardware.UnknownGPU as err:  # a GPU without a datasheet row: times and tokens/s, no MFU
        key, peak, source = None, None, str(err)
    result: dict = {"gpt": dict(g), "peak": {"dtype": key, "flops_per_s": peak, "source": source}, "rungs": {}}
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
            settings = {**settings, **{k: v for k, v in change.items() if k not in ("compile", "batch")}}
            settings["compiled"] = settings["compiled"] or bool(change.get("compile"))
            if change.get("batch"):
                settings["B"] = lad.get("batch_large", 2 * g["B"])
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
            result["rungs"][name] = rung
    built.clear()
    if compile_model:
        torch._dynamo.reset()  # the compiled graphs hold the models: let them go
    return result


def peaks(matmul: dict, device: str) -> dict[str, float | None]:
    """The peak FLOP/s that MFU divides by, per dtype, from a `matmul_sweep` result: each dtype's own
    (`hardware.applicable_peak`: the datasheet on CUDA, the best measured matmul in that dtype on a CPU)."""
    return {k: v.get("peak_flops_per_s") for k, v in matmul.items() if "sizes" in v}


class _Progress:
    """A one-line progress bar on stderr: [#####.....] 12/40 matmul bf16 4096."""

    def __init__(self, total: int, stream=None):
        self.total, self.done, self.stream = total, 0, stream or sys.stderr
        self.start = time.perf_counter()

    def __call__(self, what: str, steps: int = 1) -> None:
        self.done = min(self.total, self.done + steps)
        width = 30
        filled = width * self.done // self.total
        elapsed = time.perf_counter() - self.start
        self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
                          f"{elapsed:5.1f}s {what:<32.32}")
        if self.done == self.total:
            self.stream.write("\n")
        self.stream.flush()


def run(device: str | None = None, cfg: dict | None = None, compile_model: bool | None = None,
        progress: bool = True, command: str | None = None) -> dict:
    """The whole profile of `device` (default: the detected one, CUDA or CPU) as one JSON-serialisable dict.
    `compile_model` False leaves out every compiled step (train_step's and the ladder's); None: train_step compiles
    on CUDA only, the ladder as `cfg["ladder"]["compile"]` says."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    cfg = cfg or config(device)
    ladder_compile = compile_model
    compile_model = device == "cuda" if compile_model is None else compile_model
    gemm_spec = cfg.get("gemm_shapes", {"dtypes": [], "shapes": []})
    total = (sum(len(v) for v in cfg["matmul_sizes"].values()) + len(gemm_spec["dtypes"]) * len(gemm_spec["shapes"])
             + 4 + len(LADDER))
    bar = _Progress(total) if progress else (lambda what, steps=1: None)
    started = time.perf_counter()
    profile: dict = {"schema_version": SCHEMA_VERSION, "made": {"command": command, "date": _now()},
                     "config": cfg, "device": device_info(device)}
    profile["matmul"] = matmul_sweep(device, cfg["matmul_sizes"], cfg["matmul_repeat"], progress=bar)
    profile["gemm_shapes"] = gemm_shape_sweep(device, gemm_spec, cfg["matmul_repeat"], progress=bar)
    profile["bandwidth"] = bandwidth(device, cfg["copy_bytes"], cfg["matmul_repeat"])
    bar("bandwidth")
    profile["models"] = model_counts(cfg, device)
    bar("model counts")
    profile["models"]["checkpointing"] = checkpointing(cfg, device, cfg["step_repeat"])
    bar("checkpointing")
    profile["models"]["train_step"] = train_step(cfg, device, cfg["step_repeat"], peaks(profile["matmul"], device),
                                                 compile_model)
    bar("train step")
    profile["models"]["ladder"] = mfu_ladder(cfg, device, cfg["step_repeat"], ladder_compile, progress=bar)
    profile["made"]["seconds"] = time.perf_counter() - started
    with contextlib.suppress(AttributeError, OSError):  # how busy the machine was: 1-, 5- and 15-minute load averages
        import os

        profile["made"]["load_average"] = [round(x, 2) for x in os.getloadavg()]
    return profile


def _now() -> str:
    """The UTC time a profile was made, as its "made.date" records it."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def gemm_only(device: str | None = None, cfg: dict | None = None, command: str | None = None) -> dict:
    """Just the device and the transformer GEMM sweep (a minute on a GPU): what a short GPU session measures first."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    cfg = cfg or config(device)
    started = time.perf_counter()
    out = {"schema_version": SCHEMA_VERSION, "made": {"command": command, "date": _now()}, "device": device_info(device),
           "gemm_shapes": gemm_shape_sweep(device, cfg["gemm_shapes"], cfg["matmul_repeat"])}
    out["made"]["seconds"] = time.perf_counter() - started
    return out


def ladder_only(device: str | None = None, cfg: dict | None = None, compile_model: bool | None = None,
                command: str | None = None) -> dict:
    """Just the device and the MFU ladder (`mfu_ladder`, a few minutes on a GPU: it compiles): what a GPU session
    measures first (tools/gpu_checks.sh merges it into the shipped profile as models.ladder, made.ladder)."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    cfg = cfg or config(device)
    started = time.perf_counter()
    out = {"schema_version": SCHEMA_VERSION, "made": {"command": command, "date": _now()}, "device": device_info(device),
           "config": {k: cfg[k] for k in ("gpt", "ladder", "step_repeat") if k in cfg},
           "models": {"ladder": mfu_ladder(cfg, device, cfg["step_repeat"], compile_model)}}
    out["made"]["seconds"] = time.perf_counter() - started
    return out


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


def save(profile: dict, path: str | Path) -> None:
    """Write `profile` as indented JSON (the parent directory must exist)."""
    Path(path).write_text(json.dumps(profile, indent=1) + "\n")


class UnknownProfile(KeyError):
    """A profile name not shipped with the package; the message lists the shipped ones."""

    def __str__(self) -> str:
        return str(self.args[0])


def shipped() -> list[str]:
    """Names of the profiles shipped in lecture2/profiles/ (file names without .json)."""
    return sorted(p.stem for p in PROFILES.glob("*.json"))


def load(name: str) -> dict:
    """The shipped profile `name` (e.g. "cpu-amd-epyc"); an unknown name lists the shipped ones."""
    if not isinstance(name, str):
        raise TypeError(f"profile 名称应是字符串 (str), 得到 {type(name).__name__}")
    key = name.strip().lower().removesuffix(".json")
    if key not in shipped():
        raise UnknownProfile(f"未知的 profile (unknown profile) {name!r}; shipped: {', '.join(shipped()) or 'none'}")
    return json.loads((PROFILES / f"{key}.json").read_text())


def _rate(x) -> str:
    return fmt.format_rate(x) if isinstance(x, (int, float)) else "-"


def _headline(p: dict) -> list[tuple[str, str]]:
    m, steps = p["matmul"], p["models"]["train_step"]
    rows = [("device", p["device"]["name"])]
    for key in ("fp32", "tf32", "bf16", "fp16", "fp8"):
        if key in m:
            rows.append((f"matmul {key} best", _rate(m[key].get("best_flops_per_s")) if "sizes" in m[key] else "skipped"))
    bw = p["bandwidth"]["bytes_per_s"]
    rows.append(("copy bandwidth", fmt.format_bytes(bw) + "/s"))
    for name, s in steps.items():
        if "mfu" in s and s["mfu"] is not None:
            rows.append((f"train step {name}", f"{fmt.format_seconds(s['seconds'])}, MFU {s['mfu']:.1%}"))
    ladder = p["models"].get("ladder", {})
    for name, rung in ladder.get("rungs", {}).items():
        if rung.get("mfu") is not None:
            rows.append((f"ladder {rung['label']}", f"{fmt.format_seconds(rung['seconds'])}, MFU {rung['mfu']:.1%}"))
    ck = p["models"]["checkpointing"]
    rows.append(("checkpointing", f"{ck['saved_bytes_ratio']:.0%} of the bytes, {ck['flops_overhead']:+.0%} FLOPs, "
                                  f"{ck['time_overhead']:+.0%} time"))
    return rows


def summary(profile: dict) -> str:
    """A profile's headline figures, one per line."""
    rows = _headline(profile)
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"{name:<{width}}  {value}" for name, value in rows)


def compare(mine: dict, reference: dict) -> str:
    """'Your machine vs a reference profile' as a small text table of headline figures."""
    a, b = dict(_headline(mine)), dict(_headline(reference))
    names = list(dict.fromkeys([*a, *b]))
    w0 = max(len(n) for n in names)
    w1 = max(12, *(len(a.get(n, "-")) for n in names))
    lines = [f"{'':<{w0}}  {'yours':<{w1}}  reference", f"{'-' * w0}  {'-' * w1}  {'-' * 9}"]
    lines += [f"{n:<{w0}}  {a.get(n, '-'):<{w1}}  {b.get(n, '-')}" for n in names]
    return "\n".join(lines)
