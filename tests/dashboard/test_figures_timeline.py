"""Figures, tables and the timeline's level of detail as pure functions (no browser)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("dash")

from hpudash import figures
from hpudash import timeline as tl
from hpudash.pages.common import grid

from hpuprof.trace.model import Trace
from tests.dashboard.conftest import HOSTILE
from tests.dashboard.synth import synthetic_trace


@pytest.fixture(scope="module")
def trace() -> Trace:
    return synthetic_trace(3_000, ranks=2)


@pytest.fixture(scope="module")
def report(trace: Trace) -> dict[str, Any]:
    from hpuprof.analysis import analyze

    return analyze(trace).to_dict()


@pytest.fixture(scope="module")
def index(trace: Trace) -> tl.TimelineIndex:
    return tl.build_index(trace)


# --- figures ---------------------------------------------------------------------------------


def test_key_figures(report: dict[str, Any], trace: Trace) -> None:
    figs = figures.key_figures(report, trace)
    steps = figures.step_durations(trace)
    assert figs["steps"] == len(steps) > 0
    assert figs["step_ms"] == round(steps["dur_ns"].mean() / 1e6, 3)
    assert figs["ranks"] == 2 and figs["events"] == len(trace.events)
    assert figs["compilations"] == report["dynamicity"]["compilations"] > 0
    assert figs["fallbacks"] == int(trace.events["fallback"].sum()) > 0
    assert figs["bf16_pct"] == pytest.approx(50.0)  # half the synthetic ops are bf16
    assert figs["device_time"] == "modeled"
    assert 0 < figs["device_util_pct"] < 100
    labels = [label for label, _ in figures.kpi_items(figs)]
    assert "device utilisation (modeled)" in labels


def test_overview_charts_have_data(report: dict[str, Any]) -> None:
    steps = figures.steps_figure(report)
    assert [t.name for t in steps.data] == [name for _, name, _ in figures.STEP_PARTS]
    assert steps.layout.barmode == "stack"
    assert len(steps.data[0].x) == len(report["bottleneck"]["steps"])
    assert sum(steps.data[0].y) > 0  # compute
    ratio = figures.host_device_figure(report)
    host, device = ratio.data
    assert list(host.x) == ["rank 0", "rank 1"]
    # ops nest under ProfilerStep annotations (depth 1): they still count as host busy time
    assert all(0 < v <= 100 for v in host.y) and all(0 < v <= 100 for v in device.y)


def test_empty_report_gives_empty_figures_not_errors() -> None:
    for fn in (figures.steps_figure, figures.host_device_figure, figures.compiles_figure,
               figures.causes_figure, figures.shapes_figure, figures.dtype_figure):  # fmt: skip
        fig = fn({})
        assert fig.data == () and fig.layout.annotations
    assert figures.findings({}) == [] and figures.bucketing_text({}) == ""
    assert all(rows == [] for _, rows in figures.precision_tables({}))


def test_findings_keep_evidence_as_data(report: dict[str, Any]) -> None:
    found = figures.findings(report)
    assert found and {"severity", "title", "metric", "value", "threshold", "evidence"} <= set(
        found[0]
    )
    assert isinstance(found[0]["evidence"], dict)


def test_op_table_attributes_device_time_to_host_ops(trace: Trace) -> None:
    table = figures.op_table(trace)
    dev = trace.events[trace.events["is_device"]]
    # every device op was launched from inside an op: all device time is attributed
    assert table["device_ms"].sum() == pytest.approx(dev["dur_ns"].sum() / 1e6, rel=1e-6)
    mm = table.set_index("name").loc["aten::mm"]
    assert mm["count"] > 0 and mm["dtypes"] == '["c10::BFloat16"]'
    assert table.set_index("name").loc["aten::softmax", "fallbacks"] > 0


def test_compare_flags_regressions(trace: Trace) -> None:
    a = {"step_ms": 10.0, "device_util_pct": 80.0, "compilations": 2, "fallbacks": 0}
    b = {"step_ms": 12.0, "device_util_pct": 79.0, "compilations": 2, "fallbacks": 3}
    by = {d.metric: d for d in figures.compare_figures(a, b)}
    assert by["step_ms"].regression and by["step_ms"].delta_pct == 20.0
    assert not by["device_util_pct"].regression  # -1.25 %: under the threshold
    assert by["fallbacks"].regression and not by["compilations"].regression
    assert by["recompilations"].delta is None
    table = figures.op_table(trace)
    slower = table.assign(host_ms=table["host_ms"] * 1.5)
    ops = figures.compare_ops(table, slower)
    assert ops["regression"].all() and (ops["delta_ms"] > 0).all()
    assert list(ops["delta_ms"]) == sorted(ops["delta_ms"], reverse=True)


def test_stragglers(trace: Trace) -> None:
    rows = figures.stragglers(figures.step_durations(trace), pct=2.0)
    # rank 1's ops run 10 % slower: its steps are ~4 % above the median of the two ranks
    assert [r["rank"] for r in rows if r["straggler"]] == [1]
    assert rows[1]["vs_median_pct"] == pytest.approx(-rows[0]["vs_median_pct"])


def test_trace_strings_are_inert_in_figures_and_grids() -> None:
    assert "<img" not in tl.plot_text(HOSTILE) and "&lt;img" in tl.plot_text(HOSTILE)
    report = {"dynamicity": {"events": [{"recompile": True, "cause_kind": HOSTILE}]}}
    assert all("<img" not in str(x) for x in figures.causes_figure(report).data[0].x)
    g = grid("g", [{"name": HOSTILE}])
    assert all("cellRenderer" not in c for c in g.columnDefs)
    assert g.dangerously_allow_code is False
    for unsafe in (
        {"dangerously_allow_code": True},
        {"columnDefs": [{"cellRenderer": "markdown"}]},
    ):
        with pytest.raises(ValueError):
            grid("g", [], **unsafe)


# --- timeline level of detail ----------------------------------------------------------------


def test_index_tracks_host_threads_then_engines(index: tl.TimelineIndex) -> None:
    labels = [t.label for t in index.tracks]
    assert len(labels) == 8  # 2 ranks x (host thread + MME, TPC, DMA)
    assert [t.is_device for t in index.tracks[:4]] == [False, True, True, True]
    assert labels[0] == "r0 python / python main" and "MME 0" in " ".join(labels)
    assert index.ts.min() == 0 and index.span_ns > 0


def test_markers_for_compiles_syncs_fallbacks_and_replays(
    index: tl.TimelineIndex, trace: Trace
) -> None:
    kinds = {tl.MARKS[k] for k in np.unique(index.mark_kind)}
    assert kinds == {"compile", "sync", "fallback", "graph_replay"}
    ev = trace.events
    for kind, hpu in (("compile", "compile"), ("graph_replay", "graph_replay"), ("sync", "sync")):
        code = tl.MARKS.index(kind)
        assert (index.mark_kind == code).sum() == (ev["hpu_event"] == hpu).sum()
    assert (index.mark_kind == tl.MARKS.index("fallback")).sum() == ev["fallback"].sum()
    assert np.all(np.diff(index.mark_ts) >= 0)
    fig = tl.figure(tl.query(index))
    names = {t.name for t in fig.data}
    assert {"compile marks", "sync marks", "fallback marks", "graph_replay marks"} <= names


def test_zoomed_out_is_aggregated_zoomed_in_is_exact(index: tl.TimelineIndex) -> None:
    whole = tl.query(index, exact_limit=1_000)
    assert whole.mode == "aggregated" and whole.total == len(index.ts) > 1_000
    assert whole.busy.shape == (len(index.tracks), tl.DEFAULT_BUCKETS)
    assert np.all((whole.busy >= 0) & (whole.busy <= 1)) and whole.busy.max() > 0.5
    assert whole.counts.sum() == len(index.ts)
    zoom = tl.query(index, 1_000_000, 1_400_000)
    assert zoom.mode == "exact" and zoom.total == len(zoom.bar_row) > 0
    assert np.all((zoom.bar_end >= 1_000_000) & (zoom.bar_ts <= 1_400_000))
    # the same window switches to aggregated when its slices exceed the limit
    assert tl.query(index, 1_000_000, 1_400_000, exact_limit=zoom.total - 1).mode == "aggregated"
    assert tl.query(index, exact_limit=10**9).mode == "exact"


def test_exact_window_holds_exactly_the_overlapping_slices(index: tl.TimelineIndex) -> None:
    lo, hi = 2_000_000, 2_600_000
    w = tl.query(index, lo, hi)
    brute = np.flatnonzero((index.ts <= hi) & (index.end >= lo))
    assert sorted(w.bar_row.tolist()) == sorted(index.row[brute].tolist())


def test_busy_fraction_matches_brute_force(index: tl.TimelineIndex) -> None:
    w = tl.query(index, buckets=50, exact_limit=0)
    i = 1  # a device engine: top-level slices only
    a, b = int(index.top_offsets[i]), int(index.top_offsets[i + 1])
    ts, end = index.top_ts[a:b], index.top_ts[a:b] + index.top_dur[a:b]
    for k in (0, 17, 49):
        lo, hi = w.edges[k], w.edges[k + 1]
        busy = np.clip(np.minimum(end, hi) - np.maximum(ts, lo), 0, None).sum() / (hi - lo)
        assert w.busy[i, k] == pytest.approx(busy, abs=1e-9)


def test_exact_figure_is_clickable_and_escaped(index: tl.TimelineIndex, trace: Trace) -> None:
    w = tl.query(index, 1_000_000, 1_400_000)
    fig = tl.figure(w, revision="run")
    bars = [t for t in fig.data if t.type == "bar"]
    assert sum(len(t.customdata) for t in bars) == w.total
    row = int(bars[0].customdata[0][1])
    details = tl.event_details(trace, row)
    assert details["name"] == trace.events["name"].iat[row]
    assert tl.event_details(trace, -1) == {} and tl.event_details(trace, 10**9) == {}
    assert fig.layout.uirevision == "run" and fig.layout.clickmode == "event"


@pytest.mark.parametrize(
    "relayout, want",
    [(None, None), ({"autosize": True}, None), ({"xaxis.autorange": True}, (None, None)),
     ({"xaxis.range[0]": 2, "xaxis.range[1]": 1}, (1e6, 2e6)),
     ({"xaxis.range": [0.5, 1.5]}, (5e5, 1.5e6)), ({"xaxis.range[0]": "x", "xaxis.range[1]": 1}, None)],
)  # fmt: skip
def test_window_from_relayout(relayout: dict[str, Any] | None, want: Any) -> None:
    assert tl.window_from_relayout(relayout, 10**9) == want
