"""lecture2_grader.sandbox: what a student's code can reach from inside its sandbox, and what bounds it.

Needs bubblewrap (Debian: `apt-get install bubblewrap`; .ci/run installs it and sets LECTURE2_SANDBOX_REQUIRED,
which turns a missing bwrap into a failure instead of a skip)."""
from __future__ import annotations

import os
import shutil
import time
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import ROOT
from judging import runtime
from lecture2 import answers
from lecture2_grader import sandbox
from lecture2_grader.judging.link import KernelLink

pytestmark = pytest.mark.slow

if shutil.which("bwrap") is None and not os.environ.get("LECTURE2_SANDBOX_REQUIRED"):
    pytest.skip("bubblewrap is not installed", allow_module_level=True)


def sandboxed(source: str, memory: int = 3 * 2**30, timeout: float = 60) -> KernelLink:
    """A sandboxed student's process that has run `source`; its function `probe()` reports what it saw."""
    spec = runtime(sandboxed=True, threads=1).kernel_spec()
    link = KernelLink(replace(spec, limits=sandbox.Limits(memory=memory, threads=1), cell_timeout=timeout, max_starts=1))
    link.begin_test_cell(180)
    status = link.run_cells([{"index": 0, "at": 0.0, "kind": "answer", "grade_id": None, "source": source}])
    assert status[0]["status"] == "ok", status
    return link


WALLS = f'''
import os, socket, subprocess
def probe():
    seen = {{"uid": os.getuid(), "cwd": os.getcwd(),
            "solutions": os.path.exists({str(ROOT / "solutions")!r}), "grader": os.path.exists({str(ROOT / "lecture2_grader" / "judging" / "judge.py")!r}),
            "home course": sorted(os.listdir({str(ROOT)!r})) if os.path.isdir({str(ROOT)!r}) else None}}
    for path in ("/tmp/mine.txt", "work.txt", "/dev/mine", "/dev/shm/mine", {str(ROOT / "lecture2" / "x.py")!r}, "/usr/x",
                 {str(ROOT / "gradebook.db")!r}, "/mine", {str(ROOT / "mine")!r}):
        try:
            with open(path, "w") as f:
                f.write("x")
            seen[path] = "wrote"
        except OSError as err:
            seen[path] = type(err).__name__
    try:
        socket.create_connection(("1.1.1.1", 80), timeout=2)
        seen["network"] = "open"
    except OSError:
        seen["network"] = "closed"
    seen["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    return seen
'''


def _host_state(path: Path):
    return (path.stat().st_size, path.stat().st_mtime_ns) if path.exists() else None


def test_the_sandbox_sees_the_environment_read_only_and_writes_only_memory_filesystems():
    course_files = [ROOT / "gradebook.db", ROOT / "mine"]
    before = {p: _host_state(p) for p in course_files}
    link = sandboxed(WALLS)
    try:
        seen = answers.Remote("probe", link)()
    finally:
        link.close()
    assert seen["uid"] == 65534 and seen["cwd"] == sandbox.WORK
    assert not seen["solutions"] and not seen["grader"], "the course's solutions and the judge are invisible"
    assert seen["home course"] is not None and "solutions" not in seen["home course"]
    assert seen["/tmp/mine.txt"] == "wrote" and seen["work.txt"] == "wrote" and seen["/dev/shm/mine"] == "wrote"
    for path in ("/dev/mine", str(ROOT / "lecture2" / "x.py"), "/usr/x", "/mine"):
        assert seen[path] != "wrote", path
    # A course folder's own path: refused, unless the course lives under /tmp (a fresh clone), where the sandbox's
    # private /tmp holds the folders above its read-only binds and the write lands in the sandbox's memory.
    under_tmp = ROOT.resolve().is_relative_to("/tmp")
    for path in course_files:
        assert under_tmp or seen[str(path)] != "wrote", path
        assert _host_state(path) == before[path], f"{path} changed on the host"
    assert seen["network"] == "closed"
    assert max(seen["pids"]) < 100, f"the sandbox sees only its own PID namespace: {seen['pids']}"


FILL = '''
import os
def fill(path, mib):
    written = 0
    try:
        with open(path, "wb") as f:
            for _ in range(mib):
                f.write(b"\\0" * 2**20)
                written += 1
    except OSError as err:
        return written, type(err).__name__
    return written, None
'''


def test_memory_filesystems_are_bounded():
    """/dev/shm and /tmp are memory: each has a fixed size, so writing there cannot take the host's RAM."""
    link = sandboxed(FILL)
    limits = sandbox.Limits()
    try:
        shm = answers.Remote("fill", link)("/dev/shm/big", 4 * limits.shm // 2**20)
        tmp = answers.Remote("fill", link)("/tmp/big", 4 * limits.tmp // 2**20)
    finally:
        link.close()
    assert shm[1] is not None and shm[0] <= limits.shm // 2**20
    assert tmp[1] is not None and tmp[0] <= limits.tmp // 2**20


def test_memory_is_bounded_for_the_process_and_its_children():
    """A hog gets a MemoryError (its own address space); with cgroups, children that each stay under it but
    together exceed the limit are killed too, and the link reports it as out of memory."""
    link = sandboxed('''
import subprocess, sys
def hog():
    try:
        blob = bytearray(6 * 2**30)
        return "allocated"
    except MemoryError:
        return "MemoryError"
def children(n, mib):
    # each holds its memory long enough for all of them to hold theirs at once (they start within a second or two)
    code = f"b = bytearray({mib} * 2**20); b[::4096] = b'x' * len(b[::4096]); import time; time.sleep(8)"
    procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(n)]
    return [p.wait() for p in procs]
''', memory=2 * 2**30)
    try:
        assert answers.Remote("hog", link)() == "MemoryError"
        if sandbox.make_cgroup(sandbox.Limits()) is None:
            pytest.skip("no cgroups on this machine: each process is bounded, not their sum")
        link.begin_test_cell(60)
        try:
            codes = answers.Remote("children", link)(4, 700)
        except answers.AnswerUnavailable:
            codes = None  # the whole process tree was killed
        assert codes is None or any(c != 0 for c in codes), "4 × 700 MiB ran within a 2 GiB limit"
    finally:
        link.close()


def test_the_link_kills_every_process_of_the_run():
    """A detached child that ignores everything: dead once the link is closed."""
    marker = f"{time.time():.6f}"
    link = sandboxed(f'''
import subprocess
def start():
    subprocess.Popen(["setsid", "sh", "-c", "sleep 600; echo {marker}"])
    return 1
''')
    assert answers.Remote("start", link)() == 1
    link.close()
    survivors = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                survivors.append(pid)
        except OSError:
            continue
    assert not survivors, "a process of the run outlived it"


def test_confinement_says_how_memory_is_bounded_here():
    line = sandbox.confinement(sandbox.Limits(memory=3 * 2**30))
    assert ("cgroup" in line and "3 GiB" in line) or "RLIMIT_AS" in line
