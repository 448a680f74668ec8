"""Memory: memory in use over time per device, its peak, and the ops that allocated most.

From the trace's allocator events (`profile_memory=True`) or the emulator's allocator counter
(modeled bookkeeping, said so); a trace with neither says it has no memory data.
"""

from __future__ import annotations

from typing import Any

import dash
from dash import dcc, html

from hpudash.data import DataStore
from hpudash.ids import Id
from hpudash.pages.common import Context, kv_table, notes, page_head, report_grid
from hpudash.reportview import facts, report_of
from hpuprof.render import figures

PATH = "/memory"
TITLE = "Memory"
NEEDS_RUN = True


def layout(ctx: Context) -> Any:
    entry = ctx.store.entry(ctx.run)
    doc = ctx.store.view(entry)
    return html.Div(
        [
            *page_head("Memory", entry.key, doc, "memory"),
            kv_table(facts(doc, "memory"), id_=Id.MEMORY_FACTS),
            *notes(doc, "memory"),
            dcc.Graph(id=Id.MEMORY_GRAPH, figure=figures.memory_figure(report_of(doc))),
            html.H3("Peak per device"),
            report_grid(Id.MEMORY_DEVICES, doc, "memory_devices", height=240),
            html.H3("Top allocating ops"),
            report_grid(Id.MEMORY_TOP_OPS, doc, "memory_top_ops", height=360),
        ]
    )


def register(app: dash.Dash, store: DataStore) -> None:
    """No callbacks."""
