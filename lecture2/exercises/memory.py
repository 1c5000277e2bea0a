"""Notebook 06's check cases: training_state_bytes, optimizer_state_bytes, largest_trainable_params,
activation_bytes_per_layer, flash_activation_bytes_per_layer.

Every answer is reached through lecture2.answers (plain data both ways): `call` for what it returns, and one
instrument that runs beside it, `without_calculator` (the answer run again with lecture2.estimate's memory table
switched off: the exercise asks for the bytes counted by recipe, not looked up). Expected bytes are measured here,
in the process that runs the check, on live models and optimizers (`training_state.state_bytes` after a real
step, `measure.saved_bytes` of a real block) or passed in by the test cell (reference numbers with sources). The
usual wrong answers are named relative to the measured value, with the parts they miscount measured too (the
bytes one RMSNorm saves, the block scales and quantization maps bitsandbytes holds).
"""
from __future__ import annotations

import logging
import math
from contextlib import contextmanager, nullcontext

import torch

from lecture2 import answers, checks, measure, models, training_state


checks.register_hints({
    # training_state_bytes
    "memory.params_bf16": "这个配方的模型参数是 bf16 (2 bytes/param)；fp32 的那份是 master weights，算在 'optimizer' 里。",
    "memory.params_fp32": "这个配方的模型参数是 fp32 (4 bytes/param)。",
    "memory.grads_bf16": "这个配方的梯度是 bf16 (2 bytes)：step 期间的 fp32 梯度副本在 step 之后就释放了 (常驻的 fp32 梯度是 18/20 的约定)。",
    "memory.grads_fp32": "fp32 模型的梯度和参数一样是 fp32 (4 bytes/param)。",
    "memory.sgd_no_momentum": "SGD (无 momentum) 没有任何优化器状态；momentum buffer 只在 momentum > 0 时才有。",
    "memory.sgd_no_step": "SGD 没有计步器 (step counter)：只有 Adam 有 state['step']。",
    "memory.calculator": "这个练习要你按 recipe 自己数每一部分的 bytes：命令行计算器 lecture2.estimate 的显存表 "
                         "(MEMORY_RECIPES、training_memory_bytes) 不是答案，检查时它被关掉了。",
    "memory.recipe_unknown": "不认识的 recipe (例如 'lion') 要 raise ValueError，不能悄悄按某个已知的配方算。",
    # optimizer_state_bytes
    "memory.adam_two_states": "Adam 存两份状态：一阶矩 m 和二阶矩 v，各和参数一样大 (fp32)。",
    "memory.adafactor_factored": "Adafactor 的二阶矩对矩阵是分解的 (factored)：一个 R×C 的矩阵只存 R 个行统计 (row_var) "
                                 "和 C 个列统计 (col_var)，不是 R·C 个。",
    "memory.adafactor_not_adam": "Adafactor 不是 Adam：它没有一阶矩 m，二阶矩也是分解的。",
    "memory.adafactor_vector": "一维的张量（向量，比如 norm 的 weight）没法分解：Adafactor 给它存一个完整的 variance，n 个 fp32。",
    "memory.adafactor_leading_dims": "三维及以上的张量 (..., R, C)：前面的每个维度都有自己的一份 row_var 和 col_var，"
                                     "要乘上前面各维的乘积。",
    "memory.adafactor_step": "Adafactor 也有计步器：每个参数张量一个 fp32 的 state['step'] (4 bytes)。",
    "memory.adam8bit_scales": "忘了每块的 scale：8-bit 的 m 和 v 每 256 个元素各有一个 fp32 的 absmax (absmax1、absmax2)。",
    "memory.adam8bit_scale_per_tensor": "scale 是每块 (block，256 个元素) 一个，不是每个张量一个。",
    "memory.adam8bit_maps": "忘了两张量化表 (qmap1、qmap2，各 256 个 fp32)：所有量化的张量共用，整个优化器算一次。",
    "memory.adam8bit_maps_shared": "两张量化表 (qmap1、qmap2) 所有张量共用同一个 storage：只算一次，不是每个张量一次。",
    "memory.adam8bit_small_tensors": "元素少于 4096 (min_8bit_size) 的张量不量化：bitsandbytes 给它们存 fp32 的 m 和 v。",
    "memory.adam8bit_step": "bitsandbytes 的计步器是 Python int，不占 Tensor 的 bytes。",
    "memory.adam8bit_two_bytes": "m 和 v 各 1 byte：量化后每个元素共 2 bytes。",
    "memory.optimizer_unknown": "不认识的 optimizer (例如 'sgd') 要 raise ValueError，不能悄悄按 Adam 算。",
    # largest_trainable_params
    "memory.one_gpu": "忘了乘 GPU 的数量 n_gpus：这是一块 GPU 能放下的。",
    "memory.floor": "要向下取整 (floor, //)：round() 遇到小数部分 ≥ 0.5、ceil 遇到任何小数，都会多出一个放不下的参数。",
    # activation_bytes_per_layer, flash_activation_bytes_per_layer
    "memory.rstd": "忘了 RMSNorm 保存的 rstd：每个 RMSNorm 一个 (B, T, 1) 的 fp32 张量 (每个 token 一个数)，两个 norm 共 2·B·T·4 bytes。",
    "memory.rough_formula": "这是讲义的粗略公式 (20 BTd + 2 BT² bytes 一类)：它漏了 RMSNorm 保存的 x 和 x̂、q/k/v 的拷贝、GELU 的输入，"
                            "attention 矩阵也少了 H 倍。照着 saved_tensors 的清单逐个数。",
    "memory.no_attention_matrix": "attention 矩阵不见了：softmax 要保存它的输出 (B, H, T, T) 给反向用 (Flash Attention 才不存它)。",
    "memory.attention_matrix_once": "attention 矩阵只存一份：乘常数和加 mask 什么都不存，softmax 的输出和 weights @ v 共用同一个 storage。",
    "memory.flash_no_square": "融合 kernel 不保存 (B, H, T, T) 的 attention 矩阵：这正是 FlashAttention 的用处，"
                              "反向时它用 q、k 和每一行的 log-sum-exp 把需要的块重新算出来。",
    "memory.flash_logsumexp": "忘了 log-sum-exp：kernel 为每个 head 的每一行 (每个 token) 存一个数，形状 (B, H, T)，反向靠它重算 softmax。",
    "memory.flash_logsumexp_fp32": "log-sum-exp 是 fp32 (4 bytes)，不跟着模型的 dtype 走：bf16/fp16 模型里也是 fp32。",
    "memory.flash_logsumexp_heads": "log-sum-exp 每个 head 一份：形状 (B, H, T)，不是 (B, T)。",
    "memory.flash_output_shared": "attention 的输出就是 proj 的输入：kernel 按 (B, T, H, hd) 分配输出，reshape 不拷贝，同一个 storage 只算一次。",
})


def _observed(seen: object, keys: set[str], what: str) -> dict:
    """What an instrument sent back, if it is the dict it sends (a student's process may send anything)."""
    __tracebackhide__ = True
    if type(seen) is not dict or not keys <= set(seen):
        raise checks.CheckFailed(f"{what}: 检查的测量 (the instrument beside your answer) 没有返回它该返回的数据 "
                                 f"(keys {sorted(keys)})，得到 {type(seen).__name__}。", what=what)
    return seen


# --- training_state_bytes -------------------------------------------------------------------------------------

@contextmanager
def _calculator_switched_off():
    """lecture2.estimate switched off (answers.instruments_off) and its memory table emptied, restored afterwards."""
    from lecture2 import estimate

    recipes = dict(estimate.MEMORY_RECIPES)
    estimate.MEMORY_RECIPES.clear()
    try:
        with answers.instruments_off(("lecture2.estimate",)):
            yield
    finally:
        estimate.MEMORY_RECIPES.update(recipes)


@answers.observer
def without_calculator(fn, *args) -> dict:
    """fn(*args) twice beside the answer: as it is, then with lecture2.estimate's memory table emptied and its
    training_memory_bytes raising (restored afterwards). What it saw: {"on": what the first call returned,
    "off": what the second returned}, or "off_raised" (the class and message of what the second raised) instead
    of "off". What the first call raises goes to the check as it is."""
    on = fn(*args)
    with _calculator_switched_off():
        try:
            off = fn(*args)
        except Exception as exc:  # raised only with the calculator off: the check says what that means
            return {"on": on, "off_raised": f"{type(exc).__name__}: {exc}"[:300]}
    return {"on": on, "off": off}


def _same_without_calculator(fn, args: tuple) -> None:
    """The answer run again with lecture2.estimate switched off must return the same: the calculator's memory
    table is the calculator's, not an answer."""
    __tracebackhide__ = True
    seen = answers.observe(without_calculator, fn, *args)
    seen = _observed(seen, {"on"}, "training_state_bytes (lecture2.estimate switched off)")
    if "off_raised" in seen:
        problem = str(seen["off_raised"])[:300]
    elif "off" in seen and seen["off"] == seen["on"]:
        return
    else:
        problem = "结果变了 (results changed)"
    checks.fail(f"training_state_bytes 用了 lecture2.estimate (命令行计算器 the calculator) 的显存表或函数："
                f"检查时它被关掉了 ({problem})。", "memory.calculator")


def training_state_case(fn, n: int, recipe: str, n_tensors: int, want: dict[str, int]) -> None:
    """fn(n, recipe, n_tensors) against `want` ({"params", "grads", "optimizer"} in bytes), part by part; then
    again with lecture2.estimate switched off."""
    __tracebackhide__ = True
    got = answers.call(fn, n, recipe, n_tensors)
    what = f"training_state_bytes({n:,}, {recipe!r}, n_tensors={n_tensors})"
    checks.expect_type(got, dict, what=what)
    checks.expect(set(got) == {"params", "grads", "optimizer"}, f"{what} 应有三个键 'params', 'grads', 'optimizer'，得到 {sorted(got, key=repr)}")
    half = recipe.startswith("bf16")
    checks.expect_equal(got["params"], want["params"], what=f"{what}['params']", mistakes=[
        checks.mistake("memory.params_bf16", 2 * want["params"]) if half
        else checks.mistake("memory.params_fp32", want["params"] // 2)])
    checks.expect_equal(got["grads"], want["grads"], what=f"{what}['grads']", mistakes=[
        checks.mistake("memory.grads_bf16", 2 * want["grads"]) if half
        else checks.mistake("memory.grads_fp32", want["grads"] // 2)])
    if recipe.endswith("adam"):
        states = want["optimizer"] - 4 * n_tensors
        wrong = [checks.mistake("optimizer_states", 0), checks.mistake("optimizer_states", 4 * n_tensors),
                 checks.mistake("adam_step", states)]
        if recipe == "bf16_mixed_adam":
            wrong += [checks.mistake("master_weights_state", states - 4 * n + 4 * n_tensors),
                      checks.mistake("master_weights_state", states - 4 * n)]
    elif recipe == "sgd_momentum":
        wrong = [checks.mistake("optimizer_states", 0), checks.mistake("memory.sgd_no_step", want["optimizer"] + 4 * n_tensors)]
    else:
        bytes_of_grad = 2 if half else 4
        wrong = [checks.mistake("memory.sgd_no_momentum", bytes_of_grad * n), checks.mistake("memory.sgd_no_momentum", 4 * n),
                 checks.mistake("memory.sgd_no_step", 4 * n_tensors)]
    checks.expect_equal(got["optimizer"], want["optimizer"], what=f"{what}['optimizer']", mistakes=wrong)
    checks.expect_type(got["params"] + got["grads"] + got["optimizer"], int, what=f"{what} 的字节数")
    _same_without_calculator(fn, (n, recipe, n_tensors))


def training_state_total(fn, n: int, recipe: str, want: int) -> None:
    """The total of fn(n, recipe) (no step counters) against `want` bytes; then again with the calculator off."""
    __tracebackhide__ = True
    what = f"training_state_bytes({n:,}, {recipe!r})"
    got = answers.call(fn, n, recipe)
    checks.expect_type(got, dict, what=what)
    checks.expect(set(got) == {"params", "grads", "optimizer"}, f"{what} 应有三个键 'params', 'grads', 'optimizer'，得到 {sorted(got, key=repr)}")
    total = got["params"] + got["grads"] + got["optimizer"]
    wrong = []
    if recipe == "bf16_mixed_adam":  # the fp32 master copy (4 bytes/param), or every optimizer state, left out
        wrong = [checks.mistake("master_weights_state", want - 4 * n), checks.mistake("optimizer_states", want - 12 * n)]
    checks.expect_equal(total, want, what=f"{recipe}, N={n:,}, total bytes", mistakes=wrong)
    _same_without_calculator(fn, (n, recipe))


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
    try:
        answers.call(fn, 1000, recipe)
    except ValueError:
        return
    checks.fail(f"training_state_bytes(..., recipe={recipe!r}) 应该 raise ValueError (未知的配方)", "memory.recipe_unknown")


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
    n = sum(p.numel() for p in block.parameters())
    del block, opt
    on_gpu = answers.call(fn, n, "fp32_adam")
    checks.expect_type(on_gpu, dict, what="training_state_bytes(N, 'fp32_adam')")
    checks.expect(set(on_gpu) == {"params", "grads", "optimizer"}, f"training_state_bytes(N, 'fp32_adam') 应有三个键 'params', 'grads', 'optimizer'，得到 {sorted(on_gpu, key=repr)}")
    checks.expect_close(on_gpu["params"] + on_gpu["grads"] + on_gpu["optimizer"], allocated, rtol=0.05,
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


@contextmanager
def _bitsandbytes_defaults():
    """bitsandbytes' global optimizer manager emptied, restored afterwards: the overrides it holds (a
    StableEmbedding registers one, which it then applies by position, to the first parameter of every 8-bit
    optimizer stepped later) would change what the check's own optimizer holds."""
    import bitsandbytes
    manager = bitsandbytes.optim.GlobalOptimManager.get_instance()
    saved = dict(vars(manager))
    manager.initialize()
    try:
        yield
    finally:
        vars(manager).clear()
        vars(manager).update(saved)


def _stepped(shapes, name: str, seed: int, **options) -> tuple[list, torch.optim.Optimizer]:
    """fp32 parameters of these shapes and optimizer `name` after one real step (bitsandbytes with its defaults)."""
    gen = torch.Generator().manual_seed(seed)
    params = [torch.nn.Parameter(torch.randn(shape, generator=gen)) for shape in shapes]
    for p in params:
        p.grad = torch.randn(p.shape, generator=gen)
    with _bitsandbytes_defaults() if name == "adam8bit" else nullcontext():
        opt = _make_optimizer(name, params, **options)
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
        return [checks.mistake("adam_step", want - 4 * k), checks.mistake("memory.adam_two_states", 4 * total + 4 * k)]
    if name == "adafactor":
        n_vectors = sum(1 for s in shapes if len(s) < 2)
        vector_elems = sum(n for s, n in zip(shapes, sizes) if len(s) < 2)
        # the row and column statistics of the leading slices beyond the first, as the live state holds them
        lead = sum(_state_part(opt, [p], ("row_var", "col_var")) * (math.prod(s[:-2]) - 1) // math.prod(s[:-2])
                   for p, s in zip(params, shapes) if len(s) >= 3)
        return [checks.mistake("memory.adafactor_factored", 4 * total + 4 * k),
                checks.mistake("memory.adafactor_factored", 4 * total),
                checks.mistake("memory.adafactor_not_adam", 8 * total + 4 * k),
                checks.mistake("memory.adafactor_vector", want + 4 * vector_elems),
                checks.mistake("memory.adafactor_vector", want + 4 * n_vectors),
                checks.mistake("memory.adafactor_leading_dims", want - lead),
                checks.mistake("memory.adafactor_step", want - 4 * k)]
    quantized = [p for p in params if opt.state[p]["state1"].dtype == torch.uint8]
    scales = _state_part(opt, params, ("absmax1", "absmax2"))  # live: the fp32 absmax of every block
    maps = _state_part(opt, params, ("qmap1", "qmap2"))  # live: the two quantization maps
    codes = _state_part(opt, quantized, ("state1",))  # live: one uint8 m per quantized element
    # live: the same shapes stepped with every tensor quantized (min_8bit_size ignored)
    all_quantized = want
    if len(quantized) < len(params):
        again, opt_all = _stepped(shapes, name, seed, min_8bit_size=1)
        all_quantized = training_state.state_bytes(again, opt_all)["optimizer"]
    return [checks.mistake("memory.adam8bit_scales", want - scales),
            checks.mistake("memory.adam8bit_scale_per_tensor", want - scales + 8 * len(quantized)),
            checks.mistake("memory.adam8bit_maps", want - maps),
            checks.mistake("memory.adam8bit_maps_shared", want + (len(quantized) - 1) * maps),
            checks.mistake("memory.adam8bit_small_tensors", all_quantized),
            checks.mistake("memory.adam8bit_step", want + 4 * k),
            checks.mistake("memory.adam8bit_two_bytes", want - codes)]


def optimizer_state_case(fn, shapes: list[tuple[int, ...]], name: str, seed: int = 0) -> None:
    """fn(shapes, name) against the bytes optimizer.state holds after one real step on fp32 parameters of these
    shapes (torch.optim.Adam, torch.optim.Adafactor, bitsandbytes.optim.Adam8bit)."""
    __tracebackhide__ = True
    params, opt = _stepped(shapes, name, seed)
    want = training_state.state_bytes(params, opt)["optimizer"]
    shapes = [tuple(s) for s in shapes]
    got = answers.call(fn, shapes, name)
    what = f"optimizer_state_bytes({shapes}, {name!r})"
    checks.expect_type(got, int, what=what)
    checks.expect_equal(got, want, what=what + " vs training_state.state_bytes after one step",
                        mistakes=_state_mistakes(shapes, name, want, params, opt, seed))


def optimizer_state_reference(fn, shapes: list[tuple[int, ...]], name: str, want: int) -> None:
    """fn(shapes, name) against `want` bytes (a reference for shapes too big to step in a check)."""
    __tracebackhide__ = True
    shapes = [tuple(s) for s in shapes]
    checks.expect_equal(answers.call(fn, shapes, name), want, what=f"optimizer_state_bytes({shapes}, {name!r})")


def optimizer_state_rejects(fn, name: str) -> None:
    """fn([(8, 8)], name) must raise ValueError for an optimizer it does not know."""
    __tracebackhide__ = True
    try:
        answers.call(fn, [(8, 8)], name)
    except ValueError:
        return
    checks.fail(f"optimizer_state_bytes(..., {name!r}) 应该 raise ValueError (未知的优化器)", "memory.optimizer_unknown")


# --- largest_trainable_params ---------------------------------------------------------------------------------

def largest_case(fn, n_gpus: int, memory: float, per: float, want: int) -> None:
    """fn(n_gpus, memory, per) against `want` parameters."""
    __tracebackhide__ = True
    got = answers.call(fn, n_gpus, memory, per)
    what = f"largest_trainable_params({n_gpus}, {memory:.6g}, {per})"
    checks.expect_type(got, int, what=what)
    checks.expect_equal(got, want, what=what, mistakes=[
        checks.mistake("memory.one_gpu", int(memory // per)),
        checks.mistake("bits_for_bytes", int(n_gpus * memory * 8 // per)),
        checks.mistake("bytes_for_bits", int(n_gpus * memory // (per * 8))),
        checks.mistake("memory.floor", want + 1),
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
        checks.expect_type(answers.call(fn, B, T, d, n_heads), int, what=f"activation_bytes_per_layer({B}, {T}, {d}, {n_heads})")
    want, norm = _block_saved(B, T, d, n_heads, dtype, seed, fused=False)
    got = answers.call(fn, B, T, d, n_heads, p)
    what = f"activation_bytes_per_layer(B={B}, T={T}, d={d}, n_heads={n_heads}, dtype_bytes={p})  [{dtype}]"
    tokens, heads_tt = B * T, B * n_heads * T * T
    norms = 2 * norm  # live: the two RMSNorms' saved tensors, fp32 whatever the model dtype
    in_model_dtype = want - norms + norms // 4 * p  # the same tensors if the norms kept the model dtype
    no_rstd = in_model_dtype - 2 * tokens * p  # ... and their rstd left out
    checks.expect_type(got, int, what=what)
    checks.expect_equal(got, want, what=what + " vs measure.saved_bytes", mistakes=[
        checks.mistake("memory.rstd", want - 2 * tokens * 4),
        checks.mistake("memory.rstd", want - tokens * 4),
        checks.mistake("memory.rough_formula", p * (10 * tokens * d + B * T * T)),
        checks.mistake("attention_per_head", want - heads_tt * p + B * T * T * p),
        checks.mistake("attention_per_head", no_rstd - heads_tt * p + B * T * T * p),
        checks.mistake("memory.no_attention_matrix", want - heads_tt * p),
        checks.mistake("memory.attention_matrix_once", want + heads_tt * p),
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
    got = answers.call(fn, B, T, d, n_heads, p)
    what = f"flash_activation_bytes_per_layer(B={B}, T={T}, d={d}, n_heads={n_heads}, dtype_bytes={p})  [{dtype}]"
    checks.expect_type(got, int, what=what)
    tokens, rows = B * T, B * n_heads * T
    squares = rows * T * p  # a (B, H, T, T) tensor in the model dtype
    norms = 2 * norm  # live: the two RMSNorms' saved tensors, fp32 whatever the model dtype
    checks.expect_equal(got, want, what=what + " vs measure.saved_bytes", mistakes=[
        checks.mistake("memory.flash_no_square", want + squares),
        checks.mistake("memory.flash_no_square", want - 4 * rows + squares),
        checks.mistake("memory.flash_logsumexp", want - 4 * rows),
        checks.mistake("memory.flash_logsumexp_fp32", want - 4 * rows + p * rows),
        checks.mistake("memory.flash_logsumexp_heads", want - 4 * rows + 4 * tokens),
        checks.mistake("memory.flash_output_shared", want + tokens * d * p),
        checks.mistake("rmsnorm_fp32", want - norms + norms // 4 * p),
        checks.mistake("memory.rstd", want - 2 * tokens * 4),
    ])


# How each exercise is graded (docs/grading.md's table is generated from every module's ORACLE).
ORACLE = {
    "training_state_bytes": answers.Oracle(
        returns="the dict {params, grads, optimizer} it returns for each (N, recipe, n_tensors); whether it raises "
                "ValueError for an unknown recipe; and, from the instrument `without_calculator` run beside it, what "
                "the same call returns (or raises) with lecture2.estimate's memory table switched off",
        expected="training_state.state_bytes of a live TransformerBlock after one real step of each recipe (drawn "
                 "sizes), part by part; the lecture's 16 bytes/param (7B -> 112 GB) and ZeRO's per-recipe totals for "
                 "drawn N; on CUDA, torch.cuda.memory_allocated after a real Adam step",
        tampering="the numbers are the answer asked for. The calculator-off observation only enforces the rule "
                  "'count by recipe, do not look it up': a student who patches the instrument (or detects the switch) "
                  "to hide a lookup still has to return the measured bytes, so it can change no score a correct "
                  "answer would not earn"),
    "optimizer_state_bytes": answers.Oracle(
        returns="the int it returns for each (shapes, optimizer); whether it raises ValueError for an unknown one",
        expected="training_state.state_bytes of a real torch.optim.Adam, torch.optim.Adafactor or "
                 "bitsandbytes.optim.Adam8bit after one step on fp32 parameters of drawn shapes, stepped in the "
                 "check's own process; the rules' count for a 4096 x 4096 matrix",
        tampering="nothing but the returned number"),
    "largest_trainable_params": answers.Oracle(
        returns="the int it returns for each (n_gpus, memory, bytes per param)",
        expected="floor(n_gpus x memory / bytes per param) on the datasheet rows of lecture2.hardware and drawn "
                 "integer budgets; CS336's 8 x 80e9 B / 16 -> 40B",
        tampering="nothing but the returned number"),
    "activation_bytes_per_layer": answers.Oracle(
        returns="the int it returns for each (B, T, d, n_heads, dtype_bytes)",
        expected="measure.saved_bytes of a real TransformerBlock (explicit attention) on drawn sizes and dtypes, "
                 "measured in the check's own process",
        tampering="nothing but the returned number"),
    "flash_activation_bytes_per_layer": answers.Oracle(
        returns="the int it returns for each (B, T, d, n_heads, dtype_bytes)",
        expected="measure.saved_bytes of a real TransformerBlock with fused attention (PyTorch's CPU flash kernel) "
                 "on drawn sizes and dtypes, measured in the check's own process",
        tampering="nothing but the returned number"),
}
