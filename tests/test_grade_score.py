"""tools/grade/score.py: only signed events count, points are clamped, a failure is placed in its region."""
from __future__ import annotations

import hashlib
import hmac
import json
import os

from conftest import RELEASE, SOLUTIONS
from tools.grade import splice
from tools.grade.score import exercise_groups, read_untrusted, score, verify

NAME = "01_tensors_dtypes.ipynb"
NB = splice.load(SOLUTIONS / NAME, RELEASE / NAME)
KEY = b"k" * 32


def signed(events: list[dict], key: bytes = KEY) -> bytes:
    lines = []
    for seq, event in enumerate(events):
        body = json.dumps({**event, "seq": seq}, sort_keys=True)
        lines.append(f"{body}\t{hmac.new(key, body.encode(), hashlib.sha256).hexdigest()}")
    return ("\n".join(lines) + "\n").encode()


def passes(cell, failing: set[str] = frozenset()) -> list[dict]:
    """The events of a test cell whose exercise passed every check group (but those in `failing`)."""
    (name, groups), = exercise_groups(cell.source).items()
    outcomes = {g: {"passed": g not in failing, "hint": None, "message": ""} for g in groups}
    return [{"type": "start", "cell": cell.index}, {"type": "check", "cell": cell.index, "name": name, "groups": outcomes},
            {"type": "end", "cell": cell.index, "status": "error" if failing else "ok"}]


def all_passing() -> list[dict]:
    return [e for cell in NB.tests for e in passes(cell)] + [{"type": "done"}]


def test_signed_passes_earn_every_point():
    events, problem = verify(signed(all_passing()), KEY)
    assert problem is None
    assert score(NB, events, {}).score == NB.max_score == 7


def test_forged_reordered_or_foreign_events_earn_nothing():
    """Is a line signed with another key, a replayed line, or an edited line refused, with the rest?"""
    assert verify(signed(all_passing(), key=b"x" * 32), KEY)[0] == []
    good = signed(all_passing()).split(b"\n")
    replayed = b"\n".join(good[:1] + good[:1] + good[1:])
    events, problem = verify(replayed, KEY)
    assert len(events) == 1 and "altered" in problem
    edited = signed(all_passing()).replace(b'"ok"', b'"OK"', 1)
    events, problem = verify(edited, KEY)
    assert score(NB, events, {}).score < 7 and problem


def test_an_all_or_nothing_cell_needs_a_clean_end_and_the_right_exercise():
    """A test cell without check groups: its exercise's pass report and a clean end, or nothing."""
    nb = splice.load(SOLUTIONS / NAME, RELEASE / NAME)
    cell = nb.tests[0]
    cell.source = 'with checks.exercise("tensor_bytes"):\n    pass\n'
    no_end = [{"type": "start", "cell": cell.index}, {"type": "check", "cell": cell.index, "name": "tensor_bytes"}]
    assert score(nb, no_end, {}).tests[0].status == "stopped"
    error_after = no_end + [{"type": "end", "cell": cell.index, "status": "error", "ename": "CheckFailed", "line": 2}]
    assert score(nb, error_after, {}).tests[0].points == 0
    ok = no_end + [{"type": "end", "cell": cell.index, "status": "ok"}]
    assert score(nb, ok, {}).tests[0].points == 2
    other = [{"type": "start", "cell": cell.index}, {"type": "check", "cell": cell.index, "name": "weight_memory"},
             {"type": "end", "cell": cell.index, "status": "ok"}]
    assert score(nb, other, {}).tests[0].points == 0
    foreign = ok[:2] + [{"type": "foreign_report", "cell": cell.index}] + ok[2:]
    assert score(nb, foreign, {}).tests[0].points == 0


def test_withheld_exercises_earn_nothing():
    result = score(NB, all_passing(), {NB.tests[0].grade_id: ["ex01_tensor_bytes line 1: import of os"]})
    assert result.tests[0].status == "withheld" and result.score == 5


def test_a_failed_group_is_placed_in_the_hidden_or_visible_region():
    cell = NB.tests[0]  # tensor_bytes: "real tensors", "edge cases" visible, "drawn shapes" hidden
    result = score(NB, passes(cell, failing={"edge cases", "drawn shapes"}), {}).tests[0]
    hidden = {g["group"]: g["hidden"] for g in result.groups}
    assert hidden == {"real tensors": False, "edge cases": False, "drawn shapes": True}
    assert result.points == 1.0 and result.status == "partial"


def test_untrusted_files_are_read_only_when_plain(tmp_path):
    """A symlink, a FIFO or a missing file left in the scratch folder is not followed or read."""
    (tmp_path / "plain").write_bytes(b"x" * 10)
    os.symlink("/etc/passwd", tmp_path / "link")
    os.mkfifo(tmp_path / "fifo")
    assert read_untrusted(tmp_path / "plain", 4) == b"xxxx"
    assert read_untrusted(tmp_path / "link", 100) is None
    assert read_untrusted(tmp_path / "fifo", 100) is None
    assert read_untrusted(tmp_path / "missing", 100) is None


def test_check_groups_earn_their_share_of_the_points():
    """Each passed group earns weight / total of the cell's points, weights from the instructor's source."""
    cell = NB.tests[1]  # float_format_limits, 3 points in three groups of weight 1
    events = passes(cell, failing={"more formats"})
    result = score(NB, events, {}).tests[1]
    assert result.points == 2.0 and result.status == "partial"
    assert [g["passed"] for g in result.groups] == [True, True, False]
    foreign = events[:2] + [{"type": "foreign_report", "cell": cell.index}] + events[2:]
    assert score(NB, foreign, {}).tests[1].points == 0
    forged = [dict(e, groups={"fp16 and bf16": {"passed": True}}) if e["type"] == "check" else e for e in events]
    assert score(NB, forged, {}).tests[1].points == 1.0, "a group the report leaves out earns nothing"
