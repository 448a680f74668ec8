"""Ops: the op table (host and device time, counts, shapes, dtypes, module, phase), searchable."""

from __future__ import annotations

from typing import Any

import dash
from dash import Input, Output, dcc, html

from hpudash import figures
from hpudash.data import DataStore
from hpudash.ids import Id
from hpudash.pages.common import Context, grid

PATH = "/ops"
TITLE = "Ops"
NEEDS_RUN = True


def layout(ctx: Context) -> Any:
    table = ctx.store.derived(ctx.run, "op_table", figures.op_table)
    rows = [{str(k): v for k, v in r.items()} for r in table.to_dict("records")]
    return html.Div(
        [
            html.H2(f"Ops: {ctx.run}"),
            html.P(f"{len(rows)} distinct host ops; device time is that of the device ops each launched."),
            dcc.Input(id=Id.OPS_SEARCH, type="search", placeholder="search ops, shapes, modules...", debounce=True, style={"width": "420px"}),
            grid(Id.OPS_GRID, rows, height=560, wide=("name",)),
        ]
    )  # fmt: skip


def register(app: dash.Dash, store: DataStore) -> None:
    @app.callback(
        Output(Id.OPS_GRID, "dashGridOptions"),
        Input(Id.OPS_SEARCH, "value"),
        prevent_initial_call=True,
    )
    def search(text: str | None) -> dict[str, Any]:
        return {"quickFilterText": text or ""}
