"""lecture2.recompute: four ways to run a block for training, what each keeps and what it recomputes."""
import pytest
import torch

from lecture2 import measure, recompute
from lecture2.models import TransformerBlock


@pytest.fixture(scope="module")
def found():
    torch.manual_seed(0)
    block = TransformerBlock(32, 4)
    x = torch.randn(2, 16, 32, requires_grad=True)
    return recompute.compare(block, x), block, x


def test_the_plain_block_keeps_what_autograd_saves(found):
    """Does 'no checkpoint' keep exactly what saved_bytes counts, and recompute nothing?"""
    strategies, block, x = found
    plain = strategies["no checkpoint"]
    assert plain.kept_bytes == measure.saved_bytes(lambda: block(x), exclude=block.parameters())
    assert plain.extra_flops == 0 and plain.step_flops == measure.count_flops(lambda: block(x).square().mean().backward())


def test_each_strategy_keeps_less_and_recomputes_more(found):
    """Full checkpointing keeps the input only; the two selective policies keep less than the plain block and
    recompute only the attention core (two T x T matmuls: 4 B T^2 d FLOPs)."""
    strategies, block, x = found
    B, T, d = x.shape
    assert list(strategies) == list(recompute.STRATEGIES)
    assert strategies["full checkpoint"].kept_bytes == x.nbytes
    for name in ("keep matmuls", "recompute core"):
        assert x.nbytes < strategies[name].kept_bytes < strategies["no checkpoint"].kept_bytes
        assert strategies[name].extra_flops == 4 * B * T * T * d
    assert strategies["full checkpoint"].extra_flops > strategies["recompute core"].extra_flops


def test_compare_refuses_a_fused_block_or_an_input_without_grad():
    with pytest.raises(ValueError, match="fused_attention"):
        recompute.compare(TransformerBlock(16, 2, fused_attention=True), torch.randn(1, 4, 16, requires_grad=True))
    with pytest.raises(ValueError, match="requires_grad"):
        recompute.compare(TransformerBlock(16, 2), torch.randn(1, 4, 16))
