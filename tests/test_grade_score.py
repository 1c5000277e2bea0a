"""tools/grade/score.py: only signed events count, points are clamped, a failure is placed in its region."""
from __future__ import annotations

import hashlib
import hmac
import json
import os

from conftest import RELEASE, SOLUTIONS
from tools.grade import splice
from tools.grade.score import read_untrusted, score, verify

NAME = "01_tensors_dtypes.ipynb"
NB = splice.load(SOLUTIONS / NAME, RELEASE / NAME)
KEY = b"k" * 32


def signed(events: list[dict], key: bytes = KEY) -> bytes:
    lines = []
    for seq, event in enumerate(events):
        body = json.dumps({**event, "seq": seq}, sort_keys=True)
        lines.append(f"{body}\t{hmac.new(key, body.encode(), hashlib.sha256).hexdigest()}")
    return ("\n".join(lines) + "\n").encode()


def passes(cell) -> list[dict]:
    name = "tensor_bytes" if "tensor_bytes" in cell.source else "float_format_limits" if "float_format" in cell.source else "weight_memory"
    return [{"type": "start", "cell": cell.index}, {"type": "check", "cell": cell.index, "name": name},
            {"type": "end", "cell": cell.index, "status": "ok"}]


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


def test_a_pass_needs_a_clean_end_and_the_right_exercise():
    cell = NB.tests[0]
    no_end = [{"type": "start", "cell": cell.index}, {"type": "check", "cell": cell.index, "name": "tensor_bytes"}]
    assert score(NB, no_end, {}).tests[0].status == "stopped"
    error_after = no_end + [{"type": "end", "cell": cell.index, "status": "error", "ename": "CheckFailed", "line": 8}]
    assert score(NB, error_after, {}).tests[0].points == 0
    other = [{"type": "start", "cell": cell.index}, {"type": "check", "cell": cell.index, "name": "weight_memory"},
             {"type": "end", "cell": cell.index, "status": "ok"}]
    assert score(NB, other, {}).tests[0].points == 0
    foreign = passes(cell)[:2] + [{"type": "foreign_report", "cell": cell.index}] + passes(cell)[2:]
    assert score(NB, foreign, {}).tests[0].points == 0


def test_withheld_exercises_earn_nothing():
    result = score(NB, all_passing(), {NB.tests[0].grade_id: ["ex01_tensor_bytes line 1: import of os"]})
    assert result.tests[0].status == "withheld" and result.score == 5


def test_a_failure_is_placed_in_the_hidden_or_visible_region():
    cell = NB.tests[0]
    first, last = cell.hidden
    for line, hidden in ((first - 2, False), (first + 1, True)):
        events = [{"type": "start", "cell": cell.index},
                  {"type": "end", "cell": cell.index, "status": "error", "ename": "CheckFailed", "line": line}]
        assert score(NB, events, {}).tests[0].in_hidden is hidden


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
    """A cell whose exercise declares groups: each passed group earns weight / total of the cell's points."""
    nb = splice.load(SOLUTIONS / NAME, RELEASE / NAME)
    cell = nb.tests[1]  # float_format_limits, 3 points
    cell.source = cell.source.replace('checks.exercise("float_format_limits")',
                                      'checks.exercise("float_format_limits", points={"lecture": 1, "drawn": 2})')
    groups = {"lecture": {"passed": True}, "drawn": {"passed": False, "hint": "h", "message": "m"}}
    events = [{"type": "start", "cell": cell.index},
              {"type": "check", "cell": cell.index, "name": "float_format_limits", "groups": groups},
              {"type": "end", "cell": cell.index, "status": "error", "ename": "CheckFailed"}]
    result = score(nb, events, {}).tests[1]
    assert result.points == 1.0 and result.status == "partial"
    assert [g["passed"] for g in result.groups] == [True, False]
    foreign = events[:2] + [{"type": "foreign_report", "cell": cell.index}] + events[2:]
    assert score(nb, foreign, {}).tests[1].points == 0
