"""Every hpuprof args key the writers use is a column after loading (schema.ARGS), with the value
the raw args hold on every row; a trace that holds none of them pays nothing for the columns."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import hpuprof
from hpuprof.trace import fastscan, schema
from hpuprof.trace.arg_columns import LATER, MarkedRows, marked_rows, our_rows, read_later_keys
from hpuprof.trace.broadcast_columns import holds_values
from hpuprof.trace.opinfo import norm_dtype
from hpuprof.trace.parquet import events_table, load_parquet, save_parquet
from hpuprof.trace.schema import ARG_COLUMNS, ARGS, EVENT_COLUMNS, NO_ID, ArgKey

ROOT = Path(__file__).parents[2]
EMULATED = sorted(d for d in (ROOT / "sample_traces").iterdir() if d.name.startswith("emulated_"))
CPU_TRACE = ROOT / "sample_traces" / "cpu_torch_profiler" / "trace.pt.trace.json"


def _expected(arg: ArgKey, raw: dict[str, Any]) -> Any:
    """The column value of `arg` for a row whose args are `raw` (absent: the type's default)."""
    value = raw.get(arg.key)
    if arg.type == "flag":
        return value is True
    if arg.type in ("int", "float"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return NO_ID if arg.type == "int" else math.nan
        return round(value * arg.scale) if arg.type == "int" else float(value)
    if value is None:
        return ""
    return value if isinstance(value, str) else msgspec.json.encode(value).decode()


@pytest.mark.parametrize("run", EMULATED, ids=lambda p: p.name)
def test_every_key_of_every_row_is_in_its_column(run: Path) -> None:
    events = hpuprof.load(run, cache=False).events
    raw = [msgspec.json.decode(bytes(a)) if len(a) else {} for a in events["args"]]
    keys_seen = {key for args in raw for key in args if key.startswith("hpuprof.")}
    assert keys_seen <= {arg.key for arg in ARGS}, "a key the writers use is not declared"
    checked = 0
    for arg in ARGS:
        if arg.key not in keys_seen or arg.column in ("cause", "flops", "graph_id"):
            continue  # (cause, flops, graph_id: derived columns, checked in tests/analysis)
        column = events[arg.column]
        got = column.astype(str).tolist() if column.dtype == "category" else column.tolist()
        want = [_expected(arg, args) for args in raw]
        if arg.type == "float":
            assert np.allclose(got, want, equal_nan=True), arg.key
        else:
            assert got == want, arg.key
        checked += 1
    assert checked >= 5  # each sample run writes several of the keys read later


def test_a_trace_without_our_keys_pays_nothing_for_their_columns() -> None:
    events = hpuprof.load(CPU_TRACE, cache=False).events
    assert list(events.columns) == list(EVENT_COLUMNS)
    for name in ARG_COLUMNS:
        column = events[name]
        assert not holds_values(column), name
        values = column.array.codes if column.dtype == "category" else column.to_numpy()
        assert values.strides == (0,), f"{name}: one broadcast value, no memory per row"


def test_a_saved_trace_leaves_empty_arg_columns_out_and_restores_them(tmp_path: Path) -> None:
    trace = hpuprof.load(EMULATED[0], cache=False)
    stored = set(events_table(trace).column_names)
    empty = {name for name in ARG_COLUMNS if not holds_values(trace.events[name])}
    assert empty and not empty & stored
    assert (set(ARG_COLUMNS) - empty) <= stored
    save_parquet(trace, tmp_path / "t.parquet")
    again = load_parquet(tmp_path / "t.parquet")
    pd.testing.assert_frame_equal(again.events, trace.events)


def test_rows_found_by_search_give_the_same_columns_as_the_scanners_rows() -> None:
    events = hpuprof.load(EMULATED[0], cache=False).events
    rows = our_rows(events["args"])
    assert len(rows)
    found = read_later_keys(events["args"], rows, len(events))
    later = [name for name in ARG_COLUMNS if name in found]
    assert len(later) == len([arg for arg in LATER if arg.column in ARG_COLUMNS])
    for name in later:
        pd.testing.assert_series_equal(
            pd.Series(found[name], name=name), events[name].reset_index(drop=True)
        )


def test_a_value_of_the_wrong_type_loads_as_absent() -> None:
    args = pd.Series(
        [b'{"hpuprof.graph_ops": "many", "hpuprof.modeled": 1, "hpuprof.sync_reason": 3}'],
        dtype=pd.ArrowDtype(pa.large_binary()),
    )
    got = read_later_keys(args, None, 1)
    assert got["graph_ops"].tolist() == [NO_ID]
    assert got["modeled"].tolist() == [False]
    assert list(got["sync_reason"]) == ["3"]


@pytest.mark.skipif(not fastscan.available(), reason="_kineto_scan is not built")
def test_scanner_marks_the_key_buckets_of_the_keys_each_row_holds() -> None:
    rows = [
        {"hpuprof.sync_reason": "x", "hpuprof.cache": "hit", "other": {"hpuprof.cause": 1}},
        {"hpuprof.mode": "lazy", "hpuprof.flops": 3, "hpuprof.modeled": True},  # read with
        # the event (`ARG_KEYS`, `ARG_VALUE_KEYS`): no mark
        {"hpuprof.zzz_not_ours": 1, "x": 2},
        {},
    ]
    chunk = b",".join(
        msgspec.json.encode({"ph": "X", "name": "a", "ts": i, "dur": 1, "args": args})
        for i, args in enumerate(rows)
    )
    scanned = fastscan.scan(chunk)
    assert scanned is not None
    marks = np.frombuffer(scanned[-1], dtype=np.uint64).tolist()
    bucket = fastscan.key_bucket
    assert marks == [
        bucket("hpuprof.sync_reason") | bucket("hpuprof.cache"),  # (nested: no args keys)
        0,
        bucket("hpuprof.zzz_not_ours"),
        0,
    ]
    marked = marked_rows(np.asarray(marks, dtype=np.uint64))
    assert marked.rows.tolist() == [0, 2]
    assert marked.buckets == marks[0] | marks[2]


def test_keys_outside_the_marked_buckets_are_not_read() -> None:
    args = pd.Series(
        [b'{"hpuprof.flops": 5, "hpuprof.bytes": 7}'], dtype=pd.ArrowDtype(pa.large_binary())
    )
    only_flops = MarkedRows(np.array([0]), fastscan.key_bucket("hpuprof.flops"))
    assert fastscan.key_bucket("hpuprof.flops") != fastscan.key_bucket("hpuprof.bytes")
    got = read_later_keys(args, only_flops, 1)
    assert got["flops"].tolist() == [5.0]
    assert got["bytes_moved"].tolist() == [NO_ID]  # its bucket unmarked: never looked for
    every = read_later_keys(args, MarkedRows(np.array([0])), 1)
    assert every["bytes_moved"].tolist() == [7]


_ODD_VALUES: list[Any] = [8, 8.5, 1e30, -3, "12", None, True, False, {"a": 1}, [1, 2], 2**70]
_ODD_VALUES += [1.5e-7, 0, 12345678901234567, 2**62]


@pytest.mark.parametrize("pure", [False, True])
def test_keys_read_with_the_event_are_typed_as_when_read_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pure: bool
) -> None:
    """`ARG_VALUE_KEYS` come with the event (compiled scanner or msgspec path), typed by
    `value_column`: every value, of any type, loads as `read_later_keys` types it from the
    args (the way they were read before, and still are for tables made another way)."""
    if pure:
        monkeypatch.setenv("HPUPROF_PURE_PYTHON", "1")
        monkeypatch.setattr(fastscan, "scan", lambda chunk, **options: None)
    events = [
        {"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": 0, "tid": 7, "ts": i, "dur": 1,
         "args": {key: value, "correlation": i}}
        for i, value in enumerate(_ODD_VALUES)
        for key in schema.ARG_VALUE_KEYS.values()
    ]  # fmt: skip
    device = {"name": "/device:HPU:0"}  # (device rows: `flops` is the key's value there)
    events.append({"ph": "M", "name": "process_name", "pid": 0, "args": device})
    path = tmp_path / "odd.json"
    path.write_bytes(msgspec.json.encode({"traceEvents": events}))
    loaded = hpuprof.load(path, cache=False).events
    later = read_later_keys(loaded["args"], None, len(loaded))
    for column in schema.ARG_VALUE_KEYS:
        got, want = loaded[column].to_numpy(), np.asarray(later[column])
        assert got.dtype == want.dtype, column
        assert np.array_equal(got, want, equal_nan=got.dtype.kind == "f"), column
        assert len(set(got.tolist())) >= 2, column  # (not a comparison of absent values)


@pytest.mark.parametrize("pure", [False, True])
def test_device_data_types_read_with_the_event(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pure: bool
) -> None:
    """The bridge's `dataType` of device ops comes with the event: a text is the row's dtype,
    a value of another type none (as the args' search for a quoted value found none)."""
    if pure:
        monkeypatch.setattr(fastscan, "scan", lambda chunk, **options: None)
    values: list[Any] = ["bf16", "fp32", 5, None, True, {"a": "bf16"}, "f8_e4m3", "bf16"]
    events: list[dict[str, Any]] = [
        {"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": 0, "tid": 7, "ts": i, "dur": 1,
         "args": {"dataType": value}}
        for i, value in enumerate(values)
    ]  # fmt: skip
    events.append({"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "/device:HPU:0"}})
    path = tmp_path / "types.json"
    path.write_bytes(msgspec.json.encode({"traceEvents": events}))
    loaded = hpuprof.load(path, cache=False).events.sort_values("ts_ns")
    want = [norm_dtype(v) if isinstance(v, str) else "" for v in values]
    assert loaded["dtype"].astype(str).tolist() == want
    assert want[0] != "" and want[0] != want[1]
