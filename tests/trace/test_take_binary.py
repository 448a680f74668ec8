"""`take_binary` (the args permutation into an exactly sized buffer) equals Arrow's take,
through the compiled gather across pieces and through the joined pure-Python path."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hpuprof.trace.columns as columns
from hpuprof.trace import fastscan
from hpuprof.trace.columns import take_binary

VALUES = [b"ab", b"", b'{"x": 1}', b"", b"z" * 300, b"\x00\xff"]

PATHS = ["joined"] + (["gather"] if fastscan.gather_function() is not None else [])


def _use(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if path == "joined":
        monkeypatch.setattr(fastscan, "gather_function", lambda: None)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("begin", [0, 1, 3])
@pytest.mark.parametrize("rows", [[], [0], [2, 0, 1], [1, 1, 1], [3, 1]])
def test_take_binary_equals_arrow_take(
    monkeypatch: pytest.MonkeyPatch, path: str, begin: int, rows: list[int]
) -> None:
    _use(path, monkeypatch)
    monkeypatch.setattr(columns, "_TAKE_ROWS", 2)  # several pieces per call
    array = pa.array(VALUES, type=pa.large_binary()).slice(begin)
    index = np.array([r for r in rows if r < len(array)], dtype=np.int64)
    expected = array.take(pa.array(index, type=pa.int64()))
    assert take_binary(array, index).to_pylist() == expected.to_pylist()


@pytest.mark.parametrize("path", PATHS)
@given(
    pieces=st.lists(st.lists(st.binary(max_size=12), max_size=6), max_size=5),
    data=st.data(),
)
def test_take_binary_across_pieces(
    path: str, pieces: list[list[bytes]], data: st.DataObject
) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        _use(path, monkeypatch)
        chunked = pa.chunked_array(
            [pa.array(p, type=pa.large_binary()) for p in pieces], type=pa.large_binary()
        )
        flat = [v for p in pieces for v in p]
        rows = data.draw(st.lists(st.integers(0, len(flat) - 1), max_size=20)) if flat else []
        taken = take_binary(chunked, np.array(rows, dtype=np.int64))
        assert taken.to_pylist() == [flat[r] for r in rows]


def test_take_binary_rejects_rows_out_of_range() -> None:
    array = pa.array(VALUES, type=pa.large_binary())
    with pytest.raises(IndexError):
        take_binary(array, np.array([len(VALUES)], dtype=np.int64))
