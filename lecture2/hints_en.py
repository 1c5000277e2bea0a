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
    "two_n": "Off by a factor of 3: training costs 6N FLOPs per token (2N forward + 4N backward); 2N is the forward "
             "pass only.",
    "mfu_forgotten": "MFU is missing: a GPU achieves only a fraction of its peak; the effective throughput is GPUs x "
                     "peak x MFU.",
    "ceil": "Round the number of GPUs up (math.ceil): round, floor or int() give too few GPUs, and the run misses "
            "its deadline.",
    "zero_grad_in_loop": "zero_grad() is inside the micro-batch loop: each call clears the gradients accumulated so "
                         "far, and only the last micro-batch's are left. Clear once, before the loop.",
    "zero_grad_missing": "No zero_grad() before starting: the stale gradients left in .grad by the previous step "
                         "were accumulated too.",
    "accum_weights": "With micro-batches of unequal size, dividing by the number of steps does not give the big "
                     "batch's gradient: weight each micro-batch's mean loss by its share of the big batch, n_i / N.",
    "grads_cleared": ".grad was cleared: do not call zero_grad() after optimizer.step(); the gradients must stay in "
                     ".grad.",
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
    "checkpointing.not_module": 'CheckpointedStack must subclass nn.Module (class CheckpointedStack(nn.Module)): then '
                                'its instances have parameters, can .to(device), and are used like a plain stack.',
    "checkpointing.outputs_differ": 'Each block must run exactly once, in order; when L is not divisible by segments, '
                                    'do not drop the layers left over.',
    "checkpointing.grads_differ": "Do not detach() a segment's input, and do not copy the blocks: checkpoint passes "
                                  'the gradients back itself.',
    "checkpointing.no_checkpoint": 'No checkpoint: a plain forward keeps all the activations of every layer.',
    "checkpointing.every_layer": 'You checkpointed every layer: that keeps L layer inputs, not one per segment.',
    "checkpointing.segments_as_length": 'segments is the number of segments, not the number of layers per segment.',
    "checkpointing.last_segment_kept": 'The last segment is not checkpointed (as checkpoint_sequential does): all its '
                                       'activations are kept. This exercise asks for every segment to be checkpointed.',
    "checkpointing.reentrant": 'A full forward was recomputed: that is what use_reentrant=True does (or leaving '
                               'use_reentrant out). Use checkpoint(..., use_reentrant=False).',
    "checkpointing.no_recompute": 'Nothing was recomputed: it looks as if checkpoint is not used.',
    "checkpointing.segments_range": 'segments outside 1..L (0, negative, more than the number of layers) must raise '
                                    'ValueError, not be quietly changed into a valid number of segments.',
    "checkpointing.cuda_peak": 'With checkpointing, the CUDA peak memory of forward + backward must be below the plain '
                               "stack's: the forward keeps only each segment's input, and the backward recomputes one "
                               'segment at a time.',
    "checkpointing.memory_no_checkpoint": 'Checkpointing is not taken into account: the activations of all L layers '
                                          'are kept.',
    "checkpointing.memory_no_recompute": 'The segment recomputed in the backward is missing: its activations are kept '
                                         "too, until that segment's backward is done.",
    "checkpointing.memory_ceil": 'The longest segment has ceil(L/s) layers (rounded up), not L/s or L//s.',
    "checkpointing.best_tie": 'On a tie, take the larger segments: the same memory, and more segments recompute less.',
    "checkpointing.best_sqrt_l": "sqrt(L) holds only when a layer's activations A are about its input a: the best "
                                 'number of segments is about sqrt(L*A/a).',
    "checkpointing.best_search": 'The continuous optimum sqrt(L*A/a) is only an approximation: search the integers s = '
                                 '1..L (ceil makes the curve a staircase), and s cannot exceed L.',
    "cost.gpus_idea": 'The idea: the total FLOPs to do are fixed (6ND). How many FLOPs can one GPU do before the '
                      'deadline (peak x MFU per second, for as many seconds as the deadline allows)? The GPUs needed '
                      'are the ratio of the two, made a whole number.',
    "cost.tokens_idea": 'The idea: money buys GPU-hours: the budget / the price per GPU-hour. How many FLOPs does one '
                        'GPU-hour do? Each token costs 6N FLOPs. The number of GPUs only sets how long you wait, not '
                        'the total GPU-hours.',
    "flops.per_token_idea": 'The idea: 6 = 2 (forward: a multiply-add is 2 FLOPs) x 3 (forward + backward), for every '
                            'weight that takes part in a matrix multiply: first count which parameters do. The two '
                            'matrix multiplies of attention have no weights and are counted apart: start from each '
                            "layer's forward count, add twice that for the backward, then divide by the number of "
                            'tokens B*T.',
    "flops.intensity_idea": 'The idea: intensity = FLOPs / bytes moved. FLOPs: how many multiply-adds this matrix '
                            'multiply does, 2 FLOPs each; bytes: by the convention, A and B are read once and C '
                            "written once, each matrix's elements x the bytes per element.",
    "flops.intensity_output": 'The output is missing: C (m x n) is written back to memory too, and its bytes count '
                              'among the bytes moved.',
    "flops.intensity_per_element": 'The bytes per element (bytes_per_element) are not multiplied in: intensity is in '
                                   'FLOP/byte, not FLOP/element.',
    "flops.intensity_weights_only": "Only one matrix's bytes are counted: both inputs A and B are read and C is "
                                    "written; when T is not small against d, the input's and output's bytes cannot be "
                                    'neglected.',
    "flops.ridge_idea": "The idea: write the intensity of (T x d) x (d x d); it grows with T. Solve 'intensity >= "
                        "ridge' for a lower bound on T, then take the smallest whole number that meets it. As T grows, "
                        'the intensity tends to a ceiling (the weights stay, the input and output grow with T): a '
                        'ridge at or above the ceiling is never reached.',
    "flops.ridge_weights_only": "Only the weights' d x d bytes are counted (or 'intensity ~ T' was used): the input T "
                                'x d and the output T x d move too, and at a few hundred T they cannot be neglected.',
    "flops.ridge_round": 'The smallest whole T whose intensity **reaches** the ridge is asked for: round the lower '
                         'bound up (math.ceil); round or floor give a T still below the ridge.',
    "flops.ridge_never": 'The intensity has a ceiling: as T grows it tends to d / bytes_per_element (the weights are '
                         'read once, the input and output grow with T). When the ridge is at or above that ceiling, no '
                         'T reaches it: return None.',
    "flops.measured_not_derived": 'This exercise is a derivation: lecture2.measure is switched off while the check '
                                  'calls your function. Compute from the formulas for FLOPs and bytes; do not build '
                                  'tensors to count.',
    "memory.params_bf16": "This recipe's model computes in bf16: the weights are 2 bytes/param; the fp32 copy is the "
                          "master weights, counted under 'optimizer'.",
    "memory.params_fp32": "This recipe's model is fp32: the weights are 4 bytes/param.",
    "memory.grads_bf16": "The gradients have the model weights' dtype: a bf16 model's gradients are 2 bytes/param. The "
                         'fp32 copy of the gradients made for the master weights during the step is freed after it '
                         '(keeping it is the 18/20 bytes/param convention, not this recipe).',
    "memory.grads_fp32": "The gradients have the model weights' dtype: an fp32 model's gradients are 4 bytes/param.",
    "memory.adam_two_states": 'Adam keeps two states per parameter: the first moment m and the second moment v, each '
                              'as large as the parameters, both in fp32.',
    "memory.master_missing": 'In mixed precision, Adam updates an fp32 copy, the master weights: it too is a resident '
                             "copy per parameter (4 bytes), counted under 'optimizer' with m and v.",
    "memory.master_in_fp32_model": "An fp32 model has no master weights: Adam updates the model's own fp32 weights and "
                                   'keeps only m and v besides.',
    "memory.sgd_no_momentum": 'SGD without momentum keeps no state for the parameters; a momentum buffer exists only '
                              'when momentum > 0, one per parameter.',
    "memory.pure_bf16_no_master": 'Pure bf16 SGD has no master weights and no state: only the bf16 weights and '
                                  'gradients.',
    "memory.step_counters": "The convention does not count step counters: PyTorch's Adam stores a 4-byte state['step'] "
                            "per parameter tensor, which is the library's bookkeeping, not a copy of the parameters "
                            '(measured in the optional depth section).',
    "memory.calculator": 'This exercise asks you to count each copy by the recipe yourself: the memory tables of the '
                         'command-line calculator lecture2.estimate (MEMORY_RECIPES, training_memory_bytes) are not '
                         'the answer, and are switched off during the check.',
    "memory.recipe_unknown": "An unknown recipe (e.g. 'lion') must raise ValueError, not be quietly counted as some "
                             'known recipe.',
    "memory.rough_formula": "This is the lecture's rough formula (of the 20 BTd + 2 BT^2 kind): it leaves out "
                            "RMSNorm's input and rstd and GELU's input, and counts the attention matrix for one head "
                            'only. Count op by op: each op keeps the tensors its backward needs.',
    "memory.rstd": "RMSNorm's rstd is missing: each RMSNorm keeps one statistic per token (fp32, 4 bytes), 2*B*T for "
                   'the two norms.',
    "memory.rstd_fp32": "By the convention, the per-row statistics (RMSNorm's rstd, fused attention's log-sum-exp) are "
                        "fp32 (4 bytes), whatever the model's dtype.",
    "memory.norm_input": "RMSNorm's backward needs its input x (not only its output): each norm keeps x (d values) and "
                         'rstd.',
    "memory.gelu_input": "The FFN has two (B, T, 4d) tensors: GELU's backward needs its input (the output of up), and "
                         "down's backward needs its input (GELU's output).",
    "memory.counted_twice": "B*T*d values too many: the block's output is not kept by this layer (the residual add "
                            "keeps nothing; it is the next layer's norm1 input), and the attention output is proj's "
                            'input, one tensor counted once.',
    "memory.no_attention_matrix": 'The softmax of explicit attention keeps its output for the backward: a (T, T) per '
                                  'head, B*H*T^2 values in all (only a fused kernel does not keep it).',
    "memory.attention_matrix_once": 'The attention matrix is kept once: scaling and adding the mask keep nothing, and '
                                    "the softmax's output is the very tensor weights @ v uses.",
    "memory.kernel_extra": 'This is what PyTorch measurably keeps on the CPU: its RMSNorm also keeps x*rstd (and in a '
                           "bf16 model keeps x in fp32). The exercise asks for the convention's count: each norm keeps "
                           "only x (the model's dtype) and rstd (fp32).",
    "memory.flash_no_square": 'A fused kernel does not keep the (B, H, T, T) attention matrix: that is what '
                              'FlashAttention is for; the backward recomputes the blocks it needs from q, k, v, the '
                              "output and each row's log-sum-exp.",
    "memory.flash_logsumexp": 'The log-sum-exp is missing: a fused kernel keeps one fp32 per row (per token) of each '
                              'head, of shape (B, H, T).',
    "memory.flash_logsumexp_heads": 'The log-sum-exp is kept per head: its shape is (B, H, T), not (B, T).',
    "timing.mean": 'It looks as if you returned the mean: one outlier pulls it up; the median is asked for.',
    "timing.min": 'It looks as if you returned the minimum: that is the most optimistic run; the median is asked for.',
    "timing.sum": 'It looks as if you returned the total time of the repeat calls: the time of one call (the median) '
                  'is asked for.',
    "timing.ms": 'It looks as if you returned milliseconds: seconds are asked for.',
    "timing.warmup_timed": 'It looks as if the warm-up calls were timed too: warm-up calls run, untimed.',
    "timing.no_warmup": 'The warm-up is missing: first call fn() warmup times without timing it.',
    "timing.call_count": 'fn must be called exactly warmup + repeat times: warmup times untimed first (warmup=0: no '
                         'warm-up, not one call more), then repeat times, each timed on its own.',
    "timing.clock": "Time with time.perf_counter() (the check uses a fake clock to fix each call's time).",
    "timing.clock_per_call": 'Read the clock (time.perf_counter()) after each timed fn(): one time per call, and the '
                             'median of the repeat times.',
    "timing.no_sync": 'CUDA kernels are launched asynchronously: after each fn() and before reading the clock, `if '
                      'torch.cuda.is_available(): torch.cuda.synchronize()`, or you time only the launch.',
    "timing.clock_first": 'The order is fn() -> torch.cuda.synchronize() -> time.perf_counter(): synchronize first, '
                          'then read the clock.',
    "timing.launch_only": 'Impossibly fast: there is no torch.cuda.synchronize() around the timing, so only the kernel '
                          'launches were timed.',
    "timing.course_timer": 'my_benchmark must do its own warm-up, synchronize and median, not call '
                           "lecture2.measure.benchmark (the course's timer).",
    "timing.mfu_idea": "Start from the idea: MFU = the model's FLOPs per second / the peak; the model's FLOPs per "
                       'second = the FLOPs to train on one token x the tokens processed per second (tokens/s). Count a '
                       "token's FLOPs from the weights' matrix multiplies first (notebook 05).",
    "timing.tflops": 'Wrong unit: every quantity here is in FLOP/s, not TFLOP/s (a factor of 1e12).',
    "timing.inverted": "The ratio is inverted: MFU = the model's FLOPs per second / peak, not peak / that.",
    "timing.no_attention": 'The matrix multiplies between two activations in attention are missing: QK^T and AV are '
                           "not in the weights N. A token's query does d_attn multiply-adds with each of T keys "
                           '(2*T*d_attn FLOPs), AV as many, 4*T*d_attn per layer forward, x3 for forward + backward: '
                           '12*T*d_attn per layer and token, 12*L*d_attn*T for L layers.',
    "timing.attention_forward": 'The attention term counts the forward only (4*L*d_attn*T): the backward is about '
                                'twice the forward, and forward + backward is 12*L*d_attn*T.',
    "timing.per_sequence": "Off by a factor of T: do not multiply a token's FLOPs by the sequence length T again (that "
                           'is per sequence); tokens/s already counts tokens.',
    "timing.percent": 'MFU is returned as a fraction (0.4), not a percentage (40).',
    "timing.throughput": "The tokens per second (tokens/s) are not multiplied in: the model's FLOPs per second = the "
                         'FLOPs per token x tokens/s.',
    "training_step.accum_idea": "The idea: the big batch's loss is the mean of all its samples' losses. Write that "
                                "mean as a weighted sum of the micro-batches' mean losses: what share of the big batch "
                                "is each micro-batch? Multiply each micro-batch's loss by its share before backward, "
                                "and what .grad accumulates is the big batch's gradient.",
    "training_step.adamw_idea": 'The idea: each parameter p keeps its own state (self.state[p]): the first moment m, '
                                'the second moment v and the step count t; each step updates them first, then updates '
                                'p with the bias-corrected m_hat / (sqrt(v_hat) + eps); weight decay acts on p '
                                'directly, not through the gradient. Each param_group uses its own hyperparameters.',
    "training_step.bias_correction": 'The bias correction is missing: m and v start at 0 and are too small in the '
                                     'first steps; divide by 1 - beta1**t and 1 - beta2**t (t counted from 1).',
    "training_step.l2_not_decoupled": "The weight decay was added to the gradient (g + lambda*p, Adam's L2 "
                                      "regularization): AdamW's decay is decoupled, p <- p - lr*lambda*p, and does not "
                                      'go through m and v.',
    "training_step.decay_without_lr": 'The weight decay is multiplied by the learning rate: p <- p - lr*lambda*p '
                                      "(PyTorch's AdamW), not p - lambda*p.",
    "training_step.state_kept": 'm and v must be kept from step to step (in self.state[p]): starting from 0 at every '
                                "step leaves only this step's gradient.",
    "training_step.step_per_param": "The step count t belongs to each parameter (state['step']) and goes up by 1 per "
                                    'step for each parameter; one counter for the whole optimizer, increased inside '
                                    'the loop over parameters, runs t too fast.',
    "training_step.param_groups": "Each param_group has its own lr and weight_decay (group['lr'] ...): do not use only "
                                  "the constructor's defaults.",
    "training_step.betas_swapped": 'beta1 (the first moment m) and beta2 (the second moment v) are swapped: betas = '
                                   '(beta1, beta2).',
    "training_step.state_dict": 'The state must live in self.state[p]: optimizer.state_dict() saves only that, and '
                                'only then does load_state_dict() resume training from a checkpoint; m and v kept in '
                                'another attribute are lost.',
    "training_step.subclass": 'Subclass torch.optim.Optimizer (class AdamW(torch.optim.Optimizer)) and use its '
                              'param_groups and state.',
}
