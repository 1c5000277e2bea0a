"""lecture2.plots: the figures the notebooks share, drawn from data made here."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from lecture2 import plots  # noqa: E402


def _trace(kernels: bool) -> dict:
    """A tiny Chrome trace: four phases on one thread, two operators each, and optionally GPU kernels."""
    events, t = [], 1000.0
    for phase in ("data", "forward", "backward", "optimizer"):
        events.append({"ph": "X", "cat": "user_annotation", "name": phase, "ts": t, "dur": 100.0, "tid": 7})
        events.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": t + 10, "dur": 40.0, "tid": 7})
        events.append({"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": t + 60, "dur": 20.0, "tid": 7})
        events.append({"ph": "X", "cat": "cpu_op", "name": "aten::mul", "ts": t + 62, "dur": 5.0, "tid": 7})  # nested
        if kernels:
            events.append({"ph": "X", "cat": "kernel", "name": "sgemm_kernel", "ts": t + 30, "dur": 50.0, "tid": 9})
        t += 100.0
    return {"traceEvents": events}


@pytest.mark.parametrize("kernels", [False, True])
def test_step_timeline_has_a_row_per_kind_of_event(kernels):
    """Does the timeline draw phases, top-level CPU operators, and kernels when the trace has them?"""
    fig = plots.step_timeline(_trace(kernels))
    ax = fig.axes[0]
    rows = [t.get_text() for t in ax.get_yticklabels()]
    assert rows == (["GPU kernels"] if kernels else []) + ["CPU operators", "phases"]
    assert ax.get_xlim()[1] == pytest.approx(0.4 * 1.01)  # 400 µs from the first phase's start, in ms
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[:4] == ["data 0.1 ms", "forward 0.1 ms", "backward 0.1 ms", "optimizer 0.1 ms"]


def test_step_timeline_without_the_phases_says_so():
    with pytest.raises(ValueError, match="record_function"):
        plots.step_timeline({"traceEvents": []})


def test_roofline_draws_a_roof_per_dtype_and_says_how_high_the_points_reach():
    """Does the roofline draw min(peak, I·W) for each dtype, and does its title report the highest point against its
    own dtype's roof (a bf16 point is measured against the bf16 roof, not fp32's)?"""
    from lecture2 import hardware

    roofs = {torch.float32: hardware.Roof("fp32", 100.0, 10.0, "test"),
             torch.bfloat16: hardware.Roof("bf16", 400.0, 10.0, "test")}
    points = {"matmul bf16": (torch.bfloat16, [(64.0, 300.0)]), "add": (torch.float32, [(1 / 12, 0.5)])}
    fig = plots.roofline(roofs, points)
    assert fig.highest_share == 0.75 and "75% of its own roof" in fig.axes[0].get_title()
    roof_lines = [line for line in fig.axes[0].get_lines() if line.get_label().startswith("roof")]
    assert [max(line.get_ydata()) for line in roof_lines] == [100.0, 400.0]
    fig = plots.matmul_rates({(torch.float32, 64): 50.0, (torch.float32, 128): 90.0}, {torch.float32: roofs[torch.float32]},
                             references=False)
    assert [line.get_label() for line in fig.axes[0].get_lines()] == ["fp32 measured (median)", "fp32 peak here"]
    plt.close("all")
