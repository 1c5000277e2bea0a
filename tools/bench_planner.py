"""The planner's benchmark figures for docs/planning.md: the time of one plan and of a search, the conformance
table, and each published layout beside the best the search finds for the same model, GPUs and batch.

    .venv/bin/python -m tools.bench_planner            everything (a few minutes on 2 cores)
    .venv/bin/python -m tools.bench_planner --quick    timings and the table, no searches of the other rows
    .venv/bin/python -m tools.bench_planner --reached  rewrite lecture2/planning/reached.py from the table

Goals (issue 42): one plan < 0.1 s, `--search` for 405B on 16,384 GPUs < 30 s on 2 cores. Timings are wall-clock
on this machine: a plan in a fresh process (the GEMM fits included) and again once warm, the search in process,
and each whole CLI command (most of it importing PyTorch).
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


_ONE_PLAN = """
import time
t0 = time.perf_counter()
from lecture2 import planner
t1 = time.perf_counter()
run = planner.Run(gpus=16384, seq_len=8192, batch_tokens=16 * 2**20, recipe="bf16 mixed Adam, fp32 grads")
lay = planner.Layout(tp=8, sp=True, pp=16, virtual_stages=8, zero=2, fewer_layers_at_ends=1)
planner.plan(planner.model("llama3-405b"), run, lay)
t2 = time.perf_counter()
planner.plan(planner.model("llama3-405b"), run, lay)
t3 = time.perf_counter()
print(f"{t1 - t0:.3f} {t2 - t1:.3f} {t3 - t2:.5f}")
"""


def write_reached(table) -> Path:
    """Rewrite lecture2/planning/reached.py's BAND, TIE and REACHED from the conformance table."""
    from lecture2.planning import published

    path = ROOT / "lecture2" / "planning" / "reached.py"
    text = path.read_text()
    head = text[:text.index("BAND = ")]
    rows = "".join(f"    {row!r},\n" for row in published.reached(table))
    body = (f"BAND = {published.band(table)!r}\n"
            "# Two layouts of one run whose steps differ by less than this are a tie: the table's median error, the "
            "planner's\n# precision on a run it has not seen\n"
            f"TIE = {published.tie(table)!r}\n"
            f"REACHED: tuple[tuple[str, str, float, float], ...] = (\n{rows})\n")
    path.write_text(head + body)
    return path


def main() -> int:
    args = _parser().parse_args()
    sys.path.insert(0, str(ROOT))
    from lecture2 import planner
    from lecture2.planning import published

    if args.reached:
        print(f"wrote {write_reached(planner.conformance())}")
        return 0
    _time_plan_and_search(planner)
    _time_commands()
    table = _conformance_table(planner, published)
    if args.quick:
        return 0
    _published_against_search(planner, table)
    return 0


def _parser() -> argparse.ArgumentParser:
    """The command line: --quick, --reached (the module's docstring as the description)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="skip the searches of the published rows")
    parser.add_argument("--reached", action="store_true", help="rewrite lecture2/planning/reached.py and stop")
    return parser


def _time_plan_and_search(planner) -> None:
    """One plan of Llama 3 405B's layout in a fresh process (seconds: importing, the first plan, once warm), and
    the search for Llama 3 405B on 16,384 H100 in this process (seconds, and how many of its top 10 tie)."""
    fresh = subprocess.run([sys.executable, "-c", _ONE_PLAN], cwd=ROOT, check=True, capture_output=True, text=True)
    imported, first, warm = (float(x) for x in fresh.stdout.split())
    print(f"one plan of Llama 3 405B's layout, in a fresh process: {first:.3f} s (the GEMM fits included; importing "
          f"lecture2 and PyTorch {imported:.1f} s before it); once warm {warm * 1e3:.1f} ms")
    start = time.perf_counter()
    run = planner.Run(gpus=16384, seq_len=8192, batch_tokens=16 * 2**20, recipe="bf16 mixed Adam, fp32 grads")
    ranking = planner.search(planner.model("llama3-405b"), run, top=10)
    print(f"search for Llama 3 405B on 16,384 H100, in process: {time.perf_counter() - start:.2f} s "
          f"({sum(r.loss == 0 or r.tied for r in ranking)} of the top 10 tie with the fastest)")


def _time_commands() -> None:
    """The whole `python -m lecture2 estimate` command for one plan and for --search (seconds, PyTorch's import
    included)."""
    one = ["estimate", "--model", "llama3-405b", "--tokens", "15.6e12", "--gpus", "16384", "--seq", "8192",
           "--global-batch", "2048", "--tp", "8", "--sp", "--pp", "16", "--virtual-stages", "8", "--zero", "2",
           "--fewer-layers-at-ends", "1"]
    search = ["estimate", "--model", "llama3-405b", "--tokens", "15.6e12", "--gpus", "16384", "--seq", "8192",
              "--global-batch", "2048", "--search"]
    print(f"one plan, the whole command:    {_timed(one):5.2f} s   python -m lecture2 {' '.join(one)}")
    print(f"--search, the whole command:    {_timed(search):5.2f} s   python -m lecture2 {' '.join(search)}")


def _conformance_table(planner, published) -> list:
    """The conformance table, timed (seconds) and printed: each published run's reported and predicted figure and
    speed ratio, then how many are within 15%, the median error and the band; returns the table."""
    start = time.perf_counter()
    table = planner.conformance()
    print(f"the conformance table:          {time.perf_counter() - start:5.2f} s\n")
    print(f"{'published run':<50} {'reported':>9} {'predicted':>9} {'speed':>6}  what it counts; layout planned")
    for r in table:
        row = r["row"]
        show = (lambda x: f"{x / 1e3:,.0f}K") if row.metric == "gpu_hours_per_trillion_tokens" else (
            (lambda x: f"{x:.0f}") if row.metric == "tflops_per_gpu" else (lambda x: f"{x:.3f}"))
        print(f"{row.name:<50} {show(row.reported):>9} {show(r['predicted']):>9} {published.speed_ratio(r):6.2f}  "
              f"{row.counts}; {r['plan'].layout.describe()}, V {r['plan'].layout.virtual_stages}")
    errors = [abs(published.speed_ratio(r) - 1) for r in table]
    print(f"\nwithin 15%: {sum(e <= 0.15 for e in errors)} of {len(errors)}; median error {published.tie(table):.1%}; "
          f"band (lowest, median, highest planned / published speed) {published.band(table)}")
    return table


def _published_against_search(planner, table: list) -> None:
    """For the first row of each family and every Llama 3 row: the published layout's step time against the
    search's fastest for the same model, GPUs and batch (seconds), its ties, and the fastest layout's memory (GB)."""
    print("\nthe published layout against the search's best for the same model, GPUs and batch (the first row of each "
          "family, and every Llama 3 row):")
    seen = set()
    for r in table:
        row, p = r["row"], r["plan"]
        if row.family in seen and row.family != "Llama 3":
            continue
        seen.add(row.family)
        start = time.perf_counter()
        ranking = planner.search(p.model, replace(p.run), top=10)
        seconds = time.perf_counter() - start
        if not ranking:
            print(f"  {row.name}: nothing fits ({seconds:.1f} s)")
            continue
        b = ranking[0].plan
        ties = sum(x.loss == 0 or x.tied for x in ranking)
        print(f"  {row.name}: published {p.step_s:.2f} s, search's fastest {b.step_s:.2f} s "
              f"({p.step_s / b.step_s - 1:+.1%}; {ties} of its top 10 tie with it; search {seconds:.1f} s)\n"
              f"      fastest: {b.layout.describe()}, V {b.layout.virtual_stages}, {b.memory['total'] / 1e9:.1f} GB")


if __name__ == "__main__":
    sys.exit(main())
