"""Notebook 06's check cases: training_state_bytes, optimizer_state_bytes, largest_trainable_params,
activation_bytes_per_layer, flash_activation_bytes_per_layer.

Expected bytes are measured here on live models and optimizers (`training_state.state_bytes` after a real
step, `measure.saved_bytes` of a real block) or passed in by the test cell (reference numbers with sources).
The usual wrong answers are named relative to the measured value, with the parts they miscount measured too
(the bytes one RMSNorm saves, the block scales and quantization maps bitsandbytes holds).
"""
from __future__ import annotations

import importlib
import logging
import math
from contextlib import contextmanager

import torch

import lecture2.measure
import lecture2.models
import lecture2.training_state
from lecture2 import checks

# fresh copies of the instruments (test cells reload this module): nothing a notebook's cells did to them counts
measure = importlib.reload(lecture2.measure)
models = importlib.reload(lecture2.models)
training_state = importlib.reload(lecture2.training_state)


# --- training_state_bytes -------------------------------------------------------------------------------------

@contextmanager
def _calculator_switched_off():
    """lecture2.estimate's memory table emptied and its training_memory_bytes raising, restored afterwards."""
    import lecture2.estimate as calculator
    recipes, code = dict(calculator.MEMORY_RECIPES), calculator.training_memory_bytes.__code__

    def switched_off(*args, **kwargs):
        raise RuntimeError("lecture2.estimate is switched off during this check")

    calculator.MEMORY_RECIPES.clear()
    calculator.training_memory_bytes.__code__ = switched_off.__code__
    try:
        yield
    finally:
        calculator.MEMORY_RECIPES.update(recipes)
        calculator.training_memory_bytes.__code__ = code


def _same_without_calculator(fn, args: tuple, got: object) -> None:
    """The answer run again with lecture2.estimate switched off must return the same: the calculator's memory
    table is the calculator's, not an answer."""
    __tracebackhide__ = True
    with _calculator_switched_off():
        try:
            problem = None if fn(*args) == got else "结果变了 (results changed)"
        except Exception as exc:  # raised only because the calculator is off: the answer depends on it
            problem = f"{type(exc).__name__}: {exc}"
    checks.expect(problem is None, "training_state_bytes 用了 lecture2.estimate (命令行计算器 the calculator) 的显存表或函数："
                  f"检查时它被关掉了 ({problem})。这个练习要你按 recipe 自己数每一部分的 bytes。")


def training_state_case(fn, n: int, recipe: str, n_tensors: int, want: dict[str, int]) -> None:
    """fn(n, recipe, n_tensors) against `want` ({"params", "grads", "optimizer"} in bytes), part by part; then
    again with lecture2.estimate switched off."""
    __tracebackhide__ = True
    got = fn(n, recipe, n_tensors)
    what = f"training_state_bytes({n:,}, {recipe!r}, n_tensors={n_tensors})"
    checks.expect_type(got, dict, what=what)
    checks.expect(set(got) == {"params", "grads", "optimizer"}, f"{what} 应有三个键 'params', 'grads', 'optimizer'，得到 {sorted(got)}")
    half = recipe.startswith("bf16")
    checks.expect_equal(got["params"], want["params"], what=f"{what}['params']", mistakes=[checks.mistake(
        "这个配方的模型参数是 bf16 (2 bytes/param)；fp32 的那份是 master weights，算在 'optimizer' 里。" if half
        else "这个配方的模型参数是 fp32 (4 bytes/param)。", 2 * want["params"] if half else want["params"] // 2)])
    checks.expect_equal(got["grads"], want["grads"], what=f"{what}['grads']", mistakes=[checks.mistake(
        "这个配方的梯度是 bf16 (2 bytes)：step 期间的 fp32 梯度副本在 step 之后就释放了 (常驻的 fp32 梯度是 18/20 的约定)。" if half
        else "fp32 模型的梯度和参数一样是 fp32 (4 bytes/param)。", 2 * want["grads"] if half else want["grads"] // 2)])
    momentum_hint = "SGD (无 momentum) 没有任何优化器状态；momentum buffer 只在 momentum > 0 时才有。"
    no_step_hint = "SGD 没有计步器 (step counter)：只有 Adam 有 state['step']。"
    if recipe.endswith("adam"):
        states = want["optimizer"] - 4 * n_tensors
        wrong = [checks.mistake("optimizer_states", 0), checks.mistake("optimizer_states", 4 * n_tensors),
                 checks.mistake("adam_step", states)]
        if recipe == "bf16_mixed_adam":
            wrong += [checks.mistake("master_weights_state", states - 4 * n + 4 * n_tensors),
                      checks.mistake("master_weights_state", states - 4 * n)]
    elif recipe == "sgd_momentum":
        wrong = [checks.mistake("optimizer_states", 0), checks.mistake(no_step_hint, want["optimizer"] + 4 * n_tensors)]
    else:
        bytes_of_grad = 2 if half else 4
        wrong = [checks.mistake(momentum_hint, bytes_of_grad * n), checks.mistake(momentum_hint, 4 * n),
                 checks.mistake(no_step_hint, 4 * n_tensors)]
    checks.expect_equal(got["optimizer"], want["optimizer"], what=f"{what}['optimizer']", mistakes=wrong)
    checks.expect_type(sum(got.values()), int, what=f"{what} 的字节数")
    _same_without_calculator(fn, (n, recipe, n_tensors), got)


def training_state_total(fn, n: int, recipe: str, want: int) -> None:
    """The total of fn(n, recipe) (no step counters) against `want` bytes; then again with the calculator off."""
    __tracebackhide__ = True
    what = f"training_state_bytes({n:,}, {recipe!r})"
    got = fn(n, recipe)
    checks.expect_type(got, dict, what=what)
    total = sum(got.values())
    wrong = []
    if recipe == "bf16_mixed_adam":  # the fp32 master copy (4 bytes/param), or every optimizer state, left out
        wrong = [checks.mistake("master_weights_state", want - 4 * n), checks.mistake("optimizer_states", want - 12 * n)]
    checks.expect_equal(total, want, what=f"{recipe}, N={n:,}, total bytes", mistakes=wrong)
    _same_without_calculator(fn, (n, recipe), got)


def _live_state(recipe: str, d: int, n_heads: int, seed: int) -> tuple[int, int, dict[str, int]]:
    """One real step of `recipe` on a TransformerBlock(d, n_heads): (N, number of parameter tensors, the bytes
    held by component, as training_state.state_bytes counts them)."""
    torch.manual_seed(seed)
    half = recipe.startswith("bf16")
    model = models.TransformerBlock(d, n_heads).to(torch.bfloat16 if half else torch.float32)
    params = list(model.parameters())
    master = [p.detach().float() for p in params] if recipe == "bf16_mixed_adam" else []
    if recipe.endswith("adam"):
        opt = torch.optim.Adam(master or params, lr=1e-3)
    else:
        opt = torch.optim.SGD(params, lr=0.1, momentum=0.9 if recipe == "sgd_momentum" else 0.0)
    inp = torch.randn(2, 5, d, dtype=params[0].dtype)
    model(inp).float().pow(2).mean().backward()
    for m, p in zip(master, params):
        m.grad = p.grad.float()
    opt.step()
    with torch.no_grad():
        for m, p in zip(master, params):
            p.copy_(m)
            m.grad = None
    return sum(p.numel() for p in params), len(params), training_state.state_bytes(params, opt, master)


def training_state_live(fn, recipe: str, d: int, n_heads: int, seed: int) -> None:
    """fn against the bytes a TransformerBlock(d, n_heads) holds after one real step of `recipe`."""
    __tracebackhide__ = True
    n, n_tensors, held = _live_state(recipe, d, n_heads, seed)
    training_state_case(fn, n, recipe, n_tensors, held)


def training_state_rejects(fn, recipe: str) -> None:
    """fn(1000, recipe) must raise ValueError for a recipe it does not know."""
    __tracebackhide__ = True
    raised = False
    try:
        fn(1000, recipe)
    except ValueError:
        raised = True
    checks.expect(raised, f"training_state_bytes(..., recipe={recipe!r}) 应该 raise ValueError (未知的配方)")


def training_state_cuda(fn) -> None:
    """fn's fp32 Adam bytes against what the CUDA caching allocator holds after a real Adam step (rtol 5%: the
    step counters stay on the CPU)."""
    __tracebackhide__ = True
    torch.manual_seed(0)
    warm = models.TransformerBlock(256, 4).cuda()  # first matmuls allocate cuBLAS workspaces: not training state
    warm(torch.randn(2, 8, 256, device="cuda")).pow(2).mean().backward()
    del warm
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    block = models.TransformerBlock(256, 4).cuda()
    opt = torch.optim.Adam(block.parameters(), lr=1e-3)  # step counters stay on the CPU here
    block(torch.randn(2, 8, 256, device="cuda")).pow(2).mean().backward()
    opt.step()
    torch.cuda.synchronize()
    allocated = torch.cuda.memory_allocated() - before
    on_gpu = fn(sum(p.numel() for p in block.parameters()), "fp32_adam")
    del block, opt
    checks.expect_type(on_gpu, dict, what="training_state_bytes(N, 'fp32_adam')")
    checks.expect_close(sum(on_gpu.values()), allocated, rtol=0.05,
                        what="fp32_adam on CUDA vs torch.cuda.memory_allocated (bytes)")


# --- optimizer_state_bytes ------------------------------------------------------------------------------------

def _make_optimizer(name: str, params: list, **options) -> torch.optim.Optimizer:
    if name == "adam":
        return torch.optim.Adam(params, lr=1e-3)
    if name == "adafactor":
        return torch.optim.Adafactor(params, lr=1e-2)
    logging.getLogger("bitsandbytes").setLevel(logging.ERROR)
    import bitsandbytes
    return bitsandbytes.optim.Adam8bit(params, lr=1e-3, **options)


def _stepped(shapes, name: str, seed: int, **options) -> tuple[list, torch.optim.Optimizer]:
    """fp32 parameters of these shapes and optimizer `name` after one real step."""
    gen = torch.Generator().manual_seed(seed)
    params = [torch.nn.Parameter(torch.randn(shape, generator=gen)) for shape in shapes]
    opt = _make_optimizer(name, params, **options)
    for p in params:
        p.grad = torch.randn(p.shape, generator=gen)
    opt.step()
    return params, opt


def _state_part(opt: torch.optim.Optimizer, params: list, keys: tuple[str, ...]) -> int:
    """Bytes of the state entries named `keys`, over all parameters, each storage once."""
    return training_state.held_bytes(opt.state[p][k] for p in params for k in keys
                                     if isinstance(opt.state[p].get(k), torch.Tensor))


def _state_mistakes(shapes, name: str, want: int, params: list, opt, seed: int) -> list[checks.Mistake]:
    sizes = [math.prod(s) for s in shapes]
    k, total = len(shapes), sum(sizes)
    if name == "adam":
        return [checks.mistake("adam_step", want - 4 * k),
                checks.mistake("Adam 存两份状态：一阶矩 m 和二阶矩 v，各和参数一样大 (fp32)。", 4 * total + 4 * k)]
    if name == "adafactor":
        full = ("Adafactor 的二阶矩对矩阵是分解的 (factored)：一个 R×C 的矩阵只存 R 个行统计 (row_var) 和 C 个列统计 (col_var)，"
                "不是 R·C 个。")
        vector = "一维的张量（向量，比如 norm 的 weight）没法分解：Adafactor 给它存一个完整的 variance，n 个 fp32。"
        n_vectors = sum(1 for s in shapes if len(s) < 2)
        vector_elems = sum(n for s, n in zip(shapes, sizes) if len(s) < 2)
        # the row and column statistics of the leading slices beyond the first, as the live state holds them
        lead = sum(_state_part(opt, [p], ("row_var", "col_var")) * (math.prod(s[:-2]) - 1) // math.prod(s[:-2])
                   for p, s in zip(params, shapes) if len(s) >= 3)
        return [checks.mistake(full, 4 * total + 4 * k), checks.mistake(full, 4 * total),
                checks.mistake("Adafactor 不是 Adam：它没有一阶矩 m，二阶矩也是分解的。", 8 * total + 4 * k),
                checks.mistake(vector, want + 4 * vector_elems), checks.mistake(vector, want + 4 * n_vectors),
                checks.mistake("三维及以上的张量 (..., R, C)：前面的每个维度都有自己的一份 row_var 和 col_var，"
                               "要乘上前面各维的乘积。", want - lead),
                checks.mistake("Adafactor 也有计步器：每个参数张量一个 fp32 的 state['step'] (4 bytes)。", want - 4 * k)]
    quantized = [p for p in params if opt.state[p]["state1"].dtype == torch.uint8]
    scales = _state_part(opt, params, ("absmax1", "absmax2"))  # live: the fp32 absmax of every block
    maps = _state_part(opt, params, ("qmap1", "qmap2"))  # live: the two quantization maps
    codes = _state_part(opt, quantized, ("state1",))  # live: one uint8 m per quantized element
    # live: the same shapes stepped with every tensor quantized (min_8bit_size ignored)
    all_quantized = want
    if len(quantized) < len(params):
        again, opt_all = _stepped(shapes, name, seed, min_8bit_size=1)
        all_quantized = training_state.state_bytes(again, opt_all)["optimizer"]
    return [checks.mistake("忘了每块的 scale：8-bit 的 m 和 v 每 256 个元素各有一个 fp32 的 absmax (absmax1、absmax2)。", want - scales),
            checks.mistake("scale 是每块 (block，256 个元素) 一个，不是每个张量一个。", want - scales + 8 * len(quantized)),
            checks.mistake("忘了两张量化表 (qmap1、qmap2，各 256 个 fp32)：所有量化的张量共用，整个优化器算一次。", want - maps),
            checks.mistake("两张量化表 (qmap1、qmap2) 所有张量共用同一个 storage：只算一次，不是每个张量一次。",
                           want + (len(quantized) - 1) * maps),
            checks.mistake("元素少于 4096 (min_8bit_size) 的张量不量化：bitsandbytes 给它们存 fp32 的 m 和 v。", all_quantized),
            checks.mistake("bitsandbytes 的计步器是 Python int，不占 Tensor 的 bytes。", want + 4 * k),
            checks.mistake("m 和 v 各 1 byte：量化后每个元素共 2 bytes。", want - codes)]


def optimizer_state_case(fn, shapes: list[tuple[int, ...]], name: str, seed: int = 0) -> None:
    """fn(shapes, name) against the bytes optimizer.state holds after one real step on fp32 parameters of these
    shapes (torch.optim.Adam, torch.optim.Adafactor, bitsandbytes.optim.Adam8bit)."""
    __tracebackhide__ = True
    params, opt = _stepped(shapes, name, seed)
    want = training_state.state_bytes(params, opt)["optimizer"]
    got = fn([tuple(s) for s in shapes], name)
    what = f"optimizer_state_bytes({[tuple(s) for s in shapes]}, {name!r})"
    checks.expect_type(got, int, what=what)
    checks.expect_equal(got, want, what=what + " vs training_state.state_bytes after one step",
                        mistakes=_state_mistakes(shapes, name, want, params, opt, seed))


def optimizer_state_reference(fn, shapes: list[tuple[int, ...]], name: str, want: int) -> None:
    """fn(shapes, name) against `want` bytes (a reference for shapes too big to step in a check)."""
    __tracebackhide__ = True
    checks.expect_equal(fn([tuple(s) for s in shapes], name), want,
                        what=f"optimizer_state_bytes({[tuple(s) for s in shapes]}, {name!r})")


def optimizer_state_rejects(fn, name: str) -> None:
    """fn([(8, 8)], name) must raise ValueError for an optimizer it does not know."""
    __tracebackhide__ = True
    raised = False
    try:
        fn([(8, 8)], name)
    except ValueError:
        raised = True
    checks.expect(raised, f"optimizer_state_bytes(..., {name!r}) 应该 raise ValueError (未知的优化器)")


# --- largest_trainable_params ---------------------------------------------------------------------------------

def largest_case(fn, n_gpus: int, memory: float, per: float, want: int) -> None:
    """fn(n_gpus, memory, per) against `want` parameters."""
    __tracebackhide__ = True
    got = fn(n_gpus, memory, per)
    what = f"largest_trainable_params({n_gpus}, {memory:.6g}, {per})"
    checks.expect_type(got, int, what=what)
    checks.expect_equal(got, want, what=what, mistakes=[
        checks.mistake("忘了乘 GPU 的数量 n_gpus：这是一块 GPU 能放下的。", int(memory // per)),
        checks.mistake("bits_for_bytes", int(n_gpus * memory * 8 // per)),
        checks.mistake("bytes_for_bits", int(n_gpus * memory // (per * 8))),
        checks.mistake("要向下取整 (floor, //)：round() 遇到小数部分 ≥ 0.5、ceil 遇到任何小数，都会多出一个放不下的参数。", want + 1),
    ])


# --- activation_bytes_per_layer, flash_activation_bytes_per_layer ---------------------------------------------

def _block_saved(B: int, T: int, d: int, n_heads: int, dtype: torch.dtype, seed: int, fused: bool) -> tuple[int, int]:
    """Live, on the CPU: the bytes autograd saves in one TransformerBlock(d, n_heads) on an input (B, T, d) that
    requires grad (parameters excluded), and the bytes its first RMSNorm alone saves."""
    torch.manual_seed(seed)
    blk = models.TransformerBlock(d, n_heads, fused_attention=fused).to(dtype)  # fused: PyTorch's CPU flash kernel
    inp = torch.randn(B, T, d, dtype=dtype, requires_grad=True)
    return (measure.saved_bytes(lambda: blk(inp), exclude=blk.parameters()),
            measure.saved_bytes(lambda: blk.norm1(inp), exclude=blk.parameters()))


def activation_case(fn, B: int, T: int, d: int, n_heads: int, dtype: torch.dtype, seed: int = 0) -> None:
    """fn(B, T, d, n_heads, dtype_bytes) against measure.saved_bytes of a real TransformerBlock (explicit
    attention) in `dtype`, byte for byte."""
    __tracebackhide__ = True
    p = torch.empty(0, dtype=dtype).element_size()
    if p == 4:  # dtype_bytes left out: its default, 4
        checks.expect_type(fn(B, T, d, n_heads), int, what=f"activation_bytes_per_layer({B}, {T}, {d}, {n_heads})")
    want, norm = _block_saved(B, T, d, n_heads, dtype, seed, fused=False)
    got = fn(B, T, d, n_heads, p)
    what = f"activation_bytes_per_layer(B={B}, T={T}, d={d}, n_heads={n_heads}, dtype_bytes={p})  [{dtype}]"
    tokens, heads_tt = B * T, B * n_heads * T * T
    norms = 2 * norm  # live: the two RMSNorms' saved tensors, fp32 whatever the model dtype
    in_model_dtype = want - norms + norms // 4 * p  # the same tensors if the norms kept the model dtype
    no_rstd = in_model_dtype - 2 * tokens * p  # ... and their rstd left out
    checks.expect_type(got, int, what=what)
    rstd = "忘了 RMSNorm 保存的 rstd：每个 RMSNorm 一个 (B, T, 1) 的 fp32 张量 (每个 token 一个数)，两个 norm 共 2·B·T·4 bytes。"
    checks.expect_equal(got, want, what=what + " vs measure.saved_bytes", mistakes=[
        checks.mistake(rstd, want - 2 * tokens * 4),
        checks.mistake(rstd, want - tokens * 4),
        checks.mistake("这是讲义的粗略公式 (20 BTd + 2 BT² bytes 一类)：它漏了 RMSNorm 保存的 x 和 x̂、q/k/v 的拷贝、GELU 的输入，attention 矩阵也少了 H 倍。照着 saved_tensors 的清单逐个数。",
                       p * (10 * tokens * d + B * T * T)),
        checks.mistake("attention_per_head", want - heads_tt * p + B * T * T * p),
        checks.mistake("attention_per_head", no_rstd - heads_tt * p + B * T * T * p),
        checks.mistake("attention 矩阵不见了：softmax 要保存它的输出 (B, H, T, T) 给反向用 (Flash Attention 才不存它)。", want - heads_tt * p),
        checks.mistake("attention 矩阵只存一份：乘常数和加 mask 什么都不存，softmax 的输出和 weights @ v 共用同一个 storage。", want + heads_tt * p),
        checks.mistake("rmsnorm_fp32", no_rstd + 2 * tokens * 4),
        checks.mistake("rmsnorm_fp32", no_rstd),
        checks.mistake("rmsnorm_fp32", in_model_dtype),
    ])


def flash_activation_case(fn, B: int, T: int, d: int, n_heads: int, dtype: torch.dtype, seed: int = 0) -> None:
    """fn(B, T, d, n_heads, dtype_bytes) against measure.saved_bytes of a real TransformerBlock with fused
    attention (PyTorch's CPU flash kernel) in `dtype`, byte for byte."""
    __tracebackhide__ = True
    p = torch.empty(0, dtype=dtype).element_size()
    want, norm = _block_saved(B, T, d, n_heads, dtype, seed, fused=True)
    got = fn(B, T, d, n_heads, p)
    what = f"flash_activation_bytes_per_layer(B={B}, T={T}, d={d}, n_heads={n_heads}, dtype_bytes={p})  [{dtype}]"
    checks.expect_type(got, int, what=what)
    tokens, rows = B * T, B * n_heads * T
    squares = rows * T * p  # a (B, H, T, T) tensor in the model dtype
    norms = 2 * norm  # live: the two RMSNorms' saved tensors, fp32 whatever the model dtype
    no_square = ("融合 kernel 不保存 (B, H, T, T) 的 attention 矩阵：这正是 FlashAttention 的用处，"
                 "反向时它用 q、k 和 log-sum-exp 把需要的块重新算出来。")
    checks.expect_equal(got, want, what=what + " vs measure.saved_bytes", mistakes=[
        checks.mistake(no_square, want + squares),
        checks.mistake(no_square, want - 4 * rows + squares),
        checks.mistake("忘了 log-sum-exp：kernel 为每个 head 的每一行 (每个 token) 存一个数，形状 (B, H, T)，反向靠它重算 softmax。",
                       want - 4 * rows),
        checks.mistake("log-sum-exp 是 fp32 (4 bytes)，不跟着模型的 dtype 走：bf16/fp16 模型里也是 fp32。", want - 4 * rows + p * rows),
        checks.mistake("log-sum-exp 每个 head 一份：形状 (B, H, T)，不是 (B, T)。", want - 4 * rows + 4 * tokens),
        checks.mistake("attention 的输出就是 proj 的输入：kernel 按 (B, T, H, hd) 分配输出，reshape 不拷贝，同一个 storage 只算一次。",
                       want + tokens * d * p),
        checks.mistake("rmsnorm_fp32", want - norms + norms // 4 * p),
        checks.mistake("忘了 RMSNorm 保存的 rstd：每个 RMSNorm 一个 (B, T, 1) 的 fp32 张量，两个 norm 共 2·B·T·4 bytes。",
                       want - 2 * tokens * 4),
    ])
