from lecture2.checks import HINTS
from lecture2.exercises import cost  # noqa: F401 (registers the module's own hints, cost.*, in HINTS)

from . import Planted

NOTEBOOK = "09_training_cost.ipynb"

_COST_OK = '''
def cost_per_1k_tokens(cost_usd, n_tokens):
    return cost_usd / n_tokens * 1000
'''
_TRAINING_COST_OK = '''
def training_cost(days, n_gpus, usd_per_gpu_hour):
    return days * 24 * n_gpus * usd_per_gpu_hour
'''
_GPUS_OK = '''
def gpus_needed(n_params, n_tokens, days, peak_flops, mfu):
    return math.ceil(6 * n_params * n_tokens / (peak_flops * mfu * days * 86400))
'''
_TOKENS_OK = '''
def tokens_affordable(budget_usd, n_params, peak_flops, mfu, usd_per_gpu_hour):
    return budget_usd / usd_per_gpu_hour * 3600 * peak_flops * mfu / (6 * n_params)
'''

MISTAKES = [
    Planted("ex09_training_days", "the sparse peak (2x the dense one)", '''
def training_days(n_params, n_tokens, n_gpus, peak_flops, mfu):
    sparse_peak = 2 * peak_flops  # the datasheet's headline "1979 TFLOPS"
    return 6 * n_params * n_tokens / (n_gpus * sparse_peak * mfu) / 86400
''', HINTS["sparse_peak"]),
    Planted("ex09_training_days", "2N (forward only) instead of 6N", '''
def training_days(n_params, n_tokens, n_gpus, peak_flops, mfu):
    return 2 * n_params * n_tokens / (n_gpus * peak_flops * mfu) / 86400
''', HINTS["two_n"]),
    Planted("ex09_training_days", "hours instead of days", '''
def training_days(n_params, n_tokens, n_gpus, peak_flops, mfu):
    return 6 * n_params * n_tokens / (n_gpus * peak_flops * mfu) / 3600
''', HINTS["hours_for_days"]),
    Planted("ex09_training_days", "seconds instead of days", '''
def training_days(n_params, n_tokens, n_gpus, peak_flops, mfu):
    return 6 * n_params * n_tokens / (n_gpus * peak_flops * mfu)
''', HINTS["seconds_for_days"]),
    Planted("ex09_training_days", "the GPU count forgotten", '''
def training_days(n_params, n_tokens, n_gpus, peak_flops, mfu):
    return 6 * n_params * n_tokens / (peak_flops * mfu) / 86400
''', HINTS["gpu_count"]),
    Planted("ex09_training_days", "MFU forgotten", '''
def training_days(n_params, n_tokens, n_gpus, peak_flops, mfu):
    return 6 * n_params * n_tokens / (n_gpus * peak_flops) / 86400
''', HINTS["mfu_forgotten"]),
    Planted("ex09_training_days", "a call to the course's calculator", '''
def training_days(n_params, n_tokens, n_gpus, peak_flops, mfu):
    from lecture2.estimate import training_flops, training_seconds
    return training_seconds(training_flops(n_params, n_tokens), n_gpus, peak_flops, mfu) / 86400
''', HINTS["calculator_off"]),
    Planted("ex09_training_cost", "days not turned into hours", '''
def training_cost(days, n_gpus, usd_per_gpu_hour):
    return days * n_gpus * usd_per_gpu_hour
''' + _COST_OK, HINTS["hours_for_days"]),
    Planted("ex09_training_cost", "days turned into seconds", '''
def training_cost(days, n_gpus, usd_per_gpu_hour):
    return days * 86400 * n_gpus * usd_per_gpu_hour
''' + _COST_OK, HINTS["seconds_for_hours"]),
    Planted("ex09_training_cost", "the GPU count forgotten", '''
def training_cost(days, n_gpus, usd_per_gpu_hour):
    return days * 24 * usd_per_gpu_hour
''' + _COST_OK, HINTS["gpu_count"]),
    Planted("ex09_training_cost", "cost per token, not per 1K tokens", _TRAINING_COST_OK + '''
def cost_per_1k_tokens(cost_usd, n_tokens):
    return cost_usd / n_tokens
''', HINTS["per_token"]),
    Planted("ex09_training_cost", "cost per 1M tokens, not per 1K", _TRAINING_COST_OK + '''
def cost_per_1k_tokens(cost_usd, n_tokens):
    return cost_usd / (n_tokens / 1e6)
''', HINTS["per_million"]),
    Planted("ex09_training_cost", "a call to the course's calculator", '''
def training_cost(days, n_gpus, usd_per_gpu_hour):
    from lecture2 import estimate
    return estimate.cost_usd(estimate.gpu_hours(days * 86400, n_gpus), usd_per_gpu_hour)
''' + _COST_OK, HINTS["calculator_off"]),
    Planted("ex09_inverse", "round instead of ceil", '''
def gpus_needed(n_params, n_tokens, days, peak_flops, mfu):
    return round(6 * n_params * n_tokens / (peak_flops * mfu * days * 86400))
''' + _TOKENS_OK, HINTS["ceil"]),
    Planted("ex09_inverse", "int() truncates", '''
def gpus_needed(n_params, n_tokens, days, peak_flops, mfu):
    return int(6 * n_params * n_tokens / (peak_flops * mfu * days * 86400))
''' + _TOKENS_OK, HINTS["ceil"]),
    Planted("ex09_inverse", "a float GPU count", '''
def gpus_needed(n_params, n_tokens, days, peak_flops, mfu):
    return -(-6 * n_params * n_tokens // (peak_flops * mfu * days * 86400))
''' + _TOKENS_OK, HINTS["returns_int"]),
    Planted("ex09_inverse", "the deadline in hours", '''
def gpus_needed(n_params, n_tokens, days, peak_flops, mfu):
    return math.ceil(6 * n_params * n_tokens / (peak_flops * mfu * days * 3600))
''' + _TOKENS_OK, HINTS["hours_for_days"]),
    Planted("ex09_inverse", "tokens bought with 2N per token", _GPUS_OK + '''
def tokens_affordable(budget_usd, n_params, peak_flops, mfu, usd_per_gpu_hour):
    return budget_usd / usd_per_gpu_hour * 3600 * peak_flops * mfu / (2 * n_params)
''', HINTS["two_n"]),
    Planted("ex09_inverse", "GPU-hours taken as GPU-seconds", _GPUS_OK + '''
def tokens_affordable(budget_usd, n_params, peak_flops, mfu, usd_per_gpu_hour):
    return budget_usd / usd_per_gpu_hour * peak_flops * mfu / (6 * n_params)
''', HINTS["seconds_for_hours"]),
    Planted("ex09_inverse", "tokens at the sparse peak", _GPUS_OK + '''
def tokens_affordable(budget_usd, n_params, peak_flops, mfu, usd_per_gpu_hour):
    return budget_usd / usd_per_gpu_hour * 3600 * (2 * peak_flops) * mfu / (6 * n_params)
''', HINTS["sparse_peak"]),
    Planted("ex09_inverse", "tokens without MFU", _GPUS_OK + '''
def tokens_affordable(budget_usd, n_params, peak_flops, mfu, usd_per_gpu_hour):
    return budget_usd / usd_per_gpu_hour * 3600 * peak_flops / (6 * n_params)
''', HINTS["mfu_forgotten"]),
    Planted("ex09_inverse", "a call to the course's calculator", _GPUS_OK + '''
def tokens_affordable(budget_usd, n_params, peak_flops, mfu, usd_per_gpu_hour):
    import lecture2.estimate as calc
    flops_per_token = calc.training_flops(n_params, 1)
    return budget_usd / usd_per_gpu_hour * 3600 * peak_flops * mfu / flops_per_token
''', HINTS["calculator_off"]),
]

# the judge path (lecture2.answers): usual mistakes the list above did not plant yet
MISTAKES += [
    Planted("ex09_training_days", "MFU inverted (peak / MFU)", '''
def training_days(n_params, n_tokens, n_gpus, peak_flops, mfu):
    return 6 * n_params * n_tokens / (n_gpus * peak_flops / mfu) / 86400
''', HINTS["mfu_inverted"]),
    Planted("ex09_inverse", "GPUs for a deadline without MFU", '''
def gpus_needed(n_params, n_tokens, days, peak_flops, mfu):
    return math.ceil(6 * n_params * n_tokens / (peak_flops * days * 86400))
''' + _TOKENS_OK, HINTS["mfu_forgotten"]),
]
