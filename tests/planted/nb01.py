from lecture2.checks import HINTS

from . import Planted

NOTEBOOK = "01_tensors_dtypes.ipynb"

MISTAKES = [
    Planted("ex01_tensor_bytes", "bits instead of bytes", '''
def tensor_bytes(shape, dtype):
    return math.prod(shape) * torch.finfo(dtype).bits if dtype.is_floating_point else math.prod(shape) * dtype.itemsize * 8
''', HINTS["bits_for_bytes"], visible=True),
    Planted("ex01_tensor_bytes", "sum of the shape instead of its product", '''
def tensor_bytes(shape, dtype):
    return sum(shape) * dtype.itemsize
''', HINTS["numel"], visible=True),
    Planted("ex01_tensor_bytes", "every dtype taken as 4 bytes", '''
def tensor_bytes(shape, dtype):
    return math.prod(shape) * 4
''', HINTS["element_size"], visible=True),
    Planted("ex01_tensor_bytes", "a tensor instead of an int", '''
def tensor_bytes(shape, dtype):
    return torch.tensor(shape).prod() * dtype.itemsize
''', HINTS["returns_int"], visible=True),
    Planted("ex01_tensor_bytes", "a product that fails on the scalar shape ()", '''
import functools, operator
def tensor_bytes(shape, dtype):
    return functools.reduce(operator.mul, shape) * dtype.itemsize
''', HINTS["shape_scalar"], visible=True),
    Planted("ex01_tensor_bytes", "the tensor allocated to read its nbytes", '''
def tensor_bytes(shape, dtype):
    return torch.empty(shape, dtype=dtype).nbytes
''', HINTS["tensor_allocated"], visible=True),
    Planted("ex01_float_format", "eps as half the spacing", '''
def float_format_limits(e, m):
    bias = 2 ** (e - 1) - 1
    return {"max": (2 - 2.0 ** -m) * 2.0 ** bias, "tiny": 2.0 ** (1 - bias), "eps": 2.0 ** -(m + 1)}
''', HINTS["eps_half"], visible=True),
    Planted("ex01_float_format", "bias of 2**(e-1)", '''
def float_format_limits(e, m):
    bias = 2 ** (e - 1)
    return {"max": (2 - 2.0 ** -m) * 2.0 ** bias, "tiny": 2.0 ** (1 - bias), "eps": 2.0 ** -m}
''', HINTS["bias_off_by_one"], visible=True),
    Planted("ex01_float_format", "max without the mantissa", '''
def float_format_limits(e, m):
    bias = 2 ** (e - 1) - 1
    return {"max": 2.0 ** bias, "tiny": 2.0 ** (1 - bias), "eps": 2.0 ** -m}
''', HINTS["mantissa_max"], visible=True),
    Planted("ex01_float_format", "smallest subnormal for tiny", '''
def float_format_limits(e, m):
    bias = 2 ** (e - 1) - 1
    return {"max": (2 - 2.0 ** -m) * 2.0 ** bias, "tiny": 2.0 ** (1 - bias - m), "eps": 2.0 ** -m}
''', HINTS["subnormal"], visible=True),
    Planted("ex01_float_format", "a table of the known dtypes, float32 for the rest", '''
def float_format_limits(e, m):
    table = {(5, 10): torch.float16, (8, 7): torch.bfloat16, (8, 23): torch.float32, (11, 52): torch.float64,
             (5, 2): torch.float8_e5m2, (4, 3): torch.float8_e4m3fn}
    fi = torch.finfo(table.get((e, m), torch.float32))
    return {"max": fi.max, "tiny": fi.tiny, "eps": fi.eps}
''', HINTS["format_from_table"], visible=True),
    Planted("ex01_float_format", "a table of the known dtypes, nothing for the rest", '''
def float_format_limits(e, m):
    table = {(5, 10): torch.float16, (8, 7): torch.bfloat16, (8, 23): torch.float32, (11, 52): torch.float64,
             (5, 2): torch.float8_e5m2, (4, 3): torch.float8_e4m3fn}
    fi = torch.finfo(table[(e, m)])
    return {"max": fi.max, "tiny": fi.tiny, "eps": fi.eps}
''', HINTS["format_from_table"], visible=True),
    Planted("ex01_float_format", "E4M3 with e4m3fn's top exponent (max 448)", '''
def float_format_limits(e, m):
    bias = 2 ** (e - 1) - 1
    top = 2 ** e - 1 - bias if (e, m) == (4, 3) else bias   # the exponent 1111 used for numbers, as in e4m3fn
    mant = 2 - 2.0 ** -(m - 1) if (e, m) == (4, 3) else 2 - 2.0 ** -m
    return {"max": mant * 2.0 ** top, "tiny": 2.0 ** (1 - bias), "eps": 2.0 ** -m}
''', HINTS["e4m3fn_max"]),
]
