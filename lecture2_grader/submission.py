"""Stage 1: read what a student handed in, as students save files, and pick out their answers.

A notebook file may come with a UTF-8 byte-order mark (Windows Notepad), CRLF line endings, in UTF-16, in
an older nbformat, with its nbgrader metadata stripped (copied into a new notebook), with cells duplicated,
retyped or with grade_ids the assignment does not have, or as no notebook at all; and with any amount of saved
output (plots and logs kept from the lab). None of this runs any code: the file is parsed as JSON and only cell
sources are kept. Outputs and attachments are skipped over in the file's bytes before anything is parsed
(`notebook_text`), so a notebook of 500 MB of plots is read like one of 50 KB: the limits are on what grading
needs (the sources: MAX_SOURCES, MAX_CELLS, MAX_ANSWER), not on the file. Every oddity becomes a problem line for the report
(student-written ids shown escaped); only what makes the answers unreadable costs the notebook, and nothing
in a file can make this module fail otherwise than with `Unreadable`.

Besides the answer cells (by grade_id), the student's own code cells are kept: cells without nbgrader
metadata that are not a copy of a release cell. Each is placed after the course cell before it (its anchor);
the grader runs those that only define things (see plan.py).
"""
from __future__ import annotations

import codecs
import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import predictions
from .course import printable_id, top_level_names

MAX_FILE = 4 * 2**30  # bytes of one notebook file, outputs included (they are skipped, never read whole)
MAX_SOURCES = 32 * 2**20  # bytes of a notebook once its outputs are skipped: its sources, metadata and structure
LARGE = 8 * 2**20  # a file this large is worth a word in `make validate` (its outputs are harmless)
MAX_CELLS = 2000
MAX_ANSWER = 100_000  # characters of one answer cell: a longer one is not graded (no honest answer comes close)


class Unreadable(Exception):
    """The file cannot be read as a notebook; the message says why, for the report line."""


@dataclass
class StudentCell:
    """A code cell the student added: its source and the instructor cell index it follows."""

    anchor: int
    position: int  # its place among the student's cells (to keep their order)
    source: str


@dataclass
class Answers:
    """A student's answers for one notebook: answer grade_id -> source, their own cells, what was odd."""

    sources: dict[str, str] = field(default_factory=dict)
    own_cells: list[StudentCell] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    edited: dict[str, str] = field(default_factory=dict)  # a course cell's grade_id -> the student's changed source
    predictions: dict[str, dict] = field(default_factory=dict)  # prediction key -> {my_ name: literal} (predictions.py)


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


# The key whose value is skipped, and the bytes that matter inside a value being skipped: brackets and quotes.
_SKIPPED = re.compile(rb'"(?:outputs|attachments)"[ \t\r\n]*:[ \t\r\n]*')
_STRUCTURE = re.compile(rb'["\[\]{}]')


def _value_end(raw, start: int, deadline: float | None = None) -> int | None:
    """Where the JSON array or object opening at `start` ends (just past its closing bracket); None when it never
    closes (then the file is not valid JSON). Each byte is looked at once: brackets are counted, and a string is
    crossed from its opening quote to the first quote not escaped by an odd run of backslashes (each run belongs to
    the one quote it precedes). An unterminated string ends the search at once; nothing is copied. Unreadable past
    `deadline` (time.monotonic()), looked at every 65,536 brackets."""
    depth, at, seen = 0, start, 0
    while True:
        for match in _STRUCTURE.finditer(raw, at):
            seen += 1
            if deadline is not None and not seen & 0xFFFF and time.monotonic() > deadline:
                raise Unreadable("its saved outputs take too long to skip (brackets nested in the millions): not a "
                                 "notebook this grader reads")
            i = match.start()
            byte = raw[i]
            if byte == 0x22:  # a string: find its end, then look for brackets again after it
                j = i + 1
                while True:
                    j = raw.find(b'"', j)
                    if j < 0:
                        return None
                    k = j
                    while raw[k - 1] == 0x5C:
                        k -= 1
                    if (j - k) % 2 == 0:
                        break
                    j += 1
                at = j + 1
                break
            depth += 1 if byte in (0x5B, 0x7B) else -1
            if depth == 0:
                return i + 1
        else:
            return None


def strip_outputs(raw, deadline: float | None = None) -> bytes:
    """The JSON bytes of a notebook (UTF-8: bytes, or an mmap of the file) with the value of every "outputs" and
    "attachments" key replaced by an empty one, found without parsing or copying what is skipped, in one pass over
    the file: time linear in its size, memory in what is kept. In valid JSON an unescaped quote followed by
    `outputs":` can only open that key (a closing quote is followed by , : ] or }). Anything else is left for the
    JSON parser to judge. Unreadable as soon as what is kept is over MAX_SOURCES, or past `deadline`
    (time.monotonic(): make collect gives each file READ_SECONDS)."""
    kept, size, at, end = [], 0, 0, len(raw)

    def keep(stop: int) -> None:
        nonlocal size
        size += stop - at
        if size > MAX_SOURCES:
            raise Unreadable(f"its cells' sources and metadata take over {MAX_SOURCES // 2**20} MiB: not a notebook "
                             "this grader reads")
        kept.append(raw[at:stop])

    for match in _SKIPPED.finditer(raw):
        if match.start() < at:
            continue  # inside a value already skipped
        start, backslashes = match.start(), 0
        while start - backslashes > 0 and raw[start - backslashes - 1] == 0x5C:
            backslashes += 1
        if backslashes % 2:  # an escaped quote: text inside a string
            continue
        value = match.end()
        if value >= end or raw[value] not in b"[{":
            continue
        stop = _value_end(raw, value, deadline)
        if stop is None:
            break  # never closed: not valid JSON, and the parser will say so
        keep(value)
        kept.append(b"[]" if raw[value] == 0x5B else b"{}")
        at = stop
    keep(end)
    return b"".join(kept)


def notebook_text(path: Path, deadline: float | None = None) -> str:
    """The JSON text of the notebook file at `path`, its outputs skipped (`strip_outputs`) without reading them
    into memory: UTF-8 with or without a BOM is mapped, not read; UTF-16/32 (rare, and never large) is decoded
    whole. Unreadable when what is left is over MAX_SOURCES or is not text."""
    import mmap

    with path.open("rb") as f:
        head = f.read(4)
        size = os.fstat(f.fileno()).st_size
        if size > MAX_FILE:
            raise Unreadable(f"a file of {size / 2**30:.1f} GiB: not a notebook this grader reads "
                             f"(limit {MAX_FILE // 2**30} GiB)")
        if head.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            if size > MAX_SOURCES:
                raise Unreadable(f"a UTF-16/32 file of {size / 2**20:.0f} MiB: save the notebook from Jupyter (UTF-8)")
            f.seek(0)
            return decode(f.read())
        if size == 0:
            return ""
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            stripped = strip_outputs(mapped, deadline)
    return decode(stripped)


def _source(value: object) -> str:
    if isinstance(value, list):
        value = "".join(v for v in value if isinstance(v, str))
    if not isinstance(value, str):
        return ""
    text = value.replace("\r\n", "\n").replace("\r", "\n")  # Windows line endings are not an edit
    return text.encode("utf-8", "replace").decode("utf-8")  # lone surrogates (\ud800) cannot be written back


def cells_of(text: str) -> list[dict]:
    """The cells of a notebook's JSON text as dicts {cell_type, source, grade_id}, for nbformat 3 and 4."""
    try:
        nb = json.loads(text)
    except (ValueError, RecursionError, MemoryError) as err:  # invalid JSON, a 5,000-digit number, deep nesting
        raise Unreadable(f"not a valid notebook (invalid JSON: {str(err)[:60]})") from None
    if not isinstance(nb, dict):
        raise Unreadable("not a valid notebook (the JSON is not an object)")
    major = nb.get("nbformat")
    if major == 4 or (major is None and isinstance(nb.get("cells"), list)):
        raw_cells = nb.get("cells")
    elif major == 3 and isinstance(nb.get("worksheets"), list):
        raw_cells = [c for ws in nb["worksheets"] if isinstance(ws, dict) and isinstance(ws.get("cells"), list)
                     for c in ws["cells"]]
    else:
        raise Unreadable(f"not a notebook this grader reads (nbformat {printable_id(major)}; save it from "
                         "Jupyter as nbformat 4)")
    if not isinstance(raw_cells, list):
        raise Unreadable("not a valid notebook (no list of cells)")
    if len(raw_cells) > MAX_CELLS:
        raise Unreadable(f"not a notebook this grader reads ({len(raw_cells):,} cells)")
    cells = []
    for raw in raw_cells:
        if not isinstance(raw, dict):
            continue
        meta = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else {}
        nbg = meta.get("nbgrader") if isinstance(meta.get("nbgrader"), dict) else {}
        gid = nbg.get("grade_id") if isinstance(nbg.get("grade_id"), str) else None
        source = raw.get("source", raw.get("input", ""))  # nbformat 3 code cells keep it in "input"
        kind = raw.get("cell_type") if isinstance(raw.get("cell_type"), str) else "?"
        ours = meta.get("lecture2") if isinstance(meta.get("lecture2"), dict) else {}
        key = ours.get("prediction")  # a prediction cell's key (lecture2.predict): read as data, never run
        key = key if isinstance(key, str) and 0 < len(key) <= 80 and key.isprintable() else None
        cells.append({"cell_type": kind, "source": _source(source), "grade_id": gid, "tagged": bool(nbg),
                      "prediction": key})
    return cells


def _first_line(source: str) -> str:
    for line in source.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            return line.strip()
    return ""


def _defines(source: str) -> set[str]:
    """The functions and classes a cell defines (how a stub is recognised when its metadata is gone)."""
    return {n for n in top_level_names(source) if n[:1].isalpha() or n[:1] == "_"}


def read_answers(path: Path, answer_ids: list[str], stubs: dict[str, str], known_ids: set[str],
                 course_sources: dict[str, int] | None = None, index_of: dict[str, int] | None = None,
                 visible: dict[str, str] | None = None) -> Answers:
    """The answer cells and the student's own cells of the notebook at `path`.

    `answer_ids`: the instructor's answer cells, in order; `stubs`: their release sources (a cell whose
    metadata was stripped is recognised by the names its stub defines, or by the stub's first line);
    `known_ids`: every grade_id of the notebook; `course_sources`: release cell source -> instructor index (a
    student cell equal to one is not theirs); `index_of`: grade_id -> instructor index (the anchors); `visible`:
    grade_id -> the release's source of each course code and test cell (an edit of one is noted: the course's
    version runs). Raises Unreadable when the file is no notebook at all."""
    try:
        text = notebook_text(path)
    except OSError as err:
        raise Unreadable(f"cannot be read ({err.strerror})") from None
    cells = cells_of(text)
    answers = Answers()
    by_id = _by_grade_id(cells, known_ids, answers.problems)
    used = _answer_cells(cells, by_id, answer_ids, stubs, answers)
    answers.edited = _edited_course_cells(by_id, visible or {})
    answers.own_cells = _own_cells(cells, course_sources or {}, index_of or {}, used)
    answers.predictions = predictions.read(cells)
    return answers


def _by_grade_id(cells: list[dict], known_ids: set[str], problems: list[str]) -> dict[str, list[dict]]:
    """The cells of each grade_id the notebook has, in order; a problem naming the grade_ids it does not have."""
    by_id: dict[str, list[dict]] = {}
    unknown: list[str] = []
    for cell in cells:
        gid = cell["grade_id"]
        if gid is None:
            continue
        if gid in known_ids:
            by_id.setdefault(gid, []).append(cell)
        elif gid not in unknown:
            unknown.append(gid)
    if unknown:
        shown = ", ".join(printable_id(g) for g in unknown[:5])
        problems.append(f"cells with unknown grade_ids ignored: {shown}"
                        + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""))
    return by_id


class _Shapes:
    """What each untagged cell defines and its first line, read once (how an answer whose metadata is gone is found)."""

    def __init__(self, cells: list[dict]):
        self.untagged = [c for c in cells if c["grade_id"] is None and c["cell_type"] in ("code", "raw", "markdown")]
        self._seen: dict[int, tuple[set[str], str]] = {}  # id(cell) -> its shape

    def of(self, cell: dict) -> tuple[set[str], str]:
        if id(cell) not in self._seen:
            self._seen[id(cell)] = (_defines(cell["source"]), _first_line(cell["source"]))
        return self._seen[id(cell)]

    def matching(self, stub: str, used: set[int]) -> list[dict]:
        """The untagged cells not taken yet that define the stub's names or start with its first line (and are not
        the stub itself)."""
        names, line = _defines(stub), _first_line(stub)
        return [c for c in self.untagged if id(c) not in used and c["source"].strip() != stub.strip() and (
            (names and names <= self.of(c)[0]) or (line and self.of(c)[1] == line))]


def _answer_cells(cells: list[dict], by_id: dict[str, list[dict]], answer_ids: list[str], stubs: dict[str, str],
                  answers: Answers) -> set[int]:
    """Each answer's source into `answers` (by its grade_id, else by the shape of its stub), with a problem for each
    oddity; the ids of the cells found by their shape (not the student's own cells)."""
    shapes, by_shape, used = _Shapes(cells), [], set()
    for gid in answer_ids:
        found = by_id.get(gid, [])
        if len(found) > 1:
            answers.problems.append(f"answer cell {gid} appears {len(found)} times (the first one is graded)")
        if found:
            cell = found[0]
        else:
            matches = shapes.matching(stubs.get(gid, ""), used)
            if len(matches) != 1:
                answers.problems.append(f"answer cell {gid} missing (0 points for its exercise)")
                continue
            cell = matches[0]
            used.add(id(cell))
            by_shape.append(gid)
        if cell["cell_type"] != "code":
            answers.problems.append(f"answer cell {gid} is a {printable_id(cell['cell_type'])} cell (run as code)")
        if len(cell["source"]) > MAX_ANSWER:
            answers.problems.append(f"answer cell {gid} holds {len(cell['source']):,} characters, over the limit of "
                                    f"{MAX_ANSWER:,}: not graded")
            continue
        answers.sources[gid] = cell["source"]
    if by_shape:
        answers.problems.append(f"nbgrader metadata missing: answers found by what they define ({', '.join(by_shape)})")
    return used


def _edited_course_cells(by_id: dict[str, list[dict]], visible: dict[str, str]) -> dict[str, str]:
    """grade_id -> the student's source of each course code or test cell they changed (the course's version runs)."""
    edited = {}
    for gid, release_source in visible.items():
        found = by_id.get(gid, [])
        if found and found[0]["cell_type"] == "code" and found[0]["source"].strip() != release_source.strip() \
                and len(found[0]["source"]) <= MAX_ANSWER:
            edited[gid] = found[0]["source"]
    return edited


def _own_cells(cells: list[dict], course_sources: dict[str, int], index_of: dict[str, int],
               used: set[int]) -> list[StudentCell]:
    """The student's own code cells, each after the course cell before it (its anchor): untagged cells that are not
    an answer found by its shape nor a course cell whose metadata was lost."""
    own, anchor = [], -1
    for cell in cells:
        gid = cell["grade_id"]
        if gid in index_of:
            anchor = index_of[gid]
            continue
        if gid is not None or cell["tagged"] or cell["cell_type"] != "code" or id(cell) in used:
            continue
        if cell["source"] in course_sources:  # a course cell whose metadata was lost: it is not theirs
            anchor = course_sources[cell["source"]]
            continue
        if cell["source"].strip() and len(cell["source"]) <= MAX_ANSWER:
            own.append(StudentCell(anchor, len(own), cell["source"]))
    return own
