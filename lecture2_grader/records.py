"""The grader's records: what a judge found in one notebook, and what a student and a class got.

    Judged        one notebook's run: each test cell's reports, each cell's status, the student's process, or why
                  there is no run (its cause); crosses from the judge (and from a Dask worker) as JSON, is stored
                  as JSON (store.py), and is read back here, by `Judged.from_json`, only
    StudentRun    one student's grading: their problems (each named with its notebook), scores and time
    ClassRun      a class's grading: its students and the notes for the instructor

A record has one writer of its JSON form (`to_json`) and one reader (`from_json`). The reader is a boundary: what
it reads may come from a judge that was stopped halfway, a worker of another machine or a file on disk, and it
keeps only fields of the right type and size, so that nothing downstream (scores, feedback, the gradebook, the
reports) reads a key of a dict again.
"""
from __future__ import annotations

from dataclasses import dataclass, field

STATUSES = ("ok", "error", "timeout", "not run")  # of a cell the student's process ran
CAUSES = ("time limit", "crash", "lost")  # why a notebook has no run ("lost": the executor lost it; never stored)


def _text(value: object, limit: int) -> str:
    return value[:limit] if isinstance(value, str) else ""


def _number(value: object, default: float = 0.0) -> float:
    return float(value) if type(value) in (int, float) and 0 <= value < 1e9 else default


@dataclass
class CellStatus:
    """How one cell ran in the student's process: "ok", "error", "timeout" or "not run", what it printed (what
    link.py kept of it), and for a failure the exception's class, message and line in the cell."""

    index: int
    status: str
    seconds: float = 0.0
    stdout: str = ""
    ename: str = ""
    message: str = ""
    line: int | None = None

    @classmethod
    def from_json(cls, data: object) -> CellStatus | None:
        if not isinstance(data, dict) or type(data.get("index")) is not int:
            return None
        line = data.get("line")
        return cls(data["index"], data.get("status") if data.get("status") in STATUSES else "not run",
                   _number(data.get("seconds")), _text(data.get("stdout"), 20_000), _text(data.get("ename"), 100),
                   _text(data.get("message"), 2000), line if type(line) is int and 0 < line < 10**6 else None)

    def to_json(self) -> dict:
        out = {"index": self.index, "status": self.status, "seconds": self.seconds, "stdout": self.stdout}
        if self.status != "ok":
            out.update(ename=self.ename, message=self.message, line=self.line)
        return out


@dataclass
class TestRun:
    """One test cell as the judge ran it: "ok", "failed" (an exercise failed) or "error" (the check's own error),
    each exercise's groups as reported (judge.Sink: verdicts, hints, and for visible groups what was expected and
    what came back), and the check's own error for the instructor."""

    grade_id: str
    index: int
    status: str = "ok"
    seconds: float = 0.0
    reports: dict[str, dict[str, dict]] = field(default_factory=dict)
    error: dict | None = None

    @classmethod
    def from_json(cls, data: object) -> TestRun | None:
        if not isinstance(data, dict) or type(data.get("index")) is not int:
            return None
        reports = {}
        for name, groups in (data.get("reports") or {}).items() if isinstance(data.get("reports"), dict) else ():
            if isinstance(groups, dict):
                reports[str(name)] = {str(label): dict(outcome) for label, outcome in groups.items()
                                      if isinstance(outcome, dict)}
        error = data.get("error") if isinstance(data.get("error"), dict) else None
        return cls(_text(data.get("grade_id"), 200), data["index"],
                   data.get("status") if data.get("status") in ("ok", "failed", "error") else "error",
                   _number(data.get("seconds")), reports, error)

    def to_json(self) -> dict:
        return {"grade_id": self.grade_id, "index": self.index, "status": self.status, "error": self.error,
                "seconds": self.seconds, "reports": self.reports}


@dataclass
class KernelReport:
    """What happened to the student's process: how often it started, each time it had to be given up, whether it ran
    out of memory, and the last of what it wrote outside the protocol (link.WITHHELD once it had a hidden case)."""

    starts: int = 0
    deaths: list[str] = field(default_factory=list)
    oom: bool = False
    output_tail: str = ""

    @classmethod
    def from_json(cls, data: object) -> KernelReport:
        data = data if isinstance(data, dict) else {}
        deaths = [d[:1000] for d in data.get("deaths") or [] if isinstance(d, str)][:100]
        return cls(int(_number(data.get("starts"))), deaths, data.get("oom") is True, _text(data.get("output_tail"), 4000))

    def to_json(self) -> dict:
        return {"starts": self.starts, "deaths": self.deaths, "oom": self.oom, "output_tail": self.output_tail}


@dataclass
class Judged:
    """One notebook's run by its judge, or why there is none (`error`, with its `cause`)."""

    tests: list[TestRun] = field(default_factory=list)
    cells: list[CellStatus] = field(default_factory=list)
    kernel: KernelReport = field(default_factory=KernelReport)
    stopped: str = ""  # why the judge was stopped before its last test cell (the notebook's time limit)
    error: str = ""  # why there is no run at all
    cause: str = ""  # of the error: one of CAUSES
    log: str = ""  # the judge's own last words, for an error

    @property
    def ran(self) -> bool:
        """Did the judge run the notebook (whole, or until it was stopped)?"""
        return not self.error

    @classmethod
    def failure(cls, error: str, cause: str, log: str = "") -> Judged:
        return cls(error=error, cause=cause if cause in CAUSES else "crash", log=log[-4000:])

    @classmethod
    def from_json(cls, data: object) -> Judged:
        """The record of a judge's results, whatever JSON they are (from a judge, a worker or the store)."""
        if not isinstance(data, dict):
            return cls.failure("the grader's judge gave no results", "crash")
        if isinstance(data.get("error"), str):
            return cls.failure(data["error"][:2000], str(data.get("cause") or "crash"), _text(data.get("log"), 4000))
        tests = [t for t in (TestRun.from_json(e) for e in data.get("tests") or []) if t is not None]
        cells = [c for c in (CellStatus.from_json(e) for e in data.get("cells") or []) if c is not None]
        stopped = data.get("stopped")
        return cls(tests, cells, KernelReport.from_json(data.get("kernel")),
                   stopped[:500] if isinstance(stopped, str) else ("stopped" if stopped is True else ""))

    def to_json(self) -> dict:
        if self.error:
            return {"error": self.error, "cause": self.cause, "log": self.log}
        out = {"tests": [t.to_json() for t in self.tests], "stopped": self.stopped or False,
               "cells": [c.to_json() for c in self.cells], "kernel": self.kernel.to_json()}
        return out


@dataclass
class StudentRun:
    """One student's grading: problems found (each already prefixed with its notebook), points per notebook (from
    the gradebook) and the seconds their notebooks' judges ran."""

    name: str
    problems: list[str] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def total(self) -> float:
        return sum(self.scores.values())


@dataclass
class ClassRun:
    """A class's grading: every student graded this time, and the notes for the instructor."""

    students: list[StudentRun] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    stopped: bool = False  # Ctrl-C: the notebooks not judged yet are left for the next run
