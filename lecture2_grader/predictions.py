"""What the class predicted before each measurement: read as data from the files, shown beside the measurement.

A prediction cell (lecture2.predict) is a code cell whose metadata names its key and whose statements assign
literals to names starting with `my_`. The grader never runs it outside the sandbox and never needs to: `read`
takes each such assignment from the cell's source with Python's own parser and `ast.literal_eval` (numbers,
strings, booleans, None, and lists, tuples and dicts of those), bounded in size, and ignores everything else.
Predictions never change a point.

`measured` reads the measurement each key was compared with from the instructor's executed notebook (the
MIME data `lecture2.predict.compare` leaves in the measuring cell's output), so the class report can set the class's
predictions beside it (classreport.py).
"""
from __future__ import annotations

import ast
import json
import math
from pathlib import Path

PREFIX = "my_"
MAX_SOURCE = 4000  # characters of a prediction cell read (a few literals: a longer cell is not one)
MAX_KEYS = 100  # prediction cells read from one notebook
MAX_ITEMS = 50  # elements of a list or dict literal kept
MAX_TEXT = 80  # characters of a string kept
MIME_TYPE = "application/vnd.lecture2.prediction+json"  # lecture2.predict.MIME_TYPE (tests hold them equal)


def _plain(value: object, depth: int = 0) -> object:
    """`value` as bounded JSON data, or raise ValueError for what a prediction cannot be."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        number = float(value)
        if not math.isfinite(number):
            raise ValueError("not a finite number")
        return value if isinstance(value, float) or abs(value) < 2**63 else number
    if isinstance(value, str):
        return value[:MAX_TEXT]
    if depth < 2 and isinstance(value, (list, tuple)):
        return [_plain(v, depth + 1) for v in list(value)[:MAX_ITEMS]]
    if depth < 2 and isinstance(value, dict):
        return {str(k)[:MAX_TEXT]: _plain(v, depth + 1) for k, v in list(value.items())[:MAX_ITEMS]}
    raise ValueError("not a literal a prediction holds")


def read_cell(source: str) -> dict[str, object]:
    """name -> value of each `my_... = <literal>` at the top of a prediction cell's source; nothing else."""
    if len(source) > MAX_SOURCE:
        return {}
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    found: dict[str, object] = {}
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id.startswith(PREFIX)):
            continue
        try:
            found[node.targets[0].id] = _plain(ast.literal_eval(node.value))
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            continue
    return found


def read(cells: list[dict]) -> dict[str, dict[str, object]]:
    """key -> {name: value} of every prediction cell among `cells` (submission.cells_of's dicts, with "prediction")."""
    found: dict[str, dict[str, object]] = {}
    for cell in cells:
        key = cell.get("prediction")
        if not key or key in found or cell.get("cell_type") != "code":
            continue
        if len(found) >= MAX_KEYS:
            break
        found[key] = read_cell(cell.get("source", ""))
    return found


def measured(executed: Path) -> dict[str, dict]:
    """key -> the comparison record (lecture2.predict.record: what, values {name: {predicted, measured}}) left in
    the outputs of the instructor's executed notebook at `executed`; {} where it has none."""
    try:
        nb = json.loads(executed.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    found: dict[str, dict] = {}
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []) if isinstance(cell, dict) else []:
            data = output.get("data", {}) if isinstance(output, dict) else {}
            record = data.get(MIME_TYPE)
            if isinstance(record, dict) and isinstance(record.get("key"), str):
                found.setdefault(record["key"], record)
    return found


def ratio(predicted: object, actual: object) -> float | None:
    """predicted / measured for two finite numbers (the measured one not zero), else None."""
    if isinstance(predicted, bool) or isinstance(actual, bool):
        return None
    if not isinstance(predicted, (int, float)) or not isinstance(actual, (int, float)) or actual == 0:
        return None
    value = float(predicted) / float(actual)
    return value if math.isfinite(value) else None
