"""The planner's benchmark figures for docs/planning.md: the time of one plan and of a search, the conformance
table, and each published layout beside the best the search finds for the same model, GPUs and batch.

    .venv/bin/python -m tools.bench_planner            everything (a minute or two on 2 cores)
    .venv/bin/python -m tools.bench_planner --quick    timings and the table, no searches of the other rows

Goals (issue 27): one plan < 1 s, `--search` for 405B on 16,384 GPUs < 30 s on 2 cores. Timings are wall-clock
on this machine, the first call included (it fits the GEMM curves).
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "lecture2", *argv], cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="skip the searches of the published rows")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from lecture2 import planner

    one = ["estimate", "--model", "llama3-405b", "--tokens", "15.6e12", "--gpus", "16384", "--seq", "8192",
           "--global-batch", "2048", "--tp", "8", "--sp", "--pp", "16", "--virtual-stages", "7", "--zero", "2",
           "--fewer-layers-at-ends", "1"]
    search = ["estimate", "--model", "llama3-405b", "--tokens", "15.6e12", "--gpus", "16384", "--seq", "8192",
              "--global-batch", "2048", "--search"]
    print(f"one plan, the whole command:    {_timed(one):5.2f} s   python -m lecture2 {' '.join(one)}")
    print(f"--search, the whole command:    {_timed(search):5.2f} s   python -m lecture2 {' '.join(search)}")
    start = time.perf_counter()
    table = planner.conformance()
    print(f"the conformance table:          {time.perf_counter() - start:5.2f} s\n")
    print(f"{'published run':<50} {'reported':>9} {'predicted':>9} {'ratio':>6}  layout planned")
    for r in table:
        row = r["row"]
        show = (lambda x: f"{x / 1e3:,.0f}K") if row.metric == "gpu_hours_per_trillion_tokens" else (lambda x: f"{x:.3f}")
        print(f"{row.name:<50} {show(row.reported):>9} {show(r['predicted']):>9} {r['ratio']:6.2f}  "
              f"{r['plan'].layout.describe()}")
    if args.quick:
        return 0
    print("\nthe published layout against the search's best for the same model, GPUs and batch:")
    for r in table:
        row, p = r["row"], r["plan"]
        start = time.perf_counter()
        best = planner.search(p.model, replace(p.run), top=1)
        seconds = time.perf_counter() - start
        if not best:
            print(f"  {row.name}: nothing fits ({seconds:.1f} s)")
            continue
        b = best[0].plan
        print(f"  {row.name}: published {p.step_s:.2f} s, search's best {b.step_s:.2f} s "
              f"({p.step_s / b.step_s - 1:+.1%}; search {seconds:.1f} s)\n      best: {b.layout.describe()}, "
              f"{b.memory['total'] / 1e9:.1f} GB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
