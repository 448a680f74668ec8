"""Figures and tables of the pages as pure functions (no browser)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("dash")

from hpudash import figures
from hpudash.pages.common import grid
from hpudash.timeline import plot_text

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
    assert "<img" not in plot_text(HOSTILE) and "&lt;img" in plot_text(HOSTILE)
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
