"""The records a process group works on: a `Job` (what to run, plain data that crosses to the ranks as JSON) and
a `JobResult` (what every rank reported), with the engines and recipes a job may name.

Units: bytes, seconds. Nothing here imports torch; a Job checks its model config with lecture2.models.GPTConfig.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import estimate

ENGINES = {
    "tp": "lecture2.parallel.TensorParallelBlock (Megatron's column/row split of one TransformerBlock)",
    "collectives": "timed all_reduce / all_gather / reduce_scatter of given sizes",
    "ddp": "torch DistributedDataParallel",
    "zero_redundancy": "torch ZeroRedundancyOptimizer (ZeRO-1 by whole tensors) over DDP",
    "fsdp2": "torch fully_shard (FSDP2 = ZeRO-3)",
    "fsdp2_keep": "torch fully_shard(reshard_after_forward=False)",
    "textbook": "lecture2.zero.ZeroEngine (the paper's ZeRO, stage 0-3)",
}
TORCH_ENGINES = ("ddp", "zero_redundancy", "fsdp2", "fsdp2_keep")  # what Group(torch_engines=True) loads before forking
RECIPES = tuple(estimate.TRAINED_RECIPES)  # the recipes the engines train (lecture2.zero.RECIPES' keys)
SMALL_GPT = {"vocab_size": 256, "block_size": 32, "n_layer": 2, "n_head": 2, "d_model": 32}  # 33,952 parameters
COLLECTIVE_OPS = ("all_reduce", "all_gather", "reduce_scatter")  # what the "collectives" engine times


class DistributedError(RuntimeError):
    """A rank failed, or the group did not answer in time; the message carries the rank's traceback."""


def _positive_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


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
    ops: tuple = COLLECTIVE_OPS  # collectives: which ones
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
        if self.bucket_bytes is not None and not _positive_int(self.bucket_bytes):
            raise ValueError(f"bucket_bytes 应是正整数或 None, 得到 {self.bucket_bytes!r}")
        if self.engine == "collectives":
            if not self.sizes or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 4 for n in self.sizes):
                raise ValueError(f"collectives 需要 sizes: 每个 >= 4 bytes 的整数, 得到 {self.sizes!r}")
            if not self.ops or any(op not in COLLECTIVE_OPS for op in self.ops):
                raise ValueError(f"ops 应是 all_reduce / all_gather / reduce_scatter, 得到 {self.ops!r}")
        if self.sequence_parallel and self.engine != "tp":
            raise ValueError("sequence_parallel 只用于 engine='tp'")
        for name in ("batch", "seq", "steps"):
            value = getattr(self, name)
            if not _positive_int(value):
                raise ValueError(f"{name} 应是正整数 (a positive int), 得到 {value!r}")
        if not isinstance(self.timing, int) or isinstance(self.timing, bool) or self.timing < 0:
            raise ValueError(f"timing 应是 >= 0 的整数, 得到 {self.timing!r}")
        if self.n_ranks is not None and not _positive_int(self.n_ranks):
            raise ValueError(f"n_ranks 应是正整数或 None, 得到 {self.n_ranks!r}")
        from ..models import GPTConfig

        config = GPTConfig(**self.model)  # a bad config fails here, not in a worker
        if self.seq > config.block_size:
            raise ValueError(f"seq={self.seq} 超过 block_size={config.block_size}")
        if self.engine == "tp" and self.n_ranks is not None:
            t, d_ff = self.n_ranks, config.d_ff or 4 * config.d_model
            if config.n_head % t or config.d_model % t or d_ff % t:
                raise ValueError(f"tp 的 {t} 个 rank 要整除 n_head={config.n_head}、d_model={config.d_model}、d_ff={d_ff}")
            if self.sequence_parallel and self.seq % t:
                raise ValueError(f"sequence_parallel: seq={self.seq} 要被 {t} 整除")


def as_jobs(jobs: list[Job] | Job) -> list[Job]:
    """`jobs` as a list of Job, or TypeError naming what else it holds."""
    jobs = [jobs] if isinstance(jobs, Job) else list(jobs)
    for job in jobs:
        if not isinstance(job, Job):
            raise TypeError(f"需要 distributed.Job, 得到 {type(job).__name__}")
    return jobs


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
