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
        states=8, mixed=12, step="4 * n_tensors"), "SGD 没有计步器"),
    Planted("ex06_training_state", "mixed precision params counted in fp32", '''
def training_state_bytes(n_params, recipe, n_tensors=0):
    table = {"fp32_adam": (4, 4, 8), "bf16_mixed_adam": (4, 2, 12), "sgd": (4, 4, 0),
             "sgd_momentum": (4, 4, 4), "bf16_sgd": (2, 2, 0)}
    if recipe not in table:
        raise ValueError(recipe)
    p, g, o = table[recipe]
    step = 4 * n_tensors if recipe.endswith("adam") else 0
    return {"params": p * n_params, "grads": g * n_params, "optimizer": o * n_params + step}
''', "master weights，算在 'optimizer' 里"),
    Planted("ex06_training_state", "a total instead of the three parts", '''
def training_state_bytes(n_params, recipe, n_tensors=0):
    return 16 * n_params
''', "应返回 dict"),
    Planted("ex06_largest_model", "one GPU only", '''
def largest_trainable_params(n_gpus, gpu_memory_bytes, bytes_per_param):
    return int(gpu_memory_bytes // bytes_per_param)
''', "忘了乘 GPU 的数量"),
    Planted("ex06_largest_model", "bytes per parameter taken as bits", '''
def largest_trainable_params(n_gpus, gpu_memory_bytes, bytes_per_param):
    return int(n_gpus * gpu_memory_bytes // (bytes_per_param * 8))
''', HINTS["bytes_for_bits"]),
    Planted("ex06_largest_model", "rounded up", '''
def largest_trainable_params(n_gpus, gpu_memory_bytes, bytes_per_param):
    return math.ceil(n_gpus * gpu_memory_bytes / bytes_per_param)
''', "向下取整"),
    Planted("ex06_largest_model", "a float", '''
def largest_trainable_params(n_gpus, gpu_memory_bytes, bytes_per_param):
    return n_gpus * gpu_memory_bytes / bytes_per_param
''', "应返回 int"),
    Planted("ex06_activation_bytes", "the lecture's rough formula", '''
def activation_bytes_per_layer(B, T, d, n_heads, dtype_bytes=4):
    return dtype_bytes * (10 * B * T * d + B * T * T)
''', "讲义的粗略公式"),
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
''', "Flash Attention"),
    Planted("ex06_activation_bytes", "scores and softmax output both counted", '''
def activation_bytes_per_layer(B, T, d, n_heads, dtype_bytes=4):
    return 4 * (4 * B * T * d + 2 * B * T) + dtype_bytes * (14 * B * T * d + 2 * B * n_heads * T * T)
''', "同一个 storage"),
]

MISTAKES.append(Planted("ex06_training_state", "the calculator's memory table used", '''
def training_state_bytes(n_params, recipe, n_tensors=0):
    import lecture2.estimate as e
    name = {"fp32_adam": "fp32 Adam", "bf16_mixed_adam": "bf16 mixed Adam", "sgd": "fp32 SGD",
            "sgd_momentum": "fp32 SGD momentum", "bf16_sgd": "bf16 SGD"}[recipe]
    r = e.MEMORY_RECIPES[name]
    step = 4 * n_tensors if recipe.endswith("adam") else 0
    return {"params": r.weights * n_params, "grads": r.gradients * n_params, "optimizer": r.optimizer * n_params + step}
''', "KeyError"))
