from lecture2.checks import HINTS

from . import Planted

NOTEBOOK = "05_flops.ipynb"

MISTAKES = [
    Planted("ex05_matmul_flops", "no 2 for the multiply-add", '''
def matmul_flops(a_shape, b_shape):
    *ab, m, k = a_shape
    *bb, _, n = b_shape
    return math.prod(torch.broadcast_shapes(tuple(ab), tuple(bb))) * m * k * n
''', HINTS["multiply_add"], visible=True),
    Planted("ex05_matmul_flops", "mn(2k-1): k multiplies and k-1 adds", '''
def matmul_flops(a_shape, b_shape):
    *ab, m, k = a_shape
    *bb, _, n = b_shape
    return math.prod(torch.broadcast_shapes(tuple(ab), tuple(bb))) * m * n * (2 * k - 1)
''', HINTS["matmul_fma"], visible=True),
    Planted("ex05_matmul_flops", "batch dims forgotten", '''
def matmul_flops(a_shape, b_shape):
    if a_shape[-1] != b_shape[-2]:
        raise ValueError("inner dims")
    return 2 * a_shape[-2] * a_shape[-1] * b_shape[-1]
''', HINTS["matmul_batch"], visible=True),
    Planted("ex05_matmul_flops", "batch dims of the left operand only", '''
def matmul_flops(a_shape, b_shape):
    if a_shape[-1] != b_shape[-2]:
        raise ValueError("inner dims")
    return 2 * math.prod(a_shape[:-2]) * a_shape[-2] * a_shape[-1] * b_shape[-1]
''', HINTS["matmul_broadcast"], visible=True),
    Planted("ex05_matmul_flops", "batch dims of both operands multiplied", '''
def matmul_flops(a_shape, b_shape):
    if a_shape[-1] != b_shape[-2]:
        raise ValueError("inner dims")
    return 2 * math.prod(a_shape[:-2]) * math.prod(b_shape[:-2]) * a_shape[-2] * a_shape[-1] * b_shape[-1]
''', HINTS["matmul_broadcast"], visible=True),
    Planted("ex05_matmul_flops", "mismatched inner dimensions accepted", '''
def matmul_flops(a_shape, b_shape):
    *ab, m, k = a_shape
    *bb, _, n = b_shape
    return 2 * math.prod(torch.broadcast_shapes(tuple(ab), tuple(bb))) * m * k * n
''', HINTS["matmul_inner"], visible=True),
    Planted("ex05_matmul_flops", "tensors built to count their product", '''
def matmul_flops(a_shape, b_shape):
    if a_shape[-1] != b_shape[-2]:
        raise ValueError("inner dims")
    a, b = torch.empty(a_shape), torch.empty(b_shape)
    return measure.count_flops(lambda: a @ b)
''', HINTS["matmul_allocated"], visible=True),
    Planted("ex05_matmul_flops", "torch's RuntimeError instead of a ValueError", '''
def matmul_flops(a_shape, b_shape):
    a, b = torch.empty(a_shape, device="meta"), torch.empty(b_shape, device="meta")
    return measure.count_flops(lambda: a @ b)
''', HINTS["matmul_inner"], visible=True),
    Planted("ex05_block_flops", "no 2 for the multiply-add", '''
def block_flops(B, T, d):
    return {"qkv": 3 * B * T * d * d, "scores": B * T * T * d, "attn_v": B * T * T * d,
            "proj": B * T * d * d, "ffn": 8 * B * T * d * d}
''', HINTS["multiply_add"], visible=True),
    Planted("ex05_block_flops", "the lecture's (BT, d) x (d, BT) taken literally", '''
def block_flops(B, T, d):
    return {"qkv": 6 * B * T * d * d, "scores": 2 * (B * T) ** 2 * d, "attn_v": 2 * (B * T) ** 2 * d,
            "proj": 2 * B * T * d * d, "ffn": 16 * B * T * d * d}
''', HINTS["attn_bt_literal"], visible=True),
    Planted("ex05_block_flops", "one projection instead of three for QKV", '''
def block_flops(B, T, d):
    return {"qkv": 2 * B * T * d * d, "scores": 2 * B * T * T * d, "attn_v": 2 * B * T * T * d,
            "proj": 2 * B * T * d * d, "ffn": 16 * B * T * d * d}
''', HINTS["qkv_one_projection"], visible=True),
    Planted("ex05_block_flops", "one FFN matrix only", '''
def block_flops(B, T, d):
    return {"qkv": 6 * B * T * d * d, "scores": 2 * B * T * T * d, "attn_v": 2 * B * T * T * d,
            "proj": 2 * B * T * d * d, "ffn": 8 * B * T * d * d}
''', HINTS["ffn_one_matrix"], visible=True),
    Planted("ex05_block_flops", "T and d swapped in the attention scores", '''
def block_flops(B, T, d):
    return {"qkv": 6 * B * T * d * d, "scores": 2 * B * T * d * d, "attn_v": 2 * B * T * d * d,
            "proj": 2 * B * T * d * d, "ffn": 16 * B * T * d * d}
''', HINTS["scores_t_squared"], visible=True),
    Planted("ex05_block_flops", "floats instead of ints", '''
def block_flops(B, T, d):
    return {"qkv": 6.0 * B * T * d * d, "scores": 2.0 * B * T * T * d, "attn_v": 2.0 * B * T * T * d,
            "proj": 2.0 * B * T * d * d, "ffn": 16.0 * B * T * d * d}
''', HINTS["returns_int"], visible=True),
    Planted("ex05_block_flops", "keys of its own", '''
def block_flops(B, T, d):
    return {"qkv": 6 * B * T * d * d, "qk": 2 * B * T * T * d, "pv": 2 * B * T * T * d,
            "proj": 2 * B * T * d * d, "ffn": 16 * B * T * d * d}
''', "的键 (keys) 应是", visible=True),
    Planted("ex05_flops_per_token", "forward only", '''
def flops_per_token(config, T, attention=True):
    d, L = config.d_model, config.n_layer
    ff = config.d_ff or 4 * d
    n = L * (4 * d * d + 2 * d * ff) + config.vocab_size * d
    return 2 * n + (4 * L * T * d if attention else 0)
''', HINTS["forward_only"], visible=True),
    Planted("ex05_flops_per_token", "embedding tables counted in 6N", '''
def flops_per_token(config, T, attention=True):
    d, L = config.d_model, config.n_layer
    ff = config.d_ff or 4 * d
    n = L * (4 * d * d + 2 * d * ff) + config.vocab_size * d + config.block_size * d
    return 6 * n + (12 * L * T * d if attention else 0)
''', HINTS["six_n_embeddings"], visible=True),
    Planted("ex05_flops_per_token", "every parameter (embeddings, norms) counted in 6N", '''
def flops_per_token(config, T, attention=True):
    with torch.device("meta"):
        n = sum(p.numel() for p in models.GPT(config).parameters())
    d, L = config.d_model, config.n_layer
    return 6 * n + (12 * L * T * d if attention else 0)
''', HINTS["six_n_embeddings"], visible=True),
    Planted("ex05_flops_per_token", "lm_head left out", '''
def flops_per_token(config, T, attention=True):
    d, L = config.d_model, config.n_layer
    ff = config.d_ff or 4 * d
    return 6 * L * (4 * d * d + 2 * d * ff) + (12 * L * T * d if attention else 0)
''', HINTS["six_n_lm_head"], visible=True),
    Planted("ex05_flops_per_token", "attention term always left out", '''
def flops_per_token(config, T, attention=True):
    d, L = config.d_model, config.n_layer
    ff = config.d_ff or 4 * d
    return 6 * (L * (4 * d * d + 2 * d * ff) + config.vocab_size * d)
''', HINTS["attention_term"], visible=True),
    Planted("ex05_flops_per_token", "attention term per sequence (T² instead of T)", '''
def flops_per_token(config, T, attention=True):
    d, L = config.d_model, config.n_layer
    ff = config.d_ff or 4 * d
    n = L * (4 * d * d + 2 * d * ff) + config.vocab_size * d
    return 6 * n + (12 * L * T * T * d if attention else 0)
''', HINTS["attention_term"], visible=True),
    Planted("ex05_flops_per_token", "the attention flag inverted", '''
def flops_per_token(config, T, attention=True):
    d, L = config.d_model, config.n_layer
    ff = config.d_ff or 4 * d
    n = L * (4 * d * d + 2 * d * ff) + config.vocab_size * d
    return 6 * n + (0 if attention else 12 * L * T * d)
''', HINTS["attention_term"], visible=True),
    Planted("ex05_flops_per_token", "block_size instead of T", '''
def flops_per_token(config, T, attention=True):
    d, L = config.d_model, config.n_layer
    ff = config.d_ff or 4 * d
    n = L * (4 * d * d + 2 * d * ff) + config.vocab_size * d
    return 6 * n + (12 * L * config.block_size * d if attention else 0)
''', HINTS["attention_block_size"], visible=True),
    Planted("ex05_flops_per_token", "d_ff taken as 4d always", '''
def flops_per_token(config, T, attention=True):
    d, L = config.d_model, config.n_layer
    n = L * 12 * d * d + config.vocab_size * d
    return 6 * n + (12 * L * T * d if attention else 0)
''', HINTS["d_ff_per_token"], visible=True),
    Planted("ex05_flops_per_token", "the calculator's formula instead of one's own", '''
def flops_per_token(config, T, attention=True):
    from lecture2 import estimate
    d, L, V = config.d_model, config.n_layer, config.vocab_size
    d_ff = config.d_ff if config.d_ff is not None else 4 * d
    n = L * (4 * d * d + 2 * d * d_ff) + V * d
    return int(estimate.flops_per_token(n, L if attention else 0, d, T))
''', HINTS["calculator_off"]),
]
