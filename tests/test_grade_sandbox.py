"""tools/grade/sandbox.py + runner.py: what a student's code can reach from inside its sandbox.

Needs bubblewrap (Debian: `apt-get install bubblewrap`; .ci/run installs it and sets LECTURE2_SANDBOX_REQUIRED,
which turns a missing bwrap into a failure instead of a skip)."""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from conftest import ROOT
from tools.grade import cli, sandbox
from tools.grade.score import read_untrusted, verify

if shutil.which("bwrap") is None and not os.environ.get("LECTURE2_SANDBOX_REQUIRED"):
    pytest.skip("bubblewrap is not installed", allow_module_level=True)


def run_cells(tmp_path: Path, *sources: str, timeout: float = 60, memory: int | None = None):
    """Run code cells in a sandbox; returns (outcome, verified events, what each cell printed)."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    plan = {"notebook": "t.ipynb", "cells": [{"index": i, "kind": "code", "grade_id": None, "source": s}
                                             for i, s in enumerate(sources)]}
    (scratch / "plan.json").write_text(json.dumps(plan))
    key = os.urandom(32)
    outcome = sandbox.run(scratch, cli.RUNNER, ["plan.json", "--cell-timeout", "30"], key, tmp_path / "events",
                          package=cli.package_dir(), timeout=timeout, memory=memory, threads=1, nproc=4096,
                          log=tmp_path / "log")
    events, _ = verify(read_untrusted(tmp_path / "events", 1 << 20) or b"", key)
    outputs = json.loads(read_untrusted(scratch / "outputs.json", 1 << 24) or b"[]")
    return outcome, events, [o["stdout"] for o in outputs]


def test_the_sandbox_sees_only_its_scratch_folder_and_the_environment(tmp_path):
    outcome, events, printed = run_cells(tmp_path, f'''
import os, socket
print("uid", os.getuid())
print("course", os.path.exists({str(ROOT / "solutions")!r}), os.path.exists({str(ROOT / "tools" / "grade" / "cli.py")!r}))
print("plan", os.path.exists("plan.json"))
for path in ("/grading/mine.txt", "/tmp/mine.txt", {str(ROOT / "lecture2" / "x.py")!r}, "/usr/x"):
    try:
        open(path, "w").write("x")
        print("wrote", path)
    except OSError as err:
        print("refused", path, type(err).__name__)
try:
    socket.create_connection(("1.1.1.1", 80), timeout=2)
    print("network open")
except OSError:
    print("network closed")
print("processes", sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
''')
    assert outcome.returncode == 0 and any(e["type"] == "done" for e in events), printed
    out = printed[0]
    assert "uid 65534" in out
    assert "course False False" in out, "the course's solutions and the grader are invisible"
    assert "plan False" in out, "the plan (hidden tests) is deleted before any cell runs"
    assert "wrote /grading/mine.txt" in out and "wrote /tmp/mine.txt" in out
    assert f"refused {ROOT / 'lecture2' / 'x.py'}" in out and "refused /usr/x" in out
    assert "network closed" in out
    pids = json.loads(out.split("processes ", 1)[1].splitlines()[0])
    assert max(pids) < 100, f"the sandbox sees only its own PID namespace: {pids}"


def test_the_time_limit_kills_every_process_of_the_run(tmp_path):
    """A cell that ignores the cell timeout and leaves a detached child: all dead when run() returns."""
    marker = f"{time.time():.6f}"
    outcome, events, _ = run_cells(tmp_path, f'''
import subprocess, time
subprocess.Popen(["setsid", "sh", "-c", "sleep 600; echo {marker}"])
while True:
    try:
        time.sleep(0.2)
    except BaseException:
        pass
''', timeout=12)
    assert outcome.timed_out
    survivors = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            survivors.append(pid)
    assert not survivors, "a process of the run outlived it"
    assert not any(e["type"] == "done" for e in events)


def test_memory_is_limited(tmp_path):
    outcome, events, printed = run_cells(tmp_path, "hog = bytearray(8 * 2**30)", "print('after')",
                                         memory=3 * 2**30)
    ends = [e for e in events if e["type"] == "end"]
    assert ends[0]["ename"] == "MemoryError" and ends[1]["status"] == "ok"


def test_an_answer_runs_under_the_checks_thread_local_torch_state(tmp_path):
    """An answer function called under the check's torch.no_grad() or FLOP counter sees them (the runner
    calls it in the caller's thread then); called plainly, it runs in a thread of its own."""
    plan_cells = [
        "import torch, threading\nfrom torch.utils.flop_counter import FlopCounterMode",
        "def answer(x):\n    return (torch.is_grad_enabled(), threading.current_thread().name, (x @ x).sum().item())",
    ]
    check = '''x = torch.ones(4, 4)
plain = answer(x)
with torch.no_grad():
    under_no_grad = answer(x)
with FlopCounterMode(display=False) as counter:
    answer(x)
print("RESULT", plain[:2], under_no_grad[:2], counter.get_total_flops())'''
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    plan = {"notebook": "t.ipynb", "cells": [
        {"index": 0, "kind": "code", "grade_id": None, "source": plan_cells[0]},
        {"index": 1, "kind": "answer", "grade_id": "a", "source": plan_cells[1]},
        {"index": 2, "kind": "code", "grade_id": None, "source": check}]}
    (scratch / "plan.json").write_text(json.dumps(plan))
    key = os.urandom(32)
    sandbox.run(scratch, cli.RUNNER, ["plan.json"], key, tmp_path / "events", package=cli.package_dir(),
                timeout=60, memory=None, threads=1, nproc=4096)
    printed = json.loads(read_untrusted(scratch / "outputs.json", 1 << 20))[2]["stdout"]
    assert "RESULT (True, 'answer') (False, 'MainThread') 128" in printed, printed
