"""The course's editions: one source (solutions/, written in Chinese with each cell's English beside it), two
languages a student can take it in. docs/editions.md says how a cell holds both and how a translator extends it.

    EDITIONS     code -> Edition: its release folder (notebooks/lec02, notebooks/lec02-en), the HTML `lang` of
                 what it shows, JupyterLab's locale, its name in its own language
    SOURCE       the language the source is written in ("zh"): a notebook not yet translated is released in it in
                 every edition, and says so in its metadata
    translated(nb, edition)  whether a source notebook has `edition`'s language: every notebook that holds its
                 English (any cell's metadata.lecture2.en) is translated, and tests/test_editions.py holds such a
                 notebook to an English in every cell, stamped current; one that holds none is released in the
                 source's language in every edition, and says so (UNTRANSLATED_NOTE)
    in_edition(nb, edition)  a source notebook as `edition` reads it (the release, the grader, the pace rule)
    of(metadata) a notebook's edition, read from its metadata as data (None: it names none, or one we lack)
    kernel_edition()  the edition of the notebook a lab kernel runs (its messages follow it)

A notebook states its edition in `metadata.lecture2.edition`; the release writes it (nbgrader's preprocessor
lecture2_grader.nbgrader_hooks.ChooseEdition). Which edition a student reads never changes which checks run: the
grader reads it from the file, like a prediction, to choose the language of what it says.
"""
from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Edition:
    code: str  # "zh", "en": the key of the catalogues (lecture2.messages, lecture2_grader.messages)
    folder: str  # the release folder under notebooks/ (and the nbgrader assignment students fetch on a hub)
    lang: str  # the HTML lang attribute of a page in this edition
    locale: str  # JupyterLab's locale (its language pack: jupyterlab-language-pack-zh-CN for zh_CN)
    name: str  # the edition's name in its own language (the site's language switch)


EDITIONS: dict[str, Edition] = {
    "zh": Edition("zh", "lec02", "zh", "zh_CN", "中文"),
    "en": Edition("en", "lec02-en", "en", "en", "English"),
}
SOURCE = "zh"
KEY = "lecture2"  # a cell's and a notebook's metadata key of the course
# Said in the first cell of a notebook an edition has not translated yet (in that edition's language).
UNTRANSLATED_NOTE = {
    "en": "> **Not translated yet.** This notebook is in Chinese, as the lecture is: its code, its checks and their "
          "messages are the same as in the English notebooks, and it is graded the same way.\n\n",
}
ENV = "LECTURE2_EDITION"  # an edition for processes that run no notebook of their own (`make lab EDITION=en` sets it)


def _text(value: object) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def cell_text(cell, edition: str) -> str | None:
    """A source cell's text in `edition` (None: the cell holds none in that language)."""
    if edition == SOURCE:
        return _text(cell.get("source"))
    ours = cell.get("metadata", {}).get(KEY)
    held = ours.get(edition) if isinstance(ours, dict) else None
    return _text(held.get("source")) if isinstance(held, dict) else None


def translated(nb, edition: str) -> bool:
    """Whether source notebook `nb` (a dict or nbformat node) has `edition`'s language: any of its cells holds it."""
    return edition == SOURCE or any(cell_text(c, edition) is not None for c in nb.get("cells", []))


def in_edition(nb, edition: str):
    """Source notebook `nb` (changed in place and returned) as `edition` reads it: each cell's text in that
    language where the notebook is translated, no other language kept in any cell's metadata, and the notebook's
    metadata naming the edition it is released in (`metadata["lecture2"]["edition"]`; `["language"]`: the language its
    cells are in, the source's where the notebook is not translated yet, whose first cell then says so). A notebook
    whose metadata already names an edition (a release) is returned as it is."""
    if edition not in EDITIONS:
        raise ValueError(f"no edition {edition!r}: one of {sorted(EDITIONS)}")
    if of(nb.get("metadata")) is not None:  # a release: already in the edition it names
        return nb
    has = translated(nb, edition)
    for cell in nb["cells"]:
        text = cell_text(cell, edition) if has else None
        if text is not None and edition != SOURCE:
            cell["source"] = text
        ours = cell.get("metadata", {}).get(KEY)
        if isinstance(ours, dict):
            for code in EDITIONS:
                if code != SOURCE:
                    ours.pop(code, None)
            if not ours:
                del cell["metadata"][KEY]
    if not has and edition in UNTRANSLATED_NOTE:
        first = next((c for c in nb["cells"] if c.get("cell_type") == "markdown"), None)
        if first is not None:
            first["source"] = UNTRANSLATED_NOTE[edition] + _text(first["source"])
    nb.setdefault("metadata", {})[KEY] = {**(nb["metadata"].get(KEY) or {}), "edition": edition,
                                         "language": edition if has else SOURCE}
    return nb


def of(metadata: object) -> str | None:
    """The edition a notebook's metadata names (`{"lecture2": {"edition": "en"}}`), read as data: None for anything
    else (no such key, a value that is not one of EDITIONS' codes)."""
    ours = metadata.get("lecture2") if isinstance(metadata, dict) else None
    code = ours.get("edition") if isinstance(ours, dict) else None
    return code if isinstance(code, str) and code in EDITIONS else None


def of_folder(name: str) -> str | None:
    """The edition whose release folder (or hub assignment) is `name`: "lec02" -> "zh", "lec02-en" -> "en"."""
    return next((e.code for e in EDITIONS.values() if e.folder == name), None)


_NAMED = re.compile(rb'"edition"\s*:\s*"([a-z]{2})"')


def of_file(path: Path, limit: int = 64 * 2**20) -> str | None:
    """The edition the notebook file at `path` names (None: it names none, or cannot be read). Read as bytes, not
    parsed: the last `"edition": "<code>"` of the file (the notebook's metadata is written after its cells; inside
    a cell's text a quote is escaped), kept only when it is one of EDITIONS' codes. A student's file is chosen
    between the known editions by it and trusted with nothing else; the grader reads it so in its own process,
    before the sandboxed reading of the notebook."""
    try:
        if path.stat().st_size > limit:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    found = [m.group(1).decode() for m in _NAMED.finditer(data)]
    return found[-1] if found and found[-1] in EDITIONS else None


def kernel_edition() -> str:
    """The edition of the notebook this process runs for: in a Jupyter kernel the server names the notebook
    (JPY_SESSION_NAME, its path) and its metadata says the edition; else $LECTURE2_EDITION; else SOURCE."""
    session = os.environ.get("JPY_SESSION_NAME", "")
    found = _session_edition(session, str(Path.cwd())) if session.endswith(".ipynb") else None
    if found:
        return found
    env = os.environ.get(ENV, "")
    return env if env in EDITIONS else SOURCE


@functools.lru_cache(maxsize=8)
def _session_edition(session: str, cwd: str) -> str | None:
    """The edition of the kernel's notebook, read once per kernel (a notebook keeps its edition): the server's path
    of it, absolute or relative to its root (the kernel runs in the notebook's folder)."""
    for path in (Path(session), Path(cwd) / Path(session).name):
        found = of_file(path)
        if found:
            return found
    return None
