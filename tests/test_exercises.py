"""Is every exercise graded? The reference passes, the stub fails, and each usual mistake draws its hint."""
from __future__ import annotations

import nbformat
import pytest

from conftest import RELEASE, SOLUTIONS, notebook_names
from judging import Judging, failures_text, reference_answers
from kernel import NotebookKernel
from lanes import quiet_param
from lecture2 import checks
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


def planted_problems(p: Planted, result, where: str) -> list[str]:
    """What is wrong with how a check answered planted mistake `p`: it must lose points, and a failed group
    must carry the mistake's hint, by key when `p.expect` is one of the course's hints (so that feedback and
    mistakes.csv name it), or else in its message."""
    label = f"planted mistake {p.name!r} in {p.grade_id}"
    if result.points >= result.max_points and result.groups and all(g["passed"] for g in result.groups):
        return [f"{label} passes its {where}"]
    failed = [g for g in result.groups if not g["passed"]]
    keyed = {checks.HINTS.get(g.get("hint_key") or "", None) for g in failed}
    registered = p.expect in checks.HINTS.values()
    if registered and p.expect in keyed:
        return []
    if not registered and any(p.expect in str(g.get("message") or "") for g in failed):
        return []
    how = "by its hint key" if registered else "in a failed group's message"
    return [f"{label}: its {where} does not name it {how}:\n  " + failures_text(result).replace("\n", "\n  ")]


@pytest.mark.parametrize("name", [quiet_param(n) for n in notebook_names()])
def test_reference_passes_stub_fails_mistakes_draw_hints(name):
    """On the grader's own path (the judge running the test cells, the answers in a student's process), does
    each check give the reference full points, the release stub none ("not implemented"), and each planted
    mistake fewer points with its own hint (a mistake the statement warns about already in the visible checks)?"""
    planted = all_planted().get(name, [])
    pairs = graded_pairs(SOLUTIONS / name)
    assert pairs, f"{name} has no graded exercise"
    by_solution = {}
    for p in planted:
        by_solution.setdefault(p.grade_id, []).append(p)
    missing = [sol for sol, _ in pairs if sol not in by_solution]
    assert not missing, f"{name}: exercises without planted mistakes in tests/planted: {missing}"
    bad_expect = [p.name for p in planted if not p.expect.strip() or p.expect.strip() in GENERIC]
    assert not bad_expect, f"planted mistakes that expect only text every failure prints: {bad_expect}"
    release_cells = {c.metadata.get("nbgrader", {}).get("grade_id"): c.source
                     for c in nbformat.read(RELEASE / name, as_version=4).cells}
    reference = reference_answers(name)
    failures = []
    with Judging(name) as j:
        for solution_id, test_id in pairs:
            for status in j.run_until(test_id):
                assert status.get("status") == "ok", f"{name}: a cell the answers need fails: {status}"
            result = j.test(test_id)
            if result.points != result.max_points:
                failures.append(f"reference {solution_id} earns {result.points}/{result.max_points}:\n{failures_text(result)}")
            j.answer(solution_id, release_cells[solution_id])  # the student's stub
            result = j.test(test_id)
            if result.status != "not implemented" or result.points:
                failures.append(f"stub {solution_id}: expected 'not implemented' and 0 points, got {result.status} "
                                f"{result.points}:\n{failures_text(result)}")
            for p in by_solution[solution_id]:
                j.answer(solution_id, release_cells[solution_id])  # a planted cell that defines nothing fails as the stub
                status = j.answer(solution_id, p.source)
                if status.get("status") != "ok":
                    failures.append(f"planted mistake {p.name!r}: the planted cell itself fails: {status}")
                    continue
                if p.expect not in checks.HINTS.values():  # named in a message: shown by a process that has had no
                    j.fresh()                               # hidden case yet (validate, a first test cell)
                if p.visible:  # the visible groups are the full check's too: failing them, it fails the full check
                    failures += planted_problems(p, j.test(test_id, visible=True), "visible check")
                else:
                    failures += planted_problems(p, j.test(test_id), "check")
            j.answer(solution_id, reference[solution_id])
    assert not failures, "\n".join(failures)


# Release notebooks run in the lab two at a time (a notebook's kernel keeps about one core busy, and CI has two: 95 s
# -> 56 s here), 08 too: with its exercises unfilled, what its cells assert of their own timings holds on a busy
# machine (an add below a tenth of the fp32 peak: 0.02 of it measured, the peak the best call of a sweep, which a
# neighbour only lowers), and its MFU cell waits for exercise 2.
def _run_all_in_the_lab(name: str) -> tuple[str | None, int]:
    """Run All of release notebook `name` in a Jupyter kernel: (the first cell that stopped it, with its error, or
    None; how many cells printed the "not implemented yet" notice)."""
    kernel = NotebookKernel(RELEASE / name, grading=False)
    try:
        notices = 0
        for cell in kernel.cells:
            if cell.cell_type != "code":
                continue
            result = kernel.run(cell.source)
            if cell.metadata.get("nbgrader", {}).get("solution"):
                continue  # defining a stub raises nothing
            if result.error is not None:
                return f"{result.error}\n{cell.source[:200]}", notices
            notices += "not implemented yet" in result.stdout
        return None, notices
    finally:
        kernel.close()


def _guarded(name: str):
    try:
        return _run_all_in_the_lab(name)
    except Exception as err:  # noqa: BLE001  this notebook's test reports it
        return err


@pytest.fixture(scope="module")
def release_runs(request) -> dict:
    """Run All of every release notebook this session tests, each in a kernel of its own that a thread of this
    process drives, two at a time, the later (longer) notebooks first.
    {name: what _run_all_in_the_lab returned, or the error it raised}."""
    from concurrent.futures import ThreadPoolExecutor

    wanted = sorted((item.callspec.params["name"] for item in request.session.items
                     if getattr(item, "originalname", "") == "test_release_runs_to_the_end_in_the_lab"), reverse=True)
    with ThreadPoolExecutor(2) as pool:
        return dict(zip(wanted, pool.map(_guarded, wanted)))


@pytest.mark.parametrize("name", notebook_names())
def test_release_runs_to_the_end_in_the_lab(name, release_runs):
    """In the lab (not grading), does `Run All` on the unfilled release reach the last cell without an error?"""
    run = release_runs[name]
    if isinstance(run, Exception):
        raise run
    error, notices = run
    assert error is None, f"{name}: a cell stops Run All: {error}"
    assert notices == len(graded_pairs(SOLUTIONS / name)), "each unfilled exercise's check prints a notice"
