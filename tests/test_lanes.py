"""`make test`'s two lanes (tests/lanes.py): every side-lane file exists, the lanes split the suite between them, and
the turnstile keeps the side lane's tests out of a quiet block."""
from __future__ import annotations

import fcntl
import threading
import time

import lanes
from conftest import ROOT


def test_every_side_lane_file_is_a_test_file_here():
    files = {p.name for p in (ROOT / "tests").glob("test_*.py")}
    missing = [name for name in lanes.SIDE if name not in files]
    assert not missing, f"tests/lanes.py SIDE names files that do not exist: {missing}"


def test_quiet_is_a_no_op_without_lanes(monkeypatch):
    monkeypatch.setattr(lanes, "LANE", None)
    with lanes.quiet():
        pass


def test_a_side_test_waits_for_a_quiet_block_and_a_quiet_block_for_the_running_side_test(tmp_path, monkeypatch):
    monkeypatch.setattr(lanes, "LOCKS", str(tmp_path))
    monkeypatch.setattr(lanes, "LANE", "main")
    events: list[str] = []

    def side_test(name: str, seconds: float):
        with lanes._side_test():
            events.append(f"{name} starts")
            time.sleep(seconds)
            events.append(f"{name} ends")

    first = threading.Thread(target=side_test, args=("side 1", 0.4))
    first.start()
    time.sleep(0.1)
    later = threading.Thread(target=lambda: (time.sleep(0.1), side_test("side 2", 0)))
    later.start()
    with lanes.quiet():  # waits for side 1; side 2 asks while this is waiting or inside
        events.append("quiet starts")
        time.sleep(0.3)
        events.append("quiet ends")
    first.join()
    later.join()
    assert events == ["side 1 starts", "side 1 ends", "quiet starts", "quiet ends", "side 2 starts", "side 2 ends"]
    for name in ("gate", "busy"):  # nothing is left holding a lock
        with open(tmp_path / name) as f:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_notebooks_that_time_themselves_stay_in_the_main_lane():
    assert lanes.in_side_lane(ROOT / "solutions" / "lec02" / "01_tensors_dtypes.ipynb")
    assert not lanes.in_side_lane(ROOT / "solutions" / "lec02" / "08_mfu_timing.ipynb")
    assert not lanes.in_side_lane(ROOT / "tests" / "test_exercises.py")
