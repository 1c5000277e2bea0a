"""lecture2_grader.scan: advisory findings for the instructor; never a withheld answer, never a crash."""
from __future__ import annotations

import pytest

from submissions import reference_answers
from conftest import notebook_names
from lecture2_grader.scan import scan


@pytest.mark.parametrize("name", notebook_names())
def test_the_reference_answers_draw_no_finding(name):
    assert scan(reference_answers(name)) == []


@pytest.mark.parametrize("source", [
    "GiB = 2**30\ndef f(x):\n    print(x)\n    return x * GiB",
    "import functools\ndef f(x):\n    return x\n@functools.lru_cache\ndef g(x):\n    return x",
    "try:\n    import numpy as np\nexcept ImportError:\n    np = None",
    "sizes = [d.itemsize for d in (1, 2)]",
    "def f(loader):\n    return getattr(loader, 'num_workers', 0) > 0",
    "def bias(d):\n    return d",
    "def f(dtype):\n    raise NotImplementedError(f'{dtype} is not asked for')",
])
def test_honest_unusual_answers_draw_no_finding(source):
    assert scan({"a": source}) == []


@pytest.mark.parametrize("source, construct", [
    ("import sys\ndef f():\n    return sys._getframe(1).f_locals", "imports sys"),
    ("def f():\n    import gc\n    return gc.get_objects()", "imports gc"),
    ("import math\nmath.isclose = lambda *a, **k: True", "assigns to math.isclose"),
    ("import math\nfor math.isclose in [print]:\n    pass", "assigns to math.isclose"),
    ("import torch\nclass T(torch.Tensor):\n    __torch_function__ = None", "defines __torch_function__"),
    ("def f():\n    return eval('1')", "uses eval"),
    ("def f(e):\n    return e.__traceback__.tb_frame.f_back", "reads .f_back"),
    ("def f():\n    return open('/proc/self/mem', 'rb')", "names the path '/proc/self/mem'"),
    ("import lecture2.checks\nlecture2.checks.expect_equal = print", "imports lecture2.checks"),
    ("x = " + "+".join(["1"] * 100_000), "could not be scanned"),
    ("x = " + "(" * 2000 + "1" + ")" * 2000, "does not parse"),
    ("def f(:\n    pass", "does not parse"),
])
def test_reaching_constructs_are_flagged_with_their_line(source, construct):
    found = scan({"ex": source})
    assert any(construct in f.construct for f in found), found
