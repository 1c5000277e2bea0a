"""lecture2.distributed and lecture2.zero: a live process group started from Python, what each rank holds,
which collectives a step issues, and that the group is gone whatever happens."""
from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from lecture2 import distributed, estimate, zero
from lecture2.distributed import DistributedError, Group, Job

# bytes per parameter of (model params, grads, optimizer states) by recipe: the course's one recipe table
RECIPE_BYTES = {key: r.parts for key, r in estimate.TRAINED_RECIPES.items()}


def predicted(n_params: int, n: int, stage: int, recipe: str) -> dict[str, int]:
    """Bytes each rank holds between steps: sharded parts ceil(N/n) elements, full parts N (n*ceil(N/n) padded)."""
    p, g, o = RECIPE_BYTES[recipe]
    s = math.ceil(n_params / n)
    full = n_params if stage == 0 else n * s
    return {"params": p * (s if stage >= 3 else full), "grads": g * (s if stage >= 2 else full),
            "optimizer": o * (s if stage >= 1 else full)}


def gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


def wait_gone(pgid: int, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if gone(pgid):
            return True
        time.sleep(0.05)
    return gone(pgid)


@pytest.fixture(scope="module")
def textbook_runs():
    """Every stage x (fp32 Adam, bf16 mixed Adam, SGD + momentum) on 2 ranks, and fp32 Adam on 3 (padding) and 4."""
    jobs = [Job("textbook", stage=s, recipe=r, n_ranks=2) for s in range(4)
            for r in ("fp32_adam", "bf16_mixed_adam", "sgd_momentum")]
    jobs += [Job("textbook", stage=s, n_ranks=n) for n in (3, 4) for s in range(4)]
    with Group(4) as group:
        return group.run(jobs)


def test_measured_bytes_equal_the_prediction(textbook_runs):
    """Does every rank hold exactly the predicted params, grads and optimizer bytes, for every stage and recipe?"""
    for result in textbook_runs:
        job = result.job
        n_params = result.ranks[0]["n_params"]
        want = predicted(n_params, result.n_ranks, job.stage, job.recipe)
        for rank, report in enumerate(result.ranks):
            got = {k: report["held"][k] for k in want}
            assert got == want, f"stage {job.stage} {job.recipe} n={result.n_ranks} rank {rank}"
            assert report["held"]["step_counters"] == 0  # lecture2.zero.Optimizer counts steps in Python


def test_the_papers_bytes_per_parameter(textbook_runs):
    """Are the lecture's 2 + 2 + 12 recipe's totals 16, 4 + 12/n, 2 + 14/n and 16/n bytes per parameter?"""
    for result in textbook_runs:
        if result.job.recipe == "bf16_mixed_adam":
            n, stage = result.n_ranks, result.job.stage
            per_param = result.held("total")[0] / result.ranks[0]["n_params"]
            assert per_param == pytest.approx([16, 4 + 12 / n, 2 + 14 / n, 16 / n][stage], rel=1e-12)


def test_collectives_per_stage(textbook_runs):
    """Does stage 0 all-reduce the gradients, 1-2 reduce-scatter them and all-gather the parameters, and 3
    all-gather twice?"""
    for result in textbook_runs:
        job, n = result.job, result.n_ranks
        p = RECIPE_BYTES[job.recipe][0]
        full = p * (result.ranks[0]["n_params"] if job.stage == 0 else n * math.ceil(result.ranks[0]["n_params"] / n))
        want = {0: {"all_reduce": {"calls": 1, "bytes": full}},
                1: {"reduce_scatter": {"calls": 1, "bytes": full}, "all_gather": {"calls": 1, "bytes": full}},
                2: {"reduce_scatter": {"calls": 1, "bytes": full}, "all_gather": {"calls": 1, "bytes": full}},
                3: {"all_gather": {"calls": 2, "bytes": 2 * full}, "reduce_scatter": {"calls": 1, "bytes": full}}}
        for rank in range(n):
            assert result.collectives(rank) == want[job.stage]


def test_every_stage_trains_the_same_model(textbook_runs):
    """Sharding changes where the bytes live, not the arithmetic: do all fp32 stages end with the same parameters?"""
    by_n = {}
    for result in textbook_runs:
        if result.job.recipe == "fp32_adam":
            by_n.setdefault(result.n_ranks, []).append(result.ranks[0]["checksum"])
    for n, sums in by_n.items():
        assert max(sums) == pytest.approx(min(sums), rel=1e-6), n


def test_gloo_sends_what_the_ring_model_says(textbook_runs):
    """On gloo, does an all-reduce of S bytes write 2(n-1)/n S bytes per rank, and an all-gather (n-1)/n S
    (/proc/self/io; a few hundred bytes of headers on top)? gloo's reduce-scatter is an all-reduce on the wire."""
    if textbook_runs[0].ranks[0]["wire_bytes"] is None:
        pytest.skip("no /proc/self/io here")
    for result in textbook_runs:
        job, n = result.job, result.n_ranks
        if job.stage not in (0, 3) or job.recipe != "fp32_adam":
            continue
        calls = result.collectives()
        ring = sum(c["bytes"] * (2 if op in ("all_reduce", "reduce_scatter") else 1) * (n - 1) / n
                   for op, c in calls.items())
        for report in result.ranks:
            assert ring <= report["wire_bytes"] <= ring + 4096 * n, (job, report["wire_bytes"], ring)


def test_zero_engine_refuses_bad_input():
    """Do an unknown stage or recipe fail with a message (no group needed to refuse)?"""
    with pytest.raises(ValueError, match="stage"):
        Job("textbook", stage=4)
    with pytest.raises(ValueError, match="recipe"):
        Job("textbook", recipe="lion")
    with pytest.raises(ValueError, match="engine"):
        Job("megatron")
    with pytest.raises(ValueError, match="textbook"):
        Job("ddp", stage=2)
    with pytest.raises(ValueError, match="block_size"):
        Job("ddp", seq=1000)
    with pytest.raises(ValueError, match="n_ranks"):
        Group(0)
    assert set(zero.RECIPES) == set(distributed.RECIPES)


def test_a_job_needing_more_ranks_than_the_group_is_refused():
    """Is a job for 3 ranks refused by a 2-rank group before anything runs?"""
    with Group(2) as group:
        with pytest.raises(ValueError, match="rank"):
            group.run([Job("textbook", n_ranks=3)])


@pytest.mark.slow
def test_torch_engines_on_a_live_group():
    """DDP holds 16N per rank; ZeroRedundancyOptimizer shards Adam's states by whole tensors (unequal); FSDP2
    holds 16N/n; DDP all-reduces once, FSDP2 all-gathers per unit (the root once) and reduce-scatters; all
    train the same parameters."""
    results = distributed.run([Job(e) for e in ("ddp", "zero_redundancy", "fsdp2", "fsdp2_keep")], n_ranks=2)
    ddp, zero1, fsdp, keep = results
    n_params = ddp.ranks[0]["n_params"]
    assert ddp.held("params") == ddp.held("grads") == [4 * n_params] * 2
    assert ddp.held("optimizer") == [8 * n_params] * 2
    assert ddp.collectives() == {"all_reduce": {"calls": 1, "bytes": 4 * n_params}}
    assert sum(zero1.held("optimizer")) == 8 * n_params and len(set(zero1.held("optimizer"))) == 2
    assert zero1.collectives()["broadcast"]["bytes"] == 4 * n_params
    assert fsdp.held("total") == [8 * n_params] * 2  # the course's GPT: every dim 0 is even, no padding
    calls = fsdp.collectives()
    assert calls["reduce_scatter"]["bytes"] == 4 * n_params
    d, layers = distributed.SMALL_GPT["d_model"], distributed.SMALL_GPT["n_layer"]
    in_blocks = layers * (12 * d * d + 2 * d)  # the units fully_shard(block) makes; the rest is the root's
    # each block gathered for forward and again for backward; the root (embeddings, norm_f) once: FSDP2 does
    # not reshard the root after forward, since backward needs it at once
    assert calls["all_gather"]["bytes"] == 4 * (2 * in_blocks + (n_params - in_blocks))
    assert keep.collectives()["all_gather"]["bytes"] == 4 * n_params
    sums = [r.ranks[0]["checksum"] for r in results]
    assert max(sums) == pytest.approx(min(sums), rel=1e-6)


@pytest.mark.slow
def test_timing_reports_step_compute_and_communication():
    """With timing, does every rank report a step, its computation alone, its collectives alone, and FLOPs?"""
    [result] = distributed.run([Job("textbook", stage=3, timing=2)], n_ranks=2)
    for report in result.ranks:
        assert report["step_s"] > 0 and report["compute_s"] > 0 and report["comm_s"] > 0
        assert report["flops"] > 0


def test_a_failing_rank_ends_the_group_with_its_traceback():
    """Does a rank that raises mid-job end every rank at once, and say which rank and why?"""
    group = Group(3)
    group.start()
    pgid = group._procs[0].pid
    start = time.monotonic()
    with pytest.raises(DistributedError, match=r"rank 1 .*planned failure on rank 1") as info:
        group.run([Job("textbook", stage=2, steps=3, fail_rank=1)])
    assert time.monotonic() - start < 20  # not the collective's own timeout
    assert "Traceback" in str(info.value)
    assert wait_gone(pgid), "ranks left running"
    group.close()  # closing again is harmless


def test_a_rank_dying_without_a_traceback_is_reported():
    """A rank that dies outright (a crash, no traceback): is it named, with its exit code, and the group ended?"""
    group = Group(2)
    group.start()
    pgid = group._procs[0].pid
    with pytest.raises(DistributedError, match="exit code 7"):
        group.run([Job("textbook", steps=3, fail_rank=1, fail_hard=True)])
    assert wait_gone(pgid)


@pytest.mark.slow
def test_a_hanging_group_times_out_and_is_killed():
    """Does a run that outlasts the timeout end with DistributedError and no process left?"""
    group = Group(2)
    group.start()
    group.timeout = 3  # for the run only: starting takes longer on a loaded machine
    pgid = group._procs[0].pid
    with pytest.raises(DistributedError, match="timed out"):
        group.run([Job("textbook", steps=1_000_000)])
    assert wait_gone(pgid)


def test_an_error_in_the_with_block_kills_the_group():
    """Does a failing cell (an exception inside `with Group(...)`) leave no process behind?"""
    with pytest.raises(KeyError):
        with Group(2) as group:
            pgid = group._procs[0].pid
            raise KeyError("a failing cell")
    assert wait_gone(pgid)


@pytest.mark.slow
def test_workers_leave_when_the_notebook_process_dies(tmp_path):
    """If the kernel is killed without closing the group, do the ranks notice and exit?"""
    script = textwrap.dedent("""
        import os, sys
        from lecture2.distributed import Group
        group = Group(2)
        group.start()
        print(group._procs[0].pid, flush=True)
        os._exit(0)  # no close: what a killed kernel does
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    pgid = int(proc.stdout.split()[0])
    assert wait_gone(pgid, seconds=10)


def _bwrap_works() -> bool:
    if not shutil.which("bwrap"):
        return False
    probe = subprocess.run(["bwrap", "--unshare-all", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                            "true"], capture_output=True)
    return probe.returncode == 0


@pytest.mark.slow
@pytest.mark.skipif(not _bwrap_works(), reason="bubblewrap is not installed or cannot create namespaces here")
def test_runs_in_the_graders_sandbox(tmp_path):
    """In bubblewrap as the grader runs a student (no network but loopback, uid nobody, read-only /, a private
    /tmp and /dev, cwd a scratch folder), does a 2-rank group run and leave nothing in cwd?"""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    scratch.chmod(0o777)
    script = ("from lecture2 import distributed as d; [r] = d.run([d.Job('textbook', stage=3)], 2); "
              "print(r.held('total'))")
    # the course and its venv may live under /tmp (a fresh clone): bound again over the private /tmp
    course = {str(Path(p).resolve()) for p in (Path(distributed.__file__).parents[1], sys.prefix, sys.base_prefix)}
    keep = [arg for path in sorted(course) if path.startswith("/tmp") for arg in ("--ro-bind", path, path)]
    proc = subprocess.run(
        ["bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--tmpfs", "/tmp", *keep, "--dev", "/dev",
         "--proc", "/proc", "--bind", str(scratch), str(scratch), "--chdir", str(scratch), "--uid", "65534",
         "--gid", "65534", "--setenv", "HOME", "/tmp", sys.executable, "-c", script],
        capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().startswith("[")
    assert proc.stderr == "", proc.stderr  # a graded cell must print nothing on stderr
    assert list(scratch.iterdir()) == []


@pytest.mark.gpu
@pytest.mark.skipif(distributed.default_backend(2) != "nccl", reason="needs 2 CUDA GPUs and NCCL")
def test_nccl_group_on_two_gpus():
    """On 2 GPUs over NCCL: the same bytes per rank as on gloo, no wire bytes, and the allocator's figure reported."""
    [ddp, stage3] = distributed.run([Job("ddp"), Job("textbook", stage=3)], n_ranks=2, backend="nccl")
    n_params = ddp.ranks[0]["n_params"]
    assert ddp.held("total") == [16 * n_params] * 2
    assert stage3.held("total") == [8 * n_params] * 2
    assert stage3.ranks[0]["wire_bytes"] is None and stage3.ranks[0]["cuda_allocated"] > 0


# --- reduce dtype, buckets, the peak during a step -----------------------------------------------------------------
PEAK_GPT = {"vocab_size": 512, "block_size": 32, "n_layer": 8, "n_head": 4, "d_model": 128}  # 1.6M parameters


@pytest.fixture(scope="module")
def engine_runs():
    """bf16 mixed Adam on 2 and 3 ranks: stages 0-3 reduced in fp32; stages 2-3 in small buckets; peaks measured."""
    jobs = {("fp32", s, n): Job("textbook", stage=s, recipe="bf16_mixed_adam", n_ranks=n, reduce_dtype="float32")
            for s in range(4) for n in (2, 3)}
    jobs.update({("bucket", s, n): Job("textbook", stage=s, recipe="fp32_adam", n_ranks=n, bucket_bytes=4096)
                 for s in (2, 3) for n in (2, 3)})
    jobs.update({("plain", s, n): Job("textbook", stage=s, recipe="fp32_adam", n_ranks=n) for s in (2, 3) for n in (2, 3)})
    jobs.update({("peak", name): Job("textbook", stage=s, recipe="bf16_mixed_adam", n_ranks=2, model=PEAK_GPT,
                                     bucket_bytes=b, peak=True)
                 for name, (s, b) in {"zero1": (1, None), "zero2-one-bucket": (2, None), "zero2": (2, 2**18)}.items()})
    with Group(3) as group:
        return dict(zip(jobs, group.run(list(jobs.values()))))


def test_fp32_reduce_sends_fp32_gradients_and_holds_the_same(engine_runs):
    """With reduce_dtype="float32", are the gradient collectives fp32 (twice the bytes), the parameter gathers still
    bf16, and the bytes held between steps those of the recipe?"""
    for s in range(4):
        for n in (2, 3):
            r = engine_runs[("fp32", s, n)]
            n_params = r.ranks[0]["n_params"]
            for rep in r.ranks:
                assert {k: rep["held"][k] for k in ("params", "grads", "optimizer")} == predicted(n_params, n, s, "bf16_mixed_adam")
            for call in r.ranks[0]["collectives"]:
                assert call["dtype"] == ("bfloat16" if call["op"] == "all_gather" else "float32"), (s, n, call)
            full = n_params if s == 0 else n * math.ceil(n_params / n)
            grads = sum(c["bytes"] for c in r.ranks[0]["collectives"] if c["op"] != "all_gather")
            assert grads == 4 * full


def test_buckets_hold_and_train_as_one_reduce_scatter(engine_runs):
    """Do stages 2-3 with 4 KiB buckets hold the same bytes as with one bucket, send the same ring bytes (a reduce of
    each rank's part of each bucket), and train the same parameters?"""
    for s in (2, 3):
        for n in (2, 3):
            bucketed, plain = engine_runs[("bucket", s, n)], engine_runs[("plain", s, n)]
            assert bucketed.held("total") == plain.held("total")
            ops = bucketed.collectives()
            assert "reduce" in ops and ops["reduce"]["calls"] > n and "reduce_scatter" not in ops
            n_params = bucketed.ranks[0]["n_params"]
            assert ops["reduce"]["bytes"] == 4 * n_params  # every gradient once; the padding is not reduced
            assert bucketed.ranks[0]["checksum"] == pytest.approx(plain.ranks[0]["checksum"], rel=1e-6)


def test_zero2_in_buckets_peaks_below_zero1(engine_runs):
    """Measured (glibc's bytes in use after every aten op), is ZeRO-2's gradient-phase peak with small buckets below
    ZeRO-1's, which holds the full gradient, while one bucket of the whole model is not?"""
    peaks = {name: engine_runs[("peak", name)].ranks[0]["peak"] for name in ("zero1", "zero2-one-bucket", "zero2")}
    if not peaks["zero1"]["phases"]:
        pytest.skip(f"no peak measurement here: {peaks['zero1']['how']}")
    grad = {k: max(v["phases"]["forward and backward"], v["phases"]["gradient reduction"]) for k, v in peaks.items()}
    assert grad["zero2"] < grad["zero1"]
    assert grad["zero2-one-bucket"] > grad["zero2"]
    n_params = engine_runs[("peak", "zero1")].ranks[0]["n_params"]
    assert peaks["zero1"]["held_before"] - peaks["zero2"]["held_before"] == 2 * n_params // 2  # the gradient shard


def test_job_refuses_options_of_other_engines():
    """Are reduce_dtype and bucket_bytes refused outside the textbook engine, an unknown reduce dtype, a collectives
    job without sizes, and sequence parallelism outside the tp engine?"""
    with pytest.raises(ValueError, match="reduce_dtype"):
        Job("ddp", reduce_dtype="float32")
    with pytest.raises(ValueError, match="reduce_dtype"):
        Job("textbook", reduce_dtype="float16")
    with pytest.raises(ValueError, match="sizes"):
        Job("collectives")
    with pytest.raises(ValueError, match="sequence_parallel"):
        Job("textbook", sequence_parallel=True)
    with pytest.raises(ValueError, match="bucket_bytes"):
        Job("textbook", stage=2, bucket_bytes=0)


def test_collectives_are_timed_by_size():
    """Does the collectives engine time each op at each size (fp32 messages divisible by the ranks), positive times?"""
    [r] = distributed.run([Job("collectives", sizes=(4096, 65536), timing=3)], n_ranks=2)
    rows = r.ranks[0]["timings"]
    assert [(row["op"], row["bytes"]) for row in rows] == [(op, b) for op in ("all_reduce", "all_gather", "reduce_scatter")
                                                           for b in (4096, 65536)]
    assert all(row["seconds"] > 0 and len(row["samples"]) == 3 for row in rows)


# --- warm groups (lecture2.distributed.pool) ------------------------------------------------------------------------
def rank_pids(group: Group) -> list[int]:
    return [int((group.folder / f"ready-{r}").read_text()) for r in range(group.n_ranks)]


def test_a_warm_group_gives_a_fresh_groups_results():
    """Is a 2-rank group reused from one use to the next (the same processes), and does a job on it report exactly
    what it reports on a fresh group, after other jobs ran there? (wire_bytes aside: bytes written, not computed)"""
    jobs = [Job("textbook", stage=s, recipe="bf16_mixed_adam", n_ranks=2, seed=s) for s in (1, 3)]
    jobs.append(Job("tp", n_ranks=2, model=dict(distributed.SMALL_GPT, n_head=4)))
    fresh = distributed.run(jobs, n_ranks=2, warm=False)
    with distributed.warm_group(2) as group:
        group.run([Job("ddp"), Job("textbook", stage=2, recipe="sgd_momentum", seed=5)])
        pids = rank_pids(group)
    with pytest.raises(KeyError):  # a failing check inside the block is no reason to end the group
        with distributed.warm_group(2) as group:
            warm = group.run(jobs)
            assert rank_pids(group) == pids
            raise KeyError("a failed check")
    for a, b in zip(fresh, warm):
        for ra, rb in zip(a.ranks, b.ranks):
            assert {k: v for k, v in ra.items() if k != "wire_bytes"} == {k: v for k, v in rb.items() if k != "wire_bytes"}
    with distributed.warm_group(2) as group:
        assert rank_pids(group) == pids


def test_a_failed_warm_group_is_not_reused():
    """After a rank of a warm group fails, is the group gone and the next use given a fresh one that works?"""
    with distributed.warm_group(2) as group:
        pgid = group._procs[0].pid
        with pytest.raises(DistributedError):
            group.run([Job("textbook", steps=3, fail_rank=1)])
    assert wait_gone(pgid)
    with distributed.warm_group(2) as group:
        assert group._procs[0].pid != pgid
        [r] = group.run([Job("textbook", stage=1)])
        assert r.held("optimizer") == [4 * r.ranks[0]["n_params"]] * 2


def test_warm_ranks_leave_by_themselves_and_stale_groups_are_replaced(monkeypatch):
    """Do lingering ranks leave quietly (exit 0, their folder gone) when no work comes, and is a pooled group idle
    for too long, or inherited from another process, not handed out?"""
    group = Group(2, linger=0.5)
    group.start()
    folder = group.folder
    deadline = time.monotonic() + 10
    while group._procs[0].poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert group._procs[0].returncode == 0 and not folder.exists() and not group.healthy()
    group.close()
    with distributed.warm_group(2) as group:
        pgid = group._procs[0].pid
        group.last_active -= distributed.pool.LINGER_S  # idle long enough that its ranks may be leaving
    with distributed.warm_group(2) as group:
        assert group._procs[0].pid != pgid
        stale = group
    assert wait_gone(pgid)
    monkeypatch.setattr(distributed.pool, "_owner", -1)  # as a forked child sees its parent's pool
    with distributed.warm_group(2) as group:
        assert group is not stale and stale.healthy()  # the parent's group is left alone
    stale.close()


@pytest.mark.filterwarnings("ignore:`torch.distributed.*` is deprecated:FutureWarning")
@pytest.mark.parametrize("new_names", [True, False], ids=["torch-2.13", "torch-2.12-and-older"])
def test_flat_collectives_run_on_torch_with_or_without_the_new_names(monkeypatch, new_names):
    """torch 2.13 added reduce_scatter_single / all_gather_single; older builds (a student's CUDA torch, the lent
    H200's 2.11) have only reduce_scatter_tensor / all_gather_into_tensor. The ZeRO engine and the timing job call
    them through lecture2.flat_collectives, which takes whichever the running torch has."""
    import torch
    import torch.distributed as dist

    from lecture2.flat_collectives import all_gather_flat, reduce_scatter_flat

    if not new_names:  # torch.distributed as 2.12 shows it (2.13's deprecated names still call the new ones inside)
        monkeypatch.delattr(dist, "reduce_scatter_single", raising=False)
        monkeypatch.delattr(dist, "all_gather_single", raising=False)
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        out = torch.empty(4)
        reduce_scatter_flat(out, torch.arange(4.0))
        gathered = torch.empty(4)
        all_gather_flat(gathered, out)
    finally:
        dist.destroy_process_group()
    assert gathered.tolist() == [0.0, 1.0, 2.0, 3.0]
