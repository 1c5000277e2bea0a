"""The grader's own judge, stepped by hand for tests: test cells run in this process by the judge that grades
(judging/judge.py's `Judge`), the answers in a student's process (judging/kernel.py, without a sandbox here),
reached only through lecture2.answers.

    with Judging("01_tensors_dtypes.ipynb") as j:
        j.run_until("ex01_tensor_bytes_check")                    # the cells the reference answers need
        result = j.test("ex01_tensor_bytes_check")                # a score.TestResult: points, groups, hints
        j.answer("ex01_tensor_bytes", "def tensor_bytes(...): ...")  # another answer, in the same process
        result = j.test("ex01_tensor_bytes_check", visible=True)  # the release's visible checks only

The job is made as pipeline.prepare and launch.run make it; the steps are the judge's own (`Judge.run_cells_before`,
`Judge.run_test`), taken in the order a test asks for. One student's process serves the whole notebook, so that
trying many answers costs one start.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

from conftest import RELEASE, SOLUTIONS
from lecture2_grader import course, pipeline, plan, sandbox, score
from lecture2_grader.judging import judge
from lecture2_grader.records import Judged
from lecture2_grader.run import preflight
from lecture2_grader.runtime import Runtime
from lecture2_grader.submission import Answers
from submissions import reference_answers  # noqa: F401  (the exercise tests read it here)

_MPL: Path | None = None


def runtime(sandboxed: bool = False, threads: int = 2) -> Runtime:
    """A grading runtime for tests: this environment's lecture2, a font cache made once per session."""
    global _MPL
    if _MPL is None:
        _MPL = preflight.font_cache(Path(tempfile.mkdtemp(prefix="lecture2-test-mpl-")))
    return Runtime(cell_timeout=300, notebook_timeout=900, sandboxed=sandboxed, threads=threads,
                   limits=sandbox.Limits(memory=None if not sandboxed else 6 * 2**30, threads=threads),
                   package=preflight.package_dir(), mpl_cache=_MPL)


class Judging:
    def __init__(self, name: str, answers: dict[str, str] | None = None, sandboxed: bool = False):
        self.nb = course.load(SOLUTIONS / name, RELEASE / name)
        self.visible = course.load(RELEASE / name, RELEASE / name)
        kernel = plan.kernel_plan(self.nb, Answers(sources=answers or reference_answers(name)))
        self.judge = judge.Judge({**pipeline.judge_job(self.nb, kernel), **runtime(sandboxed).judge_settings()})
        self.link = self.judge.link

    def run_until(self, grade_id: str | None = None) -> list[dict]:
        """Run the planned cells before test cell `grade_id` (all of them for None); their statuses."""
        return self.judge.run_cells_before(self.nb.cell(grade_id).index if grade_id else float("inf"))

    def answer(self, grade_id: str, source: str) -> dict:
        """Run `source` as answer cell `grade_id` in the student's process; its status."""
        cell = self.nb.cell(grade_id)
        return self.judge.run_cells([{"index": cell.index, "at": float(cell.index), "kind": "answer",
                                      "grade_id": grade_id, "source": source}])[0]

    def fresh(self) -> None:
        """A new student's process for the next check (the cells run so far run again in it): one that has received
        no hidden case, as in `make validate` and for a notebook's first test cell, whose failed groups keep their
        messages (after a hidden case the judge keeps a group's verdict and hint only)."""
        self.link.close()

    def test(self, grade_id: str, visible: bool = False) -> score.TestResult:
        """Run test cell `grade_id` (the release's visible checks if `visible`) as the judge does; its result."""
        nb = self.visible if visible else self.nb
        cell = nb.cell(grade_id)
        entry = self.judge.run_test({"index": cell.index, "grade_id": grade_id, "source": cell.source})
        result = next(t for t in score.score(nb, Judged(tests=[entry])).tests if t.grade_id == grade_id)
        result.error = entry.error
        return result

    def close(self) -> None:
        self.judge.close()

    def __enter__(self) -> Judging:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def failures_text(result: score.TestResult) -> str:
    """Every failed group's message and hint, for assertion messages."""
    return "\n".join(f"[{g['group']}: {g['status']}] {g.get('message') or ''} (hint_key={g.get('hint_key')})"
                     for g in result.groups if not g["passed"]) or f"(no failed group; error: {result.error})"
