"""Compare: two runs side by side, deltas of key figures and per-op time, regressions flagged."""

from __future__ import annotations

import dataclasses
from typing import Any

import dash
from dash import Input, Output, html

from hpudash import figures
from hpudash.data import DataStore
from hpudash.ids import Id
from hpudash.pages.common import Context, grid, message, run_picker
from hpuprof.errors import HpuprofError

PATH = "/compare"
TITLE = "Compare"
NEEDS_RUN = False


def comparison(
    store: DataStore, a: str, b: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(key-figure deltas, per-op deltas) of run B against run A."""

    deltas = figures.compare_figures(store.key_figures(a), store.key_figures(b))
    kpi = [dataclasses.asdict(d) for d in deltas]
    ops_a = store.derived(a, "op_table", figures.op_table)
    ops_b = store.derived(b, "op_table", figures.op_table)
    ops = figures.compare_ops(ops_a, ops_b).to_dict("records")
    return kpi, [{str(k): v for k, v in r.items()} for r in ops]


def body(store: DataStore, a: str | None, b: str | None) -> list[Any]:
    if not a or not b:
        return [message("Pick two runs.")]
    kpi, ops = comparison(store, a, b)
    regressions = [r["metric"] for r in kpi if r["regression"]] + [
        r["name"] for r in ops if r["regression"]
    ]
    return [
        message(f"Regressions of B against A: {', '.join(map(str, regressions[:12]))}" if regressions else "No regressions of B against A.",
                "warning" if regressions else "info"),
        html.H3("Key figures (delta = B - A)"),
        grid(Id.CMP_KPIS, kpi, height=300),
        html.H3("Per-op time (host + device), largest increase first"),
        grid(Id.CMP_OPS, ops, height=420),
    ]  # fmt: skip


def layout(ctx: Context) -> Any:
    keys = [e.key for e in ctx.store.entries()]
    a = ctx.run or (keys[0] if keys else "")
    b = ctx.query.get("b") or next((k for k in keys if k != a), "")
    return html.Div(
        [
            html.H2("Compare runs"),
            html.Div([html.Span("A "), run_picker(ctx, Id.CMP_A, a), html.Span(" B "), run_picker(ctx, Id.CMP_B, b)], className="pickers"),
            html.Div(body(ctx.store, a, b), id="compare-body"),
        ]
    )  # fmt: skip


def register(app: dash.Dash, store: DataStore) -> None:
    @app.callback(
        Output("compare-body", "children"),
        Input(Id.CMP_A, "value"),
        Input(Id.CMP_B, "value"),
        prevent_initial_call=True,
    )
    def update(a: str | None, b: str | None) -> list[Any]:
        try:
            return body(store, a, b)
        except HpuprofError as error:
            return [message(str(error), "error")]
