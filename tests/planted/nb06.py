import lecture2.exercises.memory  # noqa: F401  (registers the memory.* hints)
from lecture2.checks import HINTS

from . import Planted

NOTEBOOK = "06_memory.ipynb"


def _table(fp32_adam="(4, 4, 8)", mixed="(2, 2, 12)", sgd="(4, 4, 0)", momentum="(4, 4, 4)", bf16_sgd="(2, 2, 0)",
           known=True, extra="0"):
    lookup = "table[recipe]" if known else "table.get(recipe, (4, 4, 8))"
    check = "    if recipe not in table:\n        raise ValueError(recipe)\n" if known else ""
    return f'''
def training_state_bytes(n_params, recipe):
    table = {{"fp32_adam": {fp32_adam}, "bf16_mixed_adam": {mixed}, "sgd": {sgd}, "sgd_momentum": {momentum},
             "bf16_sgd": {bf16_sgd}}}
{check}    p, g, o = {lookup}
    return {{"params": p * n_params, "grads": g * n_params, "optimizer": o * n_params + {extra}}}
'''


MISTAKES = [
    Planted("ex06_training_state", "optimizer states forgotten", _table(fp32_adam="(4, 4, 0)", mixed="(2, 2, 0)"),
            HINTS["optimizer_states"]),
    Planted("ex06_training_state", "Adam with one moment only", _table(fp32_adam="(4, 4, 4)"),
            HINTS["memory.adam_two_states"]),
    Planted("ex06_training_state", "no fp32 master weights in mixed precision", _table(mixed="(2, 2, 8)"),
            HINTS["memory.master_missing"]),
    Planted("ex06_training_state", "a master copy for the fp32 model too", _table(fp32_adam="(4, 4, 12)"),
            HINTS["memory.master_in_fp32_model"]),
    Planted("ex06_training_state", "mixed precision params counted in fp32", _table(mixed="(4, 2, 12)"),
            HINTS["memory.params_bf16"]),
    Planted("ex06_training_state", "the 18-byte convention: resident fp32 gradients", _table(mixed="(2, 4, 12)"),
            HINTS["memory.grads_bf16"]),
    Planted("ex06_training_state", "a momentum buffer for plain SGD", _table(sgd="(4, 4, 4)"),
            HINTS["memory.sgd_no_momentum"]),
    Planted("ex06_training_state", "a master copy for pure bf16 SGD", _table(bf16_sgd="(2, 2, 4)"),
            HINTS["memory.pure_bf16_no_master"]),
    Planted("ex06_training_state", "Adam's step counters counted (as the raw measurement does)", _table(
        extra="(24 if recipe.endswith('adam') else 0)"), HINTS["memory.step_counters"]),
    Planted("ex06_training_state", "an unknown recipe counted as fp32 Adam", _table(known=False),
            HINTS["memory.recipe_unknown"]),
    Planted("ex06_training_state", "a total instead of the three parts", '''
def training_state_bytes(n_params, recipe):
    return 16 * n_params
''', HINTS["returns_dict"]),
    Planted("ex06_training_state", "the calculator's memory table used", '''
def training_state_bytes(n_params, recipe):
    import lecture2.estimate as e
    name = {"fp32_adam": "fp32 Adam", "bf16_mixed_adam": "bf16 mixed Adam", "sgd": "fp32 SGD",
            "sgd_momentum": "fp32 SGD momentum", "bf16_sgd": "bf16 SGD"}[recipe]
    r = e.MEMORY_RECIPES[name]
    return {"params": r.weights * n_params, "grads": r.gradients * n_params, "optimizer": r.optimizer * n_params}
''', HINTS["memory.calculator"]),
    Planted("ex06_training_state", "the calculator's function used for the total", '''
def training_state_bytes(n_params, recipe):
    import lecture2.estimate as e
    name = {"fp32_adam": "fp32 Adam", "bf16_mixed_adam": "bf16 mixed Adam", "sgd": "fp32 SGD",
            "sgd_momentum": "fp32 SGD momentum", "bf16_sgd": "bf16 SGD"}[recipe]
    p, g = {"fp32_adam": (4, 4), "bf16_mixed_adam": (2, 2), "sgd": (4, 4), "sgd_momentum": (4, 4), "bf16_sgd": (2, 2)}[recipe]
    total = int(e.training_memory_bytes(n_params, name))
    return {"params": p * n_params, "grads": g * n_params, "optimizer": total - (p + g) * n_params}
''', HINTS["memory.calculator"]),
]


def _activations(norms="2 * (d * dtype_bytes + 4)", qkv="3 * d", out="d", ffn="8 * d", square="B * n_heads * T * T",
                 lse="B * n_heads * T * 4", extra="0"):
    """An answer built from its parts; the defaults are the accounting's (per token unless it says B or T)."""
    return f'''
def activation_bytes_per_layer(B, T, d, n_heads, dtype_bytes=4, fused_attention=False):
    tokens = B * T
    norms = tokens * ({norms})                                    # two RMSNorms: x and rstd
    linear_inputs = tokens * (2 * d + {qkv} + {out} + {ffn}) * dtype_bytes  # norm outputs, q k v, attention out, FFN
    attention = ({lse}) if fused_attention else ({square}) * dtype_bytes
    return norms + linear_inputs + attention + ({extra})
'''


MISTAKES += [
    Planted("ex06_activation_bytes", "the lecture's rough formula", '''
def activation_bytes_per_layer(B, T, d, n_heads, dtype_bytes=4, fused_attention=False):
    return dtype_bytes * (10 * B * T * d + B * T * T)
''', HINTS["memory.rough_formula"]),
    Planted("ex06_activation_bytes", "one attention matrix for all heads", _activations(square="B * T * T"),
            HINTS["attention_per_head"]),
    Planted("ex06_activation_bytes", "no attention matrix (as if fused)", _activations(square="0"),
            HINTS["memory.no_attention_matrix"]),
    Planted("ex06_activation_bytes", "scores and softmax output both counted", _activations(
        square="2 * B * n_heads * T * T"), HINTS["memory.attention_matrix_once"]),
    Planted("ex06_activation_bytes", "both RMSNorm rstd tensors left out", _activations(norms="2 * d * dtype_bytes"),
            HINTS["memory.rstd"]),
    Planted("ex06_activation_bytes", "rstd in the model dtype", _activations(norms="2 * (d + 1) * dtype_bytes"),
            HINTS["memory.rstd_fp32"]),
    Planted("ex06_activation_bytes", "the norms' inputs left out (outputs only)", _activations(norms="2 * 4"),
            HINTS["memory.norm_input"]),
    Planted("ex06_activation_bytes", "one (B, T, 4d) in the FFN", _activations(ffn="4 * d"), HINTS["memory.gelu_input"]),
    Planted("ex06_activation_bytes", "the block's output counted", _activations(extra="B * T * d * dtype_bytes"),
            HINTS["memory.counted_twice"]),
    Planted("ex06_activation_bytes", "the attention output and proj's input counted apart", _activations(out="2 * d"),
            HINTS["memory.counted_twice"]),
    Planted("ex06_activation_bytes", "what PyTorch's CPU RMSNorm keeps (x, x*rstd in fp32)", _activations(
        norms="2 * (2 * d * 4 + 4)"), HINTS["memory.kernel_extra"]),
    Planted("ex06_activation_bytes", "fused: the T^2 term kept", _activations(lse="B * n_heads * T * T * dtype_bytes"),
            HINTS["memory.flash_no_square"]),
    Planted("ex06_activation_bytes", "fused: the log-sum-exp forgotten", _activations(lse="0"),
            HINTS["memory.flash_logsumexp"]),
    Planted("ex06_activation_bytes", "fused: one log-sum-exp per token, not per head", _activations(lse="B * T * 4"),
            HINTS["memory.flash_logsumexp_heads"]),
    Planted("ex06_activation_bytes", "fused: the log-sum-exp in the model dtype", _activations(
        lse="B * n_heads * T * dtype_bytes"), HINTS["memory.rstd_fp32"]),
    Planted("ex06_activation_bytes", "the calculator's activation count used", _activations().replace(
        "    tokens = B * T\n", "    tokens = B * T\n    import lecture2.estimate as e\n"
        "    if fused_attention:\n        return int(e.activation_bytes_per_layer(T, B, d, n_heads, dtype_bytes=dtype_bytes))\n"),
        HINTS["calculator_off"]),
]
