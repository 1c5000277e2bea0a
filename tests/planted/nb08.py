from lecture2.checks import HINTS
from lecture2.exercises import timing  # noqa: F401 (registers the module's own hints, timing.*, in HINTS)

from . import Planted

NOTEBOOK = "08_mfu_timing.ipynb"

# my_benchmark: the summary, the warm-up, the clock, the synchronize (issue 17: the clock is logged too, and calls
# are counted exactly)
MISTAKES = [
    Planted("ex08_my_benchmark", "the mean instead of the median", '''
def my_benchmark(fn, warmup=3, repeat=10):
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter(); fn()
        if torch.cuda.is_available(): torch.cuda.synchronize()
        ts.append(time.perf_counter() - t0)
    return sum(ts) / len(ts)
''', HINTS["timing.mean"]),
    Planted("ex08_my_benchmark", "the minimum instead of the median", '''
def my_benchmark(fn, warmup=3, repeat=10):
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter(); fn()
        if torch.cuda.is_available(): torch.cuda.synchronize()
        ts.append(time.perf_counter() - t0)
    return min(ts)
''', HINTS["timing.min"]),
    Planted("ex08_my_benchmark", "no warm-up", '''
def my_benchmark(fn, warmup=3, repeat=10):
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter(); fn()
        if torch.cuda.is_available(): torch.cuda.synchronize()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)
''', HINTS["timing.no_warmup"]),
    Planted("ex08_my_benchmark", "the warm-up calls timed too", '''
def my_benchmark(fn, warmup=3, repeat=10):
    ts = []
    for _ in range(warmup + repeat):
        t0 = time.perf_counter(); fn()
        if torch.cuda.is_available(): torch.cuda.synchronize()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)
''', HINTS["timing.warmup_timed"]),
    Planted("ex08_my_benchmark", "no synchronize before reading the clock", '''
def my_benchmark(fn, warmup=3, repeat=10):
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter(); fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)
''', HINTS["timing.no_sync"]),
    Planted("ex08_my_benchmark", "the total of the repeats", '''
def my_benchmark(fn, warmup=3, repeat=10):
    for _ in range(warmup):
        fn()
    if torch.cuda.is_available(): torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn()
        if torch.cuda.is_available(): torch.cuda.synchronize()
    return time.perf_counter() - t0
''', HINTS["timing.sum"]),
    Planted("ex08_my_benchmark", "milliseconds instead of seconds", '''
def my_benchmark(fn, warmup=3, repeat=10):
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter(); fn()
        if torch.cuda.is_available(): torch.cuda.synchronize()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)
''', HINTS["timing.ms"]),
    Planted("ex08_my_benchmark", "the course's own timer called", '''
def my_benchmark(fn, warmup=3, repeat=10):
    return float(measure.benchmark(fn, warmup=warmup, repeat=repeat).median)
''', HINTS["timing.course_timer"]),
    Planted("ex08_my_benchmark", "the clock read before synchronizing", '''
def my_benchmark(fn, warmup=3, repeat=10):
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter(); fn()
        t1 = time.perf_counter()
        if torch.cuda.is_available(): torch.cuda.synchronize()
        ts.append(t1 - t0)
    return statistics.median(ts)
''', HINTS["timing.clock_first"]),
    Planted("ex08_my_benchmark", "always at least one warm-up call (warmup=0 ignored)", '''
def my_benchmark(fn, warmup=3, repeat=10):
    for _ in range(max(warmup, 1)):
        fn()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter(); fn()
        if torch.cuda.is_available(): torch.cuda.synchronize()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)
''', HINTS["timing.call_count"]),
    Planted("ex08_my_benchmark", "time.time() instead of time.perf_counter()", '''
def my_benchmark(fn, warmup=3, repeat=10):
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(repeat):
        t0 = time.time(); fn()
        if torch.cuda.is_available(): torch.cuda.synchronize()
        ts.append(time.time() - t0)
    return statistics.median(ts)
''', HINTS["timing.clock"]),
    Planted("ex08_my_benchmark", "the whole loop timed once, divided by repeat", '''
def my_benchmark(fn, warmup=3, repeat=10):
    for _ in range(warmup):
        fn()
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn()
        if torch.cuda.is_available(): torch.cuda.synchronize()
    return (time.perf_counter() - t0) / repeat
''', HINTS["timing.mean"]),
]


# mfu (issue 40: derived from a run's throughput, the formula no longer stated above the exercise)
def _mfu(per_token: str, rest: str = "per_token * tokens_per_s / peak") -> str:
    return f'''
def mfu(n_params, n_layer, d_attn, seq_len, tokens_per_s, peak):
    per_token = {per_token}
    return {rest}
'''


_RIGHT = "6 * n_params + 12 * n_layer * d_attn * seq_len"
MISTAKES += [
    Planted("ex08_mfu", "the forward pass only (2N + 4LdT)", _mfu("2 * n_params + 4 * n_layer * d_attn * seq_len"),
            HINTS["forward_only"]),
    Planted("ex08_mfu", "the multiply-add counted once (3N + 6LdT)", _mfu("3 * n_params + 6 * n_layer * d_attn * seq_len"),
            HINTS["multiply_add"]),
    Planted("ex08_mfu", "no attention term (6N)", _mfu("6 * n_params"), HINTS["timing.no_attention"]),
    Planted("ex08_mfu", "the attention term forward only (6N + 4LdT)", _mfu("6 * n_params + 4 * n_layer * d_attn * seq_len"),
            HINTS["timing.attention_forward"]),
    Planted("ex08_mfu", "FLOPs per sequence instead of per token", _mfu(f"({_RIGHT}) * seq_len"), HINTS["timing.per_sequence"]),
    Planted("ex08_mfu", "MFU as a percentage", _mfu(_RIGHT, "100 * per_token * tokens_per_s / peak"), HINTS["timing.percent"]),
    Planted("ex08_mfu", "the peak taken in TFLOP/s", _mfu(_RIGHT, "per_token * tokens_per_s / (peak / 1e12)"),
            HINTS["timing.tflops"]),
    Planted("ex08_mfu", "MFU inverted (peak / achieved)", _mfu(_RIGHT, "peak / (per_token * tokens_per_s)"),
            HINTS["timing.inverted"]),
    Planted("ex08_mfu", "tokens/s forgotten", _mfu(_RIGHT, "per_token / peak"), HINTS["timing.throughput"]),
    Planted("ex08_mfu", "the parameters counted without the attention or the 6 (a guess: 2N)", _mfu("2 * n_params"),
            HINTS["timing.mfu_idea"]),
    Planted("ex08_mfu", "the calculator's formula instead of one's own", '''
def mfu(n_params, n_layer, d_attn, seq_len, tokens_per_s, peak):
    from lecture2 import estimate
    return float(estimate.flops_per_token(n_params, n_layer, d_attn, seq_len)) * tokens_per_s / peak
''', HINTS["calculator_off"]),
]
