"""Overview of one run: findings first, KPIs, per-step breakdown, host/device ratio, downloads."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import dash
from dash import dcc, html

from hpudash import figures
from hpudash.data import DataStore
from hpudash.ids import Id
from hpudash.pages.common import Context, kpis, message, section_errors
from hpudash.server import file_href

PATH = "/overview"
TITLE = "Overview"
NEEDS_RUN = True


def finding_card(f: dict[str, Any]) -> html.Div:
    evidence = ", ".join(f"{k}: {v}" for k, v in f["evidence"].items())
    return html.Div(
        [
            html.Span(str(f["severity"]).upper(), className=f"sev sev-{f['severity']}"),
            html.B(str(f["title"])),
            html.Div(f"{f['metric']} = {f['value']} (threshold {f['threshold']})", className="small"),
            html.Div(f"evidence: {evidence}", className="small") if evidence else None,
            html.Div(f"advice: {f['advice']}") if f.get("advice") else None,
        ],
        className="finding",
    )  # fmt: skip


def layout(ctx: Context) -> Any:
    store, key = ctx.store, ctx.run
    analysis = store.analysis(key)
    report = analysis.data
    entry = store.entry(key)
    figs = store.key_figures(entry)
    found = figures.findings(report)
    downloads = [
        html.A(
            f"Download trace {p.name} (open in ui.perfetto.dev)",
            href=file_href(store, p),
            id=Id.OVERVIEW_DOWNLOAD_TRACE if i == 0 else f"{Id.OVERVIEW_DOWNLOAD_TRACE}-{i}",
            className="button",
        )
        for i, p in enumerate((*entry.perfetto, *entry.traces))
    ]
    if analysis.report is not None:
        downloads.append(
            html.A("Download HTML report", href=f"/report.html?run={quote(key)}", id=Id.OVERVIEW_DOWNLOAD_REPORT, className="button")
        )  # fmt: skip
    modeled = figs.get("device_time") == "modeled"
    return html.Div(
        [
            html.H2(f"Overview: {key}"),
            message("Device times in this trace are modeled by the emulator, not measured.")
            if modeled else None,
            *section_errors(analysis.errors),
            html.H3("Findings"),
            html.Div(
                [finding_card(f) for f in found] or [message("No findings: nothing above threshold.")],
                id=Id.OVERVIEW_FINDINGS,
            ),
            html.H3("Key figures"),
            kpis(figures.kpi_items(figs), Id.OVERVIEW_KPIS),
            dcc.Graph(id=Id.OVERVIEW_STEPS, figure=figures.steps_figure(report)),
            dcc.Graph(id=Id.OVERVIEW_RATIO, figure=figures.host_device_figure(report)),
            html.Div(downloads, className="downloads"),
        ]
    )  # fmt: skip


def register(app: dash.Dash, store: DataStore) -> None:
    """No callbacks: the page is built once per visit from cached data."""
