"""`make grade` for a class: every student's notebooks through the pipeline, on an executor, one file never stopping
the class.

    run = grade_class(course, runtime)          a records.ClassRun: each student's scores and problems, the notes

The loop, over typed records: each student's notebooks are prepared (pipeline.prepare: read, scan, plan) in reader
processes, each file within its own time and memory (readers.py), several at once; as each is read, a notebook whose
stored run has the same key (store.py) is not run again, and the rest go to the executor at once (this machine's
pool, or a Dask cluster: lecture2_grader.run) and come back as records.Judged, which are stored at once;
each is finished (points), written (the autograded notebook, the summary, the feedback page), and when a student's
last notebook is in, their scores go to the gradebook, in this thread only. At the end grades.csv and the class
report. Every stage of every notebook is guarded: a file or a run that breaks something costs that notebook only.
When `stop` is set (Ctrl-C), the notebooks not judged yet are left for the next run; everything received is written.
"""
from __future__ import annotations

import os
import re
import sys
import threading
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

from . import ASSIGNMENT, artifacts, classreport, draws, gradebook, pipeline, store
from lecture2 import editions

from .course import Notebook, load_editions
from .readers import Readers
from .records import ClassRun, Judged, StudentRun
from .run import Executor
from .run.local import LocalExecutor
from .run.preflight import package_dir
from .runtime import Runtime
from .score import NotebookResult
from .text import terminal

STUDENT_NAME = re.compile(r"[A-Za-z0-9_.@+-]{1,100}")


@dataclass
class Progress:
    """A student during the run: their record, the notebooks still out, the results in, the blank notebooks."""

    run: StudentRun
    pending: int = 0
    results: dict[str, NotebookResult] = field(default_factory=dict)
    blank: list[str] = field(default_factory=list)


@dataclass
class Task:
    """One student's notebook, to read: where it is and the secret its hidden cases are drawn from (draws.py)."""

    student: str
    nb: Notebook
    path: Path
    draw: str


@dataclass
class Work:
    """One student's notebook, prepared."""

    student: str
    nb: Notebook
    job: pipeline.Job

    @property
    def label(self) -> str:
        return f"{self.student}/{self.nb.stem}"


class Background:
    """fn(*args) in a thread of its own; `result()` waits for it and returns what it returned, or raises what it
    raised (SystemExit too)."""

    def __init__(self, fn, *args):
        self._value, self._error = None, None
        self._thread = threading.Thread(target=self._run, args=(fn, *args), daemon=True)
        self._thread.start()

    def _run(self, fn, *args) -> None:
        try:
            self._value = fn(*args)
        except BaseException as err:  # noqa: BLE001  raised again by result(), in the caller's thread
            self._error = err

    def done(self) -> bool:
        return not self._thread.is_alive()

    def result(self):
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value


def guarded(stage: str, nb: Notebook, run: StudentRun, fn, *args):
    """fn(*args); an exception becomes one problem line for this student's notebook (and None)."""
    try:
        return fn(*args)
    except Exception as err:  # noqa: BLE001  a grader bug must cost one notebook, not the class
        where = traceback.extract_tb(err.__traceback__)[-1:]
        at = f" at {os.path.basename(where[0].filename)}:{where[0].lineno}" if where else ""
        run.problems.append(f"{nb.stem}: the grader failed at {stage} ({type(err).__name__}{at}); "  # its words only
                            "this notebook scores 0 until it is graded again")
        if os.environ.get("LECTURE2_GRADER_DEBUG"):
            traceback.print_exc()
        return None


def students_of(submitted: Path, only: list[str] | None) -> tuple[list[str], list[str]]:
    """The student folders to grade, and a note for each folder whose name the grader does not accept."""
    names = only or sorted(p.name for p in submitted.iterdir() if p.is_dir() and not p.name.startswith("."))
    bad = [n for n in names if not STUDENT_NAME.fullmatch(n)]
    notes = [f"submitted/{terminal(b, 80)}/ not graded: a student folder's name must be letters, digits and _.@+- "
             "(rename it, then grade again)" for b in bad]
    return [n for n in names if n not in bad], notes


def select_notebooks(every: dict[str, Notebook], wanted: list[str] | None) -> dict[str, Notebook]:
    """The notebooks `wanted` names (file names, stems or their leading numbers: "05", "05_flops"), or all."""
    if not wanted:
        return every
    chosen = {}
    for want in wanted:
        stem = want.removesuffix(".ipynb")
        matches = [name for name in every if name.removesuffix(".ipynb") == stem or name.startswith(f"{stem}_")]
        if len(matches) != 1:
            raise SystemExit(f"error: --notebook {terminal(want, 60)} names {'no' if not matches else 'more than one'} "
                             f"notebook of {', '.join(n.removesuffix('.ipynb') for n in every)}")
        chosen[matches[0]] = every[matches[0]]
    return chosen


class ClassGrading:
    """One grading run of a class: what is prepared, what comes back, and the student records it fills."""

    def __init__(self, course: Path, runtime: Runtime, every: dict[str, Notebook], notebooks: dict[str, Notebook],
                 by_edition: dict[str, dict[str, Notebook]] | None = None):
        self.course, self.runtime, self.every, self.notebooks = course, runtime, every, notebooks
        self.by_edition = by_edition or {editions.SOURCE: every}  # a student's notebook is read in its edition
        self.students: dict[str, Progress] = {}
        self.done: list[StudentRun] = []
        self.store = store.Store(course)
        self.registered: Background | None = None  # nbgrader registering the assignment (gradebook.register)
        self.notes: list[str] = []  # the preflight's
        # the run's loop (run): notebooks being read, being judged, judged before the preflight passed
        self.reads: dict[Future, Task] = {}
        self.judges: dict[Future, tuple[Work, float]] = {}
        self.held: list[tuple[Future, Work, float]] = []
        self.checking: Background | None = None  # the executor's preflight, started with the first judge
        self.total, self.counted, self.reused = 0, 0, 0  # notebooks to grade, finished, taken from the store

    def tasks(self, names: list[str], secret: bytes) -> list[Task]:
        """Every chosen notebook of every student, to read (a student without a folder: one problem); each drawing
        its hidden cases from the student's own secret, made from the course's `secret` (draws.py)."""
        tasks = []
        for name in names:
            progress = self.students[name] = Progress(StudentRun(name))
            folder = self.course / "submitted" / name / ASSIGNMENT
            if not folder.is_dir():
                progress.run.problems.append(f"no {ASSIGNMENT}/ folder: every notebook missing")
                continue
            unexpected = sorted(p.name for p in folder.iterdir() if p.name not in self.every
                                and not p.name.startswith(".") and p.name != "timestamp.txt")
            if unexpected:
                progress.run.problems.append(f"unexpected files ignored: {', '.join(terminal(u, 80) for u in unexpected[:5])}")
            for file_name, nb in self.notebooks.items():
                nb = self.in_its_edition(folder / file_name, nb)
                tasks.append(Task(name, nb, folder / file_name, draws.student_draw(secret, name, file_name)))
                progress.pending += 1
        return tasks

    def in_its_edition(self, path: Path, nb: Notebook) -> Notebook:
        """`nb` in the edition the student's file names (read as data: one of the editions the course released,
        else the source's): the same checks and grade_ids, the feedback in the student's language."""
        edition = editions.of_file(path) if path.is_file() and not path.is_symlink() else None
        return self.by_edition.get(edition or editions.SOURCE, {}).get(nb.name, nb)

    def read(self, readers: Readers, task: Task, code: str) -> pipeline.Job | None:
        """One notebook read and planned in a reader (within its time and memory); None when the grader failed."""
        return guarded("reading", task.nb, self.students[task.student].run, readers.prepare, task.student, task.path,
                       task.nb, code, task.draw)

    def unread(self, student: str) -> None:
        """A notebook the grader failed to read (its problem is noted): one less to wait for."""
        progress = self.students[student]
        progress.pending -= 1
        if progress.pending == 0:
            self.merge(progress)

    def received(self, item: Work, judged: Judged, seconds: float) -> None:
        """A new run: stored (unless the executor lost it), then finished."""
        if judged.cause != "lost":
            guarded("storing the result", item.nb, self.students[item.student].run, self.store.put, item.student,
                    item.nb.stem, item.job.digest, judged, seconds)
        self.complete(item, judged, seconds)

    def complete(self, item: Work, judged: Judged | None, seconds: float) -> None:
        """Points, the notebook's files; the student's gradebook entry when it was their last notebook."""
        progress = self.students[item.student]
        result = guarded("scoring", item.nb, progress.run, pipeline.finish, item.job, judged, item.nb)
        if result is not None:
            guarded("writing feedback", item.nb, progress.run, artifacts.write, self.course, item.nb, item.job, judged,
                    result)
            progress.results[item.nb.stem] = result
            if guarded("reading", item.nb, progress.run, artifacts.state, self.course, item.nb, item.job) == "blank":
                progress.blank.append(item.nb.stem)
        progress.run.seconds += seconds
        progress.pending -= 1
        if progress.pending == 0:
            self.merge(progress)

    def merge(self, progress: Progress) -> None:
        """A student's notebooks into their record and the gradebook (one writer: this thread)."""
        if self.registered is not None:
            self.registered.result()  # the assignment is in the gradebook before a student is
        run = progress.run
        for stem, result in sorted(progress.results.items()):
            run.problems += [f"{stem}: {p}" for p in result.problems]
        if progress.blank:  # not a fault, but not "ok" either: the instructor sees it in the line
            run.problems.append("blank (nothing attempted): " + ", ".join(sorted(progress.blank)))
        try:
            run.scores = gradebook.merge(self.course, run.name, progress.results)
        except Exception as err:  # noqa: BLE001
            run.problems.append(f"the gradebook could not be written for this student ({type(err).__name__}: {err})")
        self.done.append(run)

    def grade(self, names: list[str], secret: bytes, executor: Executor, jobs: int, regrade: bool,
              stop: threading.Event | None) -> bool:
        """Grade `names`: the run's fixed costs side by side (nbgrader registering the assignment, a subprocess; the
        executor getting ready: this machine's fork server importing torch) while the notebooks are read and the
        sandbox proves itself, then every notebook read and judged (`run`). Returns whether it was stopped."""
        self.registered = Background(gradebook.register, self.course,
                                     {nb.stem: {t.grade_id: t.points for t in nb.tests} for nb in self.every.values()})
        executor.warm(list(self.notebooks))
        tasks = self.tasks(names, secret)
        for progress in list(self.students.values()):
            if progress.pending == 0:
                self.merge(progress)
        readers = Readers(jobs + 1, self.runtime)  # one more than the judges: a slow file never idles them
        try:
            stopped = stop is not None and stop.is_set() or \
                self.run(tasks, pipeline.code_digest(package_dir()), readers, executor, stop, regrade)
        finally:
            readers.close()
        if stopped:
            left = sum(p.pending for p in self.students.values())
            self.notes.append(f"stopped: {left} notebook{'s' if left != 1 else ''} not graded this time (the "
                              "gradebook keeps their earlier scores); the next run grades them")
        if self.reused:
            self.notes.append(f"{self.reused} of {len(tasks)} notebooks unchanged since they were last graded: their "
                              "stored results were used (--regrade runs them again)")
        self.registered.result()
        return stopped

    def run(self, tasks: list[Task], code: str, readers: Readers, executor: Executor, stop: threading.Event | None,
            regrade: bool) -> bool:
        """Read every task (readers, several at once) and, as each is read, reuse its stored run or send it to
        `executor`; complete each notebook as it comes back, once the executor's preflight (started with the first
        judge, running meanwhile) has passed: nothing a broken sandbox judged is kept. One file's reading never
        holds back another's judging. Returns whether it was stopped (`stop` set)."""
        reading = ThreadPoolExecutor(max_workers=readers.slots, thread_name_prefix="read")
        self.reads = {reading.submit(self.read, readers, task, code): task for task in tasks}
        self.total = len(tasks)
        _progress(0, self.total, "")
        try:
            while self.reads or self.judges or self.held:
                finished, _ = wait([*self.reads, *self.judges], timeout=0.5, return_when=FIRST_COMPLETED) \
                    if self.reads or self.judges else (set(), set())
                for future in finished:
                    if future in self.reads:
                        self.judge_or_reuse(self.reads.pop(future), future.result(), executor, regrade)
                    else:
                        self.held.append((future, *self.judges.pop(future)))
                if self.held and self.checking is not None and self.checking.done():
                    self.receive_held(executor)
                if (self.reads or self.judges) and stop is not None and stop.is_set():
                    self.stop(executor, reading)
                    return True
        finally:
            reading.shutdown(wait=False, cancel_futures=True)
        if self.checking is not None:
            self.notes += self.checking.result() or []
        if sys.stderr.isatty():
            print(file=sys.stderr)
        return False

    def judge_or_reuse(self, task: Task, job: pipeline.Job | None, executor: Executor, regrade: bool) -> None:
        """A notebook read: its stored run when its key has one (unless `regrade`), else sent to `executor` (the
        first one sent starts the executor's preflight beside it)."""
        if job is None:
            self.unread(task.student)
            self.counted += 1
            return
        item = Work(task.student, task.nb, job)
        stored = None if regrade or job.judge is None else self.store.get(item.student, item.nb.stem, job.digest)
        if job.judge is None or stored is not None:
            self.reused += stored is not None
            self.complete(item, stored, 0.0)
            self.count(item.label)
            return
        if self.checking is None:
            self.checking = Background(executor.preflight)  # its sandbox starts beside the first judges
        self.judges[executor.submit(job.judge, label=item.label)] = (item, time.perf_counter())

    def receive_held(self, executor: Executor) -> None:
        """The executor's preflight passed (else its error is raised, the executor stopped): every notebook judged
        so far is received."""
        try:
            self.checking.result()
        except BaseException:
            executor.stop()
            raise
        for future, item, started in self.held:
            timing = executor.timing(future)
            seconds = timing["seconds"] if timing else time.perf_counter() - started
            try:
                judged = Judged.from_json(future.result())
            except Exception as err:  # noqa: BLE001  the executor lost it: this notebook only, not stored
                judged = Judged.failure(f"the grader could not run this notebook ({type(err).__name__})", "lost")
            self.received(item, judged, seconds)
            self.count(item.label)
        self.held = []

    def stop(self, executor: Executor, reading: ThreadPoolExecutor) -> None:
        """Ctrl-C: nothing more is read or judged; what each student has is merged into the gradebook."""
        executor.stop()
        reading.shutdown(wait=False, cancel_futures=True)
        for progress in self.students.values():
            if progress.pending > 0 and progress.results:
                self.merge(progress)

    def count(self, label: str) -> None:
        self.counted += 1
        _progress(self.counted, self.total, label)


def _progress(done: int, total: int, name: str, width: int = 30) -> None:
    if not sys.stderr.isatty():
        return
    filled = width * done // max(total, 1)
    print(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {name:<40}", end="", file=sys.stderr, flush=True)


def grade_class(course: Path, runtime: Runtime, students: list[str] | None = None, jobs: int = 1,
                notebooks: list[str] | None = None, regrade: bool = False, executor: Executor | None = None,
                stop: threading.Event | None = None) -> ClassRun:
    """Grade every student under course/submitted (or only `students`, only the notebooks `notebooks`). A notebook
    whose stored run has the same key (store.py) is not run again unless `regrade`. `executor` runs the judges
    (default: a LocalExecutor of `jobs`). When `stop` is set (Ctrl-C), the notebooks not judged yet are left for
    the next run: every result received is stored and written, every file whole."""
    course = course.resolve()
    names, notes = _students_to_grade(course, students)
    by_edition = load_editions(course)
    every = by_edition[editions.SOURCE]
    try:
        secret = draws.course_secret(course)
    except draws.SecretUnusable as err:
        raise SystemExit(f"error: {err}") from None
    grading = ClassGrading(course, runtime, every, select_notebooks(every, notebooks), by_edition)
    own_executor = executor is None
    executor = executor or LocalExecutor(runtime, jobs)
    try:
        stopped = grading.grade(names, secret, executor, jobs, regrade, stop)
    finally:
        if own_executor:
            executor.close()
    gradebook.write_csv(course)
    classreport.write(course, gradebook.students(course))
    return ClassRun(sorted(grading.done, key=lambda s: s.name), notes + grading.notes, stopped)


def _students_to_grade(course: Path, only: list[str] | None) -> tuple[list[str], list[str]]:
    """The student folders of course/submitted to grade (students_of), or SystemExit saying what is missing."""
    submitted = course / "submitted"
    if not (course / "nbgrader_config.py").is_file():
        raise SystemExit(f"error: {course} is not the course folder (no nbgrader_config.py)")
    if not submitted.is_dir():
        raise SystemExit(f"error: no submissions: {submitted} does not exist. Put each student's notebooks in "
                         f"submitted/<student>/{ASSIGNMENT}/")
    names, notes = students_of(submitted, only)
    if not names and not notes:
        raise SystemExit(f"error: {submitted} holds no student folder")
    return names, notes
