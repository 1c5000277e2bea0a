"""`make collect ZIP=submissions.zip`: submissions as an LMS hands them over, into submitted/<student>/lec02/.

    .venv/bin/python -m lecture2_grader.collect submissions.zip [late.zip ...] [exchange/inbound/]

Each zip (or folder) is merged notebook by notebook (lecture2_grader.intake): a notebook it does not hold stays
as it was, a newer copy replaces the older one, which is kept in submitted/<student>/history/, and a copy
already received changes nothing. So a late zip of one notebook can be collected alone, at any hour, as often
as it comes. File names as the LMSs write them:

    Canvas    smithjohn_12345_6789012_01_tensors_dtypes.ipynb          -> student smithjohn-12345
              smithjohn_LATE_12345_6789012_01_tensors_dtypes-1.ipynb    (marked late, a renamed duplicate)
              smithjohn_12345_6789012_lec02-handin.zip                  (a `make handin` zip: every notebook in it)
    Moodle    John Smith_123456_assignsubmission_file_/01_tensors_dtypes.ipynb -> student john-smith-123456
    exchange  alice+lec02+2026-03-01 10:00:00.000000 UTC/01_tensors_dtypes.ipynb  (nbgrader's inbound folder)
    plain     alice/01_tensors_dtypes.ipynb, alice/lec02/01_tensors_dtypes.ipynb, alice__01_tensors_dtypes.ipynb

A notebook renamed by a browser or an LMS ("01_tensors_dtypes (1).ipynb", "...-Copy1.ipynb") is matched to the
release notebook it starts with; a misnamed one ("01_tensor_dtypes.ipynb") to the notebook its cells belong to,
or to the clearly nearest name; every such match is reported, and a file whose match is ambiguous is not
placed. Submission times come from the zip entries (the LMS sets them), Canvas's _LATE marker is kept, and the
due date is c.Lecture2Grader.due in nbgrader_config.py.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import intake
from .text import terminal


def collect(course: Path, archives: list[Path]) -> tuple[dict[str, list[str]], list[str]]:
    """Merge `archives` into submitted/; returns (student -> one phrase per notebook, lines for files not placed)."""
    return intake.collect(course, archives)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make collect ZIP=...", description=__doc__.split("\n\n")[0])
    parser.add_argument("archives", nargs="+", type=Path, help="zip files downloaded from the LMS, or folders")
    parser.add_argument("--course", type=Path, default=Path("."))
    args = parser.parse_args(argv)
    missing = [terminal(a, 200) for a in args.archives if not (a.is_file() or a.is_dir())]
    if missing:
        parser.error(f"no such file: {', '.join(missing)}")
    if not (args.course / "nbgrader_config.py").is_file():
        parser.error(f"{terminal(args.course.resolve(), 200)} is not the course folder (no nbgrader_config.py)")
    placed, unplaced = collect(args.course, args.archives)
    for student in sorted(placed):
        print(terminal(f"{student}: {', '.join(placed[student])}", 4000))
    for line in unplaced:
        print(f"not placed: {line}")
    print(f"{len(placed)} students collected into submitted/ (earlier copies in submitted/<student>/history/); "
          f"{len(unplaced)} files not placed", file=sys.stderr)
    if unplaced:
        print("a file not placed: copy it by hand into submitted/<student>/lec02/ under its release name, or collect "
              "it again once renamed (README: late and misnamed files)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
