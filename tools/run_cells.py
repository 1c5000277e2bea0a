"""Run notebooks' code cells in plain Python, without Jupyter: for a machine that has torch but no Jupyter
(the GPU check in tools/gpu_checks.sh). Not a replacement for nbval or nbgrader, which compare outputs and
grade; this only proves that every cell runs, and prints what the cells print.

    python3 tools/run_cells.py solutions/lec02/01_tensors_dtypes.ipynb [...]

Each notebook runs in a fresh namespace, in its own folder, with matplotlib's Agg backend and
NBGRADER_EXECUTION unset (as a student runs it). Exit status 0 when every cell of every notebook ran;
1 when a cell raised (the notebook, the cell's number and its first line are printed, then the next notebook
runs); 2 for a path that is not a notebook.
"""
from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the notebooks import lecture2 from the checkout when it is not installed


def code_cells(path: Path) -> list[str]:
    """The sources of `path`'s code cells, in order; a ValueError for a file that is not a notebook."""
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
        return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
                for c in nb["cells"] if c["cell_type"] == "code"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{path}: not a readable notebook ({type(err).__name__}: {err})") from None


def run(path: Path) -> bool:
    """Run every code cell of `path` in one namespace; False at the first cell that raises."""
    cells = code_cells(path)
    namespace: dict = {"__name__": "__main__"}
    start = time.perf_counter()
    here = os.getcwd()
    os.chdir(path.parent)
    try:
        for i, source in enumerate(cells, 1):
            if source.lstrip().startswith(("%", "!")):
                print(f"  cell {i}: IPython magic, skipped")
                continue
            t = time.perf_counter()
            try:
                exec(compile(source, f"{path.name}[cell {i}]", "exec"), namespace)
            except BaseException as err:  # SystemExit and KeyboardInterrupt from a cell count as failures too
                if isinstance(err, KeyboardInterrupt):
                    raise
                first = (source.strip().splitlines() or [""])[0][:80]
                print(f"FAILED {path} cell {i} of {len(cells)} ({first!r}) after {time.perf_counter() - t:.1f} s:")
                traceback.print_exc(file=sys.stdout)
                return False
            finally:
                _close_figures()
    finally:
        os.chdir(here)
    print(f"ok {path}: {len(cells)} code cells in {time.perf_counter() - start:.1f} s")
    return True


def _close_figures() -> None:
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.close("all")


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    paths = [Path(a) for a in argv]
    missing = [str(p) for p in paths if not p.is_file() or p.suffix != ".ipynb"]
    if missing:
        print(f"not a notebook file: {', '.join(missing)}", file=sys.stderr)
        return 2
    saved = dict(os.environ)  # put the environment back afterwards: main() also runs inside pytest, whose
    os.environ.pop("NBGRADER_EXECUTION", None)  # later kernels (nbval) inherit it and would lose inline figures
    os.environ.setdefault("MPLBACKEND", "Agg")
    failed = 0
    try:
        for path in paths:
            try:
                ok = run(path.resolve())
            except ValueError as err:
                print(f"FAILED {err}")
                ok = False
            failed += not ok
    finally:
        os.environ.clear()
        os.environ.update(saved)
    print(f"{len(paths) - failed} of {len(paths)} notebooks ran every cell")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
