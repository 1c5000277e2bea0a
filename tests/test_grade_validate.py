"""lecture2_grader.validate (`make validate`): a student sees before handing in what the grader will give."""
from __future__ import annotations

import pytest

import submissions as sub
from judging import runtime
from lecture2_grader import validate

pytestmark = pytest.mark.slow
NAME = "01_tensors_dtypes.ipynb"
BITS = "def tensor_bytes(shape, dtype):\n    return math.prod(shape) * dtype.itemsize * 8\n"


def test_validate_scores_the_visible_checks_and_says_what_is_flagged(tmp_path):
    """One run: a planted mistake draws its message and hint; an answer with a construct the scan flags still
    scores (it is only mentioned); the file is saved with a BOM and CRLF, as on Windows."""
    nb = sub.filled(NAME, ex01_tensor_bytes=BITS,
                    ex01_float_format="import os\n" + sub.reference_answers(NAME)["ex01_float_format"])
    path = tmp_path / NAME
    path.write_bytes(sub.with_crlf(nb).replace(b"{", b"\xef\xbb\xbf{", 1))
    status, lines = validate.validate(path, runtime(sandboxed=False))
    text = "\n".join(lines)
    assert status == 0, "a readable notebook exits 0, whatever its score"
    # float_format_limits passes its visible groups (2); tensor_bytes fails its visible groups (1.5): 2 of the 3.5
    # visible points of 01's 5
    assert text.startswith("01_tensors_dtypes: 2/3.5 分 (points) in the visible checks, of 5 in all"), text
    assert "期望 (expected) 48" in text and "bits" in text, text
    assert "得到 (got) 384" in text and "ratio got/expected = 8" in text, "what came back is shown, with the ratio"
    assert "flagged for review (scored as usual): ex01_float_format line 1: imports os" in text
    assert "✅ float_format_limits" in text


def test_validate_passes_the_reference_and_refuses_a_stranger(tmp_path):
    path = tmp_path / NAME
    sub.write(sub.filled(NAME), path)
    status, lines = validate.validate(path, runtime(sandboxed=False))
    assert status == 0 and lines[0].startswith("01_tensors_dtypes: 3.5/3.5")
    other = tmp_path / "notes.ipynb"
    sub.write(sub.filled(NAME), other)
    assert validate.validate(other, runtime(sandboxed=False))[0] == 2
    broken = tmp_path / NAME
    broken.write_text("{ not json")
    assert validate.validate(broken, runtime(sandboxed=False))[0] == 2
