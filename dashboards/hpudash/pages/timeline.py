"""Timeline: host threads and device engines, level of detail computed on the server per zoom."""

from __future__ import annotations

from typing import Any

import dash
import orjson
from dash import Input, Output, State, dcc, html

from hpudash import timeline as tl
from hpudash.data import DataStore
from hpudash.ids import Id
from hpudash.pages.common import Context, message, parse_query

PATH = "/timeline"
TITLE = "Timeline"
NEEDS_RUN = True


def status(w: tl.Window) -> str:
    what = (
        "exact slices"
        if w.mode == "exact"
        else "busy fraction per pixel bucket (zoom in for slices)"
    )
    return f"{w.total} slices in {(w.t1 - w.t0) / 1e6:.3f} ms; showing {what}; {len(w.mark_ts)} marked events"  # fmt: skip


def view(store: DataStore, key: str, window: tuple[float | None, float | None]) -> tuple[Any, str]:
    """(figure, status) of one window of run `key`: the zoom callback's whole work."""
    idx = store.derived(key, "timeline_index", tl.build_index)
    w = tl.query(idx, *window)
    return tl.figure(w, revision=key), status(w)


def layout(ctx: Context) -> Any:
    fig, text = view(ctx.store, ctx.run, (None, None))
    return html.Div(
        [
            html.H2(f"Timeline: {ctx.run}"),
            html.Div(text, id=Id.TIMELINE_STATUS, className="small"),
            dcc.Graph(id=Id.TIMELINE_GRAPH, figure=fig, config={"scrollZoom": True, "displaylogo": False}),
            html.H3("Event details"),
            html.Div(message("Click a slice or a marker."), id=Id.TIMELINE_DETAILS),
        ]
    )  # fmt: skip


def register(app: dash.Dash, store: DataStore) -> None:
    @app.callback(
        Output(Id.TIMELINE_GRAPH, "figure"),
        Output(Id.TIMELINE_STATUS, "children"),
        Input(Id.TIMELINE_GRAPH, "relayoutData"),
        State(Id.URL, "search"),
        prevent_initial_call=True,
    )
    def zoom(relayout: dict[str, Any] | None, search: str) -> tuple[Any, str]:
        key = parse_query(search).get("run", "")
        idx = store.derived(key, "timeline_index", tl.build_index)
        window = tl.window_from_relayout(relayout, idx.span_ns)
        if window is None:
            raise dash.exceptions.PreventUpdate
        return view(store, key, window)

    @app.callback(
        Output(Id.TIMELINE_DETAILS, "children"),
        Input(Id.TIMELINE_GRAPH, "clickData"),
        State(Id.URL, "search"),
        prevent_initial_call=True,
    )
    def details(click: dict[str, Any] | None, search: str) -> Any:
        points = (click or {}).get("points") or []
        data = points[0].get("customdata") if points else None
        if not (isinstance(data, list) and len(data) == 2 and data[0] == "e"):
            return message("That is an aggregated bucket: zoom in to click single slices.")
        key = parse_query(search).get("run", "")
        fields = tl.event_details(store.trace(key), int(data[1]))
        text = orjson.dumps(fields, option=orjson.OPT_INDENT_2, default=str).decode()
        return html.Pre(text, className="details")
