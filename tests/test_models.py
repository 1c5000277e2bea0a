"""lecture2.models: parameter counts, shapes, causality, FLOPs seen by the counter, bad configurations."""
import pytest
import torch

from lecture2 import measure, models


def test_gpt2_small_has_openais_parameter_count():
    assert sum(p.numel() for p in models.GPT(models.GPT2_SMALL).parameters()) == 124_439_808


def test_block_parameters_are_12d2_plus_norms():
    for d, h in [(64, 4), (96, 3), (128, 8)]:
        block = models.TransformerBlock(d, h)
        assert sum(p.numel() for p in block.parameters()) == 12 * d * d + 2 * d


def test_block_forward_flops_are_24btd2_plus_attention():
    """Does the counter see every matmul of the block: 24 B T d^2 + 4 B T^2 d?"""
    B, T, d = 2, 16, 64
    block = models.TransformerBlock(d, 4)
    x = torch.randn(B, T, d)
    assert measure.count_flops(lambda: block(x)) == 24 * B * T * d * d + 4 * B * T * T * d


def test_attention_is_causal():
    """Does changing a later token leave earlier outputs unchanged?"""
    torch.manual_seed(0)
    attn = models.MultiHeadAttention(32, 4)
    x = torch.randn(1, 8, 32)
    y = x.clone()
    y[0, 5:] += 1.0
    assert torch.allclose(attn(x)[0, :5], attn(y)[0, :5], atol=1e-6)


def test_gpt_shapes_and_meta_device():
    config = models.GPTConfig(vocab_size=97, block_size=16, n_layer=2, n_head=2, d_model=32)
    model = models.GPT(config)
    idx = torch.randint(0, 97, (3, 10))
    assert model(idx).shape == (3, 10, 97)
    assert model.lm_head.weight is model.tok_emb.weight
    with torch.device("meta"):
        big = models.GPT(models.GPTConfig(n_layer=32, n_head=32, d_model=4096, vocab_size=32000, block_size=4096))
    assert next(big.parameters()).device.type == "meta"


def test_mlp_layers():
    mlp = models.MLP([8, 16, 4])
    assert mlp(torch.randn(5, 8)).shape == (5, 4)
    assert [type(m).__name__ for m in mlp.layers] == ["Linear", "ReLU", "Linear"]


def test_bad_configurations_are_explained():
    with pytest.raises(ValueError, match="divisible"):
        models.TransformerBlock(100, 3)
    with pytest.raises(ValueError, match="positive int"):
        models.GPTConfig(n_layer=0)
    with pytest.raises(TypeError, match="GPTConfig"):
        models.GPT({"n_layer": 2})
    with pytest.raises(ValueError, match="block_size"):
        models.GPT(models.GPTConfig(vocab_size=10, block_size=4, n_layer=1, n_head=1, d_model=8))(torch.zeros(1, 5, dtype=torch.long))
    with pytest.raises(ValueError, match="MLP"):
        models.MLP([8])
