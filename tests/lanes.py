"""The whole suite in two pytest processes side by side, and the pytest plugin that splits it between them.

    python tests/lanes.py [pytest arguments]      (`make test`: what CI runs)

Most of the suite keeps both cores busy (notebooks run, classes graded). The tests of SIDE mostly wait: a hub, a
lab or a Dask cluster coming up, a Slurm job queueing, a sandbox's time and memory limits, a process group's
deadline. They run in a second pytest process (the side lane) beside the rest (the main lane), so that their
waiting costs no wall time, and so do nbval's notebooks (one kernel, about one core: they even out the lanes'
lengths, measured on a fresh clone); each lane runs its own tests in the usual order, with the same arguments. The main
lane's output streams as usual; the side lane's is printed when it ends. The exit status is the worse of the two.

A few tests measure time and assert what their measurements show (notebook 08 times matmuls): they are quiet
(`is_quiet`), and need the machine to themselves. The main lane runs them first, as one block, and the side lane
starts its first test only when that block has ended: the runner takes a file lock (the gate) before either lane
starts and hands it to the main lane, which lets go of it at its first test that is not quiet (at once when it has
none). The block itself starts when the side lane has collected the suite (a second lock, which the side lane
holds until then). A quiet block in the middle of the lanes would have to wait for the side lane's running test (a
hub, a Dask class: up to 100 s) with a core idle; at the start nothing is running yet.

Both lanes run with OMP_WAIT_POLICY=PASSIVE: an OpenMP thread that waits for its team sleeps instead of spinning.
With the two cores shared by two lanes, a spinning thread takes the core its own team's late thread needs:
judging notebook 07's reference and mistakes took 48 s (49 s of CPU) beside one busy core, against 17 s (15 s
of CPU) with PASSIVE and 16 s alone (20 s of CPU). The grader's sandboxed processes get an environment of their
own (lecture2_grader.sandbox.environment), without it.

Plain `pytest` (no LECTURE2_TEST_LANE) runs everything in one process, in the usual order.
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

# Test files that mostly wait: seconds of wall time beside the main lane, and the cores they kept busy on average
# (their lane's CPU time from a cpuacct cgroup), on a 2-core machine, December 2026.
SIDE = (
    "test_cluster.py",  # 151 s, 0.8 cores: Dask workers start, a student sleeps, a worker is killed
    "test_hub_browser.py",  # 106 s, 1.0: a hub, two students' servers, a browser
    "test_hub_attacks.py",  # 45 s, 0.5: a hub, three servers, a hostile student's terminal, a browser
    "test_distributed.py",  # 77 s, 0.6: process groups that hang, fail or outlive their notebook
    "test_grade_link.py",  # 47 s, 0.6: answers that time out, die or ignore their alarm
    "test_browser_formgrader.py",  # 39 s, 0.8: a Jupyter server and a browser
    "test_cluster_slurm.py",  # 38 s, 0.9: a one-node Slurm and its jobs
    "test_grade_sandbox.py",  # 20 s, 0.4: memory and time limits reached
    "test_grade_exchange.py",  # 14 s, 0.5: nbgrader's exchange commands
    "test_hub.py",  # 14 s, 0.9: hubs that refuse to start
)
# nbval's notebooks that run in the main lane all the same, so that the lanes end within seconds of each other (on a
# fresh clone with 2 cores, December 2026: main 542 s, side 505 s with 06 and 07 here too; 593 s and 588 s without;
# 526 s and 513 s once the release Run All of 08 left the quiet block).
MAIN_NOTEBOOKS = (
    "10_sharding.ipynb",  # 11-29 s beside the other lane: two- to four-rank process groups (11_parallel_plans,
    # 16-47 s, runs in the side lane; the split of notebook 10 in December 2026 was not re-measured on a fresh clone)
)
# Notebooks whose cells and checks assert what their own timings show. Quiet: nbval's cells of them, and the tests
# that run them, parametrized with quiet_param (the reference and mistakes judged; Run All of the unfilled release
# is not: its cells' asserts hold on a busy machine, tests/test_exercises.py says why).
QUIET_NOTEBOOKS = ("08_mfu_timing.ipynb",)


def in_side_lane(path: Path) -> bool:
    """SIDE's files, and nbval's notebooks of solutions/ but the quiet ones and MAIN_NOTEBOOKS (a kernel keeps
    about one core busy)."""
    return path.name in SIDE or (path.suffix == ".ipynb" and path.name not in QUIET_NOTEBOOKS + MAIN_NOTEBOOKS)


def quiet_param(name: str):
    """A notebook's name as a parameter of a test that runs it: marked quiet when its cells time themselves."""
    return pytest.param(name, marks=pytest.mark.quiet) if name in QUIET_NOTEBOOKS else name


def is_quiet(item) -> bool:
    return item.get_closest_marker("quiet") is not None or (item.path.suffix == ".ipynb"
                                                              and item.path.name in QUIET_NOTEBOOKS)


# ---- two file locks the runner takes and hands over: each lane holds one that the other waits for once
# "gate": held by the main lane until its quiet tests have ended; the side lane waits for it before its first test.
# "collecting": held by the side lane until it has collected (importing the suite keeps a core busy for seconds);
# the main lane waits for it before its first test, which is quiet.

HELD_FD = "LECTURE2_TEST_HELD_FD"  # this lane's inherited descriptor of the lock file it holds
WAITS_FOR = {"main": "collecting", "side": "gate"}
_held: list[int] = [int(os.environ[HELD_FD])] if LANE in WAITS_FOR and os.environ.get(HELD_FD) else []


def _let_go() -> None:
    """Release the lock this lane holds (once; closing the descriptor would do it too, as when the lane ends)."""
    while _held:
        fd = _held.pop()
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _wait_for(name: str) -> None:
    fd = os.open(os.path.join(LOCKS, name), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)  # returns when the other lane has let go of it (or ended)
    finally:
        os.close(fd)


# ---- the plugin (loaded by the runner with -p lanes)


def pytest_collection_modifyitems(config, items):
    if LANE not in WAITS_FOR:
        return
    keep, drop = [], []
    for item in items:
        (keep if in_side_lane(item.path) == (LANE == "side") else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
    if LANE == "main":  # the quiet tests first, in their order, then the rest in theirs
        keep = [i for i in keep if is_quiet(i)] + [i for i in keep if not is_quiet(i)]
    items[:] = keep


@pytest.hookimpl(hookwrapper=True)
def pytest_runtestloop(session):
    if LANE in WAITS_FOR and LOCKS:
        if LANE == "side" or not (session.items and is_quiet(session.items[0])):
            _let_go()  # the side lane has collected; the main lane has no quiet test
        _wait_for(WAITS_FOR[LANE])
    yield
    _let_go()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    if LANE == "main" and _held and not is_quiet(item):
        _let_go()  # the quiet tests have ended


# ---- the runner


def main(args: list[str]) -> int:
    here = Path(__file__).resolve().parent
    with tempfile.TemporaryDirectory(prefix="lecture2-lanes-") as locks, \
            tempfile.TemporaryFile("w+b") as side_out:
        def lane(name: str, extra: dict | None = None, **kw) -> subprocess.Popen:
            env = dict(os.environ, LECTURE2_TEST_LANE=name, LECTURE2_TEST_LOCKS=locks, OMP_WAIT_POLICY="PASSIVE",
                       PYTHONPATH=os.pathsep.join([str(here), *filter(None, [os.environ.get("PYTHONPATH")])]),
                       **(extra or {}))
            return subprocess.Popen([sys.executable, "-m", "pytest", "-p", "lanes", *args], env=env,
                                    start_new_session=True, **kw)

        held = {}
        for name in WAITS_FOR.values():  # both taken before either lane starts
            held[name] = os.open(os.path.join(locks, name), os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(held[name], fcntl.LOCK_EX)
        try:
            main_lane = lane("main", pass_fds=(held["gate"],), extra={HELD_FD: str(held["gate"])})
            side = lane("side", pass_fds=(held["collecting"],), extra={HELD_FD: str(held["collecting"])},
                        stdout=side_out, stderr=subprocess.STDOUT)
        finally:
            for fd in held.values():  # the lanes hold them now (the same open files)
                os.close(fd)
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
