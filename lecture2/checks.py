"""Comparisons for the notebooks' test cells, with messages a student can act on.

A test cell holds the reference numbers (with their sources) and the usual wrong answers as data; this
module only compares and explains. Messages are Chinese with the English technical terms.

While nbgrader grades or validates (it sets NBGRADER_EXECUTION) every failure raises, so the cell earns
no points. In the lab, an exercise that is still a stub (NotImplementedError) prints a notice instead of
stopping `Run All`, so a student can read the whole notebook before filling anything in.
"""
from __future__ import annotations

import math
import numbers
import os
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["CheckFailed", "HINTS", "Mistake", "exercise", "expect", "expect_close", "expect_equal",
           "expect_type", "grading", "mistake"]


class CheckFailed(AssertionError):
    """A check that did not pass; its message says what was expected, what came back, and a hint."""


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
    "mantissa_max": "最大值的尾数部分 (mantissa) 是 2 - 2**-m，不是 1：所有尾数位都是 1。",
    "subnormal": "你算的是最小次正规数 (smallest subnormal)；tiny 指最小的正规数 (smallest normal)。",
    "multiply_add": "少了乘加 (multiply-add) 的 2：每个乘加是 2 FLOPs。",
    "forward_only": "只算了前向 (forward)；前向 + 反向 (backward) 约是前向的 3 倍。",
    "loss_not_divided": "loss 没有除以累积步数 (accumulation steps)：梯度大了 steps 倍。",
    "optimizer_states": "忘了优化器状态 (optimizer states)：Adam 每个参数还要存 m 和 v。",
    "sparse_peak": "差了 2 倍：看起来峰值 (peak) 用大了一倍。数据手册 (datasheet) 的 H100 1979 TFLOP/s 是带 2:4 稀疏 (with sparsity) 的数，训练要用 dense 峰值 989.4 (lecture2.hardware 的表)；也检查 6N 有没有写成 3N。",
    "hours_for_days": "差了 24 倍：小时 (hours) 和天 (days) 混了：1 day = 24 hours。",
    "seconds_for_days": "差了 86400 倍：FLOPs ÷ FLOP/s 得到的是秒 (seconds)，÷ 3600 是小时，再 ÷ 24 才是天 (days)。",
    "seconds_for_hours": "差了 3600 倍：秒 (seconds) 和小时 (hours) 混了：价格是每 GPU 每小时 (per GPU-hour)。",
    "gpu_count": "差了 n_gpus 倍：忘了 GPU 的个数 (number of GPUs)：总吞吐是 GPUs × peak × MFU，账单是 GPU-hours = 小时 × GPUs。",
    "two_n": "差了 3 倍：训练每个 token 是 6N FLOPs (前向 2N + 反向 4N)，2N 只是前向 (forward only)。",
    "mfu_forgotten": "忘了 MFU：GPU 只发挥峰值的一部分，有效吞吐 = GPUs × peak × MFU。",
    "mfu_inverted": "MFU 用反了：有效吞吐是 peak × MFU (乘)，不是 peak / MFU。",
    "ceil": "GPU 个数要向上取整 (math.ceil)：round / floor / int() 给出的 GPU 不够，训练会超过期限 (deadline)。",
    "per_token": "差了 1000 倍：要的是每 1K (1,000) tokens 的成本，不是每个 token。",
    "per_million": "差了 1000 倍：要的是每 1K (1,000) tokens 的成本，不是每 1M tokens。",
    "zero_grad_in_loop": "zero_grad() 放进了 micro-batch 的循环里：每次都清掉了前面累积的梯度，最后只剩最后一个 micro-batch 的。只在循环之前清一次。",
    "zero_grad_missing": "开始前没有 zero_grad()：上一步留在 .grad 里的旧梯度 (stale gradients) 被累加了进来。",
    "accum_weights": "micro-batch 大小不相等时，除以步数 (steps) 得不到大 batch 的梯度：每个 micro-batch 的 mean loss 要乘以它在大 batch 中的比例 n_i / N。",
    "grads_cleared": ".grad 被清空了：optimizer.step() 之后不要再 zero_grad()，梯度要留在 .grad 里。",
    "fp16_tiny_threshold": "你用了 tiny (最小正规数 smallest normal, 2**-14) 作阈值：FP16 还有次正规数 (subnormal)，直到 2**-24；只有 |x| <= 最小次正规数的一半 (2**-25) 才变成 0。",
    "fp16_subnormal_not_half": "阈值差了一半：介于 2**-25 和最小次正规数 2**-24 之间的数会舍入 (round) 到 2**-24，不会变成 0；阈值是 2**-25。",
    "fp16_round_half_even": "恰好等于 2**-25 的数在 0 和 2**-24 正中间：round-half-to-even 把它舍入到 0，所以条件是 <=，不是 <。",
    "forgot_scale": "忘了乘以 scale：GradScaler 把 loss (因而每个梯度) 乘以 scale 之后，才在 FP16 里反向传播。",
    "zeros_counted": "本来就是 0 的梯度也算进去了：只统计非零 (nonzero) 元素中被 cast 成 0 的比例。",
    "master_weights": "参数被转成了低精度：混合精度要保留 FP32 的主权重 (master weights)，只让 autocast 里的 matmul 用 BF16/FP16。不要 model.to(torch.bfloat16)。",
    "no_autocast": "Linear 的输出不是低精度：把前向 (forward) 和 loss 放进 torch.autocast(device_type=x.device.type, dtype=...)。",
    "scaler_unused": "FP16 没有用 GradScaler：要 scaler.scale(loss).backward()、scaler.step(optimizer)、scaler.update()。",
    "scaled_grads": "参数的变化大了 scale 倍：梯度还带着 loss scale。用 scaler.step(optimizer) (它先 unscale，遇到 inf/NaN 跳过这一步)，不要直接 optimizer.step()。",
    "scaler_update": "忘了 scaler.update()：没有它，scale 既不会在 inf 之后减半，也不会在正常的步之后增长。",
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
    # notebook 10: sharding (ZeRO, FSDP) and communication
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
    "replicated_floor": "ZeRO-1/2 里有一部分 (ZeRO-1 的参数和梯度，ZeRO-2 的参数) 每个 rank 都存完整的一份，不会随 n 变小：只有切开的部分除以 n。这部分本身放不下时，多少张卡都不够，应返回 None。",
}


@dataclass(frozen=True)
class Mistake:
    """The value a known mistake produces, and the hint to show when a student's answer equals it."""

    value: object
    hint: str


def mistake(kind: str, value: object) -> Mistake:
    """A `Mistake` whose hint is `HINTS[kind]`; `kind` may also be a hint text of its own."""
    return Mistake(value, HINTS.get(kind, kind))


def grading() -> bool:
    """True while nbgrader grades or validates (it sets NBGRADER_EXECUTION)."""
    return bool(os.environ.get("NBGRADER_EXECUTION"))


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return repr(value)


def _is_number(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _fail(what: str, want: object, got: object, hint: str | None = None, extra: str = "") -> None:
    __tracebackhide__ = True
    message = f"{what}: 期望 (expected) {_fmt(want)}，得到 (got) {_fmt(got)}。{extra}"
    if hint:
        message += f"\n提示 (hint): {hint}"
    raise CheckFailed(message)


def _close(a: float, b: float, rtol: float, atol: float) -> bool:
    return math.isclose(a, b, rel_tol=rtol, abs_tol=atol) or (math.isinf(a) and a == b)


def _matching_hint(got: object, mistakes, rtol: float, atol: float) -> str | None:
    for m in mistakes:
        if _is_number(got) and _is_number(m.value):
            if _close(float(got), float(m.value), rtol, atol):
                return m.hint
        elif got == m.value:
            return m.hint
    return None


def expect_type(got: object, types: type | tuple[type, ...], *, what: str) -> None:
    """Fail unless `got` is an instance of `types` (bool is not accepted as a number)."""
    __tracebackhide__ = True
    types = types if isinstance(types, tuple) else (types,)
    if isinstance(got, bool) and bool not in types:
        ok = False
    else:
        ok = isinstance(got, types)
    if not ok:
        names = " 或 ".join(t.__name__ for t in types)
        raise CheckFailed(f"{what}: 应返回 {names}，得到 {type(got).__name__} ({_fmt(got)})。")


def expect_close(got: object, want: float, *, what: str, rtol: float = 1e-9, atol: float = 0.0,
                 mistakes: tuple[Mistake, ...] | list[Mistake] = ()) -> None:
    """Fail unless `got` is a real number within `rtol`/`atol` of `want`; name the matching mistake."""
    __tracebackhide__ = True
    if not _is_number(got):
        raise CheckFailed(f"{what}: 应返回一个数 (a real number)，得到 {type(got).__name__} ({_fmt(got)})。")
    if not _close(float(got), float(want), rtol, atol):
        hint = _matching_hint(got, mistakes, rtol, atol)
        ratio = ""
        if hint is None and want and got and _is_number(want):
            ratio = f"(比值 ratio got/expected = {float(got) / float(want):.4g})"
        _fail(what, want, got, hint, ratio)


def expect_equal(got: object, want: object, *, what: str,
                 mistakes: tuple[Mistake, ...] | list[Mistake] = ()) -> None:
    """Fail unless `got == want` exactly; name the matching mistake."""
    __tracebackhide__ = True
    if _is_number(want) and not _is_number(got):
        raise CheckFailed(f"{what}: 应返回一个数 (a number)，得到 {type(got).__name__} ({_fmt(got)})。")
    if got != want:
        _fail(what, want, got, _matching_hint(got, mistakes, 0.0, 0.0))


def expect(condition: bool, message: str) -> None:
    """Fail with `message` unless `condition` holds."""
    __tracebackhide__ = True
    if not condition:
        raise CheckFailed(message)


@contextmanager
def exercise(name: str):
    """Wrap an exercise's checks: a success line when they pass, a notice for an unfilled stub.

    In the lab an unfilled exercise (NotImplementedError) prints a notice and lets `Run All` go on;
    under nbgrader it raises so that the cell earns no points. Any other failure raises everywhere.
    """
    __tracebackhide__ = True
    try:
        yield
    except NotImplementedError:
        if grading():
            raise CheckFailed(f"练习 {name} 还没有完成 (not implemented yet)。") from None
        print(f"⏳ 练习 {name} 还没有完成 (not implemented yet)：填写上面的函数后再运行这个检查。")
        return
    print(f"✅ {name}: 检查通过 (all checks passed)")
