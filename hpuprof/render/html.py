"""Self-contained HTML renderer: findings, tables and plotly figures; every name escaped."""

from __future__ import annotations

import html as _html
from typing import Any

import orjson

from hpuprof.analysis.registry import Column
from hpuprof.analysis.report import Report
from hpuprof.render.tables import (
    evidence_rows,
    fmt_column,
    key_figure_rows,
    meta_line,
    report_views,
)


def _esc(text: Any) -> str:
    return _html.escape(str(text), quote=True)


def _table(
    title: str, rows: tuple[dict[str, Any], ...], columns: tuple[Column, ...], limit: int = 200
) -> str:
    head = "".join(f"<th>{_esc(c.header)}</th>" for c in columns)
    body = "".join(
        "<tr>"
        + "".join(f"<td>{_esc(fmt_column(c, r.get(c.key), r))}</td>" for c in columns)
        + "</tr>"
        for r in rows[:limit]
    )
    more = (
        f"<p>{len(rows) - limit} more rows in the CSV/JSON output</p>" if len(rows) > limit else ""
    )
    return f"<h2>{_esc(title)}</h2><table><tr>{head}</tr>{body}</table>{more}"


def _evidence(rows: list[dict[str, str]]) -> str:
    if not rows:
        return ""
    body = "".join(f"<tr><td>{_esc(r['what'])}</td><td>{_esc(r['value'])}</td></tr>" for r in rows)
    return f"<table class='evidence'>{body}</table>"


def _figures(report: Report) -> list[dict[str, Any]]:
    """Plotly figure dicts (data + layout), built from the report only."""
    figs: list[dict[str, Any]] = []
    b = report.sections.get("bottleneck")
    if b is not None and b.temporal:
        ranks = [str(t.rank) for t in b.temporal]
        figs.append(
            {
                "data": [
                    {"type": "bar", "name": k, "x": ranks, "y": [getattr(t, f) for t in b.temporal]}
                    for k, f in (
                        ("idle", "idle_pct"),
                        ("compute", "compute_pct"),
                        ("non-compute", "non_compute_pct"),
                    )
                ],
                "layout": {"barmode": "stack", "title": {"text": "Temporal breakdown (% of span)"}},
            }
        )
    if b is not None and b.steps:
        figs.append(
            {
                "data": [
                    {
                        "type": "bar",
                        "name": "step ms",
                        "x": [f"r{s.rank}:{s.step}" for s in b.steps],
                        "y": [s.duration_ns / 1e6 for s in b.steps],
                    }
                ],
                "layout": {"title": {"text": "Step time (ms)"}},
            }
        )
    p = report.sections.get("precision")
    if p is not None and p.by_dtype:
        figs.append(
            {
                "data": [
                    {
                        "type": "pie",
                        "labels": [r.dtype for r in p.by_dtype],
                        "values": [r.device_time_ns for r in p.by_dtype],
                    }
                ],
                "layout": {"title": {"text": "Device time by dtype"}},
            }
        )
    figs += _rank_and_memory_figures(report)
    return figs


def _rank_and_memory_figures(report: Report) -> list[dict[str, Any]]:
    """Step time per rank and step (heat map) and memory over time, from those reports."""
    figs: list[dict[str, Any]] = []
    r = report.sections.get("ranks")
    if r is not None and len(r.ranks) > 1 and r.steps:
        ranks = sorted({s.rank for s in r.steps})
        steps = sorted({s.step for s in r.steps})
        at = {(s.rank, s.step): s.duration_ns / 1e6 for s in r.steps}
        figs.append(
            {
                "data": [
                    {
                        "type": "heatmap",
                        "x": steps,
                        "y": [f"rank {k}" for k in ranks],
                        "z": [[at.get((k, st)) for st in steps] for k in ranks],
                        "colorbar": {"title": {"text": "ms"}},
                    }
                ],
                "layout": {
                    "title": {"text": "Step time per rank and step (ms)"},
                    "xaxis": {"title": {"text": "step"}, "dtick": 1},
                },
            }
        )
    m = report.sections.get("memory")
    if m is not None and m.timeline:
        series: dict[str, tuple[list[float], list[float]]] = {}
        for p in m.timeline:
            xs, ys = series.setdefault(f"rank {p.rank} {p.device}", ([], []))
            xs.append(p.t_ns / 1e6)
            ys.append(p.allocated_bytes / 2**20)
        figs.append(
            {
                "data": [
                    {
                        "type": "scatter",
                        "mode": "lines",
                        "name": k,
                        "x": xs,
                        "y": ys,
                        "line": {"shape": "hv"},
                    }
                    for k, (xs, ys) in series.items()
                ],
                "layout": {
                    "title": {"text": "Memory allocated (MiB) over time (ms from the trace start)"}
                },
            }
        )
    return figs


class HtmlRenderer:
    """A single HTML file with inline plotly.js (no network needed to view it)."""

    extension = ".html"

    def __init__(self, include_plotlyjs: bool = True) -> None:
        self.include_plotlyjs = include_plotlyjs

    def render(self, report: Report) -> str:
        parts = [
            "<!DOCTYPE html><html><head><meta charset='utf-8'>",
            f"<title>hpuprof report: {_esc(', '.join(report.source))}</title>",
            "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;"
            "margin-bottom:1em}td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px}"
            ".critical{color:#b00}.warning{color:#a60}.info{color:#06a}</style>",
        ]
        figs = _figures(report)
        if figs and self.include_plotlyjs:
            from plotly.offline import get_plotlyjs

            parts.append(f"<script>{get_plotlyjs()}</script>")
        parts.append("</head><body>")
        parts.append(f"<h1>hpuprof report: {_esc(', '.join(report.source))}</h1>")
        parts.append(f"<p>{_esc(meta_line(report))}</p>")
        figures = key_figure_rows(report)
        if figures:
            row = {c.key: v for c, v in figures}
            parts.append(_table("Key figures", (row,), tuple(c for c, _ in figures)))
        parts.append("<h2>Findings</h2><ul>")
        for f in report.findings:
            parts.append(
                f"<li class='{_esc(f.severity)}'><b>{_esc(f.severity)}</b> ({_esc(f.report)}): "
                f"{_esc(f.title)}{_evidence(evidence_rows(f))}<i>{_esc(f.advice)}</i></li>"
            )
        parts.append("</ul>")
        for i, fig in enumerate(figs):
            payload = orjson.dumps(fig).decode().replace("</", "<\\/")
            parts.append(
                f"<div id='fig{i}' style='height:360px'></div><script>"
                f"(function(){{var f={payload};Plotly.newPlot('fig{i}',f.data,f.layout);}})();"
                "</script>"
            )
        for view in report_views(report):
            if view.name != "findings":
                parts.append(_table(view.title, view.rows, view.columns))
        parts.append("</body></html>")
        return "".join(parts)
