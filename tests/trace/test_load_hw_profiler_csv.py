"""The Gaudi hardware-profiler CSV reader: the real Gaudi 3 trace in ../shared (counts checked
against the stdlib csv module) and small hand-made files for the edge cases and bad input."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

import hpuprof
from hpuprof.errors import TraceFormatError
from hpuprof.trace.formats import named_format
from hpuprof.trace.gaudi_node_spans import NODES_LANE
from hpuprof.trace.model import Trace

GAUDI = Path(__file__).resolve().parents[3] / "shared" / "traces" / "gaudi"
REAL = GAUDI / "gaudi3-debug_hw_prof_accel0_001.csv"
HEADER = (
    "Name,Trace Source,Engine,Event type,Timestamp[usec],recipeHandle,streamHandle,Recipe ID,"
    "Recipe name,Context ID,Device,Operation,Data Type,HW Event port,HW Event description,"
    "SPMU value,BMON min,BMON avg,BMON max,BMON matches,BMON configured cycles,"
    "NIC Packets amount,Misc"
)


def _row(name: str, engine: str, kind: str, ts: str, desc: str = "", spmu: str = "") -> str:
    recipe = "0x1,0x2,7,rec.g_7,0" if kind != "COUNTER" else ",,,,"
    op = "Convolution,bf16" if kind != "COUNTER" else ","
    return f"{name},HW,{engine},{kind},{ts},{recipe},accel1,{op},1,{desc},{spmu},,,,,,,"


def _write(tmp_path: Path, rows: list[str], *, end: str = "\n") -> Path:
    path = tmp_path / "hw.csv"
    path.write_text("\n".join([HEADER, *rows]) + end)
    return path


SMALL = [
    _row("conv", "[HD0] MME", "BEGIN", "100.000250", "SB0_START_EVT"),
    _row("relu", "[HD1] TPC 3", "INSTANT", "100.500000", "TPC_QMAN_CMD_EXE"),
    _row("relu", "[HD1] TPC 3", "BEGIN", "100.600000", "TPC_SPU_START"),
    _row("conv", "[HD0] MME", "END", "102.000750", "WB0_END"),
    _row("Outgoing HBM partial writes", "[D0] Cache Slice", "COUNTER", "102.5", "SPMU", "143"),
    _row("relu", "[HD1] TPC 3", "END", "103.100000", "TPC_SPU_START_TO_SPU_HALT"),
]


@pytest.fixture(scope="module")
def real() -> Trace:
    if not REAL.exists():
        pytest.skip("../shared/traces/gaudi is not present")
    return hpuprof.load(REAL, cache=False)


def test_real_trace_counts_match_the_rows(real: Trace) -> None:
    with open(REAL, newline="") as handle:
        rows = list(csv.DictReader(handle))
    kinds = [r["Event type"] for r in rows]
    events = real.events
    kernels = events[events["kind"] == "kernel"]
    assert len(kernels) == kinds.count("BEGIN") == kinds.count("END") == 56
    assert (events["kind"] == "instant").sum() == kinds.count("INSTANT")
    assert len(real.counters) == kinds.count("COUNTER")
    assert real.format == "gaudi-hw-profiler-csv" and real.device_time == "measured"
    lanes = set(real.threads["name"])
    assert {r["Engine"] for r in rows} <= lanes
    assert NODES_LANE in lanes  # Intel's analyzed-nodes table lies beside it
    engines = dict(zip(kernels["name"].astype(str), kernels["engine"].astype(str), strict=False))
    assert engines == {"g_1_conv_0": "MME", "g_1_conv_0_tpc_packing": "TPC"}
    assert set(kernels["graph_id"].astype(str)) == {"61055"}
    assert (kernels["device"] == 0).all()
    assert real.metadata[0]["gaudi_hw_profiler"]["recipes"]["61055"].endswith("debug.g_1")


def test_real_trace_times_are_the_rows_times(real: Trace) -> None:
    first = real.events[real.events["kind"] == "kernel"].iloc[0]
    args = real.args(int(first.name))
    assert args["Timestamp[usec]"] == "554804519.937268"  # the exact text
    assert args["end Timestamp[usec]"] == "554804520.095267"
    assert first["ts_ns"] == 554804519937 and first["dur_ns"] == 158
    assert real.threads.set_index("tid").loc[str(first["tid"]), "name"] == "[HD0] TPC 5"


def test_without_the_table_beside_it_no_node_spans(tmp_path: Path) -> None:
    if not REAL.exists():
        pytest.skip("../shared/traces/gaudi is not present")
    alone = shutil.copy(REAL, tmp_path / "copy.csv")
    trace = hpuprof.load(alone, cache=False)
    assert NODES_LANE not in set(trace.threads["name"])
    assert (trace.events["kind"] == "kernel").sum() == 56


def test_small_file_lanes_slices_instants_counters(tmp_path: Path) -> None:
    trace = hpuprof.load(_write(tmp_path, SMALL), cache=False)
    events = trace.events
    kernels = events[events["kind"] == "kernel"].sort_values("ts_ns")
    assert list(kernels["name"].astype(str)) == ["conv", "relu"]
    assert list(kernels["dur_ns"]) == [2001, 2500]  # 102.000750 - 100.000250 µs, rounded ns
    assert list(kernels["engine"].astype(str)) == ["MME", "TPC"]
    assert set(kernels["device"]) == {1}  # "accel1"
    instants = events[events["kind"] == "instant"]
    assert list(instants["name"].astype(str)) == ["TPC_QMAN_CMD_EXE"]
    assert trace.args(int(instants.index[0]))["node"] == "relu"
    counter = trace.counters.iloc[0]
    assert (counter["name"], counter["series"], counter["value"]) == (
        "Outgoing HBM partial writes",
        "[D0] Cache Slice",
        143.0,
    )
    assert "/device:HPU:1 (accel1)" in set(trace.processes["name"])


def test_converts_to_perfetto_and_json_and_back(tmp_path: Path) -> None:
    source = _write(tmp_path, SMALL)
    for target in ("out.perfetto-trace", "out.json"):
        named_format(target).write(hpuprof.load(source, cache=False), tmp_path / target)
        back = hpuprof.load(tmp_path / target, cache=False)
        kernels = back.events[back.events["kind"] == "kernel"]
        assert sorted(kernels["name"].astype(str)) == ["conv", "relu"], target
        assert {"[HD0] MME", "[HD1] TPC 3"} <= set(back.threads["name"]), target


def test_unmatched_begin_is_left_out_with_a_warning(tmp_path: Path) -> None:
    rows = [*SMALL, _row("conv", "[HD2] MME", "BEGIN", "104.0", "SB0_START_EVT")]
    with pytest.warns(UserWarning, match=r"1 BEGIN / END .* line 8"):
        trace = hpuprof.load(_write(tmp_path, rows), cache=False)
    assert (trace.events["kind"] == "kernel").sum() == 2


def test_truncated_last_line_is_salvaged(tmp_path: Path) -> None:
    rows = [*SMALL, _row("relu", "[HD1] TPC 3", "BEGIN", "104.0")[:25]]
    with pytest.warns(UserWarning, match="truncated trace"):
        trace = hpuprof.load(_write(tmp_path, rows, end=""), cache=False)
    assert (trace.events["kind"] == "kernel").sum() == 2


@pytest.mark.parametrize(
    ("rows", "where", "expected"),
    [
        ([SMALL[0], _row("x", "[HD0] MME", "END", "abc")], "line 3", "Timestamp"),
        ([SMALL[0], _row("x", "[HD0] MME", "STOP", "1.0")], "line 3", "Event type"),
        ([SMALL[0], _row("x", "", "END", "1.0")], "line 3", "Engine"),
        ([SMALL[0], "a,b,c", SMALL[1]], "line 3", "23 comma-separated fields"),
        ([SMALL[0], _row("c", "[D0] Cache", "COUNTER", "1.0", "SPMU", "lots")], "line 3", "number"),
    ],
)
def test_bad_rows_name_their_line(
    tmp_path: Path, rows: list[str], where: str, expected: str
) -> None:
    with pytest.raises(TraceFormatError, match=expected) as caught:
        hpuprof.load(_write(tmp_path, rows), cache=False)
    assert caught.value.position == where
    assert caught.value.path.endswith("hw.csv")


def test_a_csv_without_the_columns_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(TraceFormatError) as caught:
        hpuprof.load(path, cache=False)
    assert caught.value.position == "line 1"


def test_bytes_that_are_not_utf8_name_their_line(tmp_path: Path) -> None:
    path = _write(tmp_path, SMALL)
    data = path.read_bytes().replace(b"relu", b"re\xfflu", 1)
    path.write_bytes(data)
    with pytest.raises(TraceFormatError, match="UTF-8") as caught:
        hpuprof.load(path, cache=False)
    assert caught.value.position == "line 3"


@pytest.mark.parametrize(
    "marked",
    [
        _row("QQQ", "[HD1] TPC 3", "INSTANT", "100.5"),  # a coded column (parsed as a dictionary)
        _row("relu", "[HD1] TPC 3", "INSTANT", "100.5", "", "QQQ"),  # a value column, not a counter
        _row("relu", "[HD1] TPC 3", "INSTANT", "100.5").replace("rec.g_7", "QQQ"),  # Recipe name
    ],
)
def test_bytes_that_are_not_utf8_in_any_column_read_are_refused(
    tmp_path: Path, marked: str
) -> None:
    path = _write(tmp_path, [SMALL[0], marked, *SMALL[2:]])
    path.write_bytes(path.read_bytes().replace(b"QQQ", b"Q\xffQ"))
    with pytest.raises(TraceFormatError, match="UTF-8") as caught:
        hpuprof.load(path, cache=False)
    assert caught.value.position == "line 3"


def test_a_header_alone_is_an_empty_trace(tmp_path: Path) -> None:
    trace = hpuprof.load(_write(tmp_path, []), cache=False)
    assert len(trace.events) == 0 and len(trace.counters) == 0
    assert trace.format == "gaudi-hw-profiler-csv"


def test_a_directory_skips_intels_node_tables(tmp_path: Path) -> None:
    from hpuprof.trace.trace_file import trace_files

    trace = _write(tmp_path, SMALL)
    (tmp_path / "hw_analyzed_nodes.csv").write_text("Unit,Node Name\n")
    assert trace_files(tmp_path) == [trace]
