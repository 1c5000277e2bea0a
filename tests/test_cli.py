"""`python -m lecture2`: the environment report."""
import subprocess
import sys

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
