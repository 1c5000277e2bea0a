"""lecture2.checks: the messages a student reads when a check fails."""
import pytest

from lecture2 import checks


def test_close_passes_within_tolerance():
    """The default tolerance is rtol = 1e-9: 1e-12 off passes, 1e-8 off (10x the tolerance) fails."""
    checks.expect_close(1.0 + 1e-12, 1.0, what="x")
    checks.expect_close(float("inf"), float("inf"), what="x")
    with pytest.raises(checks.CheckFailed):
        checks.expect_close(1.0 + 1e-8, 1.0, what="x")
    with pytest.raises(checks.CheckFailed):
        checks.expect_close(float("inf"), 1e308, what="x")


def test_failure_says_expected_got_and_hint():
    """Does a known mistake's value draw its hint, in Chinese with the English term?"""
    with pytest.raises(checks.CheckFailed) as err:
        checks.expect_close(112.0, 14.0, what="memory", mistakes=[checks.mistake("bits_for_bytes", 112.0)])
    message = str(err.value)
    assert "期望 (expected) 14" in message and "得到 (got) 112" in message and "bits" in message


def test_unknown_mistake_reports_the_ratio():
    with pytest.raises(checks.CheckFailed, match="ratio"):
        checks.expect_close(3.0, 2.0, what="x")


def test_a_wrong_answer_no_mistake_explains_gets_the_exercises_idea():
    """Does an answer that matches no usual mistake get the exercise's idea as its hint (by key), while a usual
    mistake still draws its own?"""
    with pytest.raises(checks.CheckFailed) as err:
        checks.expect_close(3.0, 2.0, what="x", mistakes=[checks.mistake("numel", 7.0)], idea="multiply_add")
    assert err.value.hint_key == "multiply_add" and "ratio" in str(err.value)
    with pytest.raises(checks.CheckFailed) as err:
        checks.expect_equal(7, 12, what="x", mistakes=[checks.mistake("numel", 7)], idea="multiply_add")
    assert err.value.hint_key == "numel"
    with pytest.raises(checks.CheckFailed) as err:
        checks.expect_equal(5, 12, what="x", idea="multiply_add")
    assert err.value.hint_key == "multiply_add"


def test_wrong_types_are_named():
    with pytest.raises(checks.CheckFailed, match="str"):
        checks.expect_close("14", 14.0, what="x")
    with pytest.raises(checks.CheckFailed, match="bool"):
        checks.expect_type(True, int, what="x")
    with pytest.raises(checks.CheckFailed, match="NoneType"):
        checks.expect_equal(None, 3, what="x")


def test_equal_and_expect():
    checks.expect_equal(3, 3, what="x")
    with pytest.raises(checks.CheckFailed, match="numel"):
        checks.expect_equal(7, 12, what="x", mistakes=[checks.mistake("numel", 7)])
    with pytest.raises(checks.CheckFailed, match="nope"):
        checks.expect(False, "nope")


def test_exercise_in_the_lab_lets_a_stub_through(monkeypatch, capsys):
    """In the lab, does an unfilled exercise print a notice instead of stopping Run All?"""
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    with checks.exercise("demo"):
        raise NotImplementedError
    assert "not implemented yet" in capsys.readouterr().out
    with pytest.raises(checks.CheckFailed):
        with checks.exercise("demo"):
            checks.expect(False, "wrong")


def test_exercise_under_nbgrader_fails_a_stub(monkeypatch, capsys):
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    with pytest.raises(checks.CheckFailed, match="not implemented"):
        with checks.exercise("demo"):
            raise NotImplementedError
    with checks.exercise("demo"):
        pass
    assert "✅ demo" in capsys.readouterr().out


def test_groups_each_count_and_a_failure_does_not_stop_the_others(monkeypatch, capsys):
    """Does a failed group leave the next group running, and is each group's outcome reported?"""
    import types

    reports = []
    sink = types.SimpleNamespace(report=lambda name, groups: reports.append((name, groups)))
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    with pytest.raises(checks.CheckFailed, match="lecture"), checks.reporting_to(sink):
        with checks.exercise("demo", points={"lecture": 1, "drawn": 2}) as ex:
            with ex.group("lecture"):
                checks.expect_equal(7, 12, what="x", mistakes=[checks.mistake("numel", 7)])
            with ex.group("drawn"):
                checks.expect_equal(3, 3, what="y")
    name, groups = reports[-1]
    assert name == "demo" and groups["drawn"]["passed"] and not groups["lecture"]["passed"]
    assert groups["lecture"]["hint"] == checks.HINTS["numel"] and groups["lecture"]["what"] == "x"


def test_groups_in_the_lab_show_only_the_groups_that_ran(monkeypatch, capsys):
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    with checks.exercise("demo", points={"lecture": 1, "hidden": 2}) as ex:
        with ex.group("lecture"):
            checks.expect_equal(3, 3, what="y")
    out = capsys.readouterr().out
    assert "✅ demo" in out and "lecture" in out and "hidden" not in out


def test_two_mistakes_at_once_are_explained_by_the_named_terms():
    """No single hint matches the tied matrix counted twice and a norm's bias left out: the message says the
    difference is +V·d − d."""
    V, d, want = 50257, 768, 124_439_808
    with pytest.raises(checks.CheckFailed) as err:
        checks.expect_equal(want + V * d - d, want, what="gpt_params(GPT-2 small)",
                            mistakes=[checks.mistake("tied_twice", want + V * d)],
                            terms={"V·d": V * d, "T·d": 1024 * d, "d": d})
    assert "+1 × V·d -1 × d" in str(err.value) and "多算了 V·d、漏算了 d" in str(err.value)


def test_instruments_off_switches_whole_packages_and_restores_every_function():
    """In a fresh process (nothing of the calculator imported yet): are lecture2.planner and every module of
    lecture2.planning switched off, though importing planner calls lecture2.estimate, and is every function whole
    again afterwards?"""
    import subprocess
    import sys

    probe = (
        "from lecture2 import answers\n"
        "with answers.instruments_off():\n"
        "    from lecture2 import planner\n"
        "    from lecture2.planning import step\n"
        "    try:\n"
        "        planner.model('lecture-7b'); raise SystemExit('planner was not switched off')\n"
        "    except RuntimeError as err:\n"
        "        assert answers.OFF in str(err)\n"
        "off = [f'{m.__name__}.{n}' for name in answers.CALCULATOR for m in answers._modules_of(name)\n"
        "       for n, f in vars(m).items() if getattr(f, '__code__', None) is answers._instrument_off.__code__]\n"
        "assert not off, off\n"
        "print(planner.model('lecture-7b').counted_params() > 0)\n")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "True", proc.stderr[-2000:]
