"""The report's figures, as pure functions: the HTML report and the dashboard draw the same ones.

Each function takes a report as plain data (`Report.to_dict()`, the JSON contract; the dashboard
keeps it as its view's `data`) and returns a plotly figure as a dict (data + layout, what
plotly.js and dcc.Graph take). Every number comes from the report; these functions only choose
units (ms, MiB, %) and layout. A section the report lacks gives a figure that says why
(`empty`), never an error; the HTML report leaves those out (`report_figures`). No plotly, Dash
or I/O here. Trace-supplied strings that plotly renders as pseudo-HTML go through `plot_text`.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

Figure = dict[str, Any]
STEP_PARTS: tuple[tuple[str, str, str], ...] = (
    ("compute_ns", "compute", "#4c78a8"),
    ("exposed_comm_ns", "exposed communication", "#f58518"),
    ("exposed_memory_ns", "exposed memory copies", "#54a24b"),
    ("idle_ns", "device idle", "#bab0ac"),
)
"""The step split (`hpuprof.analysis.step_split`) as stacked bars: field, legend, colour."""
RANK_PARTS: tuple[tuple[str, str, str], ...] = tuple(
    (key.replace("_ns", "_pct"), name, color) for key, name, color in STEP_PARTS
)
SHAPES_TOP = 20


def plot_text(value: object) -> str:
    """A trace-supplied string made inert for plotly's pseudo-HTML (hover, ticks, legends)."""
    return html.escape(str(value), quote=False)


def section(data: Mapping[str, Any], *path: str) -> Any:
    """`data[path[0]][path[1]]...` of a report dict, or None when missing."""
    cur: Any = data
    for key in path:
        if not isinstance(cur, Mapping) or key not in cur:
            return None
        cur = cur[key]
    return cur


def rows(data: Mapping[str, Any], *path: str) -> list[dict[str, Any]]:
    """A list-of-dicts section of the report, or []."""
    got = section(data, *path)
    return [dict(r) for r in got if isinstance(r, Mapping)] if isinstance(got, list) else []


def step_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each step of each rank with its step split: the ranks report's, else the bottleneck
    report's (the same split, `hpuprof.analysis.step_split`)."""
    return rows(report, "ranks", "steps") or rows(report, "bottleneck", "steps")


def _layout(title: str, height: int = 320, **extra: Any) -> dict[str, Any]:
    """Title on the left, legend on the right above the plot: neither covers the data."""
    return {
        "title": {"text": title, "x": 0.01, "xanchor": "left"},
        "height": height,
        "margin": {"l": 60, "r": 20, "t": 60, "b": 50},
        "legend": {"orientation": "h", "x": 1, "xanchor": "right", "y": 1.02, "yanchor": "bottom"},
        "plot_bgcolor": "white",
    } | extra


def empty(title: str, note: str) -> Figure:
    """A figure that says why it has nothing to show."""
    return {
        "data": [],
        "layout": _layout(
            title,
            260,
            annotations=[
                {
                    "text": note,
                    "showarrow": False,
                    "xref": "paper",
                    "yref": "paper",
                    "x": 0.5,
                    "y": 0.5,
                }
            ],
            xaxis={"visible": False},
            yaxis={"visible": False},
        ),
    }


def _ms(ns: Any) -> float:
    return float(ns or 0) / 1e6


def steps_figure(report: Mapping[str, Any]) -> Figure:
    """Each step's time split into compute, communication, memory copies and device idle."""
    st = step_rows(report)
    if not st:
        return empty("Time per step", "no steps in this trace (no ProfilerStep or step markers)")
    multi = len({r.get("rank") for r in st}) > 1
    x = [f"rank {r.get('rank')} · step {r.get('step')}" if multi else r.get("step") for r in st]
    title = "Time per step (device view)"
    parts = STEP_PARTS
    if section(report, "bottleneck", "device_time") == "none":  # a CPU-only trace: no split
        title = "Time per step (device time not measurable: no device events)"
        parts = (("duration_ns", "step time", "#4c78a8"),)
    data = [
        {"type": "bar", "name": name, "x": x, "y": [_ms(r.get(key)) for r in st], "marker": {"color": color},
         "hovertemplate": "%{x}<br>%{y:.3f} ms<extra>" + name + "</extra>"}
        for key, name, color in parts
    ]  # fmt: skip
    xaxis: dict[str, Any] = {"title": {"text": "step"}, "type": "category"}
    if not multi:
        xaxis = {"title": {"text": "step"}, "tickmode": "linear", "dtick": 1, "tickformat": "d"}
    return {"data": data, "layout": _layout(title, 340, barmode="stack", xaxis=xaxis, yaxis={"title": {"text": "ms"}})}  # fmt: skip


def _pct_bars_per_rank(
    table: list[dict[str, Any]],
    parts: tuple[tuple[str, str, str | None], ...],
    title: str,
    barmode: str,
    axis: str,
) -> Figure:
    """One bar per rank and part (field, legend, colour or None), shares in % (0-100)."""
    ranks = [f"rank {r.get('rank')}" for r in table]
    data = [
        {"type": "bar", "name": name, "x": ranks, "y": [r.get(key) for r in table]} | ({"marker": {"color": color}} if color else {})
        for key, name, color in parts
    ]  # fmt: skip
    return {"data": data, "layout": _layout(title, 300, barmode=barmode, yaxis={"title": {"text": axis}, "range": [0, 100]})}  # fmt: skip


def temporal_figure(report: Mapping[str, Any]) -> Figure:
    """HTA's temporal breakdown per rank: idle, compute and non-compute, % of its device span."""
    tb = rows(report, "bottleneck", "temporal")
    if not tb:
        return empty("Temporal breakdown", "no device activity in this trace")
    parts = (("idle_pct", "idle", "#bab0ac"), ("compute_pct", "compute", "#4c78a8"), ("non_compute_pct", "non-compute", "#f58518"))  # fmt: skip
    return _pct_bars_per_rank(tb, parts, "Temporal breakdown (% of the device span)", "stack", "% of span")  # fmt: skip


def host_device_figure(report: Mapping[str, Any]) -> Figure:
    """Host-busy and device-busy share of wall time, per rank (host busy: the host's own work,
    compiles included, `hpuprof.analysis._common.host_work`)."""
    hd = rows(report, "bottleneck", "host_device")
    if not hd:
        return empty("Host and device busy", "device time not measurable: no device events")
    parts = (("host_ratio_pct", "host busy %", None), ("device_ratio_pct", "device busy %", None))
    return _pct_bars_per_rank(hd, parts, "Host and device busy, % of wall time", "group", "% of wall time")  # fmt: skip


SLOWER_IS_HOTTER: tuple[tuple[float, str], ...] = (
    (0.0, "#ffffcc"),
    (0.25, "#fed976"),
    (0.5, "#fd8d3c"),
    (0.75, "#e31a1c"),
    (1.0, "#800026"),
)
"""Pale yellow (the fastest step) to dark red (the slowest), spelled out: plotly's named
"YlOrRd" runs the other way (dark red at the low end), which drew the fastest steps hottest."""


def rank_heatmap(report: Mapping[str, Any]) -> Figure:
    """Step time of every rank and step (ms) as a heat map: the slower the step, the hotter
    (darker red) its cell, so a straggler is a dark row."""
    st = step_rows(report)
    if not st:
        return empty("Step time per rank and step", "no steps in this trace")
    ranks = sorted({int(r["rank"]) for r in st if isinstance(r.get("rank"), int)})
    steps = sorted({int(r["step"]) for r in st if isinstance(r.get("step"), int)})
    at = {(r.get("rank"), r.get("step")): _ms(r.get("duration_ns")) for r in st}
    z = [[at.get((rank, s)) for s in steps] for rank in ranks]
    data = [{
        "type": "heatmap", "x": steps, "y": ranks, "z": z,
        "colorscale": [list(stop) for stop in SLOWER_IS_HOTTER],
        "colorbar": {"title": {"text": "step ms<br>(darker: slower)"}}, "xgap": 1, "ygap": 1, "hoverongaps": False,
        "hovertemplate": "rank %{y}, step %{x}<br>%{z:.3f} ms<extra></extra>",
    }]  # fmt: skip
    layout = _layout(
        "Step time per rank and step (darker red: slower)",
        max(260, 90 + 28 * len(ranks)),
        xaxis={
            "title": {"text": "step"},
            "tickmode": "linear",
            "dtick": 1 if len(steps) <= 40 else None,
            "tickformat": "d",
        },
        yaxis={
            "title": {"text": "rank"},
            "tickmode": "array",
            "tickvals": ranks,
            "autorange": "reversed",
        },
    )
    return {"data": data, "layout": layout}


def rank_split_figure(report: Mapping[str, Any]) -> Figure:
    """Each rank's step time split: compute, communication, memory copies, device idle (%)."""
    rk = rows(report, "ranks", "ranks")
    if not rk:
        return empty("Where each rank's step time goes", "no steps in this trace")
    y = [f"rank {r.get('rank')}" for r in rk]
    data = [
        {"type": "bar", "orientation": "h", "name": name, "y": y, "x": [r.get(key) for r in rk], "marker": {"color": color},
         "hovertemplate": "%{y}: %{x:.1f} %<extra>" + name + "</extra>"}
        for key, name, color in RANK_PARTS
    ]  # fmt: skip
    layout = _layout(
        "Where each rank's step time goes (% of its steps)",
        max(240, 110 + 30 * len(rk)),
        barmode="stack",
        xaxis={"title": {"text": "% of step time"}, "range": [0, 100]},
        yaxis={"autorange": "reversed"},
    )
    return {"data": data, "layout": layout}


def compiles_figure(report: Mapping[str, Any]) -> Figure:
    """Compilations and recompilations per step (only from recorded compile events)."""
    if section(report, "dynamicity", "source") not in (None, "compile events"):
        return empty("Compilations per step", "no compilations recorded in this trace")
    tl = rows(report, "dynamicity", "timeline")
    if not tl:
        return empty("Compilations per step", "no compilations recorded in this trace")
    x = [r.get("step") if (r.get("step") or 0) >= 0 else "outside steps" for r in tl]
    first = [int(r.get("compilations") or 0) - int(r.get("recompilations") or 0) for r in tl]
    data = [
        {"type": "bar", "name": "first compilations", "x": x, "y": first},
        {"type": "bar", "name": "recompilations", "x": x, "y": [r.get("recompilations") or 0 for r in tl], "marker": {"color": "#d62728"}},
    ]  # fmt: skip
    return {"data": data, "layout": _layout("Compilations per step", 300, barmode="stack", xaxis={"title": {"text": "step"}, "type": "category"}, yaxis={"title": {"text": "compilations"}})}  # fmt: skip


def shapes_figure(report: Mapping[str, Any], limit: int = SHAPES_TOP) -> Figure:
    """The ops with the most distinct input shapes (top `limit`), readable as a bar list."""
    hs = [h for h in rows(report, "dynamicity", "shape_histograms") if isinstance(h.get("unique_shapes"), int)]  # fmt: skip
    if not hs:
        return empty(
            "Distinct input shapes per op", "no input shapes recorded (record_shapes off?)"
        )
    top = sorted(hs, key=lambda h: (-int(h["unique_shapes"]), str(h.get("op"))))[:limit]
    names = [plot_text(h.get("op", "")) for h in top]
    data = [{
        "type": "bar", "orientation": "h", "y": names, "x": [h["unique_shapes"] for h in top],
        "customdata": [h.get("calls") for h in top],
        "hovertemplate": "%{y}: %{x} distinct shapes in %{customdata} calls<extra></extra>",
    }]  # fmt: skip
    title = f"Distinct input shapes per op (top {len(top)} of {len(hs)})"
    layout = _layout(title, max(260, 80 + 22 * len(top)), xaxis={"title": {"text": "distinct input shapes"}}, yaxis={"autorange": "reversed", "automargin": True})  # fmt: skip
    return {"data": data, "layout": layout}


def dtype_figure(report: Mapping[str, Any]) -> Figure:
    """Device time (ms) by dtype."""
    by = rows(report, "precision", "by_dtype")
    if not by:
        return empty("Device time by dtype", "no dtypes recorded (record_shapes off?)")
    names = [plot_text(r.get("dtype") or "unknown") for r in by]
    data = [{"type": "bar", "x": names, "y": [_ms(r.get("device_time_ns")) for r in by],
             "customdata": [r.get("ops") for r in by],
             "hovertemplate": "%{x}: %{y:.3f} ms in %{customdata} device ops<extra></extra>"}]  # fmt: skip
    return {"data": data, "layout": _layout("Device time by dtype", 300, yaxis={"title": {"text": "ms"}})}  # fmt: skip


def memory_figure(report: Mapping[str, Any]) -> Figure:
    """Memory in use over time per device (MiB), the peak marked."""
    tl = rows(report, "memory", "timeline")
    if not tl:
        return empty("Memory over time", "no memory data in this trace (profile_memory off?)")
    data: list[dict[str, Any]] = []
    devices = sorted({(r.get("rank"), str(r.get("device"))) for r in tl}, key=str)
    multi = len({d[0] for d in devices}) > 1
    for rank, device in devices:
        pts = [r for r in tl if r.get("rank") == rank and str(r.get("device")) == device]
        label = f"rank {rank} · {device}" if multi else device
        data.append({
            "type": "scatter", "mode": "lines", "line": {"shape": "hv"}, "name": plot_text(label),
            "x": [_ms(p.get("t_ns")) for p in pts],
            "y": [float(p.get("allocated_bytes") or 0) / 2**20 for p in pts],
            "hovertemplate": "%{x:.3f} ms: %{y:.3f} MiB<extra>" + plot_text(label) + "</extra>",
        })  # fmt: skip
    for d in rows(report, "memory", "devices"):
        if isinstance(d.get("peak_at_ns"), (int, float)) and isinstance(d.get("peak_bytes"), (int, float)):  # fmt: skip
            data.append({
                "type": "scatter", "mode": "markers", "name": "peak", "showlegend": False,
                "x": [_ms(d["peak_at_ns"])], "y": [float(d["peak_bytes"]) / 2**20],
                "marker": {"symbol": "triangle-down", "size": 12, "color": "#d62728"},
                "hovertemplate": "peak %{y:.3f} MiB at %{x:.3f} ms<extra></extra>",
            })  # fmt: skip
    layout = _layout("Memory in use over time", 340, xaxis={"title": {"text": "ms since the first event"}}, yaxis={"title": {"text": "MiB"}})  # fmt: skip
    return {"data": data, "layout": layout}


def report_figures(report: Mapping[str, Any]) -> list[Figure]:
    """The figures the HTML report shows, those the report has data for: the temporal
    breakdown, time per step, device time by dtype, step time per rank and step (several
    ranks), memory over time."""
    several_ranks = len({r.get("rank") for r in step_rows(report)}) > 1
    figs = [temporal_figure(report), steps_figure(report), dtype_figure(report)]
    figs += [rank_heatmap(report)] if several_ranks else []
    figs.append(memory_figure(report))
    return [f for f in figs if f["data"]]
