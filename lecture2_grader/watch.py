"""`make grade --watch`: grade the class, then each submission as it arrives or changes, until Ctrl-C."""
from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

from . import ASSIGNMENT, gradebook
from .classrun import grade_class
from .report import report_line
from .run import Executor
from .runtime import Runtime


def fingerprint(submitted: Path, names: list[str]) -> dict[str, tuple]:
    """What --watch compares between two looks: each student folder's files (name, size, modification time)."""
    seen = {}
    for name in names:
        folder = submitted / name / ASSIGNMENT
        try:
            seen[name] = tuple(sorted((p.name, st.st_size, st.st_mtime_ns) for p in folder.iterdir()
                                      for st in [p.lstat()]))
        except OSError:
            seen[name] = ()
    return seen


def watch(course: Path, runtime: Runtime, executor: Executor, stop: threading.Event, poll: float = 10.0,
          students: list[str] | None = None, notebooks: list[str] | None = None, out=None) -> int:
    """Grade the class, then every student whose submitted files are new or changed, `poll` seconds apart,
    until `stop` is set. A folder is graded once its files have stayed the same for one look (an upload or an
    unzip still under way is not graded half-copied). Rounds reuse `executor`, and the store makes each round
    cost only what changed. Returns the number of rounds graded."""
    out = out or (lambda line: print(line, flush=True))
    course = course.resolve()
    submitted = course / "submitted"
    graded: dict[str, tuple] = {}
    previous: dict[str, tuple] | None = None
    rounds, said = 0, set()
    out(f"watching {submitted} every {poll:g} s on {executor.describe()} (Ctrl-C stops)")
    while not stop.is_set():
        names = students or (sorted(p.name for p in submitted.iterdir() if p.is_dir() and not p.name.startswith("."))
                             if submitted.is_dir() else [])
        now = fingerprint(submitted, names)
        changed = [n for n in names if graded.get(n) != now[n] and (previous is None or previous.get(n) == now[n])]
        if changed:
            start = time.perf_counter()
            run = grade_class(course, runtime, changed, notebooks=notebooks, executor=executor, stop=stop)
            max_total = sum(gradebook.max_scores(course).values())
            for record in run.students:
                out(report_line(record, max_total))
            for note in run.notes:
                if note not in said:  # a note of the executor's (its sandboxes, a refused worker) once a session
                    said.add(note)
                    print(f"note: {note}", file=sys.stderr, flush=True)
            if not stop.is_set():
                graded.update({n: now[n] for n in changed})
            rounds += 1
            out(f"{time.strftime('%H:%M:%S')} graded {len(run.students)} student{'s' if len(run.students) != 1 else ''} in "
                f"{time.perf_counter() - start:.0f} s; grades.csv and feedback/ are current")
        previous = now
        stop.wait(poll)
    return rounds
