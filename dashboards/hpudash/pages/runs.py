"""Runs: every run and trace under the directory with its key figures (rescanned live).

Opening the page never waits for every trace to be analysed: figures already known (in
memory or in the dashboard's disk cache, `hpudash.diskcache`) are shown at once, others are computed
within a time budget per request and the rest marked pending; a fast interval keeps filling
them in, then slows to a periodic rescan so new runs appear without a restart.

A click on a row opens the run's Overview in the browser alone (a clientside callback: no
round trip before the page's own), and the page holds a hidden graph so the plotting
library is loaded and ready while the user reads this page, not after the click.
"""

from __future__ import annotations

import time
from typing import Any

import dash
from dash import Input, Output, State, dcc, html

from hpudash.catalog import Entry
from hpudash.data import DataStore, log
from hpudash.ids import Id
from hpudash.pages.common import Context, grid, grid_rows, key_columns, key_figure_row
from hpuprof.capture.run_dir import read_run_end
from hpuprof.errors import HpuprofError

PATH = "/"
TITLE = "Runs"
NEEDS_RUN = False
REFRESH_MS = 10_000
FILL_MS = 1_000
LAYOUT_BUDGET_S = 1.0
FILL_BUDGET_S = 2.0
PENDING = "pending"
COLUMNS: tuple[tuple[str, str], ...] = (
    ("run", "Run"), ("status", "Status"), ("ended", "Run ended"), ("device", "Device"),
    ("ranks", "Ranks"),
    *key_columns(), ("events", "Events"), ("kind", "Kind"), ("MB", "Size (MB)"),
)  # fmt: skip
FIELDS: tuple[str, ...] = tuple(f for f, _ in COLUMNS)
KINDS = {"run": "run directory", "ranks": "rank files", "trace": "trace file"}


def _compute(store: DataStore, e: Entry) -> tuple[dict[str, Any], str]:
    """(figures, "ok") of an entry not yet known, or ({}, why it failed), remembered."""
    try:
        return store.key_figures(e), "ok"
    except HpuprofError as error:
        status = f"unreadable: {error}"
    except Exception as error:
        log.exception("key figures of %s", e.key)
        status = f"error: {type(error).__name__}: {error}"
    store.fail(e, status)
    return {}, status


def _ended(e: Entry) -> str | None:
    """How a recorded run ended (`run.json`: completed, failed, exception, signal, killed), as
    `hpuprof info` says it; None for rank directories and trace files."""
    if e.kind != "run":
        return None
    end = read_run_end(e.path)
    return None if end is None else end.summary


def run_rows(store: DataStore, budget_s: float = LAYOUT_BUDGET_S) -> list[dict[str, Any]]:
    """One row per entry (COLUMNS): its key figures, PENDING, or why it could not be read.

    Figures not yet known are computed until `budget_s` seconds have passed (at least one
    is always attempted when `budget_s` > 0); the rest stay PENDING for the next call.
    """
    deadline = time.monotonic() + budget_s
    out = []
    computed = 0
    for e in store.entries():
        figs, status = store.cached_key_figures(e), "ok"
        if figs is None:
            failed = store.failure(e)
            figs, status = {}, failed or PENDING
            if not failed and budget_s > 0 and (not computed or time.monotonic() < deadline):
                figs, status = _compute(store, e)
                computed += 1
        row: dict[str, Any] = dict.fromkeys(FIELDS)
        if figs:
            row |= key_figure_row(figs) | {k: figs.get(k) for k in ("device", "ranks", "events")}
        row |= {"run": e.key, "status": status, "kind": KINDS[e.kind], "MB": round(e.size / 1e6, 2)}
        row["ended"] = _ended(e)
        out.append(row)
    return out


def _count(store: DataStore, rows: list[dict[str, Any]]) -> str:
    pending = sum(r["status"] == PENDING for r in rows)
    more = f" ({pending} still being analysed)" if pending else ""
    return f"{len(rows)} runs and traces under {store.root}{more}"


def _interval(rows: list[dict[str, Any]]) -> int:
    return FILL_MS if any(r["status"] == PENDING for r in rows) else REFRESH_MS


def layout(ctx: Context) -> Any:
    rows = run_rows(ctx.store)
    return html.Div(
        [
            html.H2("Runs"),
            html.Div(
                [
                    html.Span(_count(ctx.store, rows), id=Id.RUNS_COUNT),
                    html.Button(
                        "Rescan", id=Id.RUNS_REFRESH, n_clicks=0, style={"marginLeft": "1em"}
                    ),
                ]
            ),
            html.P("Click a row to open its overview. Device times of emulated runs are modeled."),
            grid(
                Id.RUNS_GRID,
                rows,
                height=480,
                columns=COLUMNS,
                wide=("run",),
                getRowId="params.data.run",
                dashGridOptions={"rowSelection": "single"},
            ),
            dcc.Interval(id=Id.RUNS_INTERVAL, interval=_interval(rows)),
            # loads plotly now, while this page is read: the first Overview then only draws
            dcc.Graph(id=Id.RUNS_PRELOAD, figure={"data": []}, style={"display": "none"}),
        ]
    )


OPEN_RUN_JS = """
function (cell, data) {
    // rowId is the run key (getRowId): rowIndex is the displayed position, which sorting
    // and filtering change, so it cannot index rowData
    var key = cell && cell.rowId;
    var known = (data || []).some(function (r) { return r.run === key; });
    if (!key || !known) { return window.dash_clientside.no_update; }
    return "/overview?" + new URLSearchParams({run: String(key)}).toString();
}
"""
"""The row click: the Overview's address as `href("/overview", run=key)` writes it."""


def register(app: dash.Dash, store: DataStore) -> None:
    @app.callback(
        Output(Id.RUNS_GRID, "rowData"),
        Output(Id.RUNS_COUNT, "children"),
        Output(Id.RUNS_INTERVAL, "interval"),
        Input(Id.RUNS_REFRESH, "n_clicks"),
        Input(Id.RUNS_INTERVAL, "n_intervals"),
        prevent_initial_call=True,
    )
    def rescan(_clicks: int, _ticks: int) -> tuple[list[dict[str, Any]], str, int]:
        rows = run_rows(store, FILL_BUDGET_S)
        return grid_rows(rows, COLUMNS), _count(store, rows), _interval(rows)

    app.clientside_callback(
        OPEN_RUN_JS,
        Output(Id.URL, "href", allow_duplicate=True),
        Input(Id.RUNS_GRID, "cellClicked"),
        State(Id.RUNS_GRID, "rowData"),
        prevent_initial_call=True,
    )
