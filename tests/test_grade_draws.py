"""Secret seeds: are a notebook's hidden cases drawn from a secret the student's process never holds, one of each
student's own (made from the course's secret, outside the sandbox), the same at a regrade?"""
from __future__ import annotations

import os
import stat

import pytest

from lecture2 import checks, wire
from lecture2_grader import draws, pipeline
from lecture2_grader.judging import judge
from lecture2_grader.course import load

import submissions as sub
from conftest import RELEASE, SOLUTIONS
from judging import Judging, runtime

NB1 = "01_tensors_dtypes.ipynb"


def test_the_course_secret_is_made_once_owner_only_and_never_replaced(tmp_path):
    secret = draws.course_secret(tmp_path)
    path = tmp_path / draws.SECRET_FILE
    assert len(secret) == 32 and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert draws.course_secret(tmp_path) == secret, "a second run draws the same cases"
    path.chmod(0o644)
    with pytest.raises(draws.SecretUnusable, match="only you can read"):
        draws.course_secret(tmp_path)
    path.unlink()
    (tmp_path / "elsewhere").write_text("00" * 32)
    path.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(draws.SecretUnusable):
        draws.course_secret(tmp_path)


def test_each_student_and_notebook_draws_from_its_own_secret():
    secret = os.urandom(32)
    a, b = draws.student_draw(secret, "ana", NB1), draws.student_draw(secret, "ben", NB1)
    assert a != b and a == draws.student_draw(secret, "ana", NB1)
    assert a != draws.student_draw(secret, "ana", "02_autograd.ipynb")
    assert a != draws.student_draw(os.urandom(32), "ana", NB1), "another course draws other cases"
    with checks.drawing_from(a):
        first = [checks.drawn("tensor_bytes: drawn shapes").random() for _ in range(3)]
        other_label = checks.drawn("float_format_limits: more formats").random()
    with checks.drawing_from(b):
        assert checks.drawn("tensor_bytes: drawn shapes").random() != first[0]
    with checks.drawing_from(a):
        assert checks.drawn("tensor_bytes: drawn shapes").random() == first[0] != other_label


def test_a_students_job_carries_their_draw_and_its_key_changes_with_it(tmp_path):
    nb = load(SOLUTIONS / NB1, RELEASE / NB1)
    path = tmp_path / NB1
    sub.write(sub.filled(NB1), path)
    secret = os.urandom(32)
    jobs = {s: pipeline.prepare(s, path, nb, runtime(), "code", draws.student_draw(secret, s, NB1)) for s in ("ana", "ben")}
    assert jobs["ana"].judge["draw"] == draws.student_draw(secret, "ana", NB1) != jobs["ben"].judge["draw"]
    assert jobs["ana"].digest != jobs["ben"].digest, "the same file of two students is two results"
    again = pipeline.prepare("ana", path, nb, runtime(), "code", draws.student_draw(secret, "ana", NB1))
    assert again.digest == jobs["ana"].digest


def test_the_judge_draws_from_the_jobs_secret(monkeypatch):
    """The test cells' `checks.drawn` sees the job's secret (never sent anywhere: the student's process is not even
    started by a test cell that calls no answer)."""
    seen = []
    real = checks.drawn
    monkeypatch.setattr(checks, "drawn", lambda label: seen.append((checks.draws._DRAW_SECRET, label)) or real(label))
    job = {"tests": [{"index": 1, "grade_id": "t", "source": "from lecture2 import checks\nchecks.drawn('x')\n"}],
           "cells": [], "answer_names": [], "draw": "ab" * 32, **runtime().judge_settings()}
    judged = judge.judge(job)
    assert judged.tests[0].status == "ok" and seen == [(bytes.fromhex("ab" * 32), "x")]


@pytest.mark.slow
def test_hidden_cases_differ_between_students_repeat_at_a_regrade_and_their_seed_never_crosses(monkeypatch):
    """Notebook 01's hidden shapes for tensor_bytes, as the student's process received them: two students' differ,
    one student's are the same each time, and no message to that process holds the secret."""
    sent = []
    real_pack = wire.pack
    monkeypatch.setattr(wire, "pack", lambda message, blobs=(): sent.append(repr(message)) or real_pack(message, blobs))
    recording = ("import math\nSEEN = []\ndef tensor_bytes(shape, dtype):\n    SEEN.append(list(shape))\n"
                 "    return math.prod(shape) * dtype.itemsize\n"
                 "def seen():\n    out = list(SEEN)\n    SEEN.clear()\n    return out\n")
    secrets = {"ana": "11" * 32, "ben": "22" * 32}
    with Judging(NB1) as j:
        j.run_until("ex01_tensor_bytes_check")
        j.answer("ex01_tensor_bytes", recording)
        shapes = {}
        for who in ("ana", "ben", "ana"):
            with checks.drawing_from(secrets[who]):
                result = j.test("ex01_tensor_bytes_check")
            assert result.points == result.max_points, result.groups
            got = j.link.request("call", "seen", None, (), {})
            shapes.setdefault(who, []).append(got)
    assert shapes["ana"][0] == shapes["ana"][1], "a regrade draws the same cases"
    assert shapes["ana"][0] != shapes["ben"][0], "each student draws their own cases"
    assert not any(s in m for m in sent for s in secrets.values())
