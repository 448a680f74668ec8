"""`take_binary` (the args permutation into an exactly sized buffer) equals Arrow's take."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import hpuprof.trace.columns as columns
from hpuprof.trace.columns import take_binary

VALUES = [b"ab", b"", b'{"x": 1}', b"", b"z" * 300, b"\x00\xff"]


@pytest.mark.parametrize("begin", [0, 1, 3])
@pytest.mark.parametrize("rows", [[], [0], [2, 0, 1], [1, 1, 1], [3, 1]])
def test_take_binary_equals_arrow_take(
    monkeypatch: pytest.MonkeyPatch, begin: int, rows: list[int]
) -> None:
    monkeypatch.setattr(columns, "_TAKE_ROWS", 2)  # several pieces per call
    array = pa.array(VALUES, type=pa.large_binary()).slice(begin)
    index = np.array([r for r in rows if r < len(array)], dtype=np.int64)
    expected = array.take(pa.array(index, type=pa.int64()))
    assert take_binary(array, index).to_pylist() == expected.to_pylist()
