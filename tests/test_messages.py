"""Messages from one catalogue in both languages (issue 41): every key of lecture2.messages and
lecture2_grader.messages in every edition's language with the same {fields}; every usual mistake's hint
(lecture2.checks.HINTS, with every hint an exercise module registers) in English, and no English for a hint that is
gone; a failed check's fixed words in the English edition."""
from __future__ import annotations

import importlib
import pkgutil
import re
import string

import pytest

from lecture2 import checks, editions, exercises, messages
from lecture2.hints_en import HINTS_EN
from lecture2_grader import messages as grader_messages

for _module in pkgutil.iter_modules(exercises.__path__):  # each registers its hints as it is imported
    importlib.import_module(f"lecture2.exercises.{_module.name}")


def _fields(text: str) -> list[str]:
    return sorted({name for _, name, _, _ in string.Formatter().parse(text) if name is not None})


@pytest.mark.parametrize("table", [messages.MESSAGES, grader_messages.MESSAGES], ids=["lecture2", "lecture2_grader"])
def test_every_message_in_every_language_with_the_same_fields(table):
    for key, texts in table.items():
        assert set(texts) == set(editions.EDITIONS), (key, sorted(texts))
        assert all(t.strip() for t in texts.values()), key
        fields = {lang: _fields(t) for lang, t in texts.items()}
        assert len({tuple(f) for f in fields.values()}) == 1, (key, fields)
        assert not [t for lang, t in texts.items() if lang != "zh" and re.search(
            r"[\u3400-\u9fff\uff00-\uffef\u3000-\u303f]", t)], (key, "Chinese in another language's text")


def test_every_hint_has_its_english_and_no_english_is_left_over():
    assert sorted(set(checks.HINTS) - set(HINTS_EN)) == [], "hints without English: add them to lecture2.hints_en"
    assert sorted(set(HINTS_EN) - set(checks.HINTS)) == [], "English for hints that are gone: remove them"
    for key, text in HINTS_EN.items():
        assert _fields(text) == _fields(checks.HINTS[key]), key
        assert messages.hint(key, "en") == text and messages.hint(key, "zh") == checks.HINTS[key]


def test_a_failed_check_reads_in_english_in_the_english_edition():
    key = next(iter(HINTS_EN))
    zh = f"weight_memory(...): 期望 (expected) 8，得到 (got) 64。\n提示 (hint): {checks.HINTS[key]}"
    en = messages.localize(zh, "en", key)
    assert en == f"weight_memory(...): expected 8, got 64.\nhint: {HINTS_EN[key]}"
    assert messages.localize(zh, "zh", key) == zh


def test_the_class_report_gives_the_hints_in_the_courses_language(tmp_path):
    """The instructors' language is a setting (c.Lecture2Grader.language, nbgrader_config.py): mistakes.csv and the
    class report give each usual mistake's hint, and what a group without one shows, in it."""
    from lecture2_grader import classreport, intake

    groups = [{"group": "g", "passed": False, "status": "failed", "hint_key": "bits_for_bytes",
               "hint": checks.HINTS["bits_for_bytes"]}, {"group": "h", "passed": False, "status": "timeout"}]
    results = {"ana": {"01": {"state": "graded", "tests": [{"grade_id": "t", "status": "failed", "groups": groups}]}}}
    rows, tally = classreport.mistakes(results, "en")
    assert {r["hint"] for r in rows} == {HINTS_EN["bits_for_bytes"], grader_messages.say("report.timeout", "en")}
    assert "<span lang='en'>" in "".join(classreport._mistakes(rows, tally, "en"))
    rows, _ = classreport.mistakes(results)
    assert {r["hint"] for r in rows} == {checks.HINTS["bits_for_bytes"], grader_messages.say("report.timeout", "zh")}
    assert intake.course_language(tmp_path) == "zh"
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\nc.Lecture2Grader.language = 'en'\n")
    assert intake.course_language(tmp_path) == "en"
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\nc.Lecture2Grader.language = 'fr'\n")
    assert intake.course_language(tmp_path) == "zh"


def test_the_lab_shows_a_failed_check_in_the_notebooks_language(monkeypatch):
    """In a kernel of an English-edition notebook, a failed check's message reads in English (lecture2.lab: IPython's
    own hook for an exception type); the check decided the same; in the Chinese edition nothing is installed."""
    from lecture2 import lab, predict

    class Shell:
        handler = None

        def set_custom_exc(self, types, handler):
            self.handler = handler

        def showtraceback(self, exc_tuple, tb_offset=None):
            self.shown = exc_tuple[1]

    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.setenv(editions.ENV, "zh")
    assert lab.install(Shell()) is None
    monkeypatch.setenv(editions.ENV, "en")
    shell = Shell()
    assert lab.install(shell) == "en"
    failed = checks.CheckFailed("tensor_bytes((2, 3), torch.float32): 期望 (expected) 24，得到 (got) 192",
                                hint_key="bits_for_bytes", what="tensor_bytes", want=24, got="192")
    shell.handler(shell, checks.CheckFailed, failed, None)
    assert str(shell.shown) == "tensor_bytes((2, 3), torch.float32): expected 24, got 192"
    assert shell.shown.hint_key == "bits_for_bytes" and shell.shown.want == 24
    assert predict.line(None, 3.0, "x", "en").startswith("x: measured 3")


@pytest.mark.parametrize("edition, expected", [("en", "--params must be a number, got 'seven'"),
                                               ("zh", "--params 应是一个数 (must be a number), got 'seven'")])
def test_the_command_lines_refusals_follow_the_edition(monkeypatch, capsys, edition, expected):
    """`python -m lecture2 estimate` beside an English lab (LECTURE2_EDITION=en, `make lab EDITION=en`) refuses in
    English; beside the Chinese one in Chinese with the English."""
    from lecture2 import cli

    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.setenv(editions.ENV, edition)
    with pytest.raises(SystemExit) as err:
        cli.main(["estimate", "--params", "seven", "--tokens", "2e12"])
    said = capsys.readouterr().err
    assert err.value.code == 2 and expected in said, said
    assert ("for example:" in said) == (edition == "en")


def test_a_check_cell_says_passed_in_the_notebooks_language(monkeypatch, capsys):
    """What a check cell prints in the lab (passed, not implemented yet) is in the kernel's edition's language."""
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    for edition, passed in (("en", "✅ demo: all checks passed"), ("zh", "✅ demo: 检查通过 (all checks passed)")):
        monkeypatch.setenv(editions.ENV, edition)
        with checks.exercise("demo"):
            pass
        assert capsys.readouterr().out.strip() == passed
