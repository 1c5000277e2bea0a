"""Notebook 06's check cases: training_state_bytes and activation_bytes_per_layer.

Every answer is reached through lecture2.answers (plain data both ways): `call` for what it returns, and the
instruments that run beside it (`without_calculator`: the answer run again with lecture2.estimate's memory table
switched off; `checks.by_formula`: the calculator switched off while it runs): each exercise asks for a count the
student derives, not one looked up. Expected bytes are measured here, in the process that runs the check, on live
models: `training_state.step_bytes` after a real step of each recipe (the step counters, a library's
bookkeeping, left out as the notebook's convention says), and `convention_bytes`, what a real block saves for
backward in the notebook's accounting (each tensor the backward needs once, values in the model dtype, per-row
statistics in fp32), every term of it measured. The usual wrong answers are named relative to that, the CPU's
raw measurement among them.
"""
from __future__ import annotations

from contextlib import contextmanager

import torch

from lecture2 import answers, checks, estimate, measure, models, training_state


checks.register_hints({
    # training_state_bytes: from the idea (every copy held between steps x its bytes) to the count
    "memory.params_bf16": "这个配方的模型用 bf16 计算：权重 2 bytes/param；fp32 的那份是 master weights，算在 'optimizer' 里。",
    "memory.params_fp32": "这个配方的模型是 fp32：权重 4 bytes/param。",
    "memory.grads_bf16": "梯度和模型的权重同一个 dtype：bf16 模型的梯度 2 bytes/param。step 期间给 master 用的 fp32 梯度副本 "
                         "step 之后就释放了（一直留着它是 18/20 bytes/param 的约定，不是这个配方）。",
    "memory.grads_fp32": "梯度和模型的权重同一个 dtype：fp32 模型的梯度 4 bytes/param。",
    "memory.adam_two_states": "Adam 为每个参数留两份状态：一阶矩 m 和二阶矩 v，各和参数一样多，都是 fp32。",
    "memory.master_missing": "混合精度里 Adam 更新的是一份 fp32 的 master weights：它也是每个参数一份常驻的拷贝 (4 bytes)，"
                             "算在 'optimizer' 里，和 m、v 一起。",
    "memory.master_in_fp32_model": "fp32 模型没有 master weights：Adam 直接更新模型自己的 fp32 权重，只多留 m 和 v。",
    "memory.sgd_no_momentum": "SGD (无 momentum) 不为参数留任何状态；momentum buffer 只在 momentum > 0 时才有，每个参数一份。",
    "memory.pure_bf16_no_master": "纯 bf16 的 SGD 没有 master weights，也没有状态：只有 bf16 的权重和梯度。",
    "memory.step_counters": "约定里不算计步器 (step counter)：PyTorch 的 Adam 每个参数 Tensor 存一个 4 字节的 state['step']，"
                            "那是库自己的簿记，不是参数的拷贝（深入小节里量过）。",
    "memory.calculator": "这个练习要你按配方自己数每一份拷贝：命令行计算器 lecture2.estimate 的显存表 "
                         "(MEMORY_RECIPES、training_memory_bytes) 不是答案，检查时它被关掉了。",
    "memory.recipe_unknown": "不认识的 recipe (例如 'lion') 要 raise ValueError，不能悄悄按某个已知的配方算。",
    # activation_bytes_per_layer: from the idea (each op keeps what its backward needs) to the count
    "memory.rough_formula": "这是讲义的粗略公式 (20 BTd + 2 BT² 一类)：它漏了 RMSNorm 的输入和 rstd、GELU 的输入，"
                            "attention 矩阵也只算了一个 head。按运算逐个数：每个运算留下它的反向要用的张量。",
    "memory.rstd": "忘了 RMSNorm 的 rstd：每个 RMSNorm 每个 token 留一个统计量 (fp32, 4 bytes)，两个 norm 共 2·B·T 个。",
    "memory.rstd_fp32": "按约定，每行一个的统计量 (RMSNorm 的 rstd、融合 attention 的 log-sum-exp) 是 fp32 (4 bytes)，"
                        "不跟着模型的 dtype 走。",
    "memory.norm_input": "RMSNorm 的反向要它的输入 x（不只是它的输出）：每个 norm 留 x (d 个值) 和 rstd。",
    "memory.gelu_input": "FFN 里有两个 (B, T, 4d)：GELU 的反向要它的输入 (up 的输出)，down 的反向要它的输入 (GELU 的输出)。",
    "memory.counted_twice": "多了 B·T·d 个值：block 的输出不由这一层保存（残差相加什么也不存，它是下一层 norm1 的输入）；"
                            "attention 的输出就是 proj 的输入，同一个张量只算一次。",
    "memory.no_attention_matrix": "显式 attention 的 softmax 要为反向留下它的输出：每个 head 一个 (T, T)，共 B·H·T² 个值 "
                                  "(只有融合 kernel 才不存它)。",
    "memory.attention_matrix_once": "attention 矩阵只存一份：乘常数和加 mask 什么都不存，softmax 的输出和 weights @ v "
                                    "用的是同一个张量。",
    "memory.kernel_extra": "这是 PyTorch 在 CPU 上实测保存的字节数：它的 RMSNorm 还多存了 x·rstd（在 bf16 模型里还把 x 存成 fp32）。"
                           "练习要的是约定的计数：每个 norm 只留 x (模型 dtype) 和 rstd (fp32)。",
    "memory.flash_no_square": "融合 kernel 不保存 (B, H, T, T) 的 attention 矩阵：这正是 FlashAttention 的用处，"
                              "反向时它用 q、k、v、输出和每一行的 log-sum-exp 把需要的块重新算出来。",
    "memory.flash_logsumexp": "忘了 log-sum-exp：融合 kernel 为每个 head 的每一行 (每个 token) 留一个 fp32，形状 (B, H, T)。",
    "memory.flash_logsumexp_heads": "log-sum-exp 每个 head 一份：形状 (B, H, T)，不是 (B, T)。",
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
    """lecture2.estimate switched off (answers.instruments_off) and its memory table emptied (both of its views:
    MEMORY_RECIPES by name, TRAINED_RECIPES by key), restored afterwards."""
    held = [(table, dict(table)) for table in (estimate.MEMORY_RECIPES, estimate.TRAINED_RECIPES)]
    for table, _ in held:
        table.clear()
    try:
        with answers.instruments_off(("lecture2.estimate",)):
            yield
    finally:
        for table, rows in held:
            table.update(rows)


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


RECIPES = {  # the exercise's recipe -> (optimizer, precision) of training_state.step_bytes (estimate's one table)
    key: (r.algorithm, "mixed" if r.master else r.dtype) for key, r in estimate.TRAINED_RECIPES.items()}


def _state_mistakes(recipe: str, n: int, want: dict[str, int], part: str) -> list[checks.Mistake]:
    """The usual wrong values of one part ("params", "grads", "optimizer") of `recipe` for N = n."""
    half = RECIPES[recipe][1] != "fp32"
    value = want[part]
    if part == "params":
        return [checks.mistake("memory.params_bf16", 2 * value) if half else checks.mistake("memory.params_fp32", value // 2)]
    if part == "grads":
        return [checks.mistake("memory.grads_bf16", 2 * value), checks.mistake("memory.grads_bf16", 3 * value)] if half \
            else [checks.mistake("memory.grads_fp32", value // 2)]
    wrong = []
    if recipe == "fp32_adam":
        wrong = [checks.mistake("optimizer_states", 0), checks.mistake("memory.adam_two_states", value // 2),
                 checks.mistake("memory.master_in_fp32_model", value + 4 * n)]
    elif recipe == "bf16_mixed_adam":
        wrong = [checks.mistake("optimizer_states", 0), checks.mistake("memory.master_missing", value - 4 * n),
                 checks.mistake("memory.adam_two_states", value - 4 * n)]
    elif recipe == "sgd":
        wrong = [checks.mistake("memory.sgd_no_momentum", 4 * n)]
    elif recipe == "bf16_sgd":
        wrong = [checks.mistake("memory.pure_bf16_no_master", 4 * n), checks.mistake("memory.sgd_no_momentum", 2 * n)]
    elif recipe == "sgd_momentum":
        wrong = [checks.mistake("optimizer_states", 0)]
    return wrong


def training_state_case(fn, n: int, recipe: str, want: dict[str, int], counters: int = 0) -> None:
    """fn(n, recipe) against `want` ({"params", "grads", "optimizer"} in bytes, step counters left out), part by
    part; `counters`: the step counters' bytes a live step held (an answer that counts them is told so); then
    again with lecture2.estimate switched off."""
    __tracebackhide__ = True
    got = answers.call(fn, n, recipe)
    what = f"training_state_bytes({n:,}, {recipe!r})"
    checks.expect_type(got, dict, what=what)
    checks.expect(set(got) == {"params", "grads", "optimizer"},
                  f"{what} 应有三个键 'params', 'grads', 'optimizer'，得到 {sorted(got, key=repr)}")
    terms = {"N (4 bytes/param)": 4 * n, "N (2 bytes/param)": 2 * n}
    for part in ("params", "grads", "optimizer"):
        wrong = _state_mistakes(recipe, n, want, part)
        if part == "optimizer" and counters:
            wrong.append(checks.mistake("memory.step_counters", want[part] + counters))
        checks.expect_equal(got[part], want[part], what=f"{what}['{part}']", mistakes=wrong, terms=terms)
    checks.expect_type(got["params"] + got["grads"] + got["optimizer"], int, what=f"{what} 的字节数")
    _same_without_calculator(fn, (n, recipe))


def training_state_live(fn, recipe: str, d: int, n_heads: int, seed: int) -> None:
    """fn against the bytes a TransformerBlock(d, n_heads) holds after one real step of `recipe`
    (training_state.step_bytes, measured here), the step counters left out."""
    __tracebackhide__ = True
    if recipe not in RECIPES:
        raise ValueError(f"unknown recipe {recipe!r}")
    held = training_state.step_bytes(*RECIPES[recipe], d_model=d, n_heads=n_heads, seed=seed)
    want = {"params": held.params, "grads": held.grads, "optimizer": held.optimizer}
    training_state_case(fn, held.n_params, recipe, want, counters=held.counters)


def training_state_total(fn, n: int, recipe: str, want: int) -> None:
    """The total of fn(n, recipe) against `want` bytes (a reference for sizes too big to step); then again with
    the calculator off."""
    __tracebackhide__ = True
    what = f"training_state_bytes({n:,}, {recipe!r})"
    got = answers.call(fn, n, recipe)
    checks.expect_type(got, dict, what=what)
    checks.expect(set(got) == {"params", "grads", "optimizer"},
                  f"{what} 应有三个键 'params', 'grads', 'optimizer'，得到 {sorted(got, key=repr)}")
    wrong = []
    if recipe == "bf16_mixed_adam":  # the fp32 master copy (4 bytes/param), or every optimizer state, left out
        wrong = [checks.mistake("memory.master_missing", want - 4 * n), checks.mistake("optimizer_states", want - 12 * n)]
    checks.expect_equal(got["params"] + got["grads"] + got["optimizer"], want, what=f"{recipe}, N={n:,}, total bytes",
                        mistakes=wrong, terms={"N (4 bytes/param)": 4 * n, "N (2 bytes/param)": 2 * n})
    _same_without_calculator(fn, (n, recipe))


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
    checks.expect(set(on_gpu) == {"params", "grads", "optimizer"},
                  f"training_state_bytes(N, 'fp32_adam') 应有三个键 'params', 'grads', 'optimizer'，得到 {sorted(on_gpu, key=repr)}")
    checks.expect_close(on_gpu["params"] + on_gpu["grads"] + on_gpu["optimizer"], allocated, rtol=0.05,
                        what="fp32_adam on CUDA vs torch.cuda.memory_allocated (bytes)")


# --- activation_bytes_per_layer -------------------------------------------------------------------------------

def convention_bytes(B: int, T: int, d: int, n_heads: int, dtype: torch.dtype, fused: bool, seed: int = 0) -> int:
    """Live, on the CPU, in the notebook's accounting: the bytes autograd saves in one
    TransformerBlock(d, n_heads, fused_attention=fused) on an input (B, T, d) that requires grad (parameters
    excluded), with what each RMSNorm saves (PyTorch's CPU kernel: x and x·rstd in fp32, and rstd) replaced by the
    convention's x in the model dtype and an fp32 rstd per token. Every term measured: the block's saved bytes,
    each norm's own saved bytes on an input of its shape and dtype."""
    torch.manual_seed(seed)
    blk = models.TransformerBlock(d, n_heads, fused_attention=fused).to(dtype)
    params = list(blk.parameters())
    inp = torch.randn(B, T, d, dtype=dtype, requires_grad=True)
    whole = measure.saved_bytes(lambda: blk(inp), exclude=params)
    kept_by_norms = sum(measure.saved_bytes(lambda norm=norm: norm(torch.randn(B, T, d, dtype=dtype, requires_grad=True)),
                                            exclude=params) for norm in (blk.norm1, blk.norm2))
    p = inp.element_size()
    return whole - kept_by_norms + 2 * (B * T * d * p + B * T * 4)


def _activation_mistakes(B, T, d, H, p, fused, want, measured) -> list[checks.Mistake]:
    """The usual wrong counts, most specific first (where two give the same number, the first one's hint is shown)."""
    tokens, rows, square = B * T, B * H * T, B * H * T * T
    norm_x, rstd, lse = tokens * d * p, tokens * 4, rows * 4
    if fused:
        wrong = [checks.mistake("memory.flash_no_square", want - lse + square * p),
                 checks.mistake("memory.flash_no_square", want + square * p),
                 checks.mistake("memory.flash_logsumexp", want - lse),
                 checks.mistake("memory.flash_logsumexp_heads", want - lse + rstd)]
        if p != 4:
            wrong.append(checks.mistake("memory.rstd_fp32", want - lse + rows * p))
    else:
        wrong = [checks.mistake("memory.rough_formula", p * (10 * tokens * d + B * T * T)),
                 checks.mistake("attention_per_head", want - square * p + B * T * T * p),
                 checks.mistake("memory.no_attention_matrix", want - square * p),
                 checks.mistake("memory.attention_matrix_once", want + square * p)]
    if p != 4:
        wrong.append(checks.mistake("memory.rstd_fp32", want - 2 * tokens * (4 - p)))
    return wrong + [
        checks.mistake("memory.rstd", want - 2 * rstd), checks.mistake("memory.rstd", want - rstd),
        checks.mistake("memory.norm_input", want - 2 * norm_x),
        checks.mistake("memory.gelu_input", want - 4 * norm_x),
        checks.mistake("memory.counted_twice", want + norm_x),
        checks.mistake("memory.kernel_extra", measured),
    ]


def activation_case(fn, B: int, T: int, d: int, n_heads: int, dtype: torch.dtype, fused: bool = False,
                    seed: int = 0) -> None:
    """fn(B, T, d, n_heads, dtype_bytes, fused_attention) against `convention_bytes` of a real block (measured
    here), byte for byte; the usual wrong counts named, the CPU's raw measurement among them."""
    __tracebackhide__ = True
    p = torch.empty(0, dtype=dtype).element_size()
    if p == 4 and not fused:  # dtype_bytes and fused_attention left out: their defaults, 4 and False
        checks.expect_type(checks.by_formula(fn, B, T, d, n_heads, what=f"activation_bytes_per_layer({B}, {T}, {d}, {n_heads})"),
                           int, what=f"activation_bytes_per_layer({B}, {T}, {d}, {n_heads})")
    want = convention_bytes(B, T, d, n_heads, dtype, fused, seed)
    torch.manual_seed(seed)
    blk = models.TransformerBlock(d, n_heads, fused_attention=fused).to(dtype)
    inp = torch.randn(B, T, d, dtype=dtype, requires_grad=True)
    measured = measure.saved_bytes(lambda: blk(inp), exclude=blk.parameters())
    what = (f"activation_bytes_per_layer(B={B}, T={T}, d={d}, n_heads={n_heads}, dtype_bytes={p}, "
            f"fused_attention={fused})  [{dtype}]")
    got = checks.by_formula(fn, B, T, d, n_heads, p, fused, what=what)
    checks.expect_type(got, int, what=what)
    checks.expect_equal(got, want, what=what + " vs the accounting, measured", mistakes=_activation_mistakes(
        B, T, d, n_heads, p, fused, want, measured), terms={"B·T·d values": B * T * d * p,
                                                            "B·H·T² values": B * n_heads * T * T * p})


# How each exercise is graded (docs/grading.md's table is generated from every module's ORACLE).
ORACLE = {
    "training_state_bytes": answers.Oracle(
        returns="the dict {params, grads, optimizer} it returns for each (N, recipe); whether it raises "
                "ValueError for an unknown recipe; and, from the instrument `without_calculator` run beside it, what "
                "the same call returns (or raises) with lecture2.estimate's memory table switched off",
        expected="training_state.step_bytes: a live TransformerBlock after one real step of each recipe (drawn "
                 "sizes), part by part, the step counters left out (the stated convention); the lecture's 16 "
                 "bytes/param (7B -> 112 GB) and ZeRO's per-recipe totals for drawn N; on CUDA, "
                 "torch.cuda.memory_allocated after a real Adam step",
        tampering="the numbers are the answer asked for. The calculator-off observation only enforces the rule "
                  "'count by recipe, do not look it up': a student who patches the instrument (or detects the switch) "
                  "to hide a lookup still has to return the measured bytes, so it can change no score a correct "
                  "answer would not earn"),
    "activation_bytes_per_layer": answers.Oracle(
        returns="the int it returns for each (B, T, d, n_heads, dtype_bytes, fused_attention), called with the "
                "course's calculator switched off beside it (checks.by_formula)",
        expected="the notebook's accounting measured on a real TransformerBlock (explicit or fused attention) of "
                 "drawn sizes and dtypes in the check's own process: measure.saved_bytes of the block, with each "
                 "RMSNorm's own saved bytes (measured) replaced by its input in the model dtype and an fp32 rstd",
        tampering="nothing but the returned number"),
}
