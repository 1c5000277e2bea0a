"""lecture2_grader.collect (`make collect ZIP=...`): an LMS download into submitted/<student>/lec02/."""
from __future__ import annotations

import shutil
import zipfile

import pytest

from conftest import RELEASE, ROOT, SOLUTIONS
from lecture2_grader.collect import collect

pytestmark = pytest.mark.slow


def test_canvas_and_moodle_downloads_are_placed_and_strays_reported(tmp_path):
    shutil.copy(ROOT / "nbgrader_config.py", tmp_path)
    shutil.copytree(SOLUTIONS.parent, tmp_path / "solutions")
    shutil.copytree(RELEASE.parent, tmp_path / "notebooks")
    nb1 = (RELEASE / "01_tensors_dtypes.ipynb").read_bytes()
    nb2 = (RELEASE / "02_autograd.ipynb").read_bytes()
    archive = tmp_path / "submissions.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("smithjohn_12345_6789012_01_tensors_dtypes.ipynb", nb1)  # Canvas
        z.writestr("smithjohn_LATE_12345_6789013_02_autograd-1.ipynb", nb2)  # Canvas, late, renamed duplicate
        z.writestr("José Núñez_123456_assignsubmission_file_/01_tensors_dtypes (1).ipynb", nb1)  # Moodle
        z.writestr("alice/02_autograd.ipynb", nb2)
        z.writestr("bob__01_tensors_dtypes.ipynb", nb1)
        z.writestr("01_tensors_dtypes.ipynb", nb1)  # whose?
        z.writestr("readme.txt", "hello")
    placed, unplaced = collect(tmp_path, [archive])
    assert {k: sorted(v) for k, v in placed.items()} == {
        "smithjohn-12345": ["01_tensors_dtypes.ipynb", "02_autograd.ipynb"],
        "jose-nunez-123456": ["01_tensors_dtypes.ipynb"], "alice": ["02_autograd.ipynb"],
        "bob": ["01_tensors_dtypes.ipynb"]}
    assert sorted(unplaced) == ["submissions/01_tensors_dtypes.ipynb", "submissions/readme.txt"]
    assert (tmp_path / "submitted" / "jose-nunez-123456" / "lec02" / "01_tensors_dtypes.ipynb").read_bytes() == nb1
