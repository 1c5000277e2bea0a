"""lecture2.estimate and `python -m lecture2 estimate`: the accounting calculator of lecture §6."""
import json
import math
import subprocess
import sys

import pytest

from lecture2 import cli, estimate, hardware

LECTURE = ["estimate", "--params", "7e9", "--tokens", "2e12", "--gpu", "h100-sxm", "--gpus", "256",
           "--mfu", "0.4", "--usd-per-gpu-hour", "2.5"]


def test_lecture_example_flops_days_cost():
    """Does the lecture's 7B / 2T tokens / 256 H100 / MFU 0.4 / $2.5 run give 8.4e22 FLOPs, 9.6 days, ~$147k?"""
    flops = estimate.training_flops(7e9, 2e12)
    assert flops == pytest.approx(8.4e22, rel=1e-12)
    seconds = estimate.training_seconds(flops, 256, hardware.gpu("h100-sxm").peak_flops("bf16"), 0.4)
    assert seconds / estimate.SECONDS_PER_DAY == pytest.approx(9.596, abs=5e-4)  # the lecture: ~9.6 days
    usd = estimate.cost_usd(estimate.gpu_hours(seconds, 256), 2.5)
    assert usd == pytest.approx(147_396, abs=1)  # the lecture: ~$147,000
    assert estimate.cost_per_1k_tokens_usd(usd, 2e12) == pytest.approx(7.37e-5, rel=1e-3)  # lecture: $0.000073


def test_other_public_runs():
    """Does the calculator reproduce CS336's 70B/15T/1024 H100/MFU 0.5 (~144 days) and GPT-3's 3.14e23 FLOPs?"""
    flops = estimate.training_flops(70e9, 15e12)
    days = estimate.training_seconds(flops, 1024, 989.4e12, 0.5) / estimate.SECONDS_PER_DAY
    assert days == pytest.approx(144, rel=2e-3)
    assert estimate.training_flops(175e9, 300e9) == pytest.approx(3.14e23, rel=5e-3)  # Brown et al. 2020, Table D.1


def test_memory_recipes_bytes_per_param():
    """Are the recipes 16 B/param for fp32 and bf16-mixed Adam, 18 with fp32 grads, and 4 for bf16 SGD (7B -> 112 GB)?"""
    per = {name: r.bytes_per_param for name, r in estimate.MEMORY_RECIPES.items()}
    assert per["fp32 Adam"] == per["bf16 mixed Adam"] == 16
    assert per["bf16 mixed Adam, fp32 grads"] == 18 and per["bf16 SGD"] == 4 and per["fp32 SGD"] == 8
    assert estimate.training_memory_bytes(7e9) == 112e9  # lecture §4.1
    with pytest.raises(KeyError, match="known"):
        estimate.training_memory_bytes(7e9, "lion")


@pytest.mark.parametrize("call", [
    lambda: estimate.training_flops(-1, 1e9),
    lambda: estimate.training_flops(7e9, 0),
    lambda: estimate.training_seconds(1e20, 0, 1e15, 0.4),
    lambda: estimate.training_seconds(1e20, 8, 1e15, 1.5),
    lambda: estimate.training_seconds(1e20, 8, 1e15, 0),
    lambda: estimate.training_seconds(math.nan, 8, 1e15, 0.4),
    lambda: estimate.cost_usd(10, -2.5),
])
def test_bad_numbers_raise_value_error(call):
    """Does a negative, zero or NaN input, or an MFU outside (0, 1], raise ValueError?"""
    with pytest.raises(ValueError):
        call()


def test_a_bool_is_not_a_number():
    """Is True refused as a GPU count (it would silently mean 1)?"""
    with pytest.raises(TypeError):
        estimate.training_seconds(1e20, True, 1e15, 0.4)


def test_cli_prints_the_lecture_example_in_words(capsys):
    """Does `estimate` print FLOPs, days, GPU-hours, cost and the memory per recipe?"""
    assert cli.main(LECTURE) == 0
    out = capsys.readouterr().out
    for text in ("8.400e+22 FLOPs", "9.60 days", "GPU-hours   58,958", "$147,396", "$0.0000737 per 1K tokens",
                 "bf16 mixed Adam", "112.0 GB", "989.4 TFLOP/s", "2-5x"):
        assert text in out, f"{text!r} missing from:\n{out}"


def test_cli_json_has_the_keys(capsys):
    """Does --json print one JSON object with flops, days, gpu_hours and cost_usd (and memory per recipe)?"""
    assert cli.main(LECTURE + ["--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"flops", "days", "gpu_hours", "cost_usd", "cost_per_1k_tokens_usd", "memory"} <= set(data)
    assert data["flops"] == pytest.approx(8.4e22)
    assert data["days"] == pytest.approx(9.596, abs=5e-4)
    assert data["gpu_hours"] == pytest.approx(58_958.3, abs=0.1)
    assert data["cost_usd"] == pytest.approx(147_395.7, abs=0.1)
    assert data["memory"]["bf16 mixed Adam"]["total_bytes"] == 112e9


def test_cli_dtype_selects_the_peak_column(capsys):
    """Does --dtype fp8 use the fp8 column (twice bf16 on an H100, so half the days)?"""
    assert cli.main(LECTURE + ["--dtype", "fp8", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["peak_flops_per_gpu"] == hardware.gpu("h100-sxm").peak_flops("fp8")
    assert data["days"] == pytest.approx(9.596 / 2, abs=5e-4)


@pytest.mark.parametrize("flag, value, message", [
    ("--params", "-7e9", "--params must be > 0"),
    ("--tokens", "0", "--tokens must be > 0"),
    ("--gpus", "0", "--gpus must be > 0"),
    ("--gpus", "2.5", "whole number"),
    ("--mfu", "1.5", "(0, 1]"),
    ("--mfu", "0", "--mfu must be > 0"),
    ("--usd-per-gpu-hour", "-1", ">= 0"),
    ("--params", "seven", "must be a number"),
])
def test_cli_bad_numbers_exit_2_with_a_message(capsys, flag, value, message):
    """Does a bad number end with exit code 2 and a message naming the argument?"""
    argv = LECTURE + [flag, value]
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert message in err and flag in err


def test_cli_unknown_gpu_lists_the_known_ones(capsys):
    """Does an unknown --gpu exit 2 and list the GPUs the table knows?"""
    with pytest.raises(SystemExit) as exit_info:
        cli.main(LECTURE + ["--gpu", "tpu-v5"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "unknown GPU 'tpu-v5'" in err and all(name in err for name in hardware.known_gpus())


def test_cli_gpu_without_the_dtype_column_exits_2(capsys):
    """Does a GPU without a peak for --dtype (V100 has no bf16) exit 2 and say which columns it has?"""
    with pytest.raises(SystemExit) as exit_info:
        cli.main(LECTURE + ["--gpu", "v100"])
    assert exit_info.value.code == 2
    assert "fp16" in capsys.readouterr().err


def test_cli_env_is_still_there(capsys):
    """Does the help still list `env` next to `estimate`?"""
    assert cli.main([]) == 2
    out = capsys.readouterr().out
    assert "env" in out and "estimate" in out


def test_module_entry_point_estimate():
    """Does `python -m lecture2 estimate ... --json` run as a program and exit 0?"""
    proc = subprocess.run([sys.executable, "-m", "lecture2", *LECTURE, "--json"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["cost_usd"] == pytest.approx(147_395.7, abs=0.1)


def test_zero3_over_256_gpus_is_437_5_mb():
    """Does ZeRO-3 / FSDP divide the lecture's 7B x 16 B/param over 256 GPUs into 437.5 MB each (Rajbhandari et al. 2020)?"""
    per_gpu = estimate.sharded_memory_bytes(7e9, 256, "zero3", "bf16 mixed Adam")
    assert per_gpu["total"] == pytest.approx(437.5e6, rel=1e-12)
    assert per_gpu == pytest.approx({"weights": 2 * 7e9 / 256, "gradients": 2 * 7e9 / 256,
                                     "optimizer": 12 * 7e9 / 256, "total": 437.5e6})


@pytest.mark.parametrize("n", [1, 2, 3, 8, 64, 1024])
def test_zero_stages_bytes_per_param(n):
    """Are the stages 16, 4 + 12/n, 2 + 14/n and 16/n bytes per parameter for the 2 + 2 + 12 recipe?"""
    per = {s: estimate.sharded_memory_bytes(1, n, s)["total"] for s in estimate.SHARD_STAGES}
    assert per["none"] == 16
    assert per["zero1"] == pytest.approx(4 + 12 / n)
    assert per["zero2"] == pytest.approx(2 + 14 / n)
    assert per["zero3"] == pytest.approx(16 / n)


def test_sharding_applies_to_every_recipe():
    """Do fp32 Adam (4 + 4 + 8) and the 18N recipe (2 + 4 + 12) shard their own parts?"""
    fp32 = estimate.sharded_memory_bytes(1e9, 4, "zero2", "fp32 Adam")
    assert (fp32["weights"], fp32["gradients"], fp32["optimizer"]) == (4e9, 1e9, 2e9)
    fp32_grads = estimate.sharded_memory_bytes(1e9, 4, "zero1", "bf16 mixed Adam, fp32 grads")
    assert (fp32_grads["weights"], fp32_grads["gradients"], fp32_grads["optimizer"]) == (2e9, 4e9, 3e9)
    assert estimate.sharded_memory_bytes(1e9, 4, "zero3", "bf16 SGD")["optimizer"] == 0


@pytest.mark.parametrize("call, error", [
    (lambda: estimate.sharded_memory_bytes(7e9, 0), ValueError),
    (lambda: estimate.sharded_memory_bytes(7e9, 2.5), ValueError),
    (lambda: estimate.sharded_memory_bytes(7e9, True), ValueError),
    (lambda: estimate.sharded_memory_bytes(-7e9, 8), ValueError),
    (lambda: estimate.sharded_memory_bytes(7e9, 8, "zero4"), ValueError),
    (lambda: estimate.sharded_memory_bytes(7e9, 8, "zero3", "lion"), KeyError),
])
def test_sharded_memory_refuses_bad_input(call, error):
    """Do zero or fractional GPU counts, a negative N, an unknown stage or recipe raise with a message?"""
    with pytest.raises(error, match="n_gpus|n_params|shard|recipe"):
        call()


def test_cli_shard_prints_per_gpu_parts(capsys):
    """Does `--shard zero1` print weights, gradients and optimizer per GPU (the lecture's run: 14 GB + 14 GB + 84/256 GB)?"""
    assert cli.main(LECTURE + ["--shard", "zero1"]) == 0
    out = capsys.readouterr().out
    assert "--shard zero1 over 256 GPUs" in out
    row = next(line for line in out.splitlines() if line.strip().startswith("bf16 mixed Adam ") and "|" in line)
    assert "14.00 GB" in row and "328.12 MB" in row and "28.33 GB" in row  # 2N + 2N + 12N/256


def test_cli_shard_json_keys(capsys):
    """Does --json carry the stage and, per recipe, per_gpu {weights, gradients, optimizer, total}?"""
    assert cli.main(LECTURE + ["--shard", "zero2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["shard"] == "zero2"
    per = data["memory"]["bf16 mixed Adam"]["per_gpu"]
    assert set(per) == {"weights", "gradients", "optimizer", "total"}
    assert per["total"] == pytest.approx((2 + 14 / 256) * 7e9)


def test_cli_default_shard_is_zero3(capsys):
    """Without --shard, is the per-GPU column ZeRO-3 / FSDP (437.5 MB for the lecture's run)?"""
    assert cli.main(LECTURE + ["--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["shard"] == "zero3"
    assert data["memory"]["bf16 mixed Adam"]["per_gpu"]["total"] == pytest.approx(437.5e6)


# --- activations: notebook 06's accounting (and Korthikanti's), checked against what autograd saves -------------
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from lecture2 import measure, models  # noqa: E402


class SwiGLUBlock(torch.nn.Module):
    """A pre-norm block with Llama's FFN, silu(gate(x)) * up(x) -> down, and the course's fused attention."""

    def __init__(self, d: int, heads: int, d_ff: int):
        super().__init__()
        self.attention = models.MultiHeadAttention(d, heads, fused=True)
        self.norm1, self.norm2 = torch.nn.RMSNorm(d, eps=1e-5), torch.nn.RMSNorm(d, eps=1e-5)
        self.gate, self.up = torch.nn.Linear(d, d_ff, bias=False), torch.nn.Linear(d, d_ff, bias=False)
        self.down = torch.nn.Linear(d_ff, d, bias=False)

    def forward(self, x):
        x = x + self.attention(self.norm1(x))
        h = self.norm2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


def _saved(block, B, T, d, dtype):
    block = block.to(dtype)
    x = torch.randn(B, T, d, dtype=dtype, requires_grad=True)
    return measure.saved_bytes(lambda: block(x), exclude=block.parameters())


@pytest.mark.parametrize("B, T, d, heads, dtype", [(2, 16, 32, 4, torch.float32), (1, 24, 48, 3, torch.bfloat16),
                                                   (3, 7, 16, 2, torch.float16)])
def test_course_activations_are_what_a_fused_block_saves(B, T, d, heads, dtype):
    """Is activation_bytes_per_layer (course convention, CPU norms) byte for byte what autograd saves in the course's
    TransformerBlock with fused attention, as notebook 06's exercise 5 counts it?"""
    torch.manual_seed(0)
    got = estimate.activation_bytes_per_layer(T, B, d, heads, dtype_bytes=torch.empty(0, dtype=dtype).element_size(),
                                              norm_kernel="cpu")
    assert got == _saved(models.TransformerBlock(d, heads, fused_attention=True), B, T, d, dtype)


def test_course_activations_of_a_swiglu_block():
    """With ffn="swiglu" (4 tensors of d_ff: gate, up, silu(gate), product), does the count match a measured block?"""
    torch.manual_seed(0)
    want = _saved(SwiGLUBlock(32, 4, 88), 2, 16, 32, torch.float32)
    assert estimate.activation_bytes_per_layer(16, 2, 32, 4, d_ff=88, ffn="swiglu", dtype_bytes=4, norm_kernel="cpu") == want


def test_llama2_7b_activations_in_the_two_conventions():
    """Llama 2 7B (s = b·... = 4096, h 4096, 32 heads, SwiGLU 11008), bf16: 06's accounting keeps about 37.5 sbh per
    layer (20 GB for 32 layers), Korthikanti's sbh(34 + 5as/h) = 194 sbh (104 GB)."""
    sbh = 4096 * 4096
    course = estimate.activation_bytes_per_layer(4096, 1, 4096, 32, d_ff=11008, ffn="swiglu")
    assert course / sbh == pytest.approx(37.53, abs=0.01) and 32 * course == pytest.approx(20.15e9, rel=1e-3)
    assert estimate.activation_bytes_per_layer(4096, 1, 4096, 32, convention="korthikanti") == sbh * 194


@pytest.mark.parametrize("t, sp, recompute, want", [
    (1, False, "none", 34 + 5 * 32), (8, False, "none", 10 + 24 / 8 + 5 * 32 / 8), (8, True, "none", (34 + 160) / 8),
    (8, False, "selective", 10 + 3), (8, True, "selective", 34 / 8), (8, False, "full", 2), (8, True, "full", 2 / 8)])
def test_korthikanti_family(t, sp, recompute, want):
    """Korthikanti et al. 2022, §4-5: sbh(34 + 5as/h), (10 + 24/t + 5as/(ht)), with SP /t, selective and full (s = h)."""
    got = estimate.korthikanti_bytes_per_layer(4096, 1, 4096, 32, tp=t, sp=sp, recompute=recompute)
    assert got == pytest.approx(4096 * 4096 * want)


def test_tensor_and_sequence_parallel_divide_what_lies_between_the_collectives():
    """Without SP the norms' tensors stay whole on every TP rank; with SP everything is 1/t; full recompute keeps the
    layer's input (h·p per token)."""
    terms = estimate.activation_terms(64, 2, 32, 4, tp=4)
    whole = estimate.activation_terms(64, 2, 32, 4)
    assert terms["norm outputs (inputs of QKV and up)"] == whole["norm outputs (inputs of QKV and up)"]
    assert terms["FFN"] == whole["FFN"] / 4
    sp = estimate.activation_bytes_per_layer(64, 2, 32, 4, tp=4, sp=True)
    assert sp == pytest.approx(sum(whole.values()) / 4)
    assert estimate.activation_bytes_per_layer(64, 2, 32, 4, recompute="full") == 64 * 2 * 32 * 2


@pytest.mark.parametrize("call", [
    lambda: estimate.activation_bytes_per_layer(16, 1, 30, 4),  # 30 not divisible by 4 heads
    lambda: estimate.activation_bytes_per_layer(16, 1, 32, 4, ffn="relu"),
    lambda: estimate.activation_bytes_per_layer(16, 1, 32, 4, convention="huggingface"),
    lambda: estimate.activation_bytes_per_layer(0, 1, 32, 4),
    lambda: estimate.korthikanti_bytes_per_layer(16, 1, 32, 4, recompute="some"),
])
def test_activation_functions_refuse_bad_input(call):
    with pytest.raises(ValueError):
        call()


def test_flops_per_token_is_6n_plus_12ldt():
    """Without a shape is it the lecture's 6N; with one 6N + 12·L·d·T (PaLM, App. B)?"""
    assert estimate.flops_per_token(7e9) == 6 * 7e9
    assert estimate.flops_per_token(7e9, 32, 4096, 4096) == 6 * 7e9 + 12 * 32 * 4096 * 4096


def test_a_fused_swiglu_keeps_three_of_its_four_widths():
    """Issue 27, finding 5: PyTorch's eager SwiGLU keeps gate, up, silu(gate) and the product (4·f, measured above);
    a fused one (Megatron's bias_swiglu, Transformer Engine) keeps [gate | up] and the product, 3·f."""
    eager = estimate.activation_terms(4096, 1, 4096, 32, d_ff=11008, ffn="swiglu")["FFN"]
    fused = estimate.activation_terms(4096, 1, 4096, 32, d_ff=11008, ffn="swiglu", mlp_kernel="fused")["FFN"]
    assert eager == 4096 * 4 * 11008 * 2 and fused == 4096 * 3 * 11008 * 2
    with pytest.raises(ValueError):
        estimate.activation_terms(16, 1, 32, 4, mlp_kernel="compiled")


def test_deepseek_v3s_recipe_keeps_its_moments_in_bf16():
    """DeepSeek-V3 §3.3.3: bf16 weights, fp32 gradients and master weights, AdamW's moments in bf16: 2 + 4 + 8."""
    assert estimate.MEMORY_RECIPES["bf16 mixed Adam, bf16 moments"].bytes_per_param == 14


def test_one_recipe_table_the_engines_and_exercises_read():
    """The course's recipes live in one table (estimate.MEMORY_RECIPES); the engines (lecture2.zero.RECIPES,
    distributed.RECIPES) and the exercises (notebook 06's RECIPES, notebook 10's RECIPE_BYTES) read its trained
    rows by key. The bytes pinned here are the lecture's and the ZeRO paper's."""
    import torch

    from lecture2 import distributed, zero
    from lecture2.exercises import memory, sharding

    assert {k: r.parts for k, r in estimate.TRAINED_RECIPES.items()} == {
        "fp32_adam": (4, 4, 8), "bf16_mixed_adam": (2, 2, 12), "sgd": (4, 4, 0), "sgd_momentum": (4, 4, 4),
        "bf16_sgd": (2, 2, 0)}
    assert all(estimate.MEMORY_RECIPES[r.name] is r for r in estimate.TRAINED_RECIPES.values())
    assert tuple(zero.RECIPES) == distributed.RECIPES == tuple(memory.RECIPES) == tuple(sharding.RECIPE_BYTES) == (
        "fp32_adam", "bf16_mixed_adam", "sgd", "sgd_momentum", "bf16_sgd")
    assert zero.RECIPES == {"fp32_adam": (torch.float32, "adam", False), "bf16_mixed_adam": (torch.bfloat16, "adam", True),
                            "sgd": (torch.float32, "sgd", False), "sgd_momentum": (torch.float32, "sgd_momentum", False),
                            "bf16_sgd": (torch.bfloat16, "sgd", False)}
    assert memory.RECIPES == {"fp32_adam": ("adam", "fp32"), "bf16_mixed_adam": ("adam", "mixed"), "sgd": ("sgd", "fp32"),
                              "sgd_momentum": ("sgd_momentum", "fp32"), "bf16_sgd": ("sgd", "bf16")}
