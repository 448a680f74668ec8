"""Server-side level of detail for the timeline: the browser only ever gets what it can draw.

`build_index(trace)` sorts every slice once into per-track arrays (host threads, then device
engines). `query(index, t0, t1)` answers one view: when the window holds at most
`exact_limit` slices it returns them exactly (drawn as nested bars, clickable); otherwise it
returns each track's busy fraction per pixel bucket (from prefix sums over top-level slices,
O(tracks x buckets x log n)) plus the marked events (compiles, syncs, fallbacks, HPU-graph
replays), thinned to one per bucket when there are too many. `figure(window)` draws either.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import orjson

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go

    from hpuprof.trace.model import Trace

MARKS: tuple[str, ...] = ("", "compile", "sync", "fallback", "graph_replay")
"""Marker classes; index 0 is an unmarked slice."""
MARK_STYLE: dict[str, tuple[str, str]] = {
    "compile": ("#d62728", "diamond"),
    "sync": ("#9467bd", "line-ns-open"),
    "fallback": ("#ff7f0e", "x"),
    "graph_replay": ("#2ca02c", "triangle-right"),
}
HOST_COLOR = "#4c78a8"
DEVICE_COLOR = "#54a24b"
EXACT_LIMIT = 3000
MARKER_LIMIT = 2000
DEFAULT_BUCKETS = 800
MAX_LEVELS = 6
"""Nesting levels drawn as sub-rows of a track; deeper slices share the last one."""
DETAIL_FIELDS: tuple[str, ...] = (
    "name", "cat", "kind", "rank", "pid", "tid", "engine", "ts_ns", "dur_ns", "step",
    "correlation", "mode", "module", "phase", "graph_id", "hpu_event", "flush_reason",
    "fallback", "input_dims", "input_types",
)  # fmt: skip


def plot_text(value: object) -> str:
    """A trace-supplied string made inert for plotly's pseudo-HTML (hover, ticks, legends)."""
    return html.escape(str(value), quote=False)


@dataclass(frozen=True)
class Track:
    """One horizontal lane: a host thread or a device engine of one rank."""

    rank: int
    pid: str
    tid: str
    label: str
    is_device: bool


@dataclass(frozen=True)
class TimelineIndex:
    """Slices sorted by (track, ts) in flat arrays; `offsets[i]:offsets[i+1]` is track i.

    Times are ns relative to `t0_ns` (the first slice's start). `top_*` hold the top-level
    slices (depth 0) per track with `top_offsets`, and `top_cum` their inclusive running sum
    of durations, for occupancy. Marked events (any depth, instants included) are in `mark_*`
    sorted by time.
    """

    t0_ns: int
    span_ns: int
    tracks: tuple[Track, ...]
    offsets: np.ndarray
    ts: np.ndarray
    end: np.ndarray
    row: np.ndarray
    depth: np.ndarray
    mark: np.ndarray
    max_dur: np.ndarray
    top_offsets: np.ndarray
    top_ts: np.ndarray
    top_dur: np.ndarray
    top_cum: np.ndarray
    mark_ts: np.ndarray
    mark_track: np.ndarray
    mark_kind: np.ndarray
    mark_row: np.ndarray
    names: np.ndarray


def _mark_codes(ev: pd.DataFrame) -> np.ndarray:
    hpu = ev["hpu_event"].astype(str).to_numpy()
    kind = ev["kind"].astype(str).to_numpy()
    code = np.zeros(len(ev), dtype=np.int8)
    code[np.isin(hpu, ("graph_replay",))] = MARKS.index("graph_replay")
    code[(kind == "sync") | (hpu == "sync")] = MARKS.index("sync")
    code[ev["fallback"].to_numpy(dtype=bool) | (hpu == "fallback")] = MARKS.index("fallback")
    code[np.isin(hpu, ("compile", "dynamo_compile"))] = MARKS.index("compile")
    return code


def _labels(trace: Trace, keys: pd.DataFrame) -> list[str]:
    names: dict[tuple[int, str, str], str] = {}
    procs: dict[tuple[int, str], str] = {}
    th = trace.threads
    if len(th) and {"rank", "pid", "tid", "name"} <= set(th.columns):
        for r, p, t, n in th[["rank", "pid", "tid", "name"]].itertuples(index=False):
            names[(int(r), str(p), str(t))] = str(n)
    pr = trace.processes
    if len(pr) and {"rank", "pid", "name"} <= set(pr.columns):
        for r, p, n in pr[["rank", "pid", "name"]].itertuples(index=False):
            procs[(int(r), str(p))] = str(n)
    ranks = keys["rank"].nunique() > 1
    out = []
    for r, p, t, dev in keys[["rank", "pid", "tid", "is_device"]].itertuples(index=False):
        thread = names.get((int(r), str(p), str(t))) or f"tid {t}"
        proc = procs.get((int(r), str(p))) or ("device" if dev else f"pid {p}")
        prefix = f"r{r} " if ranks else ""
        out.append(f"{prefix}{proc} / {thread}")
    return out


def build_index(trace: Trace) -> TimelineIndex:
    """Sort the trace's slices once into tracks (host threads first, then device engines)."""
    ev = trace.events
    slices = (ev["ph"].astype(str) == "X").to_numpy() & (
        ev["kind"].astype(str) != "span"
    ).to_numpy()
    rows = np.flatnonzero(slices)
    sub = ev.iloc[rows]
    key = sub[["rank", "is_device", "pid", "tid"]].astype({"pid": str, "tid": str})
    keys = key.drop_duplicates().sort_values(["rank", "is_device", "pid", "tid"], ignore_index=True)
    track_of = (
        key.reset_index(drop=True)
        .merge(keys.reset_index(names="track"), on=["rank", "is_device", "pid", "tid"], how="left")[
            "track"
        ]
        .to_numpy(dtype=np.int64)
    )
    ts_all = ev["ts_ns"].to_numpy(dtype=np.int64)
    t0 = int(ts_all.min()) if len(ts_all) else 0
    ts = sub["ts_ns"].to_numpy(dtype=np.int64) - t0
    dur = np.maximum(sub["dur_ns"].to_numpy(dtype=np.int64), 0)
    order = np.lexsort((ts, track_of))
    track_sorted = track_of[order]
    n_tracks = len(keys)
    offsets = np.searchsorted(track_sorted, np.arange(n_tracks + 1))
    ts_s, dur_s = ts[order], dur[order]
    depth = sub["depth"].to_numpy(dtype=np.int16)[order]
    max_dur = np.zeros(n_tracks, dtype=np.int64)
    if len(dur_s):
        np.maximum.at(max_dur, track_sorted, dur_s)
    top = depth == 0
    top_track = track_sorted[top]
    top_dur = dur_s[top]
    codes = _mark_codes(ev)
    marked = np.flatnonzero(codes > 0)
    mk_track = np.full(len(marked), -1, dtype=np.int64)
    row_track = np.full(len(ev), -1, dtype=np.int64)
    row_track[rows] = track_of
    mk_track = row_track[marked]
    # Marked instants (no slice track) go on their thread's track when it has one.
    if (mk_track < 0).any():
        lane = {
            (int(r), str(p), str(t)): i
            for i, (r, p, t) in enumerate(keys[["rank", "pid", "tid"]].itertuples(index=False))
        }
        m = ev.iloc[marked]
        m_rank = m["rank"].to_numpy(dtype=np.int64)
        m_pid, m_tid = m["pid"].astype(str).to_numpy(), m["tid"].astype(str).to_numpy()
        for j in np.flatnonzero(mk_track < 0):
            mk_track[j] = lane.get((int(m_rank[j]), str(m_pid[j]), str(m_tid[j])), -1)
    keep = mk_track >= 0
    marked, mk_track = marked[keep], mk_track[keep]
    mk_ts = ts_all[marked] - t0
    mk_order = np.argsort(mk_ts, kind="stable")
    tracks = tuple(
        Track(int(r), str(p), str(t), label, bool(d))
        for (r, d, p, t), label in zip(
            keys[["rank", "is_device", "pid", "tid"]].itertuples(index=False),
            _labels(trace, keys),
            strict=True,
        )
    )
    end = ts_s + dur_s
    return TimelineIndex(
        t0_ns=t0,
        span_ns=int(end.max()) if len(end) else 0,
        tracks=tracks,
        offsets=offsets,
        ts=ts_s,
        end=end,
        row=rows[order],
        depth=depth,
        mark=codes[rows][order],
        max_dur=max_dur,
        top_offsets=np.searchsorted(top_track, np.arange(n_tracks + 1)),
        top_ts=ts_s[top],
        top_dur=top_dur,
        top_cum=np.cumsum(top_dur),
        mark_ts=mk_ts[mk_order],
        mark_track=mk_track[mk_order],
        mark_kind=codes[marked][mk_order],
        mark_row=marked[mk_order],
        names=ev["name"].to_numpy(),
    )


@dataclass(frozen=True)
class Window:
    """One view of the timeline, ready to draw (times in ns relative to the index's t0).

    Args:
        mode: "exact" (every slice) or "aggregated" (busy fraction per bucket).
        t0, t1: the window.
        labels: track labels, top to bottom.
        total: slices overlapping the window.
        bar_*: exact mode, one entry per slice (row = event row index).
        edges, busy, counts: aggregated mode, bucket edges (ns) and per track x bucket
            busy fraction and slices starting there.
        mark_*: marked events in the window (thinned in aggregated mode).
    """

    mode: Literal["exact", "aggregated"]
    t0: int
    t1: int
    labels: tuple[str, ...]
    total: int
    bar_track: np.ndarray
    bar_ts: np.ndarray
    bar_end: np.ndarray
    bar_depth: np.ndarray
    bar_row: np.ndarray
    bar_mark: np.ndarray
    bar_device: np.ndarray
    bar_name: tuple[str, ...]
    edges: np.ndarray
    busy: np.ndarray
    counts: np.ndarray
    mark_ts: np.ndarray
    mark_track: np.ndarray
    mark_kind: np.ndarray
    mark_row: np.ndarray
    mark_name: tuple[str, ...]


def _cum(idx: TimelineIndex, a: int, b: int, t: np.ndarray) -> np.ndarray:
    """Busy ns of track slices [a, b) of the top-level arrays before each time in `t`."""
    ts, dur = idx.top_ts[a:b], idx.top_dur[a:b]
    if not len(ts):
        return np.zeros(len(t), dtype=np.float64)
    cum = idx.top_cum[a:b] - (idx.top_cum[a - 1] if a > 0 else 0)
    k = np.searchsorted(ts, t, side="right")
    j = np.maximum(k - 1, 0)
    before = cum[j] - dur[j]
    part = np.clip(t - ts[j], 0, dur[j])
    return np.where(k > 0, before + part, 0).astype(np.float64)


def query(
    idx: TimelineIndex,
    t0: float | None = None,
    t1: float | None = None,
    *,
    buckets: int = DEFAULT_BUCKETS,
    exact_limit: int = EXACT_LIMIT,
) -> Window:
    """The view of [t0, t1] ns (relative; None = the whole trace), exact or aggregated."""
    lo_t = 0 if t0 is None else max(int(t0), 0)
    hi_t = idx.span_ns if t1 is None else min(int(t1), idx.span_ns)
    if hi_t <= lo_t:
        hi_t = lo_t + 1
    n_tracks = len(idx.tracks)
    spans: list[tuple[int, np.ndarray]] = []
    total = 0
    for i in range(n_tracks):
        a, b = int(idx.offsets[i]), int(idx.offsets[i + 1])
        lo = a + int(np.searchsorted(idx.ts[a:b], lo_t - idx.max_dur[i], side="left"))
        hi = a + int(np.searchsorted(idx.ts[a:b], hi_t, side="right"))
        if hi > lo:
            sel = lo + np.flatnonzero(idx.end[lo:hi] >= lo_t)
            spans.append((i, sel))
            total += len(sel)
    ml = int(np.searchsorted(idx.mark_ts, lo_t, side="left"))
    mh = int(np.searchsorted(idx.mark_ts, hi_t, side="right"))
    m_ts, m_track = idx.mark_ts[ml:mh], idx.mark_track[ml:mh]
    m_kind, m_row = idx.mark_kind[ml:mh], idx.mark_row[ml:mh]
    empty_i = np.zeros(0, dtype=np.int64)
    labels = tuple(t.label for t in idx.tracks)
    if total <= exact_limit:
        sel = np.concatenate([s for _, s in spans]) if spans else empty_i
        track = np.concatenate([np.full(len(s), i) for i, s in spans]) if spans else empty_i
        rows = idx.row[sel]
        device = np.array([idx.tracks[int(t)].is_device for t in track], dtype=bool)
        return Window(
            "exact", lo_t, hi_t, labels, total,
            track, idx.ts[sel], idx.end[sel], idx.depth[sel], rows, idx.mark[sel], device,
            tuple(str(n) for n in idx.names[rows]),
            np.zeros(0), np.zeros((n_tracks, 0)), np.zeros((n_tracks, 0), dtype=np.int64),
            m_ts, m_track, m_kind, m_row, tuple(str(n) for n in idx.names[m_row]),
        )  # fmt: skip
    edges = np.linspace(lo_t, hi_t, buckets + 1)
    width = np.diff(edges)
    busy = np.zeros((n_tracks, buckets))
    counts = np.zeros((n_tracks, buckets), dtype=np.int64)
    for i in range(n_tracks):
        a, b = int(idx.top_offsets[i]), int(idx.top_offsets[i + 1])
        busy[i] = np.clip(np.diff(_cum(idx, a, b, edges)) / width, 0.0, 1.0)
        sa, sb = int(idx.offsets[i]), int(idx.offsets[i + 1])
        counts[i] = np.diff(np.searchsorted(idx.ts[sa:sb], edges, side="left"))
    if len(m_ts) > MARKER_LIMIT:
        bucket = np.minimum(((m_ts - lo_t) / (hi_t - lo_t) * buckets).astype(np.int64), buckets - 1)
        _, first = np.unique(m_track * (buckets + 1) * 8 + bucket * 8 + m_kind, return_index=True)
        first.sort()
        m_ts, m_track, m_kind, m_row = m_ts[first], m_track[first], m_kind[first], m_row[first]
    return Window(
        "aggregated", lo_t, hi_t, labels, total,
        empty_i, empty_i, empty_i, empty_i, empty_i, empty_i, np.zeros(0, dtype=bool), (),
        edges, busy, counts,
        m_ts, m_track, m_kind, m_row, tuple(str(n) for n in idx.names[m_row]),
    )  # fmt: skip


def _ms(ns: np.ndarray | float) -> Any:
    return np.asarray(ns, dtype=np.float64) / 1e6


def figure(w: Window, *, revision: str = "") -> go.Figure:
    """Draw a `Window`: nested bars (exact) or a busy-fraction heatmap (aggregated), markers."""
    import plotly.graph_objects as go

    fig = go.Figure()
    # nesting levels drawn as sub-rows of a track (a flame chart), never overlapping, so a
    # click lands on exactly one slice: the one under the pointer, not its parent
    levels = int(min(w.bar_depth.max() + 1, MAX_LEVELS)) if len(w.bar_depth) else 1
    row_h = 0.8 / levels
    if w.mode == "exact":
        groups: list[tuple[str, str, np.ndarray]] = [
            ("host", HOST_COLOR, (~w.bar_device) & (w.bar_mark == 0)),
            ("device", DEVICE_COLOR, w.bar_device & (w.bar_mark == 0)),
        ]
        groups += [(m, MARK_STYLE[m][0], w.bar_mark == k) for k, m in enumerate(MARKS) if k]
        for label, color, mask in groups:
            if not mask.any():
                continue
            sel = np.flatnonzero(mask)
            dur = w.bar_end[sel] - w.bar_ts[sel]
            fig.add_trace(
                go.Bar(
                    name=label,
                    orientation="h",
                    base=_ms(w.bar_ts[sel]),
                    x=np.maximum(_ms(dur), 1e-6),
                    y=w.bar_track[sel]
                    - 0.4
                    + row_h * (np.minimum(w.bar_depth[sel], levels - 1) + 0.5),
                    width=row_h * 0.9,
                    marker={"color": color, "line": {"width": 0.5, "color": "white"}},
                    customdata=[["e", int(r)] for r in w.bar_row[sel]],
                    hovertext=[
                        f"{plot_text(w.bar_name[j])}<br>{d / 1e6:.4f} ms"
                        for j, d in zip(sel, dur, strict=True)
                    ],
                    hovertemplate="%{hovertext} from %{base:.4f} ms<extra></extra>",
                )
            )
    else:
        centers = _ms((w.edges[:-1] + w.edges[1:]) / 2)
        fig.add_trace(
            go.Heatmap(
                name="busy",
                x=centers,
                y=np.arange(len(w.labels)),
                z=w.busy,
                customdata=w.counts,
                zmin=0,
                zmax=1,
                colorscale=[[0, "#ffffff"], [0.001, "#dbe7f3"], [1, HOST_COLOR]],
                showscale=False,
                hovertemplate="%{x:.3f} ms<br>busy %{z:.0%}<br>%{customdata} slices<extra></extra>",
            )
        )
    for k, m in enumerate(MARKS):
        if not k:
            continue
        sel = np.flatnonzero(w.mark_kind == k)
        if not len(sel):
            continue
        color, symbol = MARK_STYLE[m]
        fig.add_trace(
            go.Scatter(
                name=f"{m} marks",
                mode="markers",
                x=_ms(w.mark_ts[sel]),
                y=w.mark_track[sel],
                marker={"color": color, "symbol": symbol, "size": 9, "line": {"width": 1}},
                customdata=[["e", int(r)] for r in w.mark_row[sel]],
                hovertext=[plot_text(w.mark_name[j]) for j in sel],
                hovertemplate="%{hovertext}<br>%{x:.4f} ms<extra>" + m + "</extra>",
            )
        )
    n = len(w.labels)
    fig.update_layout(
        barmode="overlay",
        uirevision=revision,
        height=max(260, 40 + 34 * n),
        margin={"l": 10, "r": 10, "t": 30, "b": 40},
        legend={"orientation": "h", "y": 1.08},
        xaxis={"title": "time (ms)", "range": [_ms(w.t0), _ms(w.t1)], "showgrid": True},
        yaxis={
            "tickvals": list(range(n)),
            "ticktext": [plot_text(lab) for lab in w.labels],
            "range": [n - 0.5, -0.5],
            "automargin": True,
        },
        clickmode="event",
        plot_bgcolor="white",
    )
    return fig


def window_from_relayout(
    relayout: dict[str, Any] | None, span_ns: int
) -> tuple[float | None, float | None] | None:
    """The x window (ns) a plotly `relayoutData` asks for; (None, None) = reset; None = no change."""
    if not relayout:
        return None
    if relayout.get("xaxis.autorange"):
        return (None, None)
    lo = relayout.get("xaxis.range[0]")
    hi = relayout.get("xaxis.range[1]")
    if lo is None and isinstance(relayout.get("xaxis.range"), list):
        lo, hi = relayout["xaxis.range"][:2]
    if lo is None or hi is None:
        return None
    try:
        a, b = float(lo) * 1e6, float(hi) * 1e6
    except (TypeError, ValueError):
        return None
    return (min(a, b), max(a, b))


def event_details(trace: Trace, row: int) -> dict[str, Any]:
    """The fields of event `row` for the details panel, args decoded (plain data, not HTML)."""
    ev = trace.events
    if not 0 <= row < len(ev):
        return {}
    rec = ev.iloc[row]
    out: dict[str, Any] = {}
    for f in DETAIL_FIELDS:
        if f in ev.columns:
            v = rec[f]
            out[f] = v.item() if hasattr(v, "item") else v
    raw = rec["args"] if "args" in ev.columns else b""
    if isinstance(raw, (bytes, bytearray)) and raw:
        try:
            out["args"] = orjson.loads(raw)
        except orjson.JSONDecodeError:
            out["args"] = raw.decode("utf-8", "replace")
    return out
