"""Reading students' files where a time and a memory limit stop it: pipeline.prepare in reader processes.

    readers = Readers(slots, runtime)
    job = readers.prepare(student, path, nb, code, draw)    pipeline.prepare's Job, within runtime.read_timeout
    readers.close()

Every step of reading a file is linear in its size (submission.py, source.py, scan.py, plan.py, advice.py), and
still a file of gigabytes of brackets is minutes of work, in C calls no signal interrupts. So a class's files are
read in reader processes: each file gets `runtime.read_timeout` seconds and READ_MEMORY bytes of a reader; a reader
that runs past them is killed and replaced, and that file costs its own notebook (a Job with a problem and no judge:
"not graded"), never the class. Readers serve file after file, `slots` at once, each file as soon as a reader is free,
so the class's first notebook is judged while the others are read.
"""
from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import traceback
from multiprocessing.connection import Connection
from pathlib import Path

from . import pipeline, sandbox
from .course import Notebook
from .runtime import GRADER, READ_MEMORY, START_SECONDS, Runtime


def _serve(inbox, outbox, memory: int) -> None:
    """A reader: pipeline.prepare for each task received, its Job sent back (or the grader's own error, its class and
    where, never a message: a message could quote the file)."""
    sandbox.limit_data(memory)
    outbox.send("ready")
    while True:
        try:
            task = inbox.recv()
        except (EOFError, OSError):
            return
        try:
            outbox.send(pipeline.prepare(*task))
        except MemoryError:
            outbox.send(("failed", f"its reading ran out of memory ({memory // 2**20} MiB)"))
        except Exception as err:  # noqa: BLE001  the grader's bug: one notebook, said in the grader's words
            where = traceback.extract_tb(err.__traceback__)[-1:]
            at = f" at {Path(where[0].filename).name}:{where[0].lineno}" if where else ""
            outbox.send(("failed", f"the grader failed at reading ({type(err).__name__}{at})"))


class _Reader:
    """`python -m lecture2_grader.readers`: a fresh interpreter (nothing of the grader's threads or locks), tasks and
    Jobs pickled both ways on two pipes (the reader is the grader's own code; what it sends is data it built)."""

    def __init__(self, memory: int):
        task_read, task_write = os.pipe()
        job_read, job_write = os.pipe()
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(GRADER.parent), *filter(None, [os.environ.get("PYTHONPATH")])]))
        self.process = subprocess.Popen([sys.executable, "-X", "utf8", "-m", "lecture2_grader.readers", str(task_read),
                                         str(job_write), str(memory)], pass_fds=(task_read, job_write), env=env,
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True)
        os.close(task_read)
        os.close(job_write)
        self.tasks, self.jobs = Connection(task_write, readable=False), Connection(job_read, writable=False)
        if not self.jobs.poll(START_SECONDS) or self.jobs.recv() != "ready":
            self.kill()
            raise RuntimeError("a reader process did not start")

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self.tasks.close()
        self.jobs.close()


class Readers:
    """Up to `slots` reader processes, started as they are needed; `prepare` is safe to call from many threads."""

    def __init__(self, slots: int, runtime: Runtime, memory: int = READ_MEMORY):
        self.slots, self.runtime, self.memory = max(1, slots), runtime, memory
        self._free: queue.SimpleQueue[_Reader] = queue.SimpleQueue()
        self._started = 0
        self._lock = threading.Lock()
        self._all: list[_Reader] = []

    def _take(self) -> _Reader:
        """A free reader, or a new one while fewer than `slots` run (one killed for its file frees its slot)."""
        while True:
            with self._lock:
                if self._started < self.slots:
                    self._started += 1
                    break
            try:
                return self._free.get(timeout=0.5)
            except queue.Empty:
                continue
        try:
            reader = _Reader(self.memory)
        except BaseException:
            with self._lock:
                self._started -= 1
            raise
        with self._lock:
            self._all.append(reader)
        return reader

    def _replace(self, reader: _Reader) -> None:
        reader.kill()
        with self._lock:
            if reader in self._all:  # (not after close: it took them all)
                self._all.remove(reader)
                self._started -= 1

    def prepare(self, student: str, path: Path, nb: Notebook, code: str = "", draw: str | None = None) -> pipeline.Job:
        """pipeline.prepare(student, path, nb, ...) in a reader, within the runtime's read_timeout; a file that takes
        longer, or more memory, is a Job with one problem and no judge."""
        reader = self._take()
        seconds = self.runtime.read_timeout
        try:
            reader.tasks.send((student, path, nb, self.runtime, code, draw))
            if not reader.jobs.poll(seconds):
                self._replace(reader)
                return pipeline.Job(student, nb.name, {}, [
                    f"reading the file took over {seconds:g} s, the limit of one file (not graded: 0 points); a "
                    "notebook saved from Jupyter is read in well under a second"], [], None)
            got = reader.jobs.recv()
        except (EOFError, OSError):  # the reader died (out of memory past its limit, or killed)
            self._replace(reader)
            return pipeline.Job(student, nb.name, {}, ["its reading stopped the grader's reader process (not "
                                                       "graded: 0 points)"], [], None)
        self._free.put(reader)
        if isinstance(got, tuple):
            return pipeline.Job(student, nb.name, {}, [f"{got[1]} (not graded: 0 points)"], [], None)
        return got

    def close(self) -> None:
        with self._lock:
            readers, self._all, self._started = self._all, [], self.slots  # nothing starts after close
        for reader in readers:
            reader.kill()


if __name__ == "__main__":
    _serve(Connection(int(sys.argv[1]), writable=False), Connection(int(sys.argv[2]), readable=False), int(sys.argv[3]))
