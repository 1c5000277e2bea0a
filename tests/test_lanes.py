"""`make test`'s two lanes (tests/lanes.py): every side-lane file exists, the lanes split the suite between them, and
the quiet tests run first in the main lane with no side test beside them."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import lanes
from conftest import ROOT


def test_every_side_lane_file_is_a_test_file_here():
    files = {p.name for p in (ROOT / "tests").glob("test_*.py")}
    missing = [name for name in lanes.SIDE if name not in files]
    assert not missing, f"tests/lanes.py SIDE names files that do not exist: {missing}"


def test_notebooks_that_time_themselves_stay_in_the_main_lane():
    assert lanes.in_side_lane(ROOT / "solutions" / "lec02" / "01_tensors_dtypes.ipynb")
    assert not lanes.in_side_lane(ROOT / "solutions" / "lec02" / "08_mfu_timing.ipynb")
    assert not lanes.in_side_lane(ROOT / "tests" / "test_exercises.py")


def test_the_quiet_tests_run_first_and_alone(tmp_path):
    """Two lanes on a small suite: a side-lane file that is slow to import, and a main-lane file whose quiet test
    comes last. Does the quiet test run first, once the side lane has collected, and the side lane's test only
    after it has ended?"""
    log = tmp_path / "log.txt"
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    quiet: measures time\n")
    common = f"import os, time, pytest\ndef log(s):\n    with open({str(log)!r}, 'a') as f:\n        f.write(s + '\\n')\n"
    (tmp_path / "test_main.py").write_text(common + textwrap.dedent("""
        def test_first_in_the_file():
            log("main")

        @pytest.mark.quiet
        def test_timed():
            log("quiet starts")
            time.sleep(1)
            log("quiet ends")
        """))
    (tmp_path / lanes.SIDE[0]).write_text(common + textwrap.dedent("""
        time.sleep(1)  # each lane imports every file when it collects
        log("collected by the " + os.environ["LECTURE2_TEST_LANE"] + " lane")

        def test_side():
            log("side")
        """))
    proc = subprocess.run([sys.executable, str(ROOT / "tests" / "lanes.py"), "-q", "-p", "no:cacheprovider"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    events = log.read_text().splitlines()
    assert events.index("collected by the side lane") < events.index("quiet starts"), events
    after = events[events.index("quiet starts"):]
    assert after[:2] == ["quiet starts", "quiet ends"] and sorted(after[2:]) == ["main", "side"], events
