"""A cell's source as Python, for the grader's static readings (the plan's dataflow, the scan, the own-cell rule).

IPython runs a cell's magics; reading a cell means reading the Python they run. The magics that only time or
capture what a cell does (`%%time`, `%%timeit`, `%%capture` on the first line; `%time` and `%timeit` before a
statement) are read as the statement itself, so that a student who times an answer is neither flagged nor makes
the grader run more. Any other magic or shell line is read as IPython turns it into Python (a call of
`get_ipython()`), which the plan and the scan treat as reading names dynamically. Nothing here runs anything.
"""
from __future__ import annotations

import ast
import functools
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


# A line IPython may rewrite: an escape first (!cmd, %magic, ?obj, ,f a, ;f a, /f a), an assignment from one
# (x = !cmd, x = %magic), or help at its end (obj?). A cell without one is Python as it stands.
_SPECIAL = re.compile(r"^[ \t]*[!%?,;/]|\?[ \t]*$|=[ \t]*[!%]", re.M)


@functools.lru_cache(maxsize=512)
def as_python(source: str) -> str | None:
    """The Python a cell runs (timing magics unwrapped, other magics and `!` lines as IPython's calls), or None
    if it does not parse. Linear in the cell: IPython's own transformer tokenises the whole cell again after each
    magic it rewrites (500 `!` lines: a minute); here the cell is tokenised once and every special line rewritten
    in that pass (`_rewrite`). Cached: the plan, the scan and the advice read the same cells."""
    try:
        text = _rewrite(unwrap_timing(source))
        ast.parse(text)
        return text
    except Exception:  # SyntaxError, RecursionError, MemoryError, a transformer's own error
        return None


def _rewrite(cell: str) -> str:
    """`cell` as IPython's TransformerManager turns it into Python (its cleanup, cell magics, then every magic,
    system, help and auto-call line), with one tokenisation: each special line found in it is rewritten by IPython's
    own transformer of that kind, applied to that line (and its continuation lines) alone."""
    from IPython.core import inputtransformer2 as it

    if not cell.endswith("\n"):
        cell += "\n"
    lines = cell.splitlines(keepends=True)
    manager = it.TransformerManager()
    for transform in manager.cleanup_transforms + manager.line_transforms:
        lines = transform(lines)
    if not _SPECIAL.search("".join(lines)):
        return "".join(lines)
    sites = []
    for line in it.make_tokens_by_line(lines):
        found = [t for t in (kind.find([line]) for kind in manager.token_transformers) if t is not None]
        if found:
            sites.append(min(found, key=it.TokenTransformBase.sortby))
    out, done = [], 0  # lines[:done] are in out
    for site in sorted(sites, key=it.TokenTransformBase.sortby):
        first = site.start_line
        if first < done:
            continue  # inside the lines an earlier rewrite took
        last = site.q_line if isinstance(site, it.HelpEnd) else it.find_end_of_continued_line(lines, first)
        window = lines[first:last + 1]
        site.start_line = 0
        if isinstance(site, it.HelpEnd):
            site.q_line -= first
        try:
            rewritten = site.transform(window)
        except (SyntaxError, AssertionError, IndexError):
            continue
        out += lines[done:first]
        out += rewritten
        done = last + 1
    out += lines[done:]
    return "".join(out)
