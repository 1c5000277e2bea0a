"""tools/grade/validate.py (`make validate`): a student sees before handing in what the grader will do."""
from __future__ import annotations

import pytest

import submissions as sub
from tools.grade import validate

pytestmark = pytest.mark.slow
NAME = "01_tensors_dtypes.ipynb"
BITS = "def tensor_bytes(shape, dtype):\n    return math.prod(shape) * dtype.itemsize * 8\n"


def test_validate_scores_the_visible_checks_and_names_withheld_answers(tmp_path):
    """One run: a planted mistake draws its message and hint, a tampering answer is named with its line,
    the untouched exercise passes; the file is saved with a BOM and CRLF, as on Windows."""
    nb = sub.filled(NAME, ex01_tensor_bytes=BITS,
                    ex01_weight_memory="import os\n" + sub.reference_answers(NAME)["ex01_weight_memory"])
    path = tmp_path / NAME
    path.write_bytes(sub.with_crlf(nb).replace(b"{", b"\xef\xbb\xbf{", 1))
    status, lines = validate.validate(path)
    text = "\n".join(lines)
    assert status == 1
    # float_format_limits passes its visible groups (2 of its 3 points); tensor_bytes fails, weight_memory is
    # withheld; the visible groups of 01 are worth 5.5 of its 7 points
    assert text.startswith("01_tensors_dtypes: 2/5.5 分 (points) in the visible checks, of 7 in all"), text
    assert "期望 (expected) 48" in text and "bits" in text, text
    assert "ex01_weight_memory line 1: import of os" in text
    assert "✅ float_format_limits" in text


def test_validate_passes_the_reference_and_refuses_a_stranger(tmp_path):
    path = tmp_path / NAME
    sub.write(sub.filled(NAME), path)
    assert validate.validate(path)[0] == 0
    other = tmp_path / "notes.ipynb"
    sub.write(sub.filled(NAME), other)
    assert validate.validate(other)[0] == 2
