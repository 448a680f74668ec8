"""The `nodes` report against Intel's own "Analyzed Nodes" table of the shared Gaudi 3 trace, and
on small hand-made hardware traces whose answers are worked out by hand."""

from __future__ import annotations

import csv
import dataclasses
import shutil
from pathlib import Path

import pytest

import hpuprof
from hpuprof.analysis.nodes import (
    MODELED,
    NOT_COMPUTED,
    NOT_COMPUTED_KINETO,
    ONE_ROW_PER_NAME,
    NodeRow,
    NodesReport,
    analyze_nodes,
)
from hpuprof.trace.model import Trace

GAUDI = Path(__file__).resolve().parents[3] / "shared" / "traces" / "gaudi"
TRACE = GAUDI / "gaudi3-debug_hw_prof_accel0_001.csv"
INTEL = GAUDI / "gaudi3-debug_hw_prof_accel0_001_analyzed_nodes.csv"

MATCHED = {  # Intel's header -> our field
    "Unit": "unit",
    "Node Name": "node",
    "Op Type": "op_type",
    "Start time of node": "start_us",
    "End time of node": "end_us",
    "Duration (us)": "duration_us",
    "Active (us)": "active_us",
    "Min single engine (us)": "min_single_engine_us",
    "Max single engine (us)": "max_single_engine_us",
    "Diff max min single engine (us)": "diff_max_min_single_engine_us",
    "Avg single engine (us)": "avg_single_engine_us",
    "Avg single engine active (us)": "avg_single_engine_active_us",
    "Variance single engine (us²)": "variance_single_engine_us2",
    "Num activations": "num_activations",
    "Parallel Engines": "parallel_engines",
    "Unexposed tpc (us)": "unexposed_tpc_us",
    "Exposed tpc (us)": "exposed_tpc_us",
    "Unexposed mme (us)": "unexposed_mme_us",
    "Exposed mme (us)": "exposed_mme_us",
    "Exposed dma (us)": "exposed_dma_us",
    "MME Parallel Execution (%)": "mme_parallel_execution_pct",
    "TPC Parallel Execution (%)": "tpc_parallel_execution_pct",
}
FROM_THE_COMPILER = {  # filled by Intel from the graph compiler's data, not the hardware events
    "Unique node id",  # 0 for every node here: the compiler's node ids are not in the CSV
    "Bundle duration (us)",  # 0: no bundle (Bundle index is nan): the compiler's slicing
    "All inputs in sram",  # 0: tensor placement
    "Output Tensor Reduction",  # 1: the compiler's reduction flag
}
COUNTS = {"Num activations", "Parallel Engines", "MME Parallel Execution (%)"}
COUNTS |= {"TPC Parallel Execution (%)"}  # integers in Intel's table: equal exactly
TIMESTAMPS = {"Start time of node", "End time of node"}
PRINT_RESOLUTION = 0.0005  # Intel's values are ns-rounded µs: half a ns either way


def _empty(value: str) -> bool:
    return value in ("", "nan", "[]", "[Error]")


@pytest.fixture(scope="module")
def intel() -> list[dict[str, str]]:
    if not INTEL.exists():
        pytest.skip("../shared/traces/gaudi is not present")
    with open(INTEL, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def ours(intel: list[dict[str, str]]) -> dict[str, NodeRow]:
    report = analyze_nodes(hpuprof.load(TRACE, cache=False))
    assert report.iterations_from == "Intel's analyzed-nodes rows"
    return {row.node: row for row in report.nodes}


def test_every_column_intel_fills_is_matched_or_explained(intel: list[dict[str, str]]) -> None:
    filled = {c for row in intel for c, v in row.items() if not _empty(v)}
    assert filled - set(MATCHED) == FROM_THE_COMPILER


def test_same_nodes_as_intel(intel: list[dict[str, str]], ours: dict[str, NodeRow]) -> None:
    assert sorted(ours) == sorted(row["Node Name"] for row in intel)


@pytest.mark.parametrize("column", sorted(MATCHED))
def test_column_matches_intel_within_1_pct(
    column: str, intel: list[dict[str, str]], ours: dict[str, NodeRow]
) -> None:
    for row in intel:
        theirs = row[column]
        mine = getattr(ours[row["Node Name"]], MATCHED[column])
        where = f"{row['Node Name']}: {column}"
        if _empty(theirs):
            assert mine is None or column.endswith("(%)"), where  # nan: ours is None too
            continue
        try:
            expected = float(theirs)
        except ValueError:
            assert mine == theirs, where  # text
            continue
        if column in COUNTS:
            assert mine == int(expected), where
        elif column in TIMESTAMPS:
            assert mine == pytest.approx(expected, abs=PRINT_RESOLUTION), where
        else:
            tolerance = max(0.01 * abs(expected), PRINT_RESOLUTION)
            assert mine is not None and abs(mine - expected) <= tolerance, (where, mine)


def test_without_intels_rows_one_row_per_node_name(tmp_path: Path) -> None:
    if not TRACE.exists():
        pytest.skip("../shared/traces/gaudi is not present")
    report = analyze_nodes(hpuprof.load(shutil.copy(TRACE, tmp_path / "t.csv"), cache=False))
    assert report.iterations_from == "node names" and ONE_ROW_PER_NAME in report.notes
    tpc = next(r for r in report.nodes if r.unit == "TPC")
    assert (tpc.num_activations, tpc.parallel_engines) == (48, 48)
    assert tpc.active_us == pytest.approx(1.131 + 1.878 + 0.713, abs=0.002)


HEADER = (
    "Name,Trace Source,Engine,Event type,Timestamp[usec],Recipe ID,Device,Operation,"
    "HW Event description"
)


def _hw(tmp_path: Path, activations: list[tuple[str, str, str, str]]) -> Trace:
    """A hardware CSV of (node, engine, begin µs, end µs) activations, rows in time order."""
    rows = [
        (float(t), n, e, k, t) for n, e, b, d in activations for k, t in (("BEGIN", b), ("END", d))
    ]
    lines = [HEADER] + [f"{n},HW,{e},{k},{t},7,accel0,op_{n},x" for _, n, e, k, t in sorted(rows)]
    path = tmp_path / "hand.csv"
    path.write_text("\n".join(lines) + "\n")
    return hpuprof.load(path, cache=False)


def _by_node(report: NodesReport) -> dict[str, NodeRow]:
    return {row.node: row for row in report.nodes}


def test_overlap_hides_time_both_ways(tmp_path: Path) -> None:
    trace = _hw(
        tmp_path,
        [
            ("conv", "[HD0] MME", "100.000", "102.000"),
            ("relu", "[HD1] TPC 3", "100.600", "103.100"),
            ("relu", "[HD1] TPC 4", "103.500", "104.000"),
            ("copy", "[D0] EDMA 1", "101.000", "105.000"),
        ],
    )
    rows = _by_node(analyze_nodes(trace))
    conv, relu, copy = rows["conv"], rows["relu"], rows["copy"]
    assert (conv.unexposed_mme_us, conv.exposed_mme_us) == (1.4, 0.6)  # TPC from 100.6
    assert (relu.unexposed_tpc_us, relu.exposed_tpc_us) == (1.4, 1.6)  # 2.5 + 0.5 busy
    assert relu.exposed_mme_us is None and conv.exposed_tpc_us is None
    # DMA 101..105: MME or TPC busy 101..103.1 and 103.5..104 (2.6, MME and TPC together
    # counted once) -> 1.4 exposed
    assert copy.exposed_dma_us == 1.4
    assert (relu.duration_us, relu.active_us) == (3.4, 3.0)
    assert relu.tpc_parallel_execution_pct == 88  # floor(100 * 3.0 / 3.4)
    assert (relu.min_single_engine_us, relu.max_single_engine_us) == (0.5, 2.5)
    assert relu.variance_single_engine_us2 == 1.0  # population variance of 0.5 and 2.5
    assert relu.op_type == "op_relu" and relu.graph == "7"


def test_an_engine_twice_counts_once_as_an_engine(tmp_path: Path) -> None:
    trace = _hw(
        tmp_path,
        [("add", "[HD0] TPC 0", "1.0", "2.0"), ("add", "[HD0] TPC 0", "3.0", "4.0")],
    )
    add = _by_node(analyze_nodes(trace))["add"]
    assert (add.num_activations, add.parallel_engines) == (2, 1)
    assert (add.avg_single_engine_us, add.avg_single_engine_active_us) == (3.0, 2.0)


def test_modeled_device_times_say_why_expected_vs_actual_is_left_out(tmp_path: Path) -> None:
    trace = _hw(tmp_path, [("a", "[HD0] MME", "1.0", "2.0")])
    modeled = dataclasses.replace(trace, device_time="modeled")
    assert MODELED in analyze_nodes(modeled).notes
    assert MODELED not in analyze_nodes(trace).notes
    assert NOT_COMPUTED in analyze_nodes(trace).notes  # (a hardware CSV: the CSV's reason)


def test_an_emulated_run_has_rows_and_says_its_times_are_modeled() -> None:
    sample = Path(__file__).resolve().parents[2] / "sample_traces" / "emulated_lazy" / "traces"
    report = analyze_nodes(hpuprof.load(sample / "gaudi_train-rank0.pt.trace.json", cache=False))
    assert MODELED in report.notes
    # a torch.profiler trace: its own reason for the MME columns, not the hardware CSV's
    assert NOT_COMPUTED_KINETO in report.notes and NOT_COMPUTED not in report.notes
    units = {row.unit for row in report.nodes}
    assert {"MME", "TPC"} <= units
    for row in report.nodes:
        assert row.active_us <= row.duration_us + 0.001
        assert row.exposed_mme_us is None or row.exposed_mme_us <= row.active_us + 0.001


def test_no_engine_slices_is_an_empty_report(tmp_path: Path) -> None:
    trace = _hw(tmp_path, [("a", "[D0] Cache Slice", "1.0", "2.0")])  # no MME / TPC / DMA
    report = analyze_nodes(trace)
    assert report.nodes == () and report.iterations_from == "none"
    assert any("No MME / TPC / DMA slices" in note for note in report.notes)
