"""Build what students receive: the release notebooks, lecture2, a student README and the environment files.

    .venv/bin/python -m tools.bundle [--out dist/lecture2-student.zip]     (what `make bundle` runs)

Nothing else goes in: no solutions/, no tests (their planted mistakes are answers too), no grading
artefacts, no tools/. The bundle's Makefile sets up and opens the lab exactly as the course's does.
"""
from __future__ import annotations

import argparse
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENT = "lec02"

STUDENT_README = """# Lecture 2 — PyTorch and compute accounting (student bundle)

```bash
make lab     # set up .venv (PyTorch 2.13.0, JupyterLab, lecture2), then open JupyterLab on notebooks/
```

Work through `notebooks/lec02/` in order. Each exercise is a function in a cell marked `YOUR CODE HERE`;
the check cell under it says ✅ or tells you what was expected, what came back, and a hint. Hidden checks run
when your instructor grades. Before handing in, validate each notebook as the grader will:

```bash
make validate NOTEBOOK=notebooks/lec02/01_tensors_dtypes.ipynb
```

Hand in the notebooks of `notebooks/lec02/` as your instructor asks. `python -m lecture2 env` prints what
your machine has (device, dtype support, the peak FLOP/s that applies).

## 学生版说明

```bash
make lab     # 建立 .venv（PyTorch 2.13.0、JupyterLab、lecture2），然后在 notebooks/ 上打开 JupyterLab
```

按顺序完成 `notebooks/lec02/`。每个练习是一个函数，写在标有 `YOUR CODE HERE` 的单元格里；下面的检查单元格
通过时显示 ✅，否则告诉你期望值、你的结果和提示。交作业前用 `make validate NOTEBOOK=...` 检查整个 notebook。
"""

STUDENT_MAKEFILE = """PYTHON ?= python3
BIN := .venv/bin
export PATH := $(CURDIR)/$(BIN):$(PATH)
.PHONY: setup lab validate
setup: .venv/.installed
.venv/.installed: pyproject.toml
\ttest -x $(BIN)/python || $(PYTHON) -m venv .venv
\t$(BIN)/python -m pip install --quiet --upgrade pip
\t$(BIN)/python -m pip install --quiet -e .
\t$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (lecture2)" >/dev/null
\ttouch .venv/.installed
lab: setup
\t$(BIN)/jupyter lab --notebook-dir=notebooks
validate: setup
\t$(BIN)/nbgrader validate $(NOTEBOOK)
"""


def bundle_files() -> dict[str, bytes]:
    """Archive path -> content of everything a student receives."""
    files: dict[str, bytes] = {}
    release = ROOT / "notebooks" / ASSIGNMENT
    for path in sorted(release.glob("*.ipynb")):
        files[f"notebooks/{ASSIGNMENT}/{path.name}"] = path.read_bytes()
    for path in sorted((ROOT / "lecture2").rglob("*.py")):
        files[str(path.relative_to(ROOT))] = path.read_bytes()
    for path in sorted((ROOT / "lecture2").rglob("*.json")):  # data the package ships
        files[str(path.relative_to(ROOT))] = path.read_bytes()
    files["pyproject.toml"] = (ROOT / "pyproject.toml").read_bytes()
    files["environment.yml"] = (ROOT / "environment.yml").read_bytes()
    files["README.md"] = STUDENT_README.encode("utf-8")
    files["Makefile"] = STUDENT_MAKEFILE.encode("utf-8")
    return files


def write(out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in bundle_files().items():
            zf.writestr(f"lecture2-student/{name}", data)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.bundle", description="Build the student bundle (a zip).")
    parser.add_argument("--out", type=Path, default=ROOT / "dist" / "lecture2-student.zip")
    args = parser.parse_args(argv)
    if not (ROOT / "notebooks" / ASSIGNMENT).is_dir():
        parser.error(f"no release in notebooks/{ASSIGNMENT}: run `make release` first")
    path = write(args.out)
    print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
