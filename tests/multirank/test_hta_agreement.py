"""The distributed report's HTA metrics agree with HTA 0.5.0, run live on the shared traces.

HTA rounds timestamps to microseconds by default (ceil start, floor end); its own switch
`HTA_DISABLE_NS_ROUNDING=1` keeps nanoseconds, so both sides see the same times. HTA 0.5.0's
critical path calls `DataFrame.drop(axis=1, columns=...)`, which pandas 3 rejects: the test
lets that call through (a compatibility shim for the oracle only, undone after the test).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import hpuprof
from hpuprof.analysis._common import step_windows
from hpuprof.analysis.distributed import RankPartial, rank_partial
from hpuprof.analysis.distributed_critical_path import critical_path
from hpuprof.analysis.distributed_streams import HTA_LAUNCH_APIS, launches

TRACES = {
    "trace_filter/sampled_rank-0.json.gz": 0,
    "df_index_resolver/df_index_resolver.json.gz": 1,
    "nccl_parser_config/nccl_data.json.gz": 0,
}

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore")]


def _drop_compat(monkeypatch: pytest.MonkeyPatch) -> None:
    drop = pd.DataFrame.drop

    def compat(self: pd.DataFrame, labels: Any = None, *, axis: Any = 0, **kw: Any) -> Any:
        if kw.get("columns") is not None or kw.get("index") is not None:
            return drop(self, labels, **kw)
        return drop(self, labels, axis=axis, **kw)

    monkeypatch.setattr(pd.DataFrame, "drop", compat)


class Case:
    def __init__(self, path: Path, rank: int) -> None:
        ta_mod = pytest.importorskip("hta.trace_analysis")
        self.rank = rank
        self.hta = ta_mod.TraceAnalysis(
            trace_files={rank: str(path)}, include_last_profiler_step=True
        )
        self.trace = hpuprof.load(path)
        self.ours: RankPartial = rank_partial(self.trace.events, rank)


@pytest.fixture(scope="module", params=sorted(TRACES))
def case(request: pytest.FixtureRequest, shared_kineto_dir: Path) -> Iterator[Case]:
    mp = pytest.MonkeyPatch()
    mp.setenv("HTA_DISABLE_NS_ROUNDING", "1")
    logging.disable(logging.WARNING)
    try:
        yield Case(shared_kineto_dir / "tests" / "data" / request.param, TRACES[request.param])
    finally:
        logging.disable(logging.NOTSET)
        mp.undo()


def test_comm_comp_overlap(case: Case) -> None:
    hta = case.hta.get_comm_comp_overlap(visualize=False).iloc[0]["comp_comm_overlap_pctg"]
    assert case.ours.overlap.overlap_pct == pytest.approx(hta, abs=1.0)


def test_idle_breakdown_per_stream(case: Case) -> None:
    hta, _ = case.hta.get_idle_time_breakdown(ranks=[case.rank], visualize=False)
    ours = {(r.stream, r.category): r for r in case.ours.idle}
    assert {int(s) for s in hta["stream"]} == {r.stream for r in case.ours.idle}
    for row in hta.to_dict("records"):
        mine = ours[(int(row["stream"]), row["idle_category"])]
        assert mine.ratio == pytest.approx(row["idle_time_ratio"], abs=0.01)
        # HTA's time base is microseconds; 1% of the stream's idle time as the bound
        total = sum(r.idle_ns for r in case.ours.idle if r.stream == mine.stream)
        assert mine.idle_ns == pytest.approx(row["idle_time"] * 1000, abs=0.01 * total)


def test_queue_length_summary(case: Case) -> None:
    hta = case.hta.get_queue_length_summary(ranks=[case.rank])["queue_length"]
    ours = {r.stream: r for r in case.ours.queue}
    for (_, stream), row in hta.iterrows():
        mine = ours[int(stream)]
        assert mine.points == row["count"]
        assert mine.mean == pytest.approx(row["mean"], rel=0.01)
        assert mine.max == pytest.approx(row["max"], abs=1)


def test_memory_bandwidth_summary(case: Case) -> None:
    hta = case.hta.get_memory_bw_summary(ranks=[case.rank])["memory_bw_gbps"]
    ours = {r.kind: r for r in case.ours.memory}
    assert {k for _, k in hta.index} == set(ours)
    for (_, kind), row in hta.iterrows():
        assert ours[kind].mean_gbps == pytest.approx(row["mean"], rel=0.01)


def test_launch_statistics(case: Case) -> None:
    hta = case.hta.get_cuda_kernel_launch_stats(ranks=[case.rank], visualize=False)[case.rank]
    ev = case.trace.events
    from hpuprof.analysis.distributed_streams import device_rows

    pairs = launches(ev, device_rows(ev))
    assert set(pairs["api"]) <= HTA_LAUNCH_APIS  # these traces use no launch HTA ignores
    row = case.ours.launch
    assert row is not None
    assert row.launches == len(hta)
    assert row.cpu_mean_ns == pytest.approx(hta["cpu_duration"].mean() * 1000, rel=0.01)
    assert row.device_mean_ns == pytest.approx(hta["gpu_duration"].mean() * 1000, rel=0.01)
    assert row.delay_mean_ns == pytest.approx(hta["launch_delay"].mean() * 1000, rel=0.01)


def test_critical_path_of_first_step(case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    _drop_compat(monkeypatch)
    graph, ok = case.hta.critical_path_analysis(
        rank=case.rank, annotation="ProfilerStep", instance_id=0
    )
    assert ok
    bd = graph.get_critical_path_breakdown()
    hta_len = bd["duration"].sum() * 1000
    hta_share = (bd.groupby("bound_by")["duration"].sum() / bd["duration"].sum() * 100).to_dict()
    first = step_windows(case.trace.events).sort_values("start_ns").iloc[0]
    row, edges = critical_path(
        case.trace.events,
        case.rank,
        int(first["step"]),
        int(first["start_ns"]),
        int(first["end_ns"]),
    )
    assert row is not None and edges
    assert row.length_ns == pytest.approx(hta_len, rel=0.01)
    ours = {
        "cpu_bound": row.cpu_bound_pct,
        "gpu_compute_bound": row.compute_bound_pct,
        "gpu_communication_bound": row.communication_bound_pct,
        "gpu_kernel_kernel_overhead": row.kernel_kernel_overhead_pct,
        "gpu_kernel_launch_overhead": row.launch_overhead_pct,
    }
    for key, share in ours.items():
        assert share == pytest.approx(hta_share.get(key, 0.0), abs=1.0), key
    # the overlay is a connected path through the trace's own events
    assert sum(e.weight_ns for e in edges) == row.length_ns
    for a, b in itertools.pairwise(edges):
        assert a.dst_ts_ns == b.src_ts_ns


SYNC_TRACES = (
    "critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
    "critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz",
    "critical_path/cuda_event_sync/event_sync_trace.json.gz",
    "critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz",
)


@pytest.mark.parametrize("name", SYNC_TRACES)
def test_critical_path_with_cuda_syncs(
    name: str, shared_kineto_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HTA's critical-path test traces: stream, context and event syncs (cuda_sync events)."""
    ta_mod = pytest.importorskip("hta.trace_analysis")
    monkeypatch.setenv("HTA_DISABLE_NS_ROUNDING", "1")
    _drop_compat(monkeypatch)
    logging.disable(logging.WARNING)
    path = shared_kineto_dir / "tests" / "data" / name
    try:
        ta = ta_mod.TraceAnalysis(trace_files={0: str(path)}, include_last_profiler_step=True)
        trace = hpuprof.load(path)
        windows = step_windows(trace.events)
        if len(windows):
            first = windows.sort_values("start_ns").iloc[0]
            step, lo, hi = int(first["step"]), int(first["start_ns"]), int(first["end_ns"])
            annotation = "ProfilerStep"
        else:  # no steps: the whole trace, as HTA's annotation ""
            ev = trace.events
            step, lo, hi = -1, int(ev["ts_ns"].min()), int((ev["ts_ns"] + ev["dur_ns"]).max())
            annotation = ""
        graph, ok = ta.critical_path_analysis(rank=0, annotation=annotation, instance_id=0)
    finally:
        logging.disable(logging.NOTSET)
    assert ok
    bd = graph.get_critical_path_breakdown()
    row, _ = critical_path(trace.events, 0, step, lo, hi)
    assert row is not None
    assert row.length_ns == pytest.approx(bd["duration"].sum() * 1000, rel=0.01)
    shares = (bd.groupby("bound_by")["duration"].sum() / bd["duration"].sum() * 100).to_dict()
    assert row.cpu_bound_pct == pytest.approx(shares.get("cpu_bound", 0.0), abs=1.0)
    assert row.compute_bound_pct == pytest.approx(shares.get("gpu_compute_bound", 0.0), abs=1.0)
    assert row.launch_overhead_pct == pytest.approx(
        shares.get("gpu_kernel_launch_overhead", 0.0), abs=1.0
    )
