"""Recognising a received file: the student its path names and the notebook it is. The student by Canvas and
Moodle names, nbgrader's exchange folders, <student>/<notebook>.ipynb, <student>__<notebook>.ipynb; the notebook by
its file name (the release name, or one it starts with, after an LMS's or a browser's renamings), else by its cells
(the grade_ids of exactly one release notebook), else by the nearest release name when that one is clearly nearest.

It reads the release notebooks and the received bytes as JSON (no student code runs); it writes nothing.
"""
from __future__ import annotations

import difflib
import re
from pathlib import Path

from lecture2.editions import EDITIONS

from .. import ASSIGNMENT
from .archives import Received
from .names import CANVAS, EXCHANGE_DIR, MOODLE_DIR, NOT_STUDENTS, PLAIN, RENAMED, STUDENT_ID, slug


ASSIGNMENTS = {e.folder for e in EDITIONS.values()}  # the hub's assignments: each edition's release (ASSIGNMENT's)


def release_notebooks(course: Path) -> dict[str, set[str]]:
    """Release file name -> the grade_ids of its cells (how a misnamed notebook is recognised)."""
    from ..submission import Unreadable, cells_of, notebook_text

    found = {}
    for path in sorted((course / "notebooks" / ASSIGNMENT).glob("*.ipynb")):
        try:
            found[path.name] = {c["grade_id"] for c in cells_of(notebook_text(path)) if c["grade_id"]}
        except Unreadable:
            found[path.name] = set()
    return found


def attribute(item: Received, released: dict[str, set[str]]) -> Received:
    """Fill in the student, the notebook and how it was recognised (or why_not)."""
    parts = item.parts
    if not parts:
        item.why_not = "no file name"
        return item
    file_name, student = parts[-1], None
    for part in parts[:-1]:
        moodle, exchange = MOODLE_DIR.match(part), EXCHANGE_DIR.match(part)
        if moodle:
            student = f"{slug(moodle['name'])}-{moodle['id']}"
            item.lms, item.lms_id = "moodle", moodle["id"]
        elif exchange and exchange["assignment"] in ASSIGNMENTS:  # lec02, lec02-en: one notebook, either edition
            student = exchange["student"]
            item.lms = "exchange"
    for part in parts:
        canvas = CANVAS.match(part)
        if canvas:
            student = f"{canvas['name']}-{canvas['id']}"
            item.lms, item.lms_id = "canvas", canvas["id"]
            item.lms_late = item.lms_late or bool(canvas["late"])
            if part == parts[-1]:
                file_name = canvas["file"]
            break
    if student is None:
        plain = PLAIN.match(file_name)
        if plain:
            student, file_name = plain["student"], plain["file"]
        else:
            for part in reversed(parts[:-1]):  # the nearest folder that names a student (not lec02/, not a zip)
                if part in NOT_STUDENTS or part.lower().endswith(".zip"):
                    continue
                if STUDENT_ID.fullmatch(part):
                    student = part
                break
    item.file_name = file_name
    if not file_name.lower().endswith(".ipynb"):
        item.why_not = "not a notebook (.ipynb)"
        item.student = student
        return item
    if student is None or not STUDENT_ID.fullmatch(student):
        item.why_not = ("no student recognised in its path (Canvas or Moodle names, <student>/<notebook>.ipynb, "
                        "<student>__<notebook>.ipynb, or a hand-in zip made with STUDENT=...)")
        return item
    item.student = student
    if item.owner and item.owner != student:  # a student's folder (folders.py): hers, or nobody's submission
        item.why_not = (f"its folder belongs to {item.owner}, not to {student}: not collected (a submission is "
                        "taken only from the student who owns its folder)")
        return item
    item.notebook, item.matched_by, item.why_not, item.order = match_notebook(file_name, item.data, released)
    return item


def match_notebook(file_name: str, data: bytes | Path, released: dict[str, set[str]]) -> tuple[str | None, str, str, int]:
    """(release name or None, how it was recognised, why not, duplicate order) of a handed-in notebook file."""
    stem = file_name[:-len(".ipynb")] if file_name.lower().endswith(".ipynb") else file_name
    order = 0
    suffix = RENAMED.search(stem)
    if suffix:
        digits = re.sub(r"\D", "", suffix.group(1))
        order = int(digits) if digits else 1
        bare = stem[:suffix.start()]
    else:
        bare = stem
    stems = {n[:-len(".ipynb")]: n for n in released}
    by_cells = _by_cells(data, released)
    by_name = next((stems[c] for c in (stem, bare) if c in stems), None)
    starts = [n for s, n in stems.items() if bare.startswith(s)]
    by_name = by_name or (starts[0] if len(starts) == 1 else None)
    if by_name:
        if by_cells and by_cells != by_name:
            return None, "", (f"named {by_name} but its cells are those of {by_cells}: not placed, copy it by hand "
                              "where it belongs"), order
        return by_name, "name", "", (0 if stem in stems else order)
    ratios = sorted(((difflib.SequenceMatcher(None, bare.lower(), s.lower()).ratio(), n) for s, n in stems.items()),
                    reverse=True)
    nearest = ratios[0][1] if ratios and ratios[0][0] >= 0.75 and (len(ratios) < 2 or ratios[1][0] < ratios[0][0] - 0.1) else None
    if by_cells and nearest and by_cells != nearest:
        return None, "", (f"its cells are those of {by_cells} but its name is nearest {nearest}: not placed, "
                          "copy it by hand where it belongs"), order
    if by_cells:
        return by_cells, "cells" + (" and nearest name" if nearest == by_cells else ""), "", order
    if nearest:
        return nearest, "nearest name", "", order
    guess = f" (nearest: {ratios[0][1]})" if ratios and ratios[0][0] >= 0.5 else ""
    return None, "", f"no notebook of the assignment recognised by its name or its cells{guess}", order


def _by_cells(data: bytes | Path, released: dict[str, set[str]]) -> str | None:
    """The one release notebook whose own grade_ids the file's cells hold; None when none or several do, or when
    the file is no notebook, or takes longer than READ_SECONDS to read (it is then placed by its name, or not)."""
    import time

    from ..runtime import READ_SECONDS
    from ..submission import Unreadable, cells_of, decode, notebook_text, strip_outputs

    deadline = time.monotonic() + READ_SECONDS
    try:
        text = notebook_text(data, deadline) if isinstance(data, Path) else decode(strip_outputs(data, deadline))
        ids = {c["grade_id"] for c in cells_of(text) if c["grade_id"]}
    except (Unreadable, OSError):
        return None
    hits = []
    for name, known in released.items():  # only the ids no other notebook has count ("md-01" is in every one)
        others = set().union(*(v for k, v in released.items() if k != name))
        if ids & (known - others):
            hits.append(name)
    return hits[0] if len(hits) == 1 else None
