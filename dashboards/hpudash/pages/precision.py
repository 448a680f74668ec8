"""Precision: device time by dtype, casts, and the op lists of the autocast analysis."""

from __future__ import annotations

from typing import Any

import dash
from dash import dcc, html

from hpudash.data import DataStore
from hpudash.ids import Id
from hpudash.pages.common import (
    Context,
    finding_card,
    kv_table,
    notes,
    page_head,
    report_grid,
)
from hpudash.reportview import facts, findings, report_of, table
from hpuprof.render import figures

PATH = "/precision"
TITLE = "Precision"
NEEDS_RUN = True
TABLES: tuple[str, ...] = (
    "precision_by_op", "precision_by_module", "casts", "missed_lower_precision",
    "fp32_list_in_low_precision",
)  # fmt: skip


def layout(ctx: Context) -> Any:
    entry = ctx.store.entry(ctx.run)
    doc = ctx.store.view(entry)
    parts: list[Any] = []
    for i, name in enumerate(TABLES):
        spec = table(doc, name)
        title = spec["title"] if spec else name.replace("_", " ").capitalize()
        count = len(spec["rows"]) if spec else 0
        parts += [
            html.H3(f"{title} ({count})"),
            report_grid(Id.PREC_TABLE.item(i), doc, name, height=260),
        ]
    return html.Div(
        [
            *page_head("Precision", entry.key, doc, "precision"),
            kv_table(facts(doc, "precision"), id_=Id.PREC_FACTS),
            *[finding_card(f) for f in findings(doc, "precision")],
            *notes(doc, "precision"),
            dcc.Graph(id=Id.PREC_DTYPE, figure=figures.dtype_figure(report_of(doc))),
            html.Div(parts, id=Id.PREC_TABLES),
        ]
    )


def register(app: dash.Dash, store: DataStore) -> None:
    """No callbacks."""
