from lecture2.checks import HINTS

from . import Planted

NOTEBOOK = "01_tensors_dtypes.ipynb"

MISTAKES = [
    Planted("ex01_tensor_bytes", "bits instead of bytes", '''
def tensor_bytes(shape, dtype):
    return math.prod(shape) * torch.finfo(dtype).bits if dtype.is_floating_point else math.prod(shape) * dtype.itemsize * 8
''', HINTS["bits_for_bytes"]),
    Planted("ex01_tensor_bytes", "sum of the shape instead of its product", '''
def tensor_bytes(shape, dtype):
    return sum(shape) * dtype.itemsize
''', HINTS["numel"]),
    Planted("ex01_tensor_bytes", "every dtype taken as 4 bytes", '''
def tensor_bytes(shape, dtype):
    return math.prod(shape) * 4
''', HINTS["element_size"]),
    Planted("ex01_tensor_bytes", "a tensor instead of an int", '''
def tensor_bytes(shape, dtype):
    return torch.tensor(shape).prod() * dtype.itemsize
''', "应返回 int"),
    Planted("ex01_float_format", "eps as half the spacing", '''
def float_format_limits(e, m):
    bias = 2 ** (e - 1) - 1
    return {"max": (2 - 2.0 ** -m) * 2.0 ** bias, "tiny": 2.0 ** (1 - bias), "eps": 2.0 ** -(m + 1)}
''', HINTS["eps_half"]),
    Planted("ex01_float_format", "bias of 2**(e-1)", '''
def float_format_limits(e, m):
    bias = 2 ** (e - 1)
    return {"max": (2 - 2.0 ** -m) * 2.0 ** bias, "tiny": 2.0 ** (1 - bias), "eps": 2.0 ** -m}
''', HINTS["bias_off_by_one"]),
    Planted("ex01_float_format", "max without the mantissa", '''
def float_format_limits(e, m):
    bias = 2 ** (e - 1) - 1
    return {"max": 2.0 ** bias, "tiny": 2.0 ** (1 - bias), "eps": 2.0 ** -m}
''', HINTS["mantissa_max"]),
    Planted("ex01_float_format", "smallest subnormal for tiny", '''
def float_format_limits(e, m):
    bias = 2 ** (e - 1) - 1
    return {"max": (2 - 2.0 ** -m) * 2.0 ** bias, "tiny": 2.0 ** (1 - bias - m), "eps": 2.0 ** -m}
''', HINTS["subnormal"]),
    Planted("ex01_float_format", "a table of the known dtypes", '''
def float_format_limits(e, m):
    table = {(5, 10): torch.float16, (8, 7): torch.bfloat16, (8, 23): torch.float32, (11, 52): torch.float64,
             (5, 2): torch.float8_e5m2, (4, 3): torch.float8_e4m3fn}
    fi = torch.finfo(table.get((e, m), torch.float32))
    return {"max": fi.max, "tiny": fi.tiny, "eps": fi.eps}
''', "期望 (expected)"),
    Planted("ex01_weight_memory", "GiB where GB is asked", '''
def weight_memory(n_params, dtype, unit="GB"):
    return n_params * dtype.itemsize / 2**30
''', HINTS["gib_for_gb"]),
    Planted("ex01_weight_memory", "bits instead of bytes", '''
def weight_memory(n_params, dtype, unit="GB"):
    return n_params * dtype.itemsize * 8 / (1e9 if unit == "GB" else 2**30)
''', HINTS["bits_for_bytes"]),
    Planted("ex01_weight_memory", "unknown units accepted", '''
def weight_memory(n_params, dtype, unit="GB"):
    return n_params * dtype.itemsize / (2**30 if unit == "GiB" else 1e9)
''', "ValueError"),
]
