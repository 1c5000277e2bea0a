"""Setup: is environment.yml the same environment as pyproject.toml, and do the Makefile's setup and test
commands do what the README says?"""
import shutil
import subprocess

import pytest

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

import yaml

from conftest import ROOT


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_environment_yml_lists_the_pip_dependencies():
    project = _project()["project"]
    wanted = set(project["dependencies"]) | set(project["optional-dependencies"]["test"])
    env = yaml.safe_load((ROOT / "environment.yml").read_text(encoding="utf-8"))
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    assert set(pip) - {"-e ."} == wanted
    assert "-e ." in pip, "the environment installs lecture2 itself (editable) so kernels can import it"
    python = next(d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python"))
    minimum = project["requires-python"].removeprefix(">=")
    assert tuple(map(int, python.split("=")[-1].split("."))) >= tuple(map(int, minimum.split(".")))


def test_package_data_is_configured_so_setuptools_stays_quiet():
    """lecture2/profiles (JSON only) is a listed package with its JSON as package data: setuptools warns about an
    unlisted importable folder, and would leave the shipped profiles out of a wheel. Every folder of the grader
    (lecture2_grader/intake/ ...) is listed too, or a wheel would install a grader that cannot import itself."""
    setuptools = _project()["tool"]["setuptools"]
    folders = {str(p.parent.relative_to(ROOT)).replace("/", ".") for package in ("lecture2", "lecture2_grader")
               for p in (ROOT / package).rglob("*.*")
               if p.suffix in (".py", ".json") and "__pycache__" not in p.parts}
    assert folders <= set(setuptools["packages"]), folders - set(setuptools["packages"])
    assert setuptools["package-data"]["lecture2.profiles"] == ["*.json"]


def _make_n(*args: str) -> str:
    """The commands `make ARGS` would run from the repository root, printed (-n), none run, every target
    taken as out of date (-B); .venv is pointed at an empty place so that the real one is not consulted."""
    if not shutil.which("make"):
        pytest.skip("make is not installed")
    proc = subprocess.run(["make", "-n", "-B", "VENV=.venv-none", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_torch_cpu_takes_the_pinned_release_from_pytorchs_cpu_index():
    """`make setup TORCH=cpu` installs torch==<the pyproject pin> from PyTorch's CPU wheel index before the
    project (which then finds it installed); without TORCH, setup is pip's default and names no other index."""
    pin = next(d for d in _project()["project"]["dependencies"] if d.startswith("torch=="))
    cpu = _make_n("setup", "TORCH=cpu")
    assert f"pip install --quiet {pin} --index-url https://download.pytorch.org/whl/cpu" in cpu
    assert cpu.index("--index-url") < cpu.index("-e '.[test]'")
    plain = _make_n("setup")
    assert "--index-url" not in plain and "download.pytorch.org" not in plain and "-e '.[test]'" in plain


def test_test_fast_runs_no_notebook_and_test_runs_them_all():
    """`make test` (CI) adds --nbval, so nbval runs every notebook of solutions/ (testpaths); pytest's default
    options do not, so `make test-fast` (and a bare pytest) runs the unit tests only. `make test` runs pytest in
    two lanes side by side (tests/lanes.py), each with the same arguments."""
    options = _project()["tool"]["pytest"]["ini_options"]
    assert "--nbval" not in options["addopts"].split() and "solutions" in options["testpaths"]
    assert "tests/lanes.py --nbval" in _make_n("test")
    fast = _make_n("test-fast")
    assert "pytest -m \"not slow\"" in fast or "pytest -m not slow" in fast
    assert "--nbval" not in fast
