"""Both languages from one source (issue 41): every cell of a translated notebook holds its English, stamped
current; the two languages' formulas, code spans, links and numbers are equal; a code cell's English is its code
with only its Chinese strings and comments changed; no Chinese is left in an English; and the two releases
(notebooks/lec02, notebooks/lec02-en) have the same cells, code, check cells and grade_ids."""
from __future__ import annotations

import copy

import nbformat
import pytest

from conftest import ROOT, notebook_names
from lecture2 import editions
from tools import editions as tool

TRANSLATED = [p.name for p in tool.translated_paths()]


@pytest.mark.parametrize("name", TRANSLATED or ["(none translated yet)"])
def test_every_cell_of_a_translated_notebook_has_its_english_equal_in_all_but_words(name):
    if not TRANSLATED:
        pytest.skip("no notebook holds its English yet")
    problems = tool.problems(tool.SOLUTIONS / name)
    assert not problems, "\n".join(problems[:20])


@pytest.mark.parametrize("name", notebook_names())
def test_the_two_releases_have_the_same_code_checks_and_grade_ids(name):
    """Cell by cell: the same kinds, grade_ids, points and locks, and code that differs only in its Chinese strings
    and comments; the English release of a translated notebook holds no Chinese outside its glossary."""
    zh = nbformat.read(ROOT / "notebooks" / editions.EDITIONS["zh"].folder / name, as_version=4)
    en = nbformat.read(ROOT / "notebooks" / editions.EDITIONS["en"].folder / name, as_version=4)
    assert [c.cell_type for c in zh.cells] == [c.cell_type for c in en.cells], name
    english = en.metadata.get("lecture2", {}).get("language") == "en"
    for i, (a, b) in enumerate(zip(zh.cells, en.cells)):
        meta_a, meta_b = a.metadata.get("nbgrader", {}), b.metadata.get("nbgrader", {})
        assert {k: v for k, v in meta_a.items() if k != "checksum"} == \
            {k: v for k, v in meta_b.items() if k != "checksum"}, (name, i)
        if a.cell_type == "code":
            assert tool.code_difference(a.source, b.source) is None, (name, i, tool.code_difference(a.source, b.source))
        if english and tool.GLOSSARY not in b.metadata.get("tags", []):
            assert not tool.CJK.search(b.source), (name, i, tool.CJK.search(b.source).group())


def _cell(kind: str, source: str, english: str | None = None, stamp: bool = True):
    cell = nbformat.v4.new_markdown_cell(source) if kind == "markdown" else nbformat.v4.new_code_cell(source)
    if english is not None:
        tool.set_english(cell, english) if stamp else cell.metadata.setdefault("lecture2", {}).update(
            en={"source": [english], "of": "0", "sha": "0"})
    return cell


def _problems(tmp_path, cells) -> list[str]:
    nb = nbformat.v4.new_notebook(cells=cells)
    path = tmp_path / "nb.ipynb"
    nbformat.write(nb, path)
    return tool.problems(path)


def test_the_check_names_each_way_the_languages_can_part(tmp_path):
    said = "\n".join(_problems(tmp_path, [
        _cell("markdown", "没有英文"),
        _cell("markdown", "旧的", "stale", stamp=False),
        _cell("markdown", "每卡 $2\\Phi$ 字节，共 8 张 `x.numel()` [链接](https://a.org)",
              "per GPU $4\\Phi$ bytes, nine `x.nelement()` [link](https://b.org)"),
        _cell("code", 'print("你好", 3)  # 中文', 'print("hello", 4)  # English'),
        _cell("code", 'x = 1  # 中文', 'y = 1  # English'),
        _cell("markdown", "中文", "still 中文"),
    ]))
    for expected in ("no English", "changed since its English was stamped", "formulas differ", "numbers differ",
                     "code spans differ", "links differ", "a constant differs", "its code differs", "Chinese left"):
        assert expected in said, (expected, said)


def test_a_faithful_english_passes_and_the_release_puts_it_in_place(tmp_path):
    cells = [_cell("markdown", "## 练习 1\n每卡 $2\\Phi$ 字节 (`numel`)", "## Exercise 1\nPer GPU $2\\Phi$ bytes (`numel`)"),
             _cell("code", 'print(f"共 {n} 字节", 8)  # 字节', 'print(f"{n} bytes in all", 8)  # bytes'),
             _cell("code", "x = 1")]
    assert _problems(tmp_path, cells) == []
    nb = nbformat.v4.new_notebook(cells=copy.deepcopy(cells))
    en = editions.in_edition(nb, "en")
    assert en.cells[0].source.startswith("## Exercise 1") and "bytes in all" in en.cells[1].source
    assert all("lecture2" not in c.metadata for c in en.cells)
    assert en.metadata["lecture2"] == {"edition": "en", "language": "en"}
    zh = editions.in_edition(nbformat.v4.new_notebook(cells=copy.deepcopy(cells)), "zh")
    assert zh.cells[0].source.startswith("## 练习 1") and all("lecture2" not in c.metadata for c in zh.cells)
    untranslated = editions.in_edition(nbformat.v4.new_notebook(cells=[_cell("markdown", "中文")]), "en")
    assert untranslated.metadata["lecture2"]["language"] == "zh"
    assert untranslated.cells[0].source.startswith(editions.UNTRANSLATED_NOTE["en"])


def test_an_edition_is_read_from_a_file_as_data_only(tmp_path):
    path = tmp_path / "nb.ipynb"
    for metadata, expected in (({"lecture2": {"edition": "en"}}, "en"), ({"lecture2": {"edition": "fr"}}, None),
                               ({"lecture2": {"edition": ["en"]}}, None), ({"lecture2": "en"}, None), ({}, None)):
        nbformat.write(nbformat.v4.new_notebook(metadata=metadata), path)
        assert editions.of_file(path) == expected, metadata
    path.write_text("{not json", encoding="utf-8")
    assert editions.of_file(path) is None
