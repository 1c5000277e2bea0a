"""Stage 4: points, from the judge's results and the instructor's notebook only.

The judge (a process that never loads a student's object) reports each exercise's check groups as passed or
not, with the hint of each failure by key. Points come from the instructor's test cell: the groups it declares
(`checks.exercise("name", points={...})`), their weights and the cell's points; a group earns its share when
the judge says it passed. Nothing a student's process wrote decides a score. A group whose `with ex.group(...)`
line lies in the hidden region is hidden: its feedback shows its hint only.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field

from .course import Notebook
from .records import Judged, TestRun

SHOWN = ("hint_key", "hint", "what", "want", "got", "ratio", "difference", "message")  # a group's details, as judged


@dataclass
class TestResult:
    """One test cell's outcome. status: passed, partial, failed, not implemented, timeout, not run, error."""

    grade_id: str
    points: float
    max_points: float
    status: str
    groups: list[dict] = field(default_factory=list)  # {exercise, group, weight, points, max_points, passed,
    #                                                    status, hidden, and SHOWN: hint_key, hint, what, want, got,
    #                                                    ratio, difference, message}
    error: dict | None = None  # the check's own error (ename, message, line), for the instructor
    visible_max: float | None = None  # the points of the groups present in the source (fewer in the release)
    seconds: float = 0.0


@dataclass
class NotebookResult:
    name: str
    tests: list[TestResult]
    problems: list[str] = field(default_factory=list)  # what went wrong, for the instructor's report and the student
    notices: list[str] = field(default_factory=list)  # how the grader read the notebook, for the student (advice.py)

    @property
    def score(self) -> float:
        return sum(t.points for t in self.tests)


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
    `checks.exercise("name", points={"lecture": 1, ...})`; an exercise without groups is one group of weight 1."""
    found: dict[str, dict[str, float]] = {}
    for name, node in _calls(source, "exercise"):
        groups = {}
        for kw in node.keywords:
            if kw.arg == "points" and isinstance(kw.value, ast.Dict):
                for key, value in zip(kw.value.keys, kw.value.values):
                    if isinstance(key, ast.Constant) and isinstance(value, ast.Constant):
                        groups[str(key.value)] = float(value.value)
        found[name] = groups or {name: 1.0}
    return found


def exercise_names(source: str) -> list[str]:
    """The names a test cell checks: the string arguments of its `checks.exercise("...")` calls, in order."""
    return list(exercise_groups(source))


def group_lines(source: str) -> dict[str, int]:
    """The line of each `with ex.group("label"):` in a test cell (to tell hidden groups from visible)."""
    lines: dict[str, int] = {}
    for label, node in _calls(source, "group"):
        lines.setdefault(label, node.lineno)
    return lines


def _status(result: TestResult, entry: TestRun | None) -> str:
    statuses = [g["status"] for g in result.groups]
    if entry is None:
        return "not run"
    if statuses and all(s == "passed" for s in statuses):
        return "passed"
    if statuses and all(s in ("not implemented", "not run") for s in statuses) and "not implemented" in statuses:
        return "not implemented"
    if any(s == "timeout" for s in statuses):
        return "timeout" if result.points == 0 else "partial"
    if entry.status == "error" and not any(g["passed"] for g in result.groups):
        return "error"
    return "partial" if result.points > 0 else "failed"


def score(nb: Notebook, judged: Judged | None) -> NotebookResult:
    """Each test cell's points from the judge's results (None, or a notebook the judge did not run: nothing earned)."""
    by_index = {entry.index: entry for entry in (judged.tests if judged is not None and judged.ran else [])}
    results = []
    for cell in nb.tests:
        maximum = max(0.0, float(cell.points))
        entry = by_index.get(cell.index)
        declared = exercise_groups(cell.source)
        lines = group_lines(cell.source)
        total = sum(sum(g.values()) for g in declared.values())
        result = TestResult(cell.grade_id, 0.0, maximum, "not run", seconds=entry.seconds if entry else 0.0)
        present = 0.0
        reports = entry.reports if entry else {}
        for name, groups in declared.items():
            reported = reports.get(name) if isinstance(reports.get(name), dict) else {}
            for label, weight in groups.items():
                in_source = label in lines or label == name
                if not in_source:  # a hidden group, absent from the release's cell (make validate)
                    continue
                present += weight
                outcome = reported.get(label) if isinstance(reported.get(label), dict) else None
                passed = bool(outcome and outcome.get("passed") is True)
                share = maximum * weight / total if total else 0.0
                hidden = bool(cell.hidden and label in lines and cell.hidden[0] <= lines[label] <= cell.hidden[1])
                status = str((outcome or {}).get("status") or "not run")
                result.groups.append({"exercise": name, "group": label, "weight": weight, "max_points": share,
                                      "points": share if passed else 0.0, "passed": passed, "hidden": hidden,
                                      "status": "passed" if passed else status,
                                      **{k: (outcome or {}).get(k) for k in SHOWN}})
                result.points += share if passed else 0.0
        result.points = min(max(result.points, 0.0), maximum)  # clamped to the cell's points
        result.visible_max = maximum * present / total if total else 0.0
        if entry is not None and entry.status == "error":
            result.error = entry.error
        result.status = _status(result, entry)
        results.append(result)
    return NotebookResult(nb.name, results)
