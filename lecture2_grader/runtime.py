"""What every notebook of a grading run shares (`Runtime`), and every time limit of grading, in one place.

    Runtime          a run's settings: its time limits, the student's process's walls, threads, GPU, the packages
    KernelSpec       what a judge is told of the student's process: its walls and every limit of their conversation,
                     made by Runtime.kernel_spec and carried in the judge's job as JSON (to_json, from_json)

The limits of the student's process itself (memory, its memory filesystems, processes, file size) are
sandbox.Limits; of what crosses the wire, lecture2.wire.LIMITS; of a notebook file, submission.py's MAX_ names.
"""
from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

from . import sandbox

GRADER = Path(__file__).resolve().parent  # this package, where judges and the student's process start from
KERNEL = GRADER / "judging" / "kernel.py"  # the student's process's script: the one file of the grader it sees

CELL_SECONDS = 120.0  # one cell, or the calls of one test cell (--cell-timeout)
NOTEBOOK_SECONDS = 600.0  # one notebook, every process of it, before they are killed (--notebook-timeout)
STUDENT_NOTEBOOK_SECONDS = 900.0  # the same, on a student's own machine (make validate, make handin: a laptop)
START_SECONDS = 120.0  # a process of grading to start: the student's (a cold disk importing IPython), a reader
REPLAY_SECONDS = 600.0  # a new student's process running the cells that ran before it again, all of them together
LATE_REPLY_SECONDS = 2.0  # a reply past its call's time: the process's own alarm fires first; this is for one that
#                           ignores it
PREFLIGHT_SECONDS = 300.0  # the first sandbox of a run, which proves the walls (a cold disk importing torch)
FONT_CACHE_SECONDS = 300.0  # matplotlib to build its font cache, once a run, outside the sandboxes
PROBE_SECONDS = 120.0  # this environment's Python to say, in isolated mode, where it finds lecture2
STOP_SECONDS = 25.0  # a judge asked to stop (SIGTERM) to write what it has, before it is killed
STARTS_PER_TEST_CELL = 3  # starts of the student's process that one test cell's checks may cause
STARTS_PER_NOTEBOOK = 12  # and one notebook's
FIRST_WORKER_SECONDS = 600.0  # a Dask worker to pass its check (a Slurm job may queue)
SCHEDULER_SECONDS = 60.0  # a Dask scheduler to answer the instructor's process
STRANDED_SECONDS = 60.0  # the notebooks left to wait for a worker when every worker connected has refused them
MEMORY_BYTES = sandbox.Limits.memory  # one notebook's student process (--memory-limit), as the sandbox has it
READ_SECONDS = 20.0  # reading one file: outputs skipped, sources parsed, scanned, planned (readers.py). Linear: a
#                      notebook saved from Jupyter takes under a second, 4 GiB of saved plots a few seconds
READ_MEMORY = 2 * 2**30  # and the memory its reader may take (32 MiB of sources parsed as JSON: a few hundred MiB)
JUDGE_MEMORY = 8 * 2**30  # the data a judge may hold beyond what it has at its start (its checks' models and
#                           references; what crosses from the student's process is at most 256 MiB a message)


@dataclass(frozen=True)
class KernelSpec:
    """How a judge starts the student's process for one notebook, and how long it waits for it: the walls and every
    limit of their conversation (seconds, counts). Made by `Runtime.kernel_spec`; it crosses to the judge in the job
    as JSON (`to_json`) and is read there by `from_json` only, which refuses a spec without one of its limits."""

    binds: tuple[str, ...]  # read-only paths it may see (the lecture2 package, KERNEL, the font cache)
    limits: sandbox.Limits  # its memory, memory filesystems, processes, file size and threads
    sandboxed: bool
    mpl_cache: str | None  # matplotlib's font cache, copied where matplotlib may write
    cell_timeout: float  # seconds: one cell, or the calls of one test cell (the run's --cell-timeout)
    start_timeout: float  # seconds: the process to start and say hello
    replay_timeout: float  # seconds: a new process running the cells again, all together
    max_starts: int  # starts of the process one test cell may cause (KernelLink.new_budget)
    max_total_starts: int  # and the whole notebook
    import_torch: bool = True  # imported before the hello, while the judge waits (the preflight's process needs none)

    def to_json(self) -> dict:
        return {**{f.name: getattr(self, f.name) for f in fields(self)}, "binds": list(self.binds),
                "limits": asdict(self.limits)}

    @classmethod
    def from_json(cls, data: object) -> KernelSpec:
        """The spec a job carries; ValueError when a field is missing or not of its kind (a job made by another
        grader's code: every limit is said, none is assumed)."""
        if not isinstance(data, dict) or set(data) != {f.name for f in fields(cls)}:
            raise ValueError("the judge's job does not say how to start the student's process (a KernelSpec)")
        limits = data["limits"]
        if not isinstance(limits, dict) or set(limits) != {f.name for f in fields(sandbox.Limits)}:
            raise ValueError("the judge's job does not give every limit of the student's process")
        seconds = [data[k] for k in ("cell_timeout", "start_timeout", "replay_timeout")]
        counts = [data[k] for k in ("max_starts", "max_total_starts")]
        if not all(type(s) in (int, float) and s > 0 and math.isfinite(s) for s in seconds) \
                or not all(type(c) is int and c >= 0 for c in counts):
            raise ValueError("the judge's job gives a time limit or a count of starts that is not one")
        return cls(tuple(str(b) for b in data["binds"]), sandbox.Limits(**limits), bool(data["sandboxed"]),
                   data["mpl_cache"] if isinstance(data["mpl_cache"], str) else None, *map(float, seconds), *counts,
                   bool(data["import_torch"]))


@dataclass
class Runtime:
    """What every notebook of a grading run shares: limits, the packages the sandbox sees, the font cache."""

    cell_timeout: float = CELL_SECONDS
    notebook_timeout: float = NOTEBOOK_SECONDS
    limits: sandbox.Limits = field(default_factory=sandbox.Limits)
    sandboxed: bool = True
    cuda: bool = False  # the student's process can use the machine's GPU
    package: Path | None = None  # the lecture2 package the sandboxed interpreter imports
    mpl_cache: Path | None = None
    threads: int = 1
    forkserver: bool = True  # judges forked from one process that imported torch once (else a fresh process each)
    read_timeout: float = READ_SECONDS  # one file's reading, in a reader process (readers.py)
    judge_memory: int | None = JUDGE_MEMORY  # each judge's own data (None: no limit; not with a GPU, see launch.run)

    @classmethod
    def for_class(cls, jobs: int = 1, cell_timeout: float = CELL_SECONDS, notebook_timeout: float = NOTEBOOK_SECONDS,
                  memory: int | None = MEMORY_BYTES, sandboxed: bool = True) -> Runtime:
        """The settings of `make grade` with `jobs` notebooks at once: each gets cores / jobs threads."""
        return cls(cell_timeout=cell_timeout, notebook_timeout=notebook_timeout, limits=sandbox.Limits(memory=memory),
                   sandboxed=sandboxed, threads=max(1, (os.cpu_count() or 1) // jobs))

    @classmethod
    def for_student(cls, cell_timeout: float = CELL_SECONDS, package: Path | None = None,
                    mpl_cache: Path | None = None) -> Runtime:
        """The settings of `make validate` and `make handin` on a student's own machine: no sandbox (it is their own
        code), every core, no memory limit."""
        return cls(cell_timeout=cell_timeout, notebook_timeout=STUDENT_NOTEBOOK_SECONDS, sandboxed=False,
                   limits=sandbox.Limits(memory=None), threads=os.cpu_count() or 1, judge_memory=None,
                   package=package, mpl_cache=mpl_cache)

    def judging_key(self) -> str:
        """The settings a judge's results depend on, as text for the results store's key (store.py): the time limits,
        the student's process's limits, threads, GPU, sandbox, the judge's memory. A "time limit" failure under
        short limits is not reused under longer ones."""
        return repr((self.cell_timeout, self.notebook_timeout, sorted(self.limits.__dict__.items()), self.threads,
                     self.cuda, self.sandboxed, self.judge_memory))

    def kernel_spec(self) -> KernelSpec:
        """What a judge is told of the student's process: this run's walls and limits (its threads are the run's)."""
        return KernelSpec(binds=tuple(str(p) for p in (self.package, KERNEL, self.mpl_cache) if p),
                          limits=replace(self.limits, threads=self.threads), sandboxed=self.sandboxed,
                          mpl_cache=str(self.mpl_cache) if self.mpl_cache else None, cell_timeout=self.cell_timeout,
                          start_timeout=START_SECONDS, replay_timeout=REPLAY_SECONDS, max_starts=STARTS_PER_TEST_CELL,
                          max_total_starts=STARTS_PER_NOTEBOOK)

    def preflight_spec(self) -> KernelSpec:
        """The preflight's student process (run/preflight.py): the run's first sandbox, on a cold disk, tried once,
        importing no torch."""
        return replace(self.kernel_spec(), cell_timeout=PREFLIGHT_SECONDS, start_timeout=PREFLIGHT_SECONDS,
                       max_starts=1, import_torch=False)

    def judge_settings(self) -> dict:
        """What a judge's job carries of this run besides the notebook (launch.run adds it): the student's process
        (KernelSpec, as JSON), the judge's threads, GPU and memory."""
        return {"kernel": self.kernel_spec().to_json(), "threads": self.threads, "cuda": self.cuda,
                "judge_memory": None if self.cuda else self.judge_memory}  # a GPU's driver maps its own
