"""Overview of one run: findings first, key figures, time per step, host/device, downloads."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import dash
from dash import dcc, html

from hpudash.data import DataStore
from hpudash.ids import Id
from hpudash.pages.common import (
    Context,
    finding_card,
    key_figure_items,
    kpis,
    message,
    run_meta,
    section_errors,
)
from hpudash.reportview import findings, report_of
from hpudash.server import file_href
from hpuprof.render import figures

PATH = "/overview"
TITLE = "Overview"
NEEDS_RUN = True


def layout(ctx: Context) -> Any:
    store = ctx.store
    entry = store.entry(ctx.run)
    doc = store.view(entry)
    figs = store.key_figures(entry)
    downloads: list[Any] = [
        html.A(
            f"Download {p.name}",
            href=file_href(store, p),
            id=Id.OVERVIEW_DOWNLOAD_TRACE if i == 0 else Id.OVERVIEW_DOWNLOAD_TRACE.item(i),
            className="button",
        )
        for i, p in enumerate(entry.files())
    ]
    if doc.get("data"):
        downloads.append(
            html.A(
                "Download the HTML report",
                href=f"/report.html?run={quote(entry.key)}",
                id=Id.OVERVIEW_DOWNLOAD_REPORT,
                className="button",
            )
        )
    estimate = figs.get("lazy_port_estimate")
    found = findings(doc)
    return html.Div(
        [
            html.H2(f"Overview: {entry.key}"),
            run_meta(doc),
            *section_errors(doc.get("errors") or {}),
            html.H3("Findings"),
            html.Div(
                [finding_card(f) for f in found]
                or [message("No findings: nothing above its threshold.")],
                id=Id.OVERVIEW_FINDINGS,
            ),
            html.H3("Key figures"),
            kpis(key_figure_items(figs), Id.OVERVIEW_KPIS),
            message(f"Compilations: {estimate}.", "info") if estimate else None,
            dcc.Graph(id=Id.OVERVIEW_STEPS, figure=figures.steps_figure(report_of(doc))),
            dcc.Graph(id=Id.OVERVIEW_RATIO, figure=figures.host_device_figure(report_of(doc))),
            html.H3("Files"),
            html.Div(downloads, className="downloads"),
        ]
    )


def register(app: dash.Dash, store: DataStore) -> None:
    """No callbacks: the page is built once per visit from the run's analysed view."""
