"""Timing in a rank: wall-clock samples between synchronizations, a step's collectives replayed alone, and the
"collectives" job (all_reduce / all_gather / reduce_scatter of given sizes, timed, for lecture2.network.fit).

Runs inside a rank (lecture2.distributed.worker). Units: bytes, seconds.
"""
from __future__ import annotations

import statistics
import time


def synchronizer(device):
    """A function that waits for `device`'s queued work (a no-op on a CPU)."""
    import torch

    if device.type == "cuda":
        return lambda: torch.cuda.synchronize(device)
    return lambda: None


def timed(fn, repeat: int, sync) -> list[float]:
    """Wall-clock seconds of `repeat` calls of fn, each between two synchronizations."""
    times = []
    for _ in range(repeat):
        sync()
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return times


def replay(op: str, t, group, world: int) -> None:
    """One collective `op` (as CollectiveLog names them) on tensor `t` (the whole tensor's size) over `group`."""
    import torch
    import torch.distributed as dist

    from ..flat_collectives import all_gather_flat, reduce_scatter_flat

    if op == "all_reduce":
        dist.all_reduce(t, group=group)
    elif op == "broadcast":
        dist.broadcast(t, src=0, group=group)  # subgroups are ranks 0..k-1
    elif op == "reduce":
        dist.reduce(t, dst=0, group=group)
    elif op == "reduce_scatter":
        n = t.numel() // world * world
        reduce_scatter_flat(torch.empty(n // world, dtype=t.dtype, device=t.device), t[:n], group=group)
    elif op == "all_gather":
        n = t.numel() // world * world
        all_gather_flat(t[:n], torch.empty(n // world, dtype=t.dtype, device=t.device), group=group)
    elif op == "all_to_all":
        dist.all_to_all_single(torch.empty_like(t), t, group=group)


def run_collectives(job, group, device, backend: str) -> dict:
    """Time each op of job.ops on each size of job.sizes (fp32 messages), `job.timing` times (default 5)."""
    import torch
    import torch.distributed as dist

    world = dist.get_world_size(group)
    repeat = job.timing or 5
    sync = synchronizer(device)
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
            samples = timed(run, repeat, sync)
            rows.append({"op": op, "bytes": n * 4, "seconds": statistics.median(samples), "samples": samples})
    dist.barrier(group=group)
    return {"rank": dist.get_rank(group), "world": world, "timings": rows}
