"""Is environment.yml the same environment as pyproject.toml?"""
import pytest

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

import yaml

from conftest import ROOT


def test_environment_yml_lists_the_pip_dependencies():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = set(project["dependencies"]) | set(project["optional-dependencies"]["test"])
    env = yaml.safe_load((ROOT / "environment.yml").read_text(encoding="utf-8"))
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    assert set(pip) - {"-e ."} == wanted
    assert "-e ." in pip, "the environment installs lecture2 itself (editable) so kernels can import it"
    python = next(d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python"))
    minimum = project["requires-python"].removeprefix(">=")
    assert tuple(map(int, python.split("=")[-1].split("."))) >= tuple(map(int, minimum.split(".")))
