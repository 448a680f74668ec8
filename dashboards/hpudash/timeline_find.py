"""Finding slices on the timeline: by name (search) and across a launch (kernel <-> launch).

Pure functions over a `TimelineIndex`, in its slice positions (the sorted slice arrays):
`matches` finds the slices whose name holds a text, `partners` follows the launch -> device-op
arrows (a device kernel to the host call that launched it, or back), `focus_window` is the view
that shows one slice (kept at the current zoom when the slice fits in it, as Perfetto's "next
match" does), `group_of` the group to expand so it is drawn on a row of its own, `track_of` its track (to
pin), `lane_of` the drawn lane it is on.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np

from hpudash.timeline import Lane
from hpudash.timeline_index import TimelineIndex

MAX_QUERY = 200
"""Longest search text looked for (longer text is cut)."""
FOCUS_SPAN = 20
"""A slice found from a zoomed-out view is shown this many times its own width."""
MIN_SPAN_NS = 2_000
"""The narrowest view a found slice is shown in (an instant still gets some context)."""


def matches(idx: TimelineIndex, text: str, ranks: Collection[int] | None = None) -> np.ndarray:
    """Positions of the slices whose name holds `text` (any case), by start time; none for
    blank text. `ranks` (None: all) limits them to the ranks shown."""
    needle = text.strip()[:MAX_QUERY].casefold()
    if not needle or not len(idx.ts):
        return np.zeros(0, dtype=np.int64)
    codes = [i for i, name in enumerate(idx.names) if needle in name.casefold()]
    found = np.flatnonzero(np.isin(idx.name_code, np.asarray(codes, dtype=np.int64)))
    if ranks is not None and len(found):
        rank_of_group = np.array([g.rank for g in idx.groups], dtype=np.int64)
        group_of_track = np.array([t.group for t in idx.tracks], dtype=np.int64)
        rank_of_row = rank_of_group[group_of_track[idx.row_track]]
        row = np.searchsorted(idx.offsets, found, side="right") - 1
        found = found[np.isin(rank_of_row[row], np.asarray(list(ranks), dtype=np.int64))]
    return found[np.lexsort((found, idx.ts[found]))]


def position_of(idx: TimelineIndex, event: int) -> int | None:
    """The slice position of events-table row `event`, or None when it is not a slice."""
    hit = np.flatnonzero(idx.event == int(event))
    return int(hit[0]) if len(hit) else None


def partners(idx: TimelineIndex, pos: int) -> tuple[str, np.ndarray]:
    """("launched by", [its launch]) for a device op, ("launches", its device ops) for a
    launch, ("", []) for a slice with no launch arrow."""
    src = idx.flow_src[idx.flow_dst == pos]
    if len(src):
        return "launched by", src[:1]
    dst = idx.flow_dst[idx.flow_src == pos]
    if len(dst):
        return "launches", np.sort(dst)
    return "", np.zeros(0, dtype=np.int64)


def track_of(idx: TimelineIndex, pos: int) -> int:
    """The track (thread, stream or engine) that holds slice `pos`."""
    row = int(np.searchsorted(idx.offsets, pos, side="right") - 1)
    return int(idx.row_track[row])


def group_of(idx: TimelineIndex, pos: int) -> int:
    """The group (process of a rank) whose track holds slice `pos`."""
    return idx.tracks[track_of(idx, pos)].group


def focus_window(idx: TimelineIndex, pos: int, current: tuple[int, int]) -> tuple[int, int]:
    """The window (ns from t0) that shows slice `pos`: the current zoom centred on it when the
    slice takes at most half of it and the zoom is at most `FOCUS_SPAN` times the slice
    (so it is drawn as itself); else a window `FOCUS_SPAN` times its width around it."""
    a, b = int(idx.ts[pos]), int(idx.end[pos])
    dur = max(b - a, 1)
    span = int(current[1]) - int(current[0])
    if not (2 * dur <= span <= FOCUS_SPAN * dur):
        span = max(FOCUS_SPAN * dur, MIN_SPAN_NS)
    mid = (a + b) // 2
    lo = max(mid - span // 2, 0)
    hi = min(lo + span, idx.span_ns)
    return max(hi - span, 0), hi


def lane_of(idx: TimelineIndex, shown: Sequence[Lane], pos: int) -> int | None:
    """The drawn lane (a position in `shown`) of slice `pos`: its row, else its group's
    summary when the group is collapsed, else None (its rank is not shown)."""
    row = int(np.searchsorted(idx.offsets, pos, side="right") - 1)
    group = group_of(idx, pos)
    summary = None
    for y, lane in enumerate(shown):
        if lane.kind == "row" and lane.ref == row:
            return y
        if lane.kind == "summary" and lane.ref == group:
            summary = y
    return summary
