"""lecture2.parallel on a live group: Megatron's column/row split of a TransformerBlock computes what the whole block
computes, and each rank holds, saves and all-reduces what the formulas say."""
import pytest

from lecture2 import distributed, estimate
from lecture2.distributed import Job

BLOCK = dict(distributed.SMALL_GPT, n_head=4, fused_attention=True)  # d = 32, 4 heads, d_ff = 128


@pytest.fixture(scope="module")
def tp_runs():
    jobs = {(t, sp, bias): Job("tp", n_ranks=t, model=dict(BLOCK, bias=bias), sequence_parallel=sp)
            for t in (1, 2, 4) for sp in (False, True) for bias in (False, True) if not (sp and t == 1)}
    with distributed.Group(4) as group:
        return dict(zip(jobs, group.run(list(jobs.values()))))


def test_the_split_block_computes_the_whole_one(tp_runs):
    """Are every rank's output, input gradient and weight gradients (its slices) those of the whole block?"""
    for key, r in tp_runs.items():
        for rep in r.ranks:
            assert max(rep["errors"].values()) < 1e-5, (key, rep["errors"])


def test_each_rank_holds_its_part_and_the_norms_whole(tp_runs):
    """Does a rank hold (4d² + 2 d d_ff)/t of the matrices, both norms whole, column biases /t and row biases whole?"""
    d, f = 32, 128
    for (t, sp, bias), r in tp_runs.items():
        want = (4 * d * d + 2 * d * f) // t + 2 * d + (((3 * d + f) // t + 2 * d) if bias else 0)
        assert all(rep["n_params"] == want and rep["held"]["params"] == 4 * want for rep in r.ranks), (t, sp, bias)
        assert r.ranks[0]["replicated_params"] == 2 * d + (2 * d if bias else 0)


def test_collectives_per_step(tp_runs):
    """Without SP: 4 all-reduces of the (B, T, d) activation; with SP: 6 all-gathers, 4 reduce-scatters and one
    all-reduce of the replicated weights' gradients; one rank: nothing."""
    S = 2 * 16 * 32 * 4
    for (t, sp, bias), r in tp_runs.items():
        calls = r.collectives()
        if t == 1:
            assert calls == {}
        elif sp:
            replicated = 4 * (2 * 32 + (2 * 32 if bias else 0))
            assert calls == {"all_gather": {"calls": 6, "bytes": 6 * S}, "reduce_scatter": {"calls": 4, "bytes": 4 * S},
                             "all_reduce": {"calls": 1, "bytes": replicated}}
        else:
            assert calls == {"all_reduce": {"calls": 4, "bytes": 4 * S}}


def test_saved_activations_are_notebook_06s_count_divided_by_tp(tp_runs):
    """Are the bytes autograd keeps per rank estimate.activation_bytes_per_layer(..., tp=t, sp=sp), to the byte?"""
    for (t, sp, bias), r in tp_runs.items():
        if bias:
            continue  # the course's accounting counts no biases (the models have none)
        want = estimate.activation_bytes_per_layer(16, 2, 32, 4, dtype_bytes=4, tp=t, sp=sp, norm_kernel="cpu")
        assert all(rep["saved_bytes"] == want for rep in r.ranks), (t, sp)


def test_bf16_blocks_agree_within_rounding():
    """In bf16 does the split block still agree with the whole one (within bf16's rounding)?"""
    [r] = distributed.run([Job("tp", n_ranks=2, model=BLOCK, recipe="bf16_mixed_adam")], n_ranks=2)
    assert r.ranks[0]["dtype"] == "bfloat16" and max(r.ranks[0]["errors"].values()) < 0.25


def test_tp_job_refuses_a_split_that_does_not_divide():
    with pytest.raises(ValueError, match="整除"):
        Job("tp", n_ranks=3, model=BLOCK)
    with pytest.raises(ValueError, match="seq"):
        Job("tp", n_ranks=2, model=BLOCK, seq=15, sequence_parallel=True)
