"""The one pipeline: a student's notebook, from its file to its points, in the stages of lecture2_grader.

    job = prepare(student, path, notebook, runtime)   read the file, pick out the answers, scan, plan  [no student code]
    judged = launch.run(job.judge, runtime)           the judge and the student's process (judging/)  [the boundary]
    result = finish(job, judged, notebook)            points, problems for the report                  [no student code]

`make validate` (the student's machine, no sandbox) and `make grade` (this machine's processes, or a Dask cluster:
lecture2_grader.run) take every notebook through these three, so a score is the same wherever it is computed. The
middle one is where judges run (lecture2_grader.run's executors call judging.launch.run there): it takes and returns
plain data (JSON-able dicts), what crosses to another machine; records.Judged reads it.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from . import advice, plan, scan, score, store, submission
from .course import Notebook, tree_digest
from .records import Judged
from .runtime import GRADER, Runtime

# The grader's modules whose code decides what a judge returns for a submission (what is read, planned, run and
# how): a change to one of them makes every stored result stale. Scoring, feedback, reports and the gradebook are
# made again from the stored results at every run, so their changes cost no notebook a run.
JUDGING = ("course.py", "submission.py", "source.py", "plan.py", "owncells.py", "pipeline.py", "sandbox.py", "score.py",
           "records.py", "runtime.py", "judging/judge.py", "judging/link.py", "judging/kernel.py", "judging/launch.py")


def code_digest(package: Path) -> str:
    """Content hash of the code a judge's results depend on: the course's package (every file: its profiles' JSON
    too) and the JUDGING modules."""
    h = hashlib.sha256(tree_digest(package).encode())
    for name in JUDGING:
        h.update(name.encode() + b"\0" + (GRADER / name).read_bytes() + b"\0")
    return h.hexdigest()


@dataclass
class Job:
    """One student's notebook, read and planned (plain data: it may cross to another machine)."""

    student: str
    notebook: str  # file name
    answers: dict[str, str]
    problems: list[str]
    findings: list[str]
    judge: dict | None  # the judge's job (test cells, cells, answer names); None when the file could not be read
    digest: str = ""  # store.key of the submission, the instructor's notebook, the code (every file of lecture2 and the
    #                   JUDGING modules), the run's limits and the draw: the regrade cache key
    notices: list[str] = field(default_factory=list)  # advice for the student (advice.py): validate and feedback
    predictions: dict[str, dict] = field(default_factory=dict)  # what the student predicted (predictions.py): data


def prepare(student: str, path: Path, nb: Notebook, runtime: Runtime, package_digest: str = "",
            draw: str | None = None) -> Job:
    """Read `path` and plan its run; a file that cannot be read is a Job with judge None and a problem. `draw`: the
    secret (hex) its hidden cases are drawn from (draws.py; None: the judge makes one at random)."""
    try:
        file_hash = store.file_hash(path) if path.is_file() and not path.is_symlink() else None
    except OSError as err:
        return Job(student, nb.name, {}, [f"cannot be read ({err.strerror}) (0 points)"], [], None)
    if file_hash is None:
        return Job(student, nb.name, {}, ["notebook missing (0 points)"], [], None)
    digest = store.key(file_hash, nb.digest, package_digest + "\0" + runtime.judging_key(), draw or "")
    index_of = {c.grade_id: c.index for c in nb.cells if c.grade_id}
    course_sources = {c.visible: c.index for c in nb.cells if c.kind != "markdown"}
    visible = {c.grade_id: c.visible for c in nb.cells if c.grade_id and c.kind in ("code", "test")}
    try:
        answers = submission.read_answers(path, nb.answer_ids, nb.stubs(), nb.grade_ids, course_sources, index_of,
                                          visible)
    except submission.Unreadable as err:
        return Job(student, nb.name, {}, [f"{err} (0 points)"], [], None, digest)
    kernel = plan.kernel_plan(nb, answers)
    own = {f"own cell {k + 1} 「{advice.first_line(c['source'])[:40]}」": c["source"]
           for k, c in enumerate(c for c in kernel.cells if c["kind"] == "own")}  # scanned like answers: they run
    findings = [str(f) for f in scan.scan({**answers.sources, **own})]
    notices = advice.skipped_own_cells(answers, kernel, nb.edition) + advice.edited_course_cells(nb, answers)
    return Job(student, nb.name, answers.sources, list(answers.problems), findings, judge_job(nb, kernel, draw), digest,
               notices, answers.predictions)


def judge_job(nb: Notebook, kernel: plan.KernelPlan, draw: str | None = None) -> dict:
    """What the judge is given of one notebook (launch.run adds the run's settings, Runtime.judge_settings): its test
    cells, the cells the student's process runs, the names the answers define, the secret of its hidden cases."""
    return {"notebook": nb.stem, "tests": plan.judge_tests(nb), "cells": kernel.cells, "answer_names": nb.answer_names(),
            "draw": draw}


def finish(job: Job, judged: Judged | None, nb: Notebook) -> score.NotebookResult:
    """Points and the problems of one notebook, from the judge's results (trusted) and the instructor's notebook."""
    result = score.score(nb, judged)
    problems = list(job.problems)
    if judged is not None:
        problems += run_problems(nb, judged)
    for test in result.tests:
        if any(g["status"] == "timeout" for g in test.groups):
            problems.append(f"{test.grade_id}: an answer ran past the time limit (the checks left in the cell score 0)")
    if job.findings:
        shown = "; ".join(job.findings[:3]) + (f" and {len(job.findings) - 3} more" if len(job.findings) > 3 else "")
        problems.append(f"flagged for review (scored as usual): {shown}")
    result.problems = problems
    result.notices = list(job.notices)
    return result


def run_problems(nb: Notebook, judged: Judged) -> list[str]:
    """What went wrong while the notebook ran, for the report: time, memory, a process that died."""
    if not judged.ran:
        log = judged.log.strip().splitlines()[-3:]
        return [judged.error + (f" ({' | '.join(log)})" if log else "")]
    problems = []
    kernel = judged.kernel
    if judged.stopped:
        problems.append(f"{judged.stopped} (later checks score 0)")
    if kernel.oom:
        problems.append("out of memory: a process reached the notebook's memory limit")
    if kernel.deaths:
        tail = kernel.output_tail.strip().splitlines()[-2:]
        problems.append(f"your notebook's process was restarted {len(kernel.deaths)} time(s): {kernel.deaths[0]}"
                        + (f" (last output: {' | '.join(tail)})" if tail else ""))
    by_index = {c.index: c for c in nb.cells}
    for status in judged.cells:
        if status.status == "ok":
            continue
        cell = by_index.get(status.index)
        where = (cell.grade_id or f"cell {cell.index + 1}") if cell else "one of your own cells"
        if status.status == "timeout":
            problems.append(f"{where} ran past the cell time limit")
        elif status.status == "not run":
            problems.append(f"{where}: {status.message or 'not run'}")
        elif cell is None or cell.kind == "answer":
            line = f" (line {status.line})" if isinstance(status.line, int) else ""
            oom = " (out of memory)" if status.ename == "MemoryError" else ""
            problems.append(f"{where} raised {status.ename or 'an error'}{line}{oom}")
    return problems
