"""The usual mistakes' hints in English, by the same keys as lecture2.checks.HINTS (Chinese, with the English term):
the catalogue's English for the English edition (lecture2.messages.hint). A check still names a mistake by its key
only; the grader, validate and the lab show the text of that key in the student's language.

tests/test_messages.py holds every key of checks.HINTS, and every key the exercises of each translated notebook
register (lecture2.editions.translated), to an English text here; a key here that checks.HINTS lacks fails too.
Add a key's English here when a check gains a hint, or when a notebook is translated.
"""
from __future__ import annotations

HINTS_EN: dict[str, str] = {
    "bits_for_bytes": "It looks as if you counted bits, not bytes (1 byte = 8 bits).",
    "bytes_for_bits": "It looks as if you took bytes for bits (divided by 8 once too often).",
    "gib_for_gb": "It looks as if you used GiB (2**30 bytes); GB (10**9 bytes) is asked for here.",
    "gb_for_gib": "It looks as if you used GB (10**9 bytes); GiB (2**30 bytes) is asked for here.",
    "element_size": "The bytes per element are wrong: look at the dtype's itemsize.",
    "numel": "The element count (numel) is wrong: it is the product of the shape's dimensions, not their sum.",
    "bias_off_by_one": "The exponent bias is off by one: bias = 2**(e-1) - 1.",
    "eps_half": "eps is the spacing between 1.0 and the next representable number, 2**-m, not half of it (that is "
                "the bound on the rounding error).",
    "mantissa_max": "The largest value takes the largest exponent and a mantissa of all ones as well: "
                    "1 + (2**m - 1) / 2**m = 2 - 2**-m, not 1.",
    "subnormal": "You computed the smallest subnormal; tiny is the smallest normal number.",
    "multiply_add": "The 2 of the multiply-add is missing: each multiply-add is 2 FLOPs.",
    "forward_only": "You counted the forward pass only; forward + backward is about 3 times the forward.",
    "loss_not_divided": "The loss is not divided by the number of accumulation steps: the gradient is `steps` "
                        "times too large.",
    "optimizer_states": "The optimizer states are missing: Adam also keeps m and v for every parameter.",
    "sparse_peak": "Off by a factor of 2: the peak looks twice too large. The datasheet's 1979 TFLOP/s for the H100 "
                   "is with 2:4 sparsity; training uses the dense peak, 989.4 (lecture2.hardware's table). Also "
                   "check that 6N was not written as 3N.",
    "hours_for_days": "Off by a factor of 24: hours and days are mixed up (1 day = 24 hours).",
    "seconds_for_days": "Off by a factor of 86400: FLOPs / (FLOP/s) gives seconds; / 3600 gives hours, and / 24 "
                        "again gives days.",
    "seconds_for_hours": "Off by a factor of 3600: seconds and hours are mixed up; the price is per GPU-hour.",
    "gpu_count": "Off by a factor of n_gpus: the number of GPUs is missing. The total throughput is GPUs x peak x "
                 "MFU, and the bill is GPU-hours = hours x GPUs.",
    "two_n": "Off by a factor of 3: training costs 6N FLOPs per token (2N forward + 4N backward); 2N is the forward "
             "pass only.",
    "mfu_forgotten": "MFU is missing: a GPU achieves only a fraction of its peak; the effective throughput is GPUs x "
                     "peak x MFU.",
    "mfu_inverted": "MFU is inverted: the effective throughput is peak x MFU (a product), not peak / MFU.",
    "ceil": "Round the number of GPUs up (math.ceil): round, floor or int() give too few GPUs, and the run misses "
            "its deadline.",
    "per_token": "Off by a factor of 1000: the cost per 1K (1,000) tokens is asked for, not per token.",
    "per_million": "Off by a factor of 1000: the cost per 1K (1,000) tokens is asked for, not per 1M tokens.",
    "zero_grad_in_loop": "zero_grad() is inside the micro-batch loop: each call clears the gradients accumulated so "
                         "far, and only the last micro-batch's are left. Clear once, before the loop.",
    "zero_grad_missing": "No zero_grad() before starting: the stale gradients left in .grad by the previous step "
                         "were accumulated too.",
    "accum_weights": "With micro-batches of unequal size, dividing by the number of steps does not give the big "
                     "batch's gradient: weight each micro-batch's mean loss by its share of the big batch, n_i / N.",
    "grads_cleared": ".grad was cleared: do not call zero_grad() after optimizer.step(); the gradients must stay in "
                     ".grad.",
    "fp16_tiny_threshold": "You used tiny (the smallest normal, 2**-14) as the threshold: FP16 also has subnormals, "
                           "down to 2**-24; only |x| <= half the smallest subnormal (2**-25) becomes 0.",
    "fp16_subnormal_not_half": "The threshold is off by half: a number between 2**-25 and the smallest subnormal "
                               "2**-24 rounds to 2**-24, not to 0; the threshold is 2**-25.",
    "fp16_round_half_even": "A number exactly equal to 2**-25 lies halfway between 0 and 2**-24: round-half-to-even "
                            "rounds it to 0, so the condition is <=, not <.",
    "forgot_scale": "The scale is missing: GradScaler multiplies the loss (and so every gradient) by the scale "
                    "before the backward pass in FP16.",
    "zeros_counted": "Gradients that were zero to begin with are counted too: count only the nonzero elements "
                     "that a cast turns into 0.",
    "master_weights": "The parameters were cast to low precision: mixed precision keeps FP32 master weights and "
                      "lets only the matmuls inside autocast run in BF16/FP16. Do not call model.to(torch.bfloat16).",
    "no_autocast": "The Linear layer's output is not in low precision: run the forward pass and the loss inside "
                   "torch.autocast(device_type=x.device.type, dtype=...).",
    "scaler_unused": "FP16 without a GradScaler: use scaler.scale(loss).backward(), scaler.step(optimizer), "
                     "scaler.update().",
    "scaled_grads": "The parameters moved `scale` times too far: the gradients still carry the loss scale. Use "
                    "scaler.step(optimizer) (it unscales first, and skips the step on inf/NaN), not "
                    "optimizer.step().",
    "scaler_update": "scaler.update() is missing: without it the scale neither halves after an inf nor grows after "
                     "good steps.",
    "adam_step": "Adam's step counter is missing: one state['step'] per parameter tensor, an fp32 scalar of 4 bytes.",
    "master_weights_state": "The fp32 master weights are missing: mixed precision's optimizer states are master + m "
                            "+ v = 4 + 4 + 4 = 12 bytes/param.",
    "attention_per_head": "There is one attention matrix per head: softmax saves (B, H, T, T), B·H·T² elements, "
                          "not B·T².",
    "rmsnorm_fp32": "RMSNorm computes in fp32: in a bf16/fp16 model the x, x̂ (normalized) and rstd it saves are "
                    "fp32 (4 bytes).",
    "norm_weights": "The normalization layers' weights are missing: each RMSNorm / LayerNorm has d_model "
                    "parameters, and a block has two (norm1, norm2).",
    "attention_proj": "Attention has 4 d×d matrices: Q, K, V (fused as qkv: d → 3d) and the output projection "
                      "proj (d → d); do not leave out proj.",
    "d_ff_ignored": "When d_ff is given, use it: the FFN is d → d_ff → d, 2·d·d_ff parameters; 4d only when "
                    "d_ff=None.",
    "linear_bias": "With bias=True every Linear also has out_features biases: qkv 3d, proj d, up d_ff, down d.",
    "rms_norm_bias": "RMSNorm has no bias (only a weight): bias=True adds biases to Linear and LayerNorm only.",
    "layernorm_bias": "LayerNorm(bias=True) has d_model biases besides its weight.",
    "position_embeddings": "The position embeddings (pos_emb) are missing: block_size × d_model parameters.",
    "final_norm": "The final normalization layer norm_f (before lm_head) is missing.",
    "tied_twice": "The tied matrix was counted twice: lm_head.weight is tok_emb.weight, and parameters() counts it "
                  "once.",
    "untied_head": "With tie_embeddings=False, lm_head has its own vocab_size × d_model weight; do not leave it out.",
    "rms_mean_not_square": "RMSNorm uses the mean of squares, mean(x²), not the mean of x.",
    "rms_layernorm": "This is LayerNorm (the mean is subtracted): RMSNorm does no centering, it only divides by the "
                     "RMS.",
    "rms_sum": "You used sum(x²) instead of mean(x²): divide by d (the length of the feature dimension).",
    "rms_no_sqrt": "The square root is missing (sqrt / rsqrt): RMS = sqrt(mean(x²) + eps).",
    "rms_no_eps": "eps is missing: y = x / sqrt(mean(x²) + eps) · weight (an all-zero input would become NaN).",
    "rms_eps_outside": "eps goes inside the square root: sqrt(mean(x²) + eps), not sqrt(mean(x²)) + eps.",
    "rms_dim": "Normalized over the wrong dimension: take the mean over the last dimension (dim=-1, the feature "
               "dimension d_model), with keepdim=True.",
    "rms_weight": "The learnable weight (scale) is not applied.",
    "rms_detached": "Gradients must flow through forward: do not use .detach(), .data, .item() or torch.no_grad().",
    "shape_scalar": "shape=() is a scalar: it has 1 element (math.prod(()) == 1), not 0.",
    "tensor_allocated": "Do not actually allocate the tensor: its bytes depend only on its shape and dtype (elements "
                        "× dtype.itemsize), and the check uses shapes too large for any machine to allocate.",
    "format_from_table": "These are torch.finfo's values of a dtype PyTorch has: derive them from the bit counts "
                         "(e, m) with the formula, so that formats PyTorch lacks work too.",
    "e4m3fn_max": "448 is the maximum of float8_e4m3fn (the E4M3 of the OCP FP8 specification), which uses the "
                  "all-ones exponent for numbers too; the exercise asks for the IEEE-style format (all-ones exponent "
                  "reserved for inf/NaN), whose E4M3 maximum is 240.",
    "grad_3x_dropped": "The 3x term is missing: its derivative is 3.",
    "grad_returned_y": "You returned y itself, not the derivative dy/dx.",
    "grad_by_autograd": "Use the formula only: the check calls your function under torch.no_grad(), where no graph "
                        "is built, so backward() and torch.autograd cannot be used.",
    "mse_two": "The 2 from differentiating the square is missing: d(r²)/dr = 2r.",
    "mse_mean": "L is a mean, not a sum: do not forget to divide by N.",
    "mse_sign": "The sign is flipped: the residual is prediction − target = X @ w + b − y.",
    "mse_grad_b_scalar": "b is added to every sample, so its gradient sums over the samples and is a scalar (a 0-d "
                         "tensor).",
    "saved_params": "The parameters are counted: they are in memory for training and inference alike; count only "
                    "the activations saved for the backward pass.",
    "saved_input": "The input x is missing: the first Linear needs it for its weight gradient, dL/dW = (dL/dh)^T x, "
                   "so it is saved.",
    "saved_shared": "ReLU's output and the next Linear's input are the same storage and take memory once: do not "
                    "count them twice.",
    "saved_logits": "The last layer's output (the logits) is not saved: a Linear's backward does not need its own "
                    "output.",
    "saved_preact": "The Linear output before the ReLU (the pre-activation) is not saved: ReLU saves its own output.",
    "count_by_formula": "Compute by formula: do not build an nn.Module to count its parameters (not even on the "
                        "meta device).",
    "rms_state_dict_key": "The parameter must be called weight (self.weight = nn.Parameter(...)): then the "
                          "state_dict keys match torch.nn.RMSNorm's, and each can load the other's.",
    "rms_from_scratch": "Write RMSNorm from scratch: do not call torch.nn.RMSNorm, F.rms_norm or layer_norm.",
    "rms_output_dtype": "The output dtype must match the input's: if you compute in float(), cast back with "
                        ".to(x.dtype) at the end.",
    "no_optimizer_step": "optimizer.step() (or scaler.step) was not called: the parameters did not change.",
    "fp16_cast_for_real": "Do not actually cast to float16: predict with the threshold from "
                          "torch.finfo(torch.float16) (2**-25); the check compares your prediction with a real cast.",
    "fp16_no_nonzero": "Return 0.0 when there are no nonzero elements: do not divide by 0 (0 / 0 is NaN).",
    "precision_unknown": "An unknown precision (e.g. 'fp8') must raise ValueError, not silently train in fp32.",
    "matmul_fma": "You counted mn(2k-1): the convention (and the FLOP counter) counts each multiply-add as 2 FLOPs, "
                  "2mkn.",
    "matmul_batch": "The batch dimensions are missing: every element of a batched matmul is one 2mkn.",
    "matmul_broadcast": "The batch dimensions combine by broadcasting into the output's batch shape "
                        "(torch.broadcast_shapes): not one side's only, and not the two multiplied.",
    "matmul_inner": "When the inner dimensions k differ, torch.matmul raises: your function must raise ValueError "
                    "too.",
    "matmul_allocated": "Do not create the tensors: the FLOPs depend only on the shapes, and the check uses shapes "
                        "too large to allocate.",
    "attn_bt_literal": "Taking the lecture's (BT, d)×(d, BT) literally gives 2(BT)²d = 2B²T²d: attention is a "
                       "(T, d/H)×(d/H, T) per sequence and per head, 2BT²d in all.",
    "qkv_one_projection": "The QKV projection is three projections (Q, K, V) fused into one d → 3d matrix: "
                          "2·BT·d·3d = 6BTd².",
    "ffn_one_matrix": "The FFN has two matrices (up: d → 4d, down: 4d → d), 2·BT·d·4d = 8BTd² each, 16BTd² in all.",
    "scores_t_squared": "Attention's two matmuls grow with T²: (T, d/H)×(d/H, T) and (T, T)×(T, d/H), 2BT²d over "
                        "the B·H of them.",
    "six_n_embeddings": "An embedding is a lookup, not a matmul: the parameters of tok_emb / pos_emb (and the "
                        "norms) are not in the 6N; lm_head is.",
    "six_n_lm_head": "lm_head is missing: (BT, d)×(d, V) is a real matmul, and counts 6Vd even when it shares its "
                     "weight with tok_emb (tied).",
    "attention_term": "The attention term is 12·T·d per layer (PaLM: 12·L·H·Q·T, with H·Q = d): added with "
                      "attention=True, left out with attention=False.",
    "attention_block_size": "The attention term uses the actual sequence length T, not config.block_size (the rows "
                            "of the position embedding).",
    "d_ff_per_token": "The FFN's width is config.d_ff (4d only when it is None): 4d² + 2·d·d_ff per layer.",
    "zero2_params": "ZeRO-2 (stage 2) does not shard the parameters: it shards the optimizer states and the "
                    "gradients, and every rank still holds all the parameters; stage 3 (ZeRO-3 / FSDP) shards them "
                    "too.",
    "zero1_optimizer_whole": "ZeRO-1 (stage 1) shards exactly the optimizer states: each rank keeps master, m and "
                             "v for its own 1/n (ceil(N/n) parameters), not for all of them.",
    "zero1_grads": "ZeRO-1 (stage 1) does not shard the gradients: every rank still holds all N of them; stage 2 "
                   "shards them.",
    "zero3_all_parts": "ZeRO-3 (stage 3) shards all three, parameters, gradients and optimizer states, n ways: each "
                       "rank keeps each of them for ceil(N/n) parameters only.",
    "shard_ceil": "When n does not divide N, each rank's shard is ceil(N/n) elements (the last one zero-padded): "
                  "round up, not N // n.",
    "ring_n_minus_1": "Off by a factor of n/(n-1): in a ring each rank sends only (n-1)/n of the data (its own "
                      "share stays): all-reduce sends 2(n-1)/n × S, all-gather and reduce-scatter (n-1)/n × S each.",
    "allgather_twice": "ZeRO-3 all-gathers the parameters twice per step (once for the forward pass; they are freed "
                       "after it and gathered again before the backward pass), plus the gradients' reduce-scatter: "
                       "3(n-1)/n × the parameter bytes, not 2(n-1)/n.",
    "allreduce_two_phases": "all-reduce = reduce-scatter + all-gather: each rank sends 2(n-1)/n × S, not "
                            "(n-1)/n × S.",
    "comm_per_rank": "Off by a factor of n: the bytes each rank sends are asked for, not the total over all ranks.",
    "zero1_allreduce": "This is PyTorch's ZeroRedundancyOptimizer (DDP's all-reduce + a parameter broadcast = "
                       "3(n-1)/n); the paper's ZeRO-1 reduce-scatters the gradients and all-gathers the parameters, "
                       "2(n-1)/n like DDP.",
    "returns_int": "Return an int: counts such as bytes, parameters and GPUs are integers. Use int(...), // or "
                   "math.ceil, not a float or a tensor.",
    "returns_float": "Return a Python float: use float(...) or tensor.item(), not a tensor, an int or a numpy "
                     "scalar.",
    "returns_dict": "Return a dict (with the keys the exercise names), not a total, a list or a tuple.",
    "returns_bool": "Return a Python bool (True / False): use bool(...) or .item(), not a tensor or 0 / 1.",
    "returns_number": "Return a number (int or float), not a tensor, a str, None or a numpy scalar.",
    "returns_type": "The type of the returned value is wrong: see what the exercise asks you to return.",
    "raises_value_error": "An input the function does not know (e.g. an unknown stage, recipe or strategy) must "
                          "raise ValueError, not quietly return a value.",
    "builtin_types": "Return built-in types, not subclasses of them or numpy scalars.",
    "calculator_off": "This exercise asks for your own formula: the check calls your function with the course's "
                      "calculator (lecture2.estimate, the planner, ...) switched off, and an answer that calls it "
                      "earns nothing.",
    # registered by lecture2.exercises.modules (notebook 03)
    "modules.rms_init_ones": "Initialise weight to all ones (nn.Parameter(torch.ones(d_model))), as torch.nn.RMSNorm "
                             "does: at the start RMSNorm only normalizes, it does not scale.",
    "modules.rms_keepdim": "Take the mean with keepdim=True (mean(dim=-1, keepdim=True)): the result has shape "
                           "(..., 1) and broadcasts against x.",
    # registered by lecture2.exercises.sharding (notebooks 10 and 11)
    "sharding.instrument_off": "This exercise asks you to derive the formula yourself: the check calls your "
                               "function with the course's calculators and engines (lecture2.estimate, planner, "
                               "planning, network, parallel, distributed, zero) switched off, and calling them "
                               "raises.",
    "sharding.padded_buffer": "Collectives (reduce-scatter, all-gather) need every rank's shard to be the same size, "
                              "so ZeRO pads its flat buffer to n shards: what is not sharded (ZeRO-1's parameters "
                              "and gradients, ZeRO-2's parameters) is the whole padded buffer, n·⌈N/n⌉ elements, not "
                              "N. Plain data parallelism (stage 0) neither shards nor pads.",
    "sharding.padded_comm": "ZeRO's collectives act on the padded flat buffer (⌈N/n⌉ elements a shard): each time, "
                            "each rank sends n−1 shards, (n−1)·⌈N/n⌉ elements; only DDP's all-reduce acts on N "
                            "elements.",
    "sharding.reduce_dtype": "Gradients and parameters may be communicated in different dtypes: the gradients "
                             "(all-reduce, reduce-scatter) in reduce_bytes, the parameters' all-gather in "
                             "dtype_bytes (Megatron and torchtitan reduce a bf16 model's gradients in fp32).",
    "sharding.shard_plus_one": "N // n + 1 equals ⌈N/n⌉ only when n does not divide N: when it does, each shard "
                               "gets one element too many. Round up with math.ceil(N / n) or -(-N // n).",
    "sharding.comm_divided_twice": "Off by a factor of n (too small): in one ring collective each rank sends n−1 "
                                   "shards of S/n, and (n−1)/n·S is already one rank's share; do not divide by the "
                                   "number of ranks n again.",
    "sharding.hide_ratio": "Compare two times: computing b tokens takes a GPU 6N·b / flops_per_s seconds, and "
                           "sending its bytes takes (bytes sent per parameter)·N / bus_bytes_per_s seconds; set "
                           "them equal and solve for b (N cancels).",
    "sharding.hide_per_gpu": "Tokens per GPU are asked for: each GPU computes only its own b tokens and sends only "
                             "its own share of bytes; both sides are one rank's, so do not multiply (or divide) by "
                             "the number of ranks.",
    # registered by lecture2.exercises.pipeline (notebook 11)
    "pipeline.instrument_off": "This exercise asks you to derive the formula yourself: the check calls your function "
                               "with the course's calculators (lecture2.planner, planning, estimate, ...) switched "
                               "off, and calling them raises.",
    "pipeline.bubble_over_compute": "The bubble is the idle share of the whole pipeline's time: the denominator is "
                                    "every time slot of the pipeline (busy + idle), not the busy ones only: "
                                    "(p−1)/(v·m + p − 1), not (p−1)/(v·m) (that is Narayanan et al. 2021's bubble "
                                    "time fraction, relative to the compute time).",
    "pipeline.bubble_no_v": "With interleaving a time slot is one chunk (1/v of a micro-batch's compute): there are "
                            "v·m busy slots and still p − 1 idle ones, so the idle share is (p−1)/(v·m + p − 1), "
                            "not (p−1)/(m + p − 1).",
    "pipeline.bubble_units": "Count the numerator and the denominator in the same time slots: with interleaving a "
                             "slot is one chunk; the bubble is p − 1 chunk slots, the whole pipeline v·m + p − 1.",
    "pipeline.in_flight_plain": "Interleaved 1F1B warms up longer: before its first backward, stage s runs "
                                "Megatron's 2(p−s−1) + (v−1)·p chunk forwards, plus the 1 being computed; not "
                                "1F1B's p − s micro-batches.",
    "pipeline.in_flight_uncapped": "A stage never holds more activations than all its micro-batches: when the "
                                   "warm-up is longer than m micro-batches (v·m chunks), every forward runs before "
                                   "the first backward; take min(..., v·m) chunks.",
    "pipeline.in_flight_chunks": "Each chunk holds only 1/v of the stage's layers: divide the chunks in flight by v "
                                 "to get micro-batches' worth of (the whole stage's) activations.",
    "pipeline.stage_from_one": "Stages count from 0: the first stage is 0, which warms up longest and holds the most "
                               "(min(p, m) micro-batches under 1F1B).",
    "pipeline.interleaved_at_v1": "v = 1 is plain 1F1B: a warm-up of p − s − 1 micro-batches plus the 1 being "
                                  "computed, min(p − s, m) in flight; interleaving's 2(p − s − 1) holds only for "
                                  "v > 1.",
}
