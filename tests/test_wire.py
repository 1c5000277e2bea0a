"""lecture2.wire: what crosses between a check and a student's answer, and the decoder as a boundary."""
from __future__ import annotations

import json
import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lecture2 import wire
from lecture2.models import GPT2_SMALL, GPTConfig


@pytest.mark.parametrize("value", [
    None, True, 0, -3, 2**200, 1.5, -0.0, "text 中文", b"\x00\xff", 1 + 2j, [1, [2, [3]]], (1, (2,)), {"a": 1, 2: "b", (3, 4): [5]},
    {1, 2}, frozenset({"x"}), torch.float8_e4m3fn, torch.device("cpu"), torch.Size([2, 3]),
])
def test_plain_values_cross_unchanged(value):
    """Does every value of the grammar come back equal, and of exactly its type?"""
    back = wire.roundtrip(value)
    assert back == value and type(back) is type(value)


def test_a_record_crosses_as_its_fields_into_the_class_registered_now():
    """A transportable record comes back with the same fields, as the class its module registers now (a test
    cell that reloads lecture2.models makes a new GPTConfig class: records still cross by name)."""
    import dataclasses

    back = wire.roundtrip(GPT2_SMALL)
    assert type(back).__qualname__ == "GPTConfig" and dataclasses.asdict(back) == dataclasses.asdict(GPT2_SMALL)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_floats_cross(value):
    back = wire.roundtrip(value)
    assert type(back) is float and (math.isnan(back) if math.isnan(value) else back == value)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int8, torch.int64,
                                   torch.bool, torch.complex64, torch.float8_e5m2, torch.uint8])
def test_tensors_cross_as_bytes_exactly(dtype):
    t = (torch.randn(3, 4) * 10).to(dtype)
    back = wire.roundtrip(t)
    assert type(back) is torch.Tensor and back.dtype == dtype and back.shape == t.shape
    assert torch.equal(back.view(torch.uint8), t.view(torch.uint8))


def test_parameters_meta_tensors_and_views_keep_what_matters():
    p = torch.nn.Parameter(torch.ones(3))
    assert type(wire.roundtrip(p)) is torch.nn.Parameter
    meta = wire.roundtrip(torch.empty(2, 5, device="meta"))
    assert meta.device.type == "meta" and meta.shape == (2, 5)
    view = torch.arange(12.0).reshape(3, 4)[:, 1]
    assert torch.equal(wire.roundtrip(view), view)
    assert wire.roundtrip(torch.tensor(7)).item() == 7


def test_anything_else_becomes_a_marker_that_names_its_type():
    """Is a numpy scalar, a student's class or a function an Unsupported marker (never an object)?"""
    import numpy as np

    class Mine(float):
        pass

    for value, name in [(np.float64(2.0), "numpy.float64"), (Mine(1.0), "Mine"), (print, "builtin_function_or_method"),
                        (torch.nn.Linear(2, 2), "torch.nn.modules.linear.Linear")]:
        back = wire.roundtrip(value)
        assert type(back) is wire.Unsupported and name in back.type_name


def test_a_transportable_record_is_rebuilt_and_validated_again():
    data = wire.encode(GPTConfig(n_layer=2, n_head=2, d_model=8))
    data["$obj"][1]["d_model"] = 7  # not divisible by n_head: the class refuses it on the way in
    back = wire.decode(json.loads(json.dumps(data)))
    assert type(back) is wire.Unsupported and "refused" in back.text


@pytest.mark.parametrize("data, why", [
    ({"$tensor": {"dtype": "float32", "shape": [2, 2], "device": "cpu", "param": False, "blob": 0}}, "does not match"),
    ({"$tensor": {"dtype": "float32", "shape": [2, 2], "device": "cpu", "param": False, "blob": 1}}, "missing"),
    ({"$tensor": {"dtype": "__class__", "shape": [1], "device": "cpu", "param": False, "blob": 0}}, "dtype"),
    ({"$tensor": {"dtype": "float32", "shape": [2**39] * 16, "device": "meta", "param": False}}, "too large"),
    ({"$t": [{"$tensor": {"dtype": "uint8", "shape": [3], "device": "cpu", "param": False, "blob": 0}}] * 2}, "used twice"),
    ({"$set": [1 + i * (2**61 - 1) for i in range(9)]}, "share one hash"),
    ({"$d": [[(2**61 - 1) * i, i] for i in range(9)]}, "share one hash"),
    ({"$set": [7] * 9}, "share one hash"),
    ({"$obj": ["os:system", {}]}, "not a transportable"),
    ({"$set": [[1]]}, "unhashable"),
    ({"$d": [[[1], 2]]}, "unhashable"),
    ({"$nope": 1}, "unknown tag"),
    ({"a": 1, "b": 2}, "grammar"),
    (float("nan"), "non-finite"),
    ({"$f": "1e999"}, "float"),
    ({"$size": [-1]}, "size"),
    ({"$device": "cuda:" + "9" * 30}, "device"),
])
def test_the_decoder_refuses_what_is_not_in_the_grammar(data, why):
    with pytest.raises(wire.Malformed, match=why):
        wire.decode(data, [b"\0\0\0"])


def test_a_flood_of_keys_that_hash_alike_is_refused_in_linear_time():
    """A set or dict of 10**6 ints chosen to share one hash value would take Python's hash table hours inside one C
    call (neither a timeout nor SIGTERM stops it): the decoder refuses it after hashing each key once."""
    import time

    items = [1 + i * (2**61 - 1) for i in range(10**6)]
    for data in ({"$set": items}, {"$fset": items}, {"$d": [[k, 0] for k in items]}):
        start = time.perf_counter()
        with pytest.raises(wire.Malformed, match="share one hash"):
            wire.decode(data)
        assert time.perf_counter() - start < 10


def test_decoding_stops_at_its_deadline():
    import time

    with pytest.raises(wire.Malformed, match="time"):
        wire.decode(list(range(100_000)), deadline=time.monotonic() - 1)


def test_limits_hold_for_depth_size_and_digits():
    deep: object = 0
    for _ in range(wire.LIMITS.depth + 5):
        deep = [deep]
    with pytest.raises(wire.Malformed):
        wire.decode(deep)
    def body(text: bytes) -> bytes:
        return len(text).to_bytes(4, "big") + text + bytes(4)

    with pytest.raises(wire.Malformed):
        wire.unpack(body(b"[" * 100_000))  # the JSON parser's own recursion: refused, not a crash
    with pytest.raises(wire.Malformed):
        wire.unpack(body(("1" * 5000).encode()))  # more digits than Python converts: refused
    assert type(wire.roundtrip("x" * (wire.LIMITS.text + 1))) is wire.Unsupported


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.sampled_from(
        ["$t", "$d", "$f", "$b", "$c", "$set", "$fset", "$dtype", "$device", "$size", "$tensor", "$obj", "$unsupported",
         "dtype", "shape", "device", "param", "blob", "x"]), children, max_size=3),
    max_leaves=30)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values)
def test_any_json_decodes_or_is_refused_as_malformed(data):
    """Whatever JSON a student's process sends, the decoder returns a value or raises Malformed: nothing else."""
    try:
        wire.decode(data, [b"", b"\0" * 4, b"\1" * 8])
    except wire.Malformed:
        pass


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_unpack_or_are_refused_as_malformed(raw):
    try:
        wire.decode(*wire.unpack(raw))
    except wire.Malformed:
        pass


def test_a_frame_is_length_json_and_blobs():
    blobs: list = []
    frame = wire.pack({"id": "1", "ok": wire.encode((1, 2.5, torch.arange(4, dtype=torch.int16)), blobs)}, blobs)
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4 and blobs == [bytes([0, 0, 1, 0, 2, 0, 3, 0])]
    message, got = wire.unpack(frame[4:])
    one, half, t = wire.decode(message["ok"], got)
    assert (one, half, t.tolist()) == (1, 2.5, [0, 1, 2, 3])
    with pytest.raises(wire.Malformed):
        wire.unpack(frame[4:-1])  # a blob cut short
    with pytest.raises(ValueError, match="blob"):
        wire.encode(torch.ones(2))  # a tensor's data needs a place to go


def test_every_limit_has_one_home():
    assert wire.LIMITS.message >= wire.LIMITS.tensor + wire.LIMITS.json and wire.LIMITS.same_hash >= 2
