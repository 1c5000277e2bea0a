"""The rank's entry point: `python -m lecture2.distributed.worker --rank R --world N --dir FOLDER ...`, started by
lecture2.distributed.Group, never by hand.

Rank 0 imports torch and lecture2 once and (on Linux, `--fork`) forks ranks 1..N-1; the ranks join one process
group over a TCPStore whose port rank 0 writes to the folder, then serve: each `jobs-K.json` in the folder (plain
data: Job fields) is run on every rank, and each rank writes `result-K-R.json`. A rank's traceback goes to
`error-R.txt`. A rank leaves when the folder holds `stop`; when no work came for `--idle-timeout` seconds (an
error) or for `--linger` seconds (quietly: a warm group nobody used; rank 0 removes the folder once the forked
ranks are gone, since its starter may never come back to it); and at once when the process that started it is
gone (rank 0 then removes the folder too). Only lecture2's own code runs here, on the jobs' configs.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import threading
import time
import traceback
from pathlib import Path

from .group import POLL_S, write_atomic
from .jobs import Job

IDLE_POLL_S = 0.05  # how often an idle rank looks for work, after a second without any
LEFT = 2  # _serve's return when the ranks left after --linger seconds without work


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m lecture2.distributed.worker",
                                     description="Ranks of a lecture2 process group (started by lecture2.distributed.Group).")
    parser.add_argument("--rank", type=int, required=True)
    parser.add_argument("--world", type=int, required=True)
    parser.add_argument("--dir", required=True, help="the group's private folder: port, jobs, results")
    parser.add_argument("--backend", default="gloo", choices=["gloo", "nccl"])
    parser.add_argument("--idle-timeout", type=float, default=90.0,
                        help="seconds to wait for work before failing; also the collectives' timeout")
    parser.add_argument("--linger", type=float, default=None,
                        help="seconds to wait for work before leaving quietly (a warm group); replaces --idle-timeout's failure")
    parser.add_argument("--fork", action="store_true", help="rank 0 forks ranks 1..world-1 after the imports")
    parser.add_argument("--torch-engines", action="store_true", help="load DDP, ZeRO and FSDP2 before forking")
    return parser


def _watch_parent(parent: int, rank: int, folder: Path) -> None:
    """End this rank if the process that started it is gone (a killed kernel or judge leaves no orphans); rank 0,
    started by that process, also removes the group's folder, which nobody else will."""
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            if rank == 0:
                shutil.rmtree(folder, ignore_errors=True)
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
            write_atomic(folder / f"error-{rank}.txt", f"rank {rank} ended ({how}) without a traceback\n")


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    folder = Path(args.dir)
    rank = args.rank
    reaper = None
    code = 1
    try:
        import warnings

        warnings.filterwarnings("ignore", category=FutureWarning)  # deprecated aliases some engines still call
        import torch  # noqa: F401  (imported once, before the fork)
        import torch.distributed  # noqa: F401

        from . import engines, tensor_parallel, timing  # noqa: F401
        from .. import measure, models, zero  # noqa: F401
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
        threading.Thread(target=_watch_parent, args=(parent, rank, folder), daemon=True).start()
        code = _serve(args, rank, folder)
        if code == LEFT and rank == 0 and (reaper is not None or args.world == 1):
            if reaper is not None:  # the forked ranks leave too: then nobody reads the folder any more
                reaper.join(timeout=5)
            shutil.rmtree(folder, ignore_errors=True)  # the starter may never come back to clean it
        code = 0
    except BaseException:
        try:
            write_atomic(folder / f"error-{rank}.txt", traceback.format_exc())
        except OSError:
            pass
        if reaper is not None:  # a forked rank that died first is the cause: let the reaper report it
            reaper.join(timeout=0.5)
    finally:
        # leave at once, whatever happened: a forked rank must not return into the interpreter it was copied
        # from, and no rank needs the seconds of interpreter teardown that torch costs
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _join(args, rank: int, folder: Path):
    """Join the process group (rank 0 serves the TCPStore and writes its port); this rank's device."""
    import datetime

    import torch
    import torch.distributed as dist

    timeout = datetime.timedelta(seconds=args.idle_timeout)
    if rank == 0:
        store = dist.TCPStore("127.0.0.1", 0, args.world, is_master=True, timeout=timeout, wait_for_workers=False)
        write_atomic(folder / "port", str(store.port))
    else:
        deadline = time.monotonic() + args.idle_timeout
        while not (folder / "port").exists():
            if time.monotonic() > deadline:
                raise TimeoutError("rank 0 没有给出端口 (no port from rank 0)")
            time.sleep(POLL_S)
        store = dist.TCPStore("127.0.0.1", int((folder / "port").read_text()), args.world, is_master=False,
                              timeout=timeout)
    if args.backend == "nccl":
        device = torch.device("cuda", rank)
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    dist.init_process_group(args.backend, store=store, rank=rank, world_size=args.world, timeout=timeout,
                            **({"device_id": device} if args.backend == "nccl" else {}))
    return device


def _runner(engine: str):
    """The function that runs a job of `engine` in a rank: (job, group, device, backend) -> the rank's report."""
    from . import engines, tensor_parallel, timing

    return {"tp": tensor_parallel.run_tp, "collectives": timing.run_collectives}.get(engine, engines.run_training)


def _serve(args, rank: int, folder: Path) -> int:
    """Join the group, then run each jobs file in turn until `stop` (0), or --linger seconds without work (LEFT)."""
    import torch
    import torch.distributed as dist

    from . import counting

    torch.set_num_threads(1)  # the ranks share the machine's cores
    device = _join(args, rank, folder)
    counting.install()
    subgroups: dict[int, object] = {}
    write_atomic(folder / f"ready-{rank}", str(os.getpid()))
    k = 0
    idle_since = time.monotonic()
    while not (folder / "stop").exists():
        jobs_file = folder / f"jobs-{k}.json"
        if not jobs_file.exists():
            idle = time.monotonic() - idle_since
            if args.linger is not None and idle > args.linger:  # a warm group nobody used: the pool starts a fresh one
                dist.destroy_process_group()
                return LEFT
            if args.linger is None and idle > args.idle_timeout:
                raise TimeoutError(f"{args.idle_timeout:.0f} s 没有收到任务 (no jobs)")
            time.sleep(POLL_S if idle < 1 else IDLE_POLL_S)
            continue
        results = []
        for spec in json.loads(jobs_file.read_text(encoding="utf-8")):
            job = Job(**spec)
            n = job.n_ranks or args.world
            if n not in subgroups:  # new_group is collective over the whole world: every rank calls it
                subgroups[n] = None if n == args.world else dist.new_group(list(range(n)))
            results.append(_runner(job.engine)(job, subgroups[n], device, args.backend) if rank < n else None)
            dist.barrier()
        write_atomic(folder / f"result-{k}-{rank}.json", json.dumps(results))
        k += 1
        idle_since = time.monotonic()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
