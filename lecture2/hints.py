"""The usual mistakes' hints, by key: `HINTS` (the course's, extended by each exercise module with
`register_hints`; lecture2.checks hands both on), in the course's source language; their English is lecture2.hints_en. A failed check carries
its hint's key to the grader's feedback and to the class's table of mistakes."""
from __future__ import annotations

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
