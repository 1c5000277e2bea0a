"""Notebook files shaped to make a grader's reading slow or large: the shapes of issue 39's red team, at any size.

    shape(kind, n) -> bytes      the file: notebook 01's release with the reference answers, plus the hostile part

Each kind grows with `n` (roughly n bytes of hostile content); a reader that is linear in the file takes time in
proportion. The benchmark (tools/bench_reading.py) and the fuzz test (tests/test_grade_submission.py) read them.

    skipped       a valid notebook whose metadata holds n/16 values {"outputs": []} (each one skipped)
    unterminated  an "outputs" value opening a string of escaped quotes that never closes (invalid JSON)
    magics        an own cell of n/6 `!true` lines (IPython's transformer made one pass per magic line); a cell is
                  kept up to submission.MAX_ANSWER characters, so past 100,000 it is one of n/100,000 cells
    answer-magics the same lines in an answer cell (read by the plan, the scan and the advice)
    nested        metadata nested n/2 lists deep, and an own cell of parentheses nested as deep as parses
    huge-string   a string of n bytes in a cell's outputs (never read) and one of n/8 in the metadata
    long-source   own cells of short assignment lines, 90,000 characters each (long cells every reader walks)
    many-cells    2,000 own cells sharing n bytes
    edited-cell   a locked course cell rewritten as up to 90,000 characters of other lines (the advice counts them)
"""
from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NB1 = ROOT / "notebooks" / "lec02" / "01_tensors_dtypes.ipynb"
SOLUTION1 = ROOT / "solutions" / "lec02" / "01_tensors_dtypes.ipynb"
KINDS = ("skipped", "unterminated", "magics", "answer-magics", "nested", "huge-string", "long-source", "many-cells",
         "edited-cell")


def base() -> dict:
    """Notebook 01's release with the reference answers typed in, as JSON data."""
    release = json.loads(NB1.read_text("utf-8"))
    solution = json.loads(SOLUTION1.read_text("utf-8"))
    answers = {c["metadata"]["nbgrader"]["grade_id"]: c["source"] for c in solution["cells"]
               if c.get("metadata", {}).get("nbgrader", {}).get("solution")}
    for cell in release["cells"]:
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell["source"] = answers[gid]
    return release


def _code(source: str) -> dict:
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source}


def _answer_index(nb: dict, gid: str = "ex01_tensor_bytes") -> int:
    return next(i for i, c in enumerate(nb["cells"]) if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == gid)


def shape(kind: str, n: int) -> bytes:
    """The file of hostile shape `kind` grown to about `n` bytes of hostile content."""
    nb = base()
    if kind == "skipped":
        nb["metadata"]["junk"] = [{"outputs": []} for _ in range(max(1, n // 16))]
        return json.dumps(nb).encode()
    if kind == "unterminated":
        text = json.dumps(nb)
        cut = text.index('"outputs": [') + len('"outputs": [')
        return (text[:cut] + '"' + '\\"' * max(1, n // 2)).encode()
    if kind in ("magics", "answer-magics"):
        lines = "\n".join(["!true"] * max(1, min(n, 90_000) // 6)) + "\ndef helper():\n    return 1\n"
        if kind == "magics":
            at = _answer_index(nb) + 1
            nb["cells"][at:at] = [_code(lines) for _ in range(max(1, n // 90_000))]
        else:
            cell = nb["cells"][_answer_index(nb)]
            cell["source"] = lines + "".join(cell["source"])
        return json.dumps(nb).encode()
    if kind == "nested":
        depth = max(1, n // 2)
        text = json.dumps(nb)
        nested = "[" * depth + "]" * depth
        nb["cells"].insert(_answer_index(nb) + 1, _code("x = " + "(" * 180 + "1" + ")" * 180 + "\n"))
        text = json.dumps(nb)
        return text.replace('"metadata": {', '"metadata": {"deep": ' + nested + ", ", 1).encode()
    if kind == "huge-string":
        nb["cells"][_answer_index(nb)]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "x" * n}]
        nb["metadata"]["blob"] = "y" * max(1, n // 8)
        return json.dumps(nb).encode()
    if kind == "long-source":
        lines = "".join(f"v{i} = {i}\n" for i in range(max(1, min(n, 90_000) // 10)))
        at = _answer_index(nb) + 1
        nb["cells"][at:at] = [_code(lines) for _ in range(max(1, n // 90_000))]
        return json.dumps(nb).encode()
    if kind == "many-cells":
        each = max(1, n // 2000)
        at = _answer_index(nb) + 1
        nb["cells"][at:at] = [_code(f"print({i!r}, {'z' * each!r})\n") for i in range(1900)]
        return json.dumps(nb).encode()
    if kind == "edited-cell":
        cell = next(c for c in nb["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "code-17-units")
        cell["source"] = "".join(f"w{i} = {i} * 3\n" for i in range(max(1, min(n, 90_000) // 14)))
        return json.dumps(nb).encode()
    raise ValueError(f"no hostile shape {kind!r}: one of {', '.join(KINDS)}")
