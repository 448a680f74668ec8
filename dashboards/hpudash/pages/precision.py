"""Precision: time and FLOPs by dtype, casts, the missed-bf16 and fp32-risk lists."""

from __future__ import annotations

from typing import Any

import dash
from dash import dcc, html

from hpudash import figures
from hpudash.data import DataStore
from hpudash.ids import Id
from hpudash.pages.common import Context, grid, message, section_errors

PATH = "/precision"
TITLE = "Precision"
NEEDS_RUN = True


def layout(ctx: Context) -> Any:
    analysis = ctx.store.analysis(ctx.run)
    report = analysis.data
    tables: list[Any] = []
    for i, (title, rows) in enumerate(figures.precision_tables(report)):
        tables.append(html.H3(f"{title} ({len(rows)})"))
        tables.append(grid(f"prec-table-{i}", rows, height=220) if rows else message("none"))
    return html.Div(
        [
            html.H2(f"Precision: {ctx.run}"),
            *section_errors({k: v for k, v in analysis.errors.items() if k == "precision"}),
            dcc.Graph(id=Id.PREC_DTYPE, figure=figures.dtype_figure(report)),
            html.Div(tables, id=Id.PREC_TABLES),
        ]
    )


def register(app: dash.Dash, store: DataStore) -> None:
    """No callbacks."""
