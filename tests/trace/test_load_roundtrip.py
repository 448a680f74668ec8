"""Parquet round trip, the transparent cache, and dicts vs file giving the same tables."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

import hpuprof
from hpuprof.trace.cache import cache_dir, entry_path, trim
from hpuprof.trace.kineto_json import trace_from_events
from hpuprof.trace.model import Trace
from hpuprof.trace.parquet import load_parquet, save_parquet
from hpuprof.trace.schema import COUNTER_COLUMNS, EVENT_COLUMNS, FLOW_COLUMNS

GAUDI = Path(__file__).parent / "data" / "gaudi_merged.json"
TABLES = ("events", "counters", "flows", "processes", "threads")


def assert_same(a: Trace, b: Trace) -> None:
    for name in TABLES:
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name), obj=name)
    assert dict(a.metadata) == dict(b.metadata)
    assert (a.format, a.sources, a.schema_version) == (b.format, b.sources, b.schema_version)


def test_columns_follow_the_schema() -> None:
    trace = hpuprof.load(GAUDI, cache=False)
    assert list(trace.events.columns) == list(EVENT_COLUMNS)
    assert list(trace.counters.columns) == list(COUNTER_COLUMNS)
    assert list(trace.flows.columns) == list(FLOW_COLUMNS)
    for name, dtype in EVENT_COLUMNS.items():
        actual = trace.events[name].dtype
        if dtype == "binary":
            assert isinstance(actual, pd.ArrowDtype)
        else:
            assert str(actual) == dtype, name
    raw = trace.events["args"].iloc[int((trace.events["name"] == "gemm_bf16").argmax())]
    assert raw.startswith(b'{"recipeId": 3, "recipeName"')  # exact bytes of the file


def test_parquet_round_trip_keeps_every_column(tmp_path: Path) -> None:
    trace = hpuprof.load(GAUDI, cache=False)
    save_parquet(trace, tmp_path / "t.parquet")
    assert_same(trace, load_parquet(tmp_path / "t.parquet"))
    assert_same(trace, hpuprof.load(tmp_path / "t.parquet"))


def test_parquet_round_trip_real_trace(tmp_path: Path, shared_kineto_dir: Path) -> None:
    trace = hpuprof.load(
        shared_kineto_dir / "tests/data/mtia_inference_trace/mtia_inference_rank_0.json.gz",
        cache=False,
    )
    save_parquet(trace, tmp_path / "m.parquet")
    assert_same(trace, hpuprof.load(tmp_path / "m.parquet"))


def test_cache_is_used_and_invalidated(tmp_path: Path) -> None:
    path = tmp_path / "gaudi.json"
    shutil.copy(GAUDI, path)
    first = hpuprof.load(path)
    entry = entry_path(path)
    assert entry.is_file() and entry.parent == cache_dir()
    assert not list(tmp_path.glob("*cache*")), "nothing is written beside the trace"
    again = hpuprof.load(path)
    assert_same(first, again)
    assert isinstance(again.events["args"].dtype, pd.ArrowDtype)
    assert again.args(0) == first.args(0)  # args read from the memory-mapped entry
    doc = json.loads(path.read_text())
    doc["traceEvents"] = doc["traceEvents"][:-1]  # drop the memory instant
    path.write_text(json.dumps(doc))
    os.utime(path, ns=(1, 1))
    second = hpuprof.load(path)
    assert len(second.events) == len(first.events) - 1
    assert entry_path(path) != entry and not entry.exists(), "the stale entry is replaced"
    assert entry_path(path).is_file()


def test_cache_dir_follows_xdg_and_override(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "hpuprof"
    monkeypatch.setenv("HPUPROF_CACHE_DIR", str(tmp_path / "mine"))
    path = tmp_path / "gaudi.json"
    shutil.copy(GAUDI, path)
    hpuprof.load(path)
    assert [p.parent for p in (tmp_path / "mine").glob("gaudi.json-*.arrow")] == [tmp_path / "mine"]


def test_unwritable_cache_dir_still_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("HPUPROF_CACHE_DIR", str(blocker / "cache"))
    path = tmp_path / "gaudi.json"
    shutil.copy(GAUDI, path)
    assert_same(hpuprof.load(path), hpuprof.load(path, cache=False))


def test_corrupt_cache_entry_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "gaudi.json"
    shutil.copy(GAUDI, path)
    first = hpuprof.load(path)
    entry_path(path).write_bytes(b"garbage")
    assert_same(first, hpuprof.load(path))
    assert entry_path(path).stat().st_size > len(b"garbage"), "rewritten after the miss"


def test_trim_deletes_least_recently_used_first(tmp_path: Path) -> None:
    for i, name in enumerate(("old", "mid", "new")):
        entry = tmp_path / f"{name}.arrow"
        entry.write_bytes(b"x" * 100)
        os.utime(entry, ns=(i * 10**9, i * 10**9))
    deleted = trim(tmp_path, 200, keep=tmp_path / "old.arrow")
    assert [p.name for p in deleted] == ["mid.arrow"]
    assert sorted(p.name for p in tmp_path.glob("*.arrow")) == ["new.arrow", "old.arrow"]


def test_dicts_give_the_same_tables_as_the_file() -> None:
    from_file = hpuprof.load(GAUDI, cache=False)
    doc = json.loads(GAUDI.read_text())
    events = doc.pop("traceEvents")
    from_dicts = trace_from_events(events, doc, source=str(GAUDI))
    a = from_file.events.drop(columns="args")
    b = from_dicts.events.drop(columns="args")
    pd.testing.assert_frame_equal(a, b)
    for i in range(len(from_file.events)):
        assert from_file.args(i) == from_dicts.args(i)
    for name in ("counters", "flows", "processes", "threads"):
        pd.testing.assert_frame_equal(getattr(from_file, name), getattr(from_dicts, name))
