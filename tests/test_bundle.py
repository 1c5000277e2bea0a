"""Does the student bundle hold what students need and nothing of the solutions?"""
import re
import zipfile

import nbformat

from conftest import hidden_lines, notebook_names, solution_lines
from tools import bundle


def test_bundle_has_the_release_package_and_setup(tmp_path):
    path = bundle.write(tmp_path / "b.zip")
    names = set(zipfile.ZipFile(path).namelist())
    for name in notebook_names():
        assert f"lecture2-student/notebooks/lec02/{name}" in names
    for needed in ("lecture2/__init__.py", "lecture2/checks.py", "pyproject.toml", "environment.yml", "README.md",
                   "Makefile"):
        assert f"lecture2-student/{needed}" in names


def test_nothing_of_the_solutions_leaks_into_the_bundle(tmp_path):
    """No solutions/, tests/, tools/ or grading artefacts; no solution line or hidden test in any file."""
    zf = zipfile.ZipFile(bundle.write(tmp_path / "b.zip"))
    for name in zf.namelist():
        assert not re.search(r"/(solutions|tests|tools|submitted|autograded|feedback)/|gradebook|grades\.csv", name), name
    for name in zf.namelist():
        text = zf.read(name).decode("utf-8", errors="replace")
        assert "BEGIN SOLUTION" not in text and "BEGIN HIDDEN TESTS" not in text, name
        if name.endswith(".ipynb"):
            nb_name = name.rsplit("/", 1)[-1]
            sources = {line.strip() for c in nbformat.reads(text, as_version=4).cells for line in c.source.splitlines()}
            leaked = (solution_lines(nb_name) | hidden_lines(nb_name)) & sources
            assert not leaked, f"{name}: solution code or hidden tests {sorted(leaked)[:2]}"
