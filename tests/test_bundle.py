"""Does the student bundle hold what students need and nothing of the solutions?"""
import re
import zipfile

import nbformat

from conftest import SOLUTIONS, notebook_names
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
    solution_lines, hidden = set(), set()
    for nb_name in notebook_names():
        for cell in nbformat.read(SOLUTIONS / nb_name, as_version=4).cells:
            for region in re.findall(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", cell.source, re.S):
                solution_lines |= {line.strip() for line in region.splitlines() if len(line.strip()) > 12}
            for region in re.findall(r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS", cell.source, re.S):
                hidden |= {line.strip() for line in region.splitlines() if len(line.strip()) > 20}
    for name in zf.namelist():
        text = zf.read(name).decode("utf-8", errors="replace")
        assert "BEGIN SOLUTION" not in text and "BEGIN HIDDEN TESTS" not in text, name
        if name.endswith(".ipynb"):
            sources = {line.strip() for c in nbformat.reads(text, as_version=4).cells for line in c.source.splitlines()}
            visible = solution_lines & sources
            assert not visible, f"{name}: solution code {sorted(visible)[:2]}"
