"""The dashboard on Gaudi traces: the Nodes page (Intel's Analyzed Nodes) and a hardware
trace's engines on the timeline, built in-process (the browser test reads them in Chromium)."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dash")

from hpudash.app import render_page
from hpudash.data import DataStore
from hpudash.ids import Id
from hpudash.timeline_index import build_index

import hpuprof
from hpuprof.analysis import analyze
from hpuprof.analysis.nodes import MODELED
from tests.conftest import SAMPLE_TRACES
from tests.dashboard.test_pages import _components

GAUDI = Path(__file__).resolve().parents[3] / "shared" / "traces" / "gaudi"
HW_CSV = GAUDI / "gaudi3-debug_hw_prof_accel0_001.csv"
INTEL_NODES = GAUDI / "gaudi3-debug_hw_prof_accel0_001_analyzed_nodes.csv"


def _by_id(body: Any, id_: str) -> Any:
    return next((c for c in _components(body) if str(getattr(c, "id", "")) == id_), None)


def _hw_store(tmp_path: Path) -> tuple[DataStore, str]:
    if not HW_CSV.is_file():
        pytest.skip(f"{HW_CSV} is absent")
    shutil.copy(HW_CSV, tmp_path / "hw.csv")
    shutil.copy(INTEL_NODES, tmp_path / "hw_analyzed_nodes.csv")
    return DataStore(tmp_path, disk=False), "hw.csv"


def _report_rows(path: Path) -> list[dict[str, Any]]:
    return list(analyze(hpuprof.load(path), reports=["nodes"]).to_dict()["nodes"]["nodes"])


def test_nodes_page_of_a_hardware_trace_shows_the_report_under_intels_headers(
    tmp_path: Path,
) -> None:
    store, key = _hw_store(tmp_path)
    body = render_page(store, "/nodes", f"?run={key}")
    grid = _by_id(body, Id.NODES_GRID)
    assert grid is not None and _by_id(body, Id.NODES_ABSENT) is None
    expected = _report_rows(tmp_path / key)
    fields = [c["field"] for c in grid.columnDefs]
    assert len(grid.rowData) == len(expected) == 4
    for shown, row in zip(grid.rowData, expected, strict=True):
        assert shown == {f: row[f] for f in fields}  # the report's values, not re-computed
    assert {"duration_us", "active_us", "num_activations", "tpc_parallel_execution_pct"} <= set(fields)  # fmt: skip
    with INTEL_NODES.open(newline="") as f:
        intel_headers = set(next(csv.reader(f)))
    headers = [c["headerName"] for c in grid.columnDefs if c["field"] != "graph"]
    assert [h for h in headers if h not in intel_headers] == []  # every header is Intel's own
    text = repr(body)
    assert "Intel's analyzed-nodes rows" in text  # where the iteration split comes from
    assert "MME expected vs actual" in text  # the note on what is left out, and why
    advice = _by_id(body, Id.NODES_FINDINGS)
    assert "MME Lower Precision Ratio" in repr(advice) and 'device_type="hpu"' in repr(advice)


def test_nodes_page_of_an_emulated_run_says_its_times_are_modeled(tmp_path: Path) -> None:
    sample = SAMPLE_TRACES / "emulated_eager"
    shutil.copytree(sample, tmp_path / "emulated_eager")
    store = DataStore(tmp_path, disk=False)
    body = render_page(store, "/nodes", "?run=emulated_eager")
    grid = _by_id(body, Id.NODES_GRID)
    expected = _report_rows(tmp_path / "emulated_eager")
    assert grid is not None and len(grid.rowData) == len(expected) > 0
    fields = [c["field"] for c in grid.columnDefs]
    assert grid.rowData[0] == {f: expected[0][f] for f in fields}
    assert MODELED in repr(body)


def test_nodes_page_of_a_cpu_trace_says_why_there_is_no_table(tmp_path: Path) -> None:
    shutil.copytree(SAMPLE_TRACES / "cpu_torch_profiler", tmp_path / "cpu")
    body = render_page(DataStore(tmp_path, disk=False), "/nodes", "?run=cpu/trace.pt.trace.json")
    absent = _by_id(body, Id.NODES_ABSENT)
    assert absent is not None and _by_id(body, Id.NODES_GRID) is None
    assert "No Gaudi graph nodes in this trace (device: CPU)." in repr(absent)
    assert "habana" not in repr(body).lower()  # no Gaudi advice on a CPU trace


def test_timeline_groups_a_hardware_traces_engines_under_its_device() -> None:
    if not HW_CSV.is_file():
        pytest.skip(f"{HW_CSV} is absent")
    idx = build_index(hpuprof.load(HW_CSV, cache=False))
    device = [g for g, group in enumerate(idx.groups) if group.is_device]
    assert [idx.groups[g].label for g in device] == ["/device:HPU:0 (accel0)"]
    assert len(idx.groups) == 1  # the counters too: no separate "counters" group
    labels = [t.label for t in idx.tracks if t.group == device[0]]
    engines = [t.label for t in idx.tracks if not t.counter and t.label.startswith("[")]
    assert engines[:9] == [f"[HD{d}] MME" for d in range(8)] + ["[HD0] TPC 0"]
    assert engines[8:16] == [f"[HD{d}] TPC 0" for d in range(8)]
    assert len([x for x in engines if " TPC " in x]) == 48
    slices = [x for x in labels if "Cache Slice" in x]
    assert slices == [f"Outgoing HBM partial writes ([D{d}] Cache Slice)" for d in range(4)]
    counters = [t for t in idx.tracks if t.counter]
    assert counters and {t.group for t in counters} == {device[0]}


def test_nodes_page_of_an_hltv_shows_its_nodes(tmp_path: Path) -> None:
    from tests.trace.test_load_hltv import ROWS, _hltv, _layout

    path = _hltv(tmp_path, _layout(ROWS))
    body = render_page(DataStore(tmp_path, disk=False), "/nodes", f"?run={path.name}")
    grid = _by_id(body, Id.NODES_GRID)
    expected = _report_rows(path)
    assert grid is not None and [r["node"] for r in grid.rowData] == ["relu", "mm"]
    fields = [c["field"] for c in grid.columnDefs]
    assert grid.rowData == [{f: row[f] for f in fields} for row in expected]
    assert {r["node"]: r["unexposed_mme_us"] for r in grid.rowData}["mm"] == 1.5
