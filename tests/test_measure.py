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
