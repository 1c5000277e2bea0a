"""Is every exercise graded? The reference passes, the stub fails, and each usual mistake draws its hint."""
from __future__ import annotations

import nbformat
import pytest

from conftest import RELEASE, SOLUTIONS, notebook_names
from kernel import NotebookKernel
from planted import all_planted

pytestmark = pytest.mark.slow


def graded_pairs(path) -> list[tuple[str, str]]:
    """(solution grade_id, test grade_id) for each exercise, in notebook order: a test cell checks the
    solution cell before it."""
    pairs, last_solution = [], None
    for cell in nbformat.read(path, as_version=4).cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and cell.cell_type == "code":
            last_solution = meta["grade_id"]
        elif meta.get("grade"):
            assert last_solution, f"{path.name}: test cell {meta['grade_id']} has no solution cell before it"
            pairs.append((last_solution, meta["grade_id"]))
    return pairs


@pytest.mark.parametrize("name", notebook_names())
def test_reference_passes_stub_fails_mistakes_draw_hints(name):
    """Does each check pass the reference, fail the release stub, and name each planted mistake?"""
    planted = all_planted().get(name, [])
    pairs = graded_pairs(SOLUTIONS / name)
    assert pairs, f"{name} has no graded exercise"
    by_solution = {}
    for p in planted:
        by_solution.setdefault(p.grade_id, []).append(p)
    missing = [sol for sol, _ in pairs if sol not in by_solution]
    assert not missing, f"{name}: exercises without planted mistakes in tests/planted: {missing}"

    release_cells = {c.metadata.get("nbgrader", {}).get("grade_id"): c.source
                     for c in nbformat.read(RELEASE / name, as_version=4).cells}
    kernel = NotebookKernel(SOLUTIONS / name, grading=True)
    try:
        kernel.run_until(None)  # the whole reference notebook: every cell must run
        failures = []
        for solution_id, test_id in pairs:
            reference, test = kernel.cell(solution_id), kernel.cell(test_id)
            result = kernel.run(test)
            if result.error:
                failures.append(f"reference {solution_id} fails its check: {result.error}")
            kernel.run(release_cells[solution_id])  # the student's stub
            result = kernel.run(test)
            if not (result.error and "not implemented" in result.error):
                failures.append(f"stub {solution_id}: expected a 'not implemented' failure, got {result.error!r}")
            for p in by_solution[solution_id]:
                kernel.run(p.source)
                result = kernel.run(test)
                if not result.error:
                    failures.append(f"planted mistake {p.name!r} in {solution_id} passes its check")
                elif p.expect not in result.error:
                    failures.append(f"planted mistake {p.name!r} in {solution_id}: message lacks {p.expect!r}:\n"
                                    f"  {result.error}")
            kernel.run(reference)
        assert not failures, "\n".join(failures)
    finally:
        kernel.close()


@pytest.mark.parametrize("name", notebook_names())
def test_release_runs_to_the_end_in_the_lab(name):
    """In the lab (not grading), does `Run All` on the unfilled release reach the last cell without an error?"""
    kernel = NotebookKernel(RELEASE / name, grading=False)
    try:
        notices = 0
        for cell in kernel.cells:
            if cell.cell_type != "code":
                continue
            result = kernel.run(cell.source)
            if cell.metadata.get("nbgrader", {}).get("solution"):
                continue  # defining a stub raises nothing
            assert result.error is None, f"{name}: a cell stops Run All: {result.error}\n{cell.source[:200]}"
            notices += "not implemented yet" in result.stdout
        assert notices == len(graded_pairs(SOLUTIONS / name)), "each unfilled exercise's check prints a notice"
    finally:
        kernel.close()
