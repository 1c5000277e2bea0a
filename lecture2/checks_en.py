"""The English of lecture2.checks' and lecture2.exercises' messages, by fragment (lecture2.messages.localize).

A key is a string constant of lecture2.checks or of an exercise module that holds Chinese, exactly as the code has it (for
an f-string: each constant part between its {fields}); its value is that fragment's English, written so that the
fragments and the fields, in the Chinese order, read as an English sentence. A key that several messages share
(punctuation, ", got ") has one English that fits every use. Not here: the hints (lecture2.hints_en), the
instruments' errors (lecture2.errors_en).

tests/test_messages.py holds every fragment of these modules to a key here, and every key here to the code: after
changing a message, change its key and its English together.
"""
from __future__ import annotations

FRAGMENTS_EN: dict[str, str] = {
    # ---- lecture2.checks: the comparisons' words, shared by every exercise
    ": 期望 (expected) ": ": expected ",
    "，得到 (got) ": ", got ",
    "，得到 ": ", got ",
    "。": ".",
    ")。": ").",
    "，": ", ",
    "、": " and ",
    "？": "?",
    " 或 ": " or ",
    "\n提示 (hint): ": "\nhint: ",
    "比值 ratio got/expected = ": "ratio got/expected = ",
    "差 difference got − expected = ": "difference got − expected = ",
    # "= +2 × d：是不是多算了 2 次 d、漏算了 V·d？": did you over-count by 2 times d and under-count by V·d?
    "：是不是": ": did you ",
    "多算": "over-count",
    "漏算": "under-count",
    "了": " by",
    " 次": " times",
    ": 没有得到结果 (no observation came back)": ": no observation came back",
    ": 你的函数调用了课程的计算器 (lecture2.estimate 等)。": ": your function called the course's calculator "
                                                   "(lecture2.estimate, ...).",
    ": 应返回 Python 内置类型 (built-in types: int, float, str, list, tuple, dict) 或 torch.Tensor 组成的值，得到 ":
        ": should return a value made of Python's built-in types (int, float, str, list, tuple, dict) or "
        "torch.Tensor, got ",
    "。用 int(...) / float(...) / .item() / .tolist() 转换。": ". Convert with int(...) / float(...) / .item() / "
                                                           ".tolist().",
    ": 应返回 ": ": should return ",
    ": 应返回一个数 (a real number: int or float)，得到 ": ": should return a real number (int or float), got ",
    ": 应返回一个数 (a number)，得到 ": ": should return a number, got ",
    "练习 ": "exercise ",
    " 还没有完成 (not implemented yet)。": " is not implemented yet.",
    "\n(检查得到的不是 True/False，而是 ": "\n(the check got neither True nor False but ",
    "：返回值的类型不对)": ": the returned value has the wrong type)",

    # ---- shared by several exercise modules
    " 出错 (raised) ": " raised ",
    " 应该 raise ValueError": " should raise ValueError",
    ") 应该 raise ValueError": ") should raise ValueError",

    # ---- exercises.dtypes (01)
    " 应有键 (keys) 'max', 'tiny', 'eps'，得到 ": " should have the keys 'max', 'tiny', 'eps', got ",
    " 返回的是 torch.finfo(": " returned the values of torch.finfo(",
    ") 的值。": ").",

    # ---- exercises.autograd (02)
    "检查调用你的函数时 autograd 的 backward 是关闭的 (switched off)":
        "autograd's backward is switched off while the check calls your function",
    "检查调用你的函数时 torch.autograd.grad 是关闭的 (switched off)":
        "torch.autograd.grad is switched off while the check calls your function",
    "mse_grads 应返回 (grad_w, grad_b) 这样的 tuple，得到 ": "mse_grads should return a tuple (grad_w, grad_b), got ",
    ": shape 应是 ": ": the shape should be ",

    # ---- exercises.modules (03)
    ": 检查的观测 (observation) 不完整，得到 ": ": the check's observation is incomplete, got ",
    ": 检查的观测 (observation) 不完整": ": the check's observation is incomplete",
    ": 应是 torch.Tensor，得到 ": ": should be a torch.Tensor, got ",
    ": 形状 (shape) 应是 ": ": the shape should be ",
    ": 与 torch.nn.RMSNorm 不一致，最大差 (max abs diff) ": ": differs from torch.nn.RMSNorm, max abs diff ",
    "，允许 ": ", allowed ",
    " × max(1, max|expected|)。": " × max(1, max|expected|).",
    "RMSNorm 应是你自己写的 nn.Module 子类 (a subclass of nn.Module)": "RMSNorm should be your own subclass of nn.Module",
    "RMSNorm 应是你自己写的 nn.Module 子类，不是 torch.nn.RMSNorm 的子类 (not a subclass of torch.nn.RMSNorm)。":
        "RMSNorm should be your own subclass of nn.Module, not a subclass of torch.nn.RMSNorm.",
    ": weight 应是形状为 (": ": weight should be an nn.Parameter of shape (",
    ",) 的 nn.Parameter": ",)",
    ": 输出 (output)": ": the output",
    ": 对输入的梯度 (x.grad)": ": the gradient of the input (x.grad)",
    ": 对 weight 的梯度 (weight.grad)": ": the gradient of weight (weight.grad)",
    ": 你的函数注册了 ": ": your function registered ",
    " 个 Parameter。": " Parameter(s).",
    ": state_dict 的键应是 ['weight']，得到 ": ": the state_dict's keys should be ['weight'], got ",
    ": 参数量 (numel)": ": the number of parameters (numel)",
    ": weight 的初值应全为 1 (torch.ones)": ": weight should start as all ones (torch.ones)",
    ": 你的 forward 调用了 ": ": your forward called ",
    ": 输出 dtype 应是 ": ": the output's dtype should be ",
    ": 输出没有梯度 (no grad_fn)": ": the output has no gradient (no grad_fn)",
    ": 输入或 weight 没有得到梯度 (.grad is None)": ": the input or weight got no gradient (.grad is None)",

    # ---- exercises.training_step (04)
    "每个参数一组": "all parameters in one group",
    " 个 param_groups": " param_groups",
    ": 与大 batch 的梯度不一致 (not allclose)：relative error ": ": not allclose to the big batch's gradient: relative "
                                                         "error ",
    "，比值 ratio (got·want / |want|²) = ": ", ratio (got·want / |want|²) = ",
    " 之后的 .grad": ": the .grad it leaves",
    ": 参数的变化 (before - after) / lr (SGD 做了一次 step)": ": the parameters' change (before - after) / lr (SGD took "
                                                         "one step)",
    ": 没有得到形状为 ": ": no gradient vector of shape ",
    " 的梯度向量 (no gradient vector came back)。": " came back.",
    " 的返回值": ": its return value",
    " 返回的 loss": ": the loss it returns",
    " 第 ": ": after step ",
    " 步之后的参数与 torch.optim.AdamW 不一致：差 / 参考这一步移动的距离 = ":
        ", the parameters differ from torch.optim.AdamW's: difference / how far the reference moved them in this "
        "step = ",
    "（允许 1e-4）。": " (allowed: 1e-4).",
    ": 你的类不是 torch.optim.Optimizer 的子类。": ": your class is not a subclass of torch.optim.Optimizer.",
    ": 没有得到参数 (no parameters came back)。": ": no parameters came back.",
    ": 参数的个数变了 (the model's parameters changed shape)。": ": the model's parameters changed shape.",
    ": 用 state_dict() 存档、load_state_dict() 恢复的优化器，下一步和原来的不一样。":
        ": an optimizer saved with state_dict() and restored with load_state_dict() takes a different next step "
        "from the original's.",

    # ---- exercises.flops (05)
    ": 你的函数调用了课程的仪器 (lecture2.measure)。": ": your function called the course's instrument "
                                                "(lecture2.measure).",
    "，得到 (got) None：这个拐点是到得了的。": ", got None: this ridge point can be reached.",
    ": 期望 (expected) None (T 多大都到不了这个拐点)，得到 (got) ": ": expected None (no T, however large, reaches this "
                                                            "ridge point), got ",

    # ---- exercises.memory (06)
    ": 检查的测量 (the instrument beside your answer) 没有返回它该返回的数据 (keys ":
        ": the instrument beside your answer did not return the data it should (keys ",
    ")，得到 ": "), got ",
    "结果变了 (results changed)": "the results changed",
    "training_state_bytes 用了 lecture2.estimate (命令行计算器 the calculator) 的显存表或函数：检查时它被关掉了 (":
        "training_state_bytes used the memory tables or functions of lecture2.estimate (the calculator of the "
        "command line): the check switched it off (",
    " 应有三个键 'params', 'grads', 'optimizer'，得到 ": " should have the three keys 'params', 'grads', 'optimizer', "
                                                     "got ",
    "training_state_bytes(N, 'fp32_adam') 应有三个键 'params', 'grads', 'optimizer'，得到 ":
        "training_state_bytes(N, 'fp32_adam') should have the three keys 'params', 'grads', 'optimizer', got ",
    ") 应该 raise ValueError (未知的配方)": ") should raise ValueError (an unknown recipe)",
    " 的字节数": ": the byte counts",

    # ---- exercises.checkpointing (07)
    ": 检查的测量 (the instrument beside your class) 没有返回它该返回的数据，得到 ":
        ": the instrument beside your class did not return the data it should, got ",
    ": CheckpointedStack(blocks, segments) 应是一个 nn.Module，得到 ": ": CheckpointedStack(blocks, segments) should be "
                                                                "an nn.Module, got ",
    "形状 ": "shape ",
    ": 输出与普通 stack 不同 (outputs differ; got ": ": the outputs differ from the plain stack's (got ",
    ": 梯度 (gradients) 与普通 stack 不同，或者 x / 参数没有得到梯度": ": the gradients differ from the plain stack's, or "
                                                           "x / the parameters got no gradient",
    ": 前向保存的字节数 (saved bytes, parameters excluded)": ": the bytes the forward saves (parameters excluded)",
    " 应该 raise ValueError (segments 必须在 1..L 之间)": " should raise ValueError (segments must be between 1 and L)",
    "CUDA 峰值显存 (peak memory) 没有下降: plain ": "the CUDA peak memory did not go down: plain ",

    # ---- exercises.timing (08)
    "答案所在的进程送回的不是检查要的观测 (observation with keys ": "the answer's process did not send back the "
                                                              "observation the check asked for (keys ",
    ")，而是 ": ") but ",
    "my_benchmark 不能调用 lecture2.measure.benchmark (the course's timer)":
        "my_benchmark must not call lecture2.measure.benchmark (the course's timer)",
    "my_benchmark 不能调用 lecture2.measure.benchmark (the course's timer)：自己写 warm-up、synchronize 和 median。":
        "my_benchmark must not call lecture2.measure.benchmark (the course's timer): write the warm-up, the "
        "synchronize and the median yourself.",
    " 调用了 lecture2.measure.benchmark。": " called lecture2.measure.benchmark.",
    # "{what}: fn 应被调用恰好 warmup + repeat = 7 次 (warmup=0：不预热)，实际 5 次。"
    ": fn 应被调用恰好 warmup + repeat = ": ": fn should be called exactly warmup + repeat = ",
    " (warmup=0：不预热)": " (warmup=0: no warm-up)",
    "，实际 ": ", it was called ",
    " 次。": " times.",
    "my_benchmark 用一个已知耗时的 fn: 期望 (expected) 中位数 ": "my_benchmark on an fn of known duration: expected the "
                                                           "median ",
    " ms，得到 (got) ": " ms, got ",
    " ms。": " ms.",
    ": 记录的事件 (event log) 不是 'call' / 'sync' / 'clock' 的列表。": ": the event log is not a list of 'call' / "
                                                                 "'sync' / 'clock'.",
    # "{what}: 记录了 3 次调用，应是 7 次。"
    ": 记录了 ": ": the log holds ",
    " 次调用，应是 ": " calls, where fn should run ",
    ": 有一次计时的 fn() 之后没有读时钟 (time.perf_counter())。": ": a timed fn() was not followed by a reading of the "
                                                            "clock (time.perf_counter()).",
    # "在 GPU 上，5 次计时的调用里有 2 次之后没有调用 torch.cuda.synchronize()。"
    "在 GPU 上，": "On the GPU, of ",
    " 次计时的调用里有 ": " timed calls, ",
    " 次之后没有调用 torch.cuda.synchronize()。": " were not followed by torch.cuda.synchronize().",
    # "在 GPU 上，5 次计时里有 2 次先读了时钟、后同步：时钟停在 kernel 启动之后、完成之前。"
    " 次计时里有 ": " timings, ",
    " 次先读了时钟、后同步：时钟停在 kernel 启动之后、完成之前。": " read the clock first and synchronized after: the "
                                                          "clock stopped after the kernel was launched, before it "
                                                          "finished.",
    # "{work}: my_benchmark 得到 1.2 ms，torch.utils.benchmark.Timer (1 个线程) 在它前后得到 1.0 和 1.1 ms (比值 ratio
    # 1.1，应在 0.5–2 之间)。"
    ": my_benchmark 得到 ": ": my_benchmark gave ",
    " ms，torch.utils.benchmark.Timer (1 个线程) 在它前后得到 ": " ms, and torch.utils.benchmark.Timer (1 thread) gave, "
                                                          "before and after it, ",
    " 和 ": " and ",
    " ms (比值 ratio ": " ms (ratio ",
    "，应在 0.5–2 之间)。": ", which should be between 0.5 and 2).",

    # ---- exercises.cost (09)
    ", 约 (about) ±": ", about ±",

    # ---- exercises.sharding, exercises.pipeline (10)
    ": 应返回 {'params', 'grads', 'optimizer'} 三个键，得到 ": ": should return the three keys {'params', 'grads', "
                                                          "'optimizer'}, got ",
    ": 每一项都应是 int，得到 ": ": every item should be an int, got ",
    "': stage 0-3 每参数字节应是 ": "': the bytes per parameter of stages 0-3 should be ",
    "每个 rank 发出的集合通信应当相同": "every rank should issue the same collectives",
    ", ...) 应该 raise ValueError": ", ...) should raise ValueError",
    ": 应返回 {'bubble', 'in_flight'} 两个键 (two keys), 得到 ": ": should return the two keys {'bubble', "
                                                             "'in_flight'}, got ",
    " 应该 raise ValueError: interleaving 需要 m 是 p 的倍数 (Megatron)": " should raise ValueError: interleaving needs "
                                                                    "m to be a multiple of p (Megatron)",
}
