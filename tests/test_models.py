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


def test_fused_attention_matches_the_explicit_one():
    """Does fused_attention=True keep the parameters and compute the same outputs and gradients?"""
    torch.manual_seed(0)
    explicit = models.TransformerBlock(32, 4)
    fused = models.TransformerBlock(32, 4, fused_attention=True)
    fused.load_state_dict(explicit.state_dict())
    assert [n for n, _ in fused.named_parameters()] == [n for n, _ in explicit.named_parameters()]
    x = torch.randn(2, 9, 32, requires_grad=True)
    out_e, out_f = explicit(x), fused(x)
    assert torch.allclose(out_e, out_f, atol=1e-5)
    g_e = torch.autograd.grad(out_e.square().sum(), [x, *explicit.parameters()])
    g_f = torch.autograd.grad(out_f.square().sum(), [x, *fused.parameters()])
    assert all(torch.allclose(a, b, atol=1e-4) for a, b in zip(g_e, g_f))


def test_fused_attention_is_causal():
    torch.manual_seed(0)
    attn = models.MultiHeadAttention(32, 4, fused=True)
    x = torch.randn(1, 8, 32)
    y = x.clone()
    y[0, 5:] += 1.0
    assert torch.allclose(attn(x)[0, :5], attn(y)[0, :5], atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("B, T, d, H", [(2, 16, 32, 4), (1, 1, 8, 2), (3, 7, 24, 3)])
def test_fused_block_saves_no_t_squared_tensor(B, T, d, H, dtype):
    """Does the fused block keep, instead of the (B, H, T, T) softmax output, one fp32 log-sum-exp per row?

    PyTorch's CPU flash kernel saves q, k, v (views of the qkv output: one storage), its output and a
    (B, H, T) fp32 logsumexp; its output is laid out (B, T, H, hd), so proj's input is the same storage.
    """
    torch.manual_seed(0)
    explicit = models.TransformerBlock(d, H).to(dtype)
    fused = models.TransformerBlock(d, H, fused_attention=True).to(dtype)
    x = torch.randn(B, T, d, dtype=dtype, requires_grad=True)
    p = x.element_size()
    kept_e = measure.saved_bytes(lambda: explicit(x), exclude=explicit.parameters())
    kept_f = measure.saved_tensors(lambda: fused(x), exclude=fused.parameters())
    assert not any(t.shape[-2:] == (T, T) and len(t.shape) == 4 and T > 1 for t in kept_f)
    lse = [t for t in kept_f if t.shape == (B, H, T)]
    assert len(lse) == 1 and lse[0].dtype == torch.float32
    assert sum(t.nbytes for t in kept_f) == kept_e - B * H * T * T * p + 4 * B * H * T


def test_fused_block_flops_are_counted_like_the_explicit_ones():
    """Does the counter see the fused kernel's forward as the explicit matmuls (the full T x T square)?"""
    B, T, d = 2, 16, 64
    block = models.TransformerBlock(d, 4, fused_attention=True)
    x = torch.randn(B, T, d)
    assert measure.count_flops(lambda: block(x)) == 24 * B * T * d * d + 4 * B * T * T * d


def test_fused_switch_reaches_gpt_and_refuses_non_bools():
    config = models.GPTConfig(vocab_size=50, block_size=8, n_layer=2, n_head=2, d_model=16, fused_attention=True)
    model = models.GPT(config)
    assert all(block.attention.fused for block in model.blocks)
    assert model(torch.randint(0, 50, (2, 8))).shape == (2, 8, 50)
    with pytest.raises(ValueError, match="bool"):
        models.MultiHeadAttention(16, 2, fused="yes")


def test_training_step_updates_the_weights_and_clears_the_gradients():
    """Does models.training_step run forward, backward and the optimizer on its batch, leaving no gradient behind,
    with the FLOPs of one forward + backward of that batch?"""
    torch.manual_seed(0)
    cfg = models.GPTConfig(vocab_size=32, block_size=8, n_layer=1, n_head=2, d_model=16)
    model = models.GPT(cfg)
    idx = torch.randint(0, 32, (2, 8))
    step = models.training_step(model, torch.optim.SGD(model.parameters(), lr=0.1), idx)
    before = model.lm_head.weight.detach().clone()
    step()
    assert not torch.equal(before, model.lm_head.weight) and all(p.grad is None for p in model.parameters())
    assert measure.count_flops(step) == measure.count_flops(lambda: model.loss(idx, idx).backward())
    with pytest.raises(TypeError, match="GPT"):
        models.training_step(models.MLP([4, 4]), torch.optim.SGD(model.parameters(), lr=0.1), idx)
