"""Submissions built from the course's own notebooks, for the grading tests: the release as a student
receives it, with answer cells typed in (the reference, or another source), saved as students save files."""
from __future__ import annotations

import codecs
import json
from pathlib import Path

import nbformat

from conftest import RELEASE, ROOT, SOLUTIONS


def reference_answers(name: str) -> dict[str, str]:
    """grade_id -> the reference source of each answer cell of notebook `name`."""
    return {c.metadata["nbgrader"]["grade_id"]: c.source for c in nbformat.read(SOLUTIONS / name, 4).cells
            if c.metadata.get("nbgrader", {}).get("solution")}


def release_folder(edition: str = "zh") -> Path:
    """The committed release of `edition` (lecture2.editions): notebooks/lec02, notebooks/lec02-en."""
    from lecture2 import editions

    return ROOT / "notebooks" / editions.EDITIONS[edition].folder if edition != "zh" else RELEASE


def release(name: str, edition: str = "zh") -> nbformat.NotebookNode:
    return nbformat.read(release_folder(edition) / name, as_version=4)


def filled(name: str, *, edition: str = "zh", **replace: str) -> nbformat.NotebookNode:
    """The release of `name` (in `edition`) with every answer cell typed in: the reference, or replace[grade_id]."""
    reference = reference_answers(name)
    nb = release(name, edition)
    for cell in nb.cells:
        gid = grade_id(cell)
        if gid in reference:
            cell.source = replace.get(gid, reference[gid])
    return nb


def predicted(nb: nbformat.NotebookNode, sources: dict[str, str]) -> nbformat.NotebookNode:
    """`nb` with prediction cells filled in: prediction key -> the cell's new source."""
    for cell in nb.cells:
        key = cell.get("metadata", {}).get("lecture2", {}).get("prediction", "")
        if key in sources:
            cell.source = sources[key]
    return nb


def grade_id(cell) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def write(nb: nbformat.NotebookNode | bytes | str | None, path: Path) -> None:
    """Save a submission: a notebook, raw bytes or text as a student's editor would leave it, or nothing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if nb is None:
        return
    if isinstance(nb, bytes):
        path.write_bytes(nb)
    elif isinstance(nb, str):
        path.write_text(nb, encoding="utf-8")
    else:
        nbformat.write(nb, path)


def as_text(nb: nbformat.NotebookNode) -> str:
    return nbformat.writes(nb)


def with_bom(nb) -> bytes:
    return codecs.BOM_UTF8 + as_text(nb).encode("utf-8")


def with_crlf(nb) -> bytes:
    """Windows line endings in the file and inside every cell's source."""
    data = json.loads(as_text(nb))
    for cell in data["cells"]:
        src = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        cell["source"] = src.replace("\n", "\r\n")
    return json.dumps(data, indent=1, ensure_ascii=False).replace("\n", "\r\n").encode("utf-8")


def utf16(nb) -> bytes:
    return as_text(nb).encode("utf-16")


def nbformat3(nb) -> str:
    return nbformat.writes(nbformat.convert(nb, 3), version=3)


def stripped(nb) -> nbformat.NotebookNode:
    """Every cell's nbgrader metadata removed (the notebook copied into a new one)."""
    for cell in nb.cells:
        cell.metadata.pop("nbgrader", None)
    return nb
