"""`make release`: both editions of the student release from the one source, solutions/lec02/.

    .venv/bin/python -m tools.release [--into FOLDER] [--no-db]

One `nbgrader generate_assignment lec02 --force` per edition (lecture2.editions.EDITIONS), each naming its edition
in LECTURE2_RELEASE (nbgrader_config.py: lecture2_grader.nbgrader_hooks.ChooseEdition puts each cell's language in
place; the stubs are in that language). The source edition is written as nbgrader writes it, into
notebooks/lec02 (and recorded in the gradebook, as before); every other edition is written into a scratch folder
without the gradebook and moved to notebooks/<its folder> (notebooks/lec02-en): the same code, check cells and
grade_ids, its own prose. A notebook not translated yet is released in Chinese in the English folder, its first
cell saying so. `--into` writes the release elsewhere (tests/test_release.py compares it with the committed one).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from lecture2 import editions

ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENT = "lec02"
BIN = Path(sys.executable).parent


def generate(edition: str, release_dir: Path, course: Path = ROOT, db: bool = True) -> None:
    """nbgrader's release of `edition` into release_dir/lec02 (SystemExit with nbgrader's output if it fails)."""
    env = {**os.environ, "LECTURE2_RELEASE": edition, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("NBGRADER_EXECUTION", None)
    args = [str(BIN / "nbgrader"), "generate_assignment", ASSIGNMENT, "--force",
            f"--CourseDirectory.release_directory={release_dir}", *([] if db else ["--no-db"])]
    proc = subprocess.run(args, cwd=course, env=env, text=True, capture_output=True)
    if proc.returncode != 0:
        raise SystemExit(f"nbgrader generate_assignment ({edition}) exited {proc.returncode}:\n{proc.stdout}\n"
                         f"{proc.stderr}")


def release(into: Path, course: Path = ROOT, db: bool = True) -> list[Path]:
    """Every edition's release under `into` (into/lec02, into/lec02-en); the folders written."""
    written = []
    for code, edition in editions.EDITIONS.items():
        target = into / edition.folder
        if code == editions.SOURCE:
            generate(code, into, course, db)
        else:
            with tempfile.TemporaryDirectory(prefix=f"release-{code}-") as scratch:
                generate(code, Path(scratch), course, db=False)
                if target.exists():
                    shutil.rmtree(target)
                shutil.move(str(Path(scratch) / ASSIGNMENT), str(target))
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.release", description=__doc__.split("\n\n")[0])
    parser.add_argument("--into", type=Path, default=ROOT / "notebooks", help="the release folder (notebooks/)")
    parser.add_argument("--course", type=Path, default=ROOT, help="the course folder (nbgrader_config.py)")
    parser.add_argument("--no-db", action="store_true", help="record nothing in the course's gradebook")
    args = parser.parse_args(argv)
    for folder in release(args.into.resolve(), args.course.resolve(), not args.no_db):
        print(f"released {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
