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
