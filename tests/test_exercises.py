"""Is every exercise graded? The reference passes, the stub fails, and each usual mistake draws its hint."""
from __future__ import annotations

import nbformat
import pytest

from conftest import RELEASE, SOLUTIONS, notebook_names
from kernel import NotebookKernel, Result
from planted import Planted, all_planted

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


# Text every failure message carries: an `expect` made only of it proves no particular hint.
GENERIC = ("期望 (expected)", "得到 (got)", "提示 (hint)")


def planted_failures(kernel: NotebookKernel, p, stub: str, test: str, visible_test: str) -> list[str]:
    """What is wrong with planted mistake `p`: its cell must run cleanly (over the stub, so that a planted cell
    that defines nothing cannot be graded as the definition before it), then its check must fail with a
    message carrying p.expect, which must be more than the exception's name (a KeyError of the wrong answer
    itself explains nothing), and a mistake marked `visible` must fail the visible checks (the release's
    test cell) the same way."""
    label = f"planted mistake {p.name!r} in {p.grade_id}"
    if not p.expect.strip() or p.expect.strip() in GENERIC:
        return [f"{label}: expects {p.expect!r}, which every failure prints; expect its own hint"]
    kernel.run(stub)
    planted = kernel.run(p.source)
    if planted.error:
        return [f"{label}: the planted cell itself fails: {planted.error}"]
    failures = []
    for where, cell in [("check", test)] + ([("visible check", visible_test)] if p.visible else []):
        result = kernel.run(cell)
        if not result.error:
            failures.append(f"{label} passes its {where}")
        elif p.expect.strip() == result.error.split(":")[0]:
            failures.append(f"{label}: expects only the name of the exception its {where} ends with; expect a hint:\n"
                            f"  {result.error}")
        elif p.expect not in result.error:
            failures.append(f"{label}: the message of its {where} lacks {p.expect!r}:\n  {result.error}")
    return failures


@pytest.mark.parametrize("name", notebook_names())
def test_reference_passes_stub_fails_mistakes_draw_hints(name):
    """Does each check pass the reference, fail the release stub, and name each planted mistake (the mistakes a
    statement warns about already in its visible checks)?"""
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
                failures += planted_failures(kernel, p, release_cells[solution_id], test, release_cells[test_id])
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


class _ScriptedKernel:
    """Stands in for a kernel: each source gets the Result of a table (default: ran cleanly)."""

    def __init__(self, answers: dict):
        self.answers, self.ran = answers, []

    def run(self, source: str) -> Result:
        self.ran.append(source)
        return self.answers.get(source, Result())


def test_planted_failures_are_reported_for_every_way_a_planted_mistake_can_prove_nothing():
    """Is a planted cell that raises, a message without the hint, an expect that is only the exception's name
    or text every failure prints, and a visible check that lets the mistake through each reported; and is the
    stub run before the planted cell, so that a planted cell defining nothing cannot be graded as the one
    before it?"""
    hint = "提示 (hint): the hint"
    failed = Result(error=f"CheckFailed: f(): 期望 (expected) 1，得到 (got) 2。\n{hint}")

    def run(answers, expect="the hint", visible=False):
        kernel = _ScriptedKernel(answers)
        p = Planted("ex", "demo", "PLANTED", expect, visible=visible)
        return kernel, planted_failures(kernel, p, "STUB", "TEST", "VISIBLE")

    kernel, failures = run({"TEST": failed, "VISIBLE": failed}, visible=True)
    assert failures == [] and kernel.ran[:2] == ["STUB", "PLANTED"]
    assert "planted cell itself fails" in run({"PLANTED": Result(error="NameError: x"), "TEST": failed})[1][0]
    assert "name of the exception" in run({"TEST": Result(error="KeyError: 'fp8'")}, expect="KeyError")[1][0]
    assert run({"TEST": Result(error="RuntimeError: 不能调用 the hint")})[1] == []  # a message that carries the hint
    assert "lacks" in run({"TEST": Result(error="CheckFailed: f(): 期望 (expected) 1，得到 (got) 2。")})[1][0]
    assert "passes its check" in run({})[1][0]
    assert "every failure prints" in run({"TEST": failed}, expect="期望 (expected)")[1][0]
    assert "passes its visible check" in run({"TEST": failed}, visible=True)[1][0]
