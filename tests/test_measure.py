"""lecture2.measure: FLOP counts, saved bytes, peak CUDA memory and timing, on tensors made here."""
import pytest
import torch
import torch.nn.functional as F

from lecture2 import measure


def test_matmul_flops_are_2mkn():
    a, b = torch.randn(8, 16), torch.randn(16, 32)
    assert measure.count_flops(lambda: a @ b) == 2 * 8 * 16 * 32


def test_backward_of_a_matmul_is_twice_the_forward():
    """Is a linear layer's backward (grad of input and of weight) counted as 2x its forward?"""
    x = torch.randn(4, 64, requires_grad=True)
    w = torch.randn(64, 32, requires_grad=True)
    forward = measure.count_flops(lambda: x @ w)
    both = measure.count_flops(lambda: (x @ w).sum().backward())
    assert both == 3 * forward


def test_cpu_attention_is_counted():
    """Does scaled_dot_product_attention count on CPU, where PyTorch's counter alone sees 0?"""
    B, H, T, D = 2, 3, 16, 8
    q = torch.randn(B, H, T, D)
    flops = measure.flop_breakdown(lambda: F.scaled_dot_product_attention(q, q, q))
    assert sum(flops.values()) == 2 * (2 * B * H * T * T * D)  # QK^T and (attn)V


def test_causal_attention_is_counted_as_the_full_square():
    """Is a causal kernel counted like a full one (the counter's convention: 4 B H T^2 D forward), and its
    backward, which recomputes q k^T from the saved log-sum-exp, as 5 matmuls of the same size?"""
    B, H, T, D = 1, 2, 32, 8
    q = torch.randn(B, H, T, D, requires_grad=True)
    full = measure.count_flops(lambda: F.scaled_dot_product_attention(q, q, q))
    causal = measure.count_flops(lambda: F.scaled_dot_product_attention(q, q, q, is_causal=True))
    assert causal == full == 4 * B * H * T * T * D
    step = measure.count_flops(lambda: F.scaled_dot_product_attention(q, q, q, is_causal=True).sum().backward())
    assert step == full + 5 * (2 * B * H * T * T * D)


def test_saved_bytes_deduplicates_and_excludes_parameters():
    """Are parameters excluded and a storage saved twice counted once?"""
    lin = torch.nn.Linear(32, 32)
    x = torch.randn(8, 32, requires_grad=True)
    with_params = measure.saved_bytes(lambda: torch.relu(lin(x)))
    without = measure.saved_bytes(lambda: torch.relu(lin(x)), exclude=lin.parameters())
    assert without == 8 * 32 * 4 * 2  # the input x and relu's output
    assert with_params == without + 32 * 32 * 4  # the weight (saved as W.t(), same storage)
    y = torch.randn(8, 32, requires_grad=True)
    assert measure.saved_bytes(lambda: y * y) == 8 * 32 * 4  # y saved twice by mul, one storage


def test_saved_bytes_scale_with_batch():
    lin = torch.nn.Linear(16, 16)
    sizes = [measure.saved_bytes(lambda b=b: torch.tanh(lin(torch.randn(b, 16))), exclude=lin.parameters())
             for b in (4, 8, 16)]
    assert sizes[1] == 2 * sizes[0] and sizes[2] == 4 * sizes[0]


def test_bad_callables_are_refused_clearly():
    with pytest.raises(TypeError, match="callable"):
        measure.count_flops(torch.randn(3))
    with pytest.raises(TypeError, match="callable"):
        measure.saved_bytes(42)
    with pytest.raises(ValueError, match="repeat"):
        measure.benchmark(lambda: None, repeat=0)
    with pytest.raises(ValueError, match="CUDA"):
        measure.peak_memory(lambda: None, device="cpu")


def test_benchmark_times_each_repeat():
    calls = []
    timing = measure.benchmark(lambda: calls.append(1), warmup=2, repeat=5, device="cpu")
    assert len(calls) == 7 and len(timing.times) == 5
    assert timing.best <= timing.median and timing.median >= 0


@pytest.mark.gpu
def test_peak_memory_on_cuda():
    """Does peak_memory see a temporary 4 MiB tensor on CUDA?"""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    peak = measure.peak_memory(lambda: torch.empty(1024, 1024, device="cuda").sum())
    assert peak >= 4 * 2**20


def test_timing_reports_the_interquartile_spread():
    """Is Timing.spread the interquartile range over the median (0 for a single call)?"""
    assert measure.Timing((1.0, 2.0, 3.0, 4.0, 5.0)).spread == pytest.approx((4.0 - 2.0) / 3.0)
    assert measure.Timing((0.5,)).spread == 0.0


class _TwoLines(torch.nn.Module):
    """A model whose forward has one expensive line (a 256-wide matmul) and one cheap line (an add)."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(256, 256) / 16)

    def forward(self, x):
        h = x @ self.w @ self.w @ self.w  # the expensive line: three matmuls
        return h + 1.0  # the cheap line


def test_time_by_line_charges_operators_to_the_model_lines():
    """Are forward and backward operators charged to the lines of the model's own file, the costliest first?"""
    torch.manual_seed(0)
    model = _TwoLines()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(128, 256)

    def step():
        opt.zero_grad(set_to_none=True)
        model(x).sum().backward()
        opt.step()

    assert measure.model_files(model) == {__file__}  # torch's own files (Module, Linear) are not the model's
    rows = measure.time_by_line(step, model, repeat=3)
    expensive = next(r for r in rows if r.code.startswith("h = x @ self.w"))
    cheap = next(r for r in rows if r.code.startswith("return h + 1.0"))
    assert rows[0] is expensive and expensive.file == __file__
    assert expensive.forward_s > 0 and expensive.backward_s > 0  # the backward of its matmuls is charged to it too
    assert expensive.seconds > 3 * cheap.seconds and expensive.ops >= 3
    # this step function sits in the model's file too, so its own lines are charged (elsewhere: the line-0 row)
    assert next(r for r in rows if r.code == "opt.step()").ops > 0
    with pytest.raises(TypeError, match="Module"):
        measure.model_files(lambda x: x)


def test_slow_dataset_takes_its_time_and_gives_the_same_items():
    """Does each item take at least seconds_per_item, and is item i the same in every instance?"""
    import time

    data = measure.SlowDataset(6, 3, 2, seconds_per_item=0.01)
    assert len(data) == 6 and data[0][0].shape == (3,) and data[0][1].shape == (2,)
    start = time.perf_counter()
    items = [data[i] for i in range(4)]
    assert time.perf_counter() - start >= 0.04
    start = time.perf_counter()
    batch = data.__getitems__([0, 1, 2, 3])  # what a DataLoader asks for: one wait for the whole batch
    assert time.perf_counter() - start >= 0.04 and all(torch.equal(a[0], b[0]) for a, b in zip(batch, items))
    again = measure.SlowDataset(6, 3, 2, seconds_per_item=0.0)
    assert all(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) for a, b in zip(items, again))
    with pytest.raises(ValueError, match="seconds_per_item"):
        measure.SlowDataset(4, 3, 2, seconds_per_item=-1)
    with pytest.raises(ValueError, match="n_items"):
        measure.SlowDataset(0, 3, 2, seconds_per_item=0)


def test_peak_rss_is_in_bytes():
    """On Linux: is peak_rss at least the kernel's own high-water mark (VmHWM), in bytes (not KiB)?"""
    import sys

    if not sys.platform.startswith("linux"):
        pytest.skip("VmHWM is Linux's; elsewhere only the sign is checked")
    hwm_kib = int(next(line for line in open("/proc/self/status") if line.startswith("VmHWM")).split()[1])
    # ru_maxrss and VmHWM read the same counter at slightly different moments: within 5%, and both in bytes here
    assert measure.peak_rss() >= 0.95 * hwm_kib * 1024 > 10 * 2**20  # a Python with torch holds far more than 10 MiB


def test_kept_bytes_sees_what_autograd_saves_and_a_checkpoint_keeps():
    """Does kept_bytes agree with saved_bytes where autograd alone keeps things, and see a checkpoint's input?"""
    from torch.utils.checkpoint import checkpoint

    from lecture2.models import TransformerBlock

    torch.manual_seed(0)
    block = TransformerBlock(16, 2)
    x = torch.randn(2, 8, 16, requires_grad=True)
    params = list(block.parameters())
    assert measure.kept_bytes(block, x, exclude=params) == measure.saved_bytes(lambda: block(x), exclude=params)
    assert measure.kept_bytes(lambda z: checkpoint(block, z, use_reentrant=False), x, exclude=params) == x.nbytes


def test_block_saved_bytes_is_saved_bytes_of_a_fresh_block():
    """Is block_saved_bytes the bytes one block saves on an input that requires grad, linear in B?"""
    from lecture2.models import TransformerBlock

    torch.manual_seed(0)
    block = TransformerBlock(16, 2, fused_attention=True)
    x = torch.randn(1, 8, 16, requires_grad=True)
    one = measure.saved_bytes(lambda: block(x), exclude=block.parameters())
    assert measure.block_saved_bytes(1, 8, 16, 2, fused_attention=True) == one
    assert measure.block_saved_bytes(3, 8, 16, 2, fused_attention=True) == 3 * one


def test_paired_times_reports_medians_a_ratio_and_its_band():
    """Are two callables timed in pairs, the slower one's ratio above 1 and the verdict cautious?"""
    import time

    timing = measure.paired_times(lambda: None, lambda: time.sleep(0.002), repeat=5, warmup=1, device="cpu")
    assert timing.b > timing.a and timing.ratio > 1 and timing.band[0] <= timing.ratio <= timing.band[1]
    assert timing.verdict() == "slower"
    assert measure.PairedTiming(1.0, 1.0, 1.0, (0.9, 1.1)).verdict() == "unclear"
