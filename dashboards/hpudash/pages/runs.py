"""Runs: every run and trace under the directory with its key figures (rescanned live).

Opening the page never waits for every trace to be analysed: figures already known (in
memory or in the dashboard's disk cache, `hpudash.diskcache`) are shown at once, the rest
marked pending; a fast interval's rescan computes them within a time budget per tick, then
slows to a periodic rescan so new runs appear without a restart. After each rescan the grid
asks for its page again, which reads that rescan's rows.

The grid holds one page (`PAGE_ROWS` rows): each refresh asks the server for the page shown,
sorted and filtered there over every row (`hpudash.grid_query`), so a tree of 10,000 runs sends
100 rows, not all of them (3.7 MB a refresh before). A figure the trace cannot give shows why
("not measurable (no steps)", as on the Overview) in its otherwise empty cell: the text is
only shown, the cell's value stays empty, so number columns sort and filter numbers.

A click on a row opens the run's Overview in the browser alone (a clientside callback: no
round trip before the page's own), and the page holds a hidden graph so the plotting
library is loaded and ready while the user reads this page, not after the click.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import dash
from dash import Input, Output, State, dcc, html

from hpudash.catalog import Entry
from hpudash.data import DataStore, log
from hpudash.grid_query import page
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
PAGE_ROWS = 100
WHY_EMPTY = "not_measurable"
"""The row field holding, per key-figure column, why its cell is empty."""
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
            row |= _figure_cells(store, e, figs)
        row |= {"run": e.key, "status": status, "kind": KINDS[e.kind], "MB": round(e.size / 1e6, 2)}
        row["ended"] = _ended(e)
        out.append(row)
    return out


def _figure_cells(store: DataStore, e: Entry, figs: dict[str, Any]) -> dict[str, Any]:
    """The grid cells of an entry's figures, made once per version of the entry (a refresh of
    10,000 runs made them all again: 0.35 ms a row)."""
    key = (e.version, "runs-row")
    cells = store.memory.get(key)
    if cells is None:
        cells = key_figure_row(figs) | {k: figs.get(k) for k in ("device", "ranks", "events")}
        cells[WHY_EMPTY] = _why_empty(figs)
        store.memory.put(key, cells)
    return dict(cells)


def _why_empty(figs: dict[str, Any]) -> dict[str, str]:
    """Why each figure the trace cannot give is empty (the key figures' `not_measurable`)."""
    missing = figs.get("not_measurable")
    if not isinstance(missing, dict):
        return {}
    return {str(k): str(v) for k, v in missing.items() if k in FIELDS and v}


def page_response(rows: list[dict[str, Any]], request: Any) -> dict[str, Any]:
    """The grid's `getRowsResponse` to `request`: one page of `rows` as grid cells (with why
    a figure is empty), and how many rows pass its filters."""
    found = page(rows, request)
    cells = grid_rows(found.rows, COLUMNS)
    for cell, row in zip(cells, found.rows, strict=True):
        if row.get(WHY_EMPTY):
            cell[WHY_EMPTY] = row[WHY_EMPTY]
    return {"rowData": cells, "rowCount": found.total}


def _count(store: DataStore, rows: list[dict[str, Any]]) -> str:
    pending = sum(r["status"] == PENDING for r in rows)
    more = f" ({pending} still being analysed)" if pending else ""
    return f"{len(rows)} runs and traces under {store.root}{more}"


def _interval(rows: list[dict[str, Any]]) -> int:
    return FILL_MS if any(r["status"] == PENDING for r in rows) else REFRESH_MS


def layout(ctx: Context) -> Any:
    """The page; its rows come with the grid's first request (`rows_page`)."""
    return html.Div(
        [
            html.H2("Runs"),
            html.Div(
                [
                    html.Span("", id=Id.RUNS_COUNT),
                    html.Button(
                        "Rescan", id=Id.RUNS_REFRESH, n_clicks=0, style={"marginLeft": "1em"}
                    ),
                ]
            ),
            html.P("Click a row to open its overview. Device times of emulated runs are modeled."),
            grid(
                Id.RUNS_GRID,
                None,
                height=480,
                columns=COLUMNS,
                wide=("run",),
                empty_text=WHY_EMPTY,
                getRowId="params.data.run",
                rowModelType="infinite",
                dashGridOptions={
                    "rowSelection": "single",
                    "pagination": True,
                    "paginationPageSize": PAGE_ROWS,
                    "paginationPageSizeSelector": False,
                    "cacheBlockSize": PAGE_ROWS,
                    "maxBlocksInCache": 2,
                },
            ),
            dcc.Interval(id=Id.RUNS_INTERVAL, interval=FILL_MS),
            dcc.Store(id=Id.RUNS_REFRESHED),
            # loads plotly now, while this page is read: the first Overview then only draws
            dcc.Graph(id=Id.RUNS_PRELOAD, figure={"data": []}, style={"display": "none"}),
        ]
    )


OPEN_RUN_JS = """
function (cell) {
    // rowId is the run key (getRowId): rowIndex is the displayed position, which sorting,
    // filtering and paging change
    var key = cell && cell.rowId;
    if (!key) { return window.dash_clientside.no_update; }
    return "/overview?" + new URLSearchParams({run: String(key)}).toString();
}
"""
"""The row click: the Overview's address as `href("/overview", run=key)` writes it (the
Overview resolves the key against the catalog: an unknown one names nothing)."""

REFRESH_JS = """
function (refreshed, gridId) {
    // the page shown is asked for again (a getRowsRequest): no row leaves the server otherwise
    dash_ag_grid.getApiAsync(gridId).then(function (api) { api.refreshInfiniteCache(); });
    return window.dash_clientside.no_update;
}
"""
"""After a rescan (button or interval), the grid asks for the page it shows again."""


class _LatestRows:
    """The rows of the last rescan, which the page requests that follow it read (a rescan walks
    the tree and checks every run's figures: 10,000 runs took seconds); rows older than
    `ROWS_TTL_S` (or none yet) are made again."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: list[dict[str, Any]] | None = None
        self._at = -float("inf")

    def keep(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        with self._lock:
            self._rows, self._at = rows, time.monotonic()
        return rows

    def rows(self, store: DataStore) -> list[dict[str, Any]]:
        with self._lock:
            if self._rows is not None and time.monotonic() - self._at <= ROWS_TTL_S:
                return self._rows
        return self.keep(run_rows(store, 0))


ROWS_TTL_S = 2 * REFRESH_MS / 1000
"""How long a rescan's rows serve page requests (two periodic rescans)."""


def register(app: dash.Dash, store: DataStore) -> None:
    latest = _LatestRows()

    @app.callback(
        Output(Id.RUNS_GRID, "getRowsResponse"),
        Output(Id.RUNS_COUNT, "children"),
        Input(Id.RUNS_GRID, "getRowsRequest"),
        prevent_initial_call=True,
    )
    def rows_page(request: Any) -> tuple[dict[str, Any], str]:
        rows = latest.rows(store)  # (figures are made by `rescan`, between pages)
        return page_response(rows, request), _count(store, rows)

    @app.callback(
        Output(Id.RUNS_REFRESHED, "data"),
        Output(Id.RUNS_INTERVAL, "interval"),
        Input(Id.RUNS_REFRESH, "n_clicks"),
        Input(Id.RUNS_INTERVAL, "n_intervals"),
        prevent_initial_call=True,
    )
    def rescan(clicks: int, ticks: int) -> tuple[int, int]:
        """Figures not yet known made (for `FILL_BUDGET_S`), then the grid asks for its page
        again (`REFRESH_JS`)."""
        rows = latest.keep(run_rows(store, FILL_BUDGET_S))
        return (clicks or 0) + (ticks or 0), _interval(rows)

    app.clientside_callback(
        REFRESH_JS,
        Output(Id.RUNS_GRID, "className"),  # (a no_update: a callback needs an output)
        Input(Id.RUNS_REFRESHED, "data"),
        State(Id.RUNS_GRID, "id"),
        prevent_initial_call=True,
    )
    app.clientside_callback(
        OPEN_RUN_JS,
        Output(Id.URL, "href", allow_duplicate=True),
        Input(Id.RUNS_GRID, "cellClicked"),
        prevent_initial_call=True,
    )
