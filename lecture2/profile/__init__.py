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

One name space, four rooms: this module (the sizes, the device, the whole run, saving, loading and comparing),
`sweeps` (the GEMM sweeps and the bandwidth), `modelruns` (the course's models measured) and `ladder` (the MFU
ladder).
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

from .. import fmt, hardware
from .ladder import LADDER, ladder_summary, mfu_ladder
from .modelruns import checkpointing, model_counts, train_step
from .sweeps import bandwidth, gemm_shape_sweep, matmul_sweep

__all__ = ["SCHEMA_VERSION", "LADDER", "UnknownProfile", "config", "device_info", "gemm_shape_sweep", "matmul_sweep",
           "transformer_gemm_shapes", "bandwidth", "model_counts", "checkpointing", "train_step", "mfu_ladder", "peaks",
           "run", "gemm_only", "ladder_only", "ladder_summary", "save", "summary", "shipped", "load", "compare"]

SCHEMA_VERSION = 1
PROFILES = Path(__file__).resolve().parent.parent / "profiles"


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
