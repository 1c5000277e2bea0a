"""`python -m lecture2 COMMAND`: tools for the course and for people planning runs.

    python -m lecture2 env        the device, its dtype support and the peak FLOP/s that applies
"""
from __future__ import annotations

import argparse
import sys

import torch

from . import fmt, hardware

__all__ = ["main"]


def _dtype_works(dtype: torch.dtype, device: str) -> bool:
    try:
        a = torch.ones(16, 16, dtype=dtype, device=device)
        (a @ a).sum().item()
        return True
    except (RuntimeError, TypeError, NotImplementedError):
        return False


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
        f"{name}:{'yes' if _dtype_works(d, device) else 'no'}"
        for name, d in (("fp32", torch.float32), ("bf16", torch.bfloat16), ("fp16", torch.float16))))
    if device == "cuda":
        try:
            spec = hardware.gpu_from_device_name(info["name"])
        except hardware.UnknownGPU as err:
            print(f"peak       {err}")
            return 0
        print(f"peak       {spec.full_name} datasheet ({spec.source}), dense:")
        for key, value in spec.peak.items():
            print(f"           {key:5s} {fmt.format_rate(value)}")
    elif device == "cpu":
        print("peak       measured matmul on this CPU (no datasheet applies):")
        print(f"           fp32  {fmt.format_rate(hardware.measure_cpu_peak(torch.float32))} (1024^3, the peak that applies)")
        # bf16 is emulated on most CPUs and can be 100x slower: a small size keeps the report quick
        print(f"           bf16  {fmt.format_rate(hardware.measure_cpu_peak(torch.bfloat16, n=256, repeat=3))} (256^3)")
    else:
        print("peak       no published dense peak for this device")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m lecture2", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    env = sub.add_parser("env", help="device, dtype support and the peak FLOP/s that applies")
    env.set_defaults(func=cmd_env)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
