"""Stage 5b: the feedback a student reads, one small HTML page per notebook, made from trusted data only.

The page shows the notebook as the student received it (the release: prose, demo code, the visible part of
each test cell), their own answer cells, and under each test cell the grader's lines: the points of each check
group, and for a failed visible group what was checked, the expected value, what came back (as the check
formats it), their ratio and difference where the check computes them, and the hint. For a hidden group it
shows only that it failed and its hint (a fixed text of the course, by key): never a hidden test's source, input,
expected value or seed, never a traceback. Everything a student wrote or their code returned is HTML-escaped
(lecture2_grader.text); no student text becomes a link, a heading or markup. The release's own prose is the
course's and is rendered as Markdown, its formulas as MathML made at grading time (latex2mathml): the page
needs no script, no font and no network to show them. A page is the release's prose and code with the student's
answers (25-130 KB a notebook); nothing else is embedded.
"""
from __future__ import annotations

from pathlib import Path

import nbformat

from lecture2 import messages as lecture2_messages
from lecture2.editions import EDITIONS, SOURCE

from .course import Notebook
from .messages import say
from .records import CellStatus
from .score import NotebookResult, TestResult, exercise_names
from .text import html, multiline

STATUSES = ("passed", "partial", "failed", "not implemented", "timeout", "not run", "error")
STATUS_TEXT = {status: say(f"status.{status}", "zh") for status in STATUSES}  # the source edition's


def status_text(status: str, lang: str = SOURCE) -> str:
    return say(f"status.{status}", lang) if status in STATUSES else status

CSS = """body{font-family:system-ui,"Noto Sans CJK SC","WenQuanYi Zen Hei",sans-serif;max-width:980px;margin:2em auto;
padding:0 1em;line-height:1.5;color:#222}pre{background:#f6f8fa;padding:.6em .8em;overflow-x:auto;font-size:13px;
border-radius:4px}pre.answer{background:#fff8e1;border-left:4px solid #f0b400}pre.result{background:#eef6ee;
border-left:4px solid #3a3}pre.result.bad{background:#fdeeee;border-left-color:#c33}table{border-collapse:collapse}
td,th{border:1px solid #ddd;padding:3px 8px;text-align:left}.note{color:#555;font-size:90%}math[display=block]{overflow-x:auto;
overflow-y:hidden;margin:.6em 0}math{font-size:1.1em}"""


def _number(value: object) -> bool:
    return type(value) in (int, float) and value == value and abs(value) != float("inf")


def group_line(group: dict, lang: str = SOURCE) -> str:
    """One check group's line (plain text) in `lang`: its points, and for a failure what a student may see of it."""
    share = say("lines.share", lang, points=f"{group['points']:.3g}", max_points=f"{group['max_points']:.3g}")
    if group["passed"]:
        return f"  ✅ {group['group']}: {share}"
    status = group.get("status")
    line = f"  {'⏳' if status == 'not implemented' else '⏱' if status == 'timeout' else '❌'} {group['group']}: {share}"
    hint = group.get("hint") if group.get("hint_key") else None
    if hint and lang != SOURCE:
        try:
            hint = lecture2_messages.hint(str(group["hint_key"]), lang)
        except KeyError:
            pass  # a key the course no longer has: the text the judge reported
    if group.get("hidden"):
        line += " — " + say("lines.hidden", lang)
        if status in ("not implemented", "timeout", "not run"):
            line += f": {status_text(status, lang)}"
    elif group.get("what"):
        line += f" — {lecture2_messages.localize(str(group['what']), lang)}: " + say("lines.expected", lang,
                                                                                      want=group.get("want"))
        if group.get("got") is not None:
            line += say("lines.got", lang, got=group["got"])
        numbers = [say("lines.ratio", lang, ratio=f"{group['ratio']:.4g}") if _number(group.get("ratio")) else "",
                   say("lines.difference", lang, difference=f"{group['difference']:+.6g}")
                   if _number(group.get("difference")) else ""]
        if any(numbers):
            line += f" ({say('lines.join', lang).join(n for n in numbers if n)})"
    elif status in ("not implemented", "timeout", "not run"):
        line += f" — {status_text(status, lang)}"
    elif group.get("message"):
        line += f" — {lecture2_messages.localize(str(group['message']).splitlines()[0][:200], lang)}"
    if hint:
        line += "\n     " + say("lines.hint", lang, hint=hint)
    return line


def result_line(result: TestResult, exercise: str, lang: str = SOURCE) -> str:
    """The grader's lines under a test cell (plain text), in `lang`."""
    points = say("lines.points", lang, points=f"{result.points:g}", max_points=f"{result.max_points:g}")
    if result.visible_max is not None and result.visible_max < result.max_points:  # make validate: visible groups
        points = say("lines.visible_points", lang, points=f"{result.points:g}", visible=f"{result.visible_max:g}",
                     max_points=f"{result.max_points:g}")
    mark = {"passed": "✅", "partial": "◐", "timeout": "⏱", "not implemented": "⏳", "not run": "⏹"}.get(result.status, "❌")
    head = f"{mark} {exercise}: {points}"
    if result.status in ("not implemented", "not run"):
        head += f" — {status_text(result.status, lang)}"
    return "\n".join([head, *(group_line(g, lang) for g in result.groups if result.status != "not run")])


_MARKDOWN = None
_MATH: dict[tuple[str, str], str] = {}  # (TeX, display) -> MathML: a run renders each formula of the release once


def math(tex: str, display: str = "inline") -> str:
    """A formula of the course's prose as MathML, which browsers draw themselves: no script, no font download,
    no network. Without latex2mathml, or for a formula it cannot read, the TeX itself in a <code>."""
    key = (tex, display)
    if key not in _MATH:
        try:
            from latex2mathml.converter import convert

            mathml = convert(tex.strip(), display=display)
            for escaped in ("_", "%", "$", "#", "{", "}"):  # TeX escapes latex2mathml leaves inside \\text{...}
                mathml = mathml.replace("\\" + escaped, escaped)
            _MATH[key] = mathml
        except Exception:  # noqa: BLE001  ImportError or a construct it lacks: show the source, never raw $$
            _MATH[key] = f"<code class='tex'>{html(tex, 4000)}</code>"
    return _MATH[key]


def _markdown(text: str) -> str:
    """The course's own prose (trusted) as HTML, its $...$ and $$...$$ as MathML (math)."""
    global _MARKDOWN
    if _MARKDOWN is None:
        import mistune

        class Prose(mistune.HTMLRenderer):
            def heading(self, text: str, level: int, **attrs) -> str:  # the page's one <h1> is its title
                return f"<h{min(level + 1, 6)}>{text}</h{min(level + 1, 6)}>\n"

        _MARKDOWN = mistune.create_markdown(escape=False, renderer=Prose(escape=False),
                                            plugins=["math", "table", "strikethrough"])
        _MARKDOWN.renderer.register("block_math", lambda renderer, tex: math(tex, "block"))
        _MARKDOWN.renderer.register("inline_math", lambda renderer, tex: math(tex))
    return _MARKDOWN(text)


def page(nb: Notebook, release_path: Path, result: NotebookResult, answers: dict[str, str],
         cells: list[CellStatus]) -> str:
    """The feedback page: the release with the student's answers and the grader's lines (HTML), in the language of
    the notebook's edition (nb.edition: its fixed words, its hints, its lang attribute)."""
    lang = nb.edition
    release = nbformat.read(release_path, as_version=4)
    by_gid = {t.grade_id: t for t in result.tests}
    errors = {}
    index_of = {c.grade_id: c.index for c in nb.cells if c.grade_id}
    for status in cells:
        if status.status != "ok":
            errors[status.index] = status
    body = [f"<h1>{html(say('page.title', lang, stem=nb.stem))}</h1>",
            f"<p>{say('page.score', lang)}: <b>{result.score:g} / {nb.max_score:g}</b></p>",
            f"<table><tr><th>{say('page.test_cell', lang)}</th><th>{say('page.points', lang)}</th>"
            f"<th>{say('page.status', lang)}</th></tr>"]
    for t in result.tests:
        body.append(f"<tr><td><code>{html(t.grade_id)}</code></td><td>{t.points:g} / {t.max_points:g}</td>"
                    f"<td>{html(status_text(t.status, lang))}</td></tr>")
    body.append("</table>")
    if result.problems:
        body.append(f"<p>{say('page.problems', lang)}</p><ul>")
        body += [f"<li>{html(p)}</li>" for p in result.problems]
        body.append("</ul>")
    if result.notices:
        body.append(f"<p>{say('page.notices', lang)}</p><ul>")
        body += [f"<li>{html(n, 2000)}</li>" for n in result.notices]
        body.append("</ul>")
    for cell in release.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.cell_type == "markdown":
            body.append(f"<div class='md'>{_markdown(cell.source)}</div>")
        elif cell.cell_type != "code":
            continue
        elif gid in answers or (gid in index_of and nb.cell(gid).kind == "answer"):
            source = answers.get(gid, cell.source)
            body.append(f"<pre class='answer'>{html(source, 200_000)}</pre>")
            error = errors.get(index_of.get(gid))
            if error:
                where = say("page.line", lang, line=error.line) if isinstance(error.line, int) else ""
                body.append(f"<p class='note'>{html(say('page.cell_raised', lang, ename=error.ename, where=where))}</p>")
        elif gid in by_gid:
            body.append(f"<pre>{html(cell.source, 100_000)}</pre>")
            test = by_gid[gid]
            exercise = ", ".join(exercise_names(nb.cell(gid).source)) or gid
            bad = "" if test.status == "passed" else " bad"
            body.append(f"<pre class='result{bad}'>{html(result_line(test, exercise, lang), 20_000)}</pre>")
        else:
            body.append(f"<pre>{html(cell.source, 100_000)}</pre>")
    return (f"<!doctype html><html lang='{EDITIONS[lang].lang}'><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width'>"
            f"<title>{html(nb.stem)} — feedback</title><style>{CSS}</style><body>" + "\n".join(body) + "</body></html>")


def text_report(nb: Notebook, result: NotebookResult) -> str:
    """The same lines as plain text (for `make validate`), in the notebook's edition's language, control characters
    escaped."""
    lines = []
    for test in result.tests:
        exercise = ", ".join(exercise_names(nb.cell(test.grade_id).source)) or test.grade_id
        lines.append(multiline(result_line(test, exercise, nb.edition)))
    return "\n".join(lines)
