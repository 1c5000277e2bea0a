"""The course's editions: one source (solutions/, written in Chinese with each cell's English beside it), two
languages a student can take it in. docs/editions.md says how a cell holds both and how a translator extends it.

    EDITIONS     code -> Edition: its release folder (notebooks/lec02, notebooks/lec02-en), the HTML `lang` of
                 what it shows, JupyterLab's locale, its name in its own language
    SOURCE       the language the source is written in ("zh"): a notebook not yet translated is released in it in
                 every edition, and says so in its metadata
    TRANSLATED   the notebooks each other edition has in its own language (extend the tuple as notebooks are
                 translated: the release, the site and the tests read it here)
    of(metadata) a notebook's edition, read from its metadata as data (None: it names none, or one we lack)
    kernel_edition()  the edition of the notebook a lab kernel runs (its messages follow it)

A notebook states its edition in `metadata.lecture2.edition`; the release writes it (nbgrader's preprocessor
lecture2_grader.nbgrader_hooks.ChooseEdition). Which edition a student reads never changes which checks run: the
grader reads it from the file, like a prediction, to choose the language of what it says.
"""
from __future__ import annotations

import json
import os
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
TRANSLATED: dict[str, tuple[str, ...]] = {
    "en": ("01_tensors_dtypes", "02_autograd", "03_modules", "10_sharding", "11_parallel_plans"),
}
ENV = "LECTURE2_EDITION"  # an edition for processes that run no notebook of their own (`make lab EDITION=en` sets it)


def translated(edition: str, stem: str) -> bool:
    """Whether notebook `stem` (e.g. "01_tensors_dtypes") is in `edition`'s own language."""
    return edition == SOURCE or stem in TRANSLATED.get(edition, ())


def edition_of_notebook(edition: str, stem: str) -> str:
    """The language a release of `edition` has notebook `stem` in: its own, or the source's (not translated yet)."""
    return edition if translated(edition, stem) else SOURCE


def of(metadata: object) -> str | None:
    """The edition a notebook's metadata names (`{"lecture2": {"edition": "en"}}`), read as data: None for anything
    else (no such key, a value that is not one of EDITIONS' codes)."""
    ours = metadata.get("lecture2") if isinstance(metadata, dict) else None
    code = ours.get("edition") if isinstance(ours, dict) else None
    return code if isinstance(code, str) and code in EDITIONS else None


def of_folder(name: str) -> str | None:
    """The edition whose release folder (or hub assignment) is `name`: "lec02" -> "zh", "lec02-en" -> "en"."""
    return next((e.code for e in EDITIONS.values() if e.folder == name), None)


def of_file(path: Path, limit: int = 32 * 2**20) -> str | None:
    """The edition the notebook file at `path` names (None: it names none, or cannot be read as a notebook)."""
    try:
        if path.stat().st_size > limit:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return of(data.get("metadata")) if isinstance(data, dict) else None


def kernel_edition() -> str:
    """The edition of the notebook this process runs for: in a Jupyter kernel the server names the notebook
    (JPY_SESSION_NAME, its path) and its metadata says the edition; else $LECTURE2_EDITION; else SOURCE."""
    session = os.environ.get("JPY_SESSION_NAME", "")
    if session.endswith(".ipynb"):
        found = of_file(Path(session))
        if found:
            return found
    env = os.environ.get(ENV, "")
    return env if env in EDITIONS else SOURCE
