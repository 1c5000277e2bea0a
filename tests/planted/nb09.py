from lecture2.checks import HINTS
from lecture2.exercises import cost  # noqa: F401 (registers the module's own hints, cost.*, in HINTS)

from . import Planted

NOTEBOOK = "09_training_cost.ipynb"

_GPUS_OK = '''
def gpus_needed(n_params, n_tokens, days, peak_flops, mfu):
    return math.ceil(6 * n_params * n_tokens / (peak_flops * mfu * days * 86400))
'''
_TOKENS_OK = '''
def tokens_affordable(budget_usd, n_params, peak_flops, mfu, usd_per_gpu_hour):
    return budget_usd / usd_per_gpu_hour * 3600 * peak_flops * mfu / (6 * n_params)
'''

MISTAKES = [
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
    Planted("ex09_inverse", "GPUs for a deadline without MFU", '''
def gpus_needed(n_params, n_tokens, days, peak_flops, mfu):
    return math.ceil(6 * n_params * n_tokens / (peak_flops * days * 86400))
''' + _TOKENS_OK, HINTS["mfu_forgotten"]),
    Planted("ex09_inverse", "the budget's GPU-hours taken as GPU-days", _GPUS_OK + '''
def tokens_affordable(budget_usd, n_params, peak_flops, mfu, usd_per_gpu_hour):
    return budget_usd / usd_per_gpu_hour * 86400 * peak_flops * mfu / (6 * n_params)
''', HINTS["hours_for_days"]),
    Planted("ex09_inverse", "GPU-minutes: a wrong answer no usual mistake explains draws the idea", _GPUS_OK + '''
def tokens_affordable(budget_usd, n_params, peak_flops, mfu, usd_per_gpu_hour):
    return budget_usd / usd_per_gpu_hour * 60 * peak_flops * mfu / (6 * n_params)
''', HINTS["cost.tokens_idea"], visible=True),
    Planted("ex09_inverse", "GPUs from the FLOPs of one GPU-hour: no usual mistake, the idea", '''
def gpus_needed(n_params, n_tokens, days, peak_flops, mfu):
    return math.ceil(6 * n_params * n_tokens / (peak_flops * mfu * 3600))
''' + _TOKENS_OK, HINTS["cost.gpus_idea"], visible=True),
]
