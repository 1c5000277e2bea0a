"""`make export`: the grades in the forms an LMS imports, beside grades.csv (written from the gradebook).

    .venv/bin/python -m lecture2_grader.export            # export/canvas.csv and export/moodle.csv

    export/canvas.csv   Canvas: Grades > Import. The columns Canvas's own gradebook export has and its import reads:
                        Student, ID, SIS User ID, SIS Login ID, Section, then one assignment column, and a
                        "Points Possible" row under the header as Canvas writes it. Canvas matches a row by ID (its
                        user id, the number in the file names of its download, which the collector keeps in the
                        student's intake record: smithjohn_12345_... -> 12345). The assignment column is named
                        c.Lecture2Grader.canvas_assignment, e.g. "Lecture 2 notebooks (987654)" as Canvas's export
                        names it to update that assignment; a new name makes Canvas create an assignment.
    export/moodle.csv   Moodle: the assignment's "Upload grading worksheet" (Feedback type "Offline grading
                        worksheet"). Moodle's importer needs exactly three columns, Identifier ("Participant N",
                        the N of its download's folder names, kept in the intake record: John Smith_123456_... -> 123456),
                        Grade, and Last modified (grade); Full name, Maximum Grade and Feedback comments are read
                        as in Moodle's own worksheet. The headers are Moodle's English strings: a Moodle in another
                        language expects its own (download one worksheet to see them).

The grade is the student's total in the gradebook: automatic points plus every manual grade from the
formgrader. A student without an LMS id (a plain folder name) cannot be matched by an LMS and is listed as a
warning, never guessed. Every cell a student controls is neutralised for spreadsheets (text.csv_cell).
"""
from __future__ import annotations

import argparse
import csv
import datetime as dt
import sys
from pathlib import Path

from . import gradebook, intake
from .files import atomic_text
from .messages import say
from .text import csv_cell, terminal

CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE_COLUMNS = ["Identifier", "Full name", "Grade", "Maximum Grade", "Last modified (grade)", "Feedback comments"]


def _comment(row: dict, stems: list[str], lang: str) -> str:
    """The worksheet's feedback text (students read it): what the grader found, in `lang` (the course's)."""
    nbs = row["notebooks"]
    parts = []
    for key, test in (("export.late", lambda n: n["late"]), ("export.blank", lambda n: n["state"] == "blank"),
                      ("export.missing", lambda n: n["state"] == "missing"),
                      ("export.unreadable", lambda n: n["state"] == "unreadable")):
        which = [s[:2] for s in stems if test(nbs[s])]
        if which:
            parts.append(f"{say(key, lang)}: {', '.join(which)}")
    return "; ".join(parts)


def write(course: Path, out: Path | None = None) -> tuple[list[Path], list[str]]:
    """export/canvas.csv and export/moodle.csv; returns their paths and warnings."""
    course = course.resolve()
    out = out or course / "export"
    out.mkdir(parents=True, exist_ok=True)
    settings = intake.Term.load(course).settings
    lang = intake.course_language(course)
    assignment = str(settings.get("canvas_assignment") or "lec02")
    stems, maxima, rows = gradebook.table(course)
    max_total = sum(maxima.values())
    warnings = []
    canvas_path, moodle_path = out / "canvas.csv", out / "moodle.csv"
    now = dt.datetime.now(intake.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    with atomic_text(canvas_path) as cf, atomic_text(moodle_path) as mf:
        canvas, moodle = csv.writer(cf), csv.writer(mf)
        canvas.writerow([*CANVAS_COLUMNS, assignment])
        canvas.writerow(["    Points Possible", "", "", "", "", f"{max_total:g}"])
        moodle.writerow(MOODLE_COLUMNS)
        for row in rows:
            student = row["student"]
            name = " ".join(n for n in (row.get("first_name"), row.get("last_name")) if n) or student
            lms, lms_id = intake.lms_identity(course, student)
            total = f"{row['total']:g}"
            if lms == "canvas":
                canvas.writerow([csv_cell(name), lms_id, "", "", "", total])
            elif lms == "moodle":
                moodle.writerow([f"Participant {lms_id}", csv_cell(name), total, f"{max_total:g}", now,
                                 csv_cell(_comment(row, stems, lang))])
            else:
                warnings.append(f"{terminal(student, 100)}: {row['total']:g}/{max_total:g}, not collected from a Canvas or "
                                "Moodle download (no LMS id): enter their grade by hand")
    return [canvas_path, moodle_path], warnings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make export", description=__doc__.split("\n\n")[0])
    parser.add_argument("--course", type=Path, default=Path("."))
    parser.add_argument("--out", type=Path, help="the folder to write into (default: export/ in the course)")
    args = parser.parse_args(argv)
    if not (args.course / "gradebook.db").is_file():
        parser.error("no gradebook.db here: run `make grade` first")
    paths, warnings = write(args.course, args.out)
    for line in warnings:
        print(f"warning: {line}", file=sys.stderr)
    print("wrote " + ", ".join(str(p) for p in paths), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
