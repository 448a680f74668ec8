"""The vectorised integer untagging equals `_untag` value by value (flow ids of a chunk)."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from hpuprof.trace.columns import _untag, _untag_ints

_INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
_VALUE = st.one_of(st.just(b""), _INT64.map(lambda v: b"i" + str(v).encode()))


@settings(max_examples=60, deadline=None)
@given(st.lists(_VALUE, min_size=64, max_size=400), st.integers(min_value=0, max_value=3))
def test_untag_ints_equals_untag(values: list[bytes], skip: int) -> None:
    array = pa.array(values, pa.large_binary()).slice(skip)
    got = _untag_ints(array)
    want = [_untag(v) for v in array.to_pylist()]
    if len(array) < 64 or all(v is None for v in want):  # left to the value-by-value path
        assert got is None
    else:
        assert got == want
        assert [type(v) for v in got] == [type(v) for v in want]


def test_untag_ints_declines_other_tags() -> None:
    array = pa.array([b"i1"] * 70 + [b"sx", b"n"], pa.large_binary())
    assert _untag_ints(array) is None
