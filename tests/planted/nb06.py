import lecture2.exercises.memory  # noqa: F401  (registers the memory.* hints)
from lecture2.checks import HINTS

from . import Planted

NOTEBOOK = "06_memory.ipynb"

def _adam_table(states, mixed, step):
    return _TEMPLATE.replace("STATES", str(states)).replace("MIXED", str(mixed)).replace("STEP", step)


_TEMPLATE = '''
def training_state_bytes(n_params, recipe, n_tensors=0):
    table = {"fp32_adam": (4, 4, STATES), "bf16_mixed_adam": (2, 2, MIXED), "sgd": (4, 4, 0),
             "sgd_momentum": (4, 4, 4), "bf16_sgd": (2, 2, 0)}
    if recipe not in table:
        raise ValueError(recipe)
    p, g, o = table[recipe]
    return {"params": p * n_params, "grads": g * n_params, "optimizer": o * n_params + STEP}
'''

MISTAKES = [
    Planted("ex06_training_state", "optimizer states forgotten", _adam_table(
        states=0, mixed=0, step="0"), HINTS["optimizer_states"]),
    Planted("ex06_training_state", "Adam's step counter forgotten", _adam_table(
        states=8, mixed=12, step="0"), HINTS["adam_step"]),
    Planted("ex06_training_state", "no fp32 master weights in mixed precision", _adam_table(
        states=8, mixed=8, step="(4 * n_tensors if recipe.endswith('adam') else 0)"), HINTS["master_weights_state"]),
    Planted("ex06_training_state", "step counter for SGD too", _adam_table(
        states=8, mixed=12, step="4 * n_tensors"), HINTS["memory.sgd_no_step"]),
    Planted("ex06_training_state", "mixed precision params counted in fp32", '''
def training_state_bytes(n_params, recipe, n_tensors=0):
    table = {"fp32_adam": (4, 4, 8), "bf16_mixed_adam": (4, 2, 12), "sgd": (4, 4, 0),
             "sgd_momentum": (4, 4, 4), "bf16_sgd": (2, 2, 0)}
    if recipe not in table:
        raise ValueError(recipe)
    p, g, o = table[recipe]
    step = 4 * n_tensors if recipe.endswith("adam") else 0
    return {"params": p * n_params, "grads": g * n_params, "optimizer": o * n_params + step}
''', HINTS["memory.params_bf16"]),
    Planted("ex06_training_state", "a total instead of the three parts", '''
def training_state_bytes(n_params, recipe, n_tensors=0):
    return 16 * n_params
''', HINTS["returns_dict"]),
    Planted("ex06_largest_model", "one GPU only", '''
def largest_trainable_params(n_gpus, gpu_memory_bytes, bytes_per_param):
    return int(gpu_memory_bytes // bytes_per_param)
''', HINTS["memory.one_gpu"]),
    Planted("ex06_largest_model", "bytes per parameter taken as bits", '''
def largest_trainable_params(n_gpus, gpu_memory_bytes, bytes_per_param):
    return int(n_gpus * gpu_memory_bytes // (bytes_per_param * 8))
''', HINTS["bytes_for_bits"]),
    Planted("ex06_largest_model", "rounded up", '''
def largest_trainable_params(n_gpus, gpu_memory_bytes, bytes_per_param):
    return math.ceil(n_gpus * gpu_memory_bytes / bytes_per_param)
''', HINTS["memory.floor"]),
    Planted("ex06_largest_model", "round() instead of floor", '''
def largest_trainable_params(n_gpus, gpu_memory_bytes, bytes_per_param):
    return round(n_gpus * gpu_memory_bytes / bytes_per_param)
''', HINTS["memory.floor"]),
    Planted("ex06_largest_model", "a float", '''
def largest_trainable_params(n_gpus, gpu_memory_bytes, bytes_per_param):
    return n_gpus * gpu_memory_bytes / bytes_per_param
''', HINTS["returns_int"]),
    Planted("ex06_activation_bytes", "the lecture's rough formula", '''
def activation_bytes_per_layer(B, T, d, n_heads, dtype_bytes=4):
    return dtype_bytes * (10 * B * T * d + B * T * T)
''', HINTS["memory.rough_formula"]),
    Planted("ex06_activation_bytes", "one attention matrix for all heads", '''
def activation_bytes_per_layer(B, T, d, n_heads, dtype_bytes=4):
    return 4 * (4 * B * T * d + 2 * B * T) + dtype_bytes * (14 * B * T * d + B * T * T)
''', HINTS["attention_per_head"]),
    Planted("ex06_activation_bytes", "RMSNorm counted in the model dtype", '''
def activation_bytes_per_layer(B, T, d, n_heads, dtype_bytes=4):
    return dtype_bytes * (18 * B * T * d + 2 * B * T + B * n_heads * T * T)
''', HINTS["rmsnorm_fp32"]),
    Planted("ex06_activation_bytes", "no attention matrix (as if Flash Attention)", '''
def activation_bytes_per_layer(B, T, d, n_heads, dtype_bytes=4):
    return 4 * (4 * B * T * d + 2 * B * T) + dtype_bytes * 14 * B * T * d
''', HINTS["memory.no_attention_matrix"]),
    Planted("ex06_activation_bytes", "scores and softmax output both counted", '''
def activation_bytes_per_layer(B, T, d, n_heads, dtype_bytes=4):
    return 4 * (4 * B * T * d + 2 * B * T) + dtype_bytes * (14 * B * T * d + 2 * B * n_heads * T * T)
''', HINTS["memory.attention_matrix_once"]),
    Planted("ex06_activation_bytes", "both RMSNorm rstd tensors left out", '''
def activation_bytes_per_layer(B, T, d, n_heads, dtype_bytes=4):
    return 4 * (4 * B * T * d) + dtype_bytes * (14 * B * T * d + B * n_heads * T * T)
''', HINTS["memory.rstd"]),
]

_CALCULATOR = HINTS["memory.calculator"]

MISTAKES += [
    Planted("ex06_training_state", "the calculator's memory table used", '''
def training_state_bytes(n_params, recipe, n_tensors=0):
    import lecture2.estimate as e
    name = {"fp32_adam": "fp32 Adam", "bf16_mixed_adam": "bf16 mixed Adam", "sgd": "fp32 SGD",
            "sgd_momentum": "fp32 SGD momentum", "bf16_sgd": "bf16 SGD"}[recipe]
    r = e.MEMORY_RECIPES[name]
    step = 4 * n_tensors if recipe.endswith("adam") else 0
    return {"params": r.weights * n_params, "grads": r.gradients * n_params, "optimizer": r.optimizer * n_params + step}
''', _CALCULATOR),
    Planted("ex06_training_state", "the calculator's function used for the total", '''
def training_state_bytes(n_params, recipe, n_tensors=0):
    import lecture2.estimate as e
    name = {"fp32_adam": "fp32 Adam", "bf16_mixed_adam": "bf16 mixed Adam", "sgd": "fp32 SGD",
            "sgd_momentum": "fp32 SGD momentum", "bf16_sgd": "bf16 SGD"}[recipe]
    p, g = {"fp32_adam": (4, 4), "bf16_mixed_adam": (2, 2), "sgd": (4, 4), "sgd_momentum": (4, 4), "bf16_sgd": (2, 2)}[recipe]
    total = int(e.training_memory_bytes(n_params, name))
    step = 4 * n_tensors if recipe.endswith("adam") else 0
    return {"params": p * n_params, "grads": g * n_params, "optimizer": total - (p + g) * n_params + step}
''', _CALCULATOR),
]


def _optimizer_state(adam="8 * n + 4", matrix="4 * math.prod(shape[:-2]) * (shape[-2] + shape[-1]) + 4",
                     vector="4 * n + 4", threshold="n < 4096", quantized="2 * n + 2 * 4 * -(-n // 256)",
                     maps="2 * 256 * 4", small="8 * n", known='("adam", "adafactor", "adam8bit")'):
    return f'''
def optimizer_state_bytes(shapes, optimizer):
    if optimizer not in {known}:
        raise ValueError(optimizer)
    total, quantized = 0, False
    for shape in shapes:
        n = math.prod(shape)
        if optimizer == "adam" or optimizer not in ("adafactor", "adam8bit"):
            total += {adam}
        elif optimizer == "adafactor":
            total += ({matrix}) if len(shape) >= 2 else ({vector})
        elif {threshold}:
            total += {small}
        else:
            total += {quantized}
            quantized = True
    if quantized:
        total += {maps}
    return total
'''


MISTAKES += [
    Planted("ex06_optimizer_state", "Adafactor treated as a full second moment",
            _optimizer_state(matrix="4 * n + 4"), HINTS["memory.adafactor_factored"]),
    Planted("ex06_optimizer_state", "vectors factored like matrices (first and last dim)",
            _optimizer_state(vector="4 * (shape[0] + shape[-1]) + 4"), HINTS["memory.adafactor_vector"]),
    Planted("ex06_optimizer_state", "the leading dims of a 3-D tensor ignored",
            _optimizer_state(matrix="4 * (shape[-2] + shape[-1]) + 4"), HINTS["memory.adafactor_leading_dims"]),
    Planted("ex06_optimizer_state", "Adam's step counter forgotten", _optimizer_state(adam="8 * n"), HINTS["adam_step"]),
    Planted("ex06_optimizer_state", "8-bit block scales forgotten",
            _optimizer_state(quantized="2 * n"), HINTS["memory.adam8bit_scales"]),
    Planted("ex06_optimizer_state", "one scale per tensor instead of per block",
            _optimizer_state(quantized="2 * n + 2 * 4"), HINTS["memory.adam8bit_scale_per_tensor"]),
    Planted("ex06_optimizer_state", "the quantization maps forgotten",
            _optimizer_state(maps="0"), HINTS["memory.adam8bit_maps"]),
    Planted("ex06_optimizer_state", "small tensors quantized too (min_8bit_size ignored)",
            _optimizer_state(threshold="False"), HINTS["memory.adam8bit_small_tensors"]),
]


def _flash(body):
    return f'''
def flash_activation_bytes_per_layer(B, T, d, n_heads, dtype_bytes=4):
    tokens = B * T
    norms = 2 * (2 * tokens * d + tokens) * 4
    return {body}
'''


MISTAKES += [
    Planted("ex06_flash_activation_bytes", "the T^2 term kept (the explicit block's count)",
            _flash("norms + 14 * tokens * d * dtype_bytes + B * n_heads * T * T * dtype_bytes"),
            HINTS["memory.flash_no_square"]),
    Planted("ex06_flash_activation_bytes", "the log-sum-exp forgotten",
            _flash("norms + 14 * tokens * d * dtype_bytes"), HINTS["memory.flash_logsumexp"]),
    Planted("ex06_flash_activation_bytes", "the log-sum-exp in the model dtype",
            _flash("norms + 14 * tokens * d * dtype_bytes + B * n_heads * T * dtype_bytes"), HINTS["memory.flash_logsumexp_fp32"]),
    Planted("ex06_flash_activation_bytes", "proj's input counted apart from the attention output",
            _flash("norms + 15 * tokens * d * dtype_bytes + B * n_heads * T * 4"), HINTS["memory.flash_output_shared"]),
]

# usual mistakes the checks name, planted too
MISTAKES += [
    Planted("ex06_training_state", "a momentum buffer for plain SGD", _adam_table(
        states=8, mixed=12, step="(4 * n_tensors if recipe.endswith('adam') else 0)").replace(
        '"sgd": (4, 4, 0)', '"sgd": (4, 4, 4)'), HINTS["memory.sgd_no_momentum"]),
    Planted("ex06_training_state", "the 18-byte convention: resident fp32 gradients", _adam_table(
        states=8, mixed=12, step="(4 * n_tensors if recipe.endswith('adam') else 0)").replace(
        '"bf16_mixed_adam": (2, 2, MIXED)'.replace("MIXED", "12"), '"bf16_mixed_adam": (2, 4, 12)'),
        HINTS["memory.grads_bf16"]),
    Planted("ex06_training_state", "an unknown recipe counted as fp32 Adam", '''
def training_state_bytes(n_params, recipe, n_tensors=0):
    table = {"fp32_adam": (4, 4, 8), "bf16_mixed_adam": (2, 2, 12), "sgd": (4, 4, 0),
             "sgd_momentum": (4, 4, 4), "bf16_sgd": (2, 2, 0)}
    p, g, o = table.get(recipe, (4, 4, 8))
    step = 4 * n_tensors if recipe.endswith("adam") else 0
    return {"params": p * n_params, "grads": g * n_params, "optimizer": o * n_params + step}
''', HINTS["memory.recipe_unknown"]),
    Planted("ex06_optimizer_state", "Adam with one moment only", _optimizer_state(adam="4 * n + 4"),
            HINTS["memory.adam_two_states"]),
    Planted("ex06_optimizer_state", "Adafactor counted as Adam",
            _optimizer_state(matrix="8 * n + 4", vector="8 * n + 4"), HINTS["memory.adafactor_not_adam"]),
    Planted("ex06_optimizer_state", "Adafactor's step counter forgotten",
            _optimizer_state(matrix="4 * math.prod(shape[:-2]) * (shape[-2] + shape[-1])", vector="4 * n"),
            HINTS["memory.adafactor_step"]),
    Planted("ex06_optimizer_state", "an fp32 step counter for 8-bit Adam",
            _optimizer_state(small="8 * n + 4", quantized="2 * n + 2 * 4 * -(-n // 256) + 4"),
            HINTS["memory.adam8bit_step"]),
    Planted("ex06_optimizer_state", "the quantization maps counted per tensor",
            _optimizer_state(quantized="2 * n + 2 * 4 * -(-n // 256) + 2 * 256 * 4", maps="0"),
            HINTS["memory.adam8bit_maps_shared"]),
    Planted("ex06_optimizer_state", "one byte for m and v together",
            _optimizer_state(quantized="n + 2 * 4 * -(-n // 256)"), HINTS["memory.adam8bit_two_bytes"]),
    Planted("ex06_optimizer_state", "an unknown optimizer counted as Adam",
            _optimizer_state(known='("adam", "adafactor", "adam8bit", "sgd")'), HINTS["memory.optimizer_unknown"]),
    Planted("ex06_largest_model", "bits per parameter taken as bytes", '''
def largest_trainable_params(n_gpus, gpu_memory_bytes, bytes_per_param):
    return int(n_gpus * gpu_memory_bytes * 8 // bytes_per_param)
''', HINTS["bits_for_bytes"]),
    Planted("ex06_flash_activation_bytes", "one log-sum-exp per token, not per head",
            _flash("norms + 14 * tokens * d * dtype_bytes + tokens * 4"), HINTS["memory.flash_logsumexp_heads"]),
    Planted("ex06_flash_activation_bytes", "RMSNorm counted in the model dtype",
            _flash("norms // 4 * dtype_bytes + 14 * tokens * d * dtype_bytes + B * n_heads * T * 4"),
            HINTS["rmsnorm_fp32"]),
    Planted("ex06_flash_activation_bytes", "both RMSNorm rstd tensors left out",
            _flash("norms - 2 * tokens * 4 + 14 * tokens * d * dtype_bytes + B * n_heads * T * 4"), HINTS["memory.rstd"]),
]
