"""habana_perf_tool's fields (`analysis/perf_tool.py`): exact on a small Gaudi trace, and their
relations on the emulated samples (device ratio = device time / window, engine totals = the
kernels' sums, the Host Summary inside the host's busy time)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import hpuprof
from hpuprof.analysis import analyze
from hpuprof.analysis._common import device_events, step_windows
from hpuprof.analysis.perf_tool import PerfToolRow, analyze_perf_tool
from hpuprof.trace.model import Trace
from tests.tracebuild import make_trace

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"
US = 1000


def _host(name: str, ts: int, dur: int, **kw: Any) -> dict[str, Any]:
    kind = kw.pop("kind", "cpu_op")
    row = {"name": name, "kind": kind, "cat": kw.pop("cat", kind), "pid": "1", "tid": "1"}
    return {**row, "ts_ns": ts * US, "dur_ns": dur * US, **kw}


def _device(name: str, engine: str, tid: str, ts: int, dur: int, **kw: Any) -> dict[str, Any]:
    row = {"name": name, "kind": kw.pop("kind", "kernel"), "cat": "Kernel", "pid": "0"}
    return {**row, "tid": tid, "ts_ns": ts * US, "dur_ns": dur * US, "engine": engine, **kw}


def _small() -> Trace:
    """One 1 ms step: DataLoader 300 µs, an H2D input copy, a compile, a linear; MME (bf16)
    and TPC (fp32) overlapping 50 µs, DMA 30 µs."""
    return make_trace(
        [
            _host("ProfilerStep#1", 0, 1000, kind="user_annotation"),
            _host("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 10, 300),
            _host("aten::_to_copy", 320, 40, correlation=7),
            _host("graph_recipe_1", 370, 100, kind="hpu_runtime", hpu_event="compile"),
            _host("aten::linear", 480, 120),
            _device("Memcpy HtoD", "DMA", "1000", 330, 30, kind="memcpy", correlation=7),
            _device("gemm", "MME", "3000", 500, 100, args={"dataType": "bf16"}),
            _device("add", "TPC", "4000", 550, 200, args={"dataType": "float32"}),
        ]
    )


def test_fields_on_a_small_gaudi_trace() -> None:
    report = analyze_perf_tool(_small())
    (row,) = report.ranks
    assert row == PerfToolRow(
        rank=0,
        window_ns=1000 * US,
        steps=1,
        device_time_ns=280 * US,  # DMA 30 + the MME/TPC union 500..750
        device_ratio_pct=28.0,
        host_ratio_pct=72.0,
        graph_build_ns=120 * US,  # the linear: every other host op is claimed
        graph_build_pct=12.0,
        dataloader_ns=300 * US,
        dataloader_pct=30.0,
        input_ns=40 * US,  # the op whose H2D copy points at it
        input_pct=4.0,
        compile_ns=100 * US,
        compile_pct=10.0,
        compiles=1,
        compiles_per_step=1.0,
        mme_lower_precision_ratio_pct=100.0,
        device_host_overlapping_degree_pct=46.43,  # (30 + 100) / 280
        mme_total_ns=100 * US,
        tpc_total_ns=200 * US,
        dma_total_ns=30 * US,
        mme_tpc_overlap_ns=50 * US,
        idle_total_ns=140 * US,  # device span 330..750 less 280
    )
    (finding,) = report.findings  # DataLoader 30% >= 20%; the rest below it
    assert (finding.metric, finding.threshold_option) == (
        "host_summary_dataloader_pct",
        "host_summary_warn_pct",
    )
    assert "DataLoader" in finding.title and "habana_dataloader" in finding.advice


def test_not_a_gaudi_trace() -> None:
    trace = make_trace([_host("aten::mm", 0, 10)])
    report = analyze_perf_tool(trace)
    assert report.ranks == () and report.findings == ()
    assert "Gaudi" in report.notes[0]


def _engine_sums(trace: Trace, rank: int, lo: int, hi: int) -> dict[str, int]:
    dev = device_events(trace.events)
    dev = dev[dev["rank"] == rank]
    start = np.clip(dev["ts_ns"].to_numpy(), lo, hi)
    end = np.clip(dev["ts_ns"].to_numpy() + dev["dur_ns"].to_numpy(), lo, hi)
    engine = dev["engine"].astype(str).to_numpy()
    return {e: int((end - start)[engine == e].sum()) for e in ("MME", "TPC", "DMA", "NIC")}


@pytest.mark.parametrize("sample", ["emulated_lazy", "emulated_bf16", "emulated_two_ranks"])
def test_relations_on_emulated_traces(sample: str) -> None:
    if not (SAMPLES / sample).is_dir():
        pytest.skip("no sample_traces/")
    trace = hpuprof.load(SAMPLES / sample, cache=False)
    report = analyze_perf_tool(trace)
    assert len(report.ranks) == len(trace.ranks)
    windows = step_windows(trace.events)
    for row in report.ranks:
        w = windows[windows["rank"] == row.rank]
        lo, hi = int(w["start_ns"].min()), int(w["end_ns"].max())
        assert (row.window_ns, row.steps) == (hi - lo, len(w))
        assert row.device_ratio_pct == round(100 * row.device_time_ns / row.window_ns, 2)
        assert row.host_ratio_pct == round(100 - row.device_ratio_pct, 2)
        # one lane per engine class, ops in series: each total is its kernels' sum
        sums = _engine_sums(trace, row.rank, lo, hi)
        assert (row.mme_total_ns, row.tpc_total_ns, row.dma_total_ns) == (
            sums["MME"],
            sums["TPC"],
            sums["DMA"],
        )
        assert row.mme_tpc_overlap_ns <= min(row.mme_total_ns, row.tpc_total_ns)
        # (the device's busy time holds the collectives too: the NIC lane of a multi-card run)
        compute = row.mme_total_ns + row.tpc_total_ns + row.dma_total_ns
        assert row.device_time_ns <= compute + sums["NIC"]
        host = row.graph_build_ns + row.dataloader_ns + row.input_ns + row.compile_ns
        assert 0 < host <= row.window_ns  # disjoint parts of the window
        assert row.compiles_per_step == round(row.compiles / row.steps, 3)
        assert 0 <= row.device_host_overlapping_degree_pct <= 100


def test_lower_precision_ratio_follows_the_dtype() -> None:
    if not (SAMPLES / "emulated_bf16").is_dir():
        pytest.skip("no sample_traces/")
    bf16 = analyze_perf_tool(hpuprof.load(SAMPLES / "emulated_bf16", cache=False))
    fp32 = analyze_perf_tool(hpuprof.load(SAMPLES / "emulated_lazy", cache=False))
    assert bf16.ranks[0].mme_lower_precision_ratio_pct == 100.0
    assert fp32.ranks[0].mme_lower_precision_ratio_pct == 0.0
    metrics = {f.metric for f in fp32.findings}
    assert "mme_lower_precision_ratio_pct" in metrics  # Intel's autocast recommendation
    assert "mme_lower_precision_ratio_pct" not in {f.metric for f in bf16.findings}


def test_registered_beside_the_bottleneck_report() -> None:
    report = analyze(_small(), "bottleneck,perf_tool")
    assert {f.report for f in report.findings} >= {"perf_tool"}
