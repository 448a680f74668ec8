"""Timeline: host threads, device streams and engines, counters; detail computed per zoom.

Controls: ranks shown, groups expanded (a collapsed group is one busy row), launch -> device
arrows. The zoom is kept in the URL (`t0`, `t1` in ms since the first event), so a link opens
the same view; W/S zoom and A/D pan (assets/keys.js); the graph's box-select totals the
selected range per name (`hpuprof.analysis.time_range`). "Open in Perfetto UI" posts the
run's trace to ui.perfetto.dev the documented way (assets/perfetto.js).
"""

from __future__ import annotations

import math
from typing import Any

import dash
from dash import Input, Output, State, dcc, html

from hpudash import fmt
from hpudash import timeline as tl
from hpudash.catalog import Entry
from hpudash.data import DataStore, log
from hpudash.details import event_rows
from hpudash.ids import Id
from hpudash.pages.common import Context, grid, href, kv_table, message, parse_query
from hpudash.server import file_href
from hpudash.timeline_index import TimelineIndex
from hpuprof.errors import HpuprofError

PATH = "/timeline"
TITLE = "Timeline"
NEEDS_RUN = True
FLOWS = "flows"
HELP = (
    "Drag to zoom, double-click to see everything; keys W / S zoom in and out, A / D pan. "
    "Pick “Box Select” in the graph's toolbar and drag over a range to total it per name; "
    "click a slice for its details."
)
RANGE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("name", "Name"),
    ("side", "Runs on"),
    ("occurrences", "Occurrences"),
    ("wall_ms", "Wall time in range (ms)"),
    ("self_ms", "Self time in range (ms)"),
    ("avg_ms", "Average duration (ms)"),
)


def status(w: tl.Window) -> str:
    what = (
        "every slice"
        if w.mode == "exact"
        else "busy time per pixel (darker = busier; zoom in for single slices)"
    )
    return (
        f"{w.total:,} slices in {fmt.duration(w.t1 - w.t0)} "
        f"(from {fmt.duration(w.t0)} to {fmt.duration(w.t1)} after the first event); "
        f"showing {what}; {w.marked:,} marked events (compiles, syncs, fallbacks, graph replays)"
    )


def window_from_query(query: dict[str, str]) -> tuple[float | None, float | None]:
    """The (t0, t1) ns a URL's `t0`/`t1` (ms) ask for; (None, None) when absent or invalid."""
    try:
        lo, hi = float(query["t0"]) * 1e6, float(query["t1"]) * 1e6
    except (KeyError, TypeError, ValueError):
        return (None, None)
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return (None, None)
    return (lo, hi)


def window_from_relayout(relayout: Any) -> tuple[float | None, float | None] | None:
    """The x window (ns) a plotly `relayoutData` asks for; (None, None) = reset; None = no change."""
    if not isinstance(relayout, dict) or not relayout:
        return None
    if relayout.get("xaxis.autorange"):
        return (None, None)
    lo = relayout.get("xaxis.range[0]")
    hi = relayout.get("xaxis.range[1]")
    if lo is None and isinstance(relayout.get("xaxis.range"), list):
        lo, hi = (relayout["xaxis.range"] + [None, None])[:2]
    try:
        a, b = float(lo) * 1e6, float(hi) * 1e6  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    if not (math.isfinite(a) and math.isfinite(b)) or a == b:
        return None
    return (min(a, b), max(a, b))


def _ranks(idx: TimelineIndex, chosen: Any) -> list[int] | None:
    if not isinstance(chosen, list) or not chosen:
        return None
    ok = [int(r) for r in chosen if isinstance(r, int) and r in idx.ranks]
    return ok or None


def _groups(idx: TimelineIndex, chosen: Any) -> list[int] | None:
    if not isinstance(chosen, list):
        return None
    return [int(g) for g in chosen if isinstance(g, int) and 0 <= g < len(idx.groups)]


def view(
    store: DataStore,
    key: str | Entry,
    window: tuple[float | None, float | None],
    ranks: list[int] | None = None,
    expanded: list[int] | None = None,
    flows: bool = True,
) -> tuple[Any, str, tl.Window]:
    """(figure, status, window) of one view of run `key`: the zoom callback's whole work."""
    entry = key if isinstance(key, Entry) else store.entry(key)
    idx = store.timeline(entry)
    shown = tl.lanes(idx, ranks, expanded)
    w = tl.query(idx, shown, *window, flows=flows)
    return tl.figure(w, revision=entry.key), status(w), w


def _perfetto_buttons(store: DataStore, entry: Entry) -> list[Any]:
    out = []
    for i, path in enumerate(entry.files()):
        out.append(
            html.Button(
                f"Open {path.name} in Perfetto UI",
                id=Id.TIMELINE_PERFETTO if i == 0 else Id.TIMELINE_PERFETTO.item(i),
                className="button perfetto-open",
                n_clicks=0,
                **{"data-url": file_href(store, path), "data-title": f"{entry.key}: {path.name}"},  # type: ignore[arg-type]
            )
        )
    return out


def layout(ctx: Context) -> Any:
    store = ctx.store
    entry = store.entry(ctx.run)
    idx = store.timeline(entry)
    window = window_from_query(dict(ctx.query))
    expanded = tl.default_expanded(idx)
    fig, text, w = view(store, entry, window, None, expanded)
    multi = len(idx.ranks) > 1
    rank_picker = dcc.Dropdown(
        id=Id.TIMELINE_RANKS,
        options=[{"label": f"rank {r}", "value": r} for r in idx.ranks],
        value=list(idx.ranks),
        multi=True,
        placeholder="all ranks",
        style={"minWidth": "260px"} if multi else {"display": "none"},
    )
    groups = dcc.Checklist(
        id=Id.TIMELINE_GROUPS,
        options=[{"label": g.label, "value": i} for i, g in enumerate(idx.groups)],
        value=expanded,
        inline=True,
        className="groups",
    )
    options = dcc.Checklist(
        id=Id.TIMELINE_OPTIONS,
        options=[{"label": "launch → device-op arrows (when zoomed in)", "value": FLOWS}],
        value=[FLOWS],
        inline=True,
    )
    return html.Div(
        [
            html.H2(f"Timeline: {entry.key}"),
            html.Div(_perfetto_buttons(store, entry), className="downloads"),
            html.Div(id=Id.TIMELINE_PERFETTO_STATUS, className="small"),
            html.Div(
                [html.Span("Ranks", className="label") if multi else None, rank_picker, options],
                className="pickers",
            ),
            html.Div([html.Span("Expanded groups", className="label"), groups], className="pickers"),
            html.P(HELP, className="small"),
            html.Div(text, id=Id.TIMELINE_STATUS, className="small"),
            dcc.Graph(
                id=Id.TIMELINE_GRAPH,
                figure=fig,
                config={"scrollZoom": True, "displaylogo": False, "modeBarButtonsToRemove": ["lasso2d", "autoScale2d"]},
            ),
            dcc.Store(id=Id.TIMELINE_WINDOW, data={"run": entry.key, "t0": w.t0, "t1": w.t1}),
            html.H3("Selected range"),
            html.Div(message("Nothing selected: use Box Select and drag over the timeline."), id=Id.TIMELINE_RANGE),
            html.H3("Slice details"),
            html.Div(message("Click a slice or a marker."), id=Id.TIMELINE_DETAILS),
        ]
    )  # fmt: skip


def _url_with_window(search: str | None, w: tl.Window, span_ns: int) -> str:
    query = parse_query(search)
    query.pop("t0", None)
    query.pop("t1", None)
    if w.t0 > 0 or w.t1 < span_ns:
        query["t0"] = f"{w.t0 / 1e6:.6f}"
        query["t1"] = f"{w.t1 / 1e6:.6f}"
    return "?" + href("", **query).lstrip("?")


def _lane_keys(idx: TimelineIndex, lane: tl.Lane) -> list[tuple[int, str, str]]:
    """The (rank, pid, tid) lanes of the trace a drawn lane covers."""
    group = idx.groups[lane.group]
    if lane.kind == "row":
        tracks = [idx.tracks[int(idx.row_track[lane.ref])]]
    elif lane.kind == "summary":
        tracks = [t for t in idx.tracks if t.group == lane.group and not t.counter]
    else:
        return []
    return [(group.rank, group.pid, t.tid) for t in tracks]


def range_rows(
    store: DataStore, entry: Entry, idx: TimelineIndex, shown: tuple[tl.Lane, ...], box: Any
) -> tuple[str, list[dict[str, Any]]]:
    """(headline, rows) of the totals per name in a box selection (`selectedData["range"]`)."""
    from hpuprof.analysis.time_range import summarize_time_range

    x = box.get("x") if isinstance(box, dict) else None
    y = box.get("y") if isinstance(box, dict) else None
    if not (isinstance(x, list) and len(x) == 2):
        return "", []
    lo_ms, hi_ms = sorted(float(v) for v in x)
    lanes_sel = shown
    if isinstance(y, list) and len(y) == 2:
        a, b = sorted(float(v) for v in y)
        lanes_sel = tuple(lane for i, lane in enumerate(shown) if a - 0.5 <= i <= b + 0.5)
    keys = sorted({k for lane in lanes_sel for k in _lane_keys(idx, lane)})
    summary = summarize_time_range(
        store.trace(entry), idx.t0_ns + int(lo_ms * 1e6), idx.t0_ns + int(hi_ms * 1e6), keys
    )
    rows = [
        {
            "name": r.name, "side": r.side, "occurrences": r.occurrences,
            "wall_ms": fmt.ns_to_ms(r.wall_ns), "self_ms": fmt.ns_to_ms(r.self_ns),
            "avg_ms": fmt.ns_to_ms(r.avg_ns),
        }
        for r in summary.rows
    ]  # fmt: skip
    head = (
        f"{summary.slices:,} slices on {len(keys)} lanes between {fmt.duration(lo_ms * 1e6)} "
        f"and {fmt.duration(hi_ms * 1e6)} ({fmt.duration((hi_ms - lo_ms) * 1e6)})"
    )
    return head, rows


def register(app: dash.Dash, store: DataStore) -> None:
    @app.callback(
        Output(Id.TIMELINE_GRAPH, "figure"),
        Output(Id.TIMELINE_STATUS, "children"),
        Output(Id.TIMELINE_WINDOW, "data"),
        Output(Id.URL, "search", allow_duplicate=True),
        Input(Id.TIMELINE_GRAPH, "relayoutData"),
        Input(Id.TIMELINE_RANKS, "value"),
        Input(Id.TIMELINE_GROUPS, "value"),
        Input(Id.TIMELINE_OPTIONS, "value"),
        State(Id.URL, "search"),
        State(Id.TIMELINE_WINDOW, "data"),
        prevent_initial_call=True,
    )
    def zoom(
        relayout: Any, ranks: Any, groups: Any, options: Any, search: Any, current: Any
    ) -> tuple[Any, Any, Any, Any]:
        key = parse_query(search).get("run", "")
        try:
            entry = store.entry(key)
            idx = store.timeline(entry)
        except HpuprofError as error:
            return dash.no_update, str(error), dash.no_update, dash.no_update
        window: tuple[float | None, float | None] | None
        if dash.ctx.triggered_id == Id.TIMELINE_GRAPH:
            window = window_from_relayout(relayout)
            if window is None:
                raise dash.exceptions.PreventUpdate
        elif isinstance(current, dict) and current.get("run") == entry.key:
            window = (current.get("t0"), current.get("t1"))
        else:
            window = (None, None)
        flows = isinstance(options, list) and FLOWS in options
        try:
            fig, text, w = view(
                store, entry, window, _ranks(idx, ranks), _groups(idx, groups), flows
            )
        except Exception as error:
            log.exception("timeline view of %r", key)
            return dash.no_update, f"This view could not be drawn ({type(error).__name__}).", dash.no_update, dash.no_update  # fmt: skip
        stored = {"run": entry.key, "t0": w.t0, "t1": w.t1}
        return fig, text, stored, _url_with_window(search, w, idx.span_ns)

    @app.callback(
        Output(Id.TIMELINE_DETAILS, "children"),
        Input(Id.TIMELINE_GRAPH, "clickData"),
        State(Id.URL, "search"),
        prevent_initial_call=True,
    )
    def details(click: Any, search: Any) -> Any:
        points = click.get("points") if isinstance(click, dict) else None
        point = points[0] if isinstance(points, list) and points else {}
        data = point.get("customdata") if isinstance(point, dict) else None
        if not (isinstance(data, list) and len(data) == 2 and data[0] == "e"):
            return message("That is busy time of many slices: zoom in to click single slices.")
        if not isinstance(data[1], int) or data[1] < 0:
            return message("That bar is a collapsed group's busy time: expand the group to see its slices.")  # fmt: skip
        try:
            entry = store.entry(parse_query(search).get("run", ""))
            rows = event_rows(store.trace(entry), data[1], store.timeline(entry).t0_ns)
        except HpuprofError as error:
            return message(str(error), "error")
        if not rows:
            return message("No such slice in this run.", "error")
        return kv_table(rows, id_=Id.TIMELINE_DETAILS_TABLE)

    @app.callback(
        Output(Id.TIMELINE_RANGE, "children"),
        Input(Id.TIMELINE_GRAPH, "selectedData"),
        State(Id.URL, "search"),
        State(Id.TIMELINE_RANKS, "value"),
        State(Id.TIMELINE_GROUPS, "value"),
        prevent_initial_call=True,
    )
    def selected(selection: Any, search: Any, ranks: Any, groups: Any) -> Any:
        box = selection.get("range") if isinstance(selection, dict) else None
        if not isinstance(box, dict):
            return message("Nothing selected: use Box Select and drag over the timeline.")
        try:
            entry = store.entry(parse_query(search).get("run", ""))
            idx = store.timeline(entry)
            shown = tl.lanes(idx, _ranks(idx, ranks), _groups(idx, groups))
            head, rows = range_rows(store, entry, idx, shown, box)
        except HpuprofError as error:
            return message(str(error), "error")
        except (TypeError, ValueError):
            return message("That selection has no time range.", "error")
        if not rows:
            return message(head or "No slices in the selected range.")
        return [html.Div(head, className="small"), grid(Id.TIMELINE_RANGE_GRID, rows, columns=RANGE_COLUMNS, wide=("name",), height=320)]  # fmt: skip
