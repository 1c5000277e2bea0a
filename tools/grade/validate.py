"""`make validate`: check a notebook as the grader will, before handing it in.

    .venv/bin/python -m tools.grade.validate notebooks/lec02/01_tensors_dtypes.ipynb [...]

It does what the grader does with a submission, with the release's visible checks: reads the file (BOM,
CRLF and old nbformat are fine), picks out the answer cells, runs the same static scan, splices the
answers into a clean copy of the release notebook and runs it top to bottom in a fresh process (no
sandbox: that is the grader's alone), then scores each check from the run's signed events. It prints one
line per exercise and, for a withheld answer, the construct and its line. Exit status 0 when every visible
check passes and nothing is withheld, 1 otherwise, 2 for a file that is not a notebook of the assignment.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from . import scan, score, splice, submission

ROOT = Path(__file__).resolve().parents[2]
RUNNER = Path(__file__).resolve().parent / "runner.py"


def release_copy(name: str) -> Path | None:
    """The untouched release notebook `name`: the bundle keeps one in .release/, the course in notebooks/."""
    for folder in (ROOT / ".release" / "lec02", ROOT / "notebooks" / "lec02"):
        if (folder / name).is_file():
            return folder / name
    return None


def validate(path: Path, cell_timeout: float = 120.0, notebook_timeout: float = 900.0) -> tuple[int, list[str]]:
    """(exit status, lines to print) for one student notebook."""
    release = release_copy(path.name)
    if release is None:
        return 2, [f"{path.name}: not a notebook of this assignment (no release notebook of that name)"]
    nb = splice.load(release, release)
    try:
        answers = submission.read_answers(path, nb.answer_ids, nb.stubs(), {c.grade_id for c in nb.cells if c.grade_id})
    except submission.Unreadable as err:
        return 2, [f"{path.name}: {err}"]
    lines = [f"⚠️ {p}" for p in answers.problems]
    findings = scan.scan(answers.sources, nb.context())
    withheld = {}
    for test_id, answer_ids in nb.exercises.items():
        found = [str(f) for f in findings if f.grade_id in answer_ids]
        if found:
            withheld[test_id] = found
    plan = splice.plan(nb, answers.sources, {a for t in withheld for a in nb.exercises[t]})
    from . import sandbox

    scratch = Path(tempfile.mkdtemp(prefix="lecture2-validate-"))
    try:
        (scratch / "plan.json").write_text(json.dumps(plan), encoding="utf-8")
        key = os.urandom(32)
        outcome = sandbox.run(scratch, RUNNER, ["plan.json", "--cell-timeout", f"{cell_timeout:g}"], key,
                              scratch / ".events", package=ROOT / "lecture2", timeout=notebook_timeout,
                              memory=None, threads=os.cpu_count() or 1, sandboxed=False, log=scratch / "run.log")
        events, altered = score.verify(score.read_untrusted(scratch / ".events", 64 * 2**20) or b"", key)
        result = score.score(nb, events, withheld)
        problems = score.run_problems(nb, events, outcome.crashed, outcome.timed_out, notebook_timeout,
                                      outcome.returncode)
        if outcome.crashed and not events:
            log = (scratch / "run.log").read_text(encoding="utf-8", errors="replace")[-1500:]
            problems.append(f"the run did not start:\n{log}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    from .feedback import result_line

    for test in result.tests:
        exercise = ", ".join(sorted(score.exercise_names(nb.cell(test.grade_id).source))) or test.grade_id
        if test.status not in ("passed", "withheld", "not run", "stopped", "timeout") and test.failure.get("message"):
            shown_max = test.visible_max if test.visible_max is not None else test.max_points
            text = (f"❌ {exercise}: {test.points:g}/{shown_max:g} 分 (points)\n   "
                    + test.failure["message"].replace("\n", "\n   "))
        else:
            text = result_line(test, exercise, []).replace("\n", "\n   ")
        lines.append(text)
    lines += [f"⚠️ {p}" for p in problems + ([altered] if altered else [])]
    visible = sum(t.visible_max if t.visible_max is not None else t.max_points for t in result.tests)
    lines.insert(0, f"{nb.stem}: {result.score:g}/{visible:g} 分 (points) in the visible checks, of {nb.max_score:g} in all "
                    f"(隐藏检查 hidden checks run when your instructor grades)")
    ok = all(t.status == "passed" for t in result.tests) and not problems
    return (0 if ok else 1), lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make validate NOTEBOOK=...", description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="+", type=Path, help="your notebook file(s)")
    parser.add_argument("--cell-timeout", type=float, default=120.0, help="seconds one cell may run (default 120)")
    args = parser.parse_args(argv)
    status = 0
    for path in args.notebooks:
        if not path.is_file():
            print(f"{path}: no such file")
            status = max(status, 2)
            continue
        code, lines = validate(path, args.cell_timeout)
        print("\n".join(lines))
        status = max(status, code)
    return status


if __name__ == "__main__":
    sys.exit(main())
