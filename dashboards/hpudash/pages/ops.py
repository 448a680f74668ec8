"""Ops: every host op with self and total host time and its device time, and every kernel.

Both tables are the ops report of `hpuprof.analysis` (lazy-mode graphs attribute their device
time back to the ops they hold); one search box filters both.
"""

from __future__ import annotations

from typing import Any

import dash
from dash import Input, Output, dcc, html

from hpudash.data import DataStore
from hpudash.ids import Id
from hpudash.pages.common import Context, errors_of, kv_table, notes, report_grid, run_meta
from hpudash.reportview import facts, section

PATH = "/ops"
TITLE = "Ops"
NEEDS_RUN = True
OP_COLUMNS = (
    "name", "calls", "self_ns", "total_ns", "device_self_ns", "device_total_ns", "device_ops",
    "mean_ns", "fallbacks", "shapes", "dtype", "module", "phase",
)  # fmt: skip
KERNEL_COLUMNS = ("name", "kernel_type", "engine", "count", "total_ns", "mean_ns", "pct_of_device", "op")  # fmt: skip


def layout(ctx: Context) -> Any:
    entry = ctx.store.entry(ctx.run)
    doc = ctx.store.view(entry)
    n_ops = len(section(doc, "ops", "ops") or [])
    n_kernels = len(section(doc, "ops", "kernels") or [])
    return html.Div(
        [
            html.H2(f"Ops: {entry.key}"),
            run_meta(doc),
            *errors_of(doc, "ops"),
            kv_table(facts(doc, "ops"), id_=Id.OPS_FACTS),
            *notes(doc, "ops"),
            dcc.Input(
                id=Id.OPS_SEARCH,
                type="search",
                placeholder="search ops and kernels (name, shapes, module)...",
                debounce=True,
                style={"width": "420px"},
            ),
            html.H3(f"Host ops ({n_ops:,})"),
            report_grid(Id.OPS_GRID, doc, "ops", OP_COLUMNS, height=520),
            html.H3(f"Device kernels ({n_kernels:,})"),
            report_grid(Id.OPS_KERNELS, doc, "kernels", KERNEL_COLUMNS, height=420),
        ]
    )


def register(app: dash.Dash, store: DataStore) -> None:
    @app.callback(
        Output(Id.OPS_GRID, "dashGridOptions"),
        Output(Id.OPS_KERNELS, "dashGridOptions"),
        Input(Id.OPS_SEARCH, "value"),
        prevent_initial_call=True,
    )
    def search(text: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
        options = {"quickFilterText": text if isinstance(text, str) else ""}
        return options, options
