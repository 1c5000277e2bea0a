"""Stage 8: what the class got wrong, for the instructor: mistakes.csv and class_report/ (HTML + PNGs).

Every failed check already knows which usual mistake it matched (its hint). After grading, each student's
results sit beside their autograded notebooks (`<notebook>.grading.json`, written by the grader); this
module reads them for every student in the gradebook and writes

    mistakes.csv               one row per notebook, exercise (test cell), check group and usual mistake:
                               its hint key (lecture2.checks.HINTS) and text, how many students, and who
    class_report/index.html    the score distribution per notebook, the pass rate per exercise and check
                               group, each exercise's usual mistakes ranked by frequency, and the answers
                               the static scan withheld (construct and line) for review
"""
from __future__ import annotations

import csv
import html
import json
from collections import Counter, defaultdict
from pathlib import Path

from . import ASSIGNMENT
from .text import csv_cell


def load(course: Path, students: list[str]) -> dict[str, dict[str, dict]]:
    """student -> notebook stem -> summary, for the students given (those in the gradebook)."""
    found: dict[str, dict[str, dict]] = {}
    for student in students:
        for path in sorted((course / "autograded" / student / ASSIGNMENT).glob("*.grading.json")):
            found.setdefault(student, {})[path.name.removesuffix(".grading.json")] = json.loads(path.read_text("utf-8"))
    return found


OTHER = {"not implemented": ("not-implemented", "the exercise was not filled in"),
         "timeout": ("timeout", "the check ran past the time limit"),
         "not run": ("not-run", "the notebook stopped before this check"),
         "error": ("raised", "the answer raised an exception")}


def hint_key(group: dict) -> tuple[str, str]:
    """(key, text) of the usual mistake a failed group matched (the check's hint key), or what happened instead."""
    if group.get("hint_key"):
        return str(group["hint_key"]), str(group.get("hint") or "")
    return OTHER.get(group.get("status"), ("no-hint", "no usual mistake matched"))


def mistakes(results: dict[str, dict[str, dict]]) -> list[dict]:
    """Rows of mistakes.csv, most frequent first within each exercise."""
    who: dict[tuple, set[str]] = defaultdict(set)
    texts = {}
    for student, notebooks in results.items():
        for stem, nb in notebooks.items():
            for test in nb["tests"]:
                if test["status"] == "passed":
                    continue
                for group in test["groups"]:
                    if group["passed"]:
                        continue
                    key, text = hint_key(group)
                    ident = (stem, test["grade_id"], group["group"], key)
                    who[ident].add(student)
                    texts[ident] = text
    rows = [{"notebook": k[0], "test": k[1], "group": k[2], "hint_key": k[3], "hint": texts[k],
             "students": len(v), "who": ";".join(sorted(v))} for k, v in who.items()]
    return sorted(rows, key=lambda r: (r["notebook"], r["test"], -r["students"], r["hint_key"]))


def write(course: Path, students: list[str], max_scores: dict[str, float]) -> tuple[Path, Path]:
    """mistakes.csv and class_report/index.html for `students`; returns both paths."""
    results = load(course, students)
    rows = mistakes(results)
    csv_path = course / "mistakes.csv"
    with csv_path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=["notebook", "test", "group", "hint_key", "hint", "students", "who"])
        writer.writeheader()
        writer.writerows({k: csv_cell(v) if isinstance(v, str) else v for k, v in r.items()} for r in rows)
    folder = course / "class_report"
    folder.mkdir(exist_ok=True)
    for old in folder.glob("*.png"):
        old.unlink()
    figures = _figures(results, rows, max_scores, folder)
    flagged = [(student, stem, "; ".join(nb.get("findings") or [])) for student, nbs in sorted(results.items())
               for stem, nb in sorted(nbs.items()) if nb.get("findings")]
    page = ["<!doctype html><meta charset='utf-8'><title>Class report</title>",
            "<style>body{font-family:sans-serif;max-width:1100px;margin:auto}td,th{padding:2px 8px;text-align:left}"
            "img{max-width:100%}</style>",
            f"<h1>Class report — {len(results)} students</h1>",
            "<p>Made by <code>make grade</code> from the grader's own results (not from anything a student's code "
            "printed). <a href='../mistakes.csv'>mistakes.csv</a> has every row.</p>"]
    for title, name in figures:
        page += [f"<h2>{html.escape(title)}</h2>", f"<img src='{name}' alt='{html.escape(title)}'>"]
    page.append("<h2>Answers the static scan flagged for a look (scored as usual)</h2>")
    if flagged:
        page.append("<table><tr><th>student</th><th>notebook</th><th>constructs and lines</th></tr>")
        page += [f"<tr><td>{html.escape(s)}</td><td>{html.escape(n)}</td><td>{html.escape(r)}</td></tr>"
                 for s, n, r in flagged]
        page.append("</table>")
    else:
        page.append("<p>none</p>")
    page.append("<h2>Usual mistakes</h2><table><tr><th>notebook</th><th>test cell</th><th>group</th><th>mistake</th>"
                "<th>students</th></tr>")
    page += [f"<tr><td>{html.escape(r['notebook'])}</td><td>{html.escape(r['test'])}</td><td>{html.escape(r['group'])}</td>"
             f"<td title='{html.escape(r['hint'])}'>{html.escape(r['hint_key'])}</td><td>{r['students']}</td></tr>" for r in rows]
    page.append("</table>")
    html_path = folder / "index.html"
    html_path.write_text("\n".join(page), encoding="utf-8")
    return csv_path, html_path


def _figures(results, rows, max_scores, folder: Path) -> list[tuple[str, str]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figures = []
    stems = sorted(max_scores)
    if results and stems:
        fig, axes = plt.subplots(1, len(stems), figsize=(3 * len(stems), 2.6), squeeze=False)
        for ax, stem in zip(axes[0], stems):
            scores = [nbs[stem]["score"] if stem in nbs else 0.0 for nbs in results.values()]
            ax.hist(scores, bins=[x - 0.5 for x in range(int(max_scores[stem]) + 2)], color="#4c72b0")
            ax.set_title(stem, fontsize=8)
            ax.set_xlabel(f"points (of {max_scores[stem]:g})", fontsize=7)
        axes[0][0].set_ylabel("students")
        fig.tight_layout()
        fig.savefig(folder / "scores.png", dpi=100)
        plt.close(fig)
        figures.append(("Score distribution per notebook", "scores.png"))
    rates = Counter()
    totals = Counter()
    for nbs in results.values():
        for stem, nb in nbs.items():
            for test in nb["tests"]:
                for group in test["groups"]:
                    label = test["grade_id"] + ("" if group["group"] == "all" else f" / {group['group']}")
                    totals[label] += 1
                    rates[label] += bool(group["passed"])
    if totals:
        labels = sorted(totals)
        fig, ax = plt.subplots(figsize=(8, 0.25 * len(labels) + 1))
        ax.barh(labels, [rates[k] / totals[k] for k in labels], color="#55a868")
        ax.set_xlim(0, 1)
        ax.set_xlabel("fraction of students who passed")
        ax.invert_yaxis()
        ax.tick_params(axis="y", labelsize=7)
        fig.tight_layout()
        fig.savefig(folder / "pass_rates.png", dpi=100)
        plt.close(fig)
        figures.append(("Pass rate per exercise and check group", "pass_rates.png"))
    by_test = defaultdict(list)
    for r in rows:
        by_test[(r["notebook"], r["test"])].append(r)
    for i, ((stem, test), items) in enumerate(sorted(by_test.items())):
        items = sorted(items, key=lambda r: -r["students"])[:8]
        fig, ax = plt.subplots(figsize=(7, 0.3 * len(items) + 1))
        ax.barh([f"{r['hint_key']} ({r['group']})" for r in items], [r["students"] for r in items], color="#c44e52")
        ax.invert_yaxis()
        ax.set_xlabel("students")
        ax.set_title(f"{stem} / {test}: usual mistakes", fontsize=9)
        fig.tight_layout()
        name = f"mistakes_{i:02d}.png"
        fig.savefig(folder / name, dpi=100)
        plt.close(fig)
        figures.append((f"{stem} / {test}: usual mistakes, most frequent first", name))
    return figures
