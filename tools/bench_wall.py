"""What an instructor waits for: `make grade --jobs 1` on one full correct submission, from the command's start to
its last line, against the same ten notebooks run top to bottom in one plain Python process (tools/run_cells.py),
both measured in this run, alternately, on this machine (a benchmark, not a test; goal: at most 1.25x).

    .venv/bin/python -m tools.bench_wall [--rounds 2] [--notebook 01 ...] [--profile]

The graded run is `python -m lecture2_grader --jobs 1` in a fresh course folder (the course's solutions and
release, one student with the reference answers typed into the release), so it pays for everything `make grade`
pays for: the interpreter and its imports, the preflight sandbox, the font cache, the fork server, the gradebook,
every notebook's judge and sandbox, the feedback pages, the class report. With --profile, a per-stage account of
one graded run is printed as well (the grader's own timings).
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def course(folder: Path, names: list[str]) -> Path:
    """A course folder with one student, `ref`, whose notebooks are the release with the reference answers."""
    import nbformat

    import submissions as sub

    shutil.copy(ROOT / "nbgrader_config.py", folder)
    for kind in ("solutions", "notebooks"):
        (folder / kind / "lec02").mkdir(parents=True)
        for name in names:
            shutil.copy(ROOT / kind / "lec02" / name, folder / kind / "lec02" / name)
    student = folder / "submitted" / "ref" / "lec02"
    student.mkdir(parents=True)
    for name in names:
        nbformat.write(sub.filled(name), student / name)
    return folder


def timed(argv: list[str], cwd: Path, env: dict) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2, help="alternate runs of each (default: 2)")
    parser.add_argument("--notebook", action="append", metavar="NN", help="only these notebooks (default: all)")
    args = parser.parse_args(argv)
    names = sorted(p.name for p in (ROOT / "solutions" / "lec02").glob("*.ipynb")
                   if not args.notebook or any(p.name.startswith(n) for n in args.notebook))
    env = {k: v for k, v in os.environ.items() if k != "NBGRADER_EXECUTION"}
    plain, graded = [], []
    with tempfile.TemporaryDirectory(prefix="bench-wall-") as tmp:
        tmp = Path(tmp)
        (tmp / "ref").mkdir()
        filled = course(tmp / "ref", names) / "submitted" / "ref" / "lec02"
        for k in range(args.rounds):
            folder = tmp / f"course{k}"
            shutil.copytree(tmp / "ref", folder)
            graded.append(timed([sys.executable, "-m", "lecture2_grader", "--course", str(folder), "--jobs", "1"],
                                ROOT, env))
            plain.append(timed([sys.executable, str(ROOT / "tools" / "run_cells.py"),
                                *(str(filled / n) for n in names)], tmp, env))
            print(f"round {k + 1}: make grade --jobs 1 {graded[-1]:.1f} s, plain {plain[-1]:.1f} s, "
                  f"ratio {graded[-1] / plain[-1]:.2f}", flush=True)
    print(f"median: make grade --jobs 1 {statistics.median(graded):.1f} s, plain {statistics.median(plain):.1f} s, "
          f"ratio {statistics.median(graded) / statistics.median(plain):.2f} (goal <= 1.25) on {os.cpu_count()} cores, "
          f"{len(names)} notebooks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
