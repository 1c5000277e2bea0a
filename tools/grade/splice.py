"""Stage 1b: the notebook that runs, made from the instructor's notebook and the student's answer cells.

The instructor's notebook (solutions/, hidden tests included; the student's `make validate` uses the
release) is the program; a student contributes only the sources of its answer cells, by grade_id. Their
other cells, their test cells, their outputs and their metadata never run and never count. An answer that
is missing or withheld by the scan runs as the release's stub (NotImplementedError), so the notebook's
demo cells behave as for an unfilled exercise.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from .scan import Context

HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"


@dataclass
class Cell:
    """One cell of the instructor's notebook. kind: "answer", "test", "code" or "markdown"."""

    index: int
    kind: str
    source: str
    grade_id: str | None = None
    points: float = 0.0
    visible: str = ""  # what a student may see: the release's source (hidden tests removed)
    hidden: tuple[int, int] | None = None  # 1-based lines of the hidden region in `source`


@dataclass
class Notebook:
    """The instructor's version of one notebook of the assignment."""

    name: str  # file name, e.g. "01_tensors_dtypes.ipynb"
    cells: list[Cell]
    exercises: dict[str, list[str]] = field(default_factory=dict)  # test grade_id -> the answer ids it checks

    @property
    def stem(self) -> str:
        return self.name.removesuffix(".ipynb")

    @property
    def answer_ids(self) -> list[str]:
        return [c.grade_id for c in self.cells if c.kind == "answer"]

    @property
    def tests(self) -> list[Cell]:
        return [c for c in self.cells if c.kind == "test"]

    @property
    def max_score(self) -> float:
        return sum(c.points for c in self.tests)

    def cell(self, grade_id: str) -> Cell:
        return next(c for c in self.cells if c.grade_id == grade_id)

    def stubs(self) -> dict[str, str]:
        return {c.grade_id: c.visible for c in self.cells if c.kind == "answer"}

    def context(self) -> Context:
        """What the scan needs: the names this notebook's own cells and its test cells define."""
        return Context.from_sources([c.source for c in self.cells if c.kind == "code"],
                                    [c.source for c in self.cells if c.kind == "test"])


def _hidden_range(source: str) -> tuple[int, int] | None:
    lines = source.splitlines()
    begin = next((i for i, line in enumerate(lines, 1) if line.strip() == HIDDEN_BEGIN), None)
    end = next((i for i, line in enumerate(lines, 1) if line.strip() == HIDDEN_END), None)
    return (begin, end) if begin and end and begin < end else None


def load(source_path: Path, release_path: Path) -> Notebook:
    """The instructor's notebook: cells from `source_path` (hidden tests and all), what students see from
    `release_path` (the stubs, the visible tests). Both are the course's own files."""
    source = nbformat.read(source_path, as_version=4)
    release = nbformat.read(release_path, as_version=4)
    visible = {c.metadata.get("nbgrader", {}).get("grade_id"): c.source for c in release.cells}
    cells, exercises, pending = [], {}, []
    for index, cell in enumerate(source.cells):
        meta = cell.metadata.get("nbgrader", {})
        gid = meta.get("grade_id")
        if cell.cell_type != "code":
            kind = "markdown"
        elif meta.get("solution"):
            kind = "answer"
        elif meta.get("grade"):
            kind = "test"
        else:
            kind = "code"
        text = cell.source.replace("\r\n", "\n")
        shown = visible.get(gid, text) if gid else text
        if kind == "answer" and gid not in visible:
            raise ValueError(f"{release_path.name}: no release cell for answer {gid}: run `make release`")
        cells.append(Cell(index, kind, text, gid, float(meta.get("points", 0) or 0) if kind == "test" else 0.0,
                          shown, _hidden_range(text) if kind == "test" else None))
        if kind == "answer":
            pending.append(gid)
        elif kind == "test":
            exercises[gid] = pending
            pending = []
    return Notebook(source_path.name, cells, exercises)


def plan(notebook: Notebook, answers: dict[str, str], withheld: set[str]) -> dict:
    """The runner's plan: every code cell in order, answer cells from `answers` (grade_id -> source) unless
    withheld or missing, where the release's stub runs instead."""
    cells = []
    for cell in notebook.cells:
        if cell.kind == "markdown":
            continue
        source = cell.source
        if cell.kind == "answer":
            source = answers[cell.grade_id] if cell.grade_id in answers and cell.grade_id not in withheld else cell.visible
        cells.append({"index": cell.index, "kind": cell.kind, "grade_id": cell.grade_id, "source": source})
    return {"notebook": notebook.name, "cells": cells}


def executed_notebook(source_path: Path, notebook: Notebook, plan_: dict, outputs: list[dict]) -> nbformat.NotebookNode:
    """The instructor's notebook as it ran for this student (for the gradebook and the formgrader): the
    answer cells' sources replaced, and what each cell printed as text and PNG figures only (no HTML or
    JavaScript a student's code could have produced)."""
    nb = nbformat.read(source_path, as_version=4)
    ran = {c["index"]: c["source"] for c in plan_["cells"]}
    printed = {o.get("cell"): o for o in outputs if isinstance(o, dict)}
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        cell.source = ran.get(index, cell.source)
        cell.outputs = []
        cell.execution_count = None
        out = printed.get(index)
        if not out:
            continue
        for name in ("stdout", "stderr"):
            text = out.get(name)
            if isinstance(text, str) and text:
                cell.outputs.append(nbformat.v4.new_output("stream", name=name, text=_printable(text)))
        for image in (out.get("images") or [])[:4]:
            if isinstance(image, str) and re.fullmatch(r"[A-Za-z0-9+/=\s]{1,4000000}", image):
                cell.outputs.append(nbformat.v4.new_output("display_data", data={"image/png": image}))
    return nb


def _printable(text: str) -> str:
    return re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", "", text)[:100_000]
