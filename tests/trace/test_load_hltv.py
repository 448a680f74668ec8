"""The `.hltv` reader, on archives built here in the layout Intel's slicing_analyzer.py reads (a
ZIP with `views/trace_analyzer.json` holding `analyzer_metadata`; no public .hltv exists)."""

from __future__ import annotations

import csv
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

import hpuprof
from hpuprof.analysis.nodes import analyze_nodes
from hpuprof.errors import TraceFormatError
from hpuprof.trace.gaudi_node_spans import NODES_LANE

GAUDI = Path(__file__).resolve().parents[3] / "shared" / "traces" / "gaudi"
ROWS = [
    {"Unit": "TPC", "Node Name": "relu", "Op Type": "relu_fwd_bf16",
     "Start time of node": "10.000000", "End time of node": "12.500000"},
    {"Unit": "MME", "Node Name": "mm", "Op Type": "gemm", "Start time of node": "11.000000",
     "End time of node": "15.000000", "MME Origin Node": "mm", "MME Expected Compute (usec)": 3.5},
]  # fmt: skip


def _hltv(tmp_path: Path, members: dict[str, Any], name: str = "run.hltv") -> Path:
    path = tmp_path / name
    with zipfile.ZipFile(path, "w") as archive:
        for member, content in members.items():
            data = content if isinstance(content, bytes) else json.dumps(content).encode()
            archive.writestr(member, data)
    return path


def _layout(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "views/trace_analyzer.json": {"analyzer_metadata": rows},
        "prof-data/config/prof_config.json": {},
    }


def test_rows_become_unit_lanes_and_node_spans(tmp_path: Path) -> None:
    trace = hpuprof.load(_hltv(tmp_path, _layout(ROWS)), cache=False)
    assert trace.format == "gaudi-hltv"
    kernels = trace.events[trace.events["kind"] == "kernel"].sort_values("ts_ns")
    assert list(kernels["name"].astype(str)) == ["relu", "mm"]
    assert list(kernels["engine"].astype(str)) == ["TPC", "MME"]
    assert list(kernels["dur_ns"]) == [2500, 4000]
    assert trace.args(int(kernels.index[1]))["MME Expected Compute (usec)"] == "3.5"
    assert NODES_LANE in set(trace.threads["name"])
    nodes = {row.node: row for row in analyze_nodes(trace).nodes}
    assert nodes["mm"].unexposed_mme_us == 1.5  # TPC runs 11..12.5 under the MME
    assert nodes["relu"].duration_us == 2.5


def test_no_suffix_is_sniffed(tmp_path: Path) -> None:
    path = _hltv(tmp_path, _layout(ROWS), name="capture")
    assert hpuprof.load(path, cache=False).format == "gaudi-hltv"


def test_intels_table_as_metadata_matches_its_own_times(tmp_path: Path) -> None:
    table = GAUDI / "gaudi3-debug_hw_prof_accel0_001_analyzed_nodes.csv"
    if not table.exists():
        pytest.skip("../shared/traces/gaudi is not present")
    with open(table, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    trace = hpuprof.load(_hltv(tmp_path, _layout(rows)), cache=False)
    report = {row.node: row for row in analyze_nodes(trace).nodes}
    for row in rows:
        assert report[row["Node Name"]].duration_us == pytest.approx(
            float(row["Duration (us)"]), abs=0.0005
        )


def test_a_hardware_csv_inside_is_read(tmp_path: Path) -> None:
    real = GAUDI / "gaudi3-debug_hw_prof_accel0_001.csv"
    if not real.exists():
        pytest.skip("../shared/traces/gaudi is not present")
    members = {**_layout(ROWS[:0]), "prof-data/hw_prof_accel0.csv": real.read_bytes()}
    trace = hpuprof.load(_hltv(tmp_path, members), cache=False)
    assert (trace.events["kind"] == "kernel").sum() == 56
    assert trace.format == "gaudi-hltv" and trace.sources[0].endswith("run.hltv")


@pytest.mark.parametrize(
    ("members", "position", "expected"),
    [
        ({"prof-data/config/prof_config.json": {}}, "views/trace_analyzer.json", "absent"),
        ({"views/trace_analyzer.json": b"{oops"}, "views/trace_analyzer.json byte 1", "JSON"),
        ({"views/trace_analyzer.json": {"x": 1}}, "views/trace_analyzer.json", "analyzer_meta"),
        (
            {"views/trace_analyzer.json": {"analyzer_metadata": [{"Node Name": "a"}]}},
            "views/trace_analyzer.json node row 1",
            "columns",
        ),
    ],
)
def test_bad_archives_say_where(
    tmp_path: Path, members: dict[str, Any], position: str, expected: str
) -> None:
    with pytest.raises(TraceFormatError, match=expected) as caught:
        hpuprof.load(_hltv(tmp_path, members), cache=False)
    assert caught.value.position == position


def test_not_a_zip(tmp_path: Path) -> None:
    path = tmp_path / "broken.hltv"
    path.write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(TraceFormatError, match="ZIP") as caught:
        hpuprof.load(path, cache=False)
    assert caught.value.position == 0
