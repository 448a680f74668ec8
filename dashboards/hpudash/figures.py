"""Pure functions from a trace or a report dict to plotly figures and table rows.

No Dash here and no I/O: tests call these directly. Report dicts follow
`hpuprof.analysis.Report.to_dict()`; every key is read with a default, so a report missing a
section (an analysis that did not run, a CPU-only trace) gives empty figures, not errors.
Trace-supplied strings that plotly renders as pseudo-HTML go through `plot_text`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from hpudash.timeline import plot_text
from hpuprof.trace.schema import NO_ID, STEP_ANNOTATION_PREFIX

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from hpuprof.trace.model import Trace

STEP_PARTS: tuple[tuple[str, str, str], ...] = (
    ("compute_ns", "compute", "#4c78a8"),
    ("comm_ns", "communication", "#f58518"),
    ("memory_ns", "memory", "#54a24b"),
    ("idle_ns", "idle", "#bab0ac"),
)
LOW_PRECISION = ("bf16", "bfloat16", "c10::bfloat16", "fp16", "float16", "half", "fp8")
REGRESSION_PCT = 5.0
STRAGGLER_PCT = 10.0


def section(report: Mapping[str, Any], *path: str) -> Any:
    """`report[path[0]][path[1]]...`, or None when any level is missing."""
    cur: Any = report
    for key in path:
        if not isinstance(cur, Mapping) or key not in cur:
            return None
        cur = cur[key]
    return cur


def rows(report: Mapping[str, Any], *path: str) -> list[dict[str, Any]]:
    """A list-of-dicts section, or []."""
    got = section(report, *path)
    return [dict(r) for r in got if isinstance(r, Mapping)] if isinstance(got, list) else []


def _empty(title: str, note: str = "no data in this trace") -> go.Figure:
    import plotly.graph_objects as go

    fig = go.Figure()
    fig.update_layout(
        title=title,
        height=260,
        annotations=[{"text": note, "showarrow": False, "xref": "paper", "yref": "paper"}],
        xaxis={"visible": False},
        yaxis={"visible": False},
    )
    return fig


# --- steps and key figures ---------------------------------------------------------------


def step_durations(trace: Trace) -> pd.DataFrame:
    """One row per step slice: rank, step, ts_ns, dur_ns (ProfilerStep#N or our Step#N)."""
    ev = trace.events
    names = ev["name"].astype(str)
    is_step = (
        (ev["kind"].astype(str) == "user_annotation") & names.str.startswith(STEP_ANNOTATION_PREFIX)
    ) | (ev["hpu_event"].astype(str) == "step")
    steps = ev.loc[is_step & (ev["ph"].astype(str) == "X"), ["rank", "step", "ts_ns", "dur_ns"]]
    out = steps.astype({"rank": "int64", "step": "int64"}).reset_index(drop=True)
    return out.sort_values(["rank", "ts_ns"], ignore_index=True)


def _bf16_share(report: Mapping[str, Any]) -> float | None:
    by = rows(report, "precision", "by_dtype")
    total = sum(float(r.get("device_time_ns") or 0) for r in by)
    if not total:
        return None
    low = sum(
        float(r.get("device_time_ns") or 0)
        for r in by
        if str(r.get("dtype", "")).lower() in LOW_PRECISION
    )
    return 100.0 * low / total


def key_figures(report: Mapping[str, Any], trace: Trace) -> dict[str, Any]:
    """The Runs page's figures for one run (None where the trace cannot tell)."""
    steps = step_durations(trace)
    temporal = rows(report, "bottleneck", "temporal")
    util = [100.0 - float(r["idle_pct"]) for r in temporal if r.get("idle_pct") is not None]
    ev = trace.events
    hpu = ev["hpu_event"].astype(str)
    compiles = section(report, "dynamicity", "compilations")
    if compiles is None:
        compiles = int(hpu.isin(("compile", "dynamo_compile")).sum())
    fallbacks = section(report, "fallback", "total")
    if fallbacks is None:
        fallbacks = int(ev["fallback"].sum())
    return {
        "step_ms": round(float(steps["dur_ns"].mean()) / 1e6, 3) if len(steps) else None,
        "steps": len(steps),
        "device_util_pct": round(float(np.mean(util)), 1) if util else None,
        "compilations": int(compiles),
        "recompilations": section(report, "dynamicity", "recompilations"),
        "fallbacks": int(fallbacks),
        "bf16_pct": None if (b := _bf16_share(report)) is None else round(b, 1),
        "ranks": int(ev["rank"].nunique()),
        "events": len(ev),
        "device_time": str(section(report, "bottleneck", "device_time") or ""),
    }


def kpi_items(figs: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(label, formatted value) pairs for the KPI strip."""

    def fmt(v: Any, unit: str = "") -> str:
        return "n/a" if v is None else f"{v}{unit}"

    label = " (modeled)" if figs.get("device_time") == "modeled" else ""
    return [
        ("step time", fmt(figs.get("step_ms"), " ms")),
        ("steps", fmt(figs.get("steps"))),
        (f"device utilisation{label}", fmt(figs.get("device_util_pct"), " %")),
        ("compilations", fmt(figs.get("compilations"))),
        ("recompilations", fmt(figs.get("recompilations"))),
        ("CPU fallbacks", fmt(figs.get("fallbacks"))),
        ("bf16 share of device time", fmt(figs.get("bf16_pct"), " %")),
        ("ranks", fmt(figs.get("ranks"))),
    ]


# --- overview ----------------------------------------------------------------------------


def findings(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Findings in report order (most severe first), evidence kept as data."""
    keys = ("severity", "report", "title", "metric", "value", "threshold", "advice")
    return [
        {k: f.get(k) for k in keys} | {"evidence": f.get("evidence") or {}}
        for f in rows(report, "findings")
    ]


def steps_figure(report: Mapping[str, Any]) -> go.Figure:
    """Per-step stacked bars: compute, communication, memory, idle (ms)."""
    import plotly.graph_objects as go

    st = rows(report, "bottleneck", "steps")
    if not st:
        return _empty("Per-step breakdown", "no steps found (no ProfilerStep or step markers)")
    multi = len({r.get("rank") for r in st}) > 1
    x = [f"r{r.get('rank')} s{r.get('step')}" if multi else str(r.get("step")) for r in st]
    fig = go.Figure()
    for key, name, color in STEP_PARTS:
        fig.add_trace(
            go.Bar(
                name=name,
                x=x,
                y=[float(r.get(key) or 0) / 1e6 for r in st],
                marker_color=color,
            )
        )
    fig.update_layout(
        barmode="stack",
        title="Per-step breakdown of device time",
        xaxis_title="step",
        yaxis_title="ms",
        height=340,
        xaxis={"type": "category"},
    )
    return fig


def host_device_figure(report: Mapping[str, Any]) -> go.Figure:
    """Host-busy vs device-busy share of wall time, per rank."""
    import plotly.graph_objects as go

    hd = rows(report, "bottleneck", "host_device")
    if not hd:
        return _empty("Host / device ratio")
    ranks = [f"rank {r.get('rank')}" for r in hd]
    fig = go.Figure(
        [
            go.Bar(name="host busy %", x=ranks, y=[r.get("host_ratio_pct") for r in hd]),
            go.Bar(name="device busy %", x=ranks, y=[r.get("device_ratio_pct") for r in hd]),
        ]
    )
    fig.update_layout(
        barmode="group", title="Host / device ratio", yaxis_title="% of wall time", height=300
    )
    return fig


# --- ops -----------------------------------------------------------------------------------


def _top(values: pd.Series) -> str:
    v = values[values.astype(str) != ""]
    return str(v.mode().iat[0]) if len(v) else ""


def op_table(trace: Trace) -> pd.DataFrame:
    """Host ops aggregated by name: host time, device time of the device ops they launched
    (launch -> device op by `correlation`, attributed to the innermost enclosing host op),
    counts, most common shapes, dtypes, module and phase. Sorted by device then host time."""
    ev = trace.events
    kind = ev["kind"].astype(str).to_numpy()
    host_op = (kind == "cpu_op") & (ev["ph"].astype(str) == "X").to_numpy()
    ops = ev.loc[host_op]
    if not len(ops):
        return pd.DataFrame(
            columns=["name", "count", "host_ms", "device_ms", "shapes", "dtypes", "module", "phase"]
        )
    dev_ns = np.zeros(len(ev), dtype=np.float64)
    corr = ev["correlation"].to_numpy()
    is_dev = ev["is_device"].to_numpy(dtype=bool)
    dev = np.flatnonzero(is_dev & (corr != NO_ID))
    launch = np.flatnonzero(~is_dev & (corr != NO_ID))
    if len(dev) and len(launch):
        by_corr = pd.Series(launch, index=corr[launch])
        by_corr = by_corr[~by_corr.index.duplicated()]
        host_row = by_corr.reindex(corr[dev]).to_numpy()
        ok = ~np.isnan(host_row)
        cur = host_row[ok].astype(np.int64)
        parent = ev["parent"].to_numpy(dtype=np.int64)
        for _ in range(32):
            climb = (cur >= 0) & (kind[np.maximum(cur, 0)] != "cpu_op")
            if not climb.any():
                break
            cur = np.where(climb, parent[np.maximum(cur, 0)], cur)
        hit = cur >= 0
        np.add.at(dev_ns, cur[hit], ev["dur_ns"].to_numpy()[dev[ok][hit]])
    frame = pd.DataFrame(
        {
            "name": ops["name"].astype(str),
            "host_ns": ops["dur_ns"].to_numpy(),
            "device_ns": dev_ns[host_op],
            "shapes": ops["input_dims"].astype(str),
            "dtypes": ops["input_types"].astype(str),
            "module": ops["module"].astype(str),
            "phase": ops["phase"].astype(str),
            "fallback": ops["fallback"].to_numpy(dtype=bool),
        }
    )
    g = frame.groupby("name", sort=False)
    out = pd.DataFrame(
        {
            "count": g.size(),
            "host_ms": g["host_ns"].sum() / 1e6,
            "device_ms": g["device_ns"].sum() / 1e6,
            "fallbacks": g["fallback"].sum().astype(int),
            "shapes": g["shapes"].agg(_top),
            "dtypes": g["dtypes"].agg(_top),
            "module": g["module"].agg(_top),
            "phase": g["phase"].agg(_top),
        }
    ).reset_index()
    out["host_ms"] = out["host_ms"].round(4)
    out["device_ms"] = out["device_ms"].round(4)
    return out.sort_values(["device_ms", "host_ms"], ascending=False, ignore_index=True)


# --- dynamicity ------------------------------------------------------------------------------


def compiles_figure(report: Mapping[str, Any]) -> go.Figure:
    """Compilations and recompilations per step."""
    import plotly.graph_objects as go

    tl = rows(report, "dynamicity", "timeline")
    if not tl:
        return _empty("Compilations over time", "no compilations recorded")
    x = [r.get("step") for r in tl]
    fig = go.Figure(
        [
            go.Bar(name="first compiles", x=x, y=[(r.get("compilations") or 0) - (r.get("recompilations") or 0) for r in tl]),
            go.Bar(name="recompiles", x=x, y=[r.get("recompilations") or 0 for r in tl], marker_color="#d62728"),
        ]
    )  # fmt: skip
    fig.update_layout(
        barmode="stack", title="Compilations per step", xaxis_title="step", height=300
    )
    return fig


def causes_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each graph's recompiles with their causes (cause kinds and texts flattened)."""
    out = []
    for g in rows(report, "dynamicity", "by_graph"):
        causes = g.get("causes") or []
        text = "; ".join(
            str(c.get("text") or c.get("kind") or c) if isinstance(c, Mapping) else str(c)
            for c in causes
        )
        out.append(
            {
                "graph": str(g.get("key", "")),
                "compilations": g.get("compilations"),
                "recompilations": g.get("recompilations"),
                "time_ms": round(float(g.get("time_ns") or 0) / 1e6, 3),
                "causes": text,
            }
        )
    return out


def causes_figure(report: Mapping[str, Any]) -> go.Figure:
    """Recompile causes by kind (shape, dtype, stride, ...)."""
    import plotly.graph_objects as go

    counts: dict[str, int] = {}
    for c in rows(report, "dynamicity", "events"):
        if c.get("recompile"):
            k = str(c.get("cause_kind") or "unknown")
            counts[k] = counts.get(k, 0) + 1
    if not counts:
        return _empty("Recompile causes", "no recompiles")
    fig = go.Figure(go.Bar(x=[plot_text(k) for k in counts], y=list(counts.values())))
    fig.update_layout(title="Recompile causes", yaxis_title="recompiles", height=300)
    return fig


def shapes_figure(report: Mapping[str, Any], limit: int = 8) -> go.Figure:
    """Input-shape histograms of the most shape-dynamic ops."""
    import plotly.graph_objects as go

    hs = sorted(
        rows(report, "dynamicity", "shape_histograms"),
        key=lambda h: -int(h.get("unique_shapes") or 0),
    )[:limit]
    if not hs:
        return _empty("Input shapes", "no recorded input shapes (record_shapes off?)")
    fig = go.Figure()
    for h in hs:
        shapes = [s for s in h.get("shapes") or [] if isinstance(s, Sequence) and len(s) == 2]
        fig.add_trace(
            go.Bar(
                name=plot_text(h.get("op", "")),
                x=[plot_text(s[0]) for s in shapes],
                y=[s[1] for s in shapes],
            )
        )
    fig.update_layout(title="Input shapes per op (calls)", barmode="group", height=340)
    return fig


def bucketing_text(report: Mapping[str, Any]) -> str:
    """The bucketing recommendation in one plain sentence ('' when there is none)."""
    b = section(report, "dynamicity", "bucketing")
    if not isinstance(b, Mapping):
        return ""
    target = section(report, "dynamicity", "bucketing_target") or "the dynamic dimension"
    bounds = ", ".join(str(x) for x in b.get("boundaries") or [])
    return (
        f"Pad {target} to the buckets [{bounds}]: {b.get('distinct_sizes')} distinct sizes "
        f"become {len(b.get('boundaries') or [])} graphs, saving {b.get('compilations_saved')} "
        f"compilations for {b.get('padding_pct')} % padding."
    )


# --- precision -----------------------------------------------------------------------------


def dtype_figure(report: Mapping[str, Any]) -> go.Figure:
    """Device time and FLOPs by dtype."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    by = rows(report, "precision", "by_dtype")
    if not by:
        return _empty("Time and FLOPs by dtype")
    names = [plot_text(r.get("dtype", "")) for r in by]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("device time (ms)", "FLOPs"))
    fig.add_trace(
        go.Bar(
            x=names, y=[float(r.get("device_time_ns") or 0) / 1e6 for r in by], name="device ms"
        ),
        1,
        1,
    )
    fig.add_trace(go.Bar(x=names, y=[float(r.get("flops") or 0) for r in by], name="FLOPs"), 1, 2)  # fmt: skip
    fig.update_layout(title="Time and FLOPs by dtype", height=320, showlegend=False)
    return fig


PRECISION_TABLES: tuple[tuple[str, str], ...] = (
    ("casts", "Casts"),
    ("missed_lower_precision", "Missed bf16 (ran in fp32, could run in bf16)"),
    ("fp32_risk", "fp32-risk ops (ran in bf16, safer in fp32)"),
    ("silent_dtype_changes", "Silent dtype changes"),
)


def precision_tables(report: Mapping[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    """(title, rows) for each precision list present in the report (values flattened)."""
    prec = section(report, "precision") or {}
    names = dict(PRECISION_TABLES)
    for key in prec if isinstance(prec, Mapping) else {}:
        if key not in names and ("risk" in key or "missed" in key):
            names[key] = key.replace("_", " ")
    out = []
    for key, title in names.items():
        out.append((title, [flat(r) for r in rows(report, "precision", key)]))
    return out


def flat(row: Mapping[str, Any]) -> dict[str, Any]:
    """Row values as grid-ready scalars (lists and dicts become compact text)."""
    return {
        str(k): v if isinstance(v, (int, float, str, bool)) or v is None else str(v)
        for k, v in row.items()
    }


# --- compare ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Delta:
    """A figure of run A and run B and how B differs (positive = B larger)."""

    metric: str
    a: float | None
    b: float | None
    delta: float | None
    delta_pct: float | None
    regression: bool


HIGHER_IS_WORSE = frozenset({"step_ms", "compilations", "recompilations", "fallbacks"})


def compare_figures(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Delta]:
    """Deltas of the key figures of two runs; regressions flagged (> REGRESSION_PCT worse)."""
    out = []
    for metric in ("step_ms", "device_util_pct", "compilations", "recompilations", "fallbacks", "bf16_pct", "ranks", "events"):  # fmt: skip
        va, vb = a.get(metric), b.get(metric)
        if va is None or vb is None:
            out.append(Delta(metric, va, vb, None, None, False))
            continue
        d = float(vb) - float(va)
        pct = 100.0 * d / abs(float(va)) if va else (0.0 if not d else float("inf"))
        worse = (
            d > 0
            if metric in HIGHER_IS_WORSE
            else (d < 0 and metric in ("device_util_pct", "bf16_pct"))
        )
        out.append(Delta(metric, va, vb, round(d, 4), round(pct, 2), worse and abs(pct) > REGRESSION_PCT))  # fmt: skip
    return out


def compare_ops(a: pd.DataFrame, b: pd.DataFrame, limit: int = 50) -> pd.DataFrame:
    """Per-op time deltas of B against A, largest regressions first."""
    cols = ["name", "count", "host_ms", "device_ms"]
    m = a[cols].merge(b[cols], on="name", how="outer", suffixes=("_a", "_b")).fillna(0)
    m["time_a_ms"] = (m["host_ms_a"] + m["device_ms_a"]).round(4)
    m["time_b_ms"] = (m["host_ms_b"] + m["device_ms_b"]).round(4)
    m["delta_ms"] = (m["time_b_ms"] - m["time_a_ms"]).round(4)
    base = m["time_a_ms"].where(m["time_a_ms"] > 0)
    m["delta_pct"] = (100 * m["delta_ms"] / base).round(2)
    m["regression"] = (m["delta_ms"] > 0) & ((m["delta_pct"] > REGRESSION_PCT) | base.isna())
    keep = ["name", "count_a", "count_b", "time_a_ms", "time_b_ms", "delta_ms", "delta_pct", "regression"]  # fmt: skip
    return m.sort_values("delta_ms", ascending=False, ignore_index=True)[keep].head(limit)


# --- ranks -----------------------------------------------------------------------------------


def rank_steps_figure(steps: pd.DataFrame) -> go.Figure:
    """Step time per step, one line per rank."""
    import plotly.graph_objects as go

    if not len(steps):
        return _empty("Step time per rank", "no steps found")
    fig = go.Figure()
    for rank, s in steps.groupby("rank"):
        fig.add_trace(
            go.Scatter(name=f"rank {rank}", x=s["step"], y=s["dur_ns"] / 1e6, mode="lines+markers")
        )
    fig.update_layout(title="Step time per rank", xaxis_title="step", yaxis_title="ms", height=340)
    return fig


def stragglers(steps: pd.DataFrame, pct: float = STRAGGLER_PCT) -> list[dict[str, Any]]:
    """Ranks whose mean step time exceeds the median rank's by more than `pct` %."""
    if not len(steps):
        return []
    mean = steps.groupby("rank")["dur_ns"].mean()
    median = float(mean.median())
    out = []
    for rank, v in mean.items():
        slower = 100.0 * (float(v) - median) / median if median else 0.0
        out.append(
            {
                "rank": int(rank),  # type: ignore[call-overload]
                "mean_step_ms": round(float(v) / 1e6, 3),
                "vs_median_pct": round(slower, 1),
                "straggler": bool(slower > pct),
            }
        )
    return out
