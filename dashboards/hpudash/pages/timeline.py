"""Timeline: host threads, device streams and engines, counters; detail computed per zoom.

Controls: ranks shown, groups expanded (a collapsed group is one busy row), tracks pinned (drawn
at the top whatever is collapsed or filtered, kept in a store for every later view), launch ->
device arrows. The zoom is kept in the URL (`t0`, `t1` in ms since the first event), so a link opens
the same view; W/S zoom and A/D pan (assets/keys.js); the graph's box-select totals the
selected range per name (`hpuprof.analysis.time_range`). Search finds slices by name and
steps through them (◀ ▶), each shown outlined at the current zoom; a clicked device op's
details lead to the host call that launched it, and a launch's to its device op
(`hpudash.timeline_find`). "Open in Perfetto UI" posts the run's trace to ui.perfetto.dev the
documented way (assets/perfetto.js).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import dash
import numpy as np
from dash import Input, Output, State, dcc, html

from hpudash import fmt
from hpudash import timeline as tl
from hpudash import timeline_find as find
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
    "click a slice for its details. Type in “Find” and press Enter to find slices by name."
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


def pinned_tracks(idx: TimelineIndex, data: Any, run: str) -> list[int]:
    """The tracks the page's pin store holds for run `run` (none when it holds another run's)."""
    if not (isinstance(data, dict) and data.get("run") == run):
        return []
    return tl.tracks_of_keys(idx, data.get("tracks"))


def view(
    store: DataStore,
    key: str | Entry,
    window: tuple[float | None, float | None],
    ranks: list[int] | None = None,
    expanded: list[int] | None = None,
    flows: bool = True,
    focus: Focus | None = None,
    pinned: list[int] | None = None,
) -> tuple[Any, str, tl.Window]:
    """(figure, status, window) of one view of run `key`: the zoom callback's whole work;
    a `focus` outlines its search's matches and its slice; `pinned` tracks are drawn first."""
    entry = key if isinstance(key, Entry) else store.entry(key)
    idx = store.timeline(entry)
    shown = tl.lanes(idx, ranks, expanded, pinned or ())
    w = tl.query(idx, shown, *window, flows=flows)
    found, event, at = None, -1, None
    if focus is not None:
        hits = find.matches(idx, focus.text, ranks) if focus.text else None
        found = idx.event[hits] if hits is not None else None
        event = focus.event
        pos = find.position_of(idx, event) if event >= 0 else None
        y = find.lane_of(idx, shown, pos) if pos is not None else None
        at = (
            (int(idx.ts[pos] + idx.end[pos]) // 2, y) if pos is not None and y is not None else None
        )
    fig = tl.figure(w, revision=entry.key, found=found, focus=event, focus_at=at)
    return fig, status(w), w


@dataclass(frozen=True)
class Focus:
    """What the search (or a jump to a launch) points at: the run, the search text, which
    match (-1: none, a jump), the slice's events-table row (-1: none)."""

    run: str
    text: str = ""
    match: int = -1
    event: int = -1

    @classmethod
    def from_data(cls, data: Any, run: str) -> Focus | None:
        """The focus kept in the page's store, when it is of this run and well formed."""
        if not (isinstance(data, dict) and data.get("run") == run):
            return None
        text, match, event = data.get("text", ""), data.get("match", -1), data.get("event", -1)
        if not (isinstance(text, str) and isinstance(match, int) and isinstance(event, int)):
            return None
        return cls(run, text[: find.MAX_QUERY], match, event)

    def data(self) -> dict[str, Any]:
        return {"run": self.run, "text": self.text, "match": self.match, "event": self.event}


def clicked_slice(click: Any) -> list[Any] | None:
    """The clicked point's `["e", events-table row]` (a slice or a marker; row -1: a collapsed
    group's busy bar), or None for a click on anything else (busy time of many slices)."""
    points = click.get("points") if isinstance(click, dict) else None
    point = points[0] if isinstance(points, list) and points else {}
    data = point.get("customdata") if isinstance(point, dict) else None
    return data if isinstance(data, list) and len(data) == 2 and data[0] == "e" else None


def slice_words(idx: TimelineIndex, pos: int) -> str:
    """A slice in words: its name, duration and start."""
    name = idx.names[int(idx.name_code[pos])]
    dur = fmt.duration(int(idx.end[pos] - idx.ts[pos]))
    return f"{name} ({dur} at {fmt.duration(int(idx.ts[pos]))})"


def search_step(
    idx: TimelineIndex, run: str, text: str, move: int, current: Focus | None,
    ranks: list[int] | None, window_t0: float,
) -> tuple[Focus | None, str]:  # fmt: skip
    """(the new focus, what the search status says) after the search text is entered
    (`move` 0: the first match from the view's start on) or ◀ / ▶ (`move` -1 / +1)."""
    text = text.strip()[: find.MAX_QUERY]
    if not text:
        return None, ""
    hits = find.matches(idx, text, ranks)
    if not len(hits):
        return Focus(run, text), f"No slice name holds “{text}”."
    if move == 0 or current is None or current.text != text or current.match < 0:
        later = np.flatnonzero(idx.ts[hits] >= window_t0)
        k = int(later[0]) if len(later) else 0
    else:
        k = (current.match + move) % len(hits)
    pos = int(hits[k])
    focus = Focus(run, text, k, int(idx.event[pos]))
    return focus, f"{k + 1:,} of {len(hits):,} slices named like “{text}”: {slice_words(idx, pos)}"


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
    pin = dcc.Dropdown(
        id=Id.TIMELINE_PIN,
        options=[
            {"label": tl.track_label(idx, t), "value": tl.track_key(idx, t)}
            for t in range(len(idx.tracks))
        ],
        value=[],
        multi=True,
        placeholder="pin a track: it stays at the top",
        style={"minWidth": "420px"},
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
            html.Div([html.Span("Pinned tracks", className="label"), pin], className="pickers"),
            dcc.Store(id=Id.TIMELINE_PINNED, data={"run": entry.key, "tracks": []}),
            html.Div(
                [
                    html.Span("Find", className="label"),
                    dcc.Input(id=Id.TIMELINE_SEARCH, type="search", value="", debounce=True, placeholder="slice name, e.g. aten::mm", style={"minWidth": "260px"}),
                    html.Button("◀", id=Id.TIMELINE_SEARCH_PREV, n_clicks=0, className="button", title="previous match"),
                    html.Button("▶", id=Id.TIMELINE_SEARCH_NEXT, n_clicks=0, className="button", title="next match"),
                    html.Span(id=Id.TIMELINE_SEARCH_STATUS, className="small"),
                ],
                className="pickers",
            ),
            dcc.Store(id=Id.TIMELINE_FOCUS),
            dcc.Store(id=Id.TIMELINE_GOTO_TARGET),
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
            html.Button("", id=Id.TIMELINE_GOTO, n_clicks=0, className="button", style={"display": "none"}),
            html.Button("", id=Id.TIMELINE_PIN_THIS, n_clicks=0, className="button", style={"display": "none"}),
            dcc.Store(id=Id.TIMELINE_PIN_TARGET),
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
            **({"rank": r.rank} if r.rank is not None else {}),
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
    """The timeline page's callbacks."""
    _register_zoom(app, store)
    _register_details(app, store)
    _register_search(app, store)
    _register_range(app, store)
    _register_pin(app, store)


def pin_toggled(chosen: Any, key: str) -> list[str]:
    """The pinned track keys after the "Pin its track" / "Unpin its track" button of `key`."""
    keys = [k for k in chosen if isinstance(k, str)] if isinstance(chosen, list) else []
    return [k for k in keys if k != key] if key in keys else [*keys, key]


def _register_pin(app: dash.Dash, store: DataStore) -> None:
    """The tracks picked to pin, kept (with their run) for every later view of the figure;
    a clicked slice's "Pin its track" button pins or unpins the track it is on."""

    @app.callback(
        Output(Id.TIMELINE_PIN_THIS, "children"),
        Output(Id.TIMELINE_PIN_THIS, "style"),
        Output(Id.TIMELINE_PIN_TARGET, "data"),
        Input(Id.TIMELINE_GRAPH, "clickData"),
        Input(Id.TIMELINE_PIN, "value"),
        State(Id.URL, "search"),
        prevent_initial_call=True,
    )
    def pin_button(click: Any, chosen: Any, search: Any) -> tuple[str, dict[str, str], Any]:
        data = clicked_slice(click)
        hidden = ("", {"display": "none"}, None)
        if data is None:
            return hidden
        try:
            idx = store.timeline(store.entry(parse_query(search).get("run", "")))
        except HpuprofError:
            return hidden
        pos = find.position_of(idx, data[1]) if isinstance(data[1], int) else None
        if pos is None:
            return hidden
        track = find.track_of(idx, pos)
        key = tl.track_key(idx, track)
        pinned = isinstance(chosen, list) and key in chosen
        verb = "Unpin" if pinned else "Pin"
        return f"{verb} its track ({tl.track_label(idx, track)})", {}, key

    @app.callback(
        Output(Id.TIMELINE_PIN, "value"),
        Input(Id.TIMELINE_PIN_THIS, "n_clicks"),
        State(Id.TIMELINE_PIN_TARGET, "data"),
        State(Id.TIMELINE_PIN, "value"),
        prevent_initial_call=True,
    )
    def pin_this(_clicks: Any, key: Any, chosen: Any) -> list[str]:
        if not isinstance(key, str):
            raise dash.exceptions.PreventUpdate
        return pin_toggled(chosen, key)

    @app.callback(
        Output(Id.TIMELINE_PINNED, "data"),
        Input(Id.TIMELINE_PIN, "value"),
        State(Id.URL, "search"),
        prevent_initial_call=True,
    )
    def pin(chosen: Any, search: Any) -> dict[str, Any]:
        keys = [k for k in chosen if isinstance(k, str)] if isinstance(chosen, list) else []
        return {"run": parse_query(search).get("run", ""), "tracks": keys}


def _register_zoom(app: dash.Dash, store: DataStore) -> None:
    """The figure of the window, ranks and groups asked for (zoom, pan, a found slice)."""

    @app.callback(
        Output(Id.TIMELINE_GRAPH, "figure"),
        Output(Id.TIMELINE_STATUS, "children"),
        Output(Id.TIMELINE_WINDOW, "data"),
        Output(Id.URL, "search", allow_duplicate=True),
        Input(Id.TIMELINE_GRAPH, "relayoutData"),
        Input(Id.TIMELINE_RANKS, "value"),
        Input(Id.TIMELINE_GROUPS, "value"),
        Input(Id.TIMELINE_OPTIONS, "value"),
        Input(Id.TIMELINE_FOCUS, "data"),
        Input(Id.TIMELINE_PINNED, "data"),
        State(Id.URL, "search"),
        State(Id.TIMELINE_WINDOW, "data"),
        prevent_initial_call=True,
    )
    def zoom(
        relayout: Any, ranks: Any, groups: Any, options: Any, focus_data: Any, pin_data: Any,
        search: Any, current: Any,
    ) -> tuple[Any, Any, Any, Any]:  # fmt: skip
        key = parse_query(search).get("run", "")
        try:
            entry = store.entry(key)
            idx = store.timeline(entry)
        except HpuprofError as error:
            return dash.no_update, str(error), dash.no_update, dash.no_update
        triggered = set(dash.ctx.triggered_prop_ids.values())
        focus = Focus.from_data(focus_data, entry.key)
        window: tuple[float | None, float | None] | None
        if Id.TIMELINE_GRAPH in triggered:
            window = window_from_relayout(relayout)
            if window is None:
                raise dash.exceptions.PreventUpdate
        elif isinstance(current, dict) and current.get("run") == entry.key:
            window = (current.get("t0"), current.get("t1"))
        else:
            window = (None, None)
        pos = find.position_of(idx, focus.event) if focus and focus.event >= 0 else None
        if Id.TIMELINE_FOCUS in triggered and pos is not None:
            lo, hi = tl.clamp_window(idx, *window)
            window = find.focus_window(idx, pos, (lo, hi))
        flows = isinstance(options, list) and FLOWS in options
        try:
            fig, text, w = view(
                store, entry, window, _ranks(idx, ranks), _groups(idx, groups), flows, focus,
                pinned_tracks(idx, pin_data, entry.key),
            )  # fmt: skip
        except Exception as error:
            log.exception("timeline view of %r", key)
            return dash.no_update, f"This view could not be drawn ({type(error).__name__}).", dash.no_update, dash.no_update  # fmt: skip
        stored = {"run": entry.key, "t0": w.t0, "t1": w.t1}
        return fig, text, stored, _url_with_window(search, w, idx.span_ns)


def _register_details(app: dash.Dash, store: DataStore) -> None:
    """A clicked slice's details, and the launch or device op it is paired with."""

    @app.callback(
        Output(Id.TIMELINE_DETAILS, "children"),
        Output(Id.TIMELINE_GOTO, "children"),
        Output(Id.TIMELINE_GOTO, "style"),
        Output(Id.TIMELINE_GOTO_TARGET, "data"),
        Input(Id.TIMELINE_GRAPH, "clickData"),
        State(Id.URL, "search"),
        prevent_initial_call=True,
    )
    def details(click: Any, search: Any) -> tuple[Any, str, dict[str, str], Any]:
        hidden = ("", {"display": "none"}, None)
        data = clicked_slice(click)
        if data is None:
            return message(
                "That is busy time of many slices: zoom in to click single slices."
            ), *hidden
        if not isinstance(data[1], int) or data[1] < 0:
            return message("That bar is a collapsed group's busy time: expand the group to see its slices."), *hidden  # fmt: skip
        try:
            entry = store.entry(parse_query(search).get("run", ""))
            idx = store.timeline(entry)
            rows = event_rows(store.trace(entry), data[1], idx.t0_ns)
        except HpuprofError as error:
            return message(str(error), "error"), *hidden
        if not rows:
            return message("No such slice in this run.", "error"), *hidden
        pos = find.position_of(idx, data[1])
        how, others = (
            find.partners(idx, pos) if pos is not None else ("", np.zeros(0, dtype=np.int64))
        )
        if not len(others):
            return kv_table(rows, id_=Id.TIMELINE_DETAILS_TABLE), *hidden
        words = slice_words(idx, int(others[0]))
        more = f" and {len(others) - 1:,} more" if len(others) > 1 else ""
        rows.insert(1, (how.capitalize(), words + more))
        label = "Go to its launch" if how == "launched by" else "Go to the device op it launches"
        target = {"run": entry.key, "event": int(idx.event[int(others[0])])}
        return kv_table(rows, id_=Id.TIMELINE_DETAILS_TABLE), label, {}, target


def _register_search(app: dash.Dash, store: DataStore) -> None:
    """Find by name (next / previous) and the jump to a paired launch or device op."""

    @app.callback(
        Output(Id.TIMELINE_FOCUS, "data"),
        Output(Id.TIMELINE_SEARCH_STATUS, "children"),
        Output(Id.TIMELINE_GROUPS, "value"),
        Input(Id.TIMELINE_SEARCH, "value"),
        Input(Id.TIMELINE_SEARCH, "n_submit"),
        Input(Id.TIMELINE_SEARCH_PREV, "n_clicks"),
        Input(Id.TIMELINE_SEARCH_NEXT, "n_clicks"),
        Input(Id.TIMELINE_GOTO, "n_clicks"),
        State(Id.TIMELINE_GOTO_TARGET, "data"),
        State(Id.TIMELINE_FOCUS, "data"),
        State(Id.URL, "search"),
        State(Id.TIMELINE_RANKS, "value"),
        State(Id.TIMELINE_GROUPS, "value"),
        State(Id.TIMELINE_WINDOW, "data"),
        prevent_initial_call=True,
    )
    def search_or_jump(
        text: Any, _submit: Any, _prev: Any, _next: Any, _goto: Any, target: Any,
        focus_data: Any, search: Any, ranks: Any, groups: Any, window: Any,
    ) -> tuple[Any, Any, Any]:  # fmt: skip
        triggered = set(dash.ctx.triggered_prop_ids)
        try:
            entry = store.entry(parse_query(search).get("run", ""))
            idx = store.timeline(entry)
        except HpuprofError as error:
            return dash.no_update, str(error), dash.no_update
        current = Focus.from_data(focus_data, entry.key)
        if f"{Id.TIMELINE_GOTO}.n_clicks" in triggered:
            event = target.get("event") if isinstance(target, dict) and target.get("run") == entry.key else None  # fmt: skip
            pos = find.position_of(idx, event) if isinstance(event, int) else None
            if pos is None:
                raise dash.exceptions.PreventUpdate
            focus: Focus | None = Focus(entry.key, current.text if current else "", -1, int(event))  # type: ignore[arg-type]
            said = f"Shown: {slice_words(idx, pos)}"
        else:
            move = 0
            if f"{Id.TIMELINE_SEARCH}.value" not in triggered:
                move = -1 if f"{Id.TIMELINE_SEARCH_PREV}.n_clicks" in triggered else 1
            t0 = (
                window.get("t0")
                if isinstance(window, dict) and window.get("run") == entry.key
                else 0
            )
            focus, said = search_step(
                idx, entry.key, text if isinstance(text, str) else "", move, current,
                _ranks(idx, ranks), float(t0 or 0),
            )  # fmt: skip
            pos = find.position_of(idx, focus.event) if focus and focus.event >= 0 else None
        open_ = _groups(idx, groups)
        if pos is not None and open_ is not None and find.group_of(idx, pos) not in open_:
            return (
                (focus.data() if focus else None),
                said,
                sorted([*open_, find.group_of(idx, pos)]),
            )
        return (focus.data() if focus else None), said, dash.no_update


def _register_range(app: dash.Dash, store: DataStore) -> None:
    """A box selection's slices: time per name within the box."""

    @app.callback(
        Output(Id.TIMELINE_RANGE, "children"),
        Input(Id.TIMELINE_GRAPH, "selectedData"),
        State(Id.URL, "search"),
        State(Id.TIMELINE_RANKS, "value"),
        State(Id.TIMELINE_GROUPS, "value"),
        State(Id.TIMELINE_PINNED, "data"),
        prevent_initial_call=True,
    )
    def selected(selection: Any, search: Any, ranks: Any, groups: Any, pin_data: Any) -> Any:
        box = selection.get("range") if isinstance(selection, dict) else None
        if not isinstance(box, dict):
            return message("Nothing selected: use Box Select and drag over the timeline.")
        try:
            entry = store.entry(parse_query(search).get("run", ""))
            idx = store.timeline(entry)
            pinned = pinned_tracks(idx, pin_data, entry.key)
            shown = tl.lanes(idx, _ranks(idx, ranks), _groups(idx, groups), pinned)
            head, rows = range_rows(store, entry, idx, shown, box)
        except HpuprofError as error:
            return message(str(error), "error")
        except (TypeError, ValueError):
            return message("That selection has no time range.", "error")
        if not rows:
            return message(head or "No slices in the selected range.")
        columns = ((("rank", "Rank"),) if "rank" in rows[0] else ()) + RANGE_COLUMNS
        return [html.Div(head, className="small"), grid(Id.TIMELINE_RANGE_GRID, rows, columns=columns, wide=("name",), height=320)]  # fmt: skip
