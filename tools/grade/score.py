"""Stage 4: points from trusted data only.

The runner's events are accepted only with the run's HMAC signature and in sequence; everything else the
sandbox left behind is display material. A test cell earns its points when, in that cell, the check itself
reported its exercise passed (a signed `check` event from `lecture2.checks.exercise`) and the cell ended
without an error. Points come from the instructor's notebook, never from the student's file, and are
clamped to the cell's maximum; a withheld exercise, a cell that never ran or never ended earns nothing.
"""
from __future__ import annotations

import ast
import hashlib
import hmac
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from .splice import Notebook


@dataclass
class TestResult:
    """One test cell's outcome. status: passed, failed, error, timeout, not run, stopped, withheld."""

    grade_id: str
    points: float
    max_points: float
    status: str  # with check groups: passed, partial or failed by the groups' outcomes
    failure: dict = field(default_factory=dict)  # fields of the end event (ename, what, want, hint, line, ...)
    in_hidden: bool = False  # the failure was raised in the hidden region
    reason: str = ""  # for withheld: the scan's findings
    groups: list[dict] = field(default_factory=list)  # [{exercise, group, weight, points, passed, hint, hidden}]
    visible_max: float | None = None  # the points of the groups present in the source (less in the release)


@dataclass
class NotebookResult:
    name: str
    tests: list[TestResult]
    problems: list[str] = field(default_factory=list)

    @property
    def score(self) -> float:
        return sum(t.points for t in self.tests)


def read_untrusted(path: Path, limit: int) -> bytes | None:
    """A regular file's bytes (at most `limit`) from a folder the student could write: no symlink, no
    device, no FIFO is followed or read. None when it is missing or not a plain file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        data = b""
        while len(data) < limit:
            chunk = os.read(fd, min(1 << 20, limit - len(data)))
            if not chunk:
                break
            data += chunk
        return data
    finally:
        os.close(fd)


def verify(raw: bytes, key: bytes) -> tuple[list[dict], str | None]:
    """The events that carry the key's signature, in sequence from 0; and a problem if the file held
    anything after them (an altered, forged or reordered line)."""
    events = []
    for number, line in enumerate(raw.split(b"\n")):
        if not line:
            continue
        body, _, tag = line.rpartition(b"\t")
        good = hmac.compare_digest(hmac.new(key, body, hashlib.sha256).hexdigest().encode(), tag.strip())
        try:
            event = json.loads(body) if good else None
        except ValueError:
            event = None
        if not isinstance(event, dict) or event.get("seq") != len(events):
            return events, f"the run's signed record was altered after event {len(events)} (the rest ignored)"
        events.append(event)
    return events, None


def _calls(source: str, method: str) -> list[tuple[str, ast.Call]]:
    """(first argument, call) of each `x.method("literal", ...)` call in `source`, in order."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return [(node.args[0].value, node) for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == method
            and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)]


def exercise_groups(source: str) -> dict[str, dict[str, float]]:
    """The exercises a test cell checks, from its source (the instructor's): name -> {group: weight} for
    `checks.exercise("name", points={"lecture": 1, ...})`, or name -> {} for an all-or-nothing exercise."""
    found: dict[str, dict[str, float]] = {}
    for name, node in _calls(source, "exercise"):
        groups = {}
        for kw in node.keywords:
            if kw.arg == "points" and isinstance(kw.value, ast.Dict):
                for key, value in zip(kw.value.keys, kw.value.values):
                    if isinstance(key, ast.Constant) and isinstance(value, ast.Constant):
                        groups[str(key.value)] = float(value.value)
        found[name] = groups
    return found


def exercise_names(source: str) -> set[str]:
    """The names a test cell checks: the string arguments of its `checks.exercise("...")` calls."""
    return set(exercise_groups(source))


def group_lines(source: str) -> dict[str, int]:
    """The line of each `with ex.group("label"):` in a test cell (to tell hidden groups from visible)."""
    lines: dict[str, int] = {}
    for label, node in _calls(source, "group"):
        lines.setdefault(label, node.lineno)
    return lines


def score(notebook: Notebook, events: list[dict], withheld: dict[str, list[str]]) -> NotebookResult:
    """Each test cell's points. `withheld`: test grade_id -> the scan's findings that withhold it."""
    by_cell: dict[int, dict] = {}
    for event in events:
        cell = event.get("cell")
        if isinstance(cell, int) and not isinstance(cell, bool):
            entry = by_cell.setdefault(cell, {"start": False, "end": None, "checks": {}, "foreign": 0})
            kind = event.get("type")
            if kind == "start":
                entry["start"] = True
            elif kind == "end" and entry["end"] is None:
                entry["end"] = event
            elif kind == "check" and entry["end"] is None and isinstance(event.get("name"), str):
                entry["checks"][event["name"]] = event  # the last report of each exercise counts
            elif kind == "foreign_report":
                entry["foreign"] += 1
    results = []
    for cell in notebook.tests:
        maximum = max(0.0, float(cell.points))
        result = TestResult(cell.grade_id, 0.0, maximum, "not run")
        if cell.grade_id in withheld:
            result.status, result.reason = "withheld", "; ".join(withheld[cell.grade_id])
            results.append(result)
            continue
        entry = by_cell.get(cell.index)
        if entry is None or not entry["start"]:
            results.append(result)
            continue
        end = entry["end"]
        declared = exercise_groups(cell.source)
        if any(declared.values()):
            _score_groups(result, cell, declared, entry)
        elif end is None:
            result.status = "stopped"
        elif end.get("status") == "ok":
            wanted = set(declared)
            if wanted and wanted <= set(entry["checks"]) and not entry["foreign"]:
                result.status, result.points = "passed", maximum
            else:
                result.status = "failed"
                result.failure = {"ename": "NoReport", "message": "the check did not report a pass"}
        else:
            result.status = "timeout" if end.get("status") == "timeout" else "failed"
            result.failure = {k: end.get(k) for k in ("ename", "what", "want", "hint", "line", "message")}
            line = end.get("line")
            result.in_hidden = bool(cell.hidden and isinstance(line, int) and cell.hidden[0] <= line <= cell.hidden[1])
        results.append(result)
    return NotebookResult(notebook.name, results)


def _score_groups(result: TestResult, cell, declared: dict[str, dict[str, float]], entry: dict) -> None:
    """Partial credit: each group's share of the cell's points when the exercise's last signed report says
    it passed. Weights come from the instructor's source; an exercise without groups weighs 1."""
    total = sum(sum(g.values()) if g else 1.0 for g in declared.values())
    lines = group_lines(cell.source)
    earned, present = 0.0, 0.0
    for name, groups in declared.items():
        event = entry["checks"].get(name)
        reported = event.get("groups") if event and isinstance(event.get("groups"), dict) else {}
        for label, weight in (groups or {name: 1.0}).items():
            if groups and label not in lines:  # a hidden group, absent from the release's cell (make validate)
                continue
            present += weight
            outcome = reported.get(label) if groups else ({"passed": True} if event and not groups else None)
            passed = bool(outcome and outcome.get("passed") is True) and not entry["foreign"]
            share = result.max_points * weight / total if total else 0.0
            hidden = bool(cell.hidden and label in lines and cell.hidden[0] <= lines[label] <= cell.hidden[1])
            result.groups.append({"exercise": name, "group": label, "weight": weight, "max_points": share,
                                  "points": share if passed else 0.0, "passed": passed, "hidden": hidden,
                                  **{k: (outcome or {}).get(k) for k in ("hint", "what", "want", "message")}})
            earned += share if passed else 0.0
    result.points = min(max(earned, 0.0), result.max_points)  # clamped to the cell's points
    result.visible_max = result.max_points * present / total if total else 0.0
    end = entry["end"]
    if end is not None and end.get("status") not in ("ok", "error"):
        result.failure = {k: end.get(k) for k in ("ename", "line", "message")}
    elif end is not None and end.get("status") == "error":
        result.failure = {k: end.get(k) for k in ("ename", "what", "want", "hint", "line", "message")}
    if all(g["passed"] for g in result.groups):
        result.status = "passed"
    elif end is None:
        result.status = "stopped"
    elif end.get("status") == "timeout":
        result.status = "timeout"
    else:
        result.status = "partial" if result.points > 0 else "failed"


def run_problems(notebook: Notebook, events: list[dict], crashed: bool, timed_out: bool, limit: float,
                 returncode: int | None) -> list[str]:
    """What went wrong while the notebook ran, for the report: timeouts, memory, a dead kernel, tampering."""
    problems, index_to_cell = [], {c.index: c for c in notebook.cells}
    started = [e["cell"] for e in events if e.get("type") == "start"]
    ended = {e["cell"]: e for e in events if e.get("type") == "end"}
    done = any(e.get("type") == "done" for e in events)

    def where(index):
        cell = index_to_cell.get(index)
        return f"cell {index + 1}" + (f" ({cell.grade_id})" if cell and cell.grade_id else "")

    if any(e.get("status") == "timeout" for e in ended.values()):
        problems.append("a cell timed out")
    if any(e.get("ename") == "MemoryError" or e.get("ename") != "CheckFailed" and (
            "can't allocate memory" in str(e.get("message", "")) or "not enough memory" in str(e.get("message", "")))
           for e in ended.values()):
        problems.append("out of memory")
    if any(e.get("type") == "foreign_report" for e in events):
        problems.append("a pass reported by something other than the checks was refused")
    if not done:
        last = started[-1] if started else None
        if timed_out:
            problems.append(f"stopped at the notebook's time limit ({limit:g} s)"
                            + (f" in {where(last)}" if last is not None else "") + " (later cells score 0)")
        elif last is not None and last not in ended:
            problems.append(f"the kernel died in {where(last)} (later cells score 0)")
        elif crashed or returncode:
            problems.append(f"the run ended early (exit status {returncode})")
    return problems
