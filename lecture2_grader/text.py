"""Student-controlled text, made safe where it is shown: a terminal, an HTML page, a spreadsheet.

Anything a student wrote or their code returned (a grade id, a file name, a value in a check's message) passes
through one of these before it reaches the instructor or another student:

    terminal(s)  control characters (ANSI escapes, \\r, \\b, newlines, bidi overrides) shown as \\x.. escapes
    html(s)      every character that means something in HTML escaped (quotes too)
    csv_cell(s)  a leading = + - @ (a spreadsheet formula) neutralised with a quote; controls escaped
"""
from __future__ import annotations

import html as _html
import re

# C0 and C1 controls, DEL, and the Unicode format characters that reorder or hide text
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")


def _escape_control(match: re.Match) -> str:
    ch = match.group(0)
    return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"


def clean(text: object, limit: int = 2000) -> str:
    """`text` as a str of at most `limit` characters with no lone surrogates."""
    s = text if isinstance(text, str) else str(text)
    s = s.encode("utf-8", "replace").decode("utf-8")
    return s if len(s) <= limit else s[:limit] + "…"


def terminal(text: object, limit: int = 2000) -> str:
    """One line for a terminal: control characters escaped, so that nothing moves the cursor or recolours."""
    return _CONTROL.sub(_escape_control, clean(text, limit))


def multiline(text: object, limit: int = 4000) -> str:
    """Several lines for a terminal or a text file: newlines kept, every other control character escaped."""
    return "\n".join(terminal(line, limit) for line in clean(text, limit).split("\n"))


def html(text: object, limit: int = 4000) -> str:
    """Text for an HTML page: escaped (no tag, entity or attribute can be opened), controls escaped."""
    return _html.escape(multiline(text, limit), quote=True)


def csv_cell(text: object, limit: int = 2000) -> str:
    """A cell of a CSV file a spreadsheet opens: a formula prefix neutralised with a leading apostrophe."""
    s = terminal(text, limit)
    return "'" + s if s[:1] in ("=", "+", "-", "@", "\t", "\r") else s
