"""`make validate`: check a notebook as the grader will, before handing it in.

    .venv/bin/python -m lecture2_grader.validate notebooks/lec02/01_tensors_dtypes.ipynb [...]

It runs the grader's own pipeline (lecture2_grader.pipeline) on the release's visible checks: reads the file
(BOM, CRLF and old nbformat are fine), picks out the answer cells and the student's own helper cells, runs
them in a fresh process beside a judge that runs the test cells, and scores the visible check groups exactly
as grading will (without a sandbox: it is the student's own machine and code). It prints one block per
exercise, then anything the grader would report. Exit status 0 when every notebook could be read (whatever
its score), 2 for a file that is not a notebook of the assignment or cannot be read.
"""
from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from lecture2 import editions

from . import pipeline, submission
from .messages import say
from .course import load
from .feedback import text_report
from .judging import launch
from .records import Judged
from .run.preflight import font_cache, package_dir
from .runtime import CELL_SECONDS, Runtime
from .text import multiline, terminal

ROOT = Path(__file__).resolve().parents[1]


def release_copy(name: str, edition: str = editions.SOURCE) -> Path | None:
    """The untouched release notebook `name` of `edition`: the bundle keeps one in .release/<its folder>, the
    course in notebooks/<its folder> (lec02, lec02-en)."""
    folder_name = editions.EDITIONS[edition].folder
    for folder in (ROOT / ".release" / folder_name, ROOT / "notebooks" / folder_name):
        if (folder / name).is_file():
            return folder / name
    return None


@contextlib.contextmanager
def student_runtime(cell_timeout: float = CELL_SECONDS) -> Iterator[Runtime]:
    """A student's own machine's Runtime (Runtime.for_student: no sandbox, every core) with this environment's lecture2
    and a font cache of its own, removed when the block ends (make validate, make handin)."""
    scratch = Path(tempfile.mkdtemp(prefix="lecture2-validate-"))
    try:
        yield Runtime.for_student(cell_timeout, package_dir(), font_cache(scratch))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def validate(path: Path, runtime: Runtime) -> tuple[int, list[str]]:
    """(exit status, lines to print) for one student notebook."""
    edition = editions.of_file(path) or editions.SOURCE  # the student's notebook's edition: its checks' language
    release = release_copy(path.name, edition) or release_copy(path.name)
    if release is None:
        return 2, [say("validate.not_ours", edition, name=terminal(path.name))]
    nb = load(release, release, editions.of_file(release) or editions.SOURCE)
    job = pipeline.prepare("you", path, nb, runtime)
    if job.judge is None:
        return 2, [f"{terminal(path.name)}: {terminal(job.problems[0] if job.problems else 'cannot be read')}"]
    judged = Judged.from_json(launch.run(job.judge, runtime))
    result = pipeline.finish(job, judged, nb)
    visible = sum(t.visible_max if t.visible_max is not None else t.max_points for t in result.tests)
    lines = [say("validate.score", nb.edition, stem=nb.stem, score=f"{result.score:g}", visible=f"{visible:g}",
                 max_score=f"{nb.max_score:g}"), text_report(nb, result)]
    lines += [f"⚠️ {multiline(p)}" for p in result.problems]
    lines += [f"ℹ️ {multiline(n)}" for n in result.notices]
    size = path.stat().st_size
    if size > submission.LARGE:
        lines.append("ℹ️ " + say("validate.large", nb.edition, mb=f"{size / 1e6:.0f}"))
    return 0, lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make validate NOTEBOOK=...", description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="+", type=Path, help="your notebook file(s)")
    parser.add_argument("--cell-timeout", type=float, default=CELL_SECONDS,
                        help=f"seconds one cell may run (default {CELL_SECONDS:g})")
    args = parser.parse_args(argv)
    status = 0
    with student_runtime(args.cell_timeout) as runtime:
        for path in args.notebooks:
            if not path.is_file():
                print(say("validate.no_file", editions.SOURCE, name=terminal(path)))
                status = max(status, 2)
                continue
            code, lines = validate(path, runtime)
            print("\n".join(lines))
            status = max(status, code)
    return status


if __name__ == "__main__":
    sys.exit(main())
