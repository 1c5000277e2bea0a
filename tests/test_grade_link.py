"""lecture2_grader.judging.link and .kernel: the judge's wire to a student's process, whatever that process does."""
from __future__ import annotations

import os
import time
from dataclasses import replace

import pytest
import torch  # noqa: F401  a judge's process holds torch (preload.py): tensors that come back decode only there

from judging import runtime
from lecture2 import answers
from lecture2_grader.judging.link import KernelLink

pytestmark = pytest.mark.slow

CELL = '''
import os, struct, time, torch
class MyError(ValueError):
    pass
def add(a, b):
    return a + b
def grow(xs):
    xs.append(99)
    return xs
def fails():
    raise MyError("no")
def stub():
    raise NotImplementedError("练习还没有完成")
def sleeps(seconds):
    time.sleep(seconds)
def spins():
    while True:
        try:
            time.sleep(0.2)
        except BaseException:
            pass
def exits():
    os._exit(3)
def noisy():
    print("to stdout"); os.write(1, b"raw fd 1\\n"); os.write(2, b"raw fd 2\\n")
    return 1
def frame(body):
    body = body if isinstance(body, bytes) else __import__("json").dumps(body).encode()
    return struct.pack(">II", 8 + len(body), len(body)) + body + struct.pack(">I", 0)
def in_flight():
    import sys
    f = sys._getframe(1)
    while f is not None and "msg" not in f.f_locals:
        f = f.f_back
    return f.f_locals["msg"]["id"]
def forges(fd, call_id):
    os.write(fd, frame({"id": call_id, "ok": 12345}))
    return 0
def pre_answers(fd):
    import threading
    def later():
        time.sleep(0.3)
        os.write(fd, frame({"id": "guessed", "ok": 54321}))
    threading.Thread(target=later, daemon=True).start()
    return 0
def answers_early(fd):
    os.write(fd, frame({"id": in_flight(), "ok": 777}))  # the call in flight, answered before the kernel does
    return 0
def flood(fd, n):
    items = ",".join(str(1 + i * (2**61 - 1)) for i in range(n))  # every one hashes to 1
    os.write(fd, frame(('{"id": "%s", "ok": {"$set": [%s]}}' % (in_flight(), items)).encode()))
    return 0
def overflowing_meta(fd):
    meta = {"$tensor": {"dtype": "float32", "shape": [2**39] * 16, "device": "meta", "param": False}}
    os.write(fd, frame({"id": in_flight(), "ok": meta}))
    return 0
def garbage(fd):
    os.write(fd, b"\\xff" * 64)
    return 0
def forge_run_reply(fd, kind):  # a reply to the run request in flight, written by the cell it runs
    if kind == "raised":
        body = {"id": in_flight(), "raised": {"types": ["GraderBug"], "builtin": "RuntimeError", "message": "SECRET-X"}}
    elif kind == "bare-nan":
        body = ('{"id": "%s", "cells": [{"index": 1, "status": "ok", "seconds": NaN}]}' % in_flight()).encode()
    else:
        body = ('{"id": "%s", "cells": %s}' % (in_flight(), "[" * 40 + "]" * 40)).encode()
    os.write(fd, frame(body))
    time.sleep(5)
def leak_class(data):
    raise type("L_" + data, (ValueError,), {})("leaked: " + data)
def leak_malformed(fd, data):
    os.write(fd, frame({"id": in_flight(), "ok": {"$obj": ["L_" + data, {}]}}))
    time.sleep(5)
def a_class_instance():
    return torch.nn.Linear(2, 2)
def tensor():
    return torch.arange(6.0).reshape(2, 3)
'''


@pytest.fixture
def link():
    link = KernelLink(replace(runtime(sandboxed=False, threads=1).kernel_spec(), cell_timeout=30))
    link.begin_test_cell(120)
    statuses = link.run_cells([{"index": 0, "at": 0.0, "kind": "answer", "grade_id": None, "source": CELL}])
    assert statuses[0]["status"] == "ok", statuses
    yield link
    link.close()


def remote(link, name):
    return answers.Remote(name, link)


def test_calls_cross_as_data_and_inputs_are_copies(link):
    assert remote(link, "add")(2, 3) == 5
    mine = [1, 2]
    assert remote(link, "grow")(mine) == [1, 2, 99] and mine == [1, 2]
    t = remote(link, "tensor")()
    assert t.shape == (2, 3) and t.sum().item() == 15
    assert type(remote(link, "a_class_instance")()).__name__ == "Unsupported"
    assert answers.observe(answers.without_instruments, remote(link, "add"), (), 2, 3) == {"returned": 5,
                                                                                             "used": False}


def test_exceptions_come_back_as_builtin_classes_under_the_answers_names(link):
    with pytest.raises(ValueError) as err:
        remote(link, "fails")()
    assert type(err.value).__name__ == "MyError" and str(err.value) == "no"
    with pytest.raises(NotImplementedError):
        remote(link, "stub")()
    with pytest.raises(NameError, match="does not define"):
        remote(link, "not_there")()
    with pytest.raises(AttributeError, match="only through lecture2.answers"):
        remote(link, "add").__globals__  # noqa: B018  a Remote has nothing else to reach


def test_what_the_answer_prints_never_reaches_the_wire(link):
    assert remote(link, "noisy")() == 1
    assert remote(link, "add")(1, 1) == 2


def test_a_slow_answer_times_out_and_one_that_ignores_its_alarm_is_replaced(link):
    link.begin_test_cell(2)
    with pytest.raises(answers.AnswerTimeout):
        remote(link, "sleeps")(30)  # the process's own alarm: it says so and lives on
    link.begin_test_cell(120)
    assert remote(link, "add")(1, 2) == 3 and link.events.starts == 1
    link.begin_test_cell(2)
    with pytest.raises(answers.AnswerTimeout):
        remote(link, "spins")()  # swallows its alarm: the judge gives up on it
    link.begin_test_cell(120)
    assert remote(link, "add")(1, 2) == 3  # the cells ran again in a new process
    assert link.events.starts == 2 and "did not return" in link.events.deaths[0]


def test_a_request_without_its_time_limit_is_refused(link):
    """Every request of the judge's says how long it may take (KernelSpec's limits): the student's process refuses one
    that does not, as it refuses bytes outside the wire's grammar (it exits, status 3)."""
    from lecture2 import wire

    os.write(link._req, wire.pack({"op": "call", "name": "add", "args": [1, 2], "kwargs": {"$d": []}, "id": "x"}))
    assert link._run.proc.wait(30) == 3


def test_a_process_that_dies_costs_its_call_only(link):
    with pytest.raises(answers.AnswerUnavailable, match="exit status 3"):
        remote(link, "exits")()
    assert remote(link, "add")(4, 4) == 8


def test_a_new_process_starts_on_the_graders_time_not_the_test_cells(link, monkeypatch):
    """After a death, the next call starts a new process and runs the cells again: on a busy machine that can take
    longer than the test cell has left. Is that time the grader's, so that the call still gets the cell's time?"""
    with pytest.raises(answers.AnswerUnavailable, match="exit status 3"):
        remote(link, "exits")()
    real = KernelLink._start

    def slow_start(self):
        real(self)
        time.sleep(2)  # a start and a replay under load
    monkeypatch.setattr(KernelLink, "_start", slow_start)
    link.begin_test_cell(1)
    assert remote(link, "add")(2, 2) == 4 and link.events.starts == 2


def reply_fd(link) -> int:
    return int(link._run.proc.args[link._run.proc.args.index("--reply-fd") + 1])


def test_forged_and_garbled_replies_are_refused(link):
    """A reply for a request not yet made (or bytes that are no message) ends that process: nothing it wrote
    becomes a value."""
    fd = reply_fd(link)
    with pytest.raises(answers.AnswerUnavailable, match="out of turn"):
        remote(link, "forges")(fd, "999")
    assert remote(link, "add")(1, 1) == 2
    with pytest.raises(answers.AnswerUnavailable):
        remote(link, "garbage")(reply_fd(link))
    assert remote(link, "add")(2, 2) == 4


def test_a_reply_written_before_its_call_is_never_taken(link):
    """Is a reply the process writes ahead of the next call (pairing by sequence number took it) a protocol
    error for that call, and are the calls and cells after it unaffected (a clean process, no stale reply)?"""
    assert remote(link, "pre_answers")(reply_fd(link)) == 0
    time.sleep(0.6)  # the forged reply is waiting before the next call is made
    with pytest.raises(answers.AnswerUnavailable, match="before its request"):
        remote(link, "add")(20, 30)
    assert remote(link, "add")(2, 3) == 5
    status = link.run_cells([{"index": 1, "at": 1.0, "kind": "answer", "grade_id": None,
                              "source": "def mul(a, b):\n    return a * b\n"}])[0]
    assert status["status"] == "ok" and remote(link, "mul")(6, 7) == 42
    # the call in flight answered early (its id read off the stack): the kernel's own reply is then stale, and the
    # next cell runs in a new process rather than reading it
    assert remote(link, "answers_early")(reply_fd(link)) == 777
    status = link.run_cells([{"index": 2, "at": 2.0, "kind": "answer", "grade_id": None,
                              "source": "def sub(a, b):\n    return a - b\n"}])[0]
    assert status["status"] == "ok" and remote(link, "sub")(9, 2) == 7 and remote(link, "mul")(2, 2) == 4


def _cell(source: str, index: int = 9) -> dict:
    return {"index": index, "at": float(index), "kind": "answer", "grade_id": None, "source": source}


@pytest.mark.parametrize("kind", ["raised", "bare-nan", "deep"])
def test_a_reply_to_a_run_request_is_its_cells_statuses_or_a_protocol_error_of_that_call(link, kind):
    """A run request answered with an exception (a cell that breaks the kernel's own code: the red team replaced
    time.perf_counter and the judge failed with the student's text as its own), or with statuses outside the
    decoder's grammar (a bare NaN, 40 levels deep): that cell is not run, its process replaced, never a grader
    failure and never the student's words."""
    status = link.run_cells([_cell(f"forge_run_reply({reply_fd(link)}, {kind!r})")])[0]
    assert status["status"] == "not run" and "protocol error" in status["message"], status
    assert "SECRET-X" not in str(status) and "GraderBug" not in str(status)
    assert remote(link, "add")(1, 1) == 2, "a new process runs the cells again and answers"


def test_a_cells_seconds_are_the_judges_own_measure(link):
    status = link.run_cells([_cell("import time\ntime.perf_counter = lambda: 5000.0\nx = 1")])[0]
    assert status["status"] == "ok" and status["seconds"] < 30, status
    assert remote(link, "add")(2, 2) == 4, "the kernel's own clock was not the one replaced"


def test_after_a_hidden_case_nothing_the_process_says_is_kept(link):
    """Once the process has received a hidden case (link.tainted), what a protocol error quoted of its reply and what a
    cell raised or printed are replaced by the judge's fixed note; a new process is clean. (An answer's exception
    still reaches the check, which may name the usual mistake by it: judge.Sink keeps nothing else of the group.)"""
    from lecture2_grader.judging.link import TAINTED_DETAIL

    link.tainted = True
    with pytest.raises(ValueError) as err:
        remote(link, "leak_class")("secret42")
    assert type(err.value).__name__ == "L_secret42", "the check sees the answer's exception"
    status = link.run_cells([_cell("raise type('L_secret42', (ValueError,), {})('secret42')")])[0]
    assert status["status"] == "error" and "secret42" not in str(status) and status["ename"] == ""
    with pytest.raises(answers.AnswerUnavailable) as err:
        remote(link, "leak_malformed")(reply_fd(link), "secret42")
    assert "secret42" not in str(err.value) and "secret42" not in link.events.deaths[-1]
    assert TAINTED_DETAIL in link.events.deaths[-1] and "protocol error" in link.events.deaths[-1]
    assert remote(link, "add")(1, 1) == 2 and not link.tainted
    with pytest.raises(answers.AnswerUnavailable, match="secret7"):  # a new process, clean: its checks see the detail
        remote(link, "leak_malformed")(reply_fd(link), "secret7")


def test_a_flooding_or_overflowing_reply_costs_its_call_within_the_time_left(link):
    """A set of chosen ints that all hash alike (quadratic in Python's hash table, in one C call) and a meta tensor
    whose size overflows: each a protocol error for its call, found in linear time; the next call is answered."""
    for name, args in (("flood", (reply_fd(link), 200_000)), ("overflowing_meta", (reply_fd(link),))):
        start = time.monotonic()
        with pytest.raises(answers.AnswerUnavailable, match="protocol error"):
            remote(link, name)(*args)
        assert time.monotonic() - start < 20
        assert remote(link, "add")(1, 1) == 2


def test_after_too_many_deaths_the_checks_left_are_not_run(link):
    for _ in range(2):
        with pytest.raises(answers.AnswerUnavailable):
            remote(link, "exits")()
    with pytest.raises(answers.AnswerUnavailable):
        remote(link, "exits")()
    with pytest.raises(answers.AnswerUnavailable, match="stopped"):
        remote(link, "add")(1, 1)


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from lecture2_grader.judging.link import _clean_statuses  # noqa: E402

anything = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
                        lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
                        max_leaves=20)
fields = st.fixed_dictionaries({}, optional={k: anything for k in ("index", "status", "seconds", "stdout", "ename",
                                                                    "message", "line")})


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.one_of(anything, st.lists(st.one_of(fields, anything), max_size=4)))
def test_whatever_a_process_reports_of_its_cells_comes_out_as_checked_fields(reply):
    """The student's process's report on the cells it ran, whatever it sends: one entry per cell asked for, each
    field of its type and bounded."""
    cells = [{"index": 3}, {"index": 7}]
    clean = _clean_statuses(reply, cells)
    assert [c["index"] for c in clean] == [3, 7]
    for c in clean:
        assert c["status"] in ("ok", "error", "timeout", "not run") and type(c["seconds"]) is float
        assert type(c["stdout"]) is str and len(c["stdout"]) <= 20_000
        if c["status"] != "ok":
            assert type(c["ename"]) is str and type(c["message"]) is str and (c["line"] is None or type(c["line"]) is int)
