"""Pages' figures (`hpuprof.render.figures`, the HTML report's too), tables and key figures from
the report view, as pure functions (no browser)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("dash")

from hpudash.pages.common import grid, key_columns, key_figure_items, key_figure_row
from hpudash.reportview import facts, findings, screen_columns, table, view_doc

from hpuprof.render import figures
from hpuprof.render.figures import plot_text
from hpuprof.trace.model import Trace
from tests.dashboard.conftest import HOSTILE
from tests.dashboard.synth import synthetic_trace


def _fig(figure: dict[str, Any]) -> Any:
    """The figure as plotly objects: validates every property the dashboard sends."""
    import plotly.graph_objects as go

    return go.Figure(figure)


@pytest.fixture(scope="module")
def trace() -> Trace:
    return synthetic_trace(3_000, ranks=2)


@pytest.fixture(scope="module")
def doc(trace: Trace) -> dict[str, Any]:
    from hpuprof.analysis import analyze

    return view_doc(analyze(trace))


def test_view_keeps_the_report_and_its_tables(doc: dict[str, Any]) -> None:
    import orjson

    assert doc["data"]["schema"].startswith("hpuprof.report/")
    ops = table(doc, "ops")
    assert ops is not None and ops["title"] and ops["rows"]
    headers = {k: h for k, h, _ in ops["columns"]}
    assert headers["self_ns"] == "Self time" and headers["device_total_ns"] == "Device total time"
    assert orjson.loads(orjson.dumps(doc)) == doc  # plain data: kept on disk as is
    assert table(doc, "no such table") is None


def test_screen_units_and_headers(doc: dict[str, Any]) -> None:
    spec = table(doc, "ops")
    assert spec is not None
    cols, rows = screen_columns(spec, ["name", "calls", "self_ns", "device_total_ns"])
    assert cols == [("name", "Name"), ("calls", "Calls"), ("self_ns", "Self time (ms)"), ("device_total_ns", "Device total time (ms)")]  # fmt: skip
    raw = {r["name"]: r for r in spec["rows"]}
    for r in rows:
        assert r["self_ns"] == round(raw[r["name"]]["self_ns"] / 1e6, 4)
    mem = table(doc, "memory_devices")
    if mem is not None:
        mcols, _ = screen_columns(mem)
        assert any(h.endswith("(MiB)") for _, h in mcols)


def test_facts_read_in_units(doc: dict[str, Any]) -> None:
    got = dict(facts(doc, "dynamicity"))
    assert got["Compilations"] == f"{doc['data']['dynamicity']['compilations']:,}"
    assert got["Compile time"].endswith(("ms", "us", " s"))
    assert facts(doc, "no such report") == []


def test_findings_carry_evidence_tables(doc: dict[str, Any]) -> None:
    found = findings(doc)
    assert found and all(isinstance(f["evidence_rows"], list) for f in found)
    assert all({"what", "value"} <= set(r) for f in found for r in f["evidence_rows"])
    assert all(f["report"] == "ranks" for f in findings(doc, "ranks"))


def test_key_figures_are_the_reports_own(doc: dict[str, Any]) -> None:
    figs = doc["data"]["meta"]["key_figures"]
    row = key_figure_row(figs)
    assert row["step_time_ns"] == round(doc["data"]["ranks"]["mean_step_ns"] / 1e6, 3)
    assert row["steps_per_rank"] == doc["data"]["ranks"]["steps_per_rank"]
    assert row["compilations"] == doc["data"]["dynamicity"]["compilations"]
    assert row["device_util_pct"] == round(figs["device_util_pct"], 1)
    labels = dict(key_figure_items(figs))
    assert labels["Step time (mean per rank)"].endswith(" ms")
    assert "Device busy % of steps (modeled)" in labels  # the synthetic device time is modeled
    assert "n/a" not in labels.values() and "None" not in labels.values()
    # a 2-rank run: counts added over the ranks say so, per-rank figures keep their words
    assert figs["ranks"] == 2 and "Compilations (total over 2 ranks)" in labels
    assert "Steps per rank" in labels and not any(k.startswith("Compilations:") for k in labels)
    one = dict(key_figure_items({**figs, "ranks": 1}))
    assert "Compilations" in one and "Compilations (total over 2 ranks)" not in one
    # the Runs grid: one column for runs of any rank count says it is a total
    headers = dict(key_columns())
    assert headers["compilations"] == "Compilations (total over ranks)"


def _luminance(color: str) -> float:
    """Relative brightness of a `#rrggbb` colour (0 black .. 1 white)."""
    r, g, b = (int(color[i : i + 2], 16) / 255 for i in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def test_figures_have_data(doc: dict[str, Any]) -> None:
    steps = _fig(figures.steps_figure(doc["data"]))
    assert [t.name for t in steps.data] == [name for _, name, _ in figures.STEP_PARTS]
    assert len(steps.data[0].x) == len(doc["data"]["ranks"]["steps"])
    heat = _fig(figures.rank_heatmap(doc["data"]))
    assert heat.data[0].type == "heatmap"
    assert list(heat.data[0].y) == [0, 1] and all(isinstance(s, int) for s in heat.data[0].x)
    assert heat.layout.xaxis.tickformat == "d"  # integer step axis
    # more = hotter: the highest step time takes the darkest red, the lowest the palest yellow
    scale = heat.data[0].colorscale
    assert (scale[0][0], scale[-1][0]) == (0.0, 1.0) and not heat.data[0].reversescale
    assert _luminance(scale[0][1]) > _luminance(scale[-1][1])
    assert "darker" in heat.data[0].colorbar.title.text
    split = _fig(figures.rank_split_figure(doc["data"]))
    assert [t.name for t in split.data] == [name for _, name, _ in figures.RANK_PARTS]
    for fn in (figures.host_device_figure, figures.compiles_figure, figures.shapes_figure,
               figures.dtype_figure, figures.memory_figure):  # fmt: skip
        _fig(fn(doc["data"]))


def test_empty_report_gives_figures_that_say_why() -> None:
    for fn in (figures.steps_figure, figures.host_device_figure, figures.compiles_figure,
               figures.shapes_figure, figures.dtype_figure, figures.rank_heatmap,
               figures.rank_split_figure, figures.memory_figure):  # fmt: skip
        fig = _fig(fn({}))
        assert fig.data == () and fig.layout.annotations[0].text


def test_no_compilations_drawn_from_shapes_alone() -> None:
    report = {"dynamicity": {"source": "no compile events in this trace",
                             "timeline": [{"step": 1, "compilations": 5, "recompilations": 4}]}}  # fmt: skip
    fig = _fig(figures.compiles_figure(report))
    assert fig.data == () and "no compilations recorded" in fig.layout.annotations[0].text


def test_shapes_are_a_readable_top_list() -> None:
    hist = [{"op": f"aten::op{i}", "calls": 100, "unique_shapes": i, "shapes": []} for i in range(60)]  # fmt: skip
    fig = _fig(figures.shapes_figure({"dynamicity": {"shape_histograms": hist}}))
    bar = fig.data[0]
    assert bar.orientation == "h" and len(bar.y) == figures.SHAPES_TOP
    assert list(bar.x) == sorted(bar.x, reverse=True) and bar.y[0] == "aten::op59"


def test_trace_strings_are_inert_in_figures_and_grids() -> None:
    assert "<img" not in plot_text(HOSTILE) and "&lt;img" in plot_text(HOSTILE)
    report = {"precision": {"by_dtype": [{"dtype": HOSTILE, "device_time_ns": 5, "ops": 1}]}}
    assert all("<img" not in str(x) for x in _fig(figures.dtype_figure(report)).data[0].x)
    g = grid("g", [{"name": HOSTILE}])
    assert all("cellRenderer" not in c for c in g.columnDefs)
    assert g.dangerously_allow_code is False
    for unsafe in (
        {"dangerously_allow_code": True},
        {"columnDefs": [{"cellRenderer": "markdown"}]},
    ):
        with pytest.raises(ValueError):
            grid("g", [], **unsafe)


def test_the_html_report_draws_the_dashboards_figures(trace: Trace, doc: dict[str, Any]) -> None:
    """One figure module: the HTML report embeds the very figures the pages show."""
    import orjson

    from hpuprof.analysis import analyze
    from hpuprof.render.html import HtmlRenderer

    report = doc["data"]
    shown = figures.report_figures(report)
    assert figures.steps_figure(report) in shown and figures.rank_heatmap(report) in shown
    assert all(fig["data"] for fig in shown)  # figures without data are left out
    page = HtmlRenderer(include_plotlyjs=False).render(analyze(trace))
    for fig in shown:
        assert orjson.dumps(fig).decode().replace("</", "<\\/") in page


def test_key_figures_say_what_is_not_measurable() -> None:
    """A run without steps shows why its per-step figures are missing, not a number or a
    "(modeled)" label on nothing (`KeyFigures.not_measurable`)."""
    figs = {
        "step_time_ns": None,
        "device_util_pct": None,
        "device_time": "modeled",
        "compilations": 3,
        "not_measurable": {
            "step_time_ns": "not measurable (no steps)",
            "device_util_pct": "not measurable (no steps)",
        },
    }
    labels = dict(key_figure_items(figs))
    assert labels["Device busy % of steps"] == "not measurable (no steps)", labels
    assert labels["Step time (mean per rank)"] == "not measurable (no steps)"
    assert labels["Compilations"] == "3"
