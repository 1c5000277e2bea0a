"""`make handin`: validate every notebook, then write the one zip to hand in, with the names the collector reads.

    .venv/bin/python -m lecture2_grader.handin [--student ID] [--out lec02-handin.zip] [--no-validate]

The zip holds notebooks/lec02/*.ipynb exactly as saved, under lec02/ (or <ID>/lec02/ with --student):

    lec02-handin.zip          lec02/01_tensors_dtypes.ipynb ... lec02/11_parallel_plans.ipynb    upload it to the LMS:
                              Canvas and Moodle put the student's name on the file, and the collector reads it
    alice-lec02-handin.zip    alice/lec02/01_tensors_dtypes.ipynb ...                      by e-mail or a shared
                              folder: the folder names the student (their id as the course knows it)

Before writing it runs `make validate`'s checks on each notebook and prints one line each (the visible checks'
points). Exit status 0 when every notebook could be read, whatever the score; 1 when one could not (the zip is
written all the same, and the line says which notebook to save again from Jupyter).
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import time
import zipfile
from pathlib import Path

from lecture2 import editions

from . import ASSIGNMENT
from .files import AS_OPEN, atomic_file
from .intake.names import STUDENT_ID  # the ids the collector reads back from <ID>/lec02/
from .messages import say
from .text import terminal

ROOT = Path(__file__).resolve().parents[1]


def zip_name(student: str | None) -> str:
    return f"{student}-{ASSIGNMENT}-handin.zip" if student else f"{ASSIGNMENT}-handin.zip"


def write(folder: Path, out: Path, student: str | None = None) -> list[str]:
    """The hand-in zip of the notebooks in `folder`; returns the notebook names it holds."""
    names = sorted(p.name for p in folder.glob("*.ipynb") if p.is_file())
    prefix = f"{student}/{ASSIGNMENT}" if student else ASSIGNMENT
    # whole or not at all, and readable as any file the student saves (an instructor reads a shared hand-in folder)
    with atomic_file(out, AS_OPEN) as f, zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in names:
            path = folder / name
            info = zipfile.ZipInfo(f"{prefix}/{name}", date_time=time.localtime(path.stat().st_mtime)[:6])
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, path.read_bytes())
    return names


def validate_all(paths: list[Path], lang: str = editions.SOURCE) -> tuple[int, list[str]]:
    """(0 when every notebook could be read else 1, one summary line per notebook) from `make validate`'s checks,
    in `lang`."""
    from . import validate

    status, lines = 0, []
    with validate.student_runtime() as runtime:
        for path in paths:
            code, result = validate.validate(path, runtime)
            head = result[0] if result else terminal(path.name)
            if code != 0:
                status = 1
                lines.append("❌ " + say("handin.save_again", lang, head=head))
            else:
                lines.append("✅ " + re.sub(r" \([^()]*\)$", "", head))  # without its note on the hidden checks
            print(lines[-1], flush=True)
    return status, lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make handin", description=__doc__.split("\n\n")[0])
    parser.add_argument("--student", help="your id as the course knows it, when you hand in by e-mail or a shared "
                                          "folder (an LMS names the file for you)")
    parser.add_argument("--edition", choices=sorted(editions.EDITIONS),
                        default=os.environ.get(editions.ENV) if os.environ.get(editions.ENV) in editions.EDITIONS
                        else editions.SOURCE, help="the edition you worked in (its folder, and the language of what "
                                                   "this says): zh (notebooks/lec02) or en (notebooks/lec02-en)")
    parser.add_argument("--notebooks", type=Path, help="the folder of your notebooks (default: your edition's)")
    parser.add_argument("--out", type=Path, help="the zip to write (default: lec02-handin.zip here)")
    parser.add_argument("--no-validate", action="store_true", help="write the zip without running the checks")
    args = parser.parse_args(argv)
    lang = args.edition
    folder = args.notebooks or ROOT / "notebooks" / editions.EDITIONS[lang].folder
    student = (args.student or "").strip() or None
    if student and not STUDENT_ID.fullmatch(student):
        parser.error(say("handin.bad_student", lang, student=repr(terminal(student, 60))))
    paths = sorted(folder.glob("*.ipynb"))
    if not paths:
        parser.error(say("handin.no_notebooks", lang, folder=terminal(folder, 200)))
    status = 0
    if not args.no_validate:
        print(say("handin.validating", lang), flush=True)
        status, _ = validate_all(paths, lang)
    out = args.out or Path.cwd() / zip_name(student)
    names = write(folder, out, student)
    print("\n" + say("handin.written", lang, out=out, count=len(names))
          + ("" if student else say("handin.by_mail", lang)))
    return status


if __name__ == "__main__":
    sys.exit(main())
