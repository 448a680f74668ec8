"""Self-contained HTML renderer: findings, tables and the report's figures (`figures`, the
dashboard's too); every name escaped."""

from __future__ import annotations

import html as _html
from typing import Any

import orjson

from hpuprof.analysis.registry import Column
from hpuprof.analysis.report import Report
from hpuprof.render.figures import report_figures
from hpuprof.render.tables import (
    evidence_rows,
    key_figure_rows,
    meta_line,
    report_origin_ns,
    report_views,
    shown_columns,
)


def _esc(text: Any) -> str:
    return _html.escape(str(text), quote=True)


def _table(
    title: str, rows: tuple[dict[str, Any], ...], columns: tuple[Column, ...], limit: int = 200
) -> str:
    shown = shown_columns(columns, rows[:limit])
    head = "".join(f"<th>{_esc(c.header)}</th>" for c in shown)
    body = "".join(
        "<tr>" + "".join(f"<td>{_esc(c.text(r))}</td>" for c in shown) + "</tr>"
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
        figs = report_figures(report.to_dict())
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
        origin_ns = report_origin_ns(report)
        for f in report.findings:
            parts.append(
                f"<li class='{_esc(f.severity)}'><b>{_esc(f.severity)}</b> ({_esc(f.report)}): "
                f"{_esc(f.title)}{_evidence(evidence_rows(f, origin_ns))}<i>{_esc(f.advice)}</i></li>"
            )
        parts.append("</ul>")
        for i, fig in enumerate(figs):
            payload = orjson.dumps(fig).decode().replace("</", "<\\/")
            parts.append(
                f"<div id='fig{i}'></div><script>"
                f"(function(){{var f={payload};Plotly.newPlot('fig{i}',f.data,f.layout);}})();"
                "</script>"
            )
        for view in report_views(report):
            if view.name != "findings":
                parts.append(_table(view.title, view.rows, view.columns))
        parts.append("</body></html>")
        return "".join(parts)
