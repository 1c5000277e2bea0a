"""Benchmark of the class grader's speed (figures for the notes, not a test).

    .venv/bin/python -m tools.bench_grade [--students 4] [--skip-class]

1. plain: the release notebooks with the reference answers typed in, every code cell in one plain Python
   process per notebook (tools/run_cells.py), one after the other;
2. grade one: `make grade`'s grader on that same full submission (default jobs: the cores);
3. class: N copies of it graded with --jobs 1 and with --jobs 2.
Prints each time and the ratios the grader is held to: grade one / plain (goal <= 1.5) and class jobs 1 /
jobs 2 (goal >= 1.85 on 2 cores). Run it on a quiet machine.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from lecture2_grader import ASSIGNMENT, cli

ROOT = Path(__file__).resolve().parent.parent


def filled_release(folder: Path) -> list[Path]:
    """The release notebooks with the reference answers typed in, written to `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for source in sorted((ROOT / "solutions" / ASSIGNMENT).glob("*.ipynb")):
        reference = {c.metadata["nbgrader"]["grade_id"]: c.source for c in nbformat.read(source, 4).cells
                     if c.metadata.get("nbgrader", {}).get("solution")}
        nb = nbformat.read(ROOT / "notebooks" / ASSIGNMENT / source.name, 4)
        for cell in nb.cells:
            gid = cell.metadata.get("nbgrader", {}).get("grade_id")
            if gid in reference:
                cell.source = reference[gid]
        nbformat.write(nb, folder / source.name)
        paths.append(folder / source.name)
    return paths


def course_with(students: int, root: Path, submission: Path) -> Path:
    course = root / "course"
    course.mkdir(parents=True)
    shutil.copy(ROOT / "nbgrader_config.py", course)
    shutil.copytree(ROOT / "solutions", course / "solutions")
    shutil.copytree(ROOT / "notebooks", course / "notebooks")
    for i in range(students):
        shutil.copytree(submission, course / "submitted" / f"student{i:02d}" / ASSIGNMENT)
    return course


def timed(label: str, fn) -> float:
    start = time.perf_counter()
    fn()
    seconds = time.perf_counter() - start
    print(f"{label:<44} {seconds:7.1f} s", flush=True)
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=4)
    parser.add_argument("--skip-class", action="store_true", help="only plain vs one full submission")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        submission = tmp / "submission"
        paths = filled_release(submission)
        env = dict(os.environ)
        env.pop("NBGRADER_EXECUTION", None)
        plain = timed("plain: run_cells.py on the 10 notebooks" if len(paths) == 10 else
                      f"plain: run_cells.py on the {len(paths)} notebooks",
                      lambda: subprocess.run([sys.executable, str(ROOT / "tools" / "run_cells.py"), *map(str, paths)],
                                             check=True, capture_output=True, env=env))
        one = course_with(1, tmp / "one", submission)
        jobs = os.cpu_count() or 1
        graded = timed(f"grade one full submission (--jobs {jobs})",
                       lambda: cli.grade_class(one, cli.make_runtime(jobs), jobs=jobs))
        print(f"ratio grade / plain: {graded / plain:.2f} (goal <= 1.5)")
        if not args.skip_class:
            course = course_with(args.students, tmp / "class", submission)
            t1 = timed(f"grade {args.students} full submissions --jobs 1",
                       lambda: cli.grade_class(course, cli.make_runtime(1), jobs=1))
            t2 = timed(f"grade {args.students} full submissions --jobs 2",
                       lambda: cli.grade_class(course, cli.make_runtime(2), jobs=2))
            print(f"speed-up jobs 1 -> 2: {t1 / t2:.2f}x (goal >= 1.85 on 2 cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
