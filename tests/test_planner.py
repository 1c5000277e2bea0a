"""lecture2.planner: a run laid out as TP x PP x DP — memory per GPU, communication by kind, step time, search."""
from dataclasses import replace

import pytest

from lecture2 import estimate, hardware, network, planner

SEVEN = planner.model("lecture-7b")
RUN = planner.Run(gpus=256)


def test_stage_layers_split_evenly_or_as_llama3():
    """Are layers split as evenly as possible, and with one fewer on the first and last stage as Llama 3 does?"""
    assert planner.stage_layers(32, 4) == [8, 8, 8, 8]
    assert planner.stage_layers(126, 16, 1) == [7] + [8] * 14 + [7]
    assert sum(planner.stage_layers(10, 3)) == 10 and max(planner.stage_layers(10, 3)) == 4
    assert planner.stage_layers(32, 1) == [32]


def test_1f1b_keeps_p_minus_stage_micro_batches():
    """Under 1F1B does stage s keep p - s micro-batches in flight (never more than m), and the interleaved schedule
    2(p - s - 1) + (v - 1)p + 1 chunks of layers / v (Megatron's warm-up)?"""
    assert planner.in_flight_layers(8, 0, 4, 16) == 4 * 8
    assert planner.in_flight_layers(8, 3, 4, 16) == 8
    assert planner.in_flight_layers(8, 0, 4, 2) == 2 * 8
    assert planner.in_flight_layers(8, 0, 4, 16, virtual=2) == (2 * 3 + 4 + 1) * 4


def test_zero_stages_divide_the_parts_of_the_recipe():
    """Per GPU, do ZeRO 0-3 divide nothing, the optimizer, + gradients, + weights by the DP size (7B, 16 B/param)?"""
    parts = {z: planner.plan(SEVEN, RUN, planner.Layout(zero=z)).memory for z in range(4)}
    n = SEVEN.n_params
    assert parts[0]["weights"] == pytest.approx(2 * n) and parts[0]["optimizer"] == pytest.approx(12 * n)
    assert parts[1]["optimizer"] == pytest.approx(12 * n / 256) and parts[1]["gradients"] == pytest.approx(2 * n)
    assert parts[2]["gradients"] == pytest.approx(2 * n / 256)
    assert parts[3]["weights"] + parts[3]["gradients"] + parts[3]["optimizer"] == pytest.approx(437.5e6)


def test_tensor_parallelism_divides_matrices_not_norms():
    """With TP t, does a GPU hold each layer's matrices / t and both norms whole (weights of ZeRO-0, one stage)?"""
    shape = planner.model("llama2-7b")
    one = planner.plan(shape, RUN, planner.Layout(tp=1, zero=0)).memory["weights"]
    eight = planner.plan(shape, RUN, planner.Layout(tp=8, zero=0)).memory["weights"]
    L, d = shape.n_layers, shape.d_model
    norms = 2 * (L * 2 * d + d)
    assert eight == pytest.approx((one - norms) / 8 + norms, rel=1e-12)


def test_tp_collectives_per_layer_as_lecture2_parallel_issues_them():
    """Are a layer's TP collectives per micro-batch 4 all-reduces of b·s·h (SP: 6 all-gathers + 4 reduce-scatters),
    +2 (or +2 +2) with full recompute?"""
    shape, run = SEVEN, planner.Run(gpus=256)
    p = planner.plan(shape, run, planner.Layout(tp=8, zero=1))
    assert p.comm["tp"]["calls"] == 4 * 32 * p.micro_batches
    s = planner.plan(shape, run, planner.Layout(tp=8, zero=1, sp=True))
    assert s.comm["tp"]["calls"] == 10 * 32 * s.micro_batches
    r = planner.plan(shape, run, planner.Layout(tp=8, zero=1, recompute="full"))
    assert r.comm["tp"]["calls"] == 6 * 32 * r.micro_batches
    S = 1 * 4096 * 4096 * 2
    assert p.comm["tp"]["bytes"] == pytest.approx(4 * 32 * p.micro_batches * network.bus_factor("all_reduce", 8) * S)


def test_zero3_gathers_every_micro_batch_and_overlap_hides_most():
    """Does ZeRO-3 send 3 passes of the layer bytes per micro-batch (gradients in fp32: 2 + 2 + 4), and does overlap
    leave exposed only part of what is on the wire, none of it hidden without overlap?"""
    p = planner.plan(SEVEN, RUN, planner.Layout(zero=3))
    assert p.comm["dp"]["calls"] == 3 * 32 * p.micro_batches
    assert 0 < p.comm["dp"]["exposed_s"] < 0.1 * p.comm["dp"]["seconds"]
    serial = planner.plan(SEVEN, replace(RUN, overlap=False), planner.Layout(zero=3))
    assert serial.comm["dp"]["exposed_s"] == pytest.approx(serial.comm["dp"]["seconds"])
    assert serial.step_s > p.step_s


def test_reduce_dtype_doubles_the_gradient_bytes():
    """Under ZeRO-1, do fp32 gradients on the wire make (4 + 2)/(2 + 2) of the bf16 reduce's DP bytes?"""
    fp32 = planner.plan(SEVEN, RUN, planner.Layout(zero=1)).comm["dp"]["bytes"]
    bf16 = planner.plan(SEVEN, replace(RUN, reduce_dtype="bf16"), planner.Layout(zero=1)).comm["dp"]["bytes"]
    assert fp32 / bf16 == pytest.approx(6 / 4)


def test_pipeline_bubble_is_p_minus_1_over_m_plus_p_minus_1():
    """Is the bubble (p - 1)/(m + p - 1) of the pipeline's time, and (p-1)/v over m + (p-1)/v interleaved?"""
    shape = planner.model("llama2-70b")
    run = planner.Run(gpus=1024)
    p = planner.plan(shape, run, planner.Layout(tp=8, pp=4, zero=1))
    pipeline = p.step_s - p.optimizer_s - (p.comm["dp"]["exposed_s"])
    assert p.bubble_s / pipeline == pytest.approx(3 / (p.micro_batches + 3), rel=1e-9)
    v = planner.plan(shape, run, planner.Layout(tp=8, pp=4, zero=1, virtual_stages=4))
    pipeline_v = v.step_s - v.optimizer_s - v.comm["dp"]["exposed_s"]
    assert v.bubble_s / pipeline_v == pytest.approx(0.75 / (v.micro_batches + 0.75), rel=1e-9)


def test_mfu_counts_the_models_flops_only():
    """Is MFU the model's 6N + 12LdT FLOPs per step over GPUs x peak x step, recomputation not counted?"""
    p = planner.plan(SEVEN, RUN, planner.Layout(zero=1))
    flops = estimate.flops_per_token(7e9, 32, 4096, 4096) * RUN.batch_tokens
    assert p.mfu == pytest.approx(flops / (256 * hardware.gpu("h100-sxm").peak_flops("bf16") * p.step_s))
    full = planner.plan(SEVEN, RUN, planner.Layout(zero=1, recompute="full"))
    assert full.model_flops_per_step == p.model_flops_per_step and full.compute_s > p.compute_s


def test_search_returns_fitting_layouts_fastest_first():
    """Does search return only layouts that fit, fastest step first?"""
    found = planner.search(SEVEN, RUN, top=5)
    assert found and all(p.fits for p in found)
    assert [p.step_s for p in found] == sorted(p.step_s for p in found)


def test_the_lectures_7b_is_compute_bound_on_eight_nics():
    """The issue's point: on DGX H100 nodes (8 NICs) the 7B's ZeRO-3 step is computation, not communication."""
    p = planner.plan(SEVEN, RUN, planner.Layout(zero=3))
    assert p.fits and p.bottleneck().startswith("compute") and p.mfu > 0.38


@pytest.mark.parametrize("layout, run", [
    (planner.Layout(tp=16), RUN),  # TP beyond a node
    (planner.Layout(tp=3), RUN),  # does not divide the heads
    (planner.Layout(pp=64), RUN),  # more stages than layers
    (planner.Layout(micro_batch=64), RUN),  # 1024 sequences cannot make DP 256 x 64
    (planner.Layout(pp=2, virtual_stages=2), planner.Run(gpus=256, batch_tokens=128 * 4096)),  # m = 1: not a multiple of p
])
def test_impossible_layouts_are_refused(layout, run):
    """Do layouts that cannot exist raise ValueError with a message (no plan of nonsense)?"""
    with pytest.raises(ValueError):
        planner.plan(SEVEN, run, layout)


@pytest.mark.parametrize("make", [
    lambda: planner.Layout(sp=True),
    lambda: planner.Layout(zero=4),
    lambda: planner.Layout(hsdp=True, zero=1),
    lambda: planner.Run(gpus=0),
    lambda: planner.Run(gpus=8, reduce_dtype="fp8"),
    lambda: planner.Run(gpus=8, batch_tokens=1000),
])
def test_bad_settings_are_refused(make):
    """Are SP without TP, an unknown ZeRO stage, HSDP without ZeRO-3, no GPUs, an unknown reduce dtype and a batch that
    is not whole sequences refused?"""
    with pytest.raises(ValueError):
        make()


def test_report_names_every_part():
    """Does the report print memory by part, communication by kind, the step's parts, MFU, days and the bottleneck?"""
    text = planner.plan(SEVEN, RUN, planner.Layout(zero=3)).report()
    for word in ("weights", "activations", "tp ", "pp ", "dp ", "MFU", "days", "beyond the matmuls"):
        assert word in text
