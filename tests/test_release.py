"""Is the student release in sync with solutions/, and does it hold nothing it must not?"""
from __future__ import annotations

import json
import re

import nbformat
import pytest

from conftest import ROOT, SOLUTIONS, hidden_lines, notebook_names, solution_lines
from lecture2 import editions
from tools import release

FOLDERS = [e.folder for e in editions.EDITIONS.values()]  # notebooks/lec02 (Chinese), notebooks/lec02-en (English)


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_solution_has_a_release(folder):
    """Does each edition's folder of notebooks/ hold exactly the notebooks of solutions/, each naming its edition?"""
    assert notebook_names(), "no notebooks in solutions/"
    assert sorted(p.name for p in (ROOT / "notebooks" / folder).glob("*.ipynb")) == notebook_names()
    for name in notebook_names():
        nb = nbformat.read(ROOT / "notebooks" / folder / name, as_version=4)
        assert editions.of(nb.metadata) == editions.of_folder(folder), f"{folder}/{name}: names another edition"


@pytest.mark.slow
def test_release_is_regenerated_identically(course, tmp_path):
    """Does `make release` reproduce the committed notebooks/ byte for byte, both editions? (Run it after editing
    solutions/.)"""
    out = tmp_path / "release"
    release.release(out, course, db=False)
    for folder in FOLDERS:
        for name in notebook_names():
            fresh = (out / folder / name).read_text(encoding="utf-8")
            committed = (ROOT / "notebooks" / folder / name).read_text(encoding="utf-8")
            assert fresh == committed, f"notebooks/{folder}/{name} is stale: run `make release` and commit it"


@pytest.mark.parametrize("folder", FOLDERS)
@pytest.mark.parametrize("name", notebook_names())
def test_release_leaks_nothing(name, folder):
    """Does the release hold no solution code, no hidden test, no marker, no output and no other language?"""
    path = ROOT / "notebooks" / folder / name
    text = path.read_text(encoding="utf-8")
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"):
        assert marker not in text, f"{name}: {marker!r} in the release"
    nb = nbformat.read(path, as_version=4)
    assert not [c for c in nb.cells if set(c.metadata.get("lecture2", {})) & set(editions.EDITIONS)], \
        f"{folder}/{name}: a cell keeps another language in its metadata"
    sources = {line.strip() for c in nb.cells for line in c.source.splitlines()}
    leaked = [line for line in solution_lines(name) if line in sources]
    assert not leaked, f"{name}: solution code in the release: {leaked[:3]}"
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), f"{name}: outputs in the release"
    assert not [line for line in hidden_lines(name) if line in sources], f"{name}: hidden tests in the release"


@pytest.mark.parametrize("name", notebook_names())
def test_solution_metadata_is_sound(name):
    """Are grade ids unique, test cells locked with points, and every notebook on the python3 kernel?"""
    nb = json.loads((SOLUTIONS / name).read_text(encoding="utf-8"))
    ids = [c["metadata"]["nbgrader"]["grade_id"] for c in nb["cells"] if "nbgrader" in c["metadata"]]
    assert len(ids) == len(set(ids)), f"{name}: duplicated grade ids"
    for cell in nb["cells"]:
        meta = cell["metadata"].get("nbgrader", {})
        if meta.get("grade"):
            assert meta.get("locked") and meta.get("points", 0) > 0, f"{name}: {meta['grade_id']} must be locked, with points"
    assert nb["metadata"]["kernelspec"]["name"] == "python3"


def test_readme_lists_every_exercise():
    """Does the README's exercise table give every graded cell with its points?"""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for name in notebook_names():
        nb = nbformat.read(SOLUTIONS / name, as_version=4)
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("grade"):
                row = re.search(rf"\|[^\n]*`{meta['grade_id']}`[^\n]*\|\s*{meta['points']:g}\s*\|", readme)
                assert row, f"README's exercise table lacks `{meta['grade_id']}` with {meta['points']:g} points"


@pytest.mark.parametrize("folder", FOLDERS)
@pytest.mark.parametrize("name", notebook_names())
def test_each_notebook_says_at_the_top_how_it_is_graded(name, folder):
    """Does the first cell point to how grading works (README) and to `make validate`, which scores a notebook as
    grading will? (One line: issue 40 took the paragraph about the grader's processes out of every notebook.) In
    the English folder, a notebook not translated yet says so first."""
    nb = nbformat.read(ROOT / "notebooks" / folder / name, as_version=4)
    first = next(c for c in nb.cells if c.cell_type == "markdown").source
    language = nb.metadata.get("lecture2", {}).get("language", editions.SOURCE)
    assert ("评分方式" if language == "zh" else "grading") in first and "make validate" in first
    if language != editions.of_folder(folder):
        assert first.startswith(editions.UNTRANSLATED_NOTE[editions.of_folder(folder)].strip()[:30]), first[:80]
