"""tools/grade/scan.py: which answer cells the static scan withholds, and which it lets through."""
from __future__ import annotations

import nbformat
import pytest

from conftest import RELEASE, SOLUTIONS, notebook_names
from tools.grade import splice
from tools.grade.scan import Context, scan

CONTEXT = Context.from_sources(
    ["import math\nimport torch\nimport torch.nn as nn\nfrom lecture2 import fmt, hardware\ndevice = 'cpu'\n"],
    ["import importlib, random, lecture2.checks\nchecks = importlib.reload(lecture2.checks)\nwant = 3\n"
     "def _check(x):\n    pass\nfor shape in [(1,)]:\n    measured = 4\n"])


def findings(source: str) -> list[str]:
    return [f"line {f.line}: {f.construct}" for f in scan({"g": source}, CONTEXT)]


@pytest.mark.parametrize("name", notebook_names())
def test_every_reference_answer_passes_the_scan(name):
    """Is the scan quiet on the course's own answers (and on the release's stubs)?"""
    nb = splice.load(SOLUTIONS / name, RELEASE / name)
    answers = {c.grade_id: c.source for c in nb.cells if c.kind == "answer"}
    assert scan(answers, nb.context()) == []
    assert scan(nb.stubs(), nb.context()) == []


@pytest.mark.parametrize("source", [
    "import torch.nn.functional as F\ndef f(q, k, v):\n    return F.scaled_dot_product_attention(q, k, v, is_causal=True)\n",
    "class M(nn.Module):\n    def __init__(self, d):\n        super().__init__()\n        self._w = nn.Parameter(torch.ones(d))\n"
    "    def forward(self, x):\n        return x * self._w\n",
    "def f(model):\n    for p in model.parameters():\n        p.grad = None\n    return type(model).__name__\n",
    "import math\nimport torch\nSCALE = {'GB': 1e9}\n_cache = {}\ndef g(k):\n    _cache[k] = k\n    return '{:.2f} GB'.format(k)\n",
    "from dataclasses import dataclass\n@dataclass\nclass R:\n    x: int = 0\n",
    "import time, statistics\ndef bench(fn):\n    t = time.perf_counter()\n    fn()\n    return statistics.median([time.perf_counter() - t])\n",
    "def f(x):\n    _ = x\n    return [i for i in range(3)]\n",
])
def test_honest_idioms_pass(source):
    assert findings(source) == []


@pytest.mark.parametrize("source, construct", [
    ("import sqlite3\n", "line 1: import of sqlite3"),
    ("import os\n", "line 1: import of os"),
    ("from torch.utils import cpp_extension\n", "line 1: import of torch.utils.cpp_extension"),
    ("import lecture2.checks\n", "line 1: import of lecture2.checks"),
    ("print('hi')\n", "line 1: top-level expr statement"),
    ("for i in range(3):\n    pass\n", "line 1: top-level for statement"),
    ("def f():\n    return eval('1')\n", "line 2: eval"),
    ("def f(o):\n    return getattr(o, 'x')\n", "line 2: getattr"),
    ("def f():\n    return open('/etc/passwd').read()\n", "line 2: open (file access)"),
    ("def f():\n    return get_ipython()\n", "line 2: get_ipython"),
    ("def f():\n    return In[-1]\n", "line 2: In (IPython's input history)"),
    ("def f():\n    return want\n", "line 2: reads `want`, which only a test cell defines"),
    ("def f():\n    return measured\n", "line 2: reads `measured`"),
    ("def f():\n    global checks\n    checks = None\n", "line 1: `global checks`"),
    ("math = None\n", "line 1: rebinds `math`, which the notebook defines"),
    ("checks = None\n", "line 1: rebinds `checks`, which a test cell defines"),
    ("torch.Tensor.nbytes = 1\n", "line 1: assignment to an attribute of `torch`"),
    ("def f():\n    m = math\n    m.isclose = None\n", "line 3: assignment to an attribute of `m`"),
    ("def f():\n    device.type = 'cuda'\n", "line 2: assignment to an attribute of `device`"),
    ("def f():\n    hardware.GPUS['h100'] = None\n", "line 2: assignment to an item of `hardware`"),
    ("class F(float):\n    pass\n", "line 1: class F subclasses float"),
    ("class T(torch.Tensor):\n    pass\n", "line 1: class T subclasses Tensor"),
    ("class A:\n    def __eq__(self, o):\n        return True\n", "line 2: defines __eq__"),
    ("class A:\n    def __float__(self):\n        return 1.0\n", "line 2: defines __float__"),
    ("class A(metaclass=type):\n    pass\n", "line 1: class A with keyword `metaclass`"),
    ("def f():\n    return ().__class__.__bases__\n", "line 2: dunder attribute .__class__"),
    ("def f(e):\n    return e.__traceback__.tb_frame.f_back.f_locals\n", "line 2: attribute .f_locals"),
    ("def f():\n    return torch._C\n", "line 2: private attribute ._C"),
    ("def f():\n    return torch.sys.modules\n", "line 2: attribute .sys"),
    ("def f(g):\n    return '{0.__globals__}'.format(g)\n", "line 2: .format on a string that is not a plain literal"),
    ("import operator\ndef f(o):\n    return operator.attrgetter('x')(o)\n", "line 3: attribute .attrgetter"),
    ("import functools\ndef f():\n    functools.update_wrapper(math, f)\n", "line 3: attribute .update_wrapper"),
    ("def f():\n    return torch.load('x')\n", "line 2: attribute .load"),
    ("def f():\n    torch.set_default_dtype(torch.float64)\n", "line 2: attribute .set_default_dtype"),
    ("def f():\n    return type('X', (), {})\n", "line 2: type() with three arguments"),
    ("def f(x):\n    return x\nf.__code__ = None\n", "line 3: dunder attribute .__code__"),
])
def test_tampering_constructs_are_named_with_their_line(source, construct):
    """Is each construct that reaches past the answer flagged, with its line?"""
    found = findings(source)
    assert any(f.startswith(construct) for f in found), found


def test_a_syntax_error_is_left_to_the_run():
    """A typo is not tampering: the run shows the SyntaxError where the student looks."""
    assert findings("def f(:\n") == []


def test_release_answer_cells_are_the_ones_checked():
    nb = nbformat.read(RELEASE / notebook_names()[0], as_version=4)
    ids = [c.metadata["nbgrader"]["grade_id"] for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
    assert ids, "the release has answer cells"
