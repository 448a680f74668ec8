"""A plain file's args are not copied while it is read: the compiled scanner reports where each
event's args lie in the mapped file (`spans`), chunks the msgspec path decodes are copied, and
the args taken at the end equal those of a streamed (gzip) read, row for row, whatever the
mix of both kinds of chunk."""

from __future__ import annotations

import gzip
import itertools
import json
import mmap
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

import hpuprof.trace.kineto_json as kineto_json
from hpuprof.trace import fastscan
from hpuprof.trace.arg_spans import ArgSpans, ArgsStore
from hpuprof.trace.kineto_json import read_kineto_json, read_raw

needs_scanner = pytest.mark.skipif(not fastscan.available(), reason="_kineto_scan is not built")


def _events(count: int, escaped_every: int = 0) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for i in range(count):
        args: dict[str, Any] = {"External id": i, "Input Dims": [[i, 2]], "note": "x" * (i % 7)}
        if escaped_every and i % escaped_every == 3:
            args["\u00e9t\u00e9"] = i  # written escaped below: the scanner leaves it to msgspec
        event = {"ph": "X", "cat": "cpu_op", "name": f"op{i % 5}", "pid": 1, "tid": 1, "ts": i}
        events.append({**event, "dur": 1, **({"args": args} if i % 4 else {})})
    events.append({"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "python"}})
    return events


def _write(path: Path, events: list[dict[str, Any]]) -> Path:
    # ensure_ascii: the escaped keys stay escaped (\u00e9), which the scanner does not read
    path.write_text(json.dumps({"traceEvents": events}, indent=1, ensure_ascii=True))
    return path


@needs_scanner
def test_scanned_spans_point_at_the_bytes_a_copy_holds() -> None:
    chunk = orjson.dumps(_events(30))[1:-1]
    copied = fastscan.scan(chunk)
    spans = fastscan.scan(chunk, spans=True)
    assert copied is not None and spans is not None
    offsets = np.frombuffer(copied[10][0], dtype=np.int64)
    starts = np.frombuffer(spans[10][0], dtype=np.int64)
    lengths = np.frombuffer(spans[10][1], dtype=np.int64)
    assert lengths.tolist() == np.diff(offsets).tolist()
    pieces = [chunk[s : s + n] for s, n in zip(starts.tolist(), lengths.tolist(), strict=True)]
    assert pieces == [copied[10][1][a:b] for a, b in itertools.pairwise(offsets.tolist())]
    assert sum(1 for p in pieces if p) == 23  # not vacuous: most rows have args
    assert all(spans[k] == copied[k] for k in range(10))  # the other columns are the same


@needs_scanner
@pytest.mark.parametrize("chunk", [300, 2000, 1 << 20])
@pytest.mark.parametrize("escaped_every", [0, 11])
def test_mapped_spans_equal_a_streamed_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int, escaped_every: int
) -> None:
    plain = _write(tmp_path / "t.json", _events(120, escaped_every))
    packed = tmp_path / "t.json.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    monkeypatch.setattr(kineto_json, "CHUNK_BYTES", chunk)
    mapped = read_raw(plain).columns.args
    streamed = read_raw(packed).columns.args
    assert isinstance(mapped, ArgSpans) and isinstance(streamed, ArgSpans)
    in_file = {isinstance(piece.obj, mmap.mmap) for piece in mapped.pieces}
    if not escaped_every:
        assert in_file == {True}  # spans of the file, nothing copied
    elif chunk == 300:
        assert in_file == {True, False}  # msgspec's chunks copied, the others not
    assert (mapped.mapped is not None) == (True in in_file)
    assert streamed.mapped is None
    assert mapped.values() == streamed.values()
    assert len(mapped.values()) == 121 and mapped.nbytes == streamed.nbytes
    rows = np.array([120, 5, 5, 0, 77], dtype=np.int64)
    assert mapped.take(rows).to_pylist() == [mapped.values()[r] for r in rows.tolist()]
    table = read_kineto_json(plain).events
    assert table["args"].tolist() == read_kineto_json(packed).events["args"].tolist()


def test_take_without_the_compiled_gather(monkeypatch: pytest.MonkeyPatch) -> None:
    store = ArgsStore()
    values = [b"{}", b"", b'{"a": 1}', b"[1,2,3]", b""]
    store.add_copied(np.array([0, 2, 2, 10], dtype=np.int64), b'{}{"a": 1}')
    store.add_copied(np.array([0, 7, 7], dtype=np.int64), b"[1,2,3]")
    spans = store.finish()
    rows = np.array([3, 0, 2, 2, 4, 1], dtype=np.int64)
    expected = [values[r] for r in rows.tolist()]
    assert spans.take(rows).to_pylist() == expected
    monkeypatch.setattr(fastscan, "gather_function", lambda: None)
    assert spans.take(rows).to_pylist() == expected
    with pytest.raises(IndexError):
        spans.take(np.array([5], dtype=np.int64))
