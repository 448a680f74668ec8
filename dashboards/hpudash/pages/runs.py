"""Runs: every run and trace under the directory with its key figures (rescanned live)."""

from __future__ import annotations

from typing import Any

import dash
from dash import Input, Output, State, dcc, html

from hpudash import figures
from hpudash.data import DataStore, log
from hpudash.ids import Id
from hpudash.pages.common import Context, grid, href
from hpuprof.errors import HpuprofError

PATH = "/"
TITLE = "Runs"
NEEDS_RUN = False
REFRESH_MS = 10_000


def run_rows(store: DataStore) -> list[dict[str, Any]]:
    """One row per entry: its key figures, or the reason it could not be read."""
    out = []
    for e in store.entries():
        row: dict[str, Any] = {"run": e.key, "kind": e.kind, "MB": round(e.size / 1e6, 2)}
        try:
            figs = store.small(
                e.key, "figures", lambda k: figures.key_figures(store.report(k), store.trace(k))
            )
            row |= figs | {"status": "ok"}
        except HpuprofError as error:
            row["status"] = f"unreadable: {error}"
        except Exception as error:
            log.exception("key figures of %s", e.key)
            row["status"] = f"error: {type(error).__name__}: {error}"
        out.append(row)
    return out


def layout(ctx: Context) -> Any:
    rows = run_rows(ctx.store)
    return html.Div(
        [
            html.H2("Runs"),
            html.Div(
                [
                    html.Span(
                        f"{len(rows)} runs and traces under {ctx.store.root}", id=Id.RUNS_COUNT
                    ),
                    html.Button(
                        "Rescan", id=Id.RUNS_REFRESH, n_clicks=0, style={"marginLeft": "1em"}
                    ),
                ]
            ),
            html.P("Click a row to open its overview. Device times of emulated runs are modeled."),
            grid(Id.RUNS_GRID, rows, height=480, dashGridOptions={"rowSelection": "single"}),
            dcc.Interval(id="runs-interval", interval=REFRESH_MS),
        ]
    )


def register(app: dash.Dash, store: DataStore) -> None:
    @app.callback(
        Output(Id.RUNS_GRID, "rowData"),
        Output(Id.RUNS_COUNT, "children"),
        Input(Id.RUNS_REFRESH, "n_clicks"),
        Input("runs-interval", "n_intervals"),
        prevent_initial_call=True,
    )
    def rescan(_clicks: int, _ticks: int) -> tuple[list[dict[str, Any]], str]:
        rows = run_rows(store)
        return rows, f"{len(rows)} runs and traces under {store.root}"

    @app.callback(
        Output(Id.URL, "href", allow_duplicate=True),
        Input(Id.RUNS_GRID, "cellClicked"),
        State(Id.RUNS_GRID, "rowData"),
        prevent_initial_call=True,
    )
    def open_run(cell: dict[str, Any] | None, data: list[dict[str, Any]]) -> str:
        if not cell or cell.get("rowIndex") is None:
            raise dash.exceptions.PreventUpdate
        key = str(cell.get("data", {}).get("run") or data[int(cell["rowIndex"])]["run"])
        return href("/overview", run=key)
