"""`make book`: the course as a static website, both editions, read offline (docs/book.md).

    python -m tools.book [--out build/book]

Every notebook of solutions/lec02 is written as one HTML page per edition (zh/, en/ under the output folder), as
the release shows it (lecture2.editions.in_edition: an untranslated notebook in Chinese with a note; nbgrader's own
ClearSolutions and ClearHiddenTests with the release's stubs), with the outputs stored in solutions/ (figures as
they are), except those of the exercise and check cells: they are the reference solution's. Each page links to
the same notebook in the other edition and to its edition's index.

The tool is nbconvert's HTMLExporter (its `basic` template: the cells, no script) with the prose rendered before it
as HTML whose formulas are MathML (lecture2_grader.feedback.math, latex2mathml, already a course dependency).
Browsers draw MathML themselves: the pages load no script, no font and nothing from outside the site. Jupyter Book 2
(mystmd) was not taken: its HTML build downloads its site template from the web at build time, which CI
(package registries only) cannot reach.
"""
from __future__ import annotations

import argparse
import html
import shutil
import sys
import time
from pathlib import Path

import mistune
import nbformat
from nbconvert import HTMLExporter
from nbgrader.preprocessors import ClearHiddenTests, ClearSolutions
from pygments.formatters import HtmlFormatter

from lecture2 import editions
from lecture2_grader.feedback import math
from lecture2_grader.messages import say

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions" / "lec02"
OUT = ROOT / "build" / "book"
EDITIONS = ("zh", "en")  # the site's editions, the source's first
# The fixed words of the site, per edition: the switch names the other language in its own words.
WORDS = {
    "zh": {"title": "第 2 讲：PyTorch 与算力核算", "index": "目录", "switch": "English", "lang": "zh-Hans"},
    "en": {"title": "Lecture 2: PyTorch and compute accounting", "index": "Contents", "switch": "中文", "lang": "en"},
}
STYLE = """
body { font-family: "Noto Sans", "WenQuanYi Zen Hei", sans-serif; max-width: 60rem; margin: 0 auto; padding: 1rem 2rem;
       line-height: 1.6; color: #222; }
nav.book { display: flex; justify-content: space-between; border-bottom: 1px solid #ccc; padding-bottom: .5rem; }
pre, code { font-family: "DejaVu Sans Mono", monospace; font-size: 0.9em; }
.input_area pre { background: #f5f5f5; padding: .5rem; overflow-x: auto; border-left: 3px solid #9ab; margin: .75rem 0 0; }
.output_area pre { padding: .25rem .5rem; white-space: pre-wrap; overflow-wrap: anywhere; margin: .25rem 0; }
div.prompt { display: none; }
img { max-width: 100%; }
math[display="block"] { margin: .5rem 0; }
table { border-collapse: collapse; } td, th { border: 1px solid #ccc; padding: .2rem .5rem; }
"""


def _prose_renderer():
    """Markdown to HTML with $...$ and $$...$$ as MathML (the course's prose only: trusted, not escaped)."""
    md = mistune.create_markdown(escape=False, plugins=["math", "table", "strikethrough"])
    md.renderer.register("block_math", lambda renderer, tex: math(tex, "block") + "\n")
    md.renderer.register("inline_math", lambda renderer, tex: math(tex))
    return md


def site_notebook(path: Path, edition: str) -> nbformat.NotebookNode:
    """Source notebook `path` as the site shows it in `edition`: the release's text (solutions stubbed, hidden tests
    removed, by nbgrader's own preprocessors), the stored outputs of every cell but the exercise and check cells."""
    nb = editions.in_edition(nbformat.read(path, as_version=4), edition)
    resources: dict = {}
    nb, resources = ClearSolutions(code_stub={"python": say("release.code_stub", edition)},
                                   text_stub=say("release.text_stub", edition)).preprocess(nb, resources)
    nb, resources = ClearHiddenTests().preprocess(nb, resources)
    for cell in nb.cells:
        graded = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and (graded.get("solution") or graded.get("grade")):
            cell.outputs, cell.execution_count = [], None  # the reference solution's outputs
    return nb


def page(nb: nbformat.NotebookNode, name: str, edition: str, title: str, translated: bool) -> str:
    """One notebook's page (HTML) in `edition`, its prose pre-rendered, the switch to the other edition on top."""
    prose, rendered = _prose_renderer(), {}
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":  # rendered here; the exporter's HTML cleaner (nh3) would drop MathML, so
            mark = f"lecture2-book-prose-{index}-here"  # the exporter gets a mark in a raw cell and the HTML takes its place
            rendered[mark] = f"<div class='prose'>\n{prose(cell.source)}</div>"
            cell.cell_type, cell.metadata["raw_mimetype"], cell.source = "raw", "text/html", mark
            cell.pop("attachments", None)
    body, _ = HTMLExporter(template_name="basic").from_notebook_node(nb)
    for mark, text in rendered.items():
        if mark not in body:
            raise RuntimeError(f"{name}: the exporter lost a prose cell ({mark})")
        body = body.replace(mark, text, 1)
    return _frame(body, name, edition, title, translated)


def _frame(body: str, name: str, edition: str, title: str, translated: bool = True) -> str:
    words = WORDS[edition]
    other = next(e for e in EDITIONS if e != edition)
    lang = WORDS[edition]["lang"] if translated else WORDS[editions.SOURCE]["lang"]
    pygments_css = HtmlFormatter().get_style_defs(".highlight")
    return (f"<!DOCTYPE html>\n<html lang='{lang}'>\n<head>\n<meta charset='utf-8'>\n"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'>\n"
            f"<title>{html.escape(title)} · {html.escape(words['title'])}</title>\n"
            f"<style>{STYLE}\n{pygments_css}</style>\n</head>\n<body>\n"
            f"<nav class='book'><a class='book-index' href='index.html'>{html.escape(words['index'])}</a>"
            f"<a class='book-switch' hreflang='{WORDS[other]['lang']}' href='../{other}/{name}'>"
            f"{html.escape(words['switch'])}</a></nav>\n<main>\n{body}\n</main>\n</body>\n</html>\n")


def _title(nb: nbformat.NotebookNode, fallback: str) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return fallback


def build(out: Path = OUT, folder: Path = SOLUTIONS) -> list[Path]:
    """Write the site under `out` (emptied first): out/index.html, out/<edition>/index.html and one page per
    notebook and edition. Returns the pages written."""
    sources = sorted(folder.glob("*.ipynb"))
    if not sources:
        raise SystemExit(f"no notebooks in {folder}")
    if out.exists():
        shutil.rmtree(out)
    written = []
    for edition in EDITIONS:
        (out / edition).mkdir(parents=True)
        entries = []
        for path in sources:
            nb = site_notebook(path, edition)
            translated = editions.translated(nbformat.read(path, as_version=4), edition)
            title = _title(nb, path.stem)
            name = path.stem + ".html"
            target = out / edition / name
            target.write_text(page(nb, name, edition, title, translated), encoding="utf-8")
            written.append(target)
            note = "" if translated else " <small>(中文 · not translated yet)</small>"
            entries.append(f"<li><a href='{name}'>{html.escape(title)}</a>{note}</li>")
        body = f"<h1>{html.escape(WORDS[edition]['title'])}</h1>\n<ol>\n" + "\n".join(entries) + "\n</ol>"
        index = out / edition / "index.html"
        index.write_text(_frame(body, "index.html", edition, WORDS[edition]["index"]), encoding="utf-8")
        written.append(index)
    links = " · ".join(f"<a href='{e}/index.html'>{html.escape(WORDS[e]['title'])}</a>" for e in EDITIONS)
    (out / "index.html").write_text(
        f"<!DOCTYPE html>\n<html lang='zh-Hans'><head><meta charset='utf-8'><title>{html.escape(WORDS['zh']['title'])}"
        f"</title><meta http-equiv='refresh' content='0; url=zh/index.html'></head>\n<body><p>{links}</p></body></html>\n",
        encoding="utf-8")
    written.append(out / "index.html")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the course's static website (both editions) offline.")
    parser.add_argument("--out", type=Path, default=OUT, help="the site's folder (default: build/book)")
    args = parser.parse_args(argv)
    start = time.monotonic()
    pages = build(args.out)
    print(f"{len(pages)} pages in {args.out} ({time.monotonic() - start:.1f} s); open {args.out / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
