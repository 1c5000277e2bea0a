"""Benchmark of the grader's reading of a student's file (not a test): seconds and peak memory per hostile shape.

    .venv/bin/python -m tools.bench_reading [--kind skipped --kind magics ...] [--size 100000 --size 1000000]

For each shape of tools/hostile.py and each size, one fresh process writes the file and runs the grader's whole
preparation of it (pipeline.prepare: reading, stripping outputs, the scan, the plan, the advice), timed; printed:
the file's size, the seconds, the seconds per MB of hostile content, the process's peak memory (MiB) and what the
report line says. A linear reader keeps the seconds per MB flat as the size grows.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from tools.hostile import KINDS

ROOT = Path(__file__).resolve().parent.parent

_ONE = r"""
import json, resource, sys, time
from pathlib import Path
sys.path.insert(0, {root!r})
from tools.hostile import shape
from lecture2_grader import course, pipeline
from lecture2_grader.runtime import Runtime
kind, n, folder = {kind!r}, {n!r}, Path({folder!r})
nb = course.load(Path({root!r}) / "solutions/lec02/01_tensors_dtypes.ipynb", Path({root!r}) / "notebooks/lec02/01_tensors_dtypes.ipynb")
path = folder / "01_tensors_dtypes.ipynb"
path.write_bytes(shape(kind, n))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
job = pipeline.prepare("bench", path, nb, Runtime())
seconds = time.perf_counter() - start
print(json.dumps({{"bytes": path.stat().st_size, "seconds": seconds,
                  "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "base_mib": before / 1024, "problems": job.problems[:2], "notices": len(job.notices)}}))
"""


def measure(kind: str, n: int, timeout: float) -> dict:
    """Prepare one hostile file of `kind` and size `n` in a fresh process: its figures."""
    with tempfile.TemporaryDirectory(prefix="lecture2-bench-reading-") as folder:
        code = _ONE.format(root=str(ROOT), kind=kind, n=n, folder=folder)
        try:
            done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"kind": kind, "n": n, "seconds": None, "error": f"over {timeout:g} s"}
    if done.returncode != 0:
        return {"kind": kind, "n": n, "seconds": None, "error": done.stderr.strip().splitlines()[-1:]}
    return {"kind": kind, "n": n, **json.loads(done.stdout.strip().splitlines()[-1])}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.bench_reading", description=__doc__.split("\n\n")[0])
    parser.add_argument("--kind", action="append", choices=KINDS, help="a shape (default: every one)")
    parser.add_argument("--size", action="append", type=int, help="bytes of hostile content (default: 1e5 and 1e6)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds one preparation may take (default 600)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    rows = []
    print(f"{'shape':<14} {'hostile bytes':>13} {'file MB':>8} {'seconds':>8} {'s per MB':>9} {'peak MiB':>9}  report")
    for kind in args.kind or KINDS:
        for n in args.size or [100_000, 1_000_000]:
            row = measure(kind, n, args.timeout)
            rows.append(row)
            if row["seconds"] is None:
                print(f"{kind:<14} {n:>13,} {'':>8} {'—':>8} {'':>9} {'':>9}  {row['error']}")
                continue
            print(f"{kind:<14} {n:>13,} {row['bytes'] / 1e6:>8.2f} {row['seconds']:>8.2f} "
                  f"{row['seconds'] / (n / 1e6):>9.2f} {row['peak_mib']:>9.0f}  {'; '.join(row['problems'])[:70]}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
