"""Shared fixtures: paths of the course, and a kernel that runs notebook cells one by one."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENT = "lec02"
SOLUTIONS = ROOT / "solutions" / ASSIGNMENT
RELEASE = ROOT / "notebooks" / ASSIGNMENT
BIN = Path(sys.executable).parent


# The secret hidden cases are drawn from where no course gives one (nbval's kernels, tests/judging.py): one per run,
# shown in pytest's header, so that a draw that fails can be drawn again (LECTURE2_DRAW_SECRET=... pytest ...).
os.environ.setdefault("LECTURE2_DRAW_SECRET", os.urandom(16).hex())


def pytest_report_header(config) -> str:
    return f"hidden cases drawn with LECTURE2_DRAW_SECRET={os.environ['LECTURE2_DRAW_SECRET']}"


def notebook_names() -> list[str]:
    """The lecture's notebooks, in order (file names)."""
    return sorted(p.name for p in SOLUTIONS.glob("*.ipynb"))


def _region_lines(name: str, begin: str, end: str, min_length: int) -> set[str]:
    inside, outside = set(), set()
    pattern = rf"### {begin}\n(.*?)### {end}"
    for cell in nbformat.read(SOLUTIONS / name, as_version=4).cells:
        for region in re.findall(pattern, cell.source, re.S):
            inside |= {line.strip() for line in region.splitlines() if len(line.strip()) >= min_length}
        outside |= {line.strip() for line in re.sub(pattern, "", cell.source, flags=re.S).splitlines()}
    return inside - outside


def hidden_lines(name: str, min_length: int = 20) -> set[str]:
    """Lines that appear only inside the hidden-test regions of a solutions notebook (stripped)."""
    return _region_lines(name, "BEGIN HIDDEN TESTS", "END HIDDEN TESTS", min_length)


def solution_lines(name: str, min_length: int = 13) -> set[str]:
    """Lines that appear only inside the solution regions of a solutions notebook (stripped)."""
    return _region_lines(name, "BEGIN SOLUTION", "END SOLUTION", min_length)


def nbgrader_env() -> dict[str, str]:
    """The environment nbgrader needs: this interpreter's bin/ first on PATH (it runs `alembic`)."""
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.pop("NBGRADER_EXECUTION", None)
    return env


def nbgrader(*args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    """Run `nbgrader ARGS` in `cwd`, failing the test with nbgrader's output if it fails."""
    proc = subprocess.run([str(BIN / "nbgrader"), *args], cwd=cwd, env=nbgrader_env(), text=True,
                          capture_output=True)
    if check and proc.returncode != 0:
        pytest.fail(f"nbgrader {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


@pytest.fixture(scope="session")
def course(tmp_path_factory) -> Path:
    """A scratch copy of the course directory (config, solutions, release) with its own gradebook."""
    root = tmp_path_factory.mktemp("course")
    shutil.copy(ROOT / "nbgrader_config.py", root)
    shutil.copytree(ROOT / "solutions", root / "solutions")
    shutil.copytree(ROOT / "notebooks", root / "notebooks")
    nbgrader("generate_assignment", ASSIGNMENT, "--force", cwd=root)  # registers the notebooks in the gradebook
    return root
