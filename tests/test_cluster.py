"""The class grader on a Dask cluster (lecture2_grader.run.dask and .dask_worker): the same scores as this machine, byte for byte
in grades.csv; a worker killed in the middle of a notebook costs nothing; a worker with other code, or one whose
sandbox would import another checkout's lecture2, refuses its tasks with a line that says why; the instructor's
process killed mid-class resumes from the results store; --watch grades what arrives and stops cleanly.

The class is notebook 01 (5 points), a few students, so that every run stays short. The cluster is a Dask
scheduler and workers started here as processes (no nanny: each worker is one process, killed by its PID).
"""
from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest

import submissions as sub
from conftest import ASSIGNMENT, ROOT
from lecture2_grader import classrun, pipeline
from lecture2_grader.judging import launch
from lecture2_grader.run import clusters, dask as cluster, dask_worker
from lecture2_grader.records import Judged
from lecture2_grader.course import load as load_notebook
from test_grade_class import BITS, NB1, TB, grading_runtime, make_course, one

if shutil.which("bwrap") is None and not os.environ.get("LECTURE2_SANDBOX_REQUIRED"):
    pytest.skip("bubblewrap is not installed (the workers grade in its sandbox)", allow_module_level=True)

PY = sys.executable
SLOW = "import time\ntime.sleep(8)  # long enough to be stopped in the middle\n"


def cases() -> dict[str, dict]:
    return {"correct": one(sub.filled(NB1), 5), "planted-mistake": one(sub.filled(NB1, **{TB: BITS}), 3),
            "slow": one(sub.filled(NB1, **{TB: SLOW + sub.reference_answers(NB1)[TB]}), 5)}


def new_course(root: Path, students: dict[str, dict]) -> Path:
    root.mkdir(parents=True)
    return make_course(root, [NB1], students)


def rows(course: Path) -> dict[str, str]:
    return {r["student"]: r["total"] for r in csv.DictReader((course / "grades.csv").open(encoding="utf-8"))}


def wait_until(condition, timeout: float, what: str, poll: float = 0.25):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(poll)
    raise AssertionError(f"timed out waiting for {what}")


def stop(proc: subprocess.Popen) -> None:
    """End a process this test started, by its PID."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# ---- a Dask cluster on this machine: a scheduler and workers, each a process of its own


class LocalDask:
    def __init__(self, folder: Path):
        self.folder = folder
        self.procs: dict[str, subprocess.Popen] = {}
        file = folder / "scheduler.json"
        self.procs["scheduler"] = subprocess.Popen(
            [PY, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
             "--scheduler-file", str(file)], stdout=(folder / "scheduler.log").open("wb"), stderr=subprocess.STDOUT)
        wait_until(lambda: file.is_file() and file.read_text().strip(), 60, "the Dask scheduler")
        self.address = json.loads(file.read_text())["address"]

    def worker(self, name: str, python: str = PY, cwd: Path = ROOT, env: dict | None = None) -> subprocess.Popen:
        local = self.folder / name
        local.mkdir()
        proc = subprocess.Popen([python, "-m", "distributed.cli.dask_worker", self.address, "--name", name,
                                 "--nthreads", "1", "--no-nanny", "--no-dashboard", "--local-directory", str(local)],
                                cwd=cwd, env=env or dict(os.environ), stdout=(local / "worker.log").open("wb"),
                                stderr=subprocess.STDOUT)
        self.procs[name] = proc
        return proc

    def close(self) -> None:
        for name in [n for n in self.procs if n != "scheduler"] + ["scheduler"]:
            stop(self.procs[name])


@pytest.fixture(scope="module")
def elsewhere(tmp_path_factory) -> Path:
    """A Python environment whose editable install of lecture2 points at another checkout (a folder with a
    lecture2 of its own), as after `make setup` in one clone and `make grade` run from another."""
    root = tmp_path_factory.mktemp("elsewhere")
    venv = root / "venv"
    subprocess.run([getattr(sys, "_base_executable", PY), "-m", "venv", "--without-pip", str(venv)], check=True)
    other = root / "other-checkout"
    (other / "lecture2").mkdir(parents=True)
    (other / "lecture2" / "__init__.py").write_text('"""another checkout\'s lecture2"""\n')
    packages = next((venv / "lib").glob("python3*/site-packages"))
    ours = next(p for p in map(Path, sys.path) if p.name == "site-packages" and (p / "distributed").is_dir())
    (packages / "course-environment.pth").write_text(f"{ours}\n")  # torch, dask, ... of this environment
    (packages / "__editable__.lecture2-0.1.0.pth").write_text(f"{other}\n")
    return venv / "bin" / "python"


def test_an_editable_install_of_another_checkout_is_explained_before_any_notebook(elsewhere):
    """Does the preflight say that the sandbox would import another checkout's lecture2, where, and how to fix
    it (instead of every notebook ending early with exit status 1)?"""
    probe = ("from lecture2_grader.run import preflight\n"
             "from lecture2_grader.runtime import Runtime\n"
             "rt = Runtime(package=preflight.package_dir())\n"
             "preflight.preflight(rt)\n")
    proc = subprocess.run([str(elsewhere), "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    said = proc.stderr
    assert proc.returncode == 1, said
    other = elsewhere.parent.parent.parent / "other-checkout"
    assert f"binds lecture2 from {ROOT / 'lecture2'}" in said and f"imports lecture2 from {other / 'lecture2'}" in said
    assert "__editable__.lecture2-0.1.0.pth" in said and "pip install -e" in said and f"run the grader from {other}" in said


def test_a_run_that_ends_early_shows_the_last_lines_of_its_stderr(tmp_path):
    """When the student's process cannot start (here: the lecture2 bound into its sandbox is an empty folder),
    does the report say why, with the last lines the process wrote?"""
    notebook = load_notebook(ROOT / "solutions" / ASSIGNMENT / NB1, ROOT / "notebooks" / ASSIGNMENT / NB1)
    path = tmp_path / NB1
    sub.write(sub.filled(NB1), path)
    rt = grading_runtime()
    empty = tmp_path / "lecture2"
    empty.mkdir()
    rt.package = empty
    job = pipeline.prepare("alice", path, notebook, rt)
    judged = Judged.from_json(launch.run(job.judge, rt))
    problems = " ".join(pipeline.finish(job, judged, notebook).problems)
    assert "your notebook's process was restarted" in problems, problems
    assert "last output:" in problems and "Error" in problems, problems


def test_identities_that_differ_are_said_in_words():
    here = dask_worker.identity()
    assert dask_worker.differences(here, dict(here)) == []
    other = {**here, "lecture2": "0" * 64, "torch": "2.12.0"}
    said = " ".join(dask_worker.differences(here, other))
    assert "its lecture2 package differs from the instructor's (content hash 000000000000" in said
    assert f"it has torch 2.12.0, the instructor {here['torch']}" in said


def test_a_cluster_is_named_in_the_course_configuration(tmp_path):
    """Is `--cluster NAME` read from nbgrader_config.py's c.Lecture2Grader.clusters, and is a wrong name, kind or
    a missing package refused with what to do?"""
    shutil.copy(ROOT / "nbgrader_config.py", tmp_path)
    assert clusters.course_clusters(tmp_path) == {}
    with (tmp_path / "nbgrader_config.py").open("a") as f:
        f.write("\nc.Lecture2Grader.clusters = {'lab': {'kind': 'scheduler', 'address': 'tcp://127.0.0.1:1'},\n"
                "                              'odd': {'kind': 'mainframe'}, 'k8s': {'kind': 'kubernetes'}}\n")
    assert clusters.course_clusters(tmp_path)["lab"]["address"] == "tcp://127.0.0.1:1"
    with pytest.raises(SystemExit, match="no cluster named 'hpc' .*names: k8s, lab, odd"):
        clusters.from_config(tmp_path, "hpc", grading_runtime())
    with pytest.raises(SystemExit, match="kind 'mainframe' is not known"):
        clusters.from_config(tmp_path, "odd", grading_runtime())
    try:
        import dask_kubernetes  # noqa: F401
    except ImportError:
        with pytest.raises(SystemExit, match="needs dask-kubernetes"):
            clusters.from_config(tmp_path, "k8s", grading_runtime())
    nbgrader = subprocess.run([str(Path(PY).parent / "nbgrader"), "--version"], cwd=tmp_path, capture_output=True,
                              text=True, timeout=120)
    assert nbgrader.returncode == 0 and "Lecture2Grader" not in nbgrader.stderr, nbgrader.stderr


def test_kubernetes_workers_get_the_security_context_the_recipe_asks_for():
    """Does `worker_security_context` reach every worker container of the DaskCluster resource (the shape
    dask-kubernetes' make_cluster_spec returns), and only them?"""
    resource = {"spec": {"worker": {"spec": {"containers": [{"name": "worker", "securityContext": {"runAsUser": 0}}]}},
                         "scheduler": {"spec": {"containers": [{"name": "scheduler"}]}}}}
    made = clusters.with_worker_security(resource, {"privileged": True})
    assert made["spec"]["worker"]["spec"]["containers"][0]["securityContext"] == {"runAsUser": 0, "privileged": True}
    assert "securityContext" not in made["spec"]["scheduler"]["spec"]["containers"][0]


# ---- grading on the cluster


@pytest.fixture(scope="module")
def dask(tmp_path_factory, elsewhere):
    """A scheduler, two workers of this checkout, one whose lecture2 was edited, one whose sandbox would import
    another checkout's lecture2."""
    root = tmp_path_factory.mktemp("dask")
    local = LocalDask(root)
    try:
        local.worker("good-1")
        local.worker("good-2")
        edited = root / "edited-checkout"
        for package in ("lecture2", "lecture2_grader"):
            shutil.copytree(ROOT / package, edited / package, ignore=shutil.ignore_patterns("__pycache__"))
        with (edited / "lecture2" / "checks" / "__init__.py").open("a") as f:
            f.write("\n# edited on this worker only\n")
        local.worker("edited", cwd=edited)
        local.worker("elsewhere", python=str(elsewhere))
        yield local
    finally:
        local.close()


@pytest.fixture(scope="module")
def on_dask(dask, tmp_path_factory):
    """The class graded on this machine and, at the same time, on the cluster, where the worker judging `slow` is
    killed (SIGKILL) in the middle of its notebook."""
    root = tmp_path_factory.mktemp("classes")
    here = new_course(root / "here", cases())
    there = new_course(root / "there", cases())
    here_pool = ThreadPoolExecutor(1)
    here_run = here_pool.submit(classrun.grade_class, here, grading_runtime(cell_timeout=30), jobs=2)
    rt = grading_runtime(cell_timeout=30)
    executor = cluster.DaskExecutor(rt, dask.address, first_worker_timeout=300)
    killed = {}

    def executing(dask_worker):  # run on each worker (a nested function travels by value)
        return [str(k) for k, ts in dask_worker.state.tasks.items() if ts.state == "executing"]

    def kill_the_slow_one():
        def running():
            names = {a: str(w["name"]) for a, w in executor.client.scheduler_info()["workers"].items()}
            return next((names.get(a) for a, keys in executor.client.run(executing).items()
                         if any("slow:" in k for k in keys)), None)

        name = wait_until(running, 300, "the slow notebook to start on a worker", poll=1)
        time.sleep(4)  # the judge is in the student's time.sleep(8)
        proc = dask.procs[name]
        killed["name"], killed["children"] = name, [p.pid for p in psutil.Process(proc.pid).children(recursive=True)]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()

    killer = threading.Thread(target=kill_the_slow_one, daemon=True)
    killer.start()
    try:
        graded = classrun.grade_class(there, rt, executor=executor)
        there_students, notes = graded.students, graded.notes
    finally:
        executor.close()
    killer.join(5)
    here_students = here_run.result().students
    here_pool.shutdown()
    dask.worker("good-3")  # the cluster as it was, for the tests after this one
    return {"here": here, "there": there, "here_students": here_students, "there_students": there_students,
            "notes": notes, "completed": executor.completed, "killed": killed}


@pytest.mark.slow
def test_the_cluster_gives_this_machines_scores_byte_for_byte(on_dask):
    """Is grades.csv from the cluster the same file as from this machine, and is each student's report line the
    same?"""
    assert (on_dask["here"] / "grades.csv").read_bytes() == (on_dask["there"] / "grades.csv").read_bytes()
    assert rows(on_dask["there"]) == {"correct": "5", "planted-mistake": "3", "slow": "5"}
    here = {s.name: (s.total, s.problems) for s in on_dask["here_students"]}
    there = {s.name: (s.total, s.problems) for s in on_dask["there_students"]}
    assert here == there


@pytest.mark.slow
def test_a_worker_killed_mid_notebook_costs_nothing_and_its_notebook_is_graded_once(on_dask):
    """Was the notebook of the killed worker judged again elsewhere, received once, and did the judge and
    student's process of the killed worker end with it?"""
    killed = on_dask["killed"]
    assert killed.get("name") in ("good-1", "good-2"), killed
    slow = [t for t in on_dask["completed"] if t["label"] == f"slow/{NB1.removesuffix('.ipynb')}"]
    assert len(slow) == 1 and slow[0]["worker"] != killed["name"], slow
    assert sorted(t["label"].split("/")[0] for t in on_dask["completed"]) == ["correct", "planted-mistake", "slow"]
    wait_until(lambda: not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
                               for p in killed["children"]), 60, "the killed worker's judges to end")


@pytest.mark.slow
def test_workers_with_other_code_or_a_broken_sandbox_refuse_with_a_line_that_says_why(on_dask):
    """Did the worker with an edited lecture2 and the one whose sandbox would import another checkout take no
    notebook, each named in a note that says what is wrong?"""
    workers = {t["worker"] for t in on_dask["completed"]}
    assert workers <= {"good-1", "good-2"}, workers
    notes = "\n".join(on_dask["notes"])
    assert "Dask worker edited at tcp://" in notes
    assert "takes no notebooks: its lecture2 package differs from the instructor's (content hash" in notes
    assert "Dask worker elsewhere at tcp://" in notes
    assert "imports lecture2 from" in notes and "other-checkout" in notes and "pip install -e" in notes


@pytest.mark.slow
def test_the_instructors_process_killed_mid_class_resumes_with_what_is_stored(dask, tmp_path):
    """`make grade --scheduler` killed after its first result: does the next run send only the notebooks with no
    stored result, and grade the class as if nothing happened?"""
    course = new_course(tmp_path / "course", {**cases(), "correct-2": one(sub.filled(NB1), 5)})
    argv = [PY, "-m", "lecture2_grader", "--course", str(course), "--scheduler", dask.address,
            "--cell-timeout", "30", "--memory-limit", "4GiB"]
    stored = lambda: sorted(course.glob(f"autograded/*/{ASSIGNMENT}/*.result.json"))  # noqa: E731
    first = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: stored() or first.poll() is not None, 300, "a first stored result")
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
    finally:
        stop(first)
    kept = stored()
    assert 1 <= len(kept) < 4, kept
    assert not list(course.rglob("*.tmp")), "a result was left half-written"
    again = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"{len(kept)} of 4 notebooks unchanged since they were last graded" in again.stderr, again.stderr[-3000:]
    assert rows(course) == {"correct": "5", "correct-2": "5", "planted-mistake": "3", "slow": "5"}


# ---- --watch


@pytest.mark.slow
def test_watch_grades_what_arrives_and_stops_cleanly_on_ctrl_c(tmp_path):
    """Does `--watch` grade a new student and a changed notebook as they arrive, and does Ctrl-C in the middle
    of a notebook stop it with every file whole (the interrupted notebook left for the next run)?"""
    course = new_course(tmp_path / "course", {"alice": one(sub.filled(NB1), 5)})
    proc = subprocess.Popen([PY, "-m", "lecture2_grader", "--course", str(course), "--watch", "--poll", "1",
                             "--jobs", "1", "--cell-timeout", "60", "--memory-limit", "4GiB"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        def total(student):
            return (course / "grades.csv").is_file() and rows(course).get(student)

        wait_until(lambda: total("alice") == "5", 300, "alice's first grade")
        bob = course / "submitted" / "bob" / ASSIGNMENT
        staging = tmp_path / "upload"
        staging.mkdir()
        sub.write(sub.filled(NB1, **{TB: BITS}), staging / NB1)
        bob.parent.mkdir()
        shutil.move(staging, bob)  # a whole folder arrives, as an LMS sync writes it
        wait_until(lambda: total("bob") == "3", 120, "bob's grade")
        sub.write(sub.filled(NB1, **{TB: BITS}), course / "submitted" / "alice" / ASSIGNMENT / NB1)
        wait_until(lambda: total("alice") == "3", 120, "alice's changed notebook graded")
        carol = course / "submitted" / "carol" / ASSIGNMENT
        carol.mkdir(parents=True)
        sub.write(sub.filled(NB1, **{TB: "import time\ntime.sleep(30)\n" + sub.reference_answers(NB1)[TB]}), carol / NB1)

        def sandboxed():
            return any(p.name() == "bwrap" for p in psutil.Process(proc.pid).children(recursive=True)
                       if p.is_running())

        wait_until(sandboxed, 120, "carol's notebook to be running")
        time.sleep(2)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=90)
    finally:
        stop(proc)
    assert proc.returncode == 0, err[-3000:]
    assert "stopped watching" in err and "stopped: 1 notebook not graded this time" in err, err[-3000:]
    assert not list(course.rglob("*.tmp")), "a file was left half-written"
    assert rows(course) == {"alice": "3", "bob": "3"}
    assert not (course / "autograded" / "carol" / ASSIGNMENT / f"{NB1.removesuffix('.ipynb')}.result.json").exists()
    assert "bob: 3/5" in out and "alice: 3/5" in out
