"""Ops: every host op with self and total host time and its device time, and every kernel.

The tables are the ops report of `hpuprof.analysis` (lazy-mode graphs attribute their device
time back to the ops they hold); one search box filters them all. With several ranks the host
ops table adds the ranks up (its heading says so) and "Ops per rank" has a rank column.
"""

from __future__ import annotations

from typing import Any

import dash
from dash import Input, Output, dcc, html

from hpudash.data import DataStore
from hpudash.ids import Id
from hpudash.pages.common import Context, kv_table, notes, page_head, report_grid
from hpudash.reportview import facts, section

PATH = "/ops"
TITLE = "Ops"
NEEDS_RUN = True
OP_COLUMNS = (
    "name", "calls", "self_ns", "total_ns", "device_self_ns", "device_total_ns", "device_ops",
    "mean_ns", "fallbacks", "shapes", "dtype", "module", "phase",
)  # fmt: skip
BY_RANK_COLUMNS = ("rank", "name", "calls", "self_ns", "total_ns", "device_self_ns")
KERNEL_COLUMNS = ("name", "kernel_type", "engine", "count", "total_ns", "mean_ns", "pct_of_device", "op")  # fmt: skip


def layout(ctx: Context) -> Any:
    entry = ctx.store.entry(ctx.run)
    doc = ctx.store.view(entry)
    n_ops = len(section(doc, "ops", "ops") or [])
    n_kernels = len(section(doc, "ops", "kernels") or [])
    by_rank = section(doc, "ops", "by_rank") or []
    ranks = len({r.get("rank") for r in by_rank if isinstance(r, dict)})
    summed = f", added over {ranks} ranks" if ranks > 1 else ""
    per_rank = html.Div(  # drawn for one rank too (hidden), so the search callback finds it
        [
            html.H3(f"Ops per rank ({len(by_rank):,}: one row per op and rank)"),
            report_grid(Id.OPS_BY_RANK, doc, "ops_by_rank", BY_RANK_COLUMNS, height=420),
        ],
        style={} if ranks > 1 else {"display": "none"},
    )
    return html.Div(
        [
            *page_head("Ops", entry.key, doc, "ops"),
            kv_table(facts(doc, "ops"), id_=Id.OPS_FACTS),
            *notes(doc, "ops"),
            dcc.Input(
                id=Id.OPS_SEARCH,
                type="search",
                placeholder="search ops and kernels (name, shapes, module)...",
                debounce=True,
                style={"width": "420px"},
            ),
            html.H3(f"Host ops ({n_ops:,}{summed})"),
            report_grid(Id.OPS_GRID, doc, "ops", OP_COLUMNS, height=520),
            per_rank,
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

    @app.callback(
        Output(Id.OPS_BY_RANK, "dashGridOptions"),
        Input(Id.OPS_SEARCH, "value"),
        prevent_initial_call=True,
    )
    def search_by_rank(text: str | None) -> dict[str, Any]:
        return {"quickFilterText": text if isinstance(text, str) else ""}
