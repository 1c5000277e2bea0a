"""`python -m lecture2 COMMAND`: tools for the course and for people planning runs.

    python -m lecture2 env        the device, its dtype support and the peak FLOP/s that applies
    python -m lecture2 estimate   FLOPs, time, GPU-hours, cost and memory of a training run; with a model, its plan
                                  on a cluster (lecture2.cli_estimate has the options and examples)
    python -m lecture2 profile    measure this device and the course's predictions; write a JSON profile

Example (the lecture's §6: a 7B model on 2T tokens on 256 H100 at 40% MFU, $2.5 per GPU-hour):

    python -m lecture2 estimate --params 7e9 --tokens 2e12 --gpu h100-sxm --gpus 256 --mfu 0.4 \\
        --usd-per-gpu-hour 2.5 [--shard zero3] [--json]

and the same run planned on DGX H100 nodes, laid out as TP x PP x DP (lecture2.planner, docs/planning.md):

    python -m lecture2 estimate --model lecture-7b --tokens 2e12 --gpus 256 --zero 3          # one layout
    python -m lecture2 estimate --config config.json --tokens 15e12 --gpus 1024 --tp 8 --pp 4 --sp  # any HF model
    python -m lecture2 estimate --model llama3-405b --tokens 15.6e12 --gpus 16384 --seq 8192 --global-batch 2048 --search
"""
from __future__ import annotations

import argparse
import sys

import torch

from . import cli_estimate, fmt, hardware

__all__ = ["main"]


def cmd_env(args: argparse.Namespace) -> int:
    """Print the device, its dtype support and the peak FLOP/s that applies."""
    device = hardware.detect_device()
    info = hardware.device_summary(device)
    print(f"torch      {info['torch']}")
    print(f"device     {device} ({info['name']})")
    if device == "cuda":
        print(f"memory     {fmt.format_bytes(info['memory_bytes'])} ({fmt.format_bytes(info['memory_bytes'], binary=True)})")
    else:
        print(f"threads    {info['threads']}")
    print("matmul     " + "  ".join(
        f"{name}:{'yes' if hardware.matmul_works(d, device) else 'no'}"
        for name, d in (("fp32", torch.float32), ("bf16", torch.bfloat16), ("fp16", torch.float16))))
    if device == "cuda":
        try:
            spec = hardware.gpu_from_device_name(info["name"])
        except hardware.UnknownGPU as err:
            print(f"peak       {err}")
            return 0
        print(f"peak       {spec.full_name} datasheet ({spec.source}), dense (hardware.applicable_peak):")
        for key in spec.peak:
            print(f"           {key:5s} {fmt.format_rate(hardware.applicable_peak(key, device).flops_per_s)}")
    elif device == "cpu":
        print("peak       measured on this CPU, each dtype its own (no datasheet applies; hardware.applicable_peak):")
        # the sweep stops early for a dtype this CPU multiplies slowly: each takes about a second
        for key in ("fp32", "bf16"):
            print(f"           {key}  {hardware.applicable_peak(key, device).source}")
        print(f"bandwidth  {hardware.cpu_bandwidth().describe()}")
    else:
        print("peak       no published dense peak for this device")
    return 0


def _keep_negative_numbers(argv: list[str]) -> list[str]:
    """["--params", "-7e9"] -> ["--params=-7e9"]: argparse takes "-7e9" for an option, and the user
    should hear that the number is negative rather than that it is missing."""
    out: list[str] = []
    for arg in argv:
        if out and out[-1].startswith("--") and "=" not in out[-1] and arg.startswith("-"):
            try:
                float(arg)
            except ValueError:
                pass
            else:
                out[-1] = f"{out[-1]}={arg}"
                continue
        out.append(arg)
    return out


def cmd_profile(args: argparse.Namespace) -> int:
    """Measure this device (CUDA or CPU), write the profile as JSON to --out, print the headline figures."""
    from pathlib import Path

    from . import profile

    out = Path(args.out)
    if not out.parent.is_dir():
        args.parser.error(f"--out: directory {str(out.parent)!r} does not exist (create it first)")
    command = "python -m lecture2 " + " ".join(args.argv)
    if args.gemm_only:
        result = profile.gemm_only(command=command)
        profile.save(result, out)
        print(f"wrote {out}: transformer GEMM shapes in {result['made']['seconds']:.0f} s")
        return 0
    if args.ladder_only:
        result = profile.ladder_only(compile_model=False if args.no_compile else None, command=command)
        profile.save(result, out)
        print(profile.ladder_summary(result))
        print(f"wrote {out}: the MFU ladder in {result['made']['seconds']:.0f} s")
        return 0
    result = profile.run(compile_model=False if args.no_compile else None, command=command)
    profile.save(result, out)
    print(profile.summary(result))
    print(f"wrote {out} in {result['made']['seconds']:.0f} s")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m lecture2", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=cli_estimate.BilingualParser)
    env = sub.add_parser("env", help="device, dtype support and the peak FLOP/s that applies")
    env.set_defaults(func=cmd_env)
    cli_estimate.add_parser(sub)
    prof = sub.add_parser(
        "profile", help="measure this device and the course's predictions; write a JSON profile",
        description="Matmul FLOP/s by size and dtype against the peak that applies, copy bandwidth, and on "
                    "lecture2's models FLOPs, activation and training-state bytes predicted vs measured, "
                    "checkpointing, a training step's MFU and the MFU ladder. Small sizes on a CPU (< 2 min), large on "
                    "CUDA.",
        epilog="example: python -m lecture2 profile --out lecture2/profiles/h200.json")
    prof.add_argument("--out", required=True, metavar="FILE.json", help="where to write the profile (JSON)")
    prof.add_argument("--no-compile", action="store_true", help="skip the torch.compile'd steps")
    prof.add_argument("--ladder-only", action="store_true",
                      help="measure only the MFU ladder (notebook 08): the course's GPT from naive to tuned")
    prof.add_argument("--gemm-only", action="store_true",
                      help="measure only the transformer GEMM shapes the planner's efficiency is fitted to")
    prof.set_defaults(func=cmd_profile, parser=prof)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(_keep_negative_numbers(sys.argv[1:] if argv is None else list(argv)))
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    args.argv = sys.argv[1:] if argv is None else list(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
