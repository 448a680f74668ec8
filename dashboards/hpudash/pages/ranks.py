"""Ranks: per-rank step times and stragglers (multi-rank runs)."""

from __future__ import annotations

from typing import Any

import dash
from dash import dcc, html

from hpudash import figures
from hpudash.data import DataStore
from hpudash.ids import Id
from hpudash.pages.common import Context, grid, message

PATH = "/ranks"
TITLE = "Ranks"
NEEDS_RUN = True


def layout(ctx: Context) -> Any:
    steps = ctx.store.derived(ctx.run, "steps", figures.step_durations)
    table = figures.stragglers(steps)
    slow = [r["rank"] for r in table if r["straggler"]]
    note = (
        f"Stragglers (> {figures.STRAGGLER_PCT:g} % slower than the median rank): {slow}"
        if slow else "No stragglers." if len(table) > 1 else "Single-rank run."
    )  # fmt: skip
    return html.Div(
        [
            html.H2(f"Ranks: {ctx.run}"),
            message(note, "warning" if slow else "info"),
            dcc.Graph(id=Id.RANKS_GRAPH, figure=figures.rank_steps_figure(steps)),
            html.Div(grid("ranks-table", table, height=240), id=Id.RANKS_STRAGGLERS),
        ]
    )


def register(app: dash.Dash, store: DataStore) -> None:
    """No callbacks."""
