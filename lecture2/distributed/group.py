"""`Group`: n rank processes joined in one torch.distributed process group, started from this process, fed jobs
through a private folder, and ended (with every rank) when it closes or a rank fails.

The ranks run `python -m lecture2.distributed.worker` (a module: a notebook's functions cannot be sent to another
process). Rank 0 binds a free port (port 0, no race) and hands it to the others through a private temporary folder
(`tempfile`, mode 0700), which also carries the jobs (JSON) and the results (JSON); nothing else is written. On
Linux one process imports torch and forks the other ranks (one import instead of n). All ranks are in one new
session, ended together. gloo over 127.0.0.1 on CPU; NCCL, one GPU per rank, when CUDA shows enough GPUs.

Units: seconds.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from .jobs import DistributedError, Job, JobResult, as_jobs

POLL_S = 0.01  # how often this process looks for the ranks' files
WORKER = "lecture2.distributed.worker"  # the module every rank runs
FOLLOWERS = ("Connection closed by peer", "Connection reset by peer", "Broken pipe", "aborted")  # a lost peer


def default_backend(n_ranks: int) -> str:
    """"nccl" when CUDA shows at least `n_ranks` GPUs and NCCL is built in, else "gloo" (CPU)."""
    import torch

    if torch.cuda.is_available() and torch.cuda.device_count() >= n_ranks and torch.distributed.is_nccl_available():
        return "nccl"
    return "gloo"


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` so that a reader sees the whole file or none (the ranks poll for these files)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _worker_env() -> dict[str, str]:
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[2])  # the workers import this very lecture2
    env["PYTHONPATH"] = package_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("GLOO_SOCKET_IFNAME", "lo0" if sys.platform == "darwin" else "lo")  # loopback only, also in a sandbox
    env.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = "1"  # one thread per rank; and no thread pool exists yet when the ranks are forked
    env.pop("MPLBACKEND", None)
    return env


class Group:
    """`n_ranks` worker processes joined in one process group, alive for the `with` block:

        with distributed.Group(4) as group:
            results = group.run([...])       # as many times as needed; a job may use fewer ranks

    `timeout` (seconds) bounds the start and each `run`, and is how long the ranks wait for work before they
    fail; with `linger` (seconds) they leave quietly after that long without work instead (a warm group of
    lecture2.distributed.pool). The processes are ended when the block exits, whatever happens in it.
    `torch_engines=True` loads DDP, ZeroRedundancyOptimizer and FSDP2 (and torch._dynamo, which torch.optim
    imports on first use) before the ranks split.
    """

    def __init__(self, n_ranks: int = 2, *, timeout: float = 90.0, backend: str | None = None,
                 torch_engines: bool = False, linger: float | None = None):
        if not isinstance(n_ranks, int) or isinstance(n_ranks, bool) or not 1 <= n_ranks <= 64:
            raise ValueError(f"n_ranks 应是 1 到 64 的整数, 得到 {n_ranks!r}")
        for name, value in (("timeout", timeout), ("linger", linger)):
            if not (isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0) \
                    and not (name == "linger" and value is None):
                raise ValueError(f"{name} 应 > 0 (seconds), 得到 {value!r}")
        self.n_ranks, self.timeout = n_ranks, float(timeout)
        self.linger = None if linger is None else float(linger)
        self.backend = backend or default_backend(n_ranks)
        if self.backend not in ("gloo", "nccl"):
            raise ValueError(f"backend 应是 'gloo' 或 'nccl', 得到 {self.backend!r}")
        self.torch_engines = bool(torch_engines)
        self.last_active = 0.0  # time.monotonic() when the ranks last finished work (started, or a run done)
        self._dir: tempfile.TemporaryDirectory | None = None
        self._procs: list[subprocess.Popen] = []
        self._runs = 0
        self._busy = False  # a run was handed to the ranks and its results have not all come back

    # --- lifecycle ---------------------------------------------------------------------------------------
    def __enter__(self) -> Group:
        self.start()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close(kill=exc_type is not None)

    @property
    def folder(self) -> Path:
        if self._dir is None:
            raise RuntimeError("先启动 Group (use `with Group(n) as group:`)")
        return Path(self._dir.name)

    def start(self) -> None:
        if self._dir is not None:
            raise RuntimeError("这个 Group 已经启动了 (already started)")
        self._dir = tempfile.TemporaryDirectory(prefix="lecture2-group-")
        folder = self.folder
        fork = sys.platform.startswith("linux")
        command = [sys.executable, "-m", WORKER, "--world", str(self.n_ranks), "--dir", str(folder),
                   "--backend", self.backend, "--idle-timeout", str(self.timeout)]
        command += ["--torch-engines"] if self.torch_engines else []
        command += ["--linger", str(self.linger)] if self.linger else []
        try:
            env = _worker_env()
            for rank in ([0] if fork else range(self.n_ranks)):
                with open(folder / f"log-{rank}.txt", "wb") as log:
                    self._procs.append(subprocess.Popen(
                        command + ["--rank", str(rank)] + (["--fork"] if fork else []),
                        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=folder,
                        start_new_session=True))
            self._wait_for([folder / f"ready-{r}" for r in range(self.n_ranks)], "启动 (start)")
        except BaseException:
            self.close(kill=True)
            raise
        self.last_active = time.monotonic()

    def close(self, kill: bool = False) -> None:
        """End the workers: politely (a stop file) unless `kill`, then SIGKILL whatever is left."""
        if self._dir is None:
            return
        folder = Path(self._dir.name)
        try:
            if not kill and self._procs:
                try:
                    write_atomic(folder / "stop", "")
                except OSError:
                    pass
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline and any(p.poll() is None for p in self._procs):
                    time.sleep(POLL_S)
        finally:
            for p in self._procs:
                try:  # the session holds every rank (forked ones too) and only them
                    os.killpg(p.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError, AttributeError):
                    pass
                if p.poll() is None:
                    p.kill()
            for p in self._procs:
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
            self._procs = []
            self._dir.cleanup()
            self._dir = None

    def healthy(self) -> bool:
        """Started, not in the middle of a run, every rank alive and none has reported an error: fit for more work."""
        if self._dir is None or self._busy or any(p.poll() is not None for p in self._procs):
            return False
        folder = Path(self._dir.name)
        if any(folder.glob("error-*.txt")):
            return False
        for rank in range(self.n_ranks):
            try:
                os.kill(int((folder / f"ready-{rank}").read_text()), 0)  # the rank wrote its pid
            except (OSError, ValueError):
                return False
        return True

    # --- work --------------------------------------------------------------------------------------------
    def run(self, jobs: list[Job] | Job) -> list[JobResult]:
        """Run `jobs` one after the other on the group; returns one JobResult per job."""
        folder = self.folder
        jobs = as_jobs(jobs)
        for job in jobs:
            if (job.n_ranks or self.n_ranks) > self.n_ranks:
                raise ValueError(f"job 要 {job.n_ranks} 个 rank, 但 group 只有 {self.n_ranks} 个")
        k = self._runs
        self._runs += 1
        self._busy = True
        write_atomic(folder / f"jobs-{k}.json", json.dumps([asdict(j) for j in jobs]))
        self._wait_for([folder / f"result-{k}-{r}.json" for r in range(self.n_ranks)], f"第 {k + 1} 次 run (run #{k + 1})")
        per_rank = [json.loads((folder / f"result-{k}-{r}.json").read_text(encoding="utf-8"))
                    for r in range(self.n_ranks)]
        self._busy, self.last_active = False, time.monotonic()
        return [JobResult(job, [per_rank[r][i] for r in range(job.n_ranks or self.n_ranks)])
                for i, job in enumerate(jobs)]

    def _wait_for(self, files: list[Path], what: str) -> None:
        folder = self.folder
        deadline = time.monotonic() + self.timeout
        while not all(f.exists() for f in files):
            exited = next((p for p in self._procs if p.poll() is not None), None)
            if exited is not None or any((folder / f"error-{r}.txt").exists() for r in range(self.n_ranks)):
                self._settle()  # the other ranks notice too: let every report be written
                raise self._failure(self._first_cause(), what, exited.returncode if exited else None)
            if time.monotonic() > deadline:
                message = self._tails()
                self.close(kill=True)
                raise DistributedError(f"进程组 (process group) 在 {self.timeout:.0f} s 内没有完成 {what} "
                                       f"(timed out); 进程已结束 (workers killed)。\n{message}")
            time.sleep(POLL_S)

    # --- a failure, reported -----------------------------------------------------------------------------
    def _settle(self, seconds: float = 1.5) -> None:
        """Wait (at most `seconds`) until every rank has exited or no new error report has come for 0.3 s."""
        folder = self.folder
        deadline, quiet_since, seen = time.monotonic() + seconds, time.monotonic(), -1
        while time.monotonic() < deadline:
            reports = len(list(folder.glob("error-*.txt")))
            if reports != seen:
                seen, quiet_since = reports, time.monotonic()
            if all(p.poll() is not None for p in self._procs) or time.monotonic() - quiet_since > 0.3:
                return
            time.sleep(POLL_S)

    def _first_cause(self) -> int:
        """The rank whose failure came first: a rank that only lost its peer ("connection closed") is a follower."""
        folder = self.folder
        failed = [r for r in range(self.n_ranks) if (folder / f"error-{r}.txt").exists()]
        causes = [r for r in failed
                  if not any(m in (folder / f"error-{r}.txt").read_text(encoding="utf-8", errors="replace")
                             for m in FOLLOWERS)]
        return (causes or failed or [0])[0]

    def _failure(self, rank: int, what: str, code: int | None = None) -> DistributedError:
        error = self.folder / f"error-{rank}.txt"
        detail = error.read_text(encoding="utf-8") if error.exists() else self._tails()
        self.close(kill=True)
        lines = detail.strip().splitlines()
        last = lines[-1] if lines else f"exit code {code}"
        return DistributedError(f"rank {rank} 在 {what} 中失败 (failed): {last}\n"
                                f"其余进程已结束 (the other ranks were killed)。\n--- rank {rank} ---\n{detail[-4000:]}")

    def _tails(self) -> str:
        out = []
        for log in sorted(self.folder.glob("log-*.txt")):
            out.append(f"--- {log.stem} ---\n{log.read_text(encoding='utf-8', errors='replace')[-1500:]}")
        return "\n".join(out)
