"""Server-side level of detail for the timeline: the browser only ever gets what it can draw.

`lanes(index, ...)` picks the rows to draw (rank filter, collapsed groups); `query(index,
lanes, t0, t1)` answers one view: when the window holds at most `exact_limit` slices it
returns them exactly (bars, one row per nesting depth, clickable, labelled where they fit,
never narrower than a pixel); otherwise each lane's busy fraction per pixel bucket (prefix
sums, O(lanes x buckets x log n)) drawn as a density in which any activity is visible. Marked
events (compiles, syncs, fallbacks, HPU-graph replays), launch -> device-op arrows and
counter tracks ride along. `figure(window)` draws either.
"""

from __future__ import annotations

import zlib
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from hpudash import fmt
from hpudash.timeline_index import MARKS, TimelineIndex, build_index, mark_codes
from hpuprof.render.figures import plot_text

__all__ = ["MARKS", "TimelineIndex", "build_index", "figure", "lanes", "mark_codes", "query"]

MARK_STYLE: dict[str, tuple[str, str, str]] = {
    "compile": ("#d62728", "diamond", "compile"),
    "sync": ("#9467bd", "line-ns-open", "sync"),
    "fallback": ("#ff7f0e", "x", "CPU fallback"),
    "graph_replay": ("#2ca02c", "triangle-right", "HPU graph replay"),
}
HOST_SHADES = ("#4c78a8", "#6a8fbf", "#3b6591", "#7fa3cc", "#557fae", "#2f5a86")
DEVICE_SHADES = ("#54a24b", "#6dbb5f", "#3f8a37", "#86c47a", "#4c9a44", "#2f7a2a")
SUMMARY_COLOR = "#8c8c8c"
COUNTER_COLOR = "#b279a2"
FLOW_COLOR = "#e45756"
FOUND_COLOR = "#f2b701"
FOCUS_COLOR = "#111111"
EXACT_LIMIT = 3000
MARKER_LIMIT = 2000
FLOW_LIMIT = 400
"""Launch arrows are drawn when the view holds at most this many (zoom in for more)."""
DEFAULT_BUCKETS = 800
PLOT_PX = 1200
"""Assumed plot width in pixels: a slice is never drawn narrower than one of them."""
CHAR_PX = 7.0
"""Width of one character of a slice's name (10 px font, a little more than its average, so
a name stays inside its slice on plots somewhat narrower than `PLOT_PX`)."""
LABEL_PAD_PX = 4.0
"""Room kept free at each end of a slice's name."""
MIN_LABEL_CHARS = 3
"""A name cut to fewer characters than this (before its "…") is not drawn."""
LANE_PX = 18
EXPAND_ALL_ROWS = 60
"""Groups start expanded when all their rows together are at most this many."""


@dataclass(frozen=True)
class Lane:
    """One drawn row: a group's summary, one depth of a track, or a counter track."""

    kind: Literal["summary", "row", "counter"]
    group: int
    ref: int
    """summary: the group; row: the row index; counter: the counter track's position."""
    label: str
    is_device: bool
    pinned: bool = False
    """Drawn in the pinned block at the top (whatever its group's state or rank)."""


PIN = "pinned: "
"""Before a pinned track's label (plain text: an emoji pin is drawn as a blank box where no
emoji font is installed, as in headless Chromium)."""


def default_expanded(idx: TimelineIndex, ranks: Collection[int] | None = None) -> list[int]:
    """Groups expanded on first view: all when small, else those of the first rank shown."""
    shown = [i for i, g in enumerate(idx.groups) if ranks is None or g.rank in ranks]
    rows = sum(t.depths for t in idx.tracks if t.group in shown)
    if rows <= EXPAND_ALL_ROWS or not shown:
        return shown
    first = idx.groups[shown[0]].rank
    return [i for i in shown if idx.groups[i].rank == first]


def track_key(idx: TimelineIndex, track: int) -> str:
    """A track's name that stays the same for the run (rank, process, thread or series): what
    the page keeps to remember a pinned track."""
    t = idx.tracks[track]
    g = idx.groups[t.group]
    return f"{g.rank}/{g.pid}/{t.tid}"


def track_label(idx: TimelineIndex, track: int) -> str:
    """A track in words, with its group: "rank 0 · python 4037 · thread 12"."""
    t = idx.tracks[track]
    return f"{idx.groups[t.group].label} · {t.label}"


def tracks_of_keys(idx: TimelineIndex, keys: Any) -> list[int]:
    """The tracks named by `keys` (`track_key`), in their order; unknown keys are left out."""
    if not isinstance(keys, list):
        return []
    where = {track_key(idx, t): t for t in range(len(idx.tracks))}
    out: list[int] = []
    for k in keys:
        t = where.get(k) if isinstance(k, str) else None
        if t is not None and t not in out:
            out.append(t)
    return out


def _track_lanes(
    idx: TimelineIndex, t: int, counter_pos: dict[int, int], label: str, pinned: bool
) -> list[Lane]:
    """The lanes of track `t`: one per nesting depth, or its counter series; `label` on the first."""
    track = idx.tracks[t]
    if track.counter:
        return [Lane("counter", track.group, counter_pos[t], label, False, pinned)]
    return [
        Lane("row", track.group, int(r), label if i == 0 else "", track.is_device, pinned)
        for i, r in enumerate(idx.rows_of_track(t))
    ]


def lanes(
    idx: TimelineIndex,
    ranks: Collection[int] | None = None,
    expanded: Collection[int] | None = None,
    pinned: Collection[int] = (),
) -> tuple[Lane, ...]:
    """The lanes to draw, top to bottom: the `pinned` tracks (in their order, shown whatever
    the rank filter and the groups' state), then per group a summary lane and (when expanded)
    one lane per nesting depth of each track not pinned, or one per counter series."""
    open_ = set(default_expanded(idx, ranks) if expanded is None else expanded)
    counter_pos = {int(t): i for i, t in enumerate(idx.ctr_track)}
    out: list[Lane] = []
    for t in pinned:
        out += _track_lanes(idx, t, counter_pos, PIN + track_label(idx, t), True)
    pinned_set = set(pinned)
    for g, group in enumerate(idx.groups):
        if ranks is not None and group.rank not in ranks:
            continue
        is_open = g in open_
        arrow = "▾" if is_open else "▸"
        out.append(Lane("summary", g, g, f"{arrow} {group.label}", group.is_device))
        if not is_open:
            continue
        for t, track in enumerate(idx.tracks):
            if track.group == g and t not in pinned_set:
                out += _track_lanes(idx, t, counter_pos, track.label, False)
    return tuple(out)


@dataclass(frozen=True)
class Window:
    """One view of the timeline, ready to draw (times in ns relative to the index's t0).

    Args:
        mode: "exact" (every slice) or "aggregated" (busy fraction per bucket).
        t0, t1: the window.
        lanes: what each y position shows, top to bottom.
        total: slices (and summary intervals) overlapping the window in the drawn lanes.
        bar_*: exact mode, one entry per bar (event = events-table row, -1 for a summary).
        edges, busy, counts: aggregated mode: bucket edges (ns), per lane x bucket busy
            fraction and number of slices starting there.
        mark_*: marked events in the window (thinned in aggregated mode).
        flow_*: exact mode, launch -> device-op arrows (start and end time and lane).
        ctr_*: counter samples per counter lane (lane, time, value), thinned to the buckets.
    """

    mode: Literal["exact", "aggregated"]
    t0: int
    t1: int
    lanes: tuple[Lane, ...]
    total: int
    bar_lane: np.ndarray
    bar_ts: np.ndarray
    bar_end: np.ndarray
    bar_event: np.ndarray
    bar_mark: np.ndarray
    bar_class: np.ndarray
    bar_name: tuple[str, ...]
    edges: np.ndarray
    busy: np.ndarray
    counts: np.ndarray
    mark_ts: np.ndarray
    mark_lane: np.ndarray
    mark_kind: np.ndarray
    mark_event: np.ndarray
    mark_name: tuple[str, ...]
    flow_x0: np.ndarray
    flow_y0: np.ndarray
    flow_x1: np.ndarray
    flow_y1: np.ndarray
    ctr_lane: np.ndarray
    ctr_ts: np.ndarray
    ctr_value: np.ndarray
    ctr_scale: np.ndarray
    marked: int = 0
    """Marked events in the window (drawn as coloured bars or as markers)."""


CLASS_HOST, CLASS_DEVICE, CLASS_SUMMARY = 0, 1, 2


def _cum_at(ts: np.ndarray, end: np.ndarray, cum: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Busy ns before each time in `t` of sorted, disjoint intervals with running sum `cum`."""
    if not len(ts):
        return np.zeros(len(t), dtype=np.float64)
    k = np.searchsorted(ts, t, side="right")
    j = np.maximum(k - 1, 0)
    dur = end[j] - ts[j]
    before = cum[j] - dur
    part = np.clip(t - ts[j], 0, dur)
    return np.where(k > 0, before + part, 0).astype(np.float64)


def _row_range(idx: TimelineIndex, r: int, lo: int, hi: int) -> np.ndarray:
    """Positions of row r's slices overlapping [lo, hi]."""
    a, b = int(idx.offsets[r]), int(idx.offsets[r + 1])
    first = a + int(np.searchsorted(idx.ts[a:b], lo - idx.max_dur[r], side="left"))
    last = a + int(np.searchsorted(idx.ts[a:b], hi, side="right"))
    if last <= first:
        return np.zeros(0, dtype=np.int64)
    return first + np.flatnonzero(idx.end[first:last] >= lo)


def _sum_range(idx: TimelineIndex, g: int, lo: int, hi: int) -> np.ndarray:
    a, b = int(idx.sum_offsets[g]), int(idx.sum_offsets[g + 1])
    first = a + int(np.searchsorted(idx.sum_end[a:b], lo, side="left"))
    last = a + int(np.searchsorted(idx.sum_ts[a:b], hi, side="right"))
    return np.arange(first, max(first, last), dtype=np.int64)


Counters = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""A window's counter samples: lane, time, value, the lane's scale (`_counters`)."""


@dataclass(frozen=True)
class _Marks:
    """Marked events of a window on their drawn lanes (time, lane, kind, event, name code)."""

    ts: np.ndarray
    lane: np.ndarray
    kind: np.ndarray
    event: np.ndarray
    name: np.ndarray

    def keep(self, mask: np.ndarray) -> _Marks:
        return _Marks(
            self.ts[mask], self.lane[mask], self.kind[mask], self.event[mask], self.name[mask]
        )


def clamp_window(idx: TimelineIndex, t0: float | None, t1: float | None) -> tuple[int, int]:
    """The window [t0, t1] ns (None: the trace's edge) inside the trace, never empty."""
    lo_t = 0 if t0 is None else max(int(t0), 0)
    hi_t = idx.span_ns if t1 is None else min(int(t1), idx.span_ns)
    if hi_t <= lo_t:
        lo_t, hi_t = max(0, min(lo_t, idx.span_ns - 1)), max(lo_t + 1, min(hi_t, idx.span_ns))
    return lo_t, hi_t


def _lane_slices(idx: TimelineIndex, shown: tuple[Lane, ...], lo: int, hi: int) -> list[np.ndarray]:
    """Per lane, the positions of its slices (a row) or busy intervals (a summary) in the
    window; none for a counter lane."""
    out = []
    for lane in shown:
        if lane.kind == "row":
            out.append(_row_range(idx, lane.ref, lo, hi))
        elif lane.kind == "summary":
            out.append(_sum_range(idx, lane.ref, lo, hi))
        else:
            out.append(np.zeros(0, dtype=np.int64))
    return out


def _marks(
    idx: TimelineIndex, shown: tuple[Lane, ...], lo: int, hi: int
) -> tuple[_Marks, np.ndarray]:
    """(the marks in the window, each drawn row's lane or -1): a mark goes on its row when the
    row is drawn, else on its group's summary lane, else nowhere."""
    lane_of_row = np.full(len(idx.row_track), -1, dtype=np.int64)
    summary_lane = np.full(len(idx.groups), -1, dtype=np.int64)
    for y, lane in enumerate(shown):
        if lane.kind == "row":
            lane_of_row[lane.ref] = y
        elif lane.kind == "summary":
            summary_lane[lane.ref] = y
    track_group = np.array([t.group for t in idx.tracks], dtype=np.int64)
    row_group = track_group[idx.row_track] if len(idx.row_track) else idx.row_track
    ml = int(np.searchsorted(idx.mark_ts, lo, side="left"))
    mh = int(np.searchsorted(idx.mark_ts, hi, side="right"))
    m_row = idx.mark_row[ml:mh]
    m_lane = lane_of_row[m_row] if len(m_row) else m_row
    if len(m_row):
        m_lane = np.where(m_lane >= 0, m_lane, summary_lane[row_group[m_row]])
    every = _Marks(
        idx.mark_ts[ml:mh],
        m_lane,
        idx.mark_kind[ml:mh],
        idx.mark_event[ml:mh],
        idx.mark_name[ml:mh],
    )
    return every.keep(m_lane >= 0), lane_of_row


def query(
    idx: TimelineIndex,
    shown: tuple[Lane, ...] | None = None,
    t0: float | None = None,
    t1: float | None = None,
    *,
    buckets: int = DEFAULT_BUCKETS,
    exact_limit: int = EXACT_LIMIT,
    flows: bool = True,
) -> Window:
    """The view of [t0, t1] ns (relative; None = the whole trace) of `shown` lanes: every
    slice when at most `exact_limit` overlap it, else busy time per bucket."""
    shown = lanes(idx) if shown is None else shown
    lo_t, hi_t = clamp_window(idx, t0, t1)
    per_lane = _lane_slices(idx, shown, lo_t, hi_t)
    total = sum(len(sel) for sel in per_lane)
    marks, lane_of_row = _marks(idx, shown, lo_t, hi_t)
    ctr = _counters(idx, shown, lo_t, hi_t, buckets)
    if total <= exact_limit:
        return _exact(idx, shown, (lo_t, hi_t), per_lane, marks, lane_of_row, ctr, flows)
    return _aggregated(idx, shown, (lo_t, hi_t), total, marks, ctr, buckets)


def _exact(
    idx: TimelineIndex, shown: tuple[Lane, ...], window: tuple[int, int],
    per_lane: list[np.ndarray], marks: _Marks, lane_of_row: np.ndarray, ctr: Counters,
    flows: bool,
) -> Window:  # fmt: skip
    """Every slice (and summary interval) of the window as a bar, with launch arrows."""
    empty_i = np.zeros(0, dtype=np.int64)
    ys, tss, ends, events, marks_, classes = [], [], [], [], [], []
    for y, (lane, sel) in enumerate(zip(shown, per_lane, strict=True)):
        if not len(sel):
            continue
        ys.append(np.full(len(sel), y))
        if lane.kind == "row":
            tss.append(idx.ts[sel])
            ends.append(idx.end[sel])
            events.append(sel)
            marks_.append(idx.mark[sel])
            classes.append(np.full(len(sel), CLASS_DEVICE if lane.is_device else CLASS_HOST))
        else:
            tss.append(idx.sum_ts[sel])
            ends.append(idx.sum_end[sel])
            events.append(np.full(len(sel), -1))
            marks_.append(np.zeros(len(sel), dtype=np.int8))
            classes.append(np.full(len(sel), CLASS_SUMMARY))
    pos = np.concatenate(events) if events else empty_i
    is_slice = pos >= 0
    names = tuple(idx.names[int(idx.name_code[p])] if p >= 0 else "busy" for p in pos.tolist())
    fx0, fy0, fx1, fy1 = _flows(idx, pos[is_slice], lane_of_row) if flows else (empty_i,) * 4
    # a marked slice is drawn as a coloured bar: its marker would only cover it
    m = marks.keep(~np.isin(marks.event, idx.event[pos[is_slice]]))
    return Window(
        "exact", *window, shown, len(pos),
        np.concatenate(ys) if ys else empty_i,
        np.concatenate(tss) if tss else empty_i,
        np.concatenate(ends) if ends else empty_i,
        np.where(is_slice, idx.event[np.maximum(pos, 0)] if len(pos) else pos, -1),
        np.concatenate(marks_) if marks_ else np.zeros(0, dtype=np.int8),
        np.concatenate(classes) if classes else empty_i,
        names,
        np.zeros(0, dtype=np.float64), np.zeros((len(shown), 0)), np.zeros((len(shown), 0), dtype=np.int64),
        m.ts, m.lane, m.kind, m.event, tuple(idx.names[int(c)] for c in m.name),
        fx0, fy0, fx1, fy1, *ctr, len(marks.ts),
    )  # fmt: skip


def _busy_per_bucket(
    idx: TimelineIndex, shown: tuple[Lane, ...], edges: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per lane x bucket: the busy fraction (at least 1 % where a slice starts) and the
    number of slices starting there."""
    buckets = len(edges) - 1
    width = np.diff(edges)
    busy = np.zeros((len(shown), buckets))
    counts = np.zeros((len(shown), buckets), dtype=np.int64)
    for y, lane in enumerate(shown):
        if lane.kind == "row":
            a, b = int(idx.offsets[lane.ref]), int(idx.offsets[lane.ref + 1])
            ts, end = idx.ts[a:b], idx.end[a:b]
            cum = idx.cum[a:b] - (idx.cum[a - 1] if a > 0 else 0)
        elif lane.kind == "summary":
            a, b = int(idx.sum_offsets[lane.ref]), int(idx.sum_offsets[lane.ref + 1])
            ts, end = idx.sum_ts[a:b], idx.sum_end[a:b]
            cum = idx.sum_cum[a:b] - (idx.sum_cum[a - 1] if a > 0 else 0)
        else:
            continue
        busy[y] = np.clip(np.diff(_cum_at(ts, end, cum, edges)) / width, 0.0, 1.0)
        counts[y] = np.diff(np.searchsorted(ts, edges, side="left"))
        # a slice shorter than its bucket still shows: at least 1 % of the bucket
        counts_here = counts[y] > 0
        busy[y] = np.where(counts_here & (busy[y] < 0.01), 0.01, busy[y])
    return busy, counts


def _aggregated(
    idx: TimelineIndex, shown: tuple[Lane, ...], window: tuple[int, int], total: int,
    marks: _Marks, ctr: Counters, buckets: int,
) -> Window:  # fmt: skip
    """Busy time per bucket of each lane; marks thinned to one per lane, bucket and kind
    when there are more than `MARKER_LIMIT`."""
    lo_t, hi_t = window
    edges = np.linspace(lo_t, hi_t, buckets + 1)
    busy, counts = _busy_per_bucket(idx, shown, edges)
    m = marks
    if len(m.ts) > MARKER_LIMIT:
        bucket = np.minimum(((m.ts - lo_t) / (hi_t - lo_t) * buckets).astype(np.int64), buckets - 1)
        _, first = np.unique(m.lane * (buckets + 1) * 8 + bucket * 8 + m.kind, return_index=True)
        first.sort()
        m = m.keep(first)
    empty_i = np.zeros(0, dtype=np.int64)
    return Window(
        "aggregated", lo_t, hi_t, shown, total,
        empty_i, empty_i, empty_i, empty_i, np.zeros(0, dtype=np.int8), empty_i, (),
        edges, busy, counts,
        m.ts, m.lane, m.kind, m.event, tuple(idx.names[int(c)] for c in m.name),
        empty_i, empty_i, empty_i, empty_i, *ctr, len(marks.ts),
    )  # fmt: skip


def _flows(
    idx: TimelineIndex, pos: np.ndarray, lane_of_row: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Arrows from launches to the device ops they started, for flows touching `pos`."""
    if not len(idx.flow_src) or not len(pos):
        z = np.zeros(0, dtype=np.int64)
        return z, z, z, z
    inside = np.zeros(len(idx.ts), dtype=bool)
    inside[pos] = True
    sel = np.flatnonzero(inside[idx.flow_src] | inside[idx.flow_dst])
    if len(sel) > FLOW_LIMIT:
        z = np.zeros(0, dtype=np.int64)
        return z, z, z, z
    src, dst = idx.flow_src[sel], idx.flow_dst[sel]
    y0 = lane_of_row[np.searchsorted(idx.offsets, src, side="right") - 1]
    y1 = lane_of_row[np.searchsorted(idx.offsets, dst, side="right") - 1]
    ok = (y0 >= 0) & (y1 >= 0)
    return idx.ts[src][ok], y0[ok], idx.ts[dst][ok], y1[ok]


def _counters(
    idx: TimelineIndex, shown: tuple[Lane, ...], lo: int, hi: int, buckets: int
) -> Counters:
    """(lane, ts, value, lane's max |value|) of the counter samples to draw in [lo, hi]:
    the sample before `lo` (the value at the window's start), the last value again at `hi` (it
    holds to the window's end) and, when a series has more samples than buckets, the largest
    of each bucket (peaks never disappear)."""
    ys, tss, vals, scales = [], [], [], []
    for y, lane in enumerate(shown):
        if lane.kind != "counter":
            continue
        a, b = int(idx.ctr_offsets[lane.ref]), int(idx.ctr_offsets[lane.ref + 1])
        ts, value = idx.ctr_ts[a:b], idx.ctr_value[a:b]
        first = max(int(np.searchsorted(ts, lo, side="right")) - 1, 0)
        last = int(np.searchsorted(ts, hi, side="right"))
        ts, value = ts[first:last], value[first:last]
        if len(ts) > 2 * buckets:
            bucket = ((np.maximum(ts, lo) - lo) * buckets // max(hi - lo, 1)).astype(np.int64)
            order = np.lexsort((-value, bucket))
            _, first_of = np.unique(bucket[order], return_index=True)
            pick = np.sort(order[first_of])
            ts, value = ts[pick], value[pick]
        if len(ts) and ts[-1] < hi:  # the last value holds to the window's end
            ts, value = np.append(ts, hi), np.append(value, value[-1])
        scale = float(np.abs(idx.ctr_value[a:b]).max()) if b > a else 1.0
        ys.append(np.full(len(ts), y))
        tss.append(np.maximum(ts, lo))
        vals.append(value)
        scales.append(np.full(len(ts), scale or 1.0))
    if not ys:
        z = np.zeros(0)
        return z.astype(np.int64), z.astype(np.int64), z, z
    return np.concatenate(ys), np.concatenate(tss), np.concatenate(vals), np.concatenate(scales)


def _ms(ns: np.ndarray | float) -> Any:
    return np.asarray(ns, dtype=np.float64) / 1e6


def _shade(names: tuple[str, ...], sel: np.ndarray, palette: tuple[str, ...]) -> list[str]:
    """A colour per slice from `palette`, fixed by its name (same name, same colour)."""
    memo: dict[str, str] = {}
    out = []
    for j in sel.tolist():
        n = names[j]
        c = memo.get(n)
        if c is None:
            c = memo[n] = palette[zlib.crc32(n.encode()) % len(palette)]
        out.append(c)
    return out


def counter_text(value: float, label: str) -> str:
    """A counter value for hovers: bytes as KiB/MiB/GiB when the series is a size."""
    low = label.lower()
    if "byte" in low or "memory" in low or "mem" in low.split():
        for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
            if abs(value) >= scale:
                return f"{value / scale:.2f} {unit}"
        return f"{value:.0f} B"
    return f"{value:g}"


Figure = dict[str, Any]
"""A plotly figure as plain data (`{"data": [...], "layout": {...}}`): dcc.Graph takes it as
is, and building it skips plotly's Python-side validation (most of a zoom's cost)."""


def figure(
    w: Window,
    *,
    revision: str = "",
    found: np.ndarray | None = None,
    focus: int = -1,
    focus_at: tuple[int, int] | None = None,
) -> Figure:
    """Draw a `Window`: bars (exact) or busy density (aggregated), marks, flows, counters;
    the slices of a search (`found`, events-table rows) outlined, the `focus` one boldly (a
    star at `focus_at`, (time, lane), when the view is a density)."""
    data: list[dict[str, Any]] = []
    n = len(w.lanes)
    px_ns = (w.t1 - w.t0) / PLOT_PX
    if w.mode == "exact":
        _bars(data, w, px_ns)
        _outline(data, w, px_ns, found, focus)
    else:
        _density(data, w)
        if focus_at is not None:
            data.append(
                dict(
                    type="scatter",
                    name="in focus",
                    mode="markers",
                    x=[_ms(focus_at[0])],
                    y=[focus_at[1]],
                    marker={"symbol": "star", "size": 13, "color": FOUND_COLOR, "line": {"width": 1.5, "color": FOCUS_COLOR}},
                    hoverinfo="skip",
                )
            )  # fmt: skip
    _overlays(data, w)
    # an invisible point at each corner: the "select" tool needs a selectable trace even
    # when the view is a density (heatmaps are not selectable)
    data.append(
        dict(
            type="scatter",
            x=[_ms(w.t0), _ms(w.t1)],
            y=[0, max(n - 1, 0)],
            mode="markers",
            marker={"opacity": 0, "size": 1},
            hoverinfo="skip",
            showlegend=False,
            name="",
        )
    )
    return {"data": data, "layout": _layout(w, revision)}


def _overlays(data: list[dict[str, Any]], w: Window) -> None:
    """Add the marks, the launch -> device op flows and the counter tracks of `w`."""
    for k, m in enumerate(MARKS):
        sel = np.flatnonzero(w.mark_kind == k) if k else np.zeros(0, dtype=np.int64)
        if not len(sel):
            continue
        color, symbol, label = MARK_STYLE[m]
        data.append(
            dict(
                type="scatter",
                name=label,
                mode="markers",
                x=_ms(w.mark_ts[sel]),
                y=w.mark_lane[sel],
                marker={"color": color, "symbol": symbol, "size": 9, "line": {"width": 1, "color": color}},
                customdata=[["e", int(r)] for r in w.mark_event[sel]],
                hovertext=[f"{plot_text(w.mark_name[j])}<br>at {fmt.duration(float(w.mark_ts[j]))}" for j in sel],
                hovertemplate="%{hovertext}<extra>" + label + "</extra>",
            )
        )  # fmt: skip
    if len(w.flow_x0):
        xs: list[float | None] = []
        ys: list[float | None] = []
        for x0, y0, x1, y1 in zip(
            _ms(w.flow_x0), w.flow_y0, _ms(w.flow_x1), w.flow_y1, strict=True
        ):
            xs += [float(x0), float(x1), None]
            ys += [float(y0), float(y1), None]
        data.append(
            dict(
                type="scatter",
                name="launch → device op",
                x=xs,
                y=ys,
                mode="lines+markers",
                line={"color": FLOW_COLOR, "width": 1},
                marker={"symbol": "arrow", "angleref": "previous", "size": [0, 8, 0] * len(w.flow_x0), "color": FLOW_COLOR},
                hoverinfo="skip",
                opacity=0.7,
            )
        )  # fmt: skip
    if len(w.ctr_lane):
        for y in np.unique(w.ctr_lane):
            sel = np.flatnonzero(w.ctr_lane == y)
            label = w.lanes[int(y)].label
            scale = w.ctr_scale[sel]
            data.append(
                dict(
                    type="scatter",
                    name="counters",
                    legendgroup="counters",
                    showlegend=bool(y == w.ctr_lane[0]),
                    x=_ms(w.ctr_ts[sel]),
                    y=y + 0.4 - 0.8 * w.ctr_value[sel] / scale,
                    mode="lines",
                    line={"shape": "hv", "color": COUNTER_COLOR, "width": 1.5},
                    hovertext=[f"{plot_text(label)}: {counter_text(float(v), label)}" for v in w.ctr_value[sel]],
                    hovertemplate="%{hovertext}<extra></extra>",
                )
            )  # fmt: skip


def _layout(w: Window, revision: str) -> dict[str, Any]:
    """The figure's layout: one row per lane, time since the first event on x."""
    n = len(w.lanes)
    tickvals, ticktext = fmt.axis_ticks(w.t0, w.t1)
    layout = dict(
        barmode="overlay",
        uirevision=revision,
        height=max(260, 90 + LANE_PX * n),
        margin={"l": 10, "r": 10, "t": 36, "b": 50},
        legend={"orientation": "h", "x": 0, "y": 1, "yanchor": "bottom", "font": {"size": 11}},
        xaxis={
            "title": {"text": "time since the first event"},
            "range": [_ms(w.t0), _ms(w.t1)],
            "tickvals": tickvals,
            "ticktext": ticktext,
            "showgrid": True,
            "zeroline": False,
        },
        yaxis={
            "tickvals": list(range(n)),
            "ticktext": [plot_text(lane.label) for lane in w.lanes],
            "range": [n - 0.5, -0.5],
            "automargin": True,
            "fixedrange": True,
            "showgrid": False,
            "tickfont": {"size": 11},
        },
        clickmode="event",
        dragmode="zoom",
        plot_bgcolor="white",
        hoverlabel={"namelength": -1},
    )
    pinned = sum(lane.pinned for lane in w.lanes)
    if pinned:
        # the pinned block ends with a line across the plot
        layout["shapes"] = [
            dict(
                type="line", xref="paper", x0=0, x1=1, yref="y", y0=pinned - 0.5,
                y1=pinned - 0.5, line={"color": "#555555", "width": 2},
            )
        ]  # fmt: skip
    return layout


def _drawn(w: Window, sel: np.ndarray, px_ns: float) -> tuple[np.ndarray, np.ndarray]:
    """(start, width) in ns of bars `sel` as drawn: clipped to the window, never under a pixel."""
    start = np.maximum(w.bar_ts[sel], w.t0)
    return start, np.maximum(np.minimum(w.bar_end[sel], w.t1) - start, px_ns)


def _bars(data: list[dict[str, Any]], w: Window, px_ns: float) -> None:
    classes = (
        (CLASS_HOST, "host slice", HOST_SHADES),
        (CLASS_DEVICE, "device slice", DEVICE_SHADES),
        (CLASS_SUMMARY, "busy (collapsed group)", (SUMMARY_COLOR,)),
    )
    groups: list[tuple[str, np.ndarray, Any]] = [
        (label, (w.bar_class == c) & (w.bar_mark == 0), palette) for c, label, palette in classes
    ]
    groups += [
        (MARK_STYLE[m][2], w.bar_mark == k, (MARK_STYLE[m][0],)) for k, m in enumerate(MARKS) if k
    ]
    for label, mask, palette in groups:
        sel = np.flatnonzero(mask)
        if not len(sel):
            continue
        dur = w.bar_end[sel] - w.bar_ts[sel]
        marker = {"color": _shade(w.bar_name, sel, palette), "line": {"width": 0}}
        data.append(
            _bar_trace(w, sel, px_ns, label, 0.8, marker)
            | dict(
                customdata=[["e", int(r)] for r in w.bar_event[sel]],
                hovertext=[
                    f"{plot_text(w.bar_name[j])}<br>{fmt.duration(float(d))} at {fmt.duration(float(t))}"
                    for j, d, t in zip(sel, dur, w.bar_ts[sel], strict=True)
                ],
                hovertemplate="%{hovertext}<extra></extra>",
            )
        )
    _names(data, w, px_ns)


def _bar_trace(
    w: Window, sel: np.ndarray, px_ns: float, name: str, height: float, marker: dict[str, Any]
) -> dict[str, Any]:
    """A horizontal bar trace of bars `sel` as drawn (`_drawn`), `height` of a row high."""
    start, shown = _drawn(w, sel, px_ns)
    return dict(
        type="bar",
        name=name,
        orientation="h",
        base=_ms(start),
        x=_ms(shown),
        y=w.bar_lane[sel],
        width=height,
        marker=marker,
    )


def _outline(
    data: list[dict[str, Any]], w: Window, px_ns: float, found: np.ndarray | None, focus: int
) -> None:
    """Outlines (no fill, no hover: clicks reach the slice below) around the bars of the
    slices found by a search, and a bolder one around the slice in focus."""
    is_slice = w.bar_event >= 0
    hit = is_slice & np.isin(w.bar_event, found) if found is not None else np.zeros_like(is_slice)
    styles = (
        ("search matches", hit & (w.bar_event != focus), FOUND_COLOR, 2),
        ("in focus", is_slice & (w.bar_event == focus), FOCUS_COLOR, 3),
    )
    for label, mask, color, width in styles:
        sel = np.flatnonzero(mask)
        if not len(sel):
            continue
        marker = {"color": "rgba(0,0,0,0)", "line": {"width": width, "color": color}}
        data.append(_bar_trace(w, sel, px_ns, label, 0.9, marker) | {"hoverinfo": "skip"})


def fit_name(name: str, width_px: float) -> str:
    """`name` as it fits in a slice `width_px` wide: whole, cut with "…", or "" (as Perfetto
    draws names inside slices)."""
    room = int((width_px - 2 * LABEL_PAD_PX) // CHAR_PX)
    if len(name) <= room:
        return name
    if room - 1 < MIN_LABEL_CHARS:
        return ""
    return name[: room - 1] + "…"


def _names(data: list[dict[str, Any]], w: Window, px_ns: float) -> None:
    """The names of the slices wide enough to hold them, drawn inside them (a text trace:
    a bar's own text is hidden whenever it does not fit the row's height at full size)."""
    start = np.maximum(w.bar_ts, w.t0)
    shown = np.minimum(w.bar_end, w.t1) - start
    xs, ys, texts = [], [], []
    for j in np.flatnonzero((w.bar_event >= 0) & (shown > 0)).tolist():
        text = fit_name(w.bar_name[j], float(shown[j]) / px_ns)
        if text:
            xs.append(float(start[j] + shown[j] / 2) / 1e6)
            ys.append(int(w.bar_lane[j]))
            texts.append(plot_text(text))
    if not texts:
        return
    data.append(
        dict(
            type="scatter",
            name="slice names",
            mode="text",
            x=xs,
            y=ys,
            text=texts,
            textposition="middle center",
            textfont={"size": 10, "color": "white"},
            hoverinfo="skip",
            showlegend=False,
        )
    )


def _density(data: list[dict[str, Any]], w: Window) -> None:
    centers = _ms((w.edges[:-1] + w.edges[1:]) / 2)
    kind = np.array(
        [
            CLASS_SUMMARY if lane.kind == "summary" else CLASS_DEVICE if lane.is_device else CLASS_HOST
            for lane in w.lanes
        ]
    )  # fmt: skip
    scales = (
        (CLASS_HOST, "host busy", "rgba(76,120,168,0.35)", "rgb(47,90,134)"),
        (CLASS_DEVICE, "device busy", "rgba(84,162,75,0.4)", "rgb(47,122,42)"),
        (CLASS_SUMMARY, "group busy", "rgba(140,140,140,0.35)", "rgb(90,90,90)"),
    )
    style = {c: (label, low, high) for c, label, low, high in scales}
    busy = np.round(w.busy, 3).astype(np.float32)
    # one heatmap per run of adjacent lanes of one class: a heatmap's cells stretch to its
    # next row, so lanes of other classes between them would be painted over
    start = 0
    for end in range(1, len(kind) + 1):
        if end < len(kind) and kind[end] == kind[start]:
            continue
        label, low, high = style[int(kind[start])]
        block = busy[start:end]
        data.append(
            dict(
                type="heatmap",
                name=label,
                x=centers,
                y=np.arange(start, end),
                z=np.where(block > 0, block, np.nan),
                zmin=0,
                zmax=1,
                colorscale=[[0, low], [1, high]],
                showscale=False,
                hoverongaps=False,
                xgap=0,
                ygap=2,
                hovertemplate="%{x:.3f} ms<br>busy %{z:.0%}<extra>" + label + "</extra>",
            )
        )
        start = end
