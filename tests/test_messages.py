"""Messages from one catalogue in both languages (issue 41): every key of lecture2.messages and
lecture2_grader.messages in every edition's language with the same {fields}; every usual mistake's hint
(lecture2.checks.HINTS, with every hint an exercise module registers) in English, and no English for a hint that is
gone; a failed check's fixed words in the English edition; every Chinese fragment of lecture2's code (the checks', the
instruments' messages) in a catalogue (lecture2.checks_en, lecture2.errors_en), and every planted mistake's message,
and an error of lecture2's in the lab, in English."""
from __future__ import annotations

import ast
import importlib
import pkgutil
import re
import string
from pathlib import Path
from contextlib import contextmanager

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


# ---- the fragment catalogues: lecture2.checks_en (checks/*.py, exercises/*.py) and lecture2.errors_en (the rest)

MODULES = messages.catalogued_modules()
ROOT = messages.PACKAGE.parent
HINT_TEXTS = messages._hint_texts()


def _module_id(path) -> str:
    return path.relative_to(ROOT).as_posix()


@pytest.mark.parametrize("path", [p for paths in MODULES.values() for p in paths], ids=_module_id)
def test_every_chinese_fragment_of_a_module_is_in_a_catalogue(path):
    """Every string constant of the module that holds Chinese (an f-string's constant parts), not a docstring nor a
    registered hint, has its English in lecture2.checks_en or lecture2.errors_en (checks/ and the exercises in the
    first, every other module in the second)."""
    keys = set(messages.catalogue("checks_en")) | set(messages.catalogue("errors_en"))
    missing = [f for f in messages.chinese_fragments(path, HINT_TEXTS) if f not in keys]
    side = next(name for name, paths in MODULES.items() if path in paths)
    assert not missing, (f"{_module_id(path)}: {len(missing)} fragments without English: add them to "
                         f"lecture2/{side}.py's FRAGMENTS_EN:\n" + "\n".join(repr(f) for f in missing))


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_catalogue_holds_a_stale_fragment_or_chinese_in_its_english(name):
    """Every key of a catalogue is a fragment of one of its modules (a message that changed leaves no key behind),
    once in the dict literal; every English is non-empty and holds no Chinese."""
    table = messages.catalogue(name)
    found = {f for path in MODULES[name] for f in messages.chinese_fragments(path, HINT_TEXTS)}
    stale = sorted(set(table) - found)
    assert not stale, f"lecture2/{name}.py: keys no module of it holds any more:\n" + "\n".join(map(repr, stale))
    chinese = {zh: en for zh, en in table.items() if not isinstance(en, str) or not en or messages.CHINESE.search(en)}
    assert not chinese, f"lecture2/{name}.py: English that is empty or holds Chinese: {chinese}"
    source = messages.PACKAGE / f"{name}.py"
    if source.exists():
        literal = next(n for n in ast.walk(ast.parse(source.read_text(encoding="utf-8"))) if isinstance(n, ast.Dict))
        written = [k.value for k in literal.keys if isinstance(k, ast.Constant)]
        assert len(written) == len(set(written)), sorted({k for k in written if written.count(k) > 1})


def test_a_fragment_both_catalogues_hold_has_one_english():
    """localize merges the catalogues (lecture2.checks_en's English where both hold a key): a shared fragment (the
    punctuation, ", got ") must read the same in both, or the instruments' messages would not get theirs."""
    checks_side, errors_side = messages.catalogue("checks_en"), messages.catalogue("errors_en")
    differ = {zh: (checks_side[zh], errors_side[zh]) for zh in set(checks_side) & set(errors_side)
              if checks_side[zh] != errors_side[zh]}
    assert not differ, f"fragments with two Englishes (checks_en, errors_en): {differ}"


def test_fragments_make_an_english_sentence():
    """The fragments, longest first, with the fields between them; a space where the Chinese went on after its full
    stop; the punctuation of WORDS_EN where a catalogue has no fragment."""
    zh = ("x: 期望 (expected) 12，得到 (got) 9。(比值 ratio got/expected = 0.75，差 difference got − expected = -3，"
          "= +1 × d -2 × V·d：是不是多算了 d、漏算了 2 次 V·d？)")
    assert messages.localize(zh, "en") == (
        "x: expected 12, got 9. (ratio got/expected = 0.75, difference got − expected = -3, = +1 × d -2 × V·d: "
        "did you over-count by d and under-count by 2 times V·d?)")
    assert messages.localize(zh, "zh") == zh


class _Enough(BaseException):
    """A test cell's exercise stops at its first failed group: the messages are what this test reads."""


@contextmanager
def _first_failure_only(monkeypatch):
    group = checks.Exercise.group

    @contextmanager
    def first_failure(self, label):
        if any(not outcome["passed"] for outcome in self.outcomes.values()):
            raise _Enough
        with group(self, label):
            yield

    monkeypatch.setattr(checks.Exercise, "group", first_failure)
    yield


def _planted_notebooks() -> list[str]:
    from conftest import notebook_names

    return notebook_names()


@pytest.mark.parametrize("name", _planted_notebooks())
def test_every_planted_mistakes_message_reads_in_english(name, monkeypatch, capsys):
    """Each usual mistake of tests/planted, answered in this process as in the lab (the reference answers of the
    notebook's other cells beside it, the instructor's test cell, every group up to the first that fails), fails
    with a message that holds no Chinese once localized (its hint, the checks' and the instruments' fragments)."""
    import nbformat
    from conftest import SOLUTIONS
    from planted import all_planted
    from submissions import reference_answers

    cells = nbformat.read(SOLUTIONS / name, as_version=4).cells
    order = [c.metadata.get("nbgrader", {}).get("grade_id") for c in cells]
    tests = {c.metadata["nbgrader"]["grade_id"]: c.source for c in cells
             if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"}
    reference = reference_answers(name)

    class Sink:
        def __init__(self):
            self.failed = []

        def report(self, exercise, groups):
            self.failed += [(g["message"], g.get("hint_key")) for g in (groups or {}).values() if g["status"] == "failed"]

    said, chinese = 0, []
    with _first_failure_only(monkeypatch):
        for p in all_planted().get(name, []):
            test_id = next(g for g in order[order.index(p.grade_id) + 1:] if g in tests)
            space = {}
            exec("import math, random, torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n", space)
            for grade_id, source in reference.items():
                if grade_id != p.grade_id:
                    try:
                        exec(source, space)
                    except Exception:  # noqa: BLE001  an answer this mistake's check does not need
                        pass
            exec(p.source, space)
            sink = Sink()
            with checks.reporting_to(sink):
                try:
                    exec(tests[test_id], space)
                except checks.CheckFailed as err:
                    sink.failed.append((str(err), err.hint_key))
                except _Enough:
                    pass
            for message, key in sink.failed:
                said += 1
                english = messages.localize(message, "en", key)
                if messages.CHINESE.search(english):
                    chinese.append(f"{p.name!r} ({p.grade_id}): {english}")
    capsys.readouterr()
    assert said, f"{name}: no planted mistake failed a check in this process"
    assert not chinese, f"{name}: Chinese left in the English of a failed check:\n" + "\n".join(chinese)


def _raised(fn, *args):
    try:
        fn(*args)
    except Exception as err:  # noqa: BLE001  the error under test
        return err
    raise AssertionError(f"{fn} raised nothing")


def test_the_lab_shows_an_error_of_lecture2_in_english(monkeypatch):
    """In an English-edition kernel an error raised in lecture2's code (here estimate's ValueError for an MFU above 1)
    is shown as the same type with its message localized (the fragments of the catalogues); an error of the student's
    own code, or one that cannot be made again from its message, is shown as it is."""
    from lecture2 import estimate, lab

    class Shell:
        handler = types = None

        def set_custom_exc(self, types, handler):
            self.types, self.handler = types, handler

        def showtraceback(self, exc_tuple, tb_offset=None):
            self.shown = exc_tuple[1]

    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.setenv(editions.ENV, "en")
    shell = Shell()
    assert lab.install(shell) == "en" and ValueError in shell.types and AssertionError in shell.types

    err = _raised(estimate.training_seconds, 1e21, 8, 1e15, 1.5)
    assert isinstance(err, ValueError) and messages.CHINESE.search(str(err)), err
    zh = str(err).split("1.5")[0]  # the message's one fragment before its field
    real = messages.catalogue
    monkeypatch.setattr(messages, "catalogue", lambda name: {**real(name), **(
        {zh: "MFU is a fraction of peak and must be in (0, 1], got "} if name == "errors_en" else {})})
    messages._fragments_en.cache_clear()
    try:
        shell.handler(shell, type(err), err, err.__traceback__)
    finally:
        monkeypatch.setattr(messages, "catalogue", real)
        messages._fragments_en.cache_clear()
    assert type(shell.shown) is ValueError and str(shell.shown) == "MFU is a fraction of peak and must be in (0, 1], got 1.5"

    mine = _raised(lambda: (_ for _ in ()).throw(ValueError("我的错误 (my own error)")))
    shell.handler(shell, ValueError, mine, mine.__traceback__)
    assert shell.shown is mine  # raised in the student's code: as it is

    class TwoArguments(ValueError):
        def __init__(self, message, extra):
            super().__init__(message)

    two = TwoArguments("MFU 是峰值的比例 (a fraction of peak), 应在 (0, 1] 内，得到 2", 0)
    assert lab._localized(two, "en", err.__traceback__) is two  # cannot be made again from one message


# ---- the grader's own reasons (lecture2_grader.messages.FRAGMENTS_EN): why an own cell is not run, in English too

def test_the_graders_reasons_have_their_english():
    """Does every Chinese fragment of the modules that build the grader's reasons (owncells.py, plan.py) have its
    English, no English hold Chinese, no key outlive its code; and do the reasons own_cell gives read in English?"""
    import lecture2_grader
    from lecture2_grader import owncells

    folder = Path(lecture2_grader.__file__).parent
    held = {zh for name in grader_messages.FRAGMENT_MODULES
            for zh in messages.chinese_fragments(folder / name, hints=set())}
    assert sorted(held - set(grader_messages.FRAGMENTS_EN)) == [], "add their English to FRAGMENTS_EN"
    assert sorted(set(grader_messages.FRAGMENTS_EN) - held) == [], "English for fragments that are gone"
    assert not [en for en in grader_messages.FRAGMENTS_EN.values() if messages.CHINESE.search(en)]
    cells = ["print(1)", "o = lecture2.measure", "import lecture2\nm = lecture2", "@decorate\ndef g(): pass",
             "from . import z", "import no_such_module_here", "class A(metaclass=M): pass", "class B:\n    print(2)",
             "def (", "for i in range(3): pass", "class C:\n    def __init_subclass__(cls): pass", "lst += [1]"]
    for source in cells:
        verdict = owncells.own_cell(source, {"lst": "course"})
        assert not verdict.runs, source
        english = grader_messages.localize(verdict.doing, "en")
        assert english and not messages.CHINESE.search(english), (source, verdict.doing, english)
        assert not (english.startswith("(") and english.endswith(")")), english
        assert grader_messages.localize(verdict.doing, "zh") == verdict.doing
