"""`python -m lecture2`: the environment report."""
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
    kind, the step, MFU and what the step goes to?"""
    assert cli.main(PLAN) == 0
    out = capsys.readouterr().out
    assert "9.60 days" in out  # the lecture's 6ND at MFU 0.4 stays
    for text in ("lecture-7b", "ZeRO-3", "activations", "communication per GPU per step", "MFU", "beyond the matmuls"):
        assert text in out, text


def test_estimate_model_json_has_the_plan(capsys):
    """Does --json carry the plan: memory per GPU, fits, comm by kind, step seconds, MFU, days?"""
    import json

    assert cli.main(PLAN + ["--json"]) == 0
    plan = json.loads(capsys.readouterr().out)["plan"]
    assert plan["fits"] and set(plan["comm"]) == {"tp", "pp", "dp"} and plan["layout"]["zero"] == 3
    assert plan["memory_per_gpu"]["weights"] + plan["memory_per_gpu"]["gradients"] + plan["memory_per_gpu"]["optimizer"] \
        == pytest.approx(437.5e6)
    assert 0.3 < plan["mfu"] <= 0.4 and plan["days"] > 9.6


def test_estimate_search_prints_the_fastest_that_fit(capsys):
    """Does --search print a numbered list of layouts that fit, then the report of the first?"""
    assert cli.main(["estimate", "--model", "llama2-7b", "--gpus", "64", "--tokens", "1e12", "--search", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "The 3 fastest layouts" in out and "  1. TP" in out and "  3. TP" in out


@pytest.mark.parametrize("argv, message", [
    (["estimate", "--params", "7e9", "--tokens", "1e12", "--search"], "--search needs --model"),
    (["estimate", "--tokens", "1e12"], "--params"),
    (["estimate", "--model", "gpt5", "--tokens", "1e12"], "unknown model"),
    (["estimate", "--model", "lecture-7b", "--tokens", "1e12", "--gpus", "256", "--tp", "16"], "tp=16"),
    (["estimate", "--model", "lecture-7b", "--tokens", "1e12", "--gpu", "l4"], "--cluster"),
    (["estimate", "--model", "lecture-7b", "--tokens", "1e12", "--sp"], "sequence parallelism"),
])
def test_estimate_plan_refuses_what_cannot_be_planned(capsys, argv, message):
    """Do a search without a model, no size at all, an unknown model, TP beyond a node, a GPU without a cluster row and
    SP without TP end with exit code 2 and a message?"""
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
