"""A live torch.distributed process group, started from a notebook: bytes held and collectives issued per rank.

Spawned processes cannot run functions defined in a notebook, so the group runs this module
(`python -m lecture2.distributed`, one process per rank) and takes its work as data: a list of `Job`s.
Each job builds the course's GPT (`lecture2.models.GPT`), trains it for a few steps under one engine and
reports, per rank, what the rank holds between steps and which collectives the last step issued.

    from lecture2 import distributed
    [ddp, fsdp] = distributed.run([distributed.Job("ddp"), distributed.Job("fsdp2")], n_ranks=2)
    ddp.held("params"), fsdp.collectives()

Engines (`Job.engine`):
    ddp              torch DistributedDataParallel (gradient_as_bucket_view=True: the .grad tensors are
                     views of DDP's buckets, so the gradients exist once)
    zero_redundancy  torch ZeroRedundancyOptimizer (ZeRO-1, sharded by whole parameter tensors) over DDP
    fsdp2            torch fully_shard (FSDP2, ZeRO-3): one unit per TransformerBlock plus the root, defaults
    fsdp2_keep       the same with reshard_after_forward=False: one all-gather per step instead of two
                     (ZeRO-2's communication; the parameters are still sharded between steps)
    textbook         lecture2.zero.ZeroEngine: ZeRO stage 0-3 exactly as the paper counts it, any recipe; the
                     gradients reduced in `reduce_dtype` ("float32" as Megatron and torchtitan), stages 2-3 in
                     buckets of `bucket_bytes` during backward
    tp               lecture2.parallel.TensorParallelBlock: one TransformerBlock of the model's shape split
                     Megatron-style over the ranks (column/row parallel, optionally sequence parallel); one
                     forward + backward, compared with the whole block run on each rank
    collectives      no model: all_reduce / all_gather / reduce_scatter of messages of `sizes` bytes, timed
                     (for fitting the network model's latency and bandwidth, lecture2.network.fit)

`peak=True` also measures the most memory a rank uses during its last step: on CUDA the caching allocator's
peak, on Linux CPUs glibc's bytes in use (mallinfo2) sampled after every aten op of the step; reported as the
bytes held before the step plus the largest rise during it.

The group: gloo over 127.0.0.1 on CPU; NCCL, one GPU per rank, when CUDA has at least as many GPUs as
ranks (a single-GPU machine runs the CPU group). Rank 0 binds a free port (port 0, no race) and hands it to
the others through a private temporary folder (`tempfile`), which also carries the jobs and the results;
nothing else is written. Every worker runs with one thread (the ranks share the CPU). The processes are
ended when the `Group` closes, when a rank fails (its traceback is raised here as `DistributedError`),
on timeout, and, from the worker's side, when the notebook's process goes away.

Units: bytes, seconds. "Bytes of a collective" is the size of the whole tensor it works on: the tensor of
an all_reduce or broadcast, the input of a reduce_scatter, the output of an all_gather.
"""
from __future__ import annotations

import dataclasses
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path

__all__ = ["ENGINES", "DistributedError", "Group", "Job", "JobResult", "default_backend", "run"]

ENGINES = {
    "tp": "lecture2.parallel.TensorParallelBlock (Megatron's column/row split of one TransformerBlock)",
    "collectives": "timed all_reduce / all_gather / reduce_scatter of given sizes",
    "ddp": "torch DistributedDataParallel",
    "zero_redundancy": "torch ZeroRedundancyOptimizer (ZeRO-1 by whole tensors) over DDP",
    "fsdp2": "torch fully_shard (FSDP2 = ZeRO-3)",
    "fsdp2_keep": "torch fully_shard(reshard_after_forward=False)",
    "textbook": "lecture2.zero.ZeroEngine (the paper's ZeRO, stage 0-3)",
}
RECIPES = ("fp32_adam", "bf16_mixed_adam", "sgd", "sgd_momentum", "bf16_sgd")  # lecture2.zero.RECIPES' keys
SMALL_GPT = {"vocab_size": 256, "block_size": 32, "n_layer": 2, "n_head": 2, "d_model": 32}  # 33,952 parameters
_POLL_S = 0.01


class DistributedError(RuntimeError):
    """A rank failed, or the group did not answer in time; the message carries the rank's traceback."""


@dataclass(frozen=True)
class Job:
    """One training run on the group. Sizes are per rank: each rank trains on its own batch.

    engine: a key of ENGINES. stage (0-3) and recipe (a key of lecture2.zero.RECIPES) apply to "textbook";
    the torch engines train with fp32 Adam. n_ranks: how many ranks of the group take part (None: all).
    model: keyword arguments of lecture2.models.GPTConfig. steps: training steps (the last one is measured).
    timing: if > 0, also time that many more steps, the same step without communication, and the last
    step's collectives replayed alone (medians, seconds).
    """

    engine: str
    stage: int = 0
    recipe: str = "fp32_adam"
    n_ranks: int | None = None
    model: dict = field(default_factory=lambda: dict(SMALL_GPT))
    batch: int = 2
    seq: int = 16
    steps: int = 2
    timing: int = 0
    lr: float = 1e-3
    seed: int = 0
    reduce_dtype: str | None = None  # textbook: "float32" reduces the gradients in fp32; None: the model dtype
    bucket_bytes: int | None = None  # textbook stages 2-3: gradient buckets (None: one, the whole buffer)
    peak: bool = False  # also measure the most memory a rank uses during the last step
    sequence_parallel: bool = False  # tp: Megatron's sequence parallelism
    sizes: tuple = ()  # collectives: message sizes in bytes
    ops: tuple = ("all_reduce", "all_gather", "reduce_scatter")  # collectives: which ones
    fail_rank: int | None = None  # tests only: this rank fails after its first step (the others wait in a collective)
    fail_hard: bool = False  # tests only: ... by dying at once (os._exit), without a traceback

    def __post_init__(self):
        object.__setattr__(self, "sizes", tuple(self.sizes))  # lists after a JSON round trip
        object.__setattr__(self, "ops", tuple(self.ops))
        if self.engine not in ENGINES:
            raise ValueError(f"未知的 engine {self.engine!r}; known: {', '.join(ENGINES)}")
        if self.stage not in (0, 1, 2, 3):
            raise ValueError(f"stage 应是 0, 1, 2 或 3, 得到 {self.stage!r}")
        if self.recipe not in RECIPES:
            raise ValueError(f"未知的 recipe {self.recipe!r}; known: {', '.join(RECIPES)}")
        if self.engine not in ("textbook", "tp") and (self.stage != 0 or self.recipe != "fp32_adam"):
            raise ValueError(f"stage 和 recipe 只用于 engine='textbook' (recipe 也用于 'tp'); "
                             f"{self.engine!r} 训练 fp32 Adam")
        if self.engine != "textbook" and (self.reduce_dtype is not None or self.bucket_bytes is not None):
            raise ValueError("reduce_dtype 和 bucket_bytes 只用于 engine='textbook'")
        if self.reduce_dtype not in (None, "float32"):
            raise ValueError(f"reduce_dtype 应是 None (模型的 dtype) 或 'float32', 得到 {self.reduce_dtype!r}")
        if self.bucket_bytes is not None and (not isinstance(self.bucket_bytes, int) or isinstance(self.bucket_bytes, bool)
                                              or self.bucket_bytes < 1):
            raise ValueError(f"bucket_bytes 应是正整数或 None, 得到 {self.bucket_bytes!r}")
        if self.engine == "collectives":
            if not self.sizes or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 4 for n in self.sizes):
                raise ValueError(f"collectives 需要 sizes: 每个 >= 4 bytes 的整数, 得到 {self.sizes!r}")
            bad = [op for op in self.ops if op not in ("all_reduce", "all_gather", "reduce_scatter")]
            if bad or not self.ops:
                raise ValueError(f"ops 应是 all_reduce / all_gather / reduce_scatter, 得到 {self.ops!r}")
        if self.sequence_parallel and self.engine != "tp":
            raise ValueError("sequence_parallel 只用于 engine='tp'")
        for name in ("batch", "seq", "steps"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} 应是正整数 (a positive int), 得到 {value!r}")
        if not isinstance(self.timing, int) or isinstance(self.timing, bool) or self.timing < 0:
            raise ValueError(f"timing 应是 >= 0 的整数, 得到 {self.timing!r}")
        if self.n_ranks is not None and (not isinstance(self.n_ranks, int) or isinstance(self.n_ranks, bool)
                                         or self.n_ranks < 1):
            raise ValueError(f"n_ranks 应是正整数或 None, 得到 {self.n_ranks!r}")
        from .models import GPTConfig

        config = GPTConfig(**self.model)  # a bad config fails here, not in a worker
        if self.seq > config.block_size:
            raise ValueError(f"seq={self.seq} 超过 block_size={config.block_size}")
        if self.engine == "tp" and self.n_ranks is not None:
            t, d_ff = self.n_ranks, config.d_ff or 4 * config.d_model
            if config.n_head % t or config.d_model % t or d_ff % t:
                raise ValueError(f"tp 的 {t} 个 rank 要整除 n_head={config.n_head}、d_model={config.d_model}、d_ff={d_ff}")
            if self.sequence_parallel and self.seq % t:
                raise ValueError(f"sequence_parallel: seq={self.seq} 要被 {t} 整除")


@dataclass
class JobResult:
    """A job's report from every rank that took part (rank order). Each rank's dict holds:

    held: bytes held between steps, {"params", "grads", "optimizer", "step_counters"} (each storage once;
      DTensor shards counted by their local storage); cuda_allocated: torch.cuda.memory_allocated() or None;
    n_params: parameters of the model (a tied weight once); losses: the loss of each step;
    collectives: the last step's calls, [{"op", "bytes", "dtype"}] in order (op: all_reduce, reduce_scatter,
      all_gather, broadcast, reduce, all_to_all);
    wire_bytes: bytes this process wrote during the last step (/proc/self/io: on gloo, what it sent over
      its sockets; None where that file does not exist or the backend is NCCL);
    timing (if asked): step_s (the whole step), compute_s (its forward + backward alone, on a private copy of the
      model), comm_s (its collectives alone, replayed), medians in seconds; flops: FLOPs of one step's forward +
      backward (counted);
    checksum: sum of |parameters| after training (gathered), to compare engines.
    """

    job: Job
    ranks: list[dict]

    @property
    def n_ranks(self) -> int:
        return len(self.ranks)

    def held(self, part: str) -> list[int]:
        """Bytes of `part` ("params", "grads", "optimizer", "step_counters" or "total") held by each rank."""
        if part == "total":
            return [sum(v for k, v in r["held"].items() if k != "step_counters") for r in self.ranks]
        return [r["held"][part] for r in self.ranks]

    def collectives(self, rank: int = 0) -> dict[str, dict[str, int]]:
        """{op: {"calls": count, "bytes": total bytes}} of the last step on `rank`."""
        out: dict[str, dict[str, int]] = {}
        for call in self.ranks[rank]["collectives"]:
            entry = out.setdefault(call["op"], {"calls": 0, "bytes": 0})
            entry["calls"] += 1
            entry["bytes"] += call["bytes"]
        return out


def default_backend(n_ranks: int) -> str:
    """"nccl" when CUDA shows at least `n_ranks` GPUs and NCCL is built in, else "gloo" (CPU)."""
    import torch

    if torch.cuda.is_available() and torch.cuda.device_count() >= n_ranks and torch.distributed.is_nccl_available():
        return "nccl"
    return "gloo"


def _loopback_interface() -> str:
    return "lo0" if sys.platform == "darwin" else "lo"


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)



def _is_job(value) -> bool:
    """A Job, by its class's name: a test cell reloads this module (fresh copies for the check), and a Job made
    before the reload is still one."""
    return dataclasses.is_dataclass(value) and not isinstance(value, type) and type(value).__qualname__ == "Job"

class Group:
    """`n_ranks` worker processes joined in one process group, alive for the `with` block:

        with distributed.Group(4) as group:
            results = group.run([...])       # as many times as needed; a job may use fewer ranks

    `timeout` (seconds) bounds the start and each `run`; the processes are ended when the block exits,
    whatever happens in it. `torch_engines=True` loads DDP, ZeroRedundancyOptimizer and FSDP2 (and
    torch._dynamo, which torch.optim imports on first use) before the ranks split. On Linux one process imports torch and forks the other ranks (one import
    instead of n: the group starts in about the time of one `import torch`); elsewhere each rank is
    started on its own. All of them are in one new process group (session), ended together.
    """

    def __init__(self, n_ranks: int = 2, *, timeout: float = 90.0, backend: str | None = None,
                 torch_engines: bool = False):
        if not isinstance(n_ranks, int) or isinstance(n_ranks, bool) or not 1 <= n_ranks <= 64:
            raise ValueError(f"n_ranks 应是 1 到 64 的整数, 得到 {n_ranks!r}")
        if not (isinstance(timeout, (int, float)) and timeout > 0):
            raise ValueError(f"timeout 应 > 0 (seconds), 得到 {timeout!r}")
        self.n_ranks, self.timeout = n_ranks, float(timeout)
        self.backend = backend or default_backend(n_ranks)
        if self.backend not in ("gloo", "nccl"):
            raise ValueError(f"backend 应是 'gloo' 或 'nccl', 得到 {self.backend!r}")
        self.torch_engines = bool(torch_engines)
        self._dir: tempfile.TemporaryDirectory | None = None
        self._procs: list[subprocess.Popen] = []
        self._runs = 0

    # --- lifecycle ---------------------------------------------------------------------------------------
    def __enter__(self) -> Group:
        self.start()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close(kill=exc_type is not None)

    def start(self) -> None:
        if self._dir is not None:
            raise RuntimeError("这个 Group 已经启动了 (already started)")
        self._dir = tempfile.TemporaryDirectory(prefix="lecture2-group-")
        folder = Path(self._dir.name)
        env = dict(os.environ)
        package_root = str(Path(__file__).resolve().parent.parent)  # the workers import this very lecture2
        env["PYTHONPATH"] = package_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env.setdefault("GLOO_SOCKET_IFNAME", _loopback_interface())  # loopback only, also in a sandbox
        env.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            env[var] = "1"  # one thread per rank; and no thread pool exists yet when the ranks are forked
        env.pop("MPLBACKEND", None)
        fork = sys.platform.startswith("linux")
        command = [sys.executable, "-m", "lecture2.distributed", "--world", str(self.n_ranks), "--dir", str(folder),
                   "--backend", self.backend, "--idle-timeout", str(self.timeout)]
        if self.torch_engines:
            command.append("--torch-engines")
        try:
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

    def close(self, kill: bool = False) -> None:
        """End the workers: politely (a stop file) unless `kill`, then SIGKILL whatever is left."""
        if self._dir is None:
            return
        folder = Path(self._dir.name)
        try:
            if not kill and self._procs:
                try:
                    _write_atomic(folder / "stop", "")
                except OSError:
                    pass
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline and any(p.poll() is None for p in self._procs):
                    time.sleep(_POLL_S)
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

    # --- work --------------------------------------------------------------------------------------------
    def run(self, jobs: list[Job] | Job) -> list[JobResult]:
        """Run `jobs` one after the other on the group; returns one JobResult per job."""
        if self._dir is None:
            raise RuntimeError("先启动 Group (use `with Group(n) as group:`)")
        jobs = [jobs] if _is_job(jobs) else list(jobs)
        for job in jobs:
            if not _is_job(job):
                raise TypeError(f"需要 distributed.Job, 得到 {type(job).__name__}")
            if (job.n_ranks or self.n_ranks) > self.n_ranks:
                raise ValueError(f"job 要 {job.n_ranks} 个 rank, 但 group 只有 {self.n_ranks} 个")
        folder = Path(self._dir.name)
        k = self._runs
        self._runs += 1
        _write_atomic(folder / f"jobs-{k}.json", json.dumps([asdict(j) for j in jobs]))
        self._wait_for([folder / f"result-{k}-{r}.json" for r in range(self.n_ranks)], f"第 {k + 1} 次 run (run #{k + 1})")
        per_rank = [json.loads((folder / f"result-{k}-{r}.json").read_text(encoding="utf-8"))
                    for r in range(self.n_ranks)]
        return [JobResult(job, [per_rank[r][i] for r in range(job.n_ranks or self.n_ranks)])
                for i, job in enumerate(jobs)]

    def _wait_for(self, files: list[Path], what: str) -> None:
        folder = Path(self._dir.name)
        deadline = time.monotonic() + self.timeout
        while not all(f.exists() for f in files):
            exited = next((p for p in self._procs if p.poll() is not None), None)
            if exited is not None or any((folder / f"error-{r}.txt").exists() for r in range(self.n_ranks)):
                self._settle(exited)  # the other ranks notice too: let every report be written
                raise self._failure(self._first_cause(), what, exited.returncode if exited else None)
            if time.monotonic() > deadline:
                message = self._tails()
                self.close(kill=True)
                raise DistributedError(f"进程组 (process group) 在 {self.timeout:.0f} s 内没有完成 {what} "
                                       f"(timed out); 进程已结束 (workers killed)。\n{message}")
            time.sleep(_POLL_S)

    def _settle(self, exited: subprocess.Popen | None, seconds: float = 1.5) -> None:
        """Wait (at most `seconds`) until rank 0 has exited or no new error report has come for 0.3 s."""
        folder = Path(self._dir.name)
        deadline, quiet_since, seen = time.monotonic() + seconds, time.monotonic(), -1
        while time.monotonic() < deadline:
            reports = len(list(folder.glob("error-*.txt")))
            if reports != seen:
                seen, quiet_since = reports, time.monotonic()
            if all(p.poll() is not None for p in self._procs) or time.monotonic() - quiet_since > 0.3:
                return
            time.sleep(_POLL_S)

    def _first_cause(self) -> int:
        """The rank whose failure came first: a rank that only lost its peer ("connection closed") is a follower."""
        folder = Path(self._dir.name)
        failed = [r for r in range(self.n_ranks) if (folder / f"error-{r}.txt").exists()]
        followers = ("Connection closed by peer", "Connection reset by peer", "Broken pipe", "aborted")
        causes = [r for r in failed if not any(m in (folder / f"error-{r}.txt").read_text(encoding="utf-8",
                                                                                          errors="replace")
                                               for m in followers)]
        return (causes or failed or [0])[0]

    def _failure(self, rank: int, what: str, code: int | None = None) -> DistributedError:
        folder = Path(self._dir.name)
        error = folder / f"error-{rank}.txt"
        detail = error.read_text(encoding="utf-8") if error.exists() else self._tails()
        self.close(kill=True)
        lines = detail.strip().splitlines()
        last = lines[-1] if lines else f"exit code {code}"
        return DistributedError(f"rank {rank} 在 {what} 中失败 (failed): {last}\n"
                                f"其余进程已结束 (the other ranks were killed)。\n--- rank {rank} ---\n{detail[-4000:]}")

    def _tails(self) -> str:
        folder = Path(self._dir.name)
        out = []
        for log in sorted(folder.glob("log-*.txt")):
            out.append(f"--- {log.stem} ---\n{log.read_text(encoding='utf-8', errors='replace')[-1500:]}")
        return "\n".join(out)


def run(jobs: list[Job] | Job, n_ranks: int = 2, *, timeout: float = 90.0, backend: str | None = None) -> list[JobResult]:
    """Start a group of `n_ranks` processes, run `jobs` on it, end it; returns one JobResult per job."""
    jobs = [jobs] if _is_job(jobs) else list(jobs)
    torch_engines = any(_is_job(j) and j.engine != "textbook" for j in jobs)
    with Group(n_ranks, timeout=timeout, backend=backend, torch_engines=torch_engines) as group:
        return group.run(jobs)


# ==================================== the worker (one process per rank) ====================================

_OPS = {  # torch.distributed function -> (op, which tensor's bytes count)
    "all_reduce": ("all_reduce", "tensor"), "broadcast": ("broadcast", "tensor"), "reduce": ("reduce", "tensor"),
    "reduce_scatter_single": ("reduce_scatter", "input"), "reduce_scatter_tensor": ("reduce_scatter", "input"),
    "reduce_scatter": ("reduce_scatter", "input_list"),
    "all_gather_single": ("all_gather", "output"), "all_gather_into_tensor": ("all_gather", "output"),
    "all_gather": ("all_gather", "output_list"), "all_to_all_single": ("all_to_all", "input"),
}
_POSITION = {"tensor": 0, "output": 0, "output_list": 0, "input": 1, "input_list": 1}


class CollectiveLog:
    """Records every collective called through torch.distributed while recording is on.

    It wraps the functions of `torch.distributed` (and of `distributed_c10d`, where deprecated aliases call
    them), so it sees what DDP's communication hook, ZeroRedundancyOptimizer, FSDP2 and lecture2.zero call;
    a call made inside another recorded call counts once.
    """

    def __init__(self):
        import torch.distributed as dist
        import torch.distributed.distributed_c10d as c10d

        self.calls: list[dict] = []
        self.recording = False
        self._local = threading.local()  # the nesting depth of recorded calls, per thread
        self._originals = []
        for name, (op, which) in _OPS.items():
            for module in (dist, c10d):
                original = getattr(module, name, None)
                if original is None:
                    continue
                self._originals.append((module, name, original))
                setattr(module, name, self._wrap(original, op, which))

    def _wrap(self, fn, op, which):
        import torch

        log = self

        def recorded(*args, **kwargs):
            depth = getattr(log._local, "depth", 0)
            if depth or not log.recording:
                log._local.depth = depth + 1
                try:
                    return fn(*args, **kwargs)
                finally:
                    log._local.depth = depth
            names = {"tensor": "tensor", "output": "output_tensor", "output_list": "tensor_list",
                     "input": "input", "input_list": "input_list"}
            arg = args[_POSITION[which]] if len(args) > _POSITION[which] else kwargs.get(names[which])
            if arg is None and which == "output":
                arg = kwargs.get("output")
            tensors = arg if isinstance(arg, (list, tuple)) else [arg]
            tensors = [t for t in tensors if isinstance(t, torch.Tensor)]
            log.calls.append({"op": op, "bytes": sum(t.numel() * t.element_size() for t in tensors),
                              "numel": sum(t.numel() for t in tensors),
                              "dtype": str(tensors[0].dtype).replace("torch.", "") if tensors else "?"})
            log._local.depth = 1
            try:
                return fn(*args, **kwargs)
            finally:
                log._local.depth = 0

        recorded.__name__ = getattr(fn, "__name__", "collective")
        recorded.__doc__ = fn.__doc__
        return recorded

    def start(self) -> None:
        self.calls, self.recording = [], True

    def stop(self) -> list[dict]:
        self.recording = False
        return self.calls


def _written_bytes() -> int | None:
    """Bytes this process has written (write/writev/send to files and sockets), from /proc/self/io."""
    try:
        with open("/proc/self/io", encoding="ascii") as f:
            for line in f:
                if line.startswith("wchar:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _local(t):
    """The rank's own tensor behind a DTensor (FSDP2's sharded parameters, gradients, optimizer states)."""
    to_local = getattr(t, "to_local", None)
    return to_local() if callable(to_local) else t


def _held(groups: dict[str, list]) -> dict[str, int]:
    """Bytes per part, each storage counted once, in the first part that names it."""
    seen: set = set()
    out = {}
    for part, tensors in groups.items():
        total = 0
        for t in tensors:
            if t is None:
                continue
            t = _local(t)
            key = (t.device.type, t.device.index, t.untyped_storage().data_ptr(), t.untyped_storage().nbytes())
            if t.untyped_storage().nbytes() == 0 or key in seen:
                continue
            seen.add(key)
            total += t.untyped_storage().nbytes()
        out[part] = total
    return out


def _optimizer_groups(model, optimizer) -> dict[str, list]:
    states = [s for s in optimizer.state.values()]
    return {
        "params": list(model.parameters()),
        "grads": [p.grad for p in model.parameters()],
        "optimizer": [v for s in states for k, v in s.items() if k != "step" and hasattr(v, "untyped_storage")],
        "step_counters": [v for s in states for k, v in s.items() if k == "step" and hasattr(v, "untyped_storage")],
    }


class _TorchEngine:
    """DDP, ZeroRedundancyOptimizer or FSDP2 around the course's GPT, trained with fp32 Adam."""

    def __init__(self, engine: str, model, group, device, lr: float):
        import torch
        import torch.distributed as dist

        self.model = model
        if engine in ("ddp", "zero_redundancy"):
            from torch.nn.parallel import DistributedDataParallel as DDP

            ddp = DDP(model, process_group=group, gradient_as_bucket_view=True,
                      device_ids=[device.index] if device.type == "cuda" else None)
            world = dist.get_world_size(group)

            def allreduce_hook(state, bucket):  # DDP's default hook, called through torch.distributed
                buffer = bucket.buffer().div_(world)
                return dist.all_reduce(buffer, group=state, async_op=True).get_future().then(lambda f: f.value()[0])

            ddp.register_comm_hook(group, allreduce_hook)
            self.wrapped = ddp
            if engine == "zero_redundancy":
                from torch.distributed.optim import ZeroRedundancyOptimizer

                self.optimizer = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=torch.optim.Adam,
                                                         process_group=group, lr=lr)
                self.inner = self.optimizer.optim  # the local Adam over this rank's parameters
            else:
                self.optimizer = self.inner = torch.optim.Adam(ddp.parameters(), lr=lr)
        else:
            from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
            from torch.distributed.fsdp import fully_shard

            if group is None:
                mesh = init_device_mesh(device.type, (dist.get_world_size(),))
            else:
                mesh = DeviceMesh.from_group(group, device.type)
            keep = engine == "fsdp2_keep"
            for block in model.blocks:
                fully_shard(block, mesh=mesh, reshard_after_forward=not keep)
            fully_shard(model, mesh=mesh, reshard_after_forward=False if keep else None)  # None: FSDP2's default
            self.wrapped = model
            self.optimizer = self.inner = torch.optim.Adam(model.parameters(), lr=lr)

    def step(self, loss_fn) -> float:
        self.optimizer.zero_grad(set_to_none=False)  # keep the gradient buffers: they are held between steps
        loss = loss_fn(self.wrapped)
        loss.backward()
        self.optimizer.step()
        return float(loss.detach())

    def held(self) -> dict[str, list]:
        return _optimizer_groups(self.model, self.inner)

    def full_parameters(self):
        import torch

        values = []
        for p in self.model.parameters():
            full = getattr(p, "full_tensor", None)
            values.append((full() if callable(full) else p.detach()).reshape(-1).float())
        return torch.cat(values)


class _TextbookEngine:
    def __init__(self, job: Job, model, group, lr: float):
        from .zero import ZeroEngine

        import torch

        reduce_dtype = None if job.reduce_dtype is None else getattr(torch, job.reduce_dtype)
        self.engine = ZeroEngine(model, job.stage, job.recipe, lr=lr, group=group, reduce_dtype=reduce_dtype,
                                 bucket_bytes=job.bucket_bytes)
        self.model = model

    def step(self, loss_fn) -> float:
        return self.engine.step(lambda: loss_fn(self.model))

    def held(self) -> dict[str, list]:
        return self.engine.held()

    def full_parameters(self):
        return self.engine.full_parameters()


def _timed(fn, repeat: int, sync) -> list[float]:
    """Wall-clock seconds of `repeat` calls of fn, each between two synchronizations."""
    times = []
    for _ in range(repeat):
        sync()
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return times


def _median_seconds(fn, repeat: int, sync) -> float:
    return statistics.median(_timed(fn, repeat, sync))


def _in_use_bytes():
    """glibc's bytes in use by malloc (small blocks + mmapped ones), or None where there is no mallinfo2."""
    import ctypes

    global _MALLINFO
    if _MALLINFO is None:
        class Info(ctypes.Structure):
            _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                       "fsmblks", "uordblks", "fordblks", "keepcost")]
        try:
            libc = ctypes.CDLL(None)
            libc.mallinfo2.restype = Info
            _MALLINFO = libc.mallinfo2
        except (OSError, AttributeError):
            _MALLINFO = False
    if not _MALLINFO:
        return None
    info = _MALLINFO()
    return int(info.uordblks + info.hblkhd)


_MALLINFO = None


def _peak_watch():
    """A TorchDispatchMode that records the most bytes in use after any aten op while it is active, per phase
    (`phase(name)` starts one; lecture2.zero's engine announces its phases)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class PeakWatch(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.start = _in_use_bytes()
            self.current = "step"
            self.peaks = {}

        def phase(self, name: str) -> None:
            self.current = name
            self._sample()

        def _sample(self) -> None:
            now = _in_use_bytes()
            if now is not None and now > self.peaks.get(self.current, -1):
                self.peaks[self.current] = now

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            self._sample()
            return out

    return PeakWatch()


def _run_job(job: Job, group, device, backend: str) -> dict:
    import torch
    import torch.distributed as dist

    from . import measure, models

    if job.engine == "tp":
        return _run_tp(job, group, device)
    if job.engine == "collectives":
        return _run_collectives(job, group, device)
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    config = models.GPTConfig(**job.model)
    torch.manual_seed(job.seed)  # the same initial model on every rank
    model = models.GPT(config).to(device)
    n_params = sum(p.numel() for p in dict.fromkeys(model.parameters()))
    data = torch.Generator().manual_seed(1000 * job.seed + rank)  # each rank its own batch
    idx = torch.randint(0, config.vocab_size, (job.batch, job.seq), generator=data).to(device)
    targets = torch.randint(0, config.vocab_size, (job.batch, job.seq), generator=data).to(device)

    def loss_fn(m):  # through forward(): DDP and FSDP2 act in their forward hooks
        return torch.nn.functional.cross_entropy(m(idx).flatten(0, 1), targets.flatten())

    engine = _TextbookEngine(job, model, group, job.lr) if job.engine == "textbook" else \
        _TorchEngine(job.engine, model, group, device, job.lr)
    log = _LOG
    cuda = device.type == "cuda"

    def sync():
        if cuda:
            torch.cuda.synchronize(device)

    losses = []
    for step in range(job.steps):
        if step == 1 and job.fail_rank == rank:
            if job.fail_hard:
                os._exit(7)
            raise RuntimeError(f"planned failure on rank {rank} (Job.fail_rank)")
        last = step == job.steps - 1
        if last:
            dist.barrier(group=group)
            sync()
            held_before = _held(engine.held())
            watch = None
            if job.peak and cuda:
                torch.cuda.reset_peak_memory_stats(device)
                start_cuda = torch.cuda.memory_allocated(device)
            elif job.peak:
                watch = _peak_watch()
            written = _written_bytes()
            log.start()
        if last and watch is not None:
            inner = getattr(engine, "engine", None)  # lecture2.zero's engine names its phases
            if inner is not None:
                inner.on_phase = watch.phase
            with watch:
                losses.append(engine.step(loss_fn))
            if inner is not None:
                inner.on_phase = None
        else:
            losses.append(engine.step(loss_fn))
        if last:
            sync()
            calls = log.stop()
            after = _written_bytes()
    wire = None if backend != "gloo" or written is None or after is None else after - written
    held = _held(engine.held())
    report = {"rank": rank, "world": world, "n_params": n_params, "held": held, "losses": losses,
              "collectives": calls, "wire_bytes": wire,
              "cuda_allocated": torch.cuda.memory_allocated(device) if cuda else None}
    if job.peak:
        before = sum(v for k, v in held_before.items() if k != "step_counters")
        phases = {}
        if cuda:
            rise, how = torch.cuda.max_memory_allocated(device) - start_cuda, "torch.cuda.max_memory_allocated"
        elif watch is not None and watch.start is not None:
            phases = {name: before + peak - watch.start for name, peak in watch.peaks.items()}
            rise, how = max(watch.peaks.values()) - watch.start, "glibc mallinfo2 after every aten op"
        else:
            rise, how = None, "not measured here (no CUDA, no glibc mallinfo2)"
        report["peak"] = {"held_before": before, "rise": rise, "bytes": None if rise is None else before + rise,
                          "phases": phases, "how": how}

    if job.timing:
        repeat = job.timing
        dist.barrier(group=group)
        report["step_samples"] = _timed(lambda: engine.step(loss_fn), repeat, sync)
        report["step_s"] = statistics.median(report["step_samples"])
        # the step's forward + backward (the FLOPs MFU counts) on a private copy: no communication, no optimizer.
        # The copy holds the engine's trained values: a CPU can take many times longer on the tiny (denormal)
        # numbers a freshly initialised model's backward makes, so fresh weights would time other work.
        from .zero import RECIPES as zero_recipes

        local = models.GPT(config).to(device=device, dtype=zero_recipes[job.recipe][0])
        local_params = list(dict.fromkeys(local.parameters()))
        trained, start = engine.full_parameters(), 0  # a collective: every rank gathers the same values
        with torch.no_grad():
            for p in local_params:
                p.copy_(trained[start:start + p.numel()].view_as(p))
                start += p.numel()

        def local_step():
            for p in local_params:
                p.grad = None
            loss_fn(local).backward()

        local_step()
        dist.barrier(group=group)
        report["compute_samples"] = _timed(local_step, repeat, sync)
        report["compute_s"] = statistics.median(report["compute_samples"])
        report["flops"] = measure.count_flops(lambda: loss_fn(local).backward())
        # the last step's collectives alone, in the same order and sizes
        buffers = [(c["op"], torch.zeros(max(c["numel"], 1), dtype=getattr(torch, c["dtype"]), device=device))
                   for c in calls]

        def replay():
            for op, t in buffers:
                _replay(op, t, group, world)

        dist.barrier(group=group)
        report["comm_samples"] = _timed(replay, repeat, sync)
        report["comm_s"] = statistics.median(report["comm_samples"])
    report["checksum"] = float(engine.full_parameters().abs().sum())
    dist.barrier(group=group)
    return report


def _run_tp(job: Job, group, device) -> dict:
    """One forward + backward of a TransformerBlock split over the group (lecture2.parallel), beside the whole block."""
    import torch
    import torch.distributed as dist

    from . import measure, models, parallel
    from .zero import RECIPES as zero_recipes

    rank, world = dist.get_rank(group), dist.get_world_size(group)
    config = models.GPTConfig(**job.model)
    dtype = zero_recipes[job.recipe][0]
    torch.manual_seed(job.seed)  # the same whole block on every rank
    block = models.TransformerBlock(config.d_model, config.n_head, config.d_ff, config.bias, config.norm,
                                    config.fused_attention).to(device=device, dtype=dtype)
    tp = parallel.TensorParallelBlock(block, group, sequence_parallel=job.sequence_parallel)
    gen = torch.Generator().manual_seed(1000 + job.seed)  # the same input and output gradient on every rank
    x = torch.randn(job.batch, job.seq, config.d_model, generator=gen).to(device=device, dtype=dtype)
    g = torch.randn(job.batch, job.seq, config.d_model, generator=gen).to(device=device, dtype=dtype)

    def local(z):  # this rank's input in the block's layout: all of it, or (SP) its part of the sequence
        if not job.sequence_parallel:
            return z
        part = job.seq // world
        return z.transpose(0, 1)[rank * part:(rank + 1) * part].contiguous()  # (T/t, B, d)

    # backward from the scalar <output, g> rather than output.backward(g): the same gradients, and a first
    # Tensor.backward(gradient) costs a third of a second of one-time setup in every fresh process
    ref_in = x.clone().requires_grad_(True)
    ref_out = block(ref_in)
    (ref_out * g).sum().backward()
    tp_in = local(x).clone().requires_grad_(True)
    for _ in range(job.steps - 1):  # warm-up steps (gloo's first calls set up their buffers)
        (tp(local(x)) * local(g)).sum().backward()
        for q in tp.parameters():
            q.grad = None
    dist.barrier(group=group)
    _LOG.start()
    out = tp(tp_in)
    (out * local(g)).sum().backward()
    tp.sync_replicated_grads()
    calls = _LOG.stop()

    def error(a, b) -> float:
        return float((a.float() - b.float()).abs().max()) if a.numel() else 0.0

    errors = {"output": error(out, local(ref_out.detach())), "input_grad": error(tp_in.grad, local(ref_in.grad))}
    d, ff = config.d_model, tp.up.out_features
    whole = {"qkv": block.attention.qkv.weight.grad[parallel.column_rows(d, config.n_head, world, rank)],
             "proj": block.attention.proj.weight.grad[:, parallel.shard_of(d, world, rank)],
             "up": block.ffn.up.weight.grad[rank * ff:(rank + 1) * ff],
             "down": block.ffn.down.weight.grad[:, rank * ff:(rank + 1) * ff],
             "norm1": block.norm1.weight.grad, "norm2": block.norm2.weight.grad}
    mine = {"qkv": tp.qkv.weight.grad, "proj": tp.proj.weight.grad, "up": tp.up.weight.grad,
            "down": tp.down.weight.grad, "norm1": tp.norm1.weight.grad, "norm2": tp.norm2.weight.grad}
    errors["weight_grads"] = max(error(mine[k], whole[k]) for k in whole)
    saved = measure.saved_bytes(lambda: tp(local(x).requires_grad_(True)), exclude=tp.parameters())
    whole_saved = measure.saved_bytes(lambda: block(x.clone().requires_grad_(True)), exclude=block.parameters())
    params = list(dict.fromkeys(tp.parameters()))
    report = {"rank": rank, "world": world, "collectives": calls, "errors": errors,
              "held": {"params": _held({"params": params})["params"]},
              "n_params": sum(q.numel() for q in params),
              "block_params": sum(q.numel() for q in block.parameters()),
              "replicated_params": sum(q.numel() for q in tp.replicated_parameters()),
              "saved_bytes": saved, "block_saved_bytes": whole_saved, "dtype": str(dtype).removeprefix("torch.")}
    dist.barrier(group=group)
    return report


def _run_collectives(job: Job, group, device) -> dict:
    """Time each op of job.ops on each size of job.sizes (fp32 messages), `job.timing` times (default 5)."""
    import torch
    import torch.distributed as dist

    world = dist.get_world_size(group)
    repeat = job.timing or 5
    cuda = device.type == "cuda"

    def sync():
        if cuda:
            torch.cuda.synchronize(device)

    rows = []
    for op in job.ops:
        for nbytes in job.sizes:
            n = max(world, nbytes // 4 // world * world)  # fp32 elements, divisible by the ranks
            whole = torch.zeros(n, device=device)
            part = torch.zeros(n // world, device=device)
            if op == "all_reduce":
                run = lambda: dist.all_reduce(whole, group=group)  # noqa: E731
            elif op == "all_gather":
                run = lambda: dist.all_gather_into_tensor(whole, part, group=group)  # noqa: E731
            else:
                run = lambda: dist.reduce_scatter_tensor(part, whole, group=group)  # noqa: E731
            for _ in range(2):  # warm-up: gloo sets up its buffers for a new size
                run()
            dist.barrier(group=group)
            samples = _timed(run, repeat, sync)
            rows.append({"op": op, "bytes": n * 4, "seconds": statistics.median(samples), "samples": samples})
    dist.barrier(group=group)
    return {"rank": dist.get_rank(group), "world": world, "timings": rows}


def _replay(op: str, t, group, world: int) -> None:
    import torch
    import torch.distributed as dist

    if op == "all_reduce":
        dist.all_reduce(t, group=group)
    elif op == "broadcast":
        dist.broadcast(t, src=0, group=group)  # subgroups are ranks 0..k-1
    elif op == "reduce":
        dist.reduce(t, dst=0, group=group)
    elif op == "reduce_scatter":
        n = t.numel() // world * world
        dist.reduce_scatter_single(torch.empty(n // world, dtype=t.dtype, device=t.device), t[:n], group=group)
    elif op == "all_gather":
        n = t.numel() // world * world
        dist.all_gather_single(t[:n], torch.empty(n // world, dtype=t.dtype, device=t.device), group=group)
    elif op == "all_to_all":
        dist.all_to_all_single(torch.empty_like(t), t, group=group)


_LOG: CollectiveLog | None = None


def _watch_parent(parent: int) -> None:
    """End this worker if the process that started it is gone (a killed kernel leaves no orphans)."""
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            os._exit(3)


def _reap(children: dict[int, int], folder: Path) -> None:
    """(rank 0 of a forked group) wait for the forked ranks; one that dies without a traceback is reported."""
    while children:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            return
        rank = children.pop(pid, None)
        code = os.waitstatus_to_exitcode(status)
        if rank is not None and code != 0 and not (folder / f"error-{rank}.txt").exists():
            how = f"signal {-code}" if code < 0 else f"exit code {code}"
            _write_atomic(folder / f"error-{rank}.txt", f"rank {rank} ended ({how}) without a traceback\n")


def _worker(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m lecture2.distributed",
                                     description="Ranks of a lecture2 process group (started by lecture2.distributed.Group).")
    parser.add_argument("--rank", type=int, required=True)
    parser.add_argument("--world", type=int, required=True)
    parser.add_argument("--dir", required=True, help="the group's private folder: port, jobs, results")
    parser.add_argument("--backend", default="gloo", choices=["gloo", "nccl"])
    parser.add_argument("--idle-timeout", type=float, default=90.0, help="seconds to wait for work before leaving")
    parser.add_argument("--fork", action="store_true", help="rank 0 forks ranks 1..world-1 after the imports")
    parser.add_argument("--torch-engines", action="store_true", help="load DDP, ZeRO and FSDP2 before forking")
    args = parser.parse_args(argv)
    folder = Path(args.dir)
    rank = args.rank
    reaper = None
    try:
        import warnings

        warnings.filterwarnings("ignore", category=FutureWarning)  # deprecated aliases some engines still call
        import torch  # noqa: F401  (imported once, before the fork)
        import torch.distributed  # noqa: F401

        from . import measure, models, zero  # noqa: F401
        if args.torch_engines:
            import torch.distributed.fsdp  # noqa: F401
            import torch.distributed.optim  # noqa: F401
            import torch.nn.parallel  # noqa: F401

            torch.optim.Adam([torch.zeros(1, requires_grad=True)])  # its first use imports torch._dynamo
        parent = os.getppid()
        if args.fork:
            children = {}
            for r in range(1, args.world):
                pid = os.fork()
                if pid == 0:
                    rank, parent, children = r, os.getppid(), {}
                    break
                children[pid] = r
            if rank == 0 and children:
                reaper = threading.Thread(target=_reap, args=(children, folder), daemon=True)
                reaper.start()
        threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
        code = _serve(args, rank, folder)
    except BaseException:
        _write_atomic(folder / f"error-{rank}.txt", traceback.format_exc())
        code = 1
        if reaper is not None:  # a forked rank that died first is the cause: let the reaper report it
            reaper.join(timeout=0.5)
    # leave at once: a forked rank must not return into the interpreter it was copied from, and no rank
    # needs the seconds of interpreter teardown that torch costs
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _serve(args, rank: int, folder: Path) -> int:
    import datetime

    import torch
    import torch.distributed as dist

    global _LOG
    torch.set_num_threads(1)  # the ranks share the machine's cores
    timeout = datetime.timedelta(seconds=args.idle_timeout)
    if rank == 0:
        store = dist.TCPStore("127.0.0.1", 0, args.world, is_master=True, timeout=timeout, wait_for_workers=False)
        _write_atomic(folder / "port", str(store.port))
    else:
        deadline = time.monotonic() + args.idle_timeout
        while not (folder / "port").exists():
            if time.monotonic() > deadline:
                raise TimeoutError("rank 0 没有给出端口 (no port from rank 0)")
            time.sleep(_POLL_S)
        port = int((folder / "port").read_text())
        store = dist.TCPStore("127.0.0.1", port, args.world, is_master=False, timeout=timeout)
    if args.backend == "nccl":
        device = torch.device("cuda", rank)
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    dist.init_process_group(args.backend, store=store, rank=rank, world_size=args.world, timeout=timeout,
                            **({"device_id": device} if args.backend == "nccl" else {}))
    _LOG = CollectiveLog()
    subgroups: dict[int, object] = {}
    (folder / f"ready-{rank}").write_text("")
    k = 0
    idle_since = time.monotonic()
    while True:
        jobs_file = folder / f"jobs-{k}.json"
        if (folder / "stop").exists():
            break
        if not jobs_file.exists():
            if time.monotonic() - idle_since > args.idle_timeout:
                raise TimeoutError(f"{args.idle_timeout:.0f} s 没有收到任务 (no jobs)")
            time.sleep(_POLL_S)
            continue
        results = []
        for spec in json.loads(jobs_file.read_text(encoding="utf-8")):
            job = Job(**spec)
            n = job.n_ranks or args.world
            if n not in subgroups:  # new_group is collective over the whole world: every rank calls it
                subgroups[n] = None if n == args.world else dist.new_group(list(range(n)))
            results.append(_run_job(job, subgroups[n], device, args.backend) if rank < n else None)
            dist.barrier()
        _write_atomic(folder / f"result-{k}-{rank}.json", json.dumps(results))
        k += 1
        idle_since = time.monotonic()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(_worker(sys.argv[1:]))
