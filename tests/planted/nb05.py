from lecture2.checks import HINTS
from lecture2.exercises import flops  # noqa: F401 (registers the module's own hints, flops.*, in HINTS)

from . import Planted

NOTEBOOK = "05_flops.ipynb"

MISTAKES = [
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
    Planted("ex05_flops_per_token", "attention counted forward only: no usual mistake, the idea", '''
def flops_per_token(config, T, attention=True):
    d, L = config.d_model, config.n_layer
    ff = config.d_ff or 4 * d
    n = L * (4 * d * d + 2 * d * ff) + config.vocab_size * d
    return 6 * n + (4 * L * T * d if attention else 0)
''', HINTS["flops.per_token_idea"], visible=True),
]

_INTENSITY_OK = '''
def matmul_intensity(m, k, n, bytes_per_element):
    return 2 * m * k * n / (bytes_per_element * (m * k + k * n + m * n))
'''
_RIDGE_OK = '''
def ridge_tokens(d, ridge, bytes_per_element):
    b = bytes_per_element
    if ridge * b >= d:
        return None
    T = max(1, math.ceil(ridge * b * d / (2 * (d - ridge * b))))
    while T > 1 and 2 * (T - 1) * d * d / (b * (2 * (T - 1) * d + d * d)) >= ridge:
        T -= 1
    while 2 * T * d * d / (b * (2 * T * d + d * d)) < ridge:
        T += 1
    return T
'''
_RIDGE_FROM_INTENSITY = '''
def ridge_tokens(d, ridge, bytes_per_element):
    if matmul_intensity(10**12, d, d, bytes_per_element) < ridge:
        return None
    lo, hi = 1, 10**12
    while lo < hi:
        mid = (lo + hi) // 2
        if matmul_intensity(mid, d, d, bytes_per_element) >= ridge:
            hi = mid
        else:
            lo = mid + 1
    return lo
'''

MISTAKES += [
    Planted("ex05_intensity", "no 2 for the multiply-add", '''
def matmul_intensity(m, k, n, bytes_per_element):
    return m * k * n / (bytes_per_element * (m * k + k * n + m * n))
''' + _RIDGE_OK, HINTS["multiply_add"], visible=True),
    Planted("ex05_intensity", "the output never written", '''
def matmul_intensity(m, k, n, bytes_per_element):
    return 2 * m * k * n / (bytes_per_element * (m * k + k * n))
''' + _RIDGE_OK, HINTS["flops.intensity_output"], visible=True),
    Planted("ex05_intensity", "FLOPs per element, not per byte", '''
def matmul_intensity(m, k, n, bytes_per_element):
    return 2 * m * k * n / (m * k + k * n + m * n)
''' + _RIDGE_OK, HINTS["flops.intensity_per_element"], visible=True),
    Planted("ex05_intensity", "bits for bytes", '''
def matmul_intensity(m, k, n, bytes_per_element):
    return 2 * m * k * n / (8 * bytes_per_element * (m * k + k * n + m * n))
''' + _RIDGE_OK, HINTS["bits_for_bytes"], visible=True),
    Planted("ex05_intensity", "a formula no usual mistake explains: the idea", '''
def matmul_intensity(m, k, n, bytes_per_element):
    return 2 * m * k * n / (bytes_per_element * (m + k + n))
''' + _RIDGE_OK, HINTS["flops.intensity_idea"], visible=True),
    Planted("ex05_intensity", "counted with lecture2.measure, not derived", '''
def matmul_intensity(m, k, n, bytes_per_element):
    from lecture2 import measure
    dtype = {2: torch.bfloat16, 4: torch.float32, 8: torch.float64}[bytes_per_element]
    a, b = torch.empty(m, k, device="meta", dtype=dtype), torch.empty(k, n, device="meta", dtype=dtype)
    return measure.count_flops(lambda: a @ b) / (a.nbytes + b.nbytes + (a @ b).nbytes)
''' + _RIDGE_FROM_INTENSITY, HINTS["flops.measured_not_derived"], visible=True),
    Planted("ex05_intensity", "the ridge by the weights' bytes only (intensity = T)", _INTENSITY_OK + '''
def ridge_tokens(d, ridge, bytes_per_element):
    return math.ceil(ridge * bytes_per_element / 2)
''', HINTS["flops.ridge_weights_only"], visible=True),
    Planted("ex05_intensity", "the bound rounded, not rounded up", _INTENSITY_OK + '''
def ridge_tokens(d, ridge, bytes_per_element):
    b = bytes_per_element
    if ridge * b >= d:
        return None
    return round(ridge * b * d / (2 * (d - ridge * b)))
''', HINTS["flops.ridge_round"], visible=True),
    Planted("ex05_intensity", "a T returned where none reaches the ridge", _INTENSITY_OK + '''
def ridge_tokens(d, ridge, bytes_per_element):
    b = bytes_per_element
    return math.ceil(ridge * b * d / (2 * (d - ridge * b)))
''', HINTS["flops.ridge_never"], visible=True),
    Planted("ex05_intensity", "the ridge from an intensity without the factor 2", '''
def matmul_intensity(m, k, n, bytes_per_element):
    return 2 * m * k * n / (bytes_per_element * (m * k + k * n + m * n))

def ridge_tokens(d, ridge, bytes_per_element):
    b = bytes_per_element
    if 2 * ridge * b >= d:
        return None
    return math.ceil(2 * ridge * b * d / (2 * (d - 2 * ridge * b)))
''', HINTS["multiply_add"], visible=True),
    Planted("ex05_intensity", "a float T", _INTENSITY_OK + '''
def ridge_tokens(d, ridge, bytes_per_element):
    b = bytes_per_element
    if ridge * b >= d:
        return None
    return float(math.ceil(ridge * b * d / (2 * (d - ridge * b))))
''', HINTS["returns_int"], visible=True),
]
