"""What every notebook of a grading run shares (`Runtime`), and every time limit of grading, in one place.

The limits of the student's process itself (memory, its memory filesystems, processes, file size) are
sandbox.Limits; of what crosses the wire, lecture2.wire.LIMITS; of a notebook file, submission.py's MAX_ names.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from . import sandbox

GRADER = Path(__file__).resolve().parent  # this package, where judges and the student's process start from

CELL_SECONDS = 120.0  # one cell, or the calls of one test cell (--cell-timeout)
NOTEBOOK_SECONDS = 600.0  # one notebook, every process of it, before they are killed (--notebook-timeout)
STUDENT_NOTEBOOK_SECONDS = 900.0  # the same, on a student's own machine (make validate, make handin: a laptop)
START_SECONDS = 120.0  # the student's process to start (a cold disk importing IPython)
PREFLIGHT_SECONDS = 300.0  # the first sandbox of a run, which proves the walls (a cold disk importing torch)
STOP_SECONDS = 25.0  # a judge asked to stop (SIGTERM) to write what it has, before it is killed
STARTS_PER_TEST_CELL = 3  # starts of the student's process that one test cell's checks may cause
STARTS_PER_NOTEBOOK = 12  # and one notebook's
FIRST_WORKER_SECONDS = 600.0  # a Dask worker to pass its check (a Slurm job may queue)
MEMORY_BYTES = sandbox.Limits.memory  # one notebook's student process (--memory-limit), as the sandbox has it
READ_SECONDS = 20.0  # reading one file: outputs skipped, sources parsed, scanned, planned (readers.py). Linear: a
#                      notebook saved from Jupyter takes under a second, 4 GiB of saved plots a few seconds
READ_MEMORY = 2 * 2**30  # and the memory its reader may take (32 MiB of sources parsed as JSON: a few hundred MiB)
JUDGE_MEMORY = 8 * 2**30  # the data a judge may hold beyond what it has at its start (its checks' models and
#                           references; what crosses from the student's process is at most 256 MiB a message)


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
    def for_student(cls, cell_timeout: float = CELL_SECONDS) -> Runtime:
        """The settings of `make validate` and `make handin` on a student's own machine: no sandbox (it is their own
        code), every core, no memory limit."""
        return cls(cell_timeout=cell_timeout, notebook_timeout=STUDENT_NOTEBOOK_SECONDS, sandboxed=False,
                   limits=sandbox.Limits(memory=None), threads=os.cpu_count() or 1, judge_memory=None)

    def judging_key(self) -> str:
        """The settings a judge's results depend on, as text for the results store's key (store.py): the time limits,
        the student's process's limits, threads, GPU, sandbox, the judge's memory. A "time limit" failure under
        short limits is not reused under longer ones."""
        return repr((self.cell_timeout, self.notebook_timeout, sorted(self.limits.__dict__.items()), self.threads,
                     self.cuda, self.sandboxed, self.judge_memory))

    def kernel_spec(self) -> dict:
        binds = [str(p) for p in (self.package, GRADER / "judging" / "kernel.py", self.mpl_cache) if p]
        return {"binds": binds, "limits": self.limits.__dict__ | {"threads": self.threads},
                "sandboxed": self.sandboxed, "mpl_cache": str(self.mpl_cache) if self.mpl_cache else None}
