"""`python -m lecture2`: the environment report."""
import json
import subprocess
import sys

import pytest

from lecture2 import cli


def test_env_reports_device_dtypes_and_peak(capsys):
    assert cli.main(["env"]) == 0
    out = capsys.readouterr().out
    assert "device" in out and "fp32:yes" in out and "FLOP/s" in out


def test_no_command_prints_help_and_exits_2(capsys):
    assert cli.main([]) == 2
    assert "env" in capsys.readouterr().out


def test_module_entry_point():
    proc = subprocess.run([sys.executable, "-m", "lecture2", "env"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "torch" in proc.stdout


def test_estimate_help_lists_the_shard_choices(capsys):
    """Does `estimate --help` offer --shard none, zero1, zero2 and zero3?"""
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["estimate", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "--shard" in out and all(s in out for s in ("none", "zero1", "zero2", "zero3"))


def test_estimate_bad_shard_exits_2_with_the_choices(capsys):
    """Does an unknown --shard end with exit code 2 and name the stages it knows?"""
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["estimate", "--params", "7e9", "--tokens", "2e12", "--shard", "zero4"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "--shard" in err and "zero4" in err and "zero3" in err


def test_estimate_shard_none_says_every_gpu_holds_everything(capsys):
    """With --shard none, is the per-GPU total the whole 16N (112 GB: it does not fit an 80 GB H100)?"""
    assert cli.main(["estimate", "--params", "7e9", "--tokens", "2e12", "--gpus", "8", "--shard", "none"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.strip().startswith("bf16 mixed Adam ") and "|" in line)
    assert "112.00 GB" in row and "does not fit" in row


PLAN = ["estimate", "--model", "lecture-7b", "--tokens", "2e12", "--gpus", "256", "--zero", "3"]


def test_estimate_with_a_model_prints_the_plan(capsys):
    """With --model, does estimate print the lecture's figures and then the plan: memory by part, communication by
    kind with NCCL's algorithm, the step's breakdown, MFU, HFU and what the step goes to?"""
    assert cli.main(PLAN) == 0
    out = capsys.readouterr().out
    assert "9.60 days" in out  # the lecture's 6ND at MFU 0.4 stays
    for text in ("lecture-7b", "ZeRO-3", "activations", "communication per GPU per step", "the step:",
                 "compute: GEMMs", "pipeline bubble", "MFU", "HFU", "beyond the kernels"):
        assert text in out, text


def test_estimate_model_json_has_the_plan(capsys):
    """Does --json carry the plan under the names the issue asks for: mfu, hfu, tflops_per_gpu, the breakdown, memory
    per GPU, fits, comm by kind?"""
    assert cli.main(PLAN + ["--json"]) == 0
    plan = json.loads(capsys.readouterr().out)["plan"]
    assert plan["fits"] and {"tp", "pp", "dp"} <= set(plan["comm"]) and plan["layout"]["zero"] == 3
    assert plan["memory_per_gpu"]["weights"] + plan["memory_per_gpu"]["gradients"] \
        + plan["memory_per_gpu"]["optimizer states"] == pytest.approx(437.5e6)
    assert 0.3 < plan["mfu"] <= plan["hfu"] < 0.7 and plan["tflops_per_gpu"] == pytest.approx(plan["mfu"] * 989.4)
    assert sum(plan["breakdown_s"].values()) == pytest.approx(plan["step_s"])


def test_estimate_search_prints_the_fastest_that_fit_with_their_losses(capsys):
    """Does --search print a numbered list of layouts that fit, each with what it loses to the best, then the report
    of the first?"""
    assert cli.main(["estimate", "--model", "llama3-405b", "--gpus", "16384", "--seq", "8192", "--global-batch", "2048",
                     "--tokens", "15.6e12", "--search", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "The 3 fastest layouts" in out and "  1. TP" in out and "[the fastest planned]" in out and "  3. TP" in out
    assert "%" in out.split("  3. TP")[1].splitlines()[0] and "how far to trust it" in out


def _config(tmp_path, **extra) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096,
                                "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
                                "vocab_size": 128256, "hidden_act": "silu", "tie_word_embeddings": False, **extra}))
    return str(path)


def test_estimate_plans_a_config_json_and_names_its_unknown_keys(tmp_path, capsys):
    """Finding 7: --config reads a Hugging Face config.json; a key it does not know is named in the output."""
    argv = ["estimate", "--config", _config(tmp_path, my_new_thing=1), "--tokens", "15e12", "--gpus", "64", "--tp", "8"]
    assert cli.main(argv + ["--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["n_params"] == pytest.approx(8.03e9, rel=1e-3) and "my_new_thing" in data["model_notes"][0]
    assert cli.main(argv) == 0
    assert "unknown keys" in capsys.readouterr().out


def test_estimate_plans_a_shape_given_by_flags(capsys):
    """Finding 7: --layers --hidden --heads --kv-heads --ffn --vocab --mlp plan a model with no preset; --global-batch
    counts sequences; --cp splits them; --gemm fp8 plans FP8 GEMMs."""
    argv = ["estimate", "--layers", "32", "--hidden", "4096", "--heads", "32", "--kv-heads", "8", "--ffn", "14336",
            "--vocab", "128256", "--mlp", "swiglu", "--tokens", "1e12", "--gpus", "64", "--seq", "32768",
            "--global-batch", "128", "--cp", "2", "--gemm", "fp8", "--json"]
    assert cli.main(argv) == 0
    plan = json.loads(capsys.readouterr().out)["plan"]
    assert plan["n_params"] == pytest.approx(8.03e9, rel=1e-3) and plan["layout"]["cp"] == 2 and "cp" in plan["comm"]
    assert plan["micro_batches"] == 128 // 32


def test_estimate_plans_a_moe_with_expert_parallelism(capsys):
    """--ep with a MoE preset plans the all-to-all (DeepSeek-V3 on H800s with DualPipe)."""
    argv = ["estimate", "--model", "deepseek-v3", "--tokens", "1e12", "--gpu", "h800", "--gpus", "2048", "--pp", "16",
            "--ep", "64", "--schedule", "dualpipe", "--comm-sms", "20", "--recompute", "selective",
            "--last-stage-layers", "1", "--seq", "4096", "--global-batch", "15360", "--gemm", "fp8-blockwise",
            "--recipe", "bf16 mixed Adam, bf16 moments", "--json"]
    assert cli.main(argv) == 0
    plan = json.loads(capsys.readouterr().out)["plan"]
    assert plan["comm"]["ep"]["seconds"] > 0 and plan["fits"]


@pytest.mark.parametrize("argv, message", [
    (["estimate", "--params", "7e9", "--tokens", "1e12", "--search"], "--search needs --model"),
    (["estimate", "--tokens", "1e12"], "--params"),
    (["estimate", "--model", "gpt5", "--tokens", "1e12"], "unknown model"),
    (["estimate", "--model", "lecture-7b", "--tokens", "1e12", "--gpus", "256", "--tp", "16"], "tp=16"),
    (["estimate", "--model", "lecture-7b", "--tokens", "1e12", "--gpu", "l4"], "--cluster"),
    (["estimate", "--model", "lecture-7b", "--tokens", "1e12", "--sp"], "sequence parallelism"),
    (["estimate", "--model", "lecture-7b", "--tokens", "1e12", "--batch-tokens", "1000"], "--batch-tokens"),
    (["estimate", "--layers", "32", "--tokens", "1e12"], "--hidden"),
    (["estimate", "--config", "/no/such/config.json", "--tokens", "1e12"], "--config"),
    (["estimate", "--model", "lecture-7b", "--tokens", "1e12", "--gpu", "h100-sxm", "--cluster", "dgx-a100"],
     "--gpu h100-sxm 和 --cluster dgx-a100 不一致"),
])
def test_estimate_plan_refuses_what_cannot_be_planned(capsys, argv, message):
    """Do a search without a model, no size at all, an unknown model, TP beyond a node, a GPU without a cluster row,
    SP without TP, a batch that is not whole sequences, an incomplete shape, a missing config and a --gpu that is not
    the --cluster's GPU (issue 42, finding 8: H100 days printed beside an A100 plan) end with exit code 2
    and one message in Chinese and English naming the flag, with a valid example and no usage dump (finding 7)?"""
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "错误 (error)" in err and "例如 (for example)" in err
    assert "usage:" not in err and "[--params N]" not in err


def test_cluster_alone_sets_the_gpu_of_the_lectures_arithmetic(capsys):
    """Issue 42, finding 8: with --cluster dgx-a100 and no --gpu, is the 6ND half priced on the A100 the plan runs on
    (312 TFLOP/s), not the default H100's 989?"""
    assert cli.main(["estimate", "--model", "lecture-7b", "--tokens", "2e12", "--gpus", "256", "--cluster", "dgx-a100",
                     "--zero", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["gpu"] == "a100" and out["peak_flops_per_gpu"] == 312e12 and out["plan"]["fits"]
