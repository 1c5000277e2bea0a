"""Comparisons for the notebooks' test cells, with messages a student can act on.

A test cell holds the reference numbers (with their sources); lecture2.exercises holds the cases and the
usual wrong answers as data; this module only compares and explains. Messages are Chinese with the English
technical terms. Every hint has a key (`HINTS`, extended by each exercise module with `register_hints`): a
failure carries its key to the grader's feedback and to the class's table of mistakes.

An answer's values reach a check through lecture2.answers as plain data (lecture2.wire): exact built-in types
and torch values; anything else arrives as a `wire.Unsupported` marker, which the comparisons refuse with a
message that says what to return instead.

Checks come in named groups (`with checks.exercise(name, points={...}) as ex:` then `with ex.group(label):`);
each group's outcome is recorded and the next group still runs. A group whose answer raised
NotImplementedError is "not implemented"; an exercise all of whose groups are is still a stub: in the lab
that prints a notice and lets `Run All` go on. The outcomes go to the sink the caller chose (`reporting_to`):
under the course's grader that is the judge's, a process that holds the checks and never a student's object;
what a cell prints earns nothing.
"""
from __future__ import annotations

import hashlib
import math
import os
import random
import secrets
import sys
from contextlib import contextmanager
from dataclasses import dataclass

from . import editions, messages, wire
from .answers import AnswerTimeout, AnswerUnavailable  # noqa: F401  (checks.AnswerUnavailable: for test cells)

__all__ = ["CheckFailed", "Exercise", "HINTS", "Mistake", "by_formula", "drawing_from", "drawn", "exercise", "expect",
           "expect_close", "expect_equal", "expect_type", "fail", "grading", "hint_key", "mistake", "register_hints",
           "reporting_to", "shown"]


class CheckFailed(AssertionError):
    """A check that did not pass; its message says what was expected, what came back, and a hint.

    `what`, `want`, `got` (what came back, as the check formats it), `ratio` (got / expected), `difference`
    (got − expected), `hint` and `hint_key` are kept apart from the message for the grader's feedback, which shows
    them for a failed visible check (for a hidden one, the hint only).
    """

    def __init__(self, message: str, *, what: str | None = None, want: object = None, hint: str | None = None,
                 hint_key: str | None = None, got: str | None = None, ratio: float | None = None,
                 difference: float | None = None):
        super().__init__(message)
        if hint_key is not None and hint is None:
            hint = HINTS[hint_key]
        self.what, self.want, self.hint = what, want, hint
        self.got, self.ratio, self.difference = got, ratio, difference
        self.hint_key = hint_key if hint_key is not None else (key_of_hint(hint) if hint else None)


# The usual mistakes, by name. A test cell pairs one with the value that mistake would produce.
HINTS: dict[str, str] = {
    "bits_for_bytes": "看起来你算的是 bits 而不是 bytes (1 byte = 8 bits)。",
    "bytes_for_bits": "看起来你把 bytes 当成了 bits (多除了 8)。",
    "gib_for_gb": "看起来你用了 GiB (2**30 bytes)，这里要的是 GB (10**9 bytes)。",
    "gb_for_gib": "看起来你用了 GB (10**9 bytes)，这里要的是 GiB (2**30 bytes)。",
    "element_size": "每个元素的字节数 (bytes per element) 不对：看看 dtype 的 itemsize。",
    "numel": "元素个数 (numel) 不对：应是 shape 各维的乘积 (product)，不是和 (sum)。",
    "bias_off_by_one": "指数偏置 (exponent bias) 差了一：bias = 2**(e-1) - 1。",
    "eps_half": "eps 是 1.0 与下一个可表示数的间距 (spacing) = 2**-m，不是它的一半 (那是舍入误差上界)。",
    "mantissa_max": "最大值不只取最大的指数，尾数位 (mantissa) 也全取 1：1 + (2**m - 1) / 2**m = 2 - 2**-m，不是 1。",
    "subnormal": "你算的是最小次正规数 (smallest subnormal)；tiny 指最小的正规数 (smallest normal)。",
    "multiply_add": "少了乘加 (multiply-add) 的 2：每个乘加是 2 FLOPs。",
    "forward_only": "只算了前向 (forward)；前向 + 反向 (backward) 约是前向的 3 倍。",
    "loss_not_divided": "loss 没有除以累积步数 (accumulation steps)：梯度大了 steps 倍。",
    "optimizer_states": "忘了优化器状态 (optimizer states)：Adam 每个参数还要存 m 和 v。",
    "sparse_peak": "差了 2 倍：看起来峰值 (peak) 用大了一倍。数据手册 (datasheet) 的 H100 1979 TFLOP/s 是带 2:4 稀疏 (with sparsity) 的数，训练要用 dense 峰值 989.4 (lecture2.hardware 的表)；也检查 6N 有没有写成 3N。",
    "hours_for_days": "差了 24 倍：小时 (hours) 和天 (days) 混了：1 day = 24 hours。",
    "seconds_for_days": "差了 86400 倍：FLOPs ÷ FLOP/s 得到的是秒 (seconds)，÷ 3600 是小时，再 ÷ 24 才是天 (days)。",
    "seconds_for_hours": "差了 3600 倍：秒 (seconds) 和小时 (hours) 混了：价格是每 GPU 每小时 (per GPU-hour)。",
    "two_n": "差了 3 倍：训练每个 token 是 6N FLOPs (前向 2N + 反向 4N)，2N 只是前向 (forward only)。",
    "mfu_forgotten": "忘了 MFU：GPU 只发挥峰值的一部分，有效吞吐 = GPUs × peak × MFU。",
    "ceil": "GPU 个数要向上取整 (math.ceil)：round / floor / int() 给出的 GPU 不够，训练会超过期限 (deadline)。",
    "zero_grad_in_loop": "zero_grad() 放进了 micro-batch 的循环里：每次都清掉了前面累积的梯度，最后只剩最后一个 micro-batch 的。只在循环之前清一次。",
    "zero_grad_missing": "开始前没有 zero_grad()：上一步留在 .grad 里的旧梯度 (stale gradients) 被累加了进来。",
    "accum_weights": "micro-batch 大小不相等时，除以步数 (steps) 得不到大 batch 的梯度：每个 micro-batch 的 mean loss 要乘以它在大 batch 中的比例 n_i / N。",
    "grads_cleared": ".grad 被清空了：optimizer.step() 之后不要再 zero_grad()，梯度要留在 .grad 里。",
    "adam_step": "忘了 Adam 的计步器 (step counter)：每个参数 Tensor 一个 state['step']，fp32 标量 4 bytes。",
    "master_weights_state": "忘了 fp32 master weights：混合精度的优化器状态是 master + m + v = 4 + 4 + 4 = 12 bytes/param。",
    "attention_per_head": "attention 矩阵每个 head 一份：softmax 保存 (B, H, T, T)，即 B·H·T² 个元素，不是 B·T²。",
    "rmsnorm_fp32": "RMSNorm 在 fp32 里计算：bf16/fp16 模型里它保存的 x、x̂ (归一化后) 和 rstd 都是 fp32 (4 bytes)。",
    # notebook 03: counting parameters, RMSNorm
    "norm_weights": "忘了归一化层 (norm) 的 weight：每个 RMSNorm / LayerNorm 有 d_model 个参数，一个 block 有两个 (norm1, norm2)。",
    "attention_proj": "注意力有 4 个 d×d 矩阵：Q、K、V (合并成 qkv: d → 3d) 和输出投影 proj (d → d)，别漏了 proj。",
    "d_ff_ignored": "给了 d_ff 就要用它：FFN 是 d → d_ff → d，参数 2·d·d_ff，只有 d_ff=None 时才是 4d。",
    "linear_bias": "bias=True 时每个 Linear 还有 out_features 个 bias：qkv 3d、proj d、up d_ff、down d。",
    "rms_norm_bias": "RMSNorm 没有 bias (只有 weight)：bias=True 只给 Linear 和 LayerNorm 加 bias。",
    "layernorm_bias": "LayerNorm(bias=True) 除了 weight 还有 d_model 个 bias。",
    "position_embeddings": "忘了位置嵌入 (position embeddings, pos_emb)：block_size × d_model 个参数。",
    "final_norm": "忘了最后一个归一化层 norm_f (在 lm_head 之前)。",
    "tied_twice": "共享 (tied) 的矩阵被数了两次：lm_head.weight 就是 tok_emb.weight，parameters() 只算一次。",
    "untied_head": "tie_embeddings=False 时 lm_head 有自己的 vocab_size × d_model 权重，别漏了。",
    "rms_mean_not_square": "RMSNorm 用平方的均值 mean(x²) (mean of squares)，不是 x 的均值 mean(x)。",
    "rms_layernorm": "这是 LayerNorm (减去了均值 mean)：RMSNorm 不做中心化 (no centering)，只除以 RMS。",
    "rms_sum": "用了 sum(x²) 而不是 mean(x²)：要除以 d (特征维的长度)。",
    "rms_no_sqrt": "忘了开方 (sqrt / rsqrt)：RMS = sqrt(mean(x²) + eps)。",
    "rms_no_eps": "忘了 eps：y = x / sqrt(mean(x²) + eps) · weight (全 0 的输入会变成 NaN)。",
    "rms_eps_outside": "eps 应加在 sqrt 里面：sqrt(mean(x²) + eps)，不是 sqrt(mean(x²)) + eps。",
    "rms_dim": "归一化的维度不对：对最后一维 (dim=-1，特征维 d_model) 求均值，并用 keepdim=True。",
    "rms_weight": "忘了乘以可学习的 weight (scale)。",
    "rms_detached": "梯度要能流过 forward：不要用 .detach()、.data、.item() 或 torch.no_grad()。",
    # notebooks 01-05 (one source for each hint their checks and tests/planted/nb01-nb05 use)
    # 01: tensors and dtypes
    "shape_scalar": "shape=() 是一个标量 (scalar)：它有 1 个元素 (math.prod(()) == 1)，不是 0 个。",
    "tensor_allocated": "不要真的分配这个 Tensor：字节数只由 shape 和 dtype 决定 (元素个数 × dtype.itemsize)，检查用的 shape 大到任何机器都分配不出来。",
    "format_from_table": "这是 PyTorch 某个已有 dtype 的 torch.finfo：要从位数 (e, m) 用公式推出，PyTorch 没有的格式也要能算。",
    "e4m3fn_max": "448 是 float8_e4m3fn (即 OCP FP8 规范里的 E4M3) 的最大值，它把指数全 1 也用来表示数；练习要的是 IEEE 式格式 (指数全 1 留给 inf/NaN)，E4M3 的最大值是 240。",
    # 02: autograd
    "grad_3x_dropped": "漏掉了 3x 这一项：它的导数是 3。",
    "grad_returned_y": "你返回的是 y 本身，不是导数 dy/dx。",
    "grad_by_autograd": "只用公式：检查在 torch.no_grad() 下调用你的函数，那里不建计算图，backward() 和 torch.autograd 都用不了。",
    "mse_two": "少了平方求导得到的 2：d(r²)/dr = 2r。",
    "mse_mean": "L 是平均 (mean)，不是求和 (sum)：别忘了除以 N。",
    "mse_sign": "符号反了：残差 (residual) 是 预测 − 目标 = X @ w + b − y。",
    "mse_grad_b_scalar": "b 加到每个样本上，它的梯度要对样本求和，是一个标量 (0 维 Tensor)。",
    "saved_params": "把参数 (parameters) 算进去了：参数无论训练还是推理都在内存里，这里只数为反向传播多保存的激活值。",
    "saved_input": "忘了输入 x：第一个 Linear 要用它算权重的梯度 dL/dW = (dL/dh)^T x，所以它被保存。",
    "saved_shared": "ReLU 的输出和下一个 Linear 的输入是同一块存储 (storage)，只占一次内存：不要算两次。",
    "saved_logits": "最后一层的输出 (logits) 没有被保存：Linear 的反向不需要它自己的输出。",
    "saved_preact": "ReLU 之前的 Linear 输出 (pre-activation) 没有被保存：ReLU 保存的是它自己的输出。",
    # 03: modules
    "count_by_formula": "请用公式 (formula) 计算，不要构造 nn.Module 来数参数 (在 meta device 上构造也不行)。",
    "rms_state_dict_key": "参数要叫 weight (self.weight = nn.Parameter(...))：state_dict 的键和 torch.nn.RMSNorm 一样，两者才能互相加载。",
    "rms_from_scratch": "请从零 (from scratch) 写 RMSNorm：不要调用 torch.nn.RMSNorm、F.rms_norm 或 layer_norm。",
    "rms_output_dtype": "输出的 dtype 要和输入一样：先转成 float() 计算的话，最后要 .to(x.dtype) 转回去。",
    # 04: training step
    "no_optimizer_step": "没有调用 optimizer.step() (或 scaler.step)：参数没有变化。",
    # 05: FLOPs
    "six_n_embeddings": "embedding 是查表 (lookup)，不做矩阵乘法：tok_emb / pos_emb (以及 norm) 的参数不算在 6N 里；lm_head 才算。",
    "six_n_lm_head": "漏了 lm_head：(BT, d)×(d, V) 是一个真正的矩阵乘法，即使它和 tok_emb 共享权重 (tied)，也要算 6Vd。",
    "attention_term": "attention 项是每层 12·T·d (PaLM: 12·L·H·Q·T，H·Q = d)：attention=True 时加上，attention=False 时不加。",
    "attention_block_size": "attention 项用的是实际序列长度 T，不是 config.block_size (位置 embedding 的行数)。",
    "d_ff_per_token": "FFN 的宽度是 config.d_ff (为 None 时才是 4d)：每层 4d² + 2·d·d_ff。",
    # notebooks 10-11: sharding (ZeRO, FSDP) and communication
    "zero2_params": "ZeRO-2 (stage 2) 不切参数：它只切优化器状态和梯度，每个 rank 仍持有完整的参数；连参数也切的是 stage 3 (ZeRO-3 / FSDP)。",
    "zero1_optimizer_whole": "ZeRO-1 (stage 1) 切的正是优化器状态：每个 rank 只存自己那 1/n 份 (ceil(N/n) 个参数) 的 master、m、v，不是完整的一份。",
    "zero1_grads": "ZeRO-1 (stage 1) 不切梯度：每个 rank 仍持有完整的梯度 (N 个)；切梯度的是 stage 2。",
    "zero3_all_parts": "ZeRO-3 (stage 3) 把参数、梯度和优化器状态三样都切成 n 份：每个 rank 每样只存 ceil(N/n) 个参数的。",
    "shard_ceil": "N 不能被 n 整除时，每个 rank 的分片是 ceil(N/n) 个元素 (最后一片补零，padding)：向上取整，不是 N // n。",
    "ring_n_minus_1": "差了 n/(n-1) 倍：ring 算法里每个 rank 只发送 (n-1)/n 份数据 (自己那一份不用发)：all-reduce 发 2(n-1)/n × S，all-gather 和 reduce-scatter 各发 (n-1)/n × S。",
    "allgather_twice": "ZeRO-3 每步 all-gather 参数两次 (前向一次；前向之后参数被释放，反向前再 gather 一次)，加上梯度的 reduce-scatter：3(n-1)/n × 参数字节，不是 2(n-1)/n。",
    "allreduce_two_phases": "all-reduce = reduce-scatter + all-gather：每个 rank 发送 2(n-1)/n × S，不是 (n-1)/n × S。",
    "comm_per_rank": "差了 n 倍：要的是每个 rank 发送的字节数，不是所有 rank 加起来的总数。",
    "zero1_allreduce": "这是 PyTorch 的 ZeroRedundancyOptimizer 的做法 (DDP 的 all-reduce + 参数 broadcast = 3(n-1)/n)；论文的 ZeRO-1 用 reduce-scatter 梯度 + all-gather 参数，和 DDP 一样是 2(n-1)/n。",
    # any exercise: the type of what came back (a hidden check names it by this hint only)
    "returns_int": "要返回 int：字节数、参数个数、GPU 个数这类计数是整数。用 int(...)、// 或 math.ceil，不要返回 float 或 Tensor。",
    "returns_float": "要返回 Python float：用 float(...) 或 tensor.item()，不要返回 Tensor、int 或 numpy 标量。",
    "returns_dict": "要返回 dict (题目说明的那几个键)，不是一个总数，也不是 list 或 tuple。",
    "returns_bool": "要返回 Python bool (True / False)：用 bool(...) 或 .item()，不要返回 Tensor 或 0 / 1。",
    "returns_number": "要返回一个数 (int 或 float)，不是 Tensor、str、None 或 numpy 标量。",
    "returns_type": "返回值的类型 (type) 不对：看看题目要求返回什么类型。",
    "raises_value_error": "不认识的输入 (例如未知的 stage、recipe、strategy) 要 raise ValueError，不能悄悄返回一个值。",
    "builtin_types": "返回值要是内置类型 (built-in types)，不是它们的子类或 numpy 标量。",
    "calculator_off": "这是你自己写公式的练习：检查调用你的函数时，课程的计算器 (lecture2.estimate、planner 等) 被关掉了，"
                      "调用它的答案不得分。",
}


def register_hints(hints: dict[str, str]) -> None:
    """Add an exercise module's own hints to HINTS (keys like "timing.mean"); a key keeps one text."""
    for key, text in hints.items():
        if HINTS.get(key, text) != text:
            raise ValueError(f"hint {key!r} is registered with another text")
        HINTS[key] = text


def key_of_hint(text: str) -> str:
    """The key of a registered hint text (a hint that is not registered is a bug of the course: KeyError)."""
    for key, value in HINTS.items():
        if value == text:
            return key
    raise KeyError(f"hint not registered in lecture2.checks.HINTS: {text[:60]!r}")


def hint_key(key: str) -> str:
    """`key` itself, after making sure it is a registered hint."""
    if key not in HINTS:
        raise KeyError(f"no hint {key!r} in lecture2.checks.HINTS")
    return key


@dataclass(frozen=True)
class Mistake:
    """The value a known mistake produces, and the hint (text and key) to show when an answer equals it."""

    value: object
    hint: str
    key: str | None = None


def mistake(kind: str, value: object) -> Mistake:
    """A `Mistake` whose hint is `HINTS[kind]`."""
    return Mistake(value, HINTS[kind], kind)


def fail(message: str, hint_key: str | None = None, *, what: str | None = None) -> None:
    """Fail with `message` and the hint of usual mistake `hint_key` (shown, and carried by key)."""
    __tracebackhide__ = True
    hint = HINTS[hint_key] if hint_key else None
    raise CheckFailed(message + (f"\n提示 (hint): {hint}" if hint else ""), what=what, hint=hint, hint_key=hint_key)


def by_formula(fn, *args, what: str, **kwargs):
    """fn(*args, **kwargs), an answer that must compute a formula itself, called with the course's calculator
    (lecture2.estimate, planner, network, parallel) switched off beside it: its value; calling the calculator
    fails with the hint "calculator_off"."""
    __tracebackhide__ = True
    from . import answers

    seen = answers.observe(answers.without_instruments, fn, answers.CALCULATOR, *args, **kwargs)
    if type(seen) is not dict or "used" not in seen:
        raise CheckFailed(f"{what}: 没有得到结果 (no observation came back)", what=what)
    if seen["used"] is True:
        fail(f"{what}: 你的函数调用了课程的计算器 (lecture2.estimate 等)。", "calculator_off", what=what)
    return seen.get("returned")


def grading() -> bool:
    """True while nbgrader grades or validates (it sets NBGRADER_EXECUTION)."""
    return bool(os.environ.get("NBGRADER_EXECUTION"))


SHOWN_CHARACTERS = 200  # of a value a message shows (what came back, what was expected)
SHOWN_ITEMS = 6  # elements of a tensor, items of a container, shown before "…"


def shown(value: object) -> str:
    """`value` as a message shows it, at most SHOWN_CHARACTERS characters, in time and memory that do not grow with
    it: a tensor as its shape, dtype and first elements (never torch's repr, which prints every element of a tensor
    whose dimensions are all small: 10 s and 860 MB for one of 2**20 bytes), a container as its first items, a string
    as its start. Anything that is not built of built-in types (and torch's) shows as its type, never its repr."""
    if type(value) is float:
        return f"{value:.6g}"
    try:
        text = _summary(value, 0) if _foreign(value) is None else _type_only(value)
    except Exception:  # noqa: BLE001  a value that cannot even be summarised: its type
        text = f"<{type(value).__name__}>"
    return text if len(text) <= SHOWN_CHARACTERS else text[:SHOWN_CHARACTERS] + "…"


def _type_only(value: object) -> str:
    """A value not built of built-in types, as its type (a value the wire could not carry, as the type it names):
    never its repr, nor object's (which holds a memory address: a page that differs at every run)."""
    from .wire import Unsupported

    if isinstance(value, Unsupported):
        return repr(value)[:SHOWN_CHARACTERS]
    return f"<{type(value).__qualname__}>"


_fmt = shown  # the name the comparisons below use


def _summary(value: object, depth: int) -> str:
    kind = type(value)
    torch = sys.modules.get("torch")
    if torch is not None and kind in (torch.Tensor, torch.nn.Parameter):
        return _tensor_summary(value)
    if kind is float:
        return f"{value:.6g}"
    if kind is str:
        return repr(value[:SHOWN_CHARACTERS]) + ("…" if len(value) > SHOWN_CHARACTERS else "")
    if kind is bytes:
        return repr(value[:SHOWN_CHARACTERS]) + ("…" if len(value) > SHOWN_CHARACTERS else "")
    if kind is int:
        return repr(value) if value.bit_length() < 700 else f"<an int of {value.bit_length()} bits>"
    if kind in (list, tuple, set, frozenset, dict):
        if depth >= 3:
            return f"<{kind.__name__} of {len(value)}>"
        items = list(value.items() if kind is dict else value)[:SHOWN_ITEMS] if len(value) <= SHOWN_ITEMS else \
            [item for item, _ in zip(value.items() if kind is dict else value, range(SHOWN_ITEMS))]
        parts = [f"{_summary(k, depth + 1)}: {_summary(v, depth + 1)}" if kind is dict else _summary(k, depth + 1)
                 for k, v in (items if kind is dict else ((i, None) for i in items))]
        more = ", …" if len(value) > SHOWN_ITEMS else ""
        body = ", ".join(parts) + more
        if kind is list:
            return f"[{body}]"
        if kind is tuple:
            return f"({body}{',' if len(value) == 1 else ''})"
        if kind is dict:
            return "{" + body + "}"
        if not value:
            return f"{kind.__name__}()"
        return "{" + body + "}" if kind is set else f"frozenset({{{body}}})"
    return repr(value)  # None, bool, complex, torch.dtype, torch.device, torch.Size, wire.Unsupported: short


def _tensor_summary(t) -> str:
    """tensor(shape=(2, 3), dtype=torch.float32, values [0, 1, 2, …]): a few elements read one by one."""
    shape = tuple(t.shape)
    numel = 1
    for n in shape:
        numel *= n
    values = ""
    if t.device.type != "meta" and numel:
        first = []
        for i in range(min(numel, SHOWN_ITEMS)):
            index, rest = [], i
            for n in reversed(shape):
                index.append(rest % n)
                rest //= n
            item = t.detach()[tuple(reversed(index))].item()
            first.append(f"{item:.6g}" if type(item) is float else repr(item))
        values = ", values [" + ", ".join(first) + (", …" if numel > SHOWN_ITEMS else "") + "]"
    return f"tensor(shape={shape}, dtype={t.dtype}{values})"


def _is_number(value: object) -> bool:
    """An exact int or float (bool is not a number here; subclasses are not either)."""
    return type(value) in (int, float)


_SCALARS = (int, float, complex, str, bytes, bool, type(None))


def _exact_types() -> tuple[type, ...]:
    torch = sys.modules.get("torch")
    if torch is None:
        return ()
    return (torch.Tensor, torch.nn.Parameter, torch.dtype, torch.device, torch.Size)


def _foreign(value: object, depth: int = 0) -> str | None:
    """None when `value` is built only of exact built-in types (and exact torch Tensors, dtypes, devices,
    Sizes); else the name of the first type that is not, e.g. "MyFloat" or "numpy.float64"."""
    kind = type(value)
    if kind in _SCALARS or kind in _exact_types():
        return None
    if kind is wire.Unsupported:
        return value.type_name
    if depth > 20:
        return "a value nested more than 20 levels deep"
    if kind in (list, tuple, set, frozenset):
        for item in value:
            bad = _foreign(item, depth + 1)
            if bad:
                return bad
        return None
    if kind is dict:
        for key, item in value.items():
            bad = _foreign(key, depth + 1) or _foreign(item, depth + 1)
            if bad:
                return bad
        return None
    module = getattr(kind, "__module__", "") or ""
    return f"{module}.{kind.__qualname__}" if module not in ("builtins", "__main__", "") else kind.__qualname__


def _refuse_foreign(got: object, what: str) -> None:
    __tracebackhide__ = True
    bad = _foreign(got)
    if bad:
        raise CheckFailed(f"{what}: 应返回 Python 内置类型 (built-in types: int, float, str, list, tuple, dict) "
                          f"或 torch.Tensor 组成的值，得到 {bad}。用 int(...) / float(...) / .item() / .tolist() 转换。",
                          what=what, hint_key="builtin_types", got=bad)


def _fail(what: str, want: object, got: object, found: Mistake | None = None, extra: str = "") -> None:
    __tracebackhide__ = True
    message = f"{what}: 期望 (expected) {_fmt(want)}，得到 (got) {_fmt(got)}。{extra}"
    if found:
        message += f"\n提示 (hint): {found.hint}"
    ratio = difference = None
    if _is_number(got) and _is_number(want) and math.isfinite(got) and math.isfinite(want):
        difference = float(got) - float(want)
        ratio = float(got) / float(want) if want else None
    raise CheckFailed(message, what=what, want=want, hint=found.hint if found else None,
                      hint_key=found.key if found else None, got=_fmt(got), ratio=ratio, difference=difference)


def _close(a: float, b: float, rtol: float, atol: float) -> bool:
    return math.isclose(a, b, rel_tol=rtol, abs_tol=atol) or (math.isinf(a) and a == b)


def _matching_hint(got: object, mistakes, rtol: float, atol: float) -> Mistake | None:
    """The first usual mistake whose value `got` equals (numbers within rtol/atol)."""
    for m in mistakes:
        if _is_number(got) and _is_number(m.value):
            if _close(float(got), float(m.value), rtol, atol):
                return m
        elif _foreign(m.value) is None and type(got) is type(m.value) and got == m.value:
            return m
    return None


def _explain_difference(got: float, want: float, terms: dict[str, float] | None, rtol: float) -> str:
    """For a wrong number that matches no single mistake: the ratio, the difference, and which named term, or
    sum of two (each up to 2 times, either sign), the difference equals: often two mistakes at once."""
    parts = []
    if want and got:
        parts.append(f"比值 ratio got/expected = {got / want:.4g}")
    diff = got - want
    parts.append(f"差 difference got − expected = {diff:+.6g}")
    named = [(name, value) for name, value in (terms or {}).items() if value]
    coefficients = (1, -1, 2, -2)

    def close(value: float) -> bool:
        return math.isclose(diff, value, rel_tol=max(rtol, 1e-9), abs_tol=0.0)

    def said(k: int, name: str) -> str:
        return f"{'多算' if k > 0 else '漏算'}了{'' if abs(k) == 1 else f' {abs(k)} 次'} {name}"

    found = next(([(k, n)] for n, v in named for k in coefficients if close(k * v)), None)
    if found is None:
        found = next(([(k1, n1), (k2, n2)] for i, (n1, v1) in enumerate(named) for n2, v2 in named[i + 1:]
                      for k1 in coefficients for k2 in coefficients if close(k1 * v1 + k2 * v2)), None)
    if found:
        formula = " ".join(f"{k:+d} × {n}" for k, n in found)
        parts.append(f"= {formula}：是不是{'、'.join(said(k, n) for k, n in found)}？")
    return "(" + "，".join(parts) + ")"


def expect_type(got: object, types: type | tuple[type, ...], *, what: str) -> None:
    """Fail unless `got` is exactly of one of `types` (a subclass of a built-in type or of torch.Tensor
    does not count; bool is not accepted as a number). Other classes are matched with isinstance."""
    __tracebackhide__ = True
    types = types if isinstance(types, tuple) else (types,)
    exact = set(_SCALARS) | {list, tuple, set, frozenset, dict} | set(_exact_types())
    ok = False
    for t in types:
        if t in exact:
            torch = sys.modules.get("torch")
            ok = type(got) is t or (torch is not None and t is torch.Tensor and type(got) is torch.nn.Parameter)
        else:
            ok = isinstance(got, t) and not (isinstance(got, bool) and t is not bool)
        if ok:
            break
    if not ok:
        names = " 或 ".join(t.__name__ for t in types)
        key = RETURNS.get(types, "returns_type")
        raise CheckFailed(f"{what}: 应返回 {names}，得到 {type(got).__name__} ({_fmt(got)})。", what=what, want=names,
                          got=f"{type(got).__name__} ({_fmt(got)})", hint_key=key)


RETURNS = {(int,): "returns_int", (float,): "returns_float", (dict,): "returns_dict", (bool,): "returns_bool",
           (int, float): "returns_number", (float, int): "returns_number"}  # expect_type's hint by the types asked


def _idea(key: str | None) -> Mistake | None:
    """The hint of an exercise's idea (a key of HINTS), shown when a wrong answer matches no usual mistake."""
    return Mistake(None, HINTS[key], key) if key else None


def expect_close(got: object, want: float, *, what: str, rtol: float = 1e-9, atol: float = 0.0,
                 mistakes: tuple[Mistake, ...] | list[Mistake] = (), terms: dict[str, float] | None = None,
                 idea: str | None = None) -> None:
    """Fail unless `got` is an exact int or float within `rtol`/`atol` of `want`; name the matching
    mistake, or else explain the difference with the named `terms` (e.g. {"d": d, "V·d": V * d}) and give the
    hint `idea` (a key of HINTS: the exercise's idea, the first step towards the formula) when there is one."""
    __tracebackhide__ = True
    if not _is_number(got):
        _refuse_foreign(got, what)
        raise CheckFailed(f"{what}: 应返回一个数 (a real number: int or float)，得到 {type(got).__name__} ({_fmt(got)})。",
                          what=what, want=want, got=f"{type(got).__name__} ({_fmt(got)})", hint_key="returns_number")
    if not _close(float(got), float(want), rtol, atol):
        hint = _matching_hint(got, mistakes, rtol, atol)
        extra = "" if hint or not _is_number(want) else _explain_difference(float(got), float(want), terms, rtol)
        _fail(what, want, got, hint or _idea(idea), extra)


def expect_equal(got: object, want: object, *, what: str,
                 mistakes: tuple[Mistake, ...] | list[Mistake] = (), terms: dict[str, float] | None = None,
                 idea: str | None = None) -> None:
    """Fail unless `got == want` exactly, `got` built of exact built-in types; name the matching mistake,
    or else explain a numeric difference with the named `terms` and give the hint `idea` (see expect_close)."""
    __tracebackhide__ = True
    _refuse_foreign(got, what)
    if _is_number(want) and not _is_number(got):
        raise CheckFailed(f"{what}: 应返回一个数 (a number)，得到 {type(got).__name__} ({_fmt(got)})。", what=what, want=want,
                          got=f"{type(got).__name__} ({_fmt(got)})", hint_key="returns_number")
    if got != want:
        hint = _matching_hint(got, mistakes, 0.0, 0.0)
        extra = ""
        if hint is None and _is_number(got) and _is_number(want):
            extra = _explain_difference(float(got), float(want), terms, 0.0)
        _fail(what, want, got, hint or _idea(idea), extra)


def expect(condition: object, message: str) -> None:
    """Fail with `message` unless `condition` is True: a bool, a numpy bool or a one-element bool
    torch.Tensor (anything else is refused: a student's object could claim to be true)."""
    __tracebackhide__ = True
    kind = type(condition)
    if kind is not bool:
        torch = sys.modules.get("torch")
        numpy = sys.modules.get("numpy")
        if numpy is not None and kind is numpy.bool_:
            condition = bool(condition)
        elif torch is not None and kind is torch.Tensor and condition.dtype == torch.bool and condition.numel() == 1:
            condition = bool(condition)
        else:
            raise CheckFailed(f"{message}\n(检查得到的不是 True/False，而是 {kind.__name__}：返回值的类型不对)")
    if not condition:
        raise CheckFailed(message)


# ---- hidden cases: drawn from a secret the student's process never holds

DRAW_SECRET_ENV = "LECTURE2_DRAW_SECRET"  # hex: the secret of a process that was given none (to repeat a run's draws)
_DRAW_SECRET: bytes | None = None  # the secret of the test cells running now (`drawing_from`), else this process's own


def drawn(label: str) -> random.Random:
    """The random.Random a test cell's hidden cases are drawn from: seeded from the secret of this run (`drawing_from`:
    under the course's grader, one made from the course's secret and the student's id, in the judge, so each student
    gets their own cases and a regrade the same ones) and `label`, which names the draw within the notebook (e.g.
    "tensor_bytes: drawn shapes": two draws with one label are the same cases). The seed never leaves this process:
    the student's process receives the cases' inputs only. With no secret given (the lab, `make validate`, nbval),
    one is made at random once per process ($LECTURE2_DRAW_SECRET, in hex, repeats a run's draws)."""
    global _DRAW_SECRET
    if _DRAW_SECRET is None:
        given = os.environ.get(DRAW_SECRET_ENV, "")
        try:
            _DRAW_SECRET = bytes.fromhex(given) if given else secrets.token_bytes(32)
        except ValueError:
            raise ValueError(f"${DRAW_SECRET_ENV} must be hex digits") from None
    seed = hashlib.sha256(_DRAW_SECRET + b"\0" + str(label).encode("utf-8")).digest()
    return random.Random(int.from_bytes(seed, "big"))


@contextmanager
def drawing_from(secret: str | bytes | None):
    """While the block runs, `drawn` seeds from `secret` (hex text or bytes; None keeps this process's own)."""
    global _DRAW_SECRET
    saved = _DRAW_SECRET
    if secret is not None:
        _DRAW_SECRET = bytes.fromhex(secret) if isinstance(secret, str) else bytes(secret)
    try:
        yield
    finally:
        _DRAW_SECRET = saved


_SINK = None  # where exercises' outcomes go while a test cell runs: chosen by the caller (`reporting_to`)


@contextmanager
def reporting_to(sink):
    """While the block runs, every exercise reports its groups' outcomes to `sink` (`sink.report(name, groups)`,
    and `sink.group_done(name, label)` when a group ends, if it has one). The caller chooses: the course's grader
    passes its judge's results; the lab and a plain run pass nothing, and a check only prints."""
    global _SINK
    saved, _SINK = _SINK, sink
    try:
        yield sink
    finally:
        _SINK = saved


def _report(name: str, groups: dict[str, dict] | None) -> None:
    """Hand exercise `name`'s outcome to the sink chosen for this test cell, if any."""
    if _SINK is not None:
        _SINK.report(name, groups)


def _group_done(name: str, label: str) -> None:
    """Tell the sink, if it wants to know, that group `label` of exercise `name` has ended (the judge notes whether
    the answer's process had received a hidden case by then)."""
    done = getattr(_SINK, "group_done", None)
    if done is not None:
        done(name, label)


def _outcome(error: BaseException | None) -> dict:
    """A group's outcome from how its checks ended (None: they passed)."""
    if error is None:
        return {"passed": True, "status": "passed", "hint": None, "hint_key": None, "message": ""}
    if isinstance(error, NotImplementedError):
        return {"passed": False, "status": "not implemented", "hint": None, "hint_key": None,
                "message": "not implemented"}
    if isinstance(error, CheckFailed):
        return {"passed": False, "status": "failed", "hint": error.hint, "hint_key": error.hint_key,
                "message": str(error)[:4000], "what": error.what, "want": None if error.want is None else _fmt(error.want),
                "got": error.got, "ratio": error.ratio, "difference": error.difference}
    status = "timeout" if isinstance(error, AnswerTimeout) else "error"
    return {"passed": False, "status": status, "hint": None, "hint_key": None,
            "message": f"{type(error).__name__}: {error}"[:1000]}


NOT_RUN = {"passed": False, "status": "not run", "hint": None, "hint_key": None, "message": "not run"}


class Exercise:
    """The exercise a test cell checks, as `exercise(...)` yields it: `with ex.group("drawn"):` runs one
    named group of checks; a failure in a group is recorded and the next group still runs."""

    def __init__(self, name: str, points: dict[str, float] | None):
        self.name, self.points = name, dict(points or {})
        self.outcomes: dict[str, dict] = {}  # group -> {"passed", "status", "hint", "hint_key", "message", ...}

    @contextmanager
    def group(self, label: str):
        """Run one group of checks; its outcome is recorded, a failure does not stop the other groups."""
        __tracebackhide__ = True
        if label not in self.points:
            raise KeyError(f"group {label!r} is not among the exercise's groups {sorted(self.points)}")
        try:
            yield
        except Exception as err:  # a failed check, or the answer raised: this group fails, the others run
            self.outcomes[label] = _outcome(err)
        else:
            self.outcomes[label] = _outcome(None)
        finally:
            _group_done(self.name, label)

    def summary(self, lang: str = "zh") -> str:
        parts = []
        for label, weight in self.points.items():
            if label in self.outcomes:
                status = self.outcomes[label]["status"]
                mark = "✅" if status == "passed" else "⏳" if status == "not implemented" else "❌"
                parts.append(f"{mark} {label} ({weight:g})")
        return ("，" if lang == "zh" else ", ").join(parts)

    def report(self) -> dict[str, dict]:
        return {g: self.outcomes.get(g, NOT_RUN) for g in self.points}


@contextmanager
def exercise(name: str, points: dict[str, float] | None = None):
    """Wrap an exercise's checks: a success line when they pass, a notice for an unfilled stub.

    With `points` ({group: weight}, e.g. {"lecture": 1, "drawn": 2}) the checks come in named groups
    (`with ex.group("drawn"):`), each worth its share of the cell's points when all its cases pass; the
    grader reads the weights from the instructor's notebook and awards the shares of the groups this context
    reports passed. A group that did not run (the hidden ones, in the lab) counts for nothing and is not shown.
    Without `points` the whole exercise is one group.

    An exercise whose every group that ran raised NotImplementedError is a stub: in the lab it prints a notice
    and lets `Run All` go on; under grading it fails. Any other failure raises, with the first failed group's
    message and every group's mark.
    """
    __tracebackhide__ = True
    ex = Exercise(name, points or {name: 1.0})
    whole = not points
    try:
        if whole:
            with ex.group(name):
                yield ex
        else:
            yield ex
    except BaseException:  # an error in the check itself, or a timeout: the groups that finished still count
        _report(name, ex.report())
        raise
    ran = list(ex.outcomes.values())
    stub = bool(ran) and all(o["status"] == "not implemented" for o in ran)
    _report(name, ex.report())
    if stub:
        if grading():
            raise CheckFailed(f"练习 {name} 还没有完成 (not implemented yet)。", what=name)
        print(messages.say("check.not_implemented", editions.kernel_edition(), name=name))
        return
    failed = [g for g, o in ex.outcomes.items() if not o["passed"]]
    if failed:
        first = ex.outcomes[failed[0]]
        if whole:
            raise CheckFailed(first["message"], what=first.get("what"), hint=first["hint"], hint_key=first["hint_key"])
        raise CheckFailed(f"{first['message']}\n[{name}: {ex.summary()}]", what=None, hint=first["hint"],
                          hint_key=first["hint_key"])
    lang = editions.kernel_edition()  # the lab's notebook's edition: what the student reads is in its language
    print(messages.say("check.passed", lang, name=name) + ("" if whole else f" — {ex.summary(lang)}"))
