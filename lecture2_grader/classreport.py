"""Stage 8: what the class did, for the instructor: class_report/index.html, mistakes.csv, mistakes_by_student.csv.

Made after grading from the grader's own results (each student's `<notebook>.grading.json`, the gradebook, the
intake records), never from anything a student's code printed:

    class_report/index.html    read in a minute, top to bottom: the class in numbers; the total score's
                               distribution; one small panel per notebook (scores, blank, missing); one row per
                               student (score, notebooks late, blank, missing, unreadable, flagged, manual
                               grades); pass rates per exercise and check group among the students who attempted
                               it (those who did not are counted apart); each exercise's usual mistakes, ranked,
                               with the hint in the course's language (c.Lecture2Grader.language), and who
                               made them; the answers the static scan flagged for a look. Offline: no script, no CDN; two PNGs beside it.
    mistakes.csv               one row per notebook, exercise, check group and usual mistake (attempted work only):
                               its hint key and text, how many made it, of how many who attempted the exercise
    mistakes_by_student.csv    the same, one row per student who made it (for a spreadsheet's filters)
    predictions.csv            what each student predicted before each measurement, beside the measurement; the page
                               shows the class's distribution per prediction (classpredictions.py)
"""
from __future__ import annotations

import csv
import math
from collections import defaultdict
from pathlib import Path

from lecture2 import messages as lecture2_messages
from lecture2.editions import EDITIONS, SOURCE

from . import artifacts, classpredictions, gradebook
from .files import AS_OPEN, atomic_file, atomic_text, write_atomic
from .intake import course_language
from .messages import say
from .text import csv_cell, html

OTHER = {"timeout": ("timeout", "report.timeout"), "not run": ("not-run", "report.not_run"),
         "error": ("raised", "report.raised")}  # status -> (the row's key, its text in lecture2_grader.messages)
NO_HINT = ("no-hint", "report.no_hint")
UNATTEMPTED = {"not implemented"}


def load(course: Path, students: list[str]) -> dict[str, dict[str, dict]]:
    """student -> notebook stem -> grading summary, for the students given (those in the gradebook)."""
    return {s: found for s in students if (found := artifacts.load(course, s))}


def hint_key(group: dict, lang: str = SOURCE) -> tuple[str, str]:
    """(key, text in `lang`) of the usual mistake a failed group matched (the check's hint key), or what happened
    instead."""
    if group.get("hint_key"):
        key = str(group["hint_key"])
        try:
            return key, lecture2_messages.hint(key, lang)
        except KeyError:  # a key the course no longer has: the text the judge reported
            return key, str(group.get("hint") or "")
    key, message = OTHER.get(group.get("status"), NO_HINT)
    return key, say(message, lang)


def attempted(nb: dict, test: dict) -> bool:
    """Whether a student attempted the exercise of this test cell: a notebook handed in and filled, and the
    exercise not a stub (the judge saw NotImplementedError in every group)."""
    return nb.get("state", "graded") == "graded" and test["status"] not in UNATTEMPTED


def mistakes(results: dict[str, dict[str, dict]], lang: str = SOURCE) -> tuple[list[dict], dict[tuple, dict]]:
    """Rows of mistakes.csv (attempted work only, most frequent first within each test cell; the hints in `lang`,
    the course's language), and per test cell {attempted: n, unattempted: n, groups: {group: passed count}}."""
    who: dict[tuple, set[str]] = defaultdict(set)
    texts = {}
    tally: dict[tuple, dict] = defaultdict(lambda: {"attempted": 0, "unattempted": 0, "groups": defaultdict(int),
                                                    "exercise": {}})
    for student, notebooks in results.items():
        for stem, nb in notebooks.items():
            for test in nb["tests"]:
                t = tally[(stem, test["grade_id"])]
                if not attempted(nb, test):
                    t["unattempted"] += 1
                    for group in test["groups"]:
                        t["groups"].setdefault(group["group"], 0)
                        t["exercise"][group["group"]] = group.get("exercise", "")
                    continue
                t["attempted"] += 1
                for group in test["groups"]:
                    t["exercise"][group["group"]] = group.get("exercise", "")
                    t["groups"][group["group"]] += bool(group["passed"])
                    if group["passed"] or group.get("status") in UNATTEMPTED:
                        continue
                    key, text = hint_key(group, lang)
                    ident = (stem, test["grade_id"], group["group"], key)
                    who[ident].add(student)
                    texts[ident] = text
    rows = [{"notebook": k[0], "test": k[1], "group": k[2], "hint_key": k[3], "hint": texts[k], "students": len(v),
             "attempted": tally[k[:2]]["attempted"], "who": sorted(v)} for k, v in who.items()]
    rows.sort(key=lambda r: (r["notebook"], r["test"], -r["students"], r["hint_key"]))
    return rows, dict(tally)


def write(course: Path, students: list[str]) -> tuple[Path, Path]:
    """mistakes.csv, mistakes_by_student.csv and class_report/ for `students`; returns mistakes.csv and the page."""
    results = load(course, students)
    lang = course_language(course)
    rows, tally = mistakes(results, lang)
    csv_path = course / "mistakes.csv"
    with atomic_text(csv_path) as f:
        writer = csv.writer(f)
        writer.writerow(["notebook", "test", "group", "hint_key", "hint", "students", "attempted", "unattempted"])
        for r in rows:
            writer.writerow([r["notebook"], csv_cell(r["test"]), csv_cell(r["group"]), csv_cell(r["hint_key"]),
                             csv_cell(r["hint"]), r["students"], r["attempted"],
                             tally[(r["notebook"], r["test"])]["unattempted"]])
    with atomic_text(course / "mistakes_by_student.csv") as f:
        writer = csv.writer(f)
        writer.writerow(["notebook", "test", "group", "hint_key", "student"])
        for r in rows:
            for student in r["who"]:
                writer.writerow([r["notebook"], csv_cell(r["test"]), csv_cell(r["group"]), csv_cell(r["hint_key"]),
                                 csv_cell(student)])
    folder = course / "class_report"
    folder.mkdir(exist_ok=True)
    for old in folder.glob("*.png"):
        old.unlink()
    stems, maxima, table = gradebook.table(course)
    table = [row for row in table if row["student"] in set(students)]
    figures = _figures(table, stems, maxima, folder)
    predicted = classpredictions.rows(course, results)
    classpredictions.write_csv(course, predicted)
    page = _page(results, rows, tally, table, stems, maxima, figures, classpredictions.section(predicted), lang)
    html_path = folder / "index.html"
    write_atomic(html_path, page, AS_OPEN)
    return csv_path, html_path


CSS = """body{font-family:system-ui,"Noto Sans CJK SC","WenQuanYi Zen Hei",sans-serif;max-width:1360px;margin:1em auto;
padding:0 1em;color:#222;line-height:1.4}h2{margin-top:1.6em;border-bottom:1px solid #ddd}table{border-collapse:collapse;
font-size:14px}td,th{border:1px solid #e3e3e3;padding:3px 7px;text-align:left;vertical-align:top}th{background:#f6f6f6;
position:sticky;top:0}td.n{text-align:right;font-variant-numeric:tabular-nums}.bar{display:inline-block;height:10px;
background:#55a868;vertical-align:middle}.barbg{display:inline-block;background:#eee;margin-right:5px}
.warn{background:#fff4e0}.bad{background:#fde8e8}.muted{color:#777}.kpi{display:flex;gap:2em;flex-wrap:wrap}
.kpi div{font-size:15px}.kpi b{font-size:22px;display:block}details summary{cursor:pointer;color:#1a5fb4}
img{display:block;max-width:100%}code{font-size:13px}.g{display:inline-block;white-space:nowrap;margin:0 16px 2px 0}"""


def _page(results, rows, tally, table, stems, maxima, figures, predicted=(), lang: str = SOURCE) -> str:
    max_total = sum(maxima.values())
    totals = sorted(r["total"] for r in table)
    n = len(table)
    count = lambda test: sum(any(test(nb) for nb in r["notebooks"].values()) for r in table)  # noqa: E731
    median = (totals[(n - 1) // 2] + totals[n // 2]) / 2 if n else 0
    out = [f"<!doctype html><html lang='en'><meta charset='utf-8'><title>Class report</title><style>{CSS}</style><body>",
           f"<h1>Class report — {n} students, {len(stems)} notebooks</h1>",
           "<p class='muted'>Made by <code>make grade</code> from the grader's own results, never from what a student's "
           "code printed. <a href='../grades.csv'>grades.csv</a>, <a href='../notebooks.csv'>notebooks.csv</a>, "
           "<a href='../mistakes.csv'>mistakes.csv</a> and <a href='../mistakes_by_student.csv'>"
           "mistakes_by_student.csv</a> have every row.</p><div class='kpi'>",
           f"<div><b>{median:.4g} / {max_total:g}</b>median total</div>",
           f"<div><b>{(sum(totals) / n if n else 0):.1f}</b>mean total</div>",
           f"<div><b>{count(lambda nb: nb['late'])}</b>students with a late notebook</div>",
           f"<div><b>{count(lambda nb: nb['state'] == 'blank')}</b>with a blank notebook</div>",
           f"<div><b>{count(lambda nb: nb['state'] in ('missing', 'unreadable'))}</b>with a notebook missing or unreadable</div>",
           f"<div><b>{count(lambda nb: nb['flagged'])}</b>flagged for a look</div></div>"]
    for title, name, width in figures:
        out += [f"<h2>{html(title)}</h2>", f"<img src='{name}' width='{width}' alt='{html(title)}'>"]
    out += _students(table, stems, maxima)
    out += _pass_rates(tally)
    out += _mistakes(rows, tally, lang)
    out += predicted
    flagged = [(s, stem, "; ".join(nb.get("findings") or [])) for s, nbs in sorted(results.items())
               for stem, nb in sorted(nbs.items()) if nb.get("findings")]
    out.append("<h2>Answers the static scan flagged for a look (scored as usual)</h2>")
    if flagged:
        out.append("<table><tr><th>student</th><th>notebook</th><th>constructs and lines</th></tr>")
        out += [f"<tr><td>{html(s)}</td><td>{html(n_)}</td><td>{html(r, 2000)}</td></tr>" for s, n_, r in flagged]
        out.append("</table>")
    else:
        out.append("<p>none</p>")
    out.append("</body></html>")
    return "\n".join(out)


def _students(table, stems, maxima) -> list[str]:
    max_total = sum(maxima.values())
    out = ["<h2>Students</h2>", "<p class='muted'>Points per notebook (orange: blank or missing, red: unreadable; "
           "<b>L</b> late, <b>M</b> a manual grade given, <b>F</b> flagged). Late: hours past the due date "
           "(c.Lecture2Grader.due), or the LMS's own late mark.</p>",
           "<table><tr><th>student</th><th>total</th>" + "".join(f"<th title='{html(s)}'>{html(s[:2])}</th>" for s in stems)
           + "<th>late</th><th>blank</th><th>missing</th><th>flagged</th></tr>"]
    for row in table:
        nbs = row["notebooks"]
        cells = []
        for stem in stems:
            nb = nbs[stem]
            cls = {"blank": "warn", "missing": "warn", "unreadable": "bad"}.get(nb["state"], "")
            marks = "".join(m for m, on in (("L", nb["late"]), ("M", nb["manual"]), ("F", nb["flagged"])) if on)
            shown = nb["state"] if nb["state"] in ("missing", "unreadable") else f"{nb['score']:g}"
            cells.append(f"<td class='n {cls}' title='{html(stem)}: {html(nb['state'])}'>{html(shown)}"
                         + (f" <b>{marks}</b>" if marks else "") + "</td>")
        late = ", ".join(f"{s[:2]}" + (f" (+{nbs[s]['late_seconds'] / 3600:.1f} h)" if nbs[s]["late_seconds"] else "")
                         for s in stems if nbs[s]["late"])
        def which(test) -> str:
            hits = [s[:2] for s in stems if test(nbs[s])]
            return f"all {len(hits)}" if len(hits) == len(stems) > 2 else ", ".join(hits)

        out.append(f"<tr><td>{html(row['student'], 100)}</td><td class='n'>{row['total']:g} / {max_total:g}</td>"
                   + "".join(cells) + f"<td>{html(late)}</td><td>{which(lambda n: n['state'] == 'blank')}</td>"
                   f"<td>{which(lambda n: n['state'] in ('missing', 'unreadable'))}</td>"
                   f"<td>{which(lambda n: n['flagged'])}</td></tr>")
    out.append("</table>")
    return out


def _bar(fraction: float, width: int = 120) -> str:
    return (f"<span class='barbg' style='width:{width}px'><span class='bar' "
            f"style='width:{max(0.0, min(1.0, fraction)) * width:.0f}px'></span></span>")


def _pass_rates(tally) -> list[str]:
    out = ["<h2>Pass rate per exercise and check group</h2>",
           "<p class='muted'>Among the students who attempted the exercise; those who left it as released (or did "
           "not hand the notebook in) are counted apart.</p>",
           "<table><tr><th>notebook</th><th>test cell</th><th>attempted</th><th>unattempted</th>"
           "<th>check groups: students who passed</th></tr>"]
    for (stem, test), t in sorted(tally.items()):
        groups = []
        for group, passed in t["groups"].items():
            rate = passed / t["attempted"] if t["attempted"] else 0.0
            groups.append(f"<span class='g'>{_bar(rate, 50)}{passed} {html(group)}</span>")
        out.append(f"<tr><td>{html(stem)}</td><td><code>{html(test)}</code></td><td class='n'>{t['attempted']}</td>"
                   f"<td class='n muted'>{t['unattempted']}</td><td>{''.join(groups)}</td></tr>")
    out.append("</table>")
    return out


def _mistakes(rows, tally, lang: str = SOURCE) -> list[str]:
    out = ["<h2>Usual mistakes, most frequent first (attempted work only)</h2>",
           "<table><tr><th>notebook / test cell</th><th>group</th><th>mistake: the hint students read</th>"
           "<th>students</th><th>who</th></tr>"]
    if not rows:
        out.append("<tr><td colspan='5'>none</td></tr>")
    for r in rows:
        t = tally[(r["notebook"], r["test"])]
        names = ", ".join(html(w, 100) for w in r["who"])
        out.append(f"<tr><td>{html(r['notebook'])}<br><code>{html(r['test'])}</code></td><td>{html(r['group'])}</td>"
                   f"<td><code>{html(r['hint_key'])}</code><br><span lang='{EDITIONS[lang].lang}'>{html(r['hint'], 600)}</span></td>"
                   f"<td class='n'>{r['students']} of {t['attempted']}</td>"
                   f"<td><details><summary>{len(r['who'])} names</summary>{names}</details></td></tr>")
    out.append("</table>")
    return out


def _whole_students(ax) -> None:
    from matplotlib.ticker import MaxNLocator

    ax.yaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
    ax.set_ylim(bottom=0)


def _histogram(ax, scores: list[float], maximum: float) -> None:
    """Students per score: a bar per score (whole or half points) up to 25 points, else bins of whole points."""
    top = max(1.0, float(maximum))
    if top <= 25:
        step = 0.5 if any(abs(s * 2 - round(s * 2)) < 1e-9 and s != int(s) for s in scores) else 1.0
        counts: dict[float, int] = {}
        for s in scores:
            key = round(min(max(s, 0.0), top) / step) * step
            counts[key] = counts.get(key, 0) + 1
        ax.bar(list(counts), list(counts.values()), width=0.8 * step, color="#4c72b0")
        ax.set_xlim(-0.6, top + 0.6)
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    else:
        width = math.ceil(top / 25)
        edges = list(range(0, math.ceil(top) + width, width))
        ax.hist([min(s, edges[-1]) for s in scores], bins=edges, color="#4c72b0", edgecolor="white")
        ax.set_xlim(0, edges[-1])
    _whole_students(ax)


def _figures(table, stems, maxima, folder: Path) -> list[tuple[str, str, int]]:
    """The total's histogram and the per-notebook panels, as PNGs drawn at the size the page shows them."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not table or not stems:
        return []
    figures = []
    dpi = 100
    max_total = sum(maxima.values())
    fig, ax = plt.subplots(figsize=(9, 3.2), dpi=dpi)
    _histogram(ax, [r["total"] for r in table], max_total)
    ax.set_xlabel(f"total points (of {max_total:g})")
    ax.set_ylabel("students")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    with atomic_file(folder / "total.png", AS_OPEN) as f:
        fig.savefig(f, dpi=dpi, format="png")
    plt.close(fig)
    figures.append(("Total score", "total.png", 900))
    cols = min(5, len(stems))
    rows_n = math.ceil(len(stems) / cols)
    fig, axes = plt.subplots(rows_n, cols, figsize=(2.64 * cols, 2.7 * rows_n), dpi=dpi, squeeze=False)
    for ax, stem in zip(axes.flat, stems):
        nbs = [r["notebooks"][stem] for r in table]
        handed = [nb["score"] for nb in nbs if nb["state"] not in ("missing", "unreadable")]
        _histogram(ax, handed, maxima[stem])
        blank = sum(nb["state"] == "blank" for nb in nbs)
        missing = sum(nb["state"] in ("missing", "unreadable") for nb in nbs)
        mean = sum(handed) / len(handed) if handed else 0.0
        ax.set_title(f"{stem}\nmean {mean:.1f}/{maxima[stem]:g}, blank {blank}, missing {missing}", fontsize=9)
        ax.set_xlabel("points", fontsize=8)
        ax.tick_params(labelsize=8)
    for ax in list(axes.flat)[len(stems):]:
        ax.axis("off")
    for ax in axes[:, 0]:
        ax.set_ylabel("students", fontsize=8)
    fig.tight_layout()
    with atomic_file(folder / "notebooks.png", AS_OPEN) as f:
        fig.savefig(f, dpi=dpi, format="png")
    plt.close(fig)
    figures.append(("Per notebook (students who handed it in)", "notebooks.png", int(264 * cols)))
    return figures
