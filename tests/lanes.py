"""The whole suite in two pytest processes side by side, and the pytest plugin that splits it between them.

    python tests/lanes.py [pytest arguments]      (`make test`: what CI runs)

Most of the suite keeps both cores busy (notebooks run, classes graded). The tests of SIDE mostly wait: a hub, a
lab or a Dask cluster coming up, a Slurm job queueing, a sandbox's time and memory limits, a process group's
deadline. They run in a second pytest process (the side lane) beside the rest (the main lane), so that their
waiting costs no wall time, and so do nbval's notebooks (one kernel, about one core: they even out the lanes'
lengths, measured on a fresh clone); each lane runs its own tests in the usual order, with the same arguments. The main
lane's output streams as usual; the side lane's is printed when it ends. The exit status is the worse of the two.

A few tests measure time and assert what their measurements show (notebook 08 times matmuls): `quiet()` gives
them the machine to themselves. The side lane starts no test while one is inside it, and the main lane waits
for the side lane's running test to end before it goes in (a turnstile of two file locks).

Both lanes run with OMP_WAIT_POLICY=PASSIVE: an OpenMP thread that waits for its team sleeps instead of spinning.
With the two cores shared by two lanes, a spinning thread takes the core its own team's late thread needs:
judging notebook 07's reference and mistakes took 48 s (49 s of CPU) beside one busy core, against 17 s (15 s
of CPU) with PASSIVE and 16 s alone (20 s of CPU). The grader's sandboxed processes get an environment of their
own (lecture2_grader.sandbox.environment), without it.

Plain `pytest` (no LECTURE2_TEST_LANE) runs everything in one process, and `quiet()` is then a no-op.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

LANE = os.environ.get("LECTURE2_TEST_LANE")  # "main", "side" or None (one process runs everything)
LOCKS = os.environ.get("LECTURE2_TEST_LOCKS")  # the folder of the two lock files, made by the runner

# Test files that mostly wait (their tests keep less than one core busy on average, measured with /proc/stat):
# seconds of wall time and of busy cores on a 2-core machine, December 2026.
SIDE = (
    "test_cluster.py",  # 100 s, 1.1 cores: Dask workers start, a student sleeps, a worker is killed
    "test_hub_browser.py",  # 77 s, 1.4: a hub, two students' servers, a browser
    "test_grade_link.py",  # 37 s, 0.8: answers that time out, die or ignore their alarm
    "test_distributed.py",  # 36 s, 1.0: process groups that hang, fail or outlive their notebook
    "test_browser_formgrader.py",  # 26 s, 1.1: a Jupyter server and a browser
    "test_grade_sandbox.py",  # 16 s, 0.6: memory and time limits reached
    "test_cluster_slurm.py",  # 14 s: a one-node Slurm and its jobs
    "test_hub.py",  # 11 s, 1.0: hubs that refuse to start
    "test_grade_exchange.py",  # 11 s, 1.0: nbgrader's exchange commands
)
# Notebooks whose cells assert what their own timings show: every test that names one (nbval's cells of it, a
# test parametrized by it) runs in quiet().
QUIET_NOTEBOOKS = ("08_mfu_timing",)


def in_side_lane(path: Path) -> bool:
    """SIDE's files, and nbval's notebooks of solutions/ but the quiet ones (a kernel keeps about one core busy)."""
    return path.name in SIDE or (path.suffix == ".ipynb" and not any(name in path.name for name in QUIET_NOTEBOOKS))


def _quiet_item(item) -> bool:
    return any(name in item.nodeid for name in QUIET_NOTEBOOKS)


# ---- the turnstile


def _lock(name: str, mode: int):
    fd = os.open(os.path.join(LOCKS, name), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, mode)
    return fd


def _unlock(fd: int) -> None:
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)


@contextlib.contextmanager
def quiet():
    """The machine to this block: the side lane's running test ends first, and none starts until the block ends."""
    if LANE != "main" or not LOCKS:
        yield
        return
    gate = _lock("gate", fcntl.LOCK_EX)  # no side test starts from here on
    busy = _lock("busy", fcntl.LOCK_EX)  # the one running has ended
    try:
        yield
    finally:
        _unlock(busy)
        _unlock(gate)


@contextlib.contextmanager
def _side_test():
    gate = _lock("gate", fcntl.LOCK_SH)  # waits while the main lane is in quiet()
    busy = _lock("busy", fcntl.LOCK_SH)
    _unlock(gate)
    try:
        yield
    finally:
        _unlock(busy)


# ---- the plugin (loaded by the runner with -p lanes)


def pytest_collection_modifyitems(config, items):
    if LANE not in ("main", "side"):
        return
    keep, drop = [], []
    for item in items:
        (keep if in_side_lane(item.path) == (LANE == "side") else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


_QUIET: list = []  # the quiet() the main lane holds across a quiet notebook's cells


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if LANE == "side" and LOCKS:
        with _side_test():
            yield
        return
    if LANE == "main" and LOCKS and _quiet_item(item) and not _QUIET:
        _QUIET.append(quiet())
        _QUIET[0].__enter__()
    yield
    if _QUIET and (nextitem is None or not _quiet_item(nextitem)):
        _QUIET.pop().__exit__(None, None, None)


# ---- the runner


def main(args: list[str]) -> int:
    here = Path(__file__).resolve().parent
    with tempfile.TemporaryDirectory(prefix="lecture2-lanes-") as locks, \
            tempfile.TemporaryFile("w+b") as side_out:
        def lane(name: str, **kw) -> subprocess.Popen:
            env = dict(os.environ, LECTURE2_TEST_LANE=name, LECTURE2_TEST_LOCKS=locks, OMP_WAIT_POLICY="PASSIVE",
                       PYTHONPATH=os.pathsep.join([str(here), *filter(None, [os.environ.get("PYTHONPATH")])]))
            return subprocess.Popen([sys.executable, "-m", "pytest", "-p", "lanes", *args], env=env,
                                    start_new_session=True, **kw)

        side = lane("side", stdout=side_out, stderr=subprocess.STDOUT)
        main_lane = lane("main")
        try:
            codes = {"main": main_lane.wait(), "side": side.wait()}
        except KeyboardInterrupt:
            for proc in (main_lane, side):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGINT)
            main_lane.wait()
            side.wait()
            raise
        side_out.seek(0)
        sys.stdout.flush()
        print(f"\n{'=' * 30} the side lane (tests/lanes.py: SIDE) {'=' * 30}", flush=True)
        sys.stdout.buffer.write(side_out.read())
        sys.stdout.flush()
    # 5: no tests collected in that lane (arguments that pick tests of the other lane only)
    ran = {name: code for name, code in codes.items() if code != 5}
    print(f"lanes: main exited {codes['main']}, side exited {codes['side']}", flush=True)
    return max(ran.values()) if ran else 5


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
