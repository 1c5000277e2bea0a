"""The English of the messages that lecture2's instruments build in Chinese: the errors they raise and the notes
they print (every module of lecture2 but checks.py and exercises/, whose fragments are lecture2.checks_en's). A
fragment catalogue in gettext's manner, keyed by the Chinese source text: each key is a string constant of lecture2's
code that holds Chinese, or one constant part of an f-string, exactly as `ast` gives it; its value is the English of
that fragment, written so that the fragments with the f-string's `{fields}` between them (in the Chinese order) read
as an English sentence. A key shared by several messages has one English that fits every use.
lecture2.messages.localize(message, "en") replaces the catalogue's fragments in a message, longest key first. Add a
fragment's English here when a module of lecture2 gains or changes a Chinese string.
"""
from __future__ import annotations

FRAGMENTS_EN: dict[str, str] = {
    # answers.py
    "lecture2 instrument switched off: 这个练习要你自己写公式，检查时课程的计算器和引擎 (lecture2.estimate、planner、network、parallel ...) "
    "被关掉了，调用它们会出错。":
        "lecture2 instrument switched off: this exercise asks you to write the formula yourself, so while it is "
        "checked the course's calculators and engines (lecture2.estimate, planner, network, parallel ...) are "
        "switched off, and calling them raises this error.",
    # data.py
    "CountedReads 要一维的 token 数组 (a 1-D array of tokens), 得到 ": "CountedReads needs a 1-D array of tokens, got ",
    # distributed/group.py
    "n_ranks 应是 1 到 64 的整数, 得到 ": "n_ranks should be an integer from 1 to 64, got ",
    " 应 > 0 (seconds), 得到 ": " should be > 0 (seconds), got ",
    "backend 应是 'gloo' 或 'nccl', 得到 ": "backend should be 'gloo' or 'nccl', got ",
    "先启动 Group (use `with Group(n) as group:`)": "start the Group first (use `with Group(n) as group:`)",
    "这个 Group 已经启动了 (already started)": "this Group is already started",
    "启动 (start)": "the start-up",
    "job 要 ": "the job needs ",
    " 个 rank, 但 group 只有 ": " ranks, but the group has only ",
    " 个": " ranks",
    "第 ": "run ",
    " 次 run (run #": " (#",
    "进程组 (process group) 在 ": "the process group ran for ",
    " s 内没有完成 ": " s without finishing ",
    " (timed out); 进程已结束 (workers killed)。\n": " (timed out); the workers were killed.\n",
    " 在 ": " in ",
    " 中失败 (failed): ": " failed: ",
    "\n其余进程已结束 (the other ranks were killed)。\n--- rank ": "\nthe other ranks were killed.\n--- rank ",
    # distributed/jobs.py
    "未知的 engine ": "unknown engine ",
    "stage 应是 0, 1, 2 或 3, 得到 ": "stage should be 0, 1, 2 or 3, got ",
    "未知的 recipe ": "unknown recipe ",
    "stage 和 recipe 只用于 engine='textbook' (recipe 也用于 'tp'); ":
        "stage and recipe are only for engine='textbook' (recipe also for 'tp'); ",
    " 训练 fp32 Adam": " trains fp32 Adam",
    "reduce_dtype 和 bucket_bytes 只用于 engine='textbook'": "reduce_dtype and bucket_bytes are only for engine='textbook'",
    "reduce_dtype 应是 None (模型的 dtype) 或 'float32', 得到 ":
        "reduce_dtype should be None (the model's dtype) or 'float32', got ",
    "bucket_bytes 应是正整数或 None, 得到 ": "bucket_bytes should be a positive integer or None, got ",
    "collectives 需要 sizes: 每个 >= 4 bytes 的整数, 得到 ": "collectives needs sizes: integers of >= 4 bytes each, got ",
    "ops 应是 all_reduce / all_gather / reduce_scatter, 得到 ":
        "ops should be all_reduce / all_gather / reduce_scatter, got ",
    "sequence_parallel 只用于 engine='tp'": "sequence_parallel is only for engine='tp'",
    " 应是正整数 (a positive int), 得到 ": " should be a positive int, got ",
    "timing 应是 >= 0 的整数, 得到 ": "timing should be an integer >= 0, got ",
    "n_ranks 应是正整数或 None, 得到 ": "n_ranks should be a positive integer or None, got ",
    " 超过 block_size=": " exceeds block_size=",
    "tp 的 ": "the ",
    " 个 rank 要整除 n_head=": " tp ranks must divide n_head=",
    "、d_model=": ", d_model=",
    "、d_ff=": ", d_ff=",
    " 要被 ": " must split evenly over ",
    " 整除": " ranks",
    "需要 distributed.Job, 得到 ": "needs a distributed.Job, got ",
    # distributed/worker.py
    "rank 0 没有给出端口 (no port from rank 0)": "no port from rank 0",
    " s 没有收到任务 (no jobs)": " s without a job",
    # editions.py
    "中文": "Chinese",
    # estimate.py (and 2 fragments listed above)
    " 应是一个数 (a real number)，得到 ": " should be a real number, got ",
    " 应 ": " should be ",
    " 且有限 (finite)，得到 ": " and finite, got ",
    "MFU 是峰值的比例 (a fraction of peak), 应在 (0, 1] 内，得到 ": "MFU is a fraction of peak and should be in (0, 1], got ",
    "n_gpus 应是正整数 (a positive int), 得到 ": "n_gpus should be a positive int, got ",
    "未知的 shard ": "unknown shard ",
    "ffn 应是 ": "ffn should be one of ",
    " 之一, 得到 ": ", got ",
    "recompute 应是 ": "recompute should be one of ",
    "norm_kernel 应是 'cuda' 或 'cpu', 得到 ": "norm_kernel should be 'cuda' or 'cpu', got ",
    "mlp_kernel 应是 'eager' 或 'fused', 得到 ": "mlp_kernel should be 'eager' or 'fused', got ",
    ") 要被 n_heads (": ") must be divisible by n_heads (",
    ") 整除, n_heads 要被 kv_heads (": "), and n_heads by kv_heads (",
    ") 整除": ")",
    "convention 应是 ": "convention should be one of ",
    # fmt.py (and 1 fragment listed above)
    " 是 NaN": " is NaN",
    "时长不能为负 (negative duration): ": "a duration cannot be negative: ",
    # hardware.py
    " 没有 ": " has no ",
    " 的 tensor-core 峰值 (no ": " tensor-core peak (no ",
    "GPU 名称应是字符串 (str), 得到 ": "the GPU name should be a string (str), got ",
    "未知的 GPU (unknown GPU) ": "unknown GPU ",
    "device_name 应是字符串 (str), 得到 ": "device_name should be a string (str), got ",
    " 不在峰值表中 (not in the peak table); known GPUs: ": " is not in the peak table; known GPUs: ",
    "峰值表没有 ": "the peak table has no ",
    " 这一列 (no peak column); columns: ": " column; columns: ",
    "未知的 dtype ": "dtype ",
    "dtype 应是 torch.dtype 或 str, 得到 ": "dtype should be a torch.dtype or a str, got ",
    "threads 应是正整数 (int), 得到 ": "threads should be a positive int, got ",
    "dtype 应是 torch.dtype, 得到 ": "dtype should be a torch.dtype, got ",
    "CPU 峰值只测 fp32/bf16/fp16 的 matmul (only these), 得到 ":
        "the CPU peak is measured for fp32/bf16/fp16 matmuls only, got ",
    " 应是 >= ": " should be an int >= ",
    " 的整数 (int), 得到 ": ", got ",
    "n_bytes 应是 >= 4 的整数 (int), 得到 ": "n_bytes should be an int >= 4, got ",
    "CPU 上没有 ": "the CPU has no ",
    "没有 ": "no ",
    " 的峰值 (no peak for device ": " peak (unknown device ",
    "cluster 名称应是字符串 (str), 得到 ": "the cluster name should be a string (str), got ",
    "未知的 cluster ": "unknown cluster ",
    # measure.py
    "需要一个可调用对象 (callable), 例如 lambda: model(x); 得到 ": "needs a callable, e.g. lambda: model(x); got ",
    "peak_memory 需要 CUDA (allocator statistics exist only on CUDA); on CPU use saved_bytes":
        "peak_memory needs CUDA (allocator statistics exist only on CUDA); on CPU use saved_bytes",
    "没有可用的 CUDA 设备 (no CUDA device available)": "no CUDA device available",
    " 应是": " should be a ",
    "非负": "non-negative",
    "正": "positive",
    "整数 (int), 得到 ": " int, got ",
    "peak_rss 需要 resource 模块 (Linux/macOS); on Windows use the Task Manager":
        "peak_rss needs the resource module (Linux/macOS); on Windows use the Task Manager",
    " 应是正整数 (int), 得到 ": " should be a positive int, got ",
    "seconds_per_item 应是非负的秒数, 得到 ": "seconds_per_item should be a non-negative number of seconds, got ",
    "model 应是 torch.nn.Module, 得到 ": "model should be a torch.nn.Module, got ",
    # models.py (and 2 fragments listed above)
    "norm 应是 'rms' 或 'layer', 得到 ": "norm should be 'rms' or 'layer', got ",
    ") 必须能被 n_heads (": ") must be divisible by n_heads (",
    ") 整除 (divisible)": ")",
    "fused 应是 True 或 False (bool), 得到 ": "fused should be True or False (a bool), got ",
    ") 必须能被 n_head (": ") must be divisible by n_head (",
    "GPT 需要一个 GPTConfig, 得到 ": "GPT needs a GPTConfig, got ",
    "序列长度 T=": "the sequence length T=",
    "training_step 需要一个 GPT, 得到 ": "training_step needs a GPT, got ",
    "MLP 至少需要两个尺寸 (input and output), 得到 ": "MLP needs at least two sizes (input and output), got ",
    # network.py (and 1 fragment listed above)
    "bus_bytes_per_s 应 > 0 且有限, 得到 ": "bus_bytes_per_s should be > 0 and finite, got ",
    " 应 >= 0 且有限, 得到 ": " should be >= 0 and finite, got ",
    " 不行: 每个节点最多 ": " does not work: a node has at most ",
    " 个 GPU, 且要整除 ranks=": " GPUs, and it must divide ranks=",
    "nbytes 应 >= 0 且有限, 得到 ": "nbytes should be >= 0 and finite, got ",
    "calls 应是 >= 0 的整数, 得到 ": "calls should be an integer >= 0, got ",
    " 不能按每节点 ": " cannot be split into whole nodes of ",
    " 个分成整节点": " ranks each",
    "sizes 应是两个递增的正数, 得到 ": "sizes should be two increasing positive numbers, got ",
    "大消息应更慢 (the larger message must take longer): ": "the larger message must take longer: ",
    " — 时间是噪声": " — the times are noise",
    "未知的集合通信 ": "unknown collective ",
    # parallel.py
    " 要整除 n_heads=": " must divide n_heads=",
    "、d=": ", d=",
    " 和 d_ff=": " and d_ff=",
    # planner.py
    "offload 应是 'none', 'optimizer' 或 'all', 得到 ": "offload should be 'none', 'optimizer' or 'all', got ",
    # planning/collectives.py (and 2 fragments listed above)
    " per node: 每个节点最多 ": " per node: a node has at most ",
    " 个 GPU, 且每节点的 rank 数要整除总数": " GPUs, and the ranks per node must divide the total",
    # planning/compute.py (and 2 fragments listed above)
    "未知的 GEMM kernel ": "unknown GEMM kernel ",
    " 没有 FP8 tensor core (no FP8 on Ampere)": " has no FP8 tensor cores (no FP8 on Ampere)",
    " 上的测量 (no measured ": " measurements (no measured ",
    # planning/conventions.py (and 1 fragment listed above)
    "metric 应是 ": "metric should be one of ",
    "formula 应是 '6N', 'megatron', 'planner' 或 'none', 得到 ":
        "formula should be '6N', 'megatron', 'planner' or 'none', got ",
    "attention 应是 'full' 或 'causal', 得到 ": "attention should be 'full' or 'causal', got ",
    # planning/layout.py (and 3 fragments listed above)
    "gpus 应是正整数 (a positive int), 得到 ": "gpus should be a positive int, got ",
    "reduce_dtype 应是 'bf16' 或 'fp32', 得到 ": "reduce_dtype should be 'bf16' or 'fp32', got ",
    "activations 应是 ": "activations should be one of ",
    "dtype (the GEMMs) 应是 ": "dtype (the GEMMs) should be one of ",
    "attention 应是 ": "attention should be one of ",
    "compute_efficiency 应在 (0, 1] 内, 得到 ": "compute_efficiency should be in (0, 1], got ",
    ") 应是 seq_len (": ") should be a multiple of seq_len (",
    ") 的整数倍 (a whole number of sequences)": "), a whole number of sequences",
    "fewer_layers_at_ends 应是 >= 0 的整数, 得到 ": "fewer_layers_at_ends should be an integer >= 0, got ",
    "zero 应是 0, 1, 2 或 3, 得到 ": "zero should be 0, 1, 2 or 3, got ",
    "sequence parallelism (sp) 需要 tp > 1 (needs tensor parallelism)":
        "sequence parallelism (sp) needs tensor parallelism: tp > 1",
    "hsdp 是 ZeRO-3 的一种 (hsdp is a kind of ZeRO-3: zero=3)": "hsdp is a kind of ZeRO-3: zero=3",
    "schedule 应是 ": "schedule should be one of ",
    "dualpipe 需要偶数个 pipeline stage, 且不再切 virtual stages (DualPipe needs an even pp, no virtual stages)":
        "dualpipe needs an even number of pipeline stages (an even pp) and no virtual stages",
    "group (micro-batches per virtual-stage group, Llama 3's N) 只用于 interleaving, 且 >= 1":
        "group (micro-batches per virtual-stage group, Llama 3's N) is only for interleaving, and >= 1",
    "last_stage_layers 应 >= 0, 且不和 fewer_layers_at_ends 一起用":
        "last_stage_layers should be >= 0, and not used together with fewer_layers_at_ends",
    "tp_overlap 应是 ": "tp_overlap should be one of ",
    "tp_overlap='userbuffers' 需要 sp (Transformer Engine's TP comm overlap needs sequence parallelism)":
        "tp_overlap='userbuffers' needs sp (Transformer Engine's TP comm overlap needs sequence parallelism)",
    "comm_sms 应是 >= 0 的整数, 得到 ": "comm_sms should be an integer >= 0, got ",
    # planning/schedule.py
    " 层分不成 ": " layers cannot be split into ",
    " 段 (first=": " stages (first=",
    " 段 (首尾各少 ": " stages (with ",
    " 层)": " fewer layers at each end)",
    " 段": " stages",
    "interleaving 需要 micro-batch 数 (": "interleaving needs a number of micro-batches (",
    ") 是 pp (": ") that is a multiple of pp (",
    ") 的倍数 (Megatron), 或给出组大小 group (Llama 3's flexible N)":
        ") (Megatron), or a group size `group` (Llama 3's flexible N)",
    "这个调度会死锁 (this order deadlocks): p=": "this order deadlocks: p=",
    # planning/shapes.py (and 4 fragments listed above)
    "ffn 应是 'swiglu' 或 'gelu', 得到 ": "ffn should be 'swiglu' or 'gelu', got ",
    ") 整除 (or give head_dim)": "), or give head_dim",
    ") 要被 kv_heads (": ") must be divisible by kv_heads (",
    "MoE 需要 0 < top_k <= n_experts 且 expert_ffn > 0, 得到 top_k=":
        "MoE needs 0 < top_k <= n_experts and expert_ffn > 0, got top_k=",
    "未知的模型 (unknown model) ": "unknown model ",
    "未知的键 (unknown keys, not used): ": "unknown keys (not used): ",
    "读不了 config (cannot read) ": "cannot read the config ",
    " 不是 JSON (not JSON): line ": " is not JSON: line ",
    "config.json 应是一个 JSON object, 得到 ": "config.json should be a JSON object, got ",
    "config 缺少 (missing) ": "the config is missing ",
    "不认识的激活函数 (unknown activation) ": "unknown activation ",
    "config 的 ": "the config's ",
    " 应是非负整数 (a non-negative int), 得到 ": " should be a non-negative int, got ",
    " 和 kv_heads=": " and kv_heads=",
    # planning/step.py (and 2 fragments listed above)
    ") 要被 tp x cp x pp = ": ") must be divisible by tp x cp x pp (",
    " 整除 (must divide by tp x cp x pp)": ")",
    " 超过一个节点的 ": " exceeds the ",
    " 个 GPU (tensor parallelism stays inside a node, on NVLink)":
        " GPUs of a node (tensor parallelism stays inside a node, on NVLink)",
    " 超过 ": " exceeds ",
    " 层 (more pipeline stages than layers)": " layers (more pipeline stages than layers)",
    ") 要被 2 x cp = ": ") must be divisible by 2 x cp (",
    " 整除 (context parallelism cuts a sequence into 2·cp chunks)":
        "): context parallelism cuts a sequence into 2·cp chunks",
    "每步 ": "the ",
    " 个序列分不成 DP ": " sequences of a step cannot be split into DP ",
    "interleaving (virtual_stages > 1) 需要 pp > 1, 且 micro-batch 数 (":
        "interleaving (virtual_stages > 1) needs pp > 1 and a number of micro-batches (",
    ") 的倍数 (Megatron: micro-batches must be a multiple of pp; Llama 3's flexible N: give group)":
        ") (Megatron: micro-batches must be a multiple of pp; Llama 3's flexible N: give group)",
    " 需要 MoE 模型, 且要整除 dp x cp = ": " needs an MoE model and must divide dp x cp = ",
    " 和专家数 ": " and the number of experts ",
    " 没有 FP8 tensor core (no FP8 on this GPU): use bf16 GEMMs": " has no FP8 tensor cores: use bf16 GEMMs",
    "FlashAttention-3 只在 Hopper 上 (flash3 needs Hopper)": "FlashAttention-3 runs only on Hopper (flash3 needs Hopper)",
    " 段 (a pipeline stage without layers)": " stages (a pipeline stage without layers)",
    " 不整除每段的层数 ": " does not divide the layers per stage ",
    # plots.py
    "trace 里没有这些 record_function 区间 (no ranges named ": "no record_function ranges (named ",
    # profile.py
    "profile 名称应是字符串 (str), 得到 ": "the profile name should be a string (str), got ",
    "未知的 profile (unknown profile) ": "unknown profile ",
    # recompute.py
    "compare 需要一个显式 attention 的 models.TransformerBlock (fused_attention=False)":
        "compare needs a models.TransformerBlock with explicit attention (fused_attention=False)",
    "inp 要 requires_grad=True：在一个多层模型里，每一层的输入都需要梯度":
        "inp needs requires_grad=True: in a model of many layers, every layer's input needs a gradient",
    # reference/ (the package)
    "未知的 section (unknown section) ": "unknown section ",
    "device 应是 'cpu' 或 'cuda' (profiles measure these two), 得到 ":
        "device should be 'cpu' or 'cuda' (the profiles measure these two), got ",
    "mine 应是 reference.measure_here(...) 的结果 (a partial profile dict), 得到 ":
        "mine should be the result of reference.measure_here(...) (a partial profile dict), got ",
    # training_state.py (and 1 fragment listed above)
    "需要 Tensor 或 None, 得到 ": "needs a Tensor or None, got ",
    "optimizer 应是 torch.optim.Optimizer, 得到 ": "optimizer should be a torch.optim.Optimizer, got ",
    "optimizer 应是 ": "optimizer should be one of ",
    "precision 应是 ": "precision should be one of ",
    "fp32_grads 应是 ": "fp32_grads should be one of ",
    " 之一 (不是 'none' 时只用于 precision='mixed'), 得到 ": " (other than 'none' only with precision='mixed'), got ",
    # zero.py (and 2 fragments listed above)
    "optimizer 应是 'adam', 'sgd' 或 'sgd_momentum', 得到 ": "optimizer should be 'adam', 'sgd' or 'sgd_momentum', got ",
    "ZeRO stage 应是 0, 1, 2 或 3, 得到 ": "ZeRO stage should be 0, 1, 2 or 3, got ",
    "reduce_dtype 应是模型的 dtype (": "reduce_dtype should be the model's dtype (",
    ") 或 torch.float32, 得到 ": ") or torch.float32, got ",
}
