"""Benchmark of the class grader's throughput: the figures of docs/cluster.md's sizing table (not a test).

    .venv/bin/python -m tools.bench_grade [--students 4] [--notebook 01 --notebook 02 ...] [--price 0.05]
                                          [--skip-plain] [--skip-dask-one] [--json figures.json]

On one class (N copies of the reference submission, the release notebooks with the reference answers typed in),
in one run:

1. plain: every code cell of those notebooks in one plain Python process per notebook (tools/run_cells.py);
2. grade one: `make grade`'s grader on one full submission (--jobs = the cores);
3. the class on this machine's pool, --jobs 1 and --jobs 2;
4. the class on a Dask cluster on this machine (distributed.LocalCluster: worker processes of one thread, each
   notebook one thread), with 2 workers and with 1;
5. the scheduler's own round trip: empty tasks sent one after the other.

Every class run regrades (the results store is not used) and is timed from the first notebook sent to the last
result received (the judging phase; the class's fixed costs, the gradebook registration and the workers'
preflight, are printed apart). Printed: core-seconds per full submission, p50/p95 of each notebook's judge time,
the speed-ups, Dask's own cost per task (round trip, the worker's code around the judge, bytes each way) against
a notebook's time, the goals (Dask overhead < 2% of a notebook; 2 workers >= 1.85x one; 5,000 students under 45
minutes on 128 cores) and a sizing table: students x notebooks against cores, predicted wall time and cost at
--price dollars per core-hour. Run it on a quiet machine; say which notebooks graded fully.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import Future
from pathlib import Path

import nbformat

from lecture2_grader import ASSIGNMENT, classrun, gradebook
from lecture2_grader.judging import launch
from lecture2_grader.run.local import LocalExecutor
from lecture2_grader.runtime import Runtime

ROOT = Path(__file__).resolve().parent.parent
STUDENTS_ROWS = (30, 200, 1000, 5000)
CORES_COLUMNS = (2, 16, 64, 128, 512)


def filled_release(folder: Path, wanted: list[str] | None = None) -> list[Path]:
    """The release notebooks (all, or those `wanted` names) with the reference answers typed in, in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for source in sorted((ROOT / "solutions" / ASSIGNMENT).glob("*.ipynb")):
        if wanted and not any(source.name == w or source.name.startswith(f"{w.removesuffix('.ipynb')}_")
                              or source.stem == w.removesuffix(".ipynb") for w in wanted):
            continue
        reference = {c.metadata["nbgrader"]["grade_id"]: c.source for c in nbformat.read(source, 4).cells
                     if c.metadata.get("nbgrader", {}).get("solution")}
        nb = nbformat.read(ROOT / "notebooks" / ASSIGNMENT / source.name, 4)
        for cell in nb.cells:
            gid = cell.metadata.get("nbgrader", {}).get("grade_id")
            if gid in reference:
                cell.source = reference[gid]
        nbformat.write(nb, folder / source.name)
        paths.append(folder / source.name)
    return paths


def course_with(students: int, root: Path, submission: Path) -> Path:
    course = root / "course"
    course.mkdir(parents=True)
    shutil.copy(ROOT / "nbgrader_config.py", course)
    shutil.copytree(ROOT / "solutions", course / "solutions")
    shutil.copytree(ROOT / "notebooks", course / "notebooks")
    for i in range(students):
        shutil.copytree(submission, course / "submitted" / f"student{i:02d}" / ASSIGNMENT)
    return course


class Recorder:
    """An executor's proxy that notes when each notebook was sent and when its result came back."""

    def __init__(self, inner):
        self.inner, self.sent, self.back, self.labels = inner, {}, {}, {}

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def submit(self, judge_job: dict, label: str | None = None) -> Future:
        future = self.inner.submit(judge_job, label=label)
        self.sent[future], self.labels[future] = time.perf_counter(), label or ""
        future.add_done_callback(lambda f: self.back.setdefault(f, time.perf_counter()))
        return future

    def span(self) -> float:
        """Seconds from the first notebook sent to the last result back."""
        return max(self.back.values()) - min(self.sent.values()) if self.back else 0.0

    def judged(self) -> dict[str, list[float]]:
        """Notebook stem -> the judge's seconds of each of its runs."""
        per: dict[str, list[float]] = {}
        for future, label in self.labels.items():
            timing = self.inner.timing(future)
            if timing:
                per.setdefault(label.split("/")[-1], []).append(timing["seconds"])
        return per


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def warm_forkserver() -> None:
    """Start this process's judge fork server (torch imported once) before anything is timed, as a Dask worker
    does in its preflight."""
    launch.warm(Runtime())


class MemorySampler:
    """The peak memory (proportional set size: shared pages counted once) of this process's descendants: the
    fork server, the judges, their sandboxes and the students' processes in them."""

    def __init__(self, interval: float = 1.0):
        import threading

        self.peak, self.interval = 0, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(10)

    def _run(self):
        import psutil

        me = psutil.Process()
        while not self._stop.wait(self.interval):
            total = 0
            for proc in me.children(recursive=True):
                try:
                    total += proc.memory_full_info().pss
                except (psutil.Error, OSError):
                    pass
            self.peak = max(self.peak, total)


def grade(course: Path, executor, runtime, label: str, figures: dict, memory: bool = False) -> Recorder:
    """One class run; with `memory`, the peak memory of the judging processes is sampled (which costs CPU)."""
    recorder = Recorder(executor)
    start = time.perf_counter()
    with MemorySampler(interval=1.0 if memory else 1e9) as memory:
        students = classrun.grade_class(course, runtime, executor=recorder, regrade=True).students
    total = time.perf_counter() - start
    span = recorder.span()
    figures["runs"][label] = {"wall": total, "span": span, "fixed": total - span, "judged": recorder.judged(),
                              "scores": {s.name: s.scores for s in students}, "peak_memory": memory.peak}
    print(f"{label:<46} {span:7.1f} s judging ({total:6.1f} s in all, {total - span:5.1f} s fixed: gradebook, "
          "preflight)", flush=True)
    return recorder


def machine() -> dict:
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor() or "unknown")
    return {"nproc": os.cpu_count(), "cpu": model, "python": platform.python_version(), "torch": _version("torch"),
            "distributed": _version("distributed")}


def _version(package: str) -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def fmt_time(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from distributed import LocalCluster

    from lecture2_grader.run import dask as cluster

    figures: dict = {"machine": machine(), "students": args.students, "runs": {}, "command": " ".join(sys.argv)}
    print(f"machine: {figures['machine']['nproc']} cores ({figures['machine']['cpu']}), Python "
          f"{figures['machine']['python']}, torch {figures['machine']['torch']}, distributed "
          f"{figures['machine']['distributed']}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        submission = tmp / "submission"
        paths = filled_release(submission, args.notebook)
        stems = [p.stem for p in paths]
        figures["notebooks"] = stems
        warm_forkserver()
        cores = os.cpu_count() or 1
        if not args.skip_plain:
            _plain_and_one(paths, tmp, submission, cores, figures)
        course = course_with(args.students, tmp / "class", submission)
        gradebook.register(course)  # the class's fixed cost, once
        _local_runs(course, args.students, figures)
        _dask_runs(course, args, figures, LocalCluster, cluster)
    report(figures, args)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1, default=str), encoding="utf-8")
    return 0


def _parser() -> argparse.ArgumentParser:
    """The command line: class size, notebooks, price (dollars per core-hour), runs to skip, the JSON file."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=4, help="students in the class runs (default: 4)")
    parser.add_argument("--notebook", action="append", metavar="NAME", help="only this notebook (repeatable)")
    parser.add_argument("--price", type=float, default=0.05, help="dollars per core-hour for the cost column")
    parser.add_argument("--skip-plain", action="store_true", help="leave out the plain run and grade one")
    parser.add_argument("--skip-dask-one", action="store_true", help="leave out the 1-worker Dask run")
    parser.add_argument("--json", type=Path, help="write every figure to this file")
    return parser


def _plain_and_one(paths: list[Path], tmp: Path, submission: Path, cores: int, figures: dict) -> None:
    """Runs 1 and 2: every code cell in one plain Python process per notebook (seconds), then the grader on one
    full submission with --jobs = the cores, and the ratio of the two."""
    env = dict(os.environ)
    env.pop("NBGRADER_EXECUTION", None)
    start = time.perf_counter()
    subprocess.run([sys.executable, str(ROOT / "tools" / "run_cells.py"), *map(str, paths)], check=False,
                   capture_output=True, env=env)
    plain = figures["plain"] = time.perf_counter() - start
    print(f"{'plain: run_cells.py on the ' + str(len(paths)) + ' notebooks':<46} {plain:7.1f} s", flush=True)
    one = course_with(1, tmp / "one", submission)
    rt = Runtime.for_class(cores)
    run = grade(one, LocalExecutor(rt, cores), rt, f"grade one full submission (--jobs {cores})",
                figures)
    print(f"ratio grade one (judging) / plain: {run.span() / plain:.2f} (goal <= 1.5)", flush=True)


def _local_runs(course: Path, students: int, figures: dict) -> None:
    """Run 3: the class on this machine's pool, --jobs 1 then --jobs 2 (the peak memory sampled with 2)."""
    for jobs in (1, 2):
        rt = Runtime.for_class(jobs)
        executor = LocalExecutor(rt, jobs)
        try:
            grade(course, executor, rt, f"{students} submissions, local pool --jobs {jobs}", figures,
                  memory=jobs == 2)
        finally:
            executor.close()


def _dask_runs(course: Path, args, figures: dict, LocalCluster, cluster) -> None:
    """Runs 4 and 5: the class on a local Dask cluster with 2 workers (then 1 unless skipped), each worker's ready
    time (seconds), and with 2 workers the scheduler's round trip and each task's own cost (seconds, bytes)."""
    dask_runs = [2] if args.skip_dask_one else [2, 1]
    for workers in dask_runs:
        rt = Runtime.for_class(workers)
        local = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                             silence_logs=40)
        executor = cluster.DaskExecutor(rt, cluster=local, name=f"LocalCluster({workers})")
        try:
            start = time.perf_counter()
            executor.preflight()
            ready = time.perf_counter() - start
            run = grade(course, executor, rt, f"{args.students} submissions, Dask {workers} worker"
                        f"{'s' if workers != 1 else ''}", figures)
            figures["runs"][run_label(args.students, workers)]["workers_ready"] = ready
            if workers == 2:
                figures["dask"] = _dask_costs(executor, ready)
        finally:
            executor.close()


def _dask_costs(executor, ready: float) -> dict:
    """Dask's own cost: 50 empty round trips (seconds, median and p95), the worker's code around each judge
    (seconds), the bytes each task sent and received (mean, max), and the workers' ready time (seconds)."""
    trips = executor.round_trip(50)
    tasks = list(executor.completed)
    return {
        "round_trip_median": statistics.median(trips), "round_trip_p95": percentile(trips, 0.95),
        "worker_code_median": statistics.median(t["task_seconds"] - t["seconds"] for t in tasks),
        "sent_bytes_mean": statistics.mean(t["sent_bytes"] for t in tasks),
        "received_bytes_mean": statistics.mean(t["received_bytes"] for t in tasks),
        "sent_bytes_max": max(t["sent_bytes"] for t in tasks),
        "received_bytes_max": max(t["received_bytes"] for t in tasks),
        "workers_ready": ready}


def run_label(students: int, workers: int) -> str:
    return f"{students} submissions, Dask {workers} worker{'s' if workers != 1 else ''}"


def report(figures: dict, args) -> None:
    runs, n, stems = figures["runs"], figures["students"], figures["notebooks"]
    local1, local2 = runs[f"{n} submissions, local pool --jobs 1"], runs[f"{n} submissions, local pool --jobs 2"]
    dask2 = runs[run_label(n, 2)]
    dask1 = runs.get(run_label(n, 1))
    full = _report_full(stems, local2)
    all_times = _report_judge_times(stems, local2)
    core_seconds, dask_core_seconds = _report_core_seconds(n, stems, all_times, local2, dask2)
    _report_speed_ups(local1, local2, dask1, dask2)
    d = figures["dask"]
    notebook, per_task = _report_dask_cost(d, all_times)
    students, cores = 5000, 128
    predicted = predict(students, cores, dask_core_seconds, all_times, d["workers_ready"])
    print(f"a {students:,}-student class on {cores} cores: {fmt_time(predicted)} predicted "
          f"({'under' if predicted < 45 * 60 else 'over'} 45 minutes; goal: under 45 minutes)")
    _report_sizing(stems, dask_core_seconds, all_times, d["workers_ready"], args.price)
    figures["derived"] = {"core_seconds": core_seconds, "dask_core_seconds": dask_core_seconds,
                          "per_task_overhead": per_task, "median_notebook": notebook,
                          "predicted_5000_on_128": predicted, "full": full}


def _report_full(stems: list[str], local2: dict) -> dict[str, bool]:
    """Which notebooks the reference submission scored fully on (the gradebook's maximum); printed, and returned."""
    full = {}
    maxima = gradebook_maxima(stems)
    for stem in stems:
        got = {scores.get(stem) for scores in local2["scores"].values()}
        full[stem] = got == {maxima.get(stem)}
    print("\nnotebooks graded fully by the reference submission: "
          + (", ".join(s[:2] for s in stems if full[s]) or "none")
          + ("; not: " + ", ".join(f"{s[:2]} ({sorted(str(g) for g in {sc.get(s) for sc in local2['scores'].values()})[0]}"
                                    f"/{maxima.get(s):g})" for s in stems if not full[s]) if not all(full.values()) else ""))
    return full


def _report_judge_times(stems: list[str], local2: dict) -> list[float]:
    """Each notebook's judge time, p50 and p95 (seconds, --jobs 2), printed; every judge time returned."""
    print("\njudge time per notebook (--jobs 2, each notebook one thread):")
    print(f"  {'notebook':<26} {'p50':>7} {'p95':>7}")
    for stem in stems:
        times = local2["judged"].get(stem, [])
        print(f"  {stem:<26} {percentile(times, 0.5):6.1f}s {percentile(times, 0.95):6.1f}s")
    return [t for times in local2["judged"].values() for t in times]


def _report_core_seconds(n: int, stems: list[str], all_times: list[float], local2: dict,
                         dask2: dict) -> tuple[float, float]:
    """Core-seconds per submission (local --jobs 2, the judges' sum, the 2-worker Dask cluster) and the judges' peak
    memory (GiB), printed; returns (local core-seconds, Dask core-seconds)."""
    core_seconds = 2 * local2["span"] / n  # both cores busy for the judging phase
    busy = sum(all_times) / n
    dask_core_seconds = 2 * dask2["span"] / n
    print(f"\ncore-seconds per submission ({len(stems)} notebooks): {core_seconds:.1f} (2 cores x judging time / "
          f"students, local --jobs 2); {busy:.1f} as the sum of the judges' times; {dask_core_seconds:.1f} on "
          "the 2-worker Dask cluster")
    print(f"peak memory of the judging processes, --jobs 2: {local2['peak_memory'] / 2**30:.2f} GiB "
          f"({local2['peak_memory'] / 2 / 2**30:.2f} GiB a notebook at once; PSS of the fork server, judges, "
          "sandboxes and students' processes)")
    return core_seconds, dask_core_seconds


def _report_speed_ups(local1: dict, local2: dict, dask1: dict | None, dask2: dict) -> None:
    """The speed-ups, ratios of judging times: local --jobs 1 to 2, Dask 1 to 2 workers, Dask 2 against local 2."""
    print(f"speed-up local --jobs 1 -> 2: {local1['span'] / local2['span']:.2f}x")
    if dask1:
        print(f"speed-up Dask 1 -> 2 workers: {dask1['span'] / dask2['span']:.2f}x (goal >= 1.85)")
    print(f"Dask 2 workers against local --jobs 2: {dask2['span'] / local2['span']:.3f} of the time")


def _report_dask_cost(d: dict, all_times: list[float]) -> tuple[float, float]:
    """Dask's own cost per task (ms, kB) against a median notebook, printed; returns (the median notebook's
    seconds, Dask's seconds per task)."""
    notebook = statistics.median(all_times)
    per_task = d["round_trip_median"] + d["worker_code_median"]
    print(f"Dask's own cost per task: scheduler round trip {d['round_trip_median'] * 1e3:.1f} ms (p95 "
          f"{d['round_trip_p95'] * 1e3:.1f} ms), the worker's code around the judge {d['worker_code_median'] * 1e3:.1f} ms, "
          f"data moved {d['sent_bytes_mean'] / 1e3:.1f} kB out (max {d['sent_bytes_max'] / 1e3:.1f}) and "
          f"{d['received_bytes_mean'] / 1e3:.1f} kB back (max {d['received_bytes_max'] / 1e3:.1f}); a worker is ready "
          f"{d['workers_ready']:.0f} s after it starts (preflight and torch imported once)")
    print(f"  = {per_task * 1e3:.1f} ms per task, {100 * per_task / notebook:.3f}% of a median notebook "
          f"({notebook:.1f} s) (goal < 2%)")
    return notebook, per_task


def _report_sizing(stems: list[str], dask_core_seconds: float, all_times: list[float], ready: float,
                   price: float) -> None:
    """The sizing table: students (notebooks) by cores, the predicted wall time and its cost at `price` dollars per
    core-hour, the cores held for the whole run."""
    print(f"\nsizing ({len(stems)} notebooks a student, {dask_core_seconds:.0f} core-seconds a submission as on the "
          f"2-worker Dask cluster here; ${price:g} per core-hour, cores held for the whole run):")
    print("| students (notebooks) | " + " | ".join(f"{c} cores" for c in CORES_COLUMNS) + " |")
    print("|---|" + "---|" * len(CORES_COLUMNS))
    for s in STUDENTS_ROWS:
        cells = []
        for c in CORES_COLUMNS:
            wall = predict(s, c, dask_core_seconds, all_times, ready)
            cost = c * wall / 3600 * price
            cells.append(f"{fmt_time(wall)}, ${cost:,.2f}" if cost >= 0.1 else f"{fmt_time(wall)}, ${cost:.3f}")
        print(f"| {s:,} ({s * len(stems):,}) | " + " | ".join(cells) + " |")


def predict(students: int, cores: int, core_seconds: float, notebook_times: list[float], ready: float) -> float:
    """Wall seconds for `students` full submissions on `cores` cores (one notebook per core at a time): the
    work spread over the cores, but never less than the slowest notebook; plus a worker's start."""
    return max(students * core_seconds / cores, percentile(notebook_times, 0.95)) + ready


def gradebook_maxima(stems: list[str]) -> dict[str, float]:
    from lecture2_grader.course import load_course

    return {nb.stem: nb.max_score for nb in load_course(ROOT).values() if nb.stem in stems}


if __name__ == "__main__":
    sys.exit(main())
