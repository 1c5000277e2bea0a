"""lecture2_grader.score: points come from the judge's group outcomes and the instructor's weights only."""
from __future__ import annotations

from conftest import RELEASE, SOLUTIONS
from lecture2_grader import course
from lecture2_grader.records import Judged
from lecture2_grader.score import exercise_groups
from lecture2_grader.score import score as score_judged

NAME = "01_tensors_dtypes.ipynb"
NB = course.load(SOLUTIONS / NAME, RELEASE / NAME)
RELEASED = course.load(RELEASE / NAME, RELEASE / NAME)


def score(nb, data: dict | None):
    """score.score on judge results written as the judge writes them (JSON), read as the grader reads them."""
    return score_judged(nb, None if data is None else Judged.from_json(data))


def judged(failing: dict[str, set[str]] | None = None, **extra) -> dict:
    """Judge results in which every group passed but those in failing[test grade_id]."""
    failing = failing or {}
    tests = []
    for cell in NB.tests:
        reports = {}
        for name, groups in exercise_groups(cell.source).items():
            reports[name] = {g: {"passed": g not in failing.get(cell.grade_id, set()),
                                 "status": "failed" if g in failing.get(cell.grade_id, set()) else "passed",
                                 "hint_key": "bits_for_bytes" if g in failing.get(cell.grade_id, set()) else None}
                             for g in groups}
        tests.append({"index": cell.index, "grade_id": cell.grade_id, "status": "ok", "reports": reports, **extra})
    return {"tests": tests}


def test_every_group_passed_earns_every_point():
    result = score(NB, judged())
    assert result.score == NB.max_score == 5
    assert all(t.status == "passed" for t in result.tests)


def test_each_group_earns_its_share_and_hidden_groups_are_marked():
    result = score(NB, judged({"ex01_tensor_bytes_check": {"drawn shapes"}}))
    tb = result.tests[0]
    assert tb.points == 1.5 and tb.status == "partial"
    drawn = next(g for g in tb.groups if g["group"] == "drawn shapes")
    assert drawn["hidden"] and drawn["hint_key"] == "bits_for_bytes" and not drawn["passed"]
    assert not next(g for g in tb.groups if g["group"] == "real tensors")["hidden"]


def test_nothing_reported_earns_nothing():
    assert score(NB, None).score == 0 and all(t.status == "not run" for t in score(NB, None).tests)
    unknown = judged()
    for t in unknown["tests"]:
        t["reports"] = {"someone_else": {"x": {"passed": True}}}
    assert score(NB, unknown).score == 0


def test_points_never_exceed_the_cell_and_weights_are_the_instructors():
    """An outcome with a made-up group, or passed given as something other than True, earns nothing extra."""
    data = judged()
    for t in data["tests"]:
        for groups in t["reports"].values():
            groups["bonus"] = {"passed": True}
            for g in groups.values():
                g["passed"] = "yes" if g is not groups["bonus"] else True
    result = score(NB, data)
    assert result.score == 0


def test_the_release_scores_its_visible_groups_only():
    result = score(RELEASED, judged())
    assert result.score < 5 and result.tests[0].visible_max == 1.5
