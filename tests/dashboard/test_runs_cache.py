"""The Runs page's key figures: sidecar cache, time budget, pending rows, unreadable traces."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

pytest.importorskip("dash")

from hpudash.data import Analysis, DataStore, default_analyzer
from hpudash.figcache import FiguresCache
from hpudash.pages import runs

from hpuprof.errors import TraceFormatError
from hpuprof.trace.model import Trace
from tests.dashboard.synth import synthetic_trace

TRACE = synthetic_trace(900)


class Counting:
    """Loader and analyzer that count their calls (the expensive steps the cache avoids)."""

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
        return default_analyzer(trace)


def _root(tmp_path: Path, names: tuple[str, ...] = ("a.json", "b.json")) -> Path:
    root = tmp_path / "runs"
    root.mkdir()
    for n in names:
        (root / n).write_bytes(b"{}")
    return root


def _store(root: Path, c: Counting, **kw: Any) -> DataStore:
    return DataStore(root, loader=c.load, analyzer=c.analyze, **kw)


def test_figures_persist_across_restarts(tmp_path: Path) -> None:
    root = _root(tmp_path)
    first = Counting()
    rows = runs.run_rows(_store(root, first), budget_s=60)
    assert [r["status"] for r in rows] == ["ok", "ok"] and first.analyses == 2
    assert rows[0]["steps"] == len(TRACE.events[TRACE.events["name"].str.startswith("Profiler")])
    sidecar = root / ".hpudash-cache" / "figures.json"
    assert set(orjson.loads(sidecar.read_bytes())["runs"]) == {"a.json", "b.json"}
    # a new process (new store) reads the sidecar: nothing is loaded or analysed again
    again = Counting()
    assert runs.run_rows(_store(root, again), budget_s=60) == rows
    assert again.loads == [] and again.analyses == 0
    # the catalog does not list the sidecar as a trace
    assert [r["run"] for r in rows] == ["a.json", "b.json"]


def test_changed_trace_is_recomputed(tmp_path: Path) -> None:
    root = _root(tmp_path)
    runs.run_rows(_store(root, Counting()), budget_s=60)
    (root / "b.json").write_bytes(b'{"traceEvents": []}')  # new size
    c = Counting()
    runs.run_rows(_store(root, c), budget_s=60)
    assert c.loads == ["b.json"]


def test_budget_leaves_rows_pending_then_fills_them(tmp_path: Path) -> None:
    root = _root(tmp_path, ("a.json", "b.json", "c.json"))
    c = Counting()
    store = _store(root, c, figures_cache=FiguresCache(root, persist=False))
    rows = runs.run_rows(store, budget_s=0)
    assert [r["status"] for r in rows] == [runs.PENDING] * 3 and c.loads == []
    assert list(rows[0]) == list(runs.COLUMNS) and rows[0]["kind"] == "trace"
    assert runs._interval(rows) == runs.FILL_MS
    # a tiny budget still makes progress: one entry per call at least
    rows = runs.run_rows(store, budget_s=1e-9)
    assert [r["status"] for r in rows] == ["ok", runs.PENDING, runs.PENDING]
    rows = runs.run_rows(store, budget_s=60)
    assert all(r["status"] == "ok" for r in rows) and runs._interval(rows) == runs.REFRESH_MS
    assert not (root / ".hpudash-cache").exists()


def test_unreadable_trace_is_reported_once(tmp_path: Path) -> None:
    root = _root(tmp_path, ("a.json", "bad.json"))
    c = Counting()
    store = _store(root, c)
    rows = {r["run"]: r for r in runs.run_rows(store, budget_s=60)}
    assert rows["bad.json"]["status"].startswith("unreadable: ")
    assert rows["a.json"]["status"] == "ok"
    runs.run_rows(store, budget_s=60)
    assert c.loads.count("bad.json") == 1  # not retried on every refresh


def test_read_only_root_falls_back_to_user_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _root(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    (root / ".hpudash-cache").write_text("a file where the directory would go")
    cache = FiguresCache(root)
    runs.run_rows(_store(root, Counting(), figures_cache=cache), budget_s=60)
    assert cache.path is not None and cache.path.is_relative_to(tmp_path / "xdg")
    again = Counting()
    runs.run_rows(_store(root, again), budget_s=60)
    assert again.analyses == 0
