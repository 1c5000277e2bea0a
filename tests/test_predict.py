"""lecture2.predict: the measuring cell sets the student's prediction beside the measurement, and leaves both as
data for the class report."""
from __future__ import annotations

from lecture2 import predict


def test_a_number_is_set_beside_the_measurement_with_their_ratio():
    line = predict.line(65504, 65504.0, "fp16 max")
    assert line.startswith("fp16 max: 预测 (predicted) 65,504 · 测量 (measured) 65,504") and "测量/预测 (ratio) 1" in line
    assert "预测 (predicted) 1.001 · 测量 (measured) 1 ·" in predict.line(1.001, 1.0)
    assert "(measured) 6.722e+09" not in predict.line(None, 6_722_000_000)  # a count shown exactly
    assert "ratio) 0.5" in predict.line(2.0, 1.0)
    assert "∞" in predict.line(0, 3) and "ratio) 1" in predict.line(0, 0.0)


def test_no_prediction_says_so_and_a_choice_is_right_or_not():
    assert predict.NOT_YET in predict.line(None, 7)
    assert "✓" in predict.line("inf", "inf") and "✗" in predict.line(True, False)


def test_the_record_is_plain_data_key_by_key(capsys):
    data = predict.record({"fp16": 0.0, "bf16": None}, {"fp16": 0.0, "bf16": 1e-8}, key="01-underflow", what="1e-8 ->")
    assert data == {"key": "01-underflow", "what": "1e-8 ->", "values": {
        "fp16": {"predicted": 0.0, "measured": 0.0}, "bf16": {"predicted": None, "measured": 1e-8}}}
    predict.compare({"fp16": 0.0}, {"fp16": 0.0, "bf16": 1e-8}, key="k", what="1e-8 ->")
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and out[0].startswith("1e-8 -> fp16: 预测") and predict.NOT_YET in out[1]
    assert predict.record(object(), 3, key="k")["values"][""]["predicted"].startswith("<object")
