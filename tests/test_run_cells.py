"""tools/run_cells.py: the Jupyter-free notebook runner of the GPU check."""
import json
import os
from pathlib import Path

from tools import run_cells


def _notebook(path: Path, *sources: str) -> Path:
    cells = [{"cell_type": "markdown", "metadata": {}, "source": ["# title"]}]
    cells += [{"cell_type": "code", "metadata": {}, "source": s.splitlines(True), "outputs": [],
               "execution_count": None} for s in sources]
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


def test_cells_share_a_namespace_and_run_in_the_notebook_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    nb = _notebook(tmp_path / "ok.ipynb", "import os\nx = 20", "print(x + 22, os.getcwd())",
                   "assert 'NBGRADER_EXECUTION' not in os.environ and os.environ['MPLBACKEND'] == 'Agg'")
    monkeypatch.delenv("MPLBACKEND", raising=False)
    before = os.getcwd()
    assert run_cells.main([str(nb)]) == 0
    assert os.getcwd() == before  # the runner goes back to where it was
    # and leaves the environment as it was: kernels started later (nbval) must keep their inline figures
    assert os.environ["NBGRADER_EXECUTION"] == "autograde" and "MPLBACKEND" not in os.environ
    out = capsys.readouterr().out
    assert f"42 {tmp_path}" in out and "1 of 1 notebooks ran every cell" in out


def test_a_failing_cell_is_named_and_the_next_notebook_still_runs(tmp_path, capsys):
    bad = _notebook(tmp_path / "bad.ipynb", "x = 1", "raise ValueError('boom')\nprint('never')")
    good = _notebook(tmp_path / "good.ipynb", "print('fine')")
    assert run_cells.main([str(bad), str(good)]) == 1
    out = capsys.readouterr().out
    assert "FAILED" in out and "cell 2 of 2" in out and "ValueError: boom" in out
    assert "fine" in out and "1 of 2 notebooks ran every cell" in out


def test_not_a_notebook_is_refused(tmp_path, capsys):
    assert run_cells.main([str(tmp_path / "missing.ipynb")]) == 2
    assert "not a notebook file" in capsys.readouterr().err
    broken = tmp_path / "broken.ipynb"
    broken.write_text("{not json")
    assert run_cells.main([str(broken)]) == 1
    assert "not a readable notebook" in capsys.readouterr().out
