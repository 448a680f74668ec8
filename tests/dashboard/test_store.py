"""The store: Runs page figures, disk cache under the user's cache dir, memory in bytes."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("dash")

from hpudash.data import Analysis, DataStore, UnknownRunError, default_analyzer
from hpudash.diskcache import DiskCache, MemoryCache, approx_nbytes
from hpudash.pages import runs

from hpuprof.errors import TraceFormatError
from hpuprof.trace.model import Trace
from tests.dashboard.synth import synthetic_trace

TRACE = synthetic_trace(900)
_ANALYSIS: list[Analysis] = []


def _analysis_of_trace() -> Analysis:
    """The real analysis of TRACE, computed once for the module (the tests count calls)."""
    if not _ANALYSIS:
        _ANALYSIS.append(default_analyzer(TRACE))
    return _ANALYSIS[0]


class Counting:
    """Loader and analyzer that count their calls (the expensive steps the caches avoid)."""

    def __init__(self) -> None:
        self.loads: list[str] = []
        self.analyses = 0

    def load(self, path: Path) -> Trace:
        self.loads.append(path.name)
        if path.name.startswith("bad"):
            raise TraceFormatError(path, 0, "a JSON object")
        return TRACE

    def analyze(self, trace: Trace) -> Analysis:
        self.analyses += 1
        return _analysis_of_trace()


def _root(tmp_path: Path, names: tuple[str, ...] = ("a.json", "b.json")) -> Path:
    root = tmp_path / "runs"
    root.mkdir()
    for n in names:
        (root / n).write_bytes(b"{}")
    return root


def _store(root: Path, c: Counting, cache: Path | None = None, **kw: Any) -> DataStore:
    disk: Any = DiskCache(root, base=cache) if cache is not None else False
    return DataStore(root, loader=c.load, analyzer=c.analyze, disk=disk, **kw)


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*"))


def test_figures_persist_across_restarts_outside_the_served_dir(tmp_path: Path) -> None:
    root, cache = _root(tmp_path), tmp_path / "cache"
    before = _files(root)
    first = Counting()
    rows = runs.run_rows(_store(root, first, cache), budget_s=60)
    assert [r["status"] for r in rows] == ["ok", "ok"] and first.analyses == 2
    assert rows[0]["steps_per_rank"] == len(
        TRACE.events[TRACE.events["name"].str.startswith("Profiler")]
    )
    assert _files(root) == before  # nothing written into the served directory
    assert any(p.suffix == ".json" for p in cache.rglob("*"))
    # a new process (new store) reads the disk cache: nothing is loaded or analysed again
    again = Counting()
    assert runs.run_rows(_store(root, again, cache), budget_s=60) == rows
    assert again.loads == [] and again.analyses == 0


def test_read_only_served_directory_works(tmp_path: Path) -> None:
    root, cache = _root(tmp_path), tmp_path / "cache"
    before = _files(root)
    mode = root.stat().st_mode
    os.chmod(root, stat.S_IRUSR | stat.S_IXUSR)
    try:
        store = _store(root, Counting(), cache)
        assert [r["status"] for r in runs.run_rows(store, budget_s=60)] == ["ok", "ok"]
        assert store.report("a.json")["meta"]["events"] == len(TRACE.events)
        store.timeline("a.json")
        assert _files(root) == before
    finally:
        os.chmod(root, mode)


def test_report_and_timeline_come_back_from_disk(tmp_path: Path) -> None:
    root, cache = _root(tmp_path), tmp_path / "cache"
    first = Counting()
    store = _store(root, first, cache)
    report = store.report("a.json")
    index = store.timeline("a.json")
    again = Counting()
    store2 = _store(root, again, cache)
    assert store2.report("a.json") == report
    index2 = store2.timeline("a.json")
    assert again.loads == [] and again.analyses == 0
    assert np.array_equal(index2.ts, index.ts) and index2.tracks == index.tracks


def test_changed_trace_is_recomputed_and_replaces_its_old_version(tmp_path: Path) -> None:
    root, cache = _root(tmp_path), tmp_path / "cache"
    runs.run_rows(_store(root, Counting(), cache), budget_s=60)
    slots = lambda: sorted(p.parent.name for p in cache.rglob("figures.json"))  # noqa: E731
    assert len(slots()) == 2
    (root / "b.json").write_bytes(b'{"traceEvents": []}')  # new size
    c = Counting()
    runs.run_rows(_store(root, c, cache), budget_s=60)
    assert c.loads == ["b.json"]
    assert len(slots()) == 2  # the old version of b.json was dropped


def test_budget_leaves_rows_pending_then_fills_them(tmp_path: Path) -> None:
    root = _root(tmp_path, ("a.json", "b.json", "c.json"))
    c = Counting()
    store = _store(root, c)
    rows = runs.run_rows(store, budget_s=0)
    assert [r["status"] for r in rows] == [runs.PENDING] * 3 and c.loads == []
    assert list(rows[0]) == list(runs.FIELDS) and rows[0]["kind"] == "trace file"
    assert runs._interval(rows) == runs.FILL_MS
    rows = runs.run_rows(store, budget_s=1e-9)  # a tiny budget still makes progress
    assert [r["status"] for r in rows] == ["ok", runs.PENDING, runs.PENDING]
    rows = runs.run_rows(store, budget_s=60)
    assert all(r["status"] == "ok" for r in rows) and runs._interval(rows) == runs.REFRESH_MS


def test_unreadable_trace_is_reported_once(tmp_path: Path) -> None:
    root = _root(tmp_path, ("a.json", "bad.json"))
    c = Counting()
    store = _store(root, c)
    rows = {r["run"]: r for r in runs.run_rows(store, budget_s=60)}
    assert rows["bad.json"]["status"].startswith("unreadable: ")
    assert rows["a.json"]["status"] == "ok"
    runs.run_rows(store, budget_s=60)
    assert c.loads.count("bad.json") == 1  # not retried on every refresh


def test_unknown_names_are_refused(tmp_path: Path) -> None:
    store = _store(_root(tmp_path), Counting())
    for bad in ("nope.json", "../runs/a.json", "/etc/passwd", "", None, 3, "a" * 500):
        with pytest.raises(UnknownRunError) as err:
            store.entry(bad)
        assert "No run or trace named" in str(err.value)


def test_memory_cache_is_bounded_in_bytes() -> None:
    cache = MemoryCache(max_bytes=10_000)
    for i in range(10):
        cache.put(i, np.zeros(300))  # 2,400 bytes each
    assert cache.bytes <= 10_000 and len(cache) == 4
    assert cache.get(9) is not None and cache.get(0) is None
    cache.put("huge", np.zeros(10_000))  # bigger than the budget: not kept
    assert cache.get("huge") is None and cache.bytes <= 10_000
    assert approx_nbytes(TRACE) > TRACE.events["ts_ns"].nbytes


def test_store_memory_stays_within_its_budget(tmp_path: Path) -> None:
    root = _root(tmp_path, tuple(f"r{i}.json" for i in range(6)))
    budget = 3 * approx_nbytes(TRACE)
    store = _store(root, Counting(), memory_bytes=budget)
    for i in range(6):
        store.timeline(f"r{i}.json")
        assert store.memory.bytes <= budget


def test_disk_cache_is_trimmed_to_its_size(tmp_path: Path) -> None:
    root = _root(tmp_path, tuple(f"r{i}.json" for i in range(5)))
    disk = DiskCache(root, base=tmp_path / "cache", max_bytes=2_000)
    c = Counting()
    store = DataStore(root, loader=c.load, analyzer=c.analyze, disk=disk)
    for i in range(5):
        store.key_figures(f"r{i}.json")
    total = sum(p.stat().st_size for p in (tmp_path / "cache").rglob("*") if p.is_file())
    assert 0 < total <= 2_000


def test_ranks_page_reads_rank_files_one_by_one(tmp_path: Path) -> None:
    """The Ranks page's view of a many-rank run comes from per-rank summaries: the store's
    whole-run loader is never called, and the figures equal the whole run's report."""
    from tests.multirank.ranks import write_run

    write_run(tmp_path / "run", ranks=4, straggler=2)

    def whole_run_loader(path: Path) -> Trace:
        raise AssertionError(f"the Ranks page loaded {path} into the whole run")

    lazy = DataStore(tmp_path, loader=whole_run_loader, disk=False)
    doc = lazy.ranks_view("run")
    whole = DataStore(tmp_path, disk=False).view("run")
    assert doc["data"]["ranks"] == whole["data"]["ranks"]
    assert doc["data"]["meta"]["key_figures"]["steps_per_rank"] == 3
    assert [r["rank"] for r in doc["data"]["ranks"]["ranks"]] == [0, 1, 2, 3]
