"""lecture2.fmt: numbers for people."""
import pytest

from lecture2 import fmt


def test_bytes_decimal_and_binary():
    assert fmt.format_bytes(14e9) == "14.00 GB"
    assert fmt.format_bytes(14e9, binary=True) == "13.04 GiB"
    assert fmt.format_bytes(512) == "512.00 B"


def test_flops_and_rates():
    assert fmt.format_flops(8.4e22) == "8.400e+22 FLOPs"
    assert fmt.format_rate(989.4e12) == "989.4 TFLOP/s"


def test_seconds_pick_a_unit():
    assert fmt.format_seconds(2.5e-6) == "2.5 µs"
    assert fmt.format_seconds(0.25) == "250 ms"
    assert fmt.format_seconds(9.6 * 86400) == "9.6 days"


def test_bad_input_is_refused_clearly():
    with pytest.raises(TypeError, match="real number"):
        fmt.format_bytes("14 GB")
    with pytest.raises(ValueError, match="negative"):
        fmt.format_seconds(-1)
    with pytest.raises(ValueError, match="NaN"):
        fmt.format_flops(float("nan"))
