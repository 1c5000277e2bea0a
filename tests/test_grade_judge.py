"""lecture2_grader.judging.judge: does the judge quote only its own words and the values it computed, and is it bounded?"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
import torch

from judging import runtime
from lecture2 import checks
from lecture2_grader.judging import judge
from lecture2_grader.judging.link import WITHHELD
from lecture2_grader import runtime as limits
from lecture2_grader.runtime import GRADER, KernelSpec


class _Tainted:
    tainted = True


def test_a_group_that_ends_after_a_hidden_case_keeps_its_verdict_and_hint_only():
    """A visible group of a later test cell, failed by a process that had received a hidden case: what it would show
    (the message, what came back, its ratio) is formatted from what that process sent, so only its verdict, its hint
    and a fixed note are kept. A group before any hidden case keeps its details."""
    sink = judge.Sink()
    outcome = {"passed": False, "status": "failed", "hint": checks.HINTS["bits_for_bytes"], "hint_key": "bits_for_bytes",
               "message": "tensor_bytes: expected 48, got 9994242 (the hidden shapes, encoded)", "what": "tensor_bytes",
               "want": "48", "got": "9994242", "ratio": 208213.4, "difference": 9994194.0}
    sink.report("before", {"real tensors": dict(outcome)})
    sink.link = _Tainted()
    sink.group_done("after", "real tensors")
    sink.report("after", {"real tensors": dict(outcome)})
    assert sink.reports["before"]["real tensors"]["got"] == "9994242"
    kept = sink.reports["after"]["real tensors"]
    assert kept == {"passed": False, "status": "failed", "hint": checks.HINTS["bits_for_bytes"],
                    "hint_key": "bits_for_bytes", "message": WITHHELD}


def test_a_grader_failure_is_said_in_the_graders_words_only():
    """An exception that leaves the judge may have been built from what the student's process sent (the red team's
    `GraderBug` with 2,000 characters of theirs): the failure names no class of theirs and quotes no message."""
    theirs = type("GraderBug", (Exception,), {"__module__": "answer"})
    try:
        raise theirs("every hidden shape: " + "(83, 12, 7) " * 100)
    except theirs as err:
        failure = judge.grader_failure(err)
    assert failure["error"].startswith("the grader's judge failed (an exception at test_grade_judge.py:")
    assert "GraderBug" not in json.dumps(failure) and "hidden shape" not in json.dumps(failure)
    try:
        {}["key"]
    except KeyError as err:
        assert "KeyError at test_grade_judge.py" in judge.grader_failure(err)["error"]


def _judge_process(job: dict, timeout: float = 120) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(GRADER.parent), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-m", "lecture2_grader.judging.judge"], input=json.dumps(job).encode(),
                          capture_output=True, timeout=timeout, env=env)
    return json.loads(done.stdout)


def test_the_judge_has_a_memory_limit_of_its_own():
    """A check that allocates past the judge's memory limit fails with MemoryError in the judge (its test cell's
    error), instead of taking the grading machine's memory."""
    job = {"tests": [{"index": 1, "grade_id": "t", "source": "x = bytearray(3 * 2**30)\n"}], "cells": [],
           "answer_names": [], **runtime().judge_settings(), "judge_memory": 512 * 2**20, "threads": None}
    results = _judge_process(job)
    assert results["tests"][0]["status"] == "error" and results["tests"][0]["error"]["ename"] == "MemoryError"


def test_a_value_in_a_message_is_summarised_not_expanded():
    """torch's repr prints every element of a tensor whose dimensions are all small (2**20 int8 elements: 10 s and
    860 MB); a check's message shows shape, dtype and a few elements, in no time, whatever came back."""
    odd = torch.zeros((4,) * 11, dtype=torch.int8)  # 4 MiB, as it may cross the wire (16 dimensions at most)
    start = time.perf_counter()
    try:
        checks.expect_equal(odd, 48, what="tensor_bytes((3, 4), torch.float32)")
    except checks.CheckFailed as err:
        message = str(err)
    assert time.perf_counter() - start < 1.0
    assert "shape=(4, 4, 4" in message and "torch.int8" in message and len(message) < 600
    assert checks.shown(list(range(10**6))) == "[0, 1, 2, 3, 4, 5, …]"
    assert checks.shown({"max": torch.ones(3)}).startswith("{'max': tensor(shape=(3,), dtype=torch.float32")


def test_the_stored_results_key_holds_the_runs_limits_and_every_file_of_lecture2(tmp_path):
    """A result stored under one run's limits (a "time limit" failure at --cell-timeout 5) is not reused under
    others; a change of any file of lecture2 a judge reads (profiles/*.json too, not only its modules) is a new key."""
    import shutil

    import submissions as sub
    from conftest import RELEASE, ROOT, SOLUTIONS
    from lecture2_grader import course, pipeline

    name = "01_tensors_dtypes.ipynb"
    nb = course.load(SOLUTIONS / name, RELEASE / name)
    sub.write(sub.filled(name), tmp_path / name)
    short, longer = runtime(), runtime()
    short.cell_timeout, longer.cell_timeout = 5, 120
    keys = {pipeline.prepare("ana", tmp_path / name, nb, rt, "code").digest for rt in (short, longer)}
    assert len(keys) == 2
    longer.limits.memory = 2 * short.limits.memory if short.limits.memory else 2**33
    assert pipeline.prepare("ana", tmp_path / name, nb, longer, "code").digest not in keys
    package = tmp_path / "lecture2"
    shutil.copytree(ROOT / "lecture2", package, ignore=shutil.ignore_patterns("__pycache__"))
    before = pipeline.code_digest(package)
    profile = next(package.glob("profiles/*.json"))
    profile.write_text(profile.read_text() + "\n")
    assert pipeline.code_digest(package) != before


def test_a_check_cells_own_error_names_no_class_of_the_students_after_a_hidden_case():
    """An answer's exception that escapes a test cell's groups (its class made by the student: `"L_" + data`) is
    recorded under its built-in base, with a fixed note, once the process had received a hidden case."""
    theirs = type("L_83_12_7", (ValueError,), {"__module__": "answer"})
    try:
        raise theirs("HIDDEN<[(83, 12, 7)]")
    except theirs as err:
        before, after = judge._error(err, "<cell>", None, False), judge._error(err, "<cell>", None, True)
    assert before["ename"] == "L_83_12_7" and "HIDDEN" in before["message"]
    assert after["ename"] == "ValueError" and after["message"] == WITHHELD


def test_the_judges_job_carries_every_limit_of_the_students_process():
    """Runtime makes the KernelSpec with each of runtime.py's limits; it crosses as JSON and is read back whole, and a
    spec without one of its limits (a job of another grader's code) is refused, never filled in with a default."""
    rt = runtime()
    rt.cell_timeout = 17.0
    spec = rt.kernel_spec()
    assert (spec.cell_timeout, spec.start_timeout, spec.replay_timeout, spec.max_starts, spec.max_total_starts) == (
        17.0, limits.START_SECONDS, limits.REPLAY_SECONDS, limits.STARTS_PER_TEST_CELL, limits.STARTS_PER_NOTEBOOK)
    assert spec.limits.threads == rt.threads and str(limits.KERNEL) in spec.binds
    assert KernelSpec.from_json(json.loads(json.dumps(rt.judge_settings()["kernel"]))) == spec
    for key in ("cell_timeout", "start_timeout", "replay_timeout", "max_starts", "max_total_starts", "limits"):
        data = spec.to_json()
        del data[key]
        with pytest.raises(ValueError):
            KernelSpec.from_json(data)
    data = spec.to_json()
    del data["limits"]["memory"]
    with pytest.raises(ValueError):
        KernelSpec.from_json(data)
    with pytest.raises(ValueError):
        KernelSpec.from_json({**spec.to_json(), "cell_timeout": float("nan")})
