"""The column builder's shortcuts give the same columns as the general path, whatever the chunk
cuts: our `hpuprof.*` keys are read in any chunk, phases are coded by their byte, id columns are
int32 while they fit and int64 once one does not, a mapped file reads like a stream."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

import hpuprof.trace.kineto_json as kineto_json
import hpuprof.trace.normalize as normalize
from hpuprof.trace import fastscan
from hpuprof.trace.kineto_json import read_kineto_json, read_raw
from hpuprof.trace.schema import NO_ID


def _write(path: Path, events: list[dict[str, Any]]) -> Path:
    path.write_bytes(orjson.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path


def _op(i: int, **args: Any) -> dict[str, Any]:
    event = {"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i, "dur": 1}
    return {**event, "args": args} if args else event


@pytest.mark.parametrize("chunk", [150, 400, 1 << 20])
def test_our_keys_read_in_any_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    # our keys only in events 10..12: small chunks see them in some chunks and not in others
    events = [_op(i, **{"External id": i}) for i in range(30)]
    for i in (10, 11, 12):
        events[i]["args"].update({"hpuprof.mode": "lazy", "hpuprof.fallback": True})
    monkeypatch.setattr(kineto_json, "CHUNK_BYTES", chunk)
    raw = read_raw(_write(tmp_path / "t.json", events)).columns
    assert raw.mode.values().tolist() == ["lazy" if i in (10, 11, 12) else "" for i in range(30)]
    assert raw.fallback.tolist() == [1 if i in (10, 11, 12) else -1 for i in range(30)]
    assert raw.external_id.tolist() == list(range(30))


def test_escaped_key_spelling_still_read(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    event = orjson.dumps(_op(0)).replace(b"}", b',"args":{"hpuprof\\u002emode":"eager"}}')
    path.write_bytes(b'{"traceEvents": [' + event + b"]}")
    trace = read_kineto_json(path)
    assert trace.events["mode"].astype(str).tolist() == ["eager"]


def test_phases_coded_by_byte_and_otherwise(tmp_path: Path) -> None:
    events = [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "p"}},
        {"ph": "B", "name": "outer", "pid": 1, "tid": 1, "ts": 0},
        {"ph": "i", "name": "mark", "pid": 1, "tid": 1, "ts": 1, "s": "t"},
        {"ph": "E", "name": "outer", "pid": 1, "tid": 1, "ts": 5},
        {"ph": "C", "name": "mem", "pid": 1, "tid": 1, "ts": 2, "args": {"bytes": 7}},
        _op(3),
    ]
    odd = [*events, {"ph": "XX", "name": "odd", "pid": 1, "tid": 1, "ts": 4, "dur": 1}]
    for name, evs in (("letters", events), ("a longer phase", odd)):
        trace = read_kineto_json(_write(tmp_path / f"{name}.json", evs))
        table = trace.events.sort_values("ts_ns")
        assert table["name"].astype(str).tolist() == ["outer", "mark", "op3"], name
        assert table["ph"].astype(str).tolist() == ["X", "i", "X"], name
        assert table["dur_ns"].tolist() == [5000, 0, 1000], name
        assert trace.counters["value"].tolist() == [7.0], name
        assert trace.processes["name"].tolist() == ["p"], name


def test_ids_widen_to_int64_when_one_chunk_needs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = (1 << 40) + 3
    events = [_op(i, correlation=i, stream=7) for i in range(20)]
    events[15]["args"]["correlation"] = big
    events[16]["args"]["correlation"] = -5
    monkeypatch.setattr(kineto_json, "CHUNK_BYTES", 300)
    path = _write(tmp_path / "t.json", events)
    raw = read_raw(path).columns
    expected = [big if i == 15 else -5 if i == 16 else i for i in range(20)]
    assert raw.correlation.tolist() == expected
    assert raw.external_id.tolist() == [NO_ID] * 20
    table = read_kineto_json(path).events.sort_values("ts_ns")
    assert table["correlation"].dtype == "int64"
    assert table["correlation"].tolist() == expected


def test_mapped_file_reads_like_a_stream(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a plain file is decoded in place from its memory map (chunk brackets written over the
    # bytes around each chunk, then restored); gzip goes through the block stream
    import gzip

    events = [_op(i, **{"External id": i, "Input Dims": [[i, 2]]}) for i in range(40)]
    plain = _write(tmp_path / "t.json", events)
    before = plain.read_bytes()
    packed = tmp_path / "t.json.gz"
    packed.write_bytes(gzip.compress(before))
    monkeypatch.setattr(kineto_json, "CHUNK_BYTES", 250)
    seen: list[int] = []
    mapped = read_raw(plain, progress=seen.append)
    streamed = read_raw(packed)
    assert plain.read_bytes() == before
    assert sum(seen) == len(before)
    assert (mapped.size, mapped.truncated) == (streamed.size, streamed.truncated)
    assert mapped.columns.args.values() == streamed.columns.args.values()
    assert mapped.columns.input_dims.values().tolist() == [f"[[{i},2]]" for i in range(40)]
    assert mapped.columns.name.values().tolist() == streamed.columns.name.values().tolist()


def test_truncated_mapped_file_keeps_complete_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path / "t.json", [_op(i) for i in range(30)])
    data = path.read_bytes()
    path.write_bytes(data[: data.index(b'"op27"') + 3])  # cut inside event 27
    monkeypatch.setattr(kineto_json, "CHUNK_BYTES", 200)
    decoded = read_raw(path)
    assert len(decoded.columns) == 27
    event_27 = data.rindex(b"{", 0, data.index(b'"op27"'))
    # (said as where the data ends whichever chunk took event 26: the same in every path)
    event_26_end = data.rindex(b"}", 0, event_27) + 1
    assert decoded.truncated == f"the last complete event ends at byte {event_26_end}"


@pytest.mark.parametrize("pure", [False, True])
def test_codes_and_ids_narrowest_that_holds_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pure: bool
) -> None:
    # 300 distinct names: the first chunks' codes fit int8, the later ones need int16
    events = [_op(i, correlation=i * 1000, stream=7) for i in range(300)]
    events += [{**_op(300, **{"hpuprof.mode": "lazy"}), "name": "op7"}]
    monkeypatch.setattr(kineto_json, "CHUNK_BYTES", 2000)
    if pure:
        monkeypatch.setenv("HPUPROF_PURE_PYTHON", "1")
        fastscan._module.cache_clear()
    try:
        raw = read_raw(_write(tmp_path / "t.json", events)).columns
    finally:
        fastscan._module.cache_clear()
    assert raw.name.codes.dtype == np.int16
    assert raw.name.values().tolist() == [f"op{i}" for i in range(300)] + ["op7"]
    assert raw.ph.codes.dtype == raw.cat.codes.dtype == raw.mode.codes.dtype == np.int8
    assert raw.mode.values().tolist() == [""] * 300 + ["lazy"]
    assert raw.stream.dtype == np.int8 and raw.stream.tolist() == [7] * 300 + [NO_ID]
    assert raw.correlation.dtype == np.int32
    assert raw.correlation.tolist() == [i * 1000 for i in range(300)] + [NO_ID]
    assert raw.device.dtype == np.int8 and set(raw.device.tolist()) == {NO_ID}


@pytest.mark.parametrize("chunk", [300, 1 << 20])
def test_counters_decoded_at_once_or_one_by_one_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    # counters' args are decoded in one pass when each is one line; an args object written
    # over several lines (or of another JSON type) sends them one by one: same table
    def counter(i: int, args: Any) -> dict[str, Any]:
        return {"ph": "C", "name": f"c{i % 3}", "pid": 1, "tid": 1, "ts": i, "args": args}

    values = [{"bytes": i, "free": 2.5 * i, "flag": True, "text": "x"} for i in range(12)]
    compact = [counter(i, args) for i, args in enumerate(values)]
    spread = [orjson.dumps(e, option=orjson.OPT_INDENT_2) for e in compact[:6]]
    monkeypatch.setattr(kineto_json, "CHUNK_BYTES", chunk)
    one_by_one: list[bytes] = []
    decode_one = normalize._decode_args
    monkeypatch.setattr(
        normalize, "_decode_args", lambda raw: one_by_one.append(raw) or decode_one(raw)
    )
    one_line = read_kineto_json(_write(tmp_path / "compact.json", compact)).counters
    assert one_by_one == []
    path = tmp_path / "spread.json"
    rest = b",".join(orjson.dumps(e) for e in compact[6:])
    path.write_bytes(b'{"traceEvents": [' + b",".join(spread) + b"," + rest + b"]}")
    multi_line = read_kineto_json(path).counters
    assert len(one_by_one) == 12
    assert one_line["value"].tolist() == [float(v) for i in range(12) for v in (i, 2.5 * i)]
    assert one_line["series"].astype(str).tolist() == ["bytes", "free"] * 12
    assert one_line["name"].astype(str).tolist() == [f"c{i % 3}" for i in range(12) for _ in "ab"]
    assert multi_line.equals(one_line)
