"""A live torch.distributed process group, started from a notebook: bytes held and collectives issued per rank.

Spawned processes cannot run functions defined in a notebook, so the group's ranks run a module of this package
(`python -m lecture2.distributed.worker`) and take their work as data: a list of `Job`s. Each job builds the
course's GPT (`lecture2.models.GPT`), trains it for a few steps under one engine and reports, per rank, what the
rank holds between steps and which collectives the last step issued.

    from lecture2 import distributed
    [ddp, fsdp] = distributed.run([distributed.Job("ddp"), distributed.Job("fsdp2")], n_ranks=2)
    ddp.held("params"), fsdp.collectives()

Modules, by what they hold:
    jobs             Job, JobResult, ENGINES, RECIPES, SMALL_GPT, DistributedError: the records (no torch)
    group            Group: starting the rank processes, handing them jobs, ending them, reporting a failure
    pool             warm groups kept in this process between uses (warm_group, run)
    worker           the rank's entry point (`python -m lecture2.distributed.worker`): join, serve jobs, leave
    counting         in a rank: the collectives a step issues, the bytes it writes
    memory           in a rank: the bytes it holds between steps, the peak during one
    engines          in a rank: DDP / ZeroRedundancyOptimizer / FSDP2 vs lecture2.zero, the training job
    tensor_parallel  in a rank: the "tp" job (lecture2.parallel's split block beside the whole one)
    timing           in a rank: timed samples, a step's collectives replayed, the "collectives" job

Engines (`Job.engine`, ENGINES): ddp, zero_redundancy, fsdp2, fsdp2_keep (torch's own), textbook (lecture2.zero,
ZeRO stages 0-3 for any recipe), tp (lecture2.parallel), collectives (timed messages, for lecture2.network.fit).

The group: gloo over 127.0.0.1 on CPU; NCCL, one GPU per rank, when CUDA has at least as many GPUs as ranks.
The processes are ended when the `Group` closes, when a rank fails (its traceback is raised here as
`DistributedError`), on timeout, and, from the worker's side, when the starting process goes away.

Units: bytes, seconds. "Bytes of a collective" is the size of the whole tensor it works on: the tensor of
an all_reduce or broadcast, the input of a reduce_scatter, the output of an all_gather.
"""
from .group import Group, default_backend
from .jobs import ENGINES, RECIPES, SMALL_GPT, DistributedError, Job, JobResult
from .pool import close_all, run, warm_group

__all__ = ["ENGINES", "RECIPES", "SMALL_GPT", "DistributedError", "Group", "Job", "JobResult", "close_all",
           "default_backend", "run", "warm_group"]
