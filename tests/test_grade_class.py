"""The class grader (`make grade`, lecture2_grader) on a corpus of submissions: honest ones saved in odd ways,
honest ones written in unusual ways, faulty ones, and the attacks a determined class tried on the earlier design.
Each earns exactly what its answers honestly earn and draws its report line; no student changes another's grade,
the course or the gradebook; nothing a student controls reaches the instructor's terminal, a feedback page or
a CSV file unescaped.

Some students take the English edition (issue 41: a mixed class, answers matched by grade_id; english_corpus).
The corpus uses notebook 01 (5 points: tensor_bytes 2, float_format_limits 3), so that grading ~85 students stays
quick (about 80 s on 2 cores). An attack that needs an answer cell run after tensor_bytes' hidden cases uses
float_format_limits, the answer after them.
"""
from __future__ import annotations

import csv
import hashlib
import html
import json
import re
import time
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

import submissions as sub
from conftest import ASSIGNMENT, RELEASE, ROOT, SOLUTIONS, hidden_lines
from judging import runtime as judging_runtime
from lecture2_grader import classrun, cli, gradebook, sandbox
from lecture2_grader.report import report_line

pytestmark = pytest.mark.slow
NB1 = "01_tensors_dtypes.ipynb"
S1 = NB1.removesuffix(".ipynb")
REF = sub.reference_answers(NB1)
TB, FF = "ex01_tensor_bytes", "ex01_float_format"
TB_PTS, FF_PTS = 2, 3
FULL = TB_PTS + FF_PTS
VISIBLE = 1.5 + 2  # the points of the visible groups: tensor_bytes' real tensors and edge cases, float_format's two
BITS = "def tensor_bytes(shape, dtype):\n    return math.prod(shape) * dtype.itemsize * 8\n"
RIGHT = "math.prod(shape) * dtype.itemsize"


def with_code(before: str = "", after: str = "", gid: str = TB) -> nbformat.NotebookNode:
    """Notebook 01 with the reference answer of `gid` wrapped in extra code."""
    return sub.filled(NB1, **{gid: before + REF[gid] + after})


def tensor_bytes_doing(body: str, result: str = "math.prod(shape) * dtype.itemsize * 8") -> nbformat.NotebookNode:
    """tensor_bytes whose body first runs `body`, then returns `result` (by default a wrong answer: bits)."""
    code = "def tensor_bytes(shape, dtype):\n" + "".join(f"    {line}\n" for line in body.splitlines()) + f"    return {result}\n"
    return sub.filled(NB1, **{TB: code})


def own_cell_before(gid: str, source: str, nb: nbformat.NotebookNode | None = None) -> nbformat.NotebookNode:
    nb = nb or sub.filled(NB1)
    at = next(i for i, c in enumerate(nb.cells) if sub.grade_id(c) == gid)
    nb.cells.insert(at, nbformat.v4.new_code_cell(source))
    return nb


def own_cell_after(gid: str, source: str, nb: nbformat.NotebookNode | None = None) -> nbformat.NotebookNode:
    """`nb` (default: the reference) with a code cell of the student's own right after cell `gid`."""
    nb = nb or sub.filled(NB1)
    at = next(i for i, c in enumerate(nb.cells) if sub.grade_id(c) == gid)
    nb.cells.insert(at + 1, nbformat.v4.new_code_cell(source))
    return nb


MUTATED = ("BASE = {'radix': 10}\n"
           "def float_format_limits(exp_bits, mantissa_bits):\n"
           "    r, bias = float(BASE['radix']), 2 ** (exp_bits - 1) - 1\n"
           "    return {'max': (2 - r ** -mantissa_bits) * r ** bias, 'tiny': r ** (1 - bias), 'eps': r ** -mantissa_bits}\n")


def _without_demos(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The course's demo and plot cells deleted (a student tidying up): only answers, checks and markdown left."""
    nb.cells = [c for c in nb.cells if c.cell_type != "code" or c.metadata.get("nbgrader", {}).get("solution")
                or c.metadata.get("nbgrader", {}).get("grade")]
    return nb


def _with_outputs(nb: nbformat.NotebookNode, size: int) -> nbformat.NotebookNode:
    """Plots kept from the lab: `size` bytes of PNG outputs spread over the code cells."""
    import base64
    import os

    cells = [c for c in nb.cells if c.cell_type == "code"]
    for c in cells:
        png = base64.b64encode(os.urandom(size * 3 // 4 // len(cells))).decode()
        c.outputs = [nbformat.v4.new_output("display_data", data={"image/png": png})]
    return nb


def one(nb, score, report=("ok",), **extra) -> dict:
    return {"files": {NB1: nb}, "score": score, "report": list(report), **extra}


def honest_corpus() -> dict[str, dict]:
    """Students who wrote right answers in ways a scan-based grader punished (issue: 9 of 15 lost points)."""
    no_hints = sub.stripped(sub.filled(NB1))
    for cell in no_hints.cells:
        cell.source = (cell.source.replace("(shape: tuple[int, ...], dtype: torch.dtype) -> int:", "(shape, dtype):")
                       .replace("(exp_bits: int, mantissa_bits: int) -> dict[str, float]:", "(exp_bits, mantissa_bits):"))
    return {
        "print-self-test": one(with_code(after="\nprint(tensor_bytes((2, 3), torch.float32))\nassert tensor_bytes((), torch.int8) == 1\n"), FULL),
        "module-constant": one(sub.filled(NB1, **{FF: 'TWO = 2.0\n'
                                                      'def float_format_limits(exp_bits, mantissa_bits):\n'
                                                      '    bias = 2 ** (exp_bits - 1) - 1\n'
                                                      '    return {"max": (TWO - TWO ** -mantissa_bits) * TWO ** bias, '
                                                      '"tiny": TWO ** (1 - bias), "eps": TWO ** -mantissa_bits}\n'}), FULL),
        "comprehension-over-dtypes": one(sub.filled(NB1, **{TB: "SIZES = {dt: dt.itemsize for dt in (torch.float32, torch.bfloat16)}\n"
                                                                "def tensor_bytes(shape, dtype):\n"
                                                                "    return math.prod(shape) * SIZES.get(dtype, dtype.itemsize)\n"}), FULL),
        "functools-wraps": one(sub.filled(NB1, **{TB: "import functools\ndef as_int(fn):\n    @functools.wraps(fn)\n"
                                                      "    def wrapper(*a):\n        return int(fn(*a))\n    return wrapper\n"
                                                      f"@as_int\ndef tensor_bytes(shape, dtype):\n    return {RIGHT}\n"}), FULL),
        "lru-cache": one(sub.filled(NB1, **{TB: f"import functools\n@functools.lru_cache(maxsize=None)\n"
                                                f"def tensor_bytes(shape, dtype):\n    return {RIGHT}\n"}), FULL),
        "helper-in-own-cell": one(own_cell_before(TB, "def count(shape):\n    n = 1\n    for s in shape:\n        n *= s\n    return n\n",
                                                  sub.filled(NB1, **{TB: "def tensor_bytes(shape, dtype):\n    return count(shape) * dtype.itemsize\n"})), FULL),
        "try-import": one(with_code("try:\n    import numpy as np\nexcept ImportError:\n    np = None\n"), FULL),
        "helper-named-bias": one(sub.filled(NB1, **{FF: "def bias(e):\n    return 2 ** (e - 1) - 1\n"
                                                        "def float_format_limits(exp_bits, mantissa_bits):\n"
                                                        "    b = bias(exp_bits)\n"
                                                        "    return {'max': float((2 - 2.0 ** -mantissa_bits) * 2.0 ** b), "
                                                        "'tiny': float(2.0 ** (1 - b)), 'eps': float(2.0 ** -mantissa_bits)}\n"}), FULL),
        "not-implemented-for-complex": one(tensor_bytes_doing(
            "if dtype.is_complex:\n    raise NotImplementedError('complex dtypes are not asked for')", RIGHT), FULL - 0.5),
        "lost-metadata-and-hints": one(no_hints, FULL, [f"{S1}: nbgrader metadata missing: answers found by what they define"]),
        "getattr-with-default": one(tensor_bytes_doing("size = getattr(dtype, 'itemsize', 4)", "math.prod(shape) * size"), FULL),
        "grad-mode-off-at-top": one(with_code("torch.set_grad_enabled(True)\n"), FULL),
        "mutated-global": one(own_cell_after(FF, "BASE.update({'unit': 1})\nBASE['radix'] = 2\n",
                                             sub.filled(NB1, **{FF: MUTATED})), FULL),
        "helper-between-answer-and-test": one(own_cell_after(TB, "def count(shape):\n    return math.prod(shape)\n",
                                                             sub.filled(NB1, **{TB: "def tensor_bytes(shape, dtype):\n    return count(shape) * dtype.itemsize\n"})), FULL),
        "dataclass": one(sub.filled(NB1, **{TB: "from dataclasses import dataclass\n@dataclass(frozen=True)\nclass Layout:\n"
                                                "    shape: tuple\n    def numel(self):\n        return math.prod(self.shape)\n"
                                                "def tensor_bytes(shape, dtype):\n    return Layout(tuple(shape)).numel() * dtype.itemsize\n"}), FULL),
        "lambda": one(sub.filled(NB1, **{TB: f"tensor_bytes = lambda shape, dtype: {RIGHT}\n"}), FULL),
        "reordered-helper-after-use": one(own_cell_after(FF, "def bias_of(e):\n    return 2 ** (e - 1) - 1\n",
                                                         sub.filled(NB1, **{FF: "def float_format_limits(exp_bits, mantissa_bits):\n"
                                                                                "    b = bias_of(exp_bits)\n"
                                                                                "    return {'max': (2 - 2.0 ** -mantissa_bits) * 2.0 ** b, "
                                                                                "'tiny': 2.0 ** (1 - b), 'eps': 2.0 ** -mantissa_bits}\n"})), FULL),
        "deleted-demos": one(_without_demos(sub.filled(NB1)), FULL),
        "timed-answer": one(sub.filled(NB1, **{TB: "%%time\n" + REF[TB], FF: "%%capture out\n" + REF[FF]}), FULL),
        "print-own-cell-after-test": one(own_cell_after(f"{TB}_check", "print(tensor_bytes((2, 2), torch.float32))\n"), FULL),
        "large-saved-outputs": one(_with_outputs(sub.filled(NB1), 50 * 2**20), FULL),
    }


def saved_oddly_corpus(course: Path) -> dict[str, dict]:
    duplicated = sub.filled(NB1, **{TB: BITS})
    cell = next(c for c in duplicated.cells if sub.grade_id(c) == TB)
    copy = nbformat.from_dict(dict(cell))
    copy.source = REF[TB]
    duplicated.cells.insert(duplicated.cells.index(cell) + 1, copy)
    extra = sub.filled(NB1)
    extra.cells.append(nbformat.v4.new_code_cell("x = 1", metadata={"nbgrader": {"grade_id": "ex01_bonus_check", "grade": True,
                                                                                "points": 100, "solution": False}}))
    no_tests = sub.filled(NB1, **{TB: BITS})
    no_tests.cells = [c for c in no_tests.cells if not c.get("metadata", {}).get("nbgrader", {}).get("grade")]
    edited_test = sub.filled(NB1, **{TB: BITS})
    for c in edited_test.cells:
        if sub.grade_id(c) == f"{TB}_check":
            c.source = "print('✅ tensor_bytes: 检查通过 (all checks passed)')"
    retyped = sub.filled(NB1)
    for i, c in enumerate(retyped.cells):
        if sub.grade_id(c) == FF:
            retyped.cells[i] = nbformat.v4.new_markdown_cell(c.source, metadata=c.metadata)
    huge_int = sub.as_text(sub.filled(NB1)).replace('"nbformat": 4', '"nbformat": 4, "x": ' + "9" * 5000, 1)
    return {
        "correct": one(sub.filled(NB1), FULL),
        "blank": one(sub.release(NB1), 0, ["blank (nothing attempted): 01_tensors_dtypes"]),
        "planted-mistake": one(sub.filled(NB1, **{TB: BITS}), FULL - TB_PTS),
        "bom": one(sub.with_bom(sub.filled(NB1)), FULL),
        "crlf": one(sub.with_crlf(sub.filled(NB1)), FULL),
        "utf16": one(sub.utf16(sub.filled(NB1)), FULL),
        "nbformat3": one(sub.nbformat3(sub.filled(NB1)), FULL),
        "latin1": one(sub.as_text(sub.filled(NB1)).replace("字节", "\xe9").encode("latin-1", "replace"), 0,
                      [f"{S1}: not UTF-8 text"]),
        "invalid-json": one("{ this is not a notebook", 0, [f"{S1}: not a valid notebook (invalid JSON"]),
        "huge-integer-json": one(huge_int, 0, [f"{S1}: not a valid notebook (invalid JSON"]),
        "null-worksheet-cells": one('{"nbformat": 3, "worksheets": [{"cells": null}]}', 0,
                                    [f"{S1}: answer cell {TB} missing"]),
        "missing-notebook": {"files": {}, "score": 0, "report": [f"{S1}: notebook missing (0 points)"]},
        "no-assignment-folder": {"files": {}, "folder": False, "score": 0, "report": ["no lec02/ folder: every notebook missing"]},
        "unexpected-files": {"files": {NB1: sub.filled(NB1), "lecture2.py": "raise SystemExit('shadow')\n",
                                       "data.bin": b"\0" * 1024}, "score": FULL,
                             "report": ["unexpected files ignored: data.bin, lecture2.py"]},
        "duplicated-answer": one(duplicated, FULL - TB_PTS, [f"{S1}: answer cell {TB} appears 2 times (the first one is graded)"]),
        "unknown-grade-id": one(extra, FULL, [f"{S1}: cells with unknown grade_ids ignored: ex01_bonus_check"]),
        "deleted-test-cells": one(no_tests, FULL - TB_PTS),
        "edited-test-cell": one(edited_test, FULL - TB_PTS),
        "retyped-cell": one(retyped, FULL, [f"{S1}: answer cell {FF} is a markdown cell (run as code)"]),
        "+formula-name": one(sub.filled(NB1), FULL),
        "edited-locked-cell": one(_edited_course_cell(), FULL - FF_PTS),
    }


def _edited_course_cell() -> nbformat.NotebookNode:
    """A student added a helper to a locked course cell (the finfo table's) and used it in their answer."""
    nb = sub.filled(NB1, **{FF: "def float_format_limits(exp_bits, mantissa_bits):\n    b = bias_of(exp_bits)\n"
                                "    return {'max': (2 - 2.0 ** -mantissa_bits) * 2.0 ** b, 'tiny': 2.0 ** (1 - b), "
                                "'eps': 2.0 ** -mantissa_bits}\n"})
    for c in nb.cells:
        if sub.grade_id(c) == "code-09":
            c.source = "def bias_of(e):\n    return 2 ** (e - 1) - 1\n\n" + c.source
    return nb


def faults_corpus() -> dict[str, dict]:
    return {
        "infinite-loop": one(tensor_bytes_doing("while True:\n    pass", RIGHT), FULL - TB_PTS, [f"{S1}: {TB}_check: an answer ran past the time limit"]),
        # float_format_limits' cell runs after tensor_bytes' hidden cases: what it raised is the judge's note, its class too
        "memory-hog": one(with_code("hog = bytearray(40 * 2**30)\n", gid=FF), FULL - FF_PTS, [f"{S1}: {FF} raised an error"]),
        "swallows-timeouts": one(with_code("import time\ndef spin():\n    while True:\n        try:\n            time.sleep(0.5)\n"
                                           "        except BaseException:\n            pass\nstarted = spin()\n"), FULL - TB_PTS,
                                 [f"{S1}: {TB} ran past the cell time limit"]),
        "spins-in-answer": one(tensor_bytes_doing("import time\nwhile True:\n    try:\n        time.sleep(0.5)\n"
                                                  "    except BaseException:\n        pass", RIGHT), FULL - TB_PTS,
                               [f"{S1}: {TB}_check: an answer ran past the time limit"]),
        "segfault-in-answer": one(sub.filled(NB1, **{FF: "import ctypes\ndef float_format_limits(e, m):\n"
                                                          "    ctypes.string_at(0)\n"}), FULL - FF_PTS,
                                  [f"{S1}: your notebook's process was restarted"]),
        "huge-answer": one(sub.filled(NB1, **{TB: REF[TB] + "# padding\n" * 20_000}), FULL - TB_PTS, [f"{S1}: answer cell {TB} holds"]),
        "allocates": one(tensor_bytes_doing("", "torch.empty(shape, dtype=dtype).nbytes"), FULL - 1),
        "memorised": one(tensor_bytes_doing("table = {(3, 4): 48, (2, 3, 5): 60, (1024,): 1024, (): 8}", "table.get(shape, 2**60)"), FULL - 0.5),
    }


def attacks_corpus(course: Path) -> dict[str, dict]:
    """What won against a grader whose checks shared the student's process: here each earns what its own
    answer earns (a wrong one, unless the attack is only decoration), and the scan flags it for a look."""
    other = course / "submitted" / "correct" / ASSIGNMENT / NB1
    return {
        "frame-reader": one(tensor_bytes_doing(
            "import sys\nframe, seen = sys._getframe(1), []\nwhile frame is not None:\n"
            "    seen += [v for k, v in frame.f_locals.items() if k in ('want', 'measured', 'expected')]\n    frame = frame.f_back",
            "seen[0] if seen else math.prod(shape) * dtype.itemsize * 8"), FULL - TB_PTS, ["flagged for review", "imports sys"]),
        "gc-search": one(tensor_bytes_doing(
            "import gc\nfound = [o for o in gc.get_objects() if isinstance(o, dict) and 'want' in o]",
            "found[0]['want'] if found else math.prod(shape) * dtype.itemsize * 8"), FULL - TB_PTS, ["imports gc"]),
        "proc-mem": one(tensor_bytes_doing(
            "import numpy as np\ntry:\n    np.lib.npyio.DataSource(None).open('/proc/self/mem', 'rb').read(16)\nexcept Exception:\n    pass"),
            FULL - TB_PTS, ["names the path '/proc/self/mem'"]),
        "patches-math": one(sub.filled(NB1, **{FF: "math.isclose = lambda *a, **k: True\n"
                                                  "def float_format_limits(e, m):\n    return {'max': 0.0, 'tiny': 0.0, 'eps': 0.0}\n"}), FULL - FF_PTS,
                            ["assigns to math.isclose"]),
        "loop-target-patch": one(sub.filled(NB1, **{FF: "for math.isclose in [lambda *a, **k: True]:\n    pass\n"
                                                       "def float_format_limits(e, m):\n    return {'max': 0.0, 'tiny': 0.0, 'eps': 0.0}\n"}), FULL - FF_PTS,
                                 ["assigns to math.isclose"]),
        "patches-checks": one(sub.filled(NB1, **{FF: "import lecture2.checks\nlecture2.checks.expect_close = lambda *a, **k: None\n"
                                                    "def float_format_limits(e, m):\n    return {'max': 0.0, 'tiny': 0.0, 'eps': 0.0}\n"}), FULL - FF_PTS,
                              ["imports lecture2.checks"]),
        "range-override": one(sub.filled(NB1, **{TB: "def range(*a):\n    return ()\n"
                                                     "table = {(3, 4): 48, (2, 3, 5): 60, (1024,): 1024, (): 8}\n"
                                                     "def tensor_bytes(shape, dtype):\n    return table.get(shape, 2**60)\n"}), FULL - 0.5),
        "fake-report": one(tensor_bytes_doing("import lecture2.checks\nwith lecture2.checks.exercise('tensor_bytes'):\n    pass"), FULL - TB_PTS,
                           ["imports lecture2.checks"]),
        "segfault-after-report": one(with_code("import ctypes, lecture2.checks\n"
                                               "with lecture2.checks.exercise('tensor_bytes', points={'real tensors': 2}) as ex:\n"
                                               "    with ex.group('real tensors'):\n        pass\n", "\nctypes.string_at(0)\n"), FULL - TB_PTS,
                                     [f"{S1}: {TB}: "]),
        "always-equal": one(sub.filled(NB1, **{TB: "class Any(int):\n    def __eq__(self, other):\n        return True\n"
                                                    "    __hash__ = int.__hash__\n\n"
                                                    "def tensor_bytes(shape, dtype):\n    return Any(0)\n"}), FULL - TB_PTS,
                            ["defines __eq__"]),
        "prints-points": one(tensor_bytes_doing("print('PRINTED-' + 'BY-THE-STUDENT', shape)\n"
                                                "print('✅ tensor_bytes: 检查通过 (all checks passed)')"), FULL - TB_PTS),
        "reads-solutions": one(tensor_bytes_doing(
            "try:\n    src = open('../../../solutions/lec02/01_tensors_dtypes.ipynb').read()\nexcept OSError:\n    src = None"), FULL - TB_PTS),
        "gradebook-sql": one(with_code("import sqlite3\n", "\ntry:\n    sqlite3.connect('../../../gradebook.db').execute("
                                       "'UPDATE grade SET manual_score=100')\nexcept Exception:\n    pass\n"), FULL),
        "fills-memory-filesystems": one(with_code(
            "def _fill(path):\n    try:\n        with open(path, 'wb') as f:\n            for _ in range(4096):\n"
            "                f.write(b'\\0' * 2**20)\n    except OSError:\n        pass\n"
            "_fill('/dev/shm/x'); _fill('/tmp/x'); _fill('/dev/x')\n"), FULL, ["names the path '/dev/shm/x'"]),
        "escape": one(sub.filled(NB1, **{TB: ESCAPE.format(other=other, gradebook=course / "gradebook.db",
                                                          checks=ROOT / "lecture2" / "checks" / "__init__.py", course=course)}), FULL,
                      ["flagged for review"]),
        "flooding-reply": one(tensor_bytes_doing(WRITE_REPLY + "os.write(fd, frame(('{\"id\": \"%s\", \"ok\": {\"$set\": [%s]}}' "
                                                 "% (in_flight(), ','.join(str(1 + i * (2**61 - 1)) for i in range(200_000)))).encode()))",
                                                 RIGHT), FULL - TB_PTS, [f"{S1}: your notebook's process was restarted", "protocol error"]),
        "pre-answers-calls": one(tensor_bytes_doing(WRITE_REPLY + "right = math.prod(shape) * dtype.itemsize\n"
                                                    "os.write(fd, frame({'id': in_flight(), 'ok': right}))\n"
                                                    "os.write(fd, frame({'id': 'guessed-next', 'ok': right}))", RIGHT), FULL - TB_PTS,
                                 ["answered out of turn"]),
        "overflowing-meta-tensor": one(sub.filled(NB1, **{FF: "def float_format_limits(exp_bits, mantissa_bits):\n" + "".join(
            f"    {line}\n" for line in (WRITE_REPLY + "meta = {'$tensor': {'dtype': 'float32', 'shape': [2**39] * 16, "
                                         "'device': 'meta', 'param': False}}\nos.write(fd, frame({'id': in_flight(), 'ok': meta}))\n"
                                         "return {'max': 1.0, 'tiny': 1.0, 'eps': 1.0}").splitlines())}), FULL - FF_PTS,
                                       ["protocol error"]),
        "prints-every-input": one(sub.filled(NB1, **{TB: "SEEN = []\ndef tensor_bytes(shape, dtype):\n    SEEN.append((shape, dtype))\n"
                                                         f"    return {RIGHT}\n",
                                                     FF: "import os, sys\nprint('SEEN:', SEEN)\nos.write(2, ('SEEN-ERR:' + repr(SEEN)).encode())\n"
                                                         "if len(SEEN) > 10:\n    raise ValueError('SEEN-RAISED:' + repr(SEEN))\n" + REF[FF]}), FULL - FF_PTS,
                                  [f"{S1}: {FF} raised an error"]),
        "terminal-injection": one(_with_unknown_ids("\x1b[2J\x1b[H\rcorrect: 0/7 — forged\nalice: 7/7 — ok",
                                                    "# 86 / 86\n[click](javascript:alert(1))<script>alert(1)</script>"),
                                  FULL, ["unknown grade_ids ignored: \\x1b[2J"]),
    }


# What tensor_bytes keeps of the inputs it received (the hidden shapes among them), and how a later answer can try to
# hand them back: each as a marker the tests search every file for (the sources write them with a quote in between).
RECORDS = ("SEEN = []\ndef tensor_bytes(shape, dtype):\n    SEEN.append(tuple(shape))\n"
           "    return math.prod(shape) * dtype.itemsize\n")
LEAKED = re.compile(r"HIDDEN<\[|L_\d")  # "HIDDEN<" + repr(SEEN), "L_" + digits of SEEN
DIGITS = "'_'.join(str(n) for s in SEEN[-20:] for n in s)"


def _float_format_doing(body: str) -> str:
    """float_format_limits whose body first runs `body`, then returns the right limits."""
    return ("def float_format_limits(exp_bits, mantissa_bits):\n" + "".join(f"    {line}\n" for line in body.splitlines())
            + "    b = 2 ** (exp_bits - 1) - 1\n"
            + "    return {'max': (2 - 2.0 ** -mantissa_bits) * 2.0 ** b, 'tiny': 2.0 ** (1 - b), 'eps': 2.0 ** -mantissa_bits}\n")


def turn5_corpus() -> dict[str, dict]:
    """The red team's second pass (issue 39): files that made reading quadratic, own cells that ran calls and course
    patches, and answers that tried to hand a hidden case back through what the judge quotes."""
    base = json.loads(sub.as_text(sub.filled(NB1)))
    skipped = dict(base, metadata={**base["metadata"], "junk": [{"outputs": []} for _ in range(45_000)]})
    text = json.dumps(base)
    cut = text.index('"outputs": [') + len('"outputs": [')
    unterminated = text[:cut] + '"' + '\\"' * 70_000
    slow = text[:cut] + "[]," * 12_000_000 + text[cut:]  # 36 MB of brackets in outputs: past a 3 s reading budget
    printing = sub.filled(NB1)
    at = next(i for i, c in enumerate(printing.cells) if sub.grade_id(c) == TB)
    printing.cells[at + 1:at + 1] = [nbformat.v4.new_code_cell(f"print({i}, {'x' * 150!r})") for i in range(1900)]
    return {
        "many-skipped-values": one(json.dumps(skipped), FULL),  # 65 s to read before
        "unterminated-outputs-string": one(unterminated, 0, [f"{S1}: not a valid notebook (invalid JSON"]),  # 60 s
        "slow-to-read": one(slow, 0, [f"{S1}: reading the file took over 3 s", "not graded"]),
        "magic-dense-own-cell": one(own_cell_after(TB, "\n".join(["!true"] * 500) + "\nHELPER = 1\n"), FULL),  # 58 s a read
        "printing-own-cells": one(printing, FULL),  # a 114 MB stored result before
        "exploration-cell": one(own_cell_after(f"{TB}_check", "my_sizes = {dt: tensor_bytes((1024, 1024), dt) "
                                                              "for dt in (torch.float32, torch.bfloat16)}\n"), FULL),
        "course-alias-patch": one(own_cell_after(TB, "import lecture2.answers\nest = lecture2.answers\n"
                                                     "est.call = None\nlecture2.answers.observe = None\n"), FULL),
        "perf-counter-own-cell": one(own_cell_after(TB, "import time\nclass GraderBug(Exception):\n    pass\n"
                                                        "time.perf_counter = GraderBug\n"), FULL),
        "perf-counter-answer": one(sub.filled(NB1, **{TB: "import time\nclass GraderBug(Exception):\n    pass\n"
                                                          "def _boom():\n    raise GraderBug('HIDDEN<' + 'x' * 2000)\n"
                                                          "time.perf_counter = _boom\n" + REF[TB]}), FULL,
                                   ["assigns to time.perf_counter"]),
        "forges-run-reply": one(sub.filled(NB1, **{TB: WRITE_REPLY + "os.write(fd, frame({'id': in_flight(), 'raised': "
                                                        "{'types': ['GraderBug'], 'builtin': 'RuntimeError', "
                                                        "'message': 'HIDDEN<forged'}}))\n" + REF[TB]}), FULL - TB_PTS,
                                [f"{S1}: {TB}: the student's process sent a reply of another kind", "protocol error"]),
        "exception-class-leak": one(sub.filled(NB1, **{TB: RECORDS, FF: _float_format_doing(
            f"raise type('L_' + {DIGITS}, (ValueError,), {{}})('HIDDEN<' + repr(SEEN))")}), FULL - FF_PTS),
        "protocol-error-leak": one(sub.filled(NB1, **{TB: RECORDS, FF: _float_format_doing(
            WRITE_REPLY + f"os.write(fd, frame({{'id': in_flight(), 'ok': {{'$obj': ['L_' + {DIGITS}, {{}}]}}}}))")}),
                                   FULL - FF_PTS, [f"{S1}: your notebook's process was restarted", "protocol error"]),
        "got-leak": one(sub.filled(NB1, **{TB: RECORDS, FF: _float_format_doing(
            "return 'HIDDEN<' + repr(SEEN)")}), FULL - FF_PTS),
        "judge-memory": one(tensor_bytes_doing("import torch", "torch.zeros((4,) * 11, dtype=torch.int8)"), FULL - TB_PTS),
    }


def _with_unknown_ids(*ids: str) -> nbformat.NotebookNode:
    nb = sub.filled(NB1)
    for gid in ids:
        nb.cells.append(nbformat.v4.new_code_cell("x = 1", metadata={"nbgrader": {"grade_id": gid}}))
    return nb


# What a student's answer needs to write its own frames on the reply pipe (lecture2.wire's framing), with the id of
# the call in flight read off the kernel's stack.
WRITE_REPLY = ("import os, sys, json, struct\n"
               "fd = int(sys.argv[sys.argv.index('--reply-fd') + 1])\n"
               "def frame(body):\n"
               "    body = body if isinstance(body, bytes) else json.dumps(body).encode()\n"
               "    return struct.pack('>II', 8 + len(body), len(body)) + body + struct.pack('>I', 0)\n"
               "def in_flight():\n"
               "    f = sys._getframe(1)\n"
               "    while f is not None and 'msg' not in f.f_locals:\n"
               "        f = f.f_back\n"
               "    return f.f_locals['msg']['id']\n")

ESCAPE = '''import os, socket, subprocess
ATTEMPTS = []

def _try(what, fn):
    try:
        fn()
        ATTEMPTS.append(what + ": done")
    except Exception as err:
        ATTEMPTS.append(what + ": " + type(err).__name__)

_try("write another submission", lambda: open({other!r}, "w").write("{{}}"))
_try("write the gradebook", lambda: open({gradebook!r}, "a").write("x"))
_try("write lecture2", lambda: open({checks!r}, "a").write("\\nraise SystemExit"))
_try("list the course", lambda: os.listdir({course!r}))
_try("network", lambda: socket.create_connection(("1.1.1.1", 80), timeout=1))
subprocess.Popen(["sh", "-c", "sleep 2; echo pwned > /tmp/lecture2-escape-marker; echo x >> {gradebook}"],
                 start_new_session=True)
print(ATTEMPTS)

def tensor_bytes(shape, dtype):
    return math.prod(shape) * dtype.itemsize
'''


def english_corpus() -> dict[str, dict]:
    """A mixed class (issue 41): students of the English edition, graded by the same checks (answers matched by
    grade_id), their feedback in English."""
    return {
        "en-correct": one(sub.filled(NB1, edition="en"), FULL),
        "en-planted-mistake": one(sub.filled(NB1, edition="en", **{TB: BITS}), FULL - TB_PTS),
        "en-blank": one(sub.release(NB1, "en"), 0, ["blank (nothing attempted): 01_tensors_dtypes"]),
        "en-helper-in-own-cell": one(own_cell_before(TB, "def count(shape):\n    return math.prod(shape)\n",
                                                     sub.filled(NB1, edition="en", **{TB: "def tensor_bytes(shape, dtype):\n"
                                                                "    return count(shape) * dtype.itemsize\n"})), FULL),
    }


def make_course(root: Path, names: list[str], cases: dict[str, dict]) -> Path:
    import shutil

    shutil.copy(ROOT / "nbgrader_config.py", root)
    for kind, folder, into in (("solutions", SOLUTIONS, ASSIGNMENT), ("notebooks", RELEASE, ASSIGNMENT),
                               ("notebooks", sub.release_folder("en"), sub.release_folder("en").name)):
        (root / kind / into).mkdir(parents=True)
        for name in names:
            shutil.copy(folder / name, root / kind / into)
    for student, case in cases.items():
        folder = root / "submitted" / student / ASSIGNMENT
        if not case.get("folder", True):
            folder.parent.mkdir(parents=True)
            (folder.parent / "notes.txt").write_text("handed in at the wrong level")
            continue
        folder.mkdir(parents=True)
        for name, nb in case["files"].items():
            sub.write(nb, folder / name)
    return root


def grading_runtime(cell_timeout: float = 5, notebook_timeout: float = 120):
    rt = judging_runtime(sandboxed=True, threads=1)
    rt.cell_timeout, rt.notebook_timeout = cell_timeout, notebook_timeout
    rt.limits = sandbox.Limits(memory=4 * 2**30)
    return rt


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    cases = {**saved_oddly_corpus(root), **honest_corpus(), **faults_corpus(), **attacks_corpus(root), **turn5_corpus(),
             **english_corpus()}
    course = make_course(root, [NB1], cases)
    (course / "submitted" / "bad name!").mkdir()  # a folder the grader does not accept: noted, the class goes on
    marker = Path("/tmp/lecture2-escape-marker")
    marker.unlink(missing_ok=True)
    checks_before = hashlib.sha256((ROOT / "lecture2" / "checks" / "__init__.py").read_bytes()).hexdigest()
    correct_before = (course / "submitted" / "correct" / ASSIGNMENT / NB1).read_bytes()
    start, began = time.perf_counter(), time.time()
    rt = grading_runtime()
    rt.read_timeout = 3.0  # the slow-to-read student's budget (20 s by default)
    run = classrun.grade_class(course, rt, jobs=2)
    students, notes = run.students, run.notes
    seconds = time.perf_counter() - start
    time.sleep(3)  # the escape's detached process would have written by now
    results = list((course / "autograded").glob(f"*/{ASSIGNMENT}/*.result.json"))
    return {"course": course, "cases": cases, "students": {s.name: s for s in students}, "notes": notes,
            "seconds": seconds, "first_result": min(p.stat().st_mtime for p in results) - began,
            "untouched": (checks_before == hashlib.sha256((ROOT / "lecture2" / "checks" / "__init__.py").read_bytes()).hexdigest(),
                          correct_before == (course / "submitted" / "correct" / ASSIGNMENT / NB1).read_bytes(),
                          not marker.exists())}


def test_every_student_gets_exactly_what_they_earned(graded):
    """Does each submission earn what it honestly earns: no more from an attack, no less from a fault or from
    honest code written in an unusual way?"""
    cases, students = graded["cases"], graded["students"]
    assert set(students) == set(cases), "a student was lost"
    wrong = {n: (students[n].total, c["score"], students[n].problems) for n, c in cases.items()
             if students[n].total != c["score"]}
    assert not wrong, f"(got, expected, problems): {wrong}"


def test_every_problem_is_named_in_the_report_line_and_honest_work_is_ok(graded):
    max_total = sum(gradebook.max_scores(graded["course"]).values())
    for name, case in graded["cases"].items():
        line = report_line(graded["students"][name], max_total)
        assert line.startswith(f"{name}: {case['score']:g}/{max_total:g} — "), line
        if case["report"] == ["ok"]:
            assert line.endswith("— ok"), line
        for fragment in case["report"]:
            assert fragment in line, f"{name}: {fragment!r} not in {line!r}"
    assert any("bad name!" in n and "not graded" in n for n in graded["notes"])


def test_nothing_a_student_wrote_reaches_the_terminal_raw(graded):
    line = report_line(graded["students"]["terminal-injection"], FULL)
    assert "\x1b" not in line and "\r" not in line and "\n" not in line


def test_the_sandbox_kept_the_course_and_other_students_intact(graded):
    checks_same, other_same, no_marker = graded["untouched"]
    assert checks_same, "lecture2/checks/__init__.py was modified"
    assert other_same, "another student's submission was modified"
    assert no_marker, "a detached process of a student survived the sandbox"
    with Gradebook(gradebook.db_url(graded["course"])) as gb:
        assert gb.find_submission(ASSIGNMENT, "correct").score == FULL
    nb = nbformat.read(graded["course"] / "autograded" / "escape" / ASSIGNMENT / NB1, as_version=4)
    printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    for attempt in ("write another submission", "write the gradebook", "write lecture2", "list the course", "network"):
        assert f"{attempt}: " in printed and f"{attempt}: done" not in printed, (attempt, printed[:500])


def test_csv_files_list_every_student_and_neutralise_formulas(graded):
    course, cases = graded["course"], graded["cases"]
    rows = {r["student"]: r for r in csv.DictReader((course / "grades.csv").open(encoding="utf-8"))}
    assert set(rows) == {("'" + n if n[0] in "=+-@" else n) for n in cases}
    assert "'+formula-name" in rows and float(rows["'+formula-name"]["total"]) == FULL
    for name, case in cases.items():
        assert float(rows[("'" + name if name[0] in "=+-@" else name)]["total"]) == case["score"], name
    for name in ("mistakes.csv", "mistakes_by_student.csv", "notebooks.csv"):
        for row in csv.reader((course / name).open(encoding="utf-8")):
            assert all(not cell.startswith(("=", "+", "-", "@")) for cell in row), (name, row)


def test_feedback_shows_no_hidden_test_nothing_the_student_printed_and_no_student_markup(graded):
    course = graded["course"]
    hidden = hidden_lines(NB1)
    for student in ("correct", "planted-mistake", "prints-points", "infinite-loop", "terminal-injection"):
        page = (course / "feedback" / student / ASSIGNMENT / f"{S1}.html").read_text("utf-8")
        text = html.unescape(re.sub(r"<[^>]+>", "", page))
        assert "checks.exercise" in text, "the visible checks are shown"
        lines = {line.strip() for line in text.splitlines()}
        assert not [h for h in hidden if h in lines], f"hidden test lines in {student}'s feedback"
        assert "20260201" not in text and "Traceback" not in text
    page = (course / "feedback" / "prints-points" / ASSIGNMENT / f"{S1}.html").read_text("utf-8")
    assert "PRINTED-BY-THE-STUDENT" not in page and "bits" in page, "the hint is shown, the student's print is not"
    page = (course / "feedback" / "terminal-injection" / ASSIGNMENT / f"{S1}.html").read_text("utf-8")
    assert "<script>alert" not in page and "javascript:alert" not in page.replace("javascript:alert(1))&lt;", "")
    assert page.count("<h1") == 1


def test_the_mistakes_table_counts_exactly_who_made_each_mistake(graded):
    """mistakes.csv ranks the mistakes of attempted work (how many of how many who attempted), one row per student
    in mistakes_by_student.csv; an exercise left as released is counted apart, never as a mistake."""
    course = graded["course"]
    rows = list(csv.DictReader((course / "mistakes.csv").open(encoding="utf-8")))
    by_student = list(csv.DictReader((course / "mistakes_by_student.csv").open(encoding="utf-8")))
    bits = {r["student"] for r in by_student if (r["test"], r["group"], r["hint_key"]) == (f"{TB}_check", "real tensors", "bits_for_bytes")}
    assert {"planted-mistake", "duplicated-answer", "deleted-test-cells", "edited-test-cell", "prints-points"} <= bits
    row = next(r for r in rows if (r["test"], r["group"], r["hint_key"]) == (f"{TB}_check", "real tensors", "bits_for_bytes"))
    assert int(row["students"]) == len(bits) and int(row["attempted"]) >= len(bits)
    assert not any(r["hint_key"] == "not-implemented" for r in rows)
    assert not any(r["student"] == "blank" for r in by_student)
    for test in (f"{TB}_check", f"{FF}_check"):
        assert all(int(r["unattempted"]) >= 1 for r in rows if r["test"] == test)  # the blank student, apart


def test_grading_one_student_again_keeps_the_class(graded):
    course, cases = graded["course"], graded["cases"]
    again = classrun.grade_class(course, grading_runtime(), ["planted-mistake"], jobs=1).students
    assert again[0].total == FULL - TB_PTS
    rows = {r["student"] for r in csv.DictReader((course / "grades.csv").open(encoding="utf-8"))}
    assert len(rows) == len(cases)


def test_a_missing_sandbox_is_refused_with_a_clear_message(monkeypatch):
    monkeypatch.setattr(sandbox, "BWRAP", "bwrap-not-installed")
    with pytest.raises(SystemExit, match="bubblewrap .* not installed.*--unsafe-no-sandbox"):
        cli.main(["--course", "/nonexistent"])


def test_bad_course_folder_is_explained(tmp_path):
    with pytest.raises(SystemExit, match="not the course folder"):
        classrun.grade_class(tmp_path, grading_runtime())
    (tmp_path / "nbgrader_config.py").write_text("")
    with pytest.raises(SystemExit, match="no submissions"):
        classrun.grade_class(tmp_path, grading_runtime())


@pytest.mark.parametrize("args, message", [
    (["--jobs", "0"], "must be positive"),
    (["--notebook-timeout", "-1"], "must be positive"),
    (["--memory-limit", "4XB"], "not a memory size"),
    (["--memory-limit", "100MB"], "below 1GiB"),
])
def test_bad_options_are_refused_with_a_message(args, message, capsys):
    with pytest.raises(SystemExit) as err:
        cli.main(args)
    assert err.value.code == 2 and message in capsys.readouterr().err


def _every_file_of(course: Path, student: str) -> dict[str, str]:
    """What grading leaves that names `student` or holds their results: their autograded/ and feedback/ files, the
    class's CSV files and class report."""
    paths = [*(course / "autograded" / student).rglob("*"), *(course / "feedback" / student).rglob("*"),
             *course.glob("*.csv"), *(course / "class_report").rglob("*")]
    return {str(p.relative_to(course)): p.read_text("utf-8", "replace") for p in paths if p.is_file()}


def test_nothing_printed_after_a_hidden_case_is_handed_back(graded):
    """A student whose function keeps every input it receives, and whose later answer cell prints them (stdout),
    writes them to the raw stderr and raises them: none of it is in the autograded notebook, the stored results,
    the feedback, the CSV files or the class report (graded with --jobs 2); the verdicts are all there."""
    course = graded["course"]
    printed = re.compile(r"SEEN(-ERR|-RAISED)?: ?\[")  # what it printed starts so; its source has a quote there
    found = {name: m.group() for name, text in _every_file_of(course, "prints-every-input").items()
             for m in [printed.search(text)] if m}
    assert not found, found
    result = (course / "autograded" / "prints-every-input" / ASSIGNMENT / f"{S1}.result.json").read_text("utf-8")
    assert "not kept: the process had received a hidden check's inputs" in result
    notebook = (course / "autograded" / "prints-every-input" / ASSIGNMENT / NB1).read_text("utf-8")
    assert "drawn shapes" in notebook and "✅" in notebook, "the autograded notebook shows the grader's verdict lines"


def test_an_edited_locked_cell_is_explained_in_the_feedback(graded):
    page = (graded["course"] / "feedback" / "edited-locked-cell" / ASSIGNMENT / f"{S1}.html").read_text("utf-8")
    text = html.unescape(page)
    assert "code-09" in text and "the course's version ran" in text and "bias_of" in text
    assert f"{FF} 用到了 (uses) bias_of" in text and "NameError" in text


def test_an_own_cell_the_grader_skips_is_named_with_what_it_risks(graded):
    page = html.unescape((graded["course"] / "feedback" / "print-own-cell-after-test" / ASSIGNMENT / f"{S1}.html")
                         .read_text("utf-8"))
    assert "「print(tensor_bytes((2, 2), torch.float32))」" in page and "harmless" in page and "调用了 (calls) print" in page


def test_validate_gives_the_score_grading_gives(graded):
    """For every honest-but-unusual student: the points `make validate` shows equal the points grading gave the
    same file's visible check groups (and grading gave the full points, tested above)."""
    from concurrent.futures import ThreadPoolExecutor

    from lecture2_grader import artifacts, validate

    course, rt = graded["course"], judging_runtime(sandboxed=False)
    names = list(honest_corpus())
    paths = [course / "submitted" / n / ASSIGNMENT / NB1 for n in names]
    with ThreadPoolExecutor(2) as pool:
        outcomes = dict(zip(names, pool.map(lambda p: validate.validate(p, rt), paths)))
    for name, (status, lines) in outcomes.items():
        summary = artifacts.load(course, name)[S1]
        visible = sum(g["points"] for t in summary["tests"] for g in t["groups"] if not g["hidden"])
        assert status == 0 and lines[0].startswith(f"{S1}: {visible:g}/{VISIBLE:g} "), (name, visible, lines[0])
        assert visible == VISIBLE, (name, lines)


class _Recorded:
    """An executor whose judge returned nothing (its cause: the notebook's time limit), or that must not be asked."""

    def __init__(self, outcome: dict | None):
        self.outcome, self.asked, self.warmed = outcome, 0, []

    def warm(self, notebooks):
        self.warmed.append(notebooks)

    def preflight(self):
        return []

    def submit(self, job, label=""):
        from concurrent.futures import Future

        self.asked += 1
        assert self.outcome is not None, f"{label} was run again though its outcome was stored"
        future = Future()
        future.set_result(dict(self.outcome))
        return future

    def timing(self, future):
        return None

    def describe(self):
        return "a recorded executor"

    def close(self):
        pass


def test_a_failed_notebook_is_stored_with_its_cause_and_not_run_again(graded):
    """A notebook whose judge gave no results (here: stopped at the notebook's time limit) is stored like a success,
    so the next `make grade` does not pay for it again; --regrade does."""
    course = graded["course"]
    stalled = {"error": "stopped at the notebook's time limit (120 s)", "cause": "time limit", "log": ""}
    first = _Recorded(stalled)
    students = classrun.grade_class(course, grading_runtime(), ["correct"], regrade=True, executor=first).students
    assert first.asked == 1 and students[0].total == 0 and "time limit" in " ".join(students[0].problems)
    assert first.warmed == [[NB1]], "an executor given to the run (as the CLI gives one) is warmed for its notebooks"
    again = _Recorded(None)
    run = classrun.grade_class(course, grading_runtime(), ["correct"], executor=again)
    students, notes = run.students, run.notes
    assert again.asked == 0 and students[0].total == 0 and any("stored results were used" in n for n in notes)
    classrun.grade_class(course, grading_runtime(), ["correct"], regrade=True, jobs=1)  # the class as it was, for the tests after


def test_the_classs_first_judged_result_comes_within_seconds_of_the_start(graded):
    """Reading is linear and each file has its own budget in a reader, and each notebook goes to its judge as soon as
    it is read: the files that took minutes to read (and one past its budget) hold no one back. Before, every file
    was read first, in the grader's own process: the class's first judged result came 182 s after the start."""
    assert graded["first_result"] < 60, f"the first result was stored {graded['first_result']:.0f} s after the start"


def test_no_hidden_input_reaches_anything_a_student_sees(graded):
    """The answers that tried to hand tensor_bytes' hidden shapes back (an exception's class and message, a reply the
    decoder refuses, a value a visible check shows, a forged reply to a run request, a judge failure): none of it is
    in their autograded notebook, stored result, feedback, the CSV files or the class report."""
    course = graded["course"]
    for student in ("exception-class-leak", "protocol-error-leak", "got-leak", "forges-run-reply",
                    "perf-counter-answer"):
        found = {name: m.group() for name, text in _every_file_of(course, student).items()
                 for m in [LEAKED.search(text)] if m}
        assert not found, (student, found)
        line = report_line(graded["students"][student], FULL)
        assert "grader's judge failed" not in line and "GraderBug" not in line, line


def test_own_cells_that_could_change_the_course_are_named_not_run(graded):
    course = graded["course"]
    for student, named in (("exploration-cell", "my_sizes"), ("course-alias-patch", "import lecture2.answers"),
                           ("perf-counter-own-cell", "import time"), ("magic-dense-own-cell", "!true")):
        page = html.unescape((course / "feedback" / student / ASSIGNMENT / f"{S1}.html").read_text("utf-8"))
        assert f"「{named}" in page and "not run by the grader" in page, (student, named)


def test_a_stored_result_and_a_feedback_page_stay_small_whatever_the_file(graded):
    course = graded["course"]
    for student in ("printing-own-cells", "many-skipped-values", "magic-dense-own-cell"):
        for path in [*(course / "autograded" / student).rglob("*"), *(course / "feedback" / student).rglob("*")]:
            if path.is_file():
                assert path.stat().st_size < 2**20, (path, path.stat().st_size)


def test_a_mixed_class_reads_each_student_in_their_edition(graded):
    """Issue 41: the English edition's students are graded by the same checks (their scores: the first test) and
    read their feedback in English (the page's lang, its fixed words, the usual mistake's hint); the Chinese
    edition's in Chinese; the class's CSV files hold both, one row per student."""
    from lecture2 import checks
    from lecture2.hints_en import HINTS_EN

    course = graded["course"]
    en = (course / "feedback" / "en-planted-mistake" / ASSIGNMENT / f"{S1}.html").read_text("utf-8")
    zh = (course / "feedback" / "planted-mistake" / ASSIGNMENT / f"{S1}.html").read_text("utf-8")
    assert "<html lang='en'>" in en and "<html lang='zh'>" in zh
    assert html.escape(HINTS_EN["bits_for_bytes"], quote=False) in en and "提示 (hint)" not in en
    assert html.escape(checks.HINTS["bits_for_bytes"], quote=False) in zh
    assert "Feedback: " in en and "hint: " in en
    rows = {r["student"] for r in csv.DictReader((course / "grades.csv").open(encoding="utf-8"))}
    assert {"en-correct", "en-planted-mistake", "correct", "planted-mistake"} <= rows
