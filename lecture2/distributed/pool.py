"""Warm groups: started `Group`s kept in this process between uses, so that the checks of one notebook (the judge,
or the lab's kernel) and `distributed.run` start ranks once per size instead of once per test cell.

    with distributed.warm_group(4, timeout=100) as group:    # a warm 4-rank group of this process, or a fresh one
        results = group.run(jobs)
    [result] = distributed.run([distributed.Job("ddp")], n_ranks=2)   # the same, in one call

One idle group per (n_ranks, backend). A group goes back to the pool when the block ends and it is fit for more
work (started, no run left half done, every rank alive, no error reported), whatever the block raised otherwise (a
failed check is no reason to restart ranks); a group whose run failed or timed out has already ended itself and
is dropped, and the next use starts a fresh one. Results do not depend on reuse: each job builds its model and
data from its own seed on every rank.

What the ranks run: only lecture2's own code (lecture2.distributed.worker) on the jobs a check sends, plain data;
no student code ever runs in them, and nothing a job leaves in a rank reaches the next one but warm imports,
torch's caches and the process group's subgroups. The pool is this process's alone: a forked child sees an
empty one (the groups belong to the parent) and never ends the parent's ranks.

A warm group's ranks leave by themselves after `LINGER_S` seconds without work; the pool hands out only groups
idle for less than half of that, and ends the others. At interpreter exit the pool ends its groups; a process
that leaves without running atexit handlers (os._exit, a kill, a judge forked by the grader) loses its ranks within
a second or two, since every rank leaves when its starter is gone (rank 0 removing the group's folder).
"""
from __future__ import annotations

import atexit
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from .group import Group, default_backend
from .jobs import TORCH_ENGINES, Job, JobResult, as_jobs

LINGER_S = 60.0  # seconds a warm group's ranks wait for work before they leave by themselves
MAX_IDLE_RANKS = 8  # at most this many ranks kept warm in one process (the least recently used group goes first)

_lock = threading.Lock()
_idle: dict[tuple[int, str], Group] = {}  # (n_ranks, backend) -> a warm group nobody holds
_owner = os.getpid()  # the process these groups belong to
_at_exit = False  # whether close_all is registered with atexit


def _mine() -> None:
    """Forget groups inherited through fork (they are the parent's, and the parent ends them)."""
    global _owner, _at_exit
    if os.getpid() != _owner:
        _idle.clear()
        _owner, _at_exit = os.getpid(), False


def acquire(n_ranks: int = 2, *, timeout: float = 90.0, backend: str | None = None,
            torch_engines: bool = False) -> Group:
    """A started group of `n_ranks`: this process's warm one if it is fit for work, else a fresh one (which can
    raise DistributedError). `timeout` (seconds) bounds each run. Hand it back with `release`."""
    backend = backend or default_backend(n_ranks)
    with _lock:
        _mine()
        group = _idle.pop((n_ranks, backend), None)
    if group is not None:
        if time.monotonic() - group.last_active < LINGER_S / 2 and group.healthy():
            group.timeout = float(timeout)
            return group
        group.close(kill=True)
    group = Group(n_ranks, timeout=timeout, backend=backend, torch_engines=torch_engines, linger=LINGER_S)
    group.start()
    return group


def release(group: Group) -> None:
    """Keep `group` warm for the next `acquire` of its size if it is fit for more work; else end it."""
    global _at_exit
    if not group.healthy():
        group.close(kill=True)
        return
    ended = []
    with _lock:
        _mine()
        key = (group.n_ranks, group.backend)
        if _idle.get(key) is not None and _idle[key] is not group:
            ended.append(_idle.pop(key))  # one warm group per size: the newer one stays
        _idle[key] = group
        while sum(g.n_ranks for g in _idle.values()) > MAX_IDLE_RANKS and len(_idle) > 1:
            oldest = min(_idle, key=lambda k: _idle[k].last_active)
            ended.append(_idle.pop(oldest))
        if not _at_exit:  # registered after the group's TemporaryDirectory: runs before its cleanup at exit
            atexit.register(close_all)
            _at_exit = True
    for g in ended:
        g.close()


def close_all() -> None:
    """End every warm group of this process (at interpreter exit, or to free the ranks' memory now)."""
    with _lock:
        if os.getpid() != _owner:
            _idle.clear()
            return
        groups = list(_idle.values())
        _idle.clear()
    for group in groups:
        group.close()


@contextmanager
def warm_group(n_ranks: int = 2, *, timeout: float = 90.0, backend: str | None = None,
               torch_engines: bool = False) -> Iterator[Group]:
    """`acquire` for the `with` block, `release` after it (the group stays warm if it is fit for more work)."""
    group = acquire(n_ranks, timeout=timeout, backend=backend, torch_engines=torch_engines)
    try:
        yield group
    finally:
        release(group)


def run(jobs: list[Job] | Job, n_ranks: int = 2, *, timeout: float = 90.0, backend: str | None = None,
        warm: bool = True) -> list[JobResult]:
    """Run `jobs` on a group of `n_ranks` processes; returns one JobResult per job. `warm`: on this process's warm
    group of that size (started if there is none, and kept warm afterwards); else on a fresh group, ended after."""
    jobs = as_jobs(jobs)
    torch_engines = any(j.engine in TORCH_ENGINES for j in jobs)
    if not warm:
        with Group(n_ranks, timeout=timeout, backend=backend, torch_engines=torch_engines) as group:
            return group.run(jobs)
    with warm_group(n_ranks, timeout=timeout, backend=backend, torch_engines=torch_engines) as group:
        return group.run(jobs)
