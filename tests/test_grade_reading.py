"""Reading a student's file (pipeline.prepare: outputs skipped, sources parsed, scanned, planned, advice): is every
step linear in the file, bounded in memory, and stopped by a time limit that costs that file only?

The sizes below are ones the earlier reader took minutes on (a quadratic step: strip_outputs summing what it kept
after each skipped value, its token pattern rescanning from every quote of an unterminated string, IPython's
transformer tokenising a cell again for each magic line, the scan's list of findings); the bounds are tens of
times what a linear reader needs, so that they hold on a busy machine and a quadratic step fails them by far."""
from __future__ import annotations

import json
import time
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import RELEASE, SOLUTIONS
from judging import runtime
from lecture2_grader import course, pipeline, readers
from tools import hostile

NAME = "01_tensors_dtypes.ipynb"
NB = course.load(SOLUTIONS / NAME, RELEASE / NAME)
BOUND = 15.0  # seconds: each case below takes under a second here, and took minutes before


def prepared(tmp_path, data: bytes) -> tuple[pipeline.Job, float]:
    path = tmp_path / NAME
    path.write_bytes(data)
    start = time.perf_counter()
    job = pipeline.prepare("fuzz", path, NB, runtime())
    return job, time.perf_counter() - start


@pytest.mark.parametrize("kind, size, before", [
    ("skipped", 1_000_000, "about 2 minutes"),  # 62,500 values {"outputs": []}
    ("unterminated", 300_000, "about 4 minutes"),
    ("magics", 90_000, "minutes: 15,000 `!true` lines in an own cell"),
    ("answer-magics", 30_000, "125 s: 5,000 `!true` lines in an answer cell, read four times"),
    ("nested", 3_000_000, "(was linear)"),
    ("huge-string", 3_000_000, "(was linear)"),
    ("long-source", 3_000_000, "(was linear)"),
    ("many-cells", 3_000_000, "(was linear)"),
    ("edited-cell", 90_000, "(was linear)"),
])
def test_each_hostile_shape_is_read_in_linear_time(tmp_path, kind, size, before):
    job, seconds = prepared(tmp_path, hostile.shape(kind, size))
    assert seconds < BOUND, f"{kind} at {size:,} bytes: {seconds:.1f} s (before this reader: {before})"
    assert isinstance(job, pipeline.Job)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(hostile.KINDS), st.integers(1, 120_000)), min_size=1, max_size=4),
       st.booleans())
def test_any_mixture_of_hostile_shapes_is_read_within_the_bound(tmp_path, parts, truncated):
    """Shapes combined into one file (their hostile parts spliced together), cut short or not: a Job comes back,
    in time, whatever the mixture."""
    nb = hostile.base()
    text = json.dumps(nb)
    extra = []
    for kind, n in parts:
        piece = json.loads(hostile.shape(kind, n)) if kind not in ("unterminated", "nested") else None
        if piece is not None:
            nb["cells"] += [c for c in piece["cells"] if c not in nb["cells"]][:50]
            nb["metadata"].update(piece["metadata"])
        else:
            extra.append(kind)
    text = json.dumps(nb)
    if "nested" in extra:
        text = text.replace('"metadata": {', '"metadata": {"deep": ' + "[" * 50_000 + "]" * 50_000 + ", ", 1)
    if "unterminated" in extra or truncated:
        cut = text.index('"outputs": [') + len('"outputs": [')
        text = text[:cut] + '"' + '\\"' * 50_000
    job, seconds = prepared(tmp_path, text.encode())
    assert isinstance(job, pipeline.Job) and seconds < BOUND, (parts, seconds)


def test_outputs_are_skipped_without_being_copied(tmp_path):
    """A notebook whose outputs hold a 64 MB string: reading it allocates a few MB (the sources), never the string
    (the earlier token loop copied every string it crossed: 830 MB for a 400 MB one)."""
    path = tmp_path / NAME
    nb = hostile.base()
    head = json.dumps(nb).encode()
    cut = head.index(b'"outputs": [') + len(b'"outputs": [')
    path.write_bytes(head[:cut] + b'{"output_type": "stream", "name": "stdout", "text": "' + b"x" * 64 * 2**20 + b'"}'
                     + head[cut:])
    tracemalloc.start()
    try:
        job = pipeline.prepare("big", path, NB, runtime())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert job.judge is not None and peak < 16 * 2**20, f"{peak / 2**20:.0f} MiB allocated"


def test_a_file_past_its_reading_budget_costs_its_own_notebook_only(tmp_path):
    """A file whose reading takes longer than the runtime's read_timeout: its reader is killed and replaced, that
    notebook is not graded with a clear problem, and the next file is read as usual."""
    slow = tmp_path / "slow" / NAME
    slow.parent.mkdir()
    text = json.dumps(hostile.base())
    cut = text.index('"outputs": [') + len('"outputs": [')
    slow.write_text(text[:cut] + "[]," * 3_000_000 + text[cut:])  # 9 MB of brackets: seconds, past 0.2 s
    fine = tmp_path / "fine" / NAME
    fine.parent.mkdir()
    fine.write_text(json.dumps(hostile.base()))
    rt = runtime()
    rt.read_timeout = 0.2
    pool = readers.Readers(1, rt)
    try:
        pool.prepare("warm", fine, NB)  # the reader's start is not the file's time
        job = pool.prepare("slow", slow, NB)
        assert job.judge is None and "took over 0.2 s" in job.problems[0] and "not graded" in job.problems[0]
        rt.read_timeout = 60
        assert pool.prepare("next", fine, NB).judge is not None, "a new reader reads the next file"
    finally:
        pool.close()


def test_a_reader_killed_for_its_file_frees_its_slot_for_the_files_waiting(tmp_path):
    """One reader, two threads: the first file runs past its budget while the second waits for the reader; the
    second is read by the reader started in the first one's place."""
    from concurrent.futures import ThreadPoolExecutor

    slow = tmp_path / "slow" / NAME
    slow.parent.mkdir()
    text = json.dumps(hostile.base())
    cut = text.index('"outputs": [') + len('"outputs": [')
    slow.write_text(text[:cut] + "[]," * 3_000_000 + text[cut:])
    fine = tmp_path / "fine" / NAME
    fine.parent.mkdir()
    fine.write_text(text)
    rt = runtime()
    rt.read_timeout = 0.5
    pool = readers.Readers(1, rt)
    try:
        pool.prepare("warm", fine, NB)
        with ThreadPoolExecutor(2) as threads:
            first = threads.submit(pool.prepare, "slow", slow, NB)
            time.sleep(0.1)
            second = threads.submit(pool.prepare, "next", fine, NB)
            assert first.result(timeout=60).judge is None
            assert second.result(timeout=60).judge is not None  # a small file: read well within 0.5 s
    finally:
        pool.close()
