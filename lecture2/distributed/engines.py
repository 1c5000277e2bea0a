"""The training engines in a rank and the training job they run: the course's GPT trained a few steps under
torch's DDP, ZeroRedundancyOptimizer or FSDP2 (`TorchEngine`, fp32 Adam), or under the paper's ZeRO as
lecture2.zero writes it out (`TextbookEngine`, any stage and recipe); the last step measured (bytes held,
collectives, bytes on the wire, optionally the peak and the timings).

    ddp              DistributedDataParallel (gradient_as_bucket_view=True: the .grad tensors are views of
                     DDP's buckets, so the gradients exist once)
    zero_redundancy  ZeroRedundancyOptimizer (ZeRO-1, sharded by whole parameter tensors) over DDP
    fsdp2            fully_shard (FSDP2, ZeRO-3): one unit per TransformerBlock plus the root, defaults
    fsdp2_keep       the same with reshard_after_forward=False: one all-gather per step instead of two
                     (ZeRO-2's communication; the parameters are still sharded between steps)
    textbook         lecture2.zero.ZeroEngine: ZeRO stage 0-3 exactly as the paper counts it, any recipe; the
                     gradients reduced in `reduce_dtype`, stages 2-3 in buckets of `bucket_bytes` during backward

The peak during a step: on CUDA the caching allocator's peak, on Linux CPUs glibc's bytes in use (mallinfo2)
sampled after every aten op of the step; reported as the bytes held before the step plus the largest rise.
Runs inside a rank (lecture2.distributed.worker). Units: bytes, seconds, FLOPs.
"""
from __future__ import annotations

import os
import statistics

from . import counting, memory, timing


class TorchEngine:
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
        self.phases = None  # no phases announced: the peak is the step's

    def step(self, loss_fn) -> float:
        self.optimizer.zero_grad(set_to_none=False)  # keep the gradient buffers: they are held between steps
        loss = loss_fn(self.wrapped)
        loss.backward()
        self.optimizer.step()
        return float(loss.detach())

    def held(self) -> dict[str, list]:
        return memory.optimizer_groups(self.model, self.inner)

    def full_parameters(self):
        """Every parameter, whole (DTensors gathered: a collective), flat in fp32."""
        import torch

        values = []
        for p in self.model.parameters():
            full = getattr(p, "full_tensor", None)
            values.append((full() if callable(full) else p.detach()).reshape(-1).float())
        return torch.cat(values)


class TextbookEngine:
    """lecture2.zero.ZeroEngine (stage, recipe, reduce dtype and buckets from the job) around the course's GPT."""

    def __init__(self, job, model, group, lr: float):
        import torch

        from ..zero import ZeroEngine

        reduce_dtype = None if job.reduce_dtype is None else getattr(torch, job.reduce_dtype)
        self.engine = ZeroEngine(model, job.stage, job.recipe, lr=lr, group=group, reduce_dtype=reduce_dtype,
                                 bucket_bytes=job.bucket_bytes)
        self.model = model
        self.phases = self.engine  # it announces its phases (forward and backward, gradient reduction, ...)

    def step(self, loss_fn) -> float:
        return self.engine.step(lambda: loss_fn(self.model))

    def held(self) -> dict[str, list]:
        return self.engine.held()

    def full_parameters(self):
        return self.engine.full_parameters()


def run_training(job, group, device, backend: str) -> dict:
    """Train the job's GPT `job.steps` steps under its engine; this rank's report (lecture2.distributed.JobResult)."""
    import torch
    import torch.distributed as dist

    rank, world = dist.get_rank(group), dist.get_world_size(group)
    config, model, n_params, loss_fn = _model_and_batch(job, rank, device)
    engine = TextbookEngine(job, model, group, job.lr) if job.engine == "textbook" else \
        TorchEngine(job.engine, model, group, device, job.lr)
    cuda = device.type == "cuda"
    sync = timing.synchronizer(device)
    log = counting.log()
    losses = _steps_before_measured(job, rank, engine, loss_fn)
    # the last step, measured
    dist.barrier(group=group)
    sync()
    held_before = memory.held(engine.held())
    watch, start_cuda = _start_peak(job, cuda, device)
    written = counting.written_bytes()
    log.start()
    _measured_step(engine, loss_fn, watch, losses)
    sync()
    calls = log.stop()
    after = counting.written_bytes()
    wire = None if backend != "gloo" or written is None or after is None else after - written
    report = {"rank": rank, "world": world, "n_params": n_params, "held": memory.held(engine.held()),
              "losses": losses, "collectives": calls, "wire_bytes": wire,
              "cuda_allocated": torch.cuda.memory_allocated(device) if cuda else None}
    if job.peak:
        report["peak"] = _peak_report(held_before, cuda, device, start_cuda, watch)
    if job.timing:
        report.update(_timings(job, engine, loss_fn, calls, group, device, config))
    report["checksum"] = float(engine.full_parameters().abs().sum())
    dist.barrier(group=group)
    return report


def _model_and_batch(job, rank: int, device):
    """The job's GPT (the same initial weights on every rank), its parameter count (a tied weight once) and this
    rank's own batch of (B, T) token ids and targets; returns (config, model, n_params, loss_fn)."""
    import torch

    from .. import models

    config = models.GPTConfig(**job.model)
    torch.manual_seed(job.seed)  # the same initial model on every rank
    model = models.GPT(config).to(device)
    n_params = sum(p.numel() for p in dict.fromkeys(model.parameters()))
    data = torch.Generator().manual_seed(1000 * job.seed + rank)  # each rank its own batch
    idx = torch.randint(0, config.vocab_size, (job.batch, job.seq), generator=data).to(device)  # (B, T)
    targets = torch.randint(0, config.vocab_size, (job.batch, job.seq), generator=data).to(device)  # (B, T)

    def loss_fn(m):  # through forward(): DDP and FSDP2 act in their forward hooks
        return torch.nn.functional.cross_entropy(m(idx).flatten(0, 1), targets.flatten())

    return config, model, n_params, loss_fn


def _steps_before_measured(job, rank: int, engine, loss_fn) -> list:
    """The `job.steps - 1` steps before the measured one (a planned failure may stop any step, the measured one
    included, before it starts); their losses."""
    losses = []
    for step in range(job.steps - 1):  # the steps before the measured one
        _planned_failure(job, rank, step)
        losses.append(engine.step(loss_fn))
    _planned_failure(job, rank, job.steps - 1)
    return losses


def _start_peak(job, cuda: bool, device):
    """With `job.peak`: on CUDA the allocator's peak reset and the bytes allocated now; elsewhere a glibc watch.
    Returns (the watch or None, the CUDA bytes allocated at the start or None)."""
    import torch

    watch = start_cuda = None
    if job.peak and cuda:
        torch.cuda.reset_peak_memory_stats(device)
        start_cuda = torch.cuda.memory_allocated(device)
    elif job.peak:
        watch = memory.peak_watch()
    return watch, start_cuda


def _measured_step(engine, loss_fn, watch, losses: list) -> None:
    """The measured step, its loss appended to `losses`; under the watch (told each phase) when there is one."""
    if watch is not None:
        if engine.phases is not None:
            engine.phases.on_phase = watch.phase
        with watch:
            losses.append(engine.step(loss_fn))
        if engine.phases is not None:
            engine.phases.on_phase = None
    else:
        losses.append(engine.step(loss_fn))


def _peak_report(held_before: dict, cuda: bool, device, start_cuda, watch) -> dict:
    """The measured step's peak: the bytes held before it (the step counters left out), the largest rise, their sum
    (bytes), the peak of each phase where the watch saw them, and how it was measured."""
    import torch

    before = sum(v for k, v in held_before.items() if k != "step_counters")
    phases = {}
    if cuda:
        rise, how = torch.cuda.max_memory_allocated(device) - start_cuda, "torch.cuda.max_memory_allocated"
    elif watch is not None and watch.start is not None:
        phases = {name: before + peak - watch.start for name, peak in watch.peaks.items()}
        rise, how = max(watch.peaks.values()) - watch.start, "glibc mallinfo2 after every aten op"
    else:
        rise, how = None, "not measured here (no CUDA, no glibc mallinfo2)"
    return {"held_before": before, "rise": rise, "bytes": None if rise is None else before + rise,
            "phases": phases, "how": how}


def _planned_failure(job, rank: int, step: int) -> None:
    """Job.fail_rank (tests only): that rank fails before step 1 (after its first step)."""
    if step != 1 or job.fail_rank != rank:
        return
    if job.fail_hard:
        os._exit(7)
    raise RuntimeError(f"planned failure on rank {rank} (Job.fail_rank)")


def _timings(job, engine, loss_fn, calls: list[dict], group, device, config) -> dict:
    """step_s, compute_s, comm_s (medians of job.timing samples, seconds), their samples, and one step's FLOPs."""
    import torch
    import torch.distributed as dist

    from .. import measure, models
    from ..zero import RECIPES as zero_recipes

    repeat, sync, world = job.timing, timing.synchronizer(device), dist.get_world_size(group)
    out = {}
    dist.barrier(group=group)
    out["step_samples"] = timing.timed(lambda: engine.step(loss_fn), repeat, sync)
    out["step_s"] = statistics.median(out["step_samples"])
    # the step's forward + backward (the FLOPs MFU counts) on a private copy: no communication, no optimizer.
    # The copy holds the engine's trained values: a CPU can take many times longer on the tiny (denormal)
    # numbers a freshly initialised model's backward makes, so fresh weights would time other work.
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
    out["compute_samples"] = timing.timed(local_step, repeat, sync)
    out["compute_s"] = statistics.median(out["compute_samples"])
    out["flops"] = measure.count_flops(lambda: loss_fn(local).backward())
    # the last step's collectives alone, in the same order and sizes
    buffers = [(c["op"], torch.zeros(max(c["numel"], 1), dtype=getattr(torch, c["dtype"]), device=device))
               for c in calls]

    def replay():
        for op, t in buffers:
            timing.replay(op, t, group, world)

    dist.barrier(group=group)
    out["comm_samples"] = timing.timed(replay, repeat, sync)
    out["comm_s"] = statistics.median(out["comm_samples"])
    return out
