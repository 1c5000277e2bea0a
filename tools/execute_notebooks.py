"""Execute instructor notebooks in place, so that the outputs nbval compares are fresh.

    .venv/bin/python tools/execute_notebooks.py solutions/lec02/01_tensors_dtypes.ipynb [...]

Each notebook runs in its own folder with the course kernel, as nbval and nbgrader run it, and is saved
with its outputs. NBGRADER_EXECUTION is cleared: these are the outputs a student sees in the lab.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient


def execute(path: Path) -> float:
    """Run `path` top to bottom and write it back with outputs; returns the wall time in seconds."""
    nb = nbformat.read(path, as_version=4)
    os.environ.pop("NBGRADER_EXECUTION", None)
    start = time.perf_counter()
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    elapsed = time.perf_counter() - start
    for cell in nb.cells:  # execution metadata holds timestamps: keep the files stable across runs
        cell.metadata.pop("execution", None)
    nbformat.write(nb, path)
    return elapsed


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    for name in argv:
        path = Path(name)
        if not path.is_file():
            print(f"no such notebook: {path}", file=sys.stderr)
            return 2
        print(f"{path}: {execute(path):.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
