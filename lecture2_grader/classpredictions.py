"""The class report's panel of predictions: what the class predicted, beside what was measured. For each
measurement the text asks to predict, what the class wrote, so that an instructor sees which ideas the class
mispredicts and by how much.

Made from the grader's own records (each student's `<notebook>.grading.json`, whose `predictions` the reader took
from the file as data: predictions.py) and the instructor's executed notebook (the measurement each prediction
cell is compared with). Predictions never change a point. Writes predictions.csv (one row per student and
predicted value) and gives the page's section (classreport.py puts it in), every student string escaped.
"""
from __future__ import annotations

import csv
import math
import statistics
from pathlib import Path

from lecture2.predict import shown

from . import ASSIGNMENT, predictions
from .files import atomic_text
from .text import csv_cell, html

BINS = [(0, 1 / 8, "≤⅛×"), (1 / 8, 1 / 3, "¼×"), (1 / 3, 2 / 3, "½×"), (2 / 3, 1.5, "≈1×"), (1.5, 3, "2×"),
        (3, 8, "4×"), (8, math.inf, "≥8×")]  # predicted / measured


def _student_values(cell: dict, names: list[str]) -> dict[str, object]:
    """A student's prediction cell ({my_ name: literal}) as value name -> value, aligned with the measurement's
    names: "" for one value, or a dict's keys."""
    values = list(cell.values())
    if not values:
        return {}
    first = values[0]
    if names == [""]:
        return {"": first}
    return {n: first.get(n) for n in names} if isinstance(first, dict) else {}


def rows(course: Path, results: dict[str, dict[str, dict]]) -> list[dict]:
    """One row per prediction key and value: notebook, key, what, name, measured, and the class's predictions."""
    out = []
    stems = sorted({stem for nbs in results.values() for stem in nbs})
    for stem in stems:
        measured = predictions.measured(course / "solutions" / ASSIGNMENT / f"{stem}.ipynb")
        keys = list(measured) + sorted({k for nbs in results.values() for k in (nbs.get(stem, {}).get("predictions")
                                                                                 or {}) if k not in measured})
        for key in keys:
            record = measured.get(key, {"what": "", "values": {"": {"measured": None}}})
            names = list(record.get("values") or {"": {}})
            for name in names:
                actual = (record["values"].get(name) or {}).get("measured")
                given = {}
                for student, nbs in sorted(results.items()):
                    cell = (nbs.get(stem, {}).get("predictions") or {}).get(key)
                    if cell is None:
                        continue
                    value = _student_values(cell, names).get(name)
                    if value is not None:
                        given[student] = value
                out.append({"notebook": stem, "key": key, "what": record.get("what", ""), "name": name,
                            "measured": actual, "given": given, "students": len(results)})
    return out


def write_csv(course: Path, table: list[dict]) -> Path:
    path = course / "predictions.csv"
    with atomic_text(path) as f:
        writer = csv.writer(f)
        writer.writerow(["notebook", "key", "value", "student", "predicted", "measured", "predicted/measured"])
        for row in table:
            for student, value in row["given"].items():
                r = predictions.ratio(value, row["measured"])
                writer.writerow([row["notebook"], csv_cell(row["key"]), csv_cell(row["name"]), csv_cell(student),
                                 csv_cell(value), csv_cell(row["measured"]), "" if r is None else f"{r:.4g}"])
    return path


def _summary(row: dict) -> tuple[str, float]:
    """The cell's text and how far off the class was (for the order: the most mispredicted first)."""
    given, actual = row["given"], row["measured"]
    ratios = [r for v in given.values() if (r := predictions.ratio(v, actual)) is not None and r > 0]
    if ratios:
        counts = [sum(lo <= r < hi for r in ratios) for lo, hi, _ in BINS]
        bars = "".join(f"<span class='g'>{label} <span class='barbg' style='width:60px'><span class='bar' "
                       f"style='width:{60 * c / len(ratios):.0f}px'></span></span>{c}</span>"
                       for (_, _, label), c in zip(BINS, counts))
        median = statistics.median(ratios)
        within = sum(0.5 <= r <= 2 for r in ratios) / len(ratios)
        off = statistics.median(abs(math.log2(r)) for r in ratios)
        return (f"median predicted/measured <b>{median:.3g}</b> · within 2×: {within:.0%}<br>{bars}", off)
    if not given:
        return "<span class='muted'>nobody wrote a prediction</span>", 0.0
    if actual is not None:
        right = sum(v == actual for v in given.values()) / len(given)
        return f"right: <b>{right:.0%}</b>", 1 - right
    return "<span class='muted'>no measurement to compare with</span>", 0.0


def section(table: list[dict]) -> list[str]:
    """The page's panel: one row per predicted value, the class's distribution beside the measurement."""
    out = ["<h2 id='predictions'>What the class predicted, beside the measurement</h2>",
           "<p class='muted'>Before each measurement the notebooks ask for a prediction (a cell the student fills; "
           "read from the file as data, never run, never worth a point). Measured: the instructor's executed notebook. "
           "Rows with the class furthest off come first; <a href='../predictions.csv'>predictions.csv</a> has every "
           "prediction.</p>"]
    if not table:
        return out + ["<p>no prediction cells in the graded notebooks</p>"]
    summarised = sorted(((row, *_summary(row)) for row in table), key=lambda t: (-t[2], t[0]["notebook"]))
    out.append("<table class='predictions'><tr><th>notebook</th><th>prediction</th><th>measured</th>"
               "<th>answered</th><th>the class</th></tr>")
    for row, text, _ in summarised:
        label = row["what"] + (f" {row['name']}" if row["name"] else "")
        measured = "—" if row["measured"] is None else html(shown(row["measured"]), 80)
        out.append(f"<tr><td>{html(row['notebook'][:2])}</td><td><code>{html(row['key'], 80)}</code> "
                   f"{html(label, 120)}</td><td class='n'>{measured}</td>"
                   f"<td class='n'>{len(row['given'])} / {row['students']}</td><td>{text}</td></tr>")
    out.append("</table>")
    return out
