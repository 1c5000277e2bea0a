"""`make collect ZIP=submissions.zip`: submissions as an LMS hands them over, into submitted/<student>/lec02/.

    .venv/bin/python -m lecture2_grader.collect submissions.zip [more.zip ...]

nbgrader's own `zip_collect` does the work (extract the archive into downloaded/lec02/extracted/, then copy
each file it can attribute into submitted/<student>/lec02/); this module gives it a collector for the file
names Canvas and Moodle use and reports every file it could not place:

    Canvas  smithjohn_12345_6789012_01_tensors_dtypes.ipynb        -> student smithjohn-12345
            smithjohn_LATE_12345_6789012_01_tensors_dtypes-1.ipynb  (late, renamed duplicate)
    Moodle  John Smith_123456_assignsubmission_file_/01_tensors_dtypes.ipynb -> student john-smith-123456
    plain   alice/01_tensors_dtypes.ipynb or alice__01_tensors_dtypes.ipynb  -> student alice

A notebook renamed by the student's browser or LMS ("01_tensors_dtypes (1).ipynb", "...-Copy1.ipynb") is
matched to the release notebook whose name it starts with. The newest file wins when a student handed in
the same notebook twice.
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path

from nbgrader.plugins.zipcollect import FileNameCollectorPlugin

from . import ASSIGNMENT

CANVAS = re.compile(r"^(?P<name>[a-z0-9]+)(?:_LATE)?_(?P<id>\d+)_\d+_(?P<file>.+)$")
MOODLE_DIR = re.compile(r"^(?P<name>.+?)_(?P<id>\d+)_assignsubmission_(?:file|onlinetext)_?$")
PLAIN = re.compile(r"^(?P<student>[A-Za-z0-9_.@+-]+?)__(?P<file>.+)$")


def slug(text: str) -> str:
    """A student id the grader accepts: ASCII letters, digits and -, from a name like "José Núñez"."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^A-Za-z0-9]+", "-", ascii_text).strip("-").lower() or "student"


def release_names(course: Path) -> list[str]:
    return sorted(p.name for p in (course / "notebooks" / ASSIGNMENT).glob("*.ipynb"))


def notebook_name(filename: str, released: list[str]) -> str | None:
    """The release notebook a handed-in file is, by name: exact, or the release name it starts with."""
    stem = re.sub(r"(-\d+|-Copy\d*| ?\(\d+\))$", "", Path(filename).stem)
    for name in released:
        if stem == name.removesuffix(".ipynb"):
            return name
    starts = [n for n in released if stem.startswith(n.removesuffix(".ipynb"))]
    return starts[0] if len(starts) == 1 else None


def attribute(path: Path, extracted: Path, released: list[str]) -> dict | None:
    """{student_id, file_id, timestamp} for one extracted file, or None when it cannot be placed."""
    if path.suffix != ".ipynb":
        return None
    relative = Path(*path.relative_to(extracted).parts[1:])  # zip_collect extracts into a folder per archive
    student = file = None
    for folder in relative.parts[:-1]:
        moodle = MOODLE_DIR.match(folder)
        if moodle:
            student, file = f"{slug(moodle['name'])}-{moodle['id']}", path.name
    if student is None:
        canvas, plain = CANVAS.match(path.name), PLAIN.match(path.name)
        if canvas:
            student, file = f"{canvas['name']}-{canvas['id']}", canvas["file"]
        elif plain:
            student, file = plain["student"], plain["file"]
        elif len(relative.parts) >= 2 and re.fullmatch(r"[A-Za-z0-9_.@+-]{1,100}", relative.parts[-2]):
            student, file = relative.parts[-2], path.name
    if student is None:
        return None
    name = notebook_name(file, released)
    if name is None:
        return None
    stamp = dt.datetime.fromtimestamp(path.stat().st_mtime, dt.timezone.utc).isoformat()
    return {"student_id": student, "file_id": name, "timestamp": stamp}


class LMSCollector(FileNameCollectorPlugin):
    """nbgrader zip_collect's collector for Canvas, Moodle and plain file names (see the module's doc)."""

    def collect(self, submitted_file: str) -> dict | None:
        course = Path.cwd()
        extracted = course / "downloaded" / ASSIGNMENT / "extracted"
        return attribute(Path(submitted_file), extracted, release_names(course))


def collect(course: Path, archives: list[Path]) -> tuple[dict[str, list[str]], list[str]]:
    """Run nbgrader's zip_collect on `archives`; returns (student -> notebooks placed, files not placed)."""
    course = course.resolve()
    archive_dir = course / "downloaded" / ASSIGNMENT / "archive"
    shutil.rmtree(course / "downloaded" / ASSIGNMENT, ignore_errors=True)
    archive_dir.mkdir(parents=True)
    for archive in archives:
        shutil.copy(archive, archive_dir / archive.name)
    bin_dir = Path(sys.executable).parent
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
               PYTHONPATH=f"{Path(__file__).resolve().parents[2]}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    proc = subprocess.run([str(bin_dir / "nbgrader"), "zip_collect", ASSIGNMENT, "--force", "--strict",
                           "--collector=lecture2_grader.collect.LMSCollector"], cwd=course, env=env, text=True,
                          capture_output=True)
    if proc.returncode != 0:
        raise SystemExit(f"error: nbgrader zip_collect failed:\n{proc.stderr[-2000:]}")
    extracted = course / "downloaded" / ASSIGNMENT / "extracted"
    released = release_names(course)
    placed: dict[str, list[str]] = {}
    unplaced = []
    for path in sorted(p for p in extracted.rglob("*") if p.is_file()):
        info = attribute(path, extracted, released)
        if info is None:
            unplaced.append(str(path.relative_to(extracted)))
        else:
            placed.setdefault(info["student_id"], []).append(info["file_id"])
    return placed, unplaced


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make collect ZIP=...", description=__doc__.split("\n\n")[0])
    parser.add_argument("archives", nargs="+", type=Path, help="zip files downloaded from the LMS")
    parser.add_argument("--course", type=Path, default=Path("."))
    args = parser.parse_args(argv)
    missing = [str(a) for a in args.archives if not a.is_file()]
    if missing:
        parser.error(f"no such file: {', '.join(missing)}")
    placed, unplaced = collect(args.course, args.archives)
    for student in sorted(placed):
        print(f"{student}: {', '.join(sorted(set(placed[student])))}")
    for name in unplaced:
        print(f"not placed: {name} (no student or notebook recognised in its name)")
    print(f"{len(placed)} students collected into submitted/; {len(unplaced)} files not placed", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
