"""Dynamicity: compilations over time, recompile causes, shape histograms, bucketing."""

from __future__ import annotations

from typing import Any

import dash
from dash import dcc, html

from hpudash import figures
from hpudash.data import DataStore
from hpudash.ids import Id
from hpudash.pages.common import Context, grid, kpis, message, section_errors

PATH = "/dynamicity"
TITLE = "Dynamicity"
NEEDS_RUN = True


def layout(ctx: Context) -> Any:
    analysis = ctx.store.analysis(ctx.run)
    report = analysis.data
    dyn = figures.section(report, "dynamicity") or {}
    bucket = figures.bucketing_text(report)
    return html.Div(
        [
            html.H2(f"Dynamicity: {ctx.run}"),
            *section_errors({k: v for k, v in analysis.errors.items() if k == "dynamicity"}),
            kpis(
                [
                    ("compilations", str(dyn.get("compilations", "n/a"))),
                    ("recompilations", str(dyn.get("recompilations", "n/a"))),
                    ("compile time", f"{float(dyn.get('compile_time_ns') or 0) / 1e6:.3f} ms"),
                ],
                Id.DYN_KPIS,
            ),
            dcc.Graph(id=Id.DYN_COMPILES, figure=figures.compiles_figure(report)),
            dcc.Graph(id=Id.DYN_CAUSES, figure=figures.causes_figure(report)),
            html.H3("Recompiles by graph"),
            grid("dyn-graphs", figures.causes_rows(report), height=260),
            dcc.Graph(id=Id.DYN_SHAPES, figure=figures.shapes_figure(report)),
            html.H3("Bucketing recommendation"),
            html.Div(message(bucket) if bucket else message("No bucketing recommendation: shapes are static or too few."), id=Id.DYN_BUCKETING),
        ]
    )  # fmt: skip


def register(app: dash.Dash, store: DataStore) -> None:
    """No callbacks."""
