from lecture2.checks import HINTS
from lecture2.exercises import timing  # noqa: F401 (registers the module's own hints, timing.*, in HINTS)

from . import Planted

NOTEBOOK = "08_mfu_timing.ipynb"

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
    Planted("ex08_mfu", "the forward pass only (2N + 4LdT)", '''
def achieved_flops(flops, seconds):
    return flops / seconds
def training_flops_per_token(n_params, n_layer, d_attn, seq_len):
    return 2 * n_params + 4 * n_layer * d_attn * seq_len
def mfu(model_flops_per_token, tokens_per_step, step_seconds, peak):
    return model_flops_per_token * tokens_per_step / step_seconds / peak
''', HINTS["forward_only"]),
    Planted("ex08_mfu", "the multiply-add counted once (3N)", '''
def achieved_flops(flops, seconds):
    return flops / seconds
def training_flops_per_token(n_params, n_layer, d_attn, seq_len):
    return 3 * n_params + 6 * n_layer * d_attn * seq_len
def mfu(model_flops_per_token, tokens_per_step, step_seconds, peak):
    return model_flops_per_token * tokens_per_step / step_seconds / peak
''', HINTS["multiply_add"]),
    Planted("ex08_mfu", "no attention term", '''
def achieved_flops(flops, seconds):
    return flops / seconds
def training_flops_per_token(n_params, n_layer, d_attn, seq_len):
    return 6 * n_params
def mfu(model_flops_per_token, tokens_per_step, step_seconds, peak):
    return model_flops_per_token * tokens_per_step / step_seconds / peak
''', HINTS["timing.no_attention"]),
    Planted("ex08_mfu", "FLOPs per sequence instead of per token", '''
def achieved_flops(flops, seconds):
    return flops / seconds
def training_flops_per_token(n_params, n_layer, d_attn, seq_len):
    return (6 * n_params + 12 * n_layer * d_attn * seq_len) * seq_len
def mfu(model_flops_per_token, tokens_per_step, step_seconds, peak):
    return model_flops_per_token * tokens_per_step / step_seconds / peak
''', HINTS["timing.per_sequence"]),
    Planted("ex08_mfu", "MFU as a percentage", '''
def achieved_flops(flops, seconds):
    return flops / seconds
def training_flops_per_token(n_params, n_layer, d_attn, seq_len):
    return 6 * n_params + 12 * n_layer * d_attn * seq_len
def mfu(model_flops_per_token, tokens_per_step, step_seconds, peak):
    return 100 * model_flops_per_token * tokens_per_step / step_seconds / peak
''', HINTS["timing.percent"]),
    Planted("ex08_mfu", "TFLOP/s instead of FLOP/s", '''
def achieved_flops(flops, seconds):
    return flops / seconds / 1e12
def training_flops_per_token(n_params, n_layer, d_attn, seq_len):
    return 6 * n_params + 12 * n_layer * d_attn * seq_len
def mfu(model_flops_per_token, tokens_per_step, step_seconds, peak):
    return model_flops_per_token * tokens_per_step / step_seconds / peak
''', HINTS["timing.tflops"]),
    Planted("ex08_mfu", "tokens per step forgotten", '''
def achieved_flops(flops, seconds):
    return flops / seconds
def training_flops_per_token(n_params, n_layer, d_attn, seq_len):
    return 6 * n_params + 12 * n_layer * d_attn * seq_len
def mfu(model_flops_per_token, tokens_per_step, step_seconds, peak):
    return model_flops_per_token / step_seconds / peak
''', HINTS["timing.tokens_per_step"]),
    Planted("ex08_checklist", "no gradient counted as finite (all of nothing)", '''
def training_checklist(model, optimizer, loader):
    params = list(model.parameters())
    ids = {id(p) for g in optimizer.param_groups for p in g["params"]}
    return {"on_gpu": all(p.is_cuda for p in params),
            "bf16": all(p.dtype == torch.bfloat16 for p in params),
            "loader_workers": loader.num_workers > 0,
            "grad_finite": all(bool(torch.isfinite(p.grad).all()) for p in params if p.grad is not None),
            "optimizer_has_params": all(id(p) in ids for p in params if p.requires_grad)}
''', HINTS["timing.grad_finite"]),
    Planted("ex08_checklist", "only NaN, not inf", '''
def training_checklist(model, optimizer, loader):
    params = list(model.parameters())
    ids = {id(p) for g in optimizer.param_groups for p in g["params"]}
    grads = [p.grad for p in params if p.grad is not None]
    return {"on_gpu": all(p.is_cuda for p in params),
            "bf16": all(p.dtype == torch.bfloat16 for p in params),
            "loader_workers": loader.num_workers > 0,
            "grad_finite": bool(grads) and not any(bool(torch.isnan(g).any()) for g in grads),
            "optimizer_has_params": all(id(p) in ids for p in params if p.requires_grad)}
''', HINTS["timing.grad_finite"]),
    Planted("ex08_checklist", "only the first parameter's dtype", '''
def training_checklist(model, optimizer, loader):
    params = list(model.parameters())
    ids = {id(p) for g in optimizer.param_groups for p in g["params"]}
    grads = [p.grad for p in params if p.grad is not None]
    return {"on_gpu": all(p.is_cuda for p in params),
            "bf16": params[0].dtype == torch.bfloat16,
            "loader_workers": loader.num_workers > 0,
            "grad_finite": bool(grads) and all(bool(torch.isfinite(g).all()) for g in grads),
            "optimizer_has_params": all(id(p) in ids for p in params if p.requires_grad)}
''', HINTS["timing.bf16"]),
    Planted("ex08_checklist", "the optimizer compared by count", '''
def training_checklist(model, optimizer, loader):
    params = list(model.parameters())
    n_opt = sum(len(g["params"]) for g in optimizer.param_groups)
    grads = [p.grad for p in params if p.grad is not None]
    return {"on_gpu": all(p.is_cuda for p in params),
            "bf16": all(p.dtype == torch.bfloat16 for p in params),
            "loader_workers": loader.num_workers > 0,
            "grad_finite": bool(grads) and all(bool(torch.isfinite(g).all()) for g in grads),
            "optimizer_has_params": n_opt >= sum(p.requires_grad for p in params)}
''', HINTS["timing.optimizer_has_params"]),
    Planted("ex08_checklist", "a tensor instead of a bool", '''
def training_checklist(model, optimizer, loader):
    params = list(model.parameters())
    ids = {id(p) for g in optimizer.param_groups for p in g["params"]}
    grads = [p.grad for p in params if p.grad is not None]
    return {"on_gpu": all(p.is_cuda for p in params),
            "bf16": all(p.dtype == torch.bfloat16 for p in params),
            "loader_workers": loader.num_workers > 0,
            "grad_finite": torch.stack([torch.isfinite(g).all() for g in grads]).all() if grads else False,
            "optimizer_has_params": all(id(p) in ids for p in params if p.requires_grad)}
''', HINTS["returns_bool"]),
    Planted("ex08_checklist", "the machine's GPU instead of the model's device", '''
def training_checklist(model, optimizer, loader):
    params = list(model.parameters())
    ids = {id(p) for g in optimizer.param_groups for p in g["params"]}
    grads = [p.grad for p in params if p.grad is not None]
    return {"on_gpu": torch.cuda.is_available(),
            "bf16": all(p.dtype == torch.bfloat16 for p in params),
            "loader_workers": loader.num_workers > 0,
            "grad_finite": bool(grads) and all(bool(torch.isfinite(g).all()) for g in grads),
            "optimizer_has_params": all(id(p) in ids for p in params if p.requires_grad)}
''', HINTS["timing.on_gpu"]),
]

MISTAKES.append(Planted("ex08_my_benchmark", "the course's own timer called", '''
def my_benchmark(fn, warmup=3, repeat=10):
    return float(measure.benchmark(fn, warmup=warmup, repeat=repeat).median)
''', HINTS["timing.course_timer"]))

# issue 17: the synchronize check logs the clock too (call -> synchronize -> clock read), and counts exactly
MISTAKES += [
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
]

# issues 13 and 17: on a CPU grader both values of on_gpu are checked (a parameter that reports cuda:0), and an
# error raised by the answer is never swallowed
_CHECKLIST_REST = '''
    ids = {id(p) for g in optimizer.param_groups for p in g["params"]}
    grads = [p.grad for p in params if p.grad is not None]
    return {"on_gpu": on_gpu,
            "bf16": all(p.dtype == torch.bfloat16 for p in params),
            "loader_workers": loader.num_workers > 0,
            "grad_finite": bool(grads) and all(bool(torch.isfinite(g).all()) for g in grads),
            "optimizer_has_params": all(id(p) in ids for p in params if p.requires_grad)}
'''
MISTAKES += [
    Planted("ex08_checklist", "on_gpu always False (right on every CPU-only machine)", '''
def training_checklist(model, optimizer, loader):
    params = list(model.parameters())
    on_gpu = False''' + _CHECKLIST_REST, HINTS["timing.on_gpu"]),
    Planted("ex08_checklist", "only the first parameter's device", '''
def training_checklist(model, optimizer, loader):
    params = list(model.parameters())
    on_gpu = params[0].device.type == "cuda"''' + _CHECKLIST_REST, HINTS["timing.on_gpu"]),
    Planted("ex08_checklist", "the device compared with torch.device('cuda') (no index: never equal to cuda:0)", '''
def training_checklist(model, optimizer, loader):
    params = list(model.parameters())
    on_gpu = all(p.device == torch.device("cuda") for p in params)''' + _CHECKLIST_REST, HINTS["timing.on_gpu"]),
    Planted("ex08_checklist", "asks the CUDA runtime for the current device (fails where there is no GPU)", '''
def training_checklist(model, optimizer, loader):
    params = list(model.parameters())
    on_gpu = torch.cuda.is_available() and all(p.device.index == torch.cuda.current_device() for p in params)''' + _CHECKLIST_REST,
            HINTS["timing.cuda_runtime"]),
]

# issue 14: the gradient-norm report
_REPORT_NAMES = '''
    nonfinite = [n for n, p in model.named_parameters() if p.grad is not None and not bool(torch.isfinite(p.grad).all())]
'''
MISTAKES += [
    Planted("ex08_grad_norm", "per-parameter norms summed", '''
def grad_norm_report(model):''' + _REPORT_NAMES + '''
    norm = sum(float(p.grad.double().norm()) for p in model.parameters() if p.grad is not None)
    return {"global_norm": norm, "nonfinite": nonfinite}
''', HINTS["timing.sum_of_norms"]),
    Planted("ex08_grad_norm", "the square root forgotten", '''
def grad_norm_report(model):''' + _REPORT_NAMES + '''
    norm = sum(float(p.grad.double().pow(2).sum()) for p in model.parameters() if p.grad is not None)
    return {"global_norm": norm, "nonfinite": nonfinite}
''', HINTS["timing.squared"]),
    Planted("ex08_grad_norm", "None gradients counted as non-finite", '''
def grad_norm_report(model):
    norm = math.sqrt(sum(float(p.grad.double().pow(2).sum()) for p in model.parameters() if p.grad is not None))
    nonfinite = [n for n, p in model.named_parameters() if p.grad is None or not bool(torch.isfinite(p.grad).all())]
    return {"global_norm": norm, "nonfinite": nonfinite}
''', HINTS["timing.none_grads"]),
    Planted("ex08_grad_norm", "every .grad used as a tensor (fails on None)", '''
def grad_norm_report(model):
    norm = math.sqrt(sum(float(p.grad.double().pow(2).sum()) for p in model.parameters()))
    nonfinite = [n for n, p in model.named_parameters() if not bool(torch.isfinite(p.grad).all())]
    return {"global_norm": norm, "nonfinite": nonfinite}
''', HINTS["timing.none_grads"]),
    Planted("ex08_grad_norm", "non-finite gradients left out of the norm", '''
def grad_norm_report(model):''' + _REPORT_NAMES + '''
    norm = math.sqrt(sum(float(torch.nan_to_num(p.grad.double(), nan=0.0, posinf=0.0, neginf=0.0).pow(2).sum())
                         for p in model.parameters() if p.grad is not None))
    return {"global_norm": norm, "nonfinite": nonfinite}
''', HINTS["timing.skipped"]),
    Planted("ex08_grad_norm", "a 0-d tensor instead of a float", '''
def grad_norm_report(model):''' + _REPORT_NAMES + '''
    norm = torch.sqrt(sum(p.grad.double().pow(2).sum() for p in model.parameters() if p.grad is not None))
    return {"global_norm": norm, "nonfinite": nonfinite}
''', HINTS["returns_float"]),
    Planted("ex08_grad_norm", "only the first parameter checked for non-finite values", '''
def grad_norm_report(model):
    norm = math.sqrt(sum(float(p.grad.double().pow(2).sum()) for p in model.parameters() if p.grad is not None))
    name, p = next((n, p) for n, p in model.named_parameters() if p.grad is not None)
    nonfinite = [] if bool(torch.isfinite(p.grad).all()) else [name]
    return {"global_norm": norm, "nonfinite": nonfinite}
''', HINTS["timing.names"]),
]

# the judge path (lecture2.answers): usual mistakes the list above did not plant yet
_OPT_OK = '''
def achieved_flops(flops, seconds):
    return flops / seconds
def training_flops_per_token(n_params, n_layer, d_attn, seq_len):
    return 6 * n_params + 12 * n_layer * d_attn * seq_len
def mfu(model_flops_per_token, tokens_per_step, step_seconds, peak):
    return model_flops_per_token * tokens_per_step / step_seconds / peak
'''
MISTAKES += [
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
    Planted("ex08_mfu", "the attention term forward only (6N + 4LdT)", '''
def achieved_flops(flops, seconds):
    return flops / seconds
def training_flops_per_token(n_params, n_layer, d_attn, seq_len):
    return 6 * n_params + 4 * n_layer * d_attn * seq_len
def mfu(model_flops_per_token, tokens_per_step, step_seconds, peak):
    return model_flops_per_token * tokens_per_step / step_seconds / peak
''', HINTS["timing.attention_forward"]),
    Planted("ex08_mfu", "the multiply-add's 2 applied again to FLOPs", '''
def achieved_flops(flops, seconds):
    return 2 * flops / seconds
def training_flops_per_token(n_params, n_layer, d_attn, seq_len):
    return 6 * n_params + 12 * n_layer * d_attn * seq_len
def mfu(model_flops_per_token, tokens_per_step, step_seconds, peak):
    return model_flops_per_token * tokens_per_step / step_seconds / peak
''', HINTS["timing.flops_doubled"]),
    Planted("ex08_mfu", "MFU inverted (peak / achieved)", '''
def achieved_flops(flops, seconds):
    return flops / seconds
def training_flops_per_token(n_params, n_layer, d_attn, seq_len):
    return 6 * n_params + 12 * n_layer * d_attn * seq_len
def mfu(model_flops_per_token, tokens_per_step, step_seconds, peak):
    return peak / (model_flops_per_token * tokens_per_step / step_seconds)
''', HINTS["timing.inverted"]),
    Planted("ex08_checklist", "loader_workers as num_workers >= 0 (always True)", '''
def training_checklist(model, optimizer, loader):
    params = list(model.parameters())
    ids = {id(p) for g in optimizer.param_groups for p in g["params"]}
    grads = [p.grad for p in params if p.grad is not None]
    return {"on_gpu": all(p.device.type == "cuda" for p in params),
            "bf16": all(p.dtype == torch.bfloat16 for p in params),
            "loader_workers": loader.num_workers >= 0,
            "grad_finite": bool(grads) and all(bool(torch.isfinite(g).all()) for g in grads),
            "optimizer_has_params": all(id(p) in ids for p in params if p.requires_grad)}
''', HINTS["timing.loader_workers"]),
    Planted("ex08_checklist", "frozen parameters required in the optimizer too", '''
def training_checklist(model, optimizer, loader):
    params = list(model.parameters())
    ids = {id(p) for g in optimizer.param_groups for p in g["params"]}
    grads = [p.grad for p in params if p.grad is not None]
    return {"on_gpu": all(p.device.type == "cuda" for p in params),
            "bf16": all(p.dtype == torch.bfloat16 for p in params),
            "loader_workers": loader.num_workers > 0,
            "grad_finite": bool(grads) and all(bool(torch.isfinite(g).all()) for g in grads),
            "optimizer_has_params": all(id(p) in ids for p in params)}
''', HINTS["timing.optimizer_has_params"]),
    Planted("ex08_grad_norm", "the norm taken with clip_grad_norm_ (it scales the gradients)", '''
def grad_norm_report(model):
    params = [p for p in model.parameters() if p.grad is not None]
    norm = float(torch.nn.utils.clip_grad_norm_(params, max_norm=1.0)) if params else 0.0
    nonfinite = [n for n, p in model.named_parameters() if p.grad is not None and not bool(torch.isfinite(p.grad).all())]
    return {"global_norm": norm, "nonfinite": nonfinite}
''', HINTS["timing.grads_changed"]),
    Planted("ex08_grad_norm", "only NaN counted as non-finite (inf missed)", '''
def grad_norm_report(model):
    norm = math.sqrt(sum(float(p.grad.double().pow(2).sum()) for p in model.parameters() if p.grad is not None))
    nonfinite = [n for n, p in model.named_parameters() if p.grad is not None and bool(torch.isnan(p.grad).any())]
    return {"global_norm": norm, "nonfinite": nonfinite}
''', HINTS["timing.names"]),
    Planted("ex08_mfu", "the calculator's formula instead of one's own", '''
def achieved_flops(flops, seconds):
    return flops / seconds

def training_flops_per_token(n_params, n_layer, d_attn, seq_len):
    from lecture2 import estimate
    return float(estimate.flops_per_token(n_params, n_layer, d_attn, seq_len))

def mfu(model_flops_per_token, tokens_per_step, step_seconds, peak):
    return model_flops_per_token * tokens_per_step / step_seconds / peak
''', HINTS["calculator_off"]),
]
