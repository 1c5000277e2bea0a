"""`make grade`: grade every submission under submitted/, several notebooks at once, nothing lost.

    .venv/bin/python -m tools.grade                  # what `make grade` runs
    .venv/bin/python -m tools.grade --jobs 4 --cell-timeout 120 --notebook-timeout 600 --memory-limit 6GiB
    .venv/bin/python -m tools.grade --student alice  # grade one student again; grades.csv still lists all
    .venv/bin/python -m tools.grade --allow bob/ex05_matmul_flops   # run an answer the scan withheld

For each student and notebook: read the file and pick out the answer cells (submission.py), scan them
(scan.py), splice them into the instructor's notebook (splice.py), run it in its own bubblewrap sandbox
(sandbox.py, runner.py), score it from the signed events (score.py), write feedback (feedback.py); then,
one student at a time, the gradebook and grades.csv (gradebook.py) and one report line (report.py).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from . import ASSIGNMENT, classreport, feedback, gradebook, sandbox, scan, score, splice, submission
from .report import Student, report_line

RUNNER = Path(__file__).resolve().parent / "runner.py"


def package_dir() -> Path:
    """The lecture2 package the grader's environment imports (bound read-only into every sandbox)."""
    spec = importlib.util.find_spec("lecture2")
    if spec is None or not spec.origin:
        raise SystemExit("error: the lecture2 package is not installed in this environment (run `make setup`)")
    return Path(spec.origin).resolve().parent


def parse_bytes(text: str) -> int:
    """'6GiB', '3000MB', '512MiB' or a number of bytes."""
    match = re.fullmatch(r"\s*([\d.]+)\s*(GiB|MiB|GB|MB)?\s*", text)
    if not match:
        raise argparse.ArgumentTypeError(f"not a memory size: {text!r} (e.g. 4GiB, 3000MB)")
    scale = {"GiB": 2**30, "MiB": 2**20, "GB": 10**9, "MB": 10**6, None: 1}[match.group(2)]
    return int(float(match.group(1)) * scale)


@dataclass
class Settings:
    jobs: int = 1
    cell_timeout: float = 120.0
    notebook_timeout: float = 600.0
    memory_limit: int | None = 6 * 2**30
    sandboxed: bool = True
    allow: set[str] = field(default_factory=set)  # "student/grade_id" the instructor has reviewed


@dataclass
class Job:
    """One student's notebook, prepared (trusted work done) and waiting to run."""

    student: str
    notebook: splice.Notebook
    answers: dict[str, str]
    withheld: dict[str, list[str]]  # test grade_id -> findings
    problems: list[str]
    result: score.NotebookResult | None = None
    seconds: float = 0.0


def _mpl_cache(root: Path) -> Path:
    """Matplotlib's font cache, built once outside the sandboxes and copied into each scratch folder."""
    cache = root / "matplotlib-cache"
    cache.mkdir()
    subprocess.run([sys.executable, "-c", "import matplotlib.font_manager"], env=dict(os.environ, MPLCONFIGDIR=str(cache)),
                   capture_output=True, timeout=300)
    return cache


def prepare(student: str, folder: Path, notebooks: dict[str, splice.Notebook], settings: Settings,
            record: Student) -> list[Job]:
    """Read and scan one student's submission (no student code runs); one Job per notebook present."""
    jobs = []
    if not folder.is_dir():
        record.problems.append(f"no {ASSIGNMENT}/ folder: every notebook missing")
        return jobs
    unexpected = sorted(p.name for p in folder.iterdir()
                        if p.name not in notebooks and not p.name.startswith(".") and p.name != "timestamp.txt")
    if unexpected:
        record.problems.append(f"unexpected files ignored: {', '.join(unexpected)}")
    for name, nb in notebooks.items():
        path = folder / name
        if not path.is_file() or path.is_symlink():
            record.problems.append(f"{nb.stem}: notebook missing (0 points)")
            continue
        try:
            answers = submission.read_answers(path, nb.answer_ids, nb.stubs(),
                                              {c.grade_id for c in nb.cells if c.grade_id})
        except submission.Unreadable as err:
            record.problems.append(f"{nb.stem}: {err} (0 points)")
            continue
        except OSError as err:
            record.problems.append(f"{nb.stem}: cannot be read ({err.strerror}) (0 points)")
            continue
        problems = [f"{nb.stem}: {p}" for p in answers.problems]
        findings = scan.scan(answers.sources, nb.context())
        withheld: dict[str, list[str]] = {}
        shown: list[str] = []
        for test_id, answer_ids in nb.exercises.items():
            found = sorted((f for f in findings if f.grade_id in answer_ids and f"{student}/{f.grade_id}" not in settings.allow),
                           key=lambda f: (answer_ids.index(f.grade_id), f.line, f.construct))
            if found:
                withheld[test_id] = [str(f) for f in found]
                shown += [str(f) for f in found if str(f) not in shown]
        if withheld:
            problems.append(f"{nb.stem}: withheld for review: " + "; ".join(shown[:3])
                            + (f" and {len(shown) - 3} more" if len(shown) > 3 else ""))
        jobs.append(Job(student, nb, answers.sources, withheld, problems))
    return jobs


def run_job(job: Job, scratch_root: Path, mpl_cache: Path, course: Path, settings: Settings, threads: int) -> Job:
    """Run one prepared notebook in its sandbox, score it and write its feedback and executed notebook."""
    start = time.perf_counter()
    nb = job.notebook
    withheld_answers = {a for t in job.withheld for a in nb.exercises[t]}
    plan = splice.plan(nb, job.answers, withheld_answers)
    scratch = Path(tempfile.mkdtemp(prefix=f"{job.student[:40]}-{nb.stem}-", dir=scratch_root))
    try:
        (scratch / "plan.json").write_text(json.dumps(plan), encoding="utf-8")
        shutil.copytree(mpl_cache, scratch / ".matplotlib")
        key = os.urandom(32)
        events_path = scratch_root / f"{scratch.name}.events"  # outside the sandbox: only a descriptor goes in
        outcome = sandbox.run(scratch, RUNNER, ["plan.json", "--cell-timeout", f"{settings.cell_timeout:g}"],
                              key, events_path, package=package_dir(), timeout=settings.notebook_timeout,
                              memory=settings.memory_limit, threads=threads, sandboxed=settings.sandboxed,
                              nproc=4096, log=scratch_root / f"{scratch.name}.log")
        # every process of the run is dead: what it left can be read (as untrusted bytes)
        raw = score.read_untrusted(events_path, 64 * 2**20) or b""
        events_path.unlink(missing_ok=True)
        events, altered = score.verify(raw, key)
        result = score.score(nb, events, job.withheld)
        result.problems = score.run_problems(nb, events, outcome.crashed, outcome.timed_out,
                                             settings.notebook_timeout, outcome.returncode)
        if altered:
            result.problems.append(altered)
        job.problems += [f"{nb.stem}: {p}" for p in result.problems]
        raw_outputs = score.read_untrusted(scratch / "outputs.json", 32 * 2**20)
        try:
            outputs = json.loads(raw_outputs) if raw_outputs else []
            outputs = outputs if isinstance(outputs, list) else []
        except (ValueError, RecursionError):
            outputs = []
        job.result = result
        _write_artifacts(job, course, plan, outputs, events)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    job.seconds = time.perf_counter() - start
    return job


def _write_artifacts(job: Job, course: Path, plan: dict, outputs: list, events: list[dict]) -> None:
    nb = job.notebook
    source_path = course / "solutions" / ASSIGNMENT / nb.name
    release_path = course / "notebooks" / ASSIGNMENT / nb.name
    executed = splice.executed_notebook(source_path, nb, plan, outputs)
    target = course / "autograded" / job.student / ASSIGNMENT
    target.mkdir(parents=True, exist_ok=True)
    nbformat.write(executed, target / nb.name)
    (target / f"{nb.stem}.grading.json").write_text(json.dumps(classreport.summary(job.result)), encoding="utf-8")
    ends = {e["cell"]: e for e in events if e.get("type") == "end"}
    answer_ends = {c.grade_id: ends.get(c.index) for c in nb.cells if c.kind == "answer" and c.grade_id in job.answers}
    page = feedback.notebook(nb, release_path, job.result, job.answers, answer_ends,
                             [p.split(": ", 1)[1] for p in job.problems if p.startswith(nb.stem + ":")])
    feedback.write_html(page, course / "feedback" / job.student / ASSIGNMENT / nb.name.replace(".ipynb", ".html"))


def load_notebooks(course: Path) -> dict[str, splice.Notebook]:
    sources = sorted((course / "solutions" / ASSIGNMENT).glob("*.ipynb"))
    if not sources:
        raise SystemExit(f"error: no notebooks in {course / 'solutions' / ASSIGNMENT}")
    notebooks = {}
    for path in sources:
        release = course / "notebooks" / ASSIGNMENT / path.name
        if not release.is_file():
            raise SystemExit(f"error: {release} is missing: run `make release`")
        notebooks[path.name] = splice.load(path, release)
    return notebooks


def _progress(done: int, total: int, name: str, width: int = 30) -> None:
    filled = width * done // max(total, 1)
    print(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {name:<40}", end="", file=sys.stderr, flush=True)


def grade_class(course: Path, settings: Settings, students: list[str] | None = None) -> list[Student]:
    """Grade every student under course/submitted (or only `students`); returns them with scores and problems."""
    course = course.resolve()
    submitted = course / "submitted"
    if not (course / "nbgrader_config.py").is_file():
        raise SystemExit(f"error: {course} is not the course folder (no nbgrader_config.py)")
    if not submitted.is_dir():
        raise SystemExit(f"error: no submissions: {submitted} does not exist. Put each student's notebooks in "
                         f"submitted/<student>/{ASSIGNMENT}/")
    names = students or sorted(p.name for p in submitted.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not names:
        raise SystemExit(f"error: {submitted} holds no student folder")
    bad = [n for n in names if not re.fullmatch(r"[A-Za-z0-9_.@+-]{1,100}", n) or n.startswith(".")]
    if bad:
        raise SystemExit(f"error: student folder names must be letters, digits and _.@+- : {bad[:3]}")
    if settings.sandboxed:
        try:
            sandbox.check_available()
        except sandbox.SandboxUnavailable as err:
            raise SystemExit(f"error: {err}") from None
    notebooks = load_notebooks(course)
    gradebook.register(course, {nb.stem: {t.grade_id: t.points for t in nb.tests} for nb in notebooks.values()})
    records = {n: Student(n) for n in names}
    jobs_by_student: dict[str, list[Job]] = {}
    for n in names:
        jobs_by_student[n] = prepare(n, submitted / n / ASSIGNMENT, notebooks, settings, records[n])
    for kind in ("autograded", "feedback"):
        for n in names:
            shutil.rmtree(course / kind / n / ASSIGNMENT, ignore_errors=True)
    pending = {n: len(j) for n, j in jobs_by_student.items()}
    finished: dict[str, list[Job]] = {n: [] for n in names}
    threads = max(1, (os.cpu_count() or 1) // settings.jobs)
    scratch_root = Path(tempfile.mkdtemp(prefix="lecture2-grade-"))
    results: list[Student] = []
    total_jobs = sum(pending.values())
    done = 0

    def merge(name: str) -> None:
        record = records[name]
        for job in sorted(finished[name], key=lambda j: j.notebook.name):
            record.problems += job.problems
            record.seconds += job.seconds
        by_stem = {j.notebook.stem: j.result for j in finished[name] if j.result is not None}
        record.scores = gradebook.merge(course, name, by_stem)
        results.append(record)

    try:
        mpl = _mpl_cache(scratch_root)
        for n in names:
            if pending[n] == 0:
                merge(n)
        _progress(0, total_jobs, "")
        with ThreadPoolExecutor(max_workers=settings.jobs) as pool:
            futures = [pool.submit(run_job, job, scratch_root, mpl, course, settings, threads)
                       for n in names for job in jobs_by_student[n]]
            for future in as_completed(futures):
                job = future.result()
                finished[job.student].append(job)
                pending[job.student] -= 1
                done += 1
                _progress(done, total_jobs, f"{job.student}/{job.notebook.stem}")
                if pending[job.student] == 0:
                    merge(job.student)  # in this thread only: one writer for the gradebook
    finally:
        if not os.environ.get("LECTURE2_KEEP_SCRATCH"):  # the runners' logs, for debugging the grader
            shutil.rmtree(scratch_root, ignore_errors=True)
        print(file=sys.stderr)
    gradebook.write_csv(course)
    classreport.write(course, gradebook.students(course), gradebook.max_scores(course))
    return sorted(results, key=lambda s: s.name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.grade", description=__doc__.split("\n\n")[0])
    parser.add_argument("--course", type=Path, default=Path("."), help="the course folder (default: .)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="notebooks graded at once, each in its own sandbox (default: the number of cores)")
    parser.add_argument("--cell-timeout", type=float, default=120, help="seconds one cell may run (default: 120)")
    parser.add_argument("--notebook-timeout", type=float, default=600,
                        help="hard wall-clock seconds for one notebook, all its processes killed after (default: 600)")
    parser.add_argument("--memory-limit", type=parse_bytes, default=parse_bytes("6GiB"),
                        help="address space of one notebook's run, e.g. 6GiB (default)")
    parser.add_argument("--student", action="append", help="grade only this student (repeatable)")
    parser.add_argument("--allow", action="append", default=[], metavar="STUDENT/GRADE_ID",
                        help="run an answer cell the static scan withheld, after you have read it (repeatable)")
    parser.add_argument("--unsafe-no-sandbox", action="store_true",
                        help="run students' code without bubblewrap: only for submissions you trust")
    args = parser.parse_args(argv)
    if args.jobs < 1 or args.cell_timeout <= 0 or args.notebook_timeout <= 0:
        parser.error("--jobs, --cell-timeout and --notebook-timeout must be positive")
    if args.memory_limit < 2**30:
        parser.error("--memory-limit below 1GiB: PyTorch alone needs more")
    bad_allow = [a for a in args.allow if a.count("/") != 1]
    if bad_allow:
        parser.error(f"--allow takes STUDENT/GRADE_ID, got {bad_allow[0]!r}")
    settings = Settings(args.jobs, args.cell_timeout, args.notebook_timeout, args.memory_limit,
                        sandboxed=not args.unsafe_no_sandbox, allow=set(args.allow))
    if args.unsafe_no_sandbox:
        print("warning: --unsafe-no-sandbox: students' code runs with your permissions", file=sys.stderr)
    start = time.perf_counter()
    students = grade_class(args.course, settings, args.student)
    max_total = sum(gradebook.max_scores(args.course.resolve()).values())
    for s in students:
        print(report_line(s, max_total))
    print(f"graded {len(students)} students in {time.perf_counter() - start:.0f} s with {args.jobs} jobs; "
          f"grades.csv, feedback/ and autograded/ written", file=sys.stderr)
    return 0
