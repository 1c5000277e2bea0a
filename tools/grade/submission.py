"""Stage 1: read what a student handed in, as students save files, and pick out their answer cells.

A notebook file may come with a UTF-8 byte-order mark (Windows Notepad), CRLF line endings, in UTF-16, in
an older nbformat, with its nbgrader metadata stripped (copied into a new notebook), with cells duplicated,
retyped or with grade_ids the assignment does not have. None of this runs any code: the file is parsed as
JSON, and only the answer cells' sources are kept. Every oddity becomes a problem line for the report;
only what makes the answers unreadable costs the notebook.
"""
from __future__ import annotations

import codecs
import json
from dataclasses import dataclass, field
from pathlib import Path


class Unreadable(Exception):
    """The file cannot be read as a notebook; the message says why, for the report line."""


@dataclass
class Answers:
    """A student's answers for one notebook: answer grade_id -> source, and what was odd about the file."""

    sources: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def decode(raw: bytes) -> str:
    """The text of a notebook file: UTF-8 with or without a BOM, or UTF-16/32 with a BOM."""
    for bom, codec in ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
                       (codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16")):
        if raw.startswith(bom):
            try:
                return raw.decode(codec)
            except UnicodeDecodeError:
                raise Unreadable(f"not valid {codec.upper()} text") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise Unreadable(f"not UTF-8 text (byte {err.start}); save the notebook from Jupyter again") from None


def _source(value: object) -> str:
    if isinstance(value, list):
        value = "".join(str(v) for v in value)
    if not isinstance(value, str):
        return ""
    return value.replace("\r\n", "\n").replace("\r", "\n")  # Windows line endings are not an edit


def cells_of(text: str) -> list[dict]:
    """The cells of a notebook's JSON text as dicts {cell_type, source, grade_id}, for nbformat 3 and 4."""
    try:
        nb = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as err:
        raise Unreadable(f"not a valid notebook (invalid JSON: {str(err)[:60]})") from None
    if not isinstance(nb, dict):
        raise Unreadable("not a valid notebook (the JSON is not an object)")
    major = nb.get("nbformat")
    if major == 4 or (major is None and isinstance(nb.get("cells"), list)):
        raw_cells = nb.get("cells")
    elif major == 3 and isinstance(nb.get("worksheets"), list):
        raw_cells = [c for ws in nb["worksheets"] if isinstance(ws, dict) for c in ws.get("cells", [])]
    else:
        raise Unreadable(f"not a notebook this grader reads (nbformat {major!r}; save it from Jupyter as nbformat 4)")
    if not isinstance(raw_cells, list):
        raise Unreadable("not a valid notebook (no list of cells)")
    cells = []
    for raw in raw_cells:
        if not isinstance(raw, dict):
            continue
        meta = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else {}
        nbg = meta.get("nbgrader") if isinstance(meta.get("nbgrader"), dict) else {}
        gid = nbg.get("grade_id") if isinstance(nbg.get("grade_id"), str) else None
        source = raw.get("source", raw.get("input", ""))  # nbformat 3 code cells keep it in "input"
        cells.append({"cell_type": raw.get("cell_type"), "source": _source(source), "grade_id": gid})
    return cells


def _first_line(source: str) -> str:
    for line in source.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            return line.strip()
    return ""


def read_answers(path: Path, answer_ids: list[str], stubs: dict[str, str], known_ids: set[str]) -> Answers:
    """The answer cells of the student's notebook at `path`, by grade_id.

    `answer_ids`: the instructor's answer (solution) cells, in order; `stubs`: their release sources (a cell
    whose metadata was stripped is recognised by the stub's first line: `def tensor_bytes(...`);
    `known_ids`: every grade_id of the notebook. Raises Unreadable when the file is no notebook at all.
    """
    cells = cells_of(decode(path.read_bytes()))
    answers = Answers()
    by_id: dict[str, list[dict]] = {}
    unknown = []
    for cell in cells:
        gid = cell["grade_id"]
        if gid is None:
            continue
        if gid in known_ids:
            by_id.setdefault(gid, []).append(cell)
        elif gid not in unknown:
            unknown.append(gid)
    if unknown:
        answers.problems.append(f"cells with unknown grade_ids ignored: {', '.join(unknown[:5])}"
                                + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""))
    untagged = [c for c in cells if c["grade_id"] is None and c["cell_type"] in ("code", "raw", "markdown")]
    by_first_line = []
    for gid in answer_ids:
        found = by_id.get(gid, [])
        if len(found) > 1:
            answers.problems.append(f"answer cell {gid} appears {len(found)} times (the first one is graded)")
        if found:
            cell = found[0]
        else:
            line = _first_line(stubs.get(gid, ""))
            matches = [c for c in untagged if line and _first_line(c["source"]) == line]
            if len(matches) != 1:
                answers.problems.append(f"answer cell {gid} missing (0 points for its exercise)")
                continue
            cell = matches[0]
            by_first_line.append(gid)
        if cell["cell_type"] != "code":
            answers.problems.append(f"answer cell {gid} is a {cell['cell_type']} cell (run as code)")
        answers.sources[gid] = cell["source"]
    if by_first_line:
        answers.problems.append(f"nbgrader metadata missing: answers found by their first line ({', '.join(by_first_line)})")
    return answers
