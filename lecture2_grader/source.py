"""A cell's source as Python, for the grader's static readings (the plan's dataflow, the scan, the own-cell rule).

IPython runs a cell's magics; reading a cell means reading the Python they run. The magics that only time or
capture what a cell does (`%%time`, `%%timeit`, `%%capture` on the first line; `%time` and `%timeit` before a
statement) are read as the statement itself, so that a student who times an answer is neither flagged nor makes
the grader run more. Any other magic or shell line is read as IPython turns it into Python (a call of
`get_ipython()`), which the plan and the scan treat as reading names dynamically. Nothing here runs anything.
"""
from __future__ import annotations

import ast
import re

TIMING = ("time", "timeit", "capture")  # magics that only time a cell or keep its output
_CELL_MAGIC = re.compile(r"[ \t]*%%(?P<name>\w+)\b[^\n]*")
_LINE_MAGIC = re.compile(r"^(?P<indent>[ \t]*)%(?P<name>time|timeit)\b[ \t]*(?P<options>(?:-[a-z]\s*\d*\s+)*)(?P<rest>.*)$")


def unwrap_timing(source: str) -> str:
    """`source` with its timing magics read as what they time (see the module's doc); lines keep their numbers."""
    lines = source.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None:
        match = _CELL_MAGIC.fullmatch(lines[first])
        if match and match.group("name") in TIMING:
            lines[first] = ""
    for i, line in enumerate(lines):
        match = _LINE_MAGIC.match(line)
        if match and match.group("rest").strip():
            lines[i] = match.group("indent") + match.group("rest")
    return "\n".join(lines)


def as_python(source: str) -> str | None:
    """The Python a cell runs (timing magics unwrapped, other magics and `!` lines as IPython's calls), or None
    if it does not parse."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        text = TransformerManager().transform_cell(unwrap_timing(source))
        ast.parse(text)
        return text
    except Exception:  # SyntaxError, RecursionError, MemoryError, a transformer's own error
        return None
