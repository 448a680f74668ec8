"""The compiled scanner keeps its buffers from one chunk to the next: a chunk scanned after
another (with other columns present, more or fewer rows) gives exactly the columns it gives
in a fresh scanner; and the load switches numpy's huge pages off only while it runs."""

from __future__ import annotations

import itertools
import json
from typing import Any

import numpy as np
import pytest

from hpuprof.trace import fastscan, heap


def _chunk(events: list[dict[str, Any]]) -> bytes:
    return json.dumps(events)[1:-1].encode()


OURS = _chunk(
    [
        {"ph": "X", "name": "a", "cat": "cpu_op", "pid": 1, "tid": 2, "ts": 1.5, "dur": 2,
         "args": {"hpuprof.mode": "lazy", "hpuprof.phase": "fwd", "recipeId": 7,
                  "Input Dims": [[2, 3]], "External id": 5}},
        {"ph": "s", "id": 9, "name": "f", "cat": "ac2g", "pid": 1, "tid": 2, "ts": 2},
        {"ph": "f", "id": "0x9", "bp": "e", "name": "f", "cat": "ac2g", "pid": 0, "tid": 7,
         "ts": 3},
    ]
    * 50
)  # fmt: skip
PLAIN = _chunk(
    [
        {"ph": "X", "name": "k", "cat": "kernel", "pid": 0, "tid": 7, "ts": 4, "dur": 1,
         "args": {"correlation": 3}},
        {"ph": "i", "name": "m", "pid": "", "ts": 5},
    ]
)  # fmt: skip


@pytest.mark.skipif(not fastscan.available(), reason="_kineto_scan is not built")
@pytest.mark.parametrize("first", [OURS, PLAIN, b""])
@pytest.mark.parametrize("second", [OURS, PLAIN])
def test_chunk_after_chunk_equals_fresh_scan(first: bytes, second: bytes) -> None:
    fastscan.release()
    fresh = fastscan.scan(second)
    assert fresh is not None and fresh[0] > 0
    fastscan.scan(first)
    again = fastscan.scan(second)
    fastscan.release()
    assert again == fresh


@pytest.mark.skipif(not fastscan.available(), reason="_kineto_scan is not built")
def test_empty_columns_and_flow_ids() -> None:
    scanned = fastscan.scan(PLAIN)
    assert scanned is not None
    n, _, _, _, name, _, _, _, flow_id, bp, args = scanned[:11]
    assert n == 2
    assert flow_id is None and bp is None  # no flow rows: nothing per row
    offsets, data, indices = name  # dictionary-encoded: distinct values, an index per row
    assert np.frombuffer(offsets, dtype=np.int64).tolist() == [0, 1, 2] and data == b"km"
    assert np.frombuffer(indices, dtype=np.int32).tolist() == [0, 1]
    assert len(np.frombuffer(args[0], dtype=np.int64)) == n + 1  # args: always every row


def _distinct(column: Any) -> list[bytes]:
    offsets, data, _ = column
    return [data[a:b] for a, b in itertools.pairwise(np.frombuffer(offsets, np.int64).tolist())]


def _rows(column: Any, n: int) -> list[bytes]:
    """Each row's value of a dictionary-encoded scanned column (b"" for none)."""
    if column is None:
        return [b""] * n
    distinct = _distinct(column)
    assert len(set(distinct)) == len(distinct), "a distinct value twice"
    return [distinct[i] for i in np.frombuffer(column[2], dtype=np.int32).tolist()]


@pytest.mark.skipif(not fastscan.available(), reason="_kineto_scan is not built")
def test_dictionary_encoding_in_the_scanner() -> None:
    """Values absent in the first rows, repeated, and thousands of distinct ones (the hash
    table grows several times): every row reads back its own value, in first-seen order."""
    rng = np.random.default_rng(7)
    events = []
    for i in range(3000):
        event: dict[str, Any] = {"ph": "X", "ts": i, "pid": 1, "tid": 1}
        if i >= 5:
            event["name"] = f"op{int(rng.integers(0, 2500))}" if i % 3 else "same"
        if i % 7 == 0:
            event["name"] = ""
        if i >= 1000:
            event["args"] = {"hpuprof.mode": "lazy" if i % 2 else "eager"}
        events.append(event)
    scanned = fastscan.scan(_chunk(events))
    assert scanned is not None and scanned[0] == len(events)
    names = _rows(scanned[4], len(events))
    assert names == [e.get("name", "").encode() for e in events]
    assert _distinct(scanned[4]) == list(dict.fromkeys(names))  # in first-seen order
    column = [key for _, key, _ in fastscan.SCANNED_ARGS].index(b"hpuprof.mode")
    mode = _rows(scanned[11 + column], len(events))
    assert mode == [b"" if i < 1000 else (b"slazy" if i % 2 else b"seager") for i in range(3000)]


def test_small_pages_switch_restored() -> None:
    switch = getattr(getattr(np, "_core", None), "multiarray", None)
    switch = getattr(switch, "_set_madvise_hugepage", None)
    if switch is None:
        pytest.skip("numpy has no huge-page switch")
    for before in (True, False):
        switch(before)
        with pytest.raises(RuntimeError), heap.small_pages():
            assert switch(False) is False  # off inside
            raise RuntimeError
        assert switch(True) is before  # restored, even after an error
