"""Totals per name over a time range: what a timeline's area selection reports.

`summarize_time_range(trace, start_ns, end_ns, lanes=...)` takes every slice (host or device,
not the profiler's own span) overlapping [start_ns, end_ns] on the chosen lanes and sums, per
name and side (host / device): occurrences, wall time inside the range (each slice clipped to
it), self time inside the range and the average full duration. The same table as Perfetto UI's
area selection, computed once for every view.

Self time gives every instant of a lane (rank, pid, tid) to one slice: the innermost one
running then, i.e. the one that started last (`exclusive_ns`). For slices that nest that is
wall minus the children's time; slices that cross instead of nesting (an emulated run's
modeled compile that outlasts its step, and the next step starting inside it) are not counted
twice, so the self times of a selection never add up to more than its width times its lanes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from hpuprof.analysis._common import strs
from hpuprof.trace.model import Trace

Lane = tuple[int, str, str]
"""(rank, pid, tid) of one timeline lane."""


@dataclass(frozen=True)
class NameTotal:
    """One name's slices in the range.

    Args:
        name: the slice name.
        side: "host" or "device".
        occurrences: slices overlapping the range.
        wall_ns: their time inside the range (clipped to it).
        self_ns: `wall_ns` minus the in-range time of their child slices.
        avg_ns: their mean full duration (not clipped).
        rank: the rank whose slices these are when the range holds several ranks (their
            totals are kept apart, never added across ranks); None with one rank.
    """

    name: str
    side: str
    occurrences: int
    wall_ns: int
    self_ns: int
    avg_ns: float
    rank: int | None = None


@dataclass(frozen=True)
class TimeRangeSummary:
    """The range, how many slices it holds, and the totals per name (largest wall first)."""

    start_ns: int
    end_ns: int
    slices: int
    rows: tuple[NameTotal, ...]


def _lane_codes(ev: pd.DataFrame, rows: np.ndarray) -> np.ndarray:
    """Each slice's lane (rank, pid, tid) as an integer code."""
    if not len(rows):
        return np.zeros(0, dtype=np.int64)
    keys = pd.DataFrame(
        {
            "rank": ev["rank"].to_numpy()[rows],
            "pid": strs(ev["pid"].iloc[rows]),
            "tid": strs(ev["tid"].iloc[rows]),
        }
    )
    return keys.groupby(["rank", "pid", "tid"], sort=False).ngroup().to_numpy(dtype=np.int64)


def exclusive_ns(lane: np.ndarray, ts: np.ndarray, end: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Each slice's self time inside [lo, hi]: every instant of a lane goes to the slice
    running then that started last (ties: the shorter, i.e. the inner one), so a lane's self
    times add up to at most its busy time in the range, whether its slices nest or cross."""
    n = len(ts)
    out = np.zeros(n, dtype=np.int64)
    if not n:
        return out
    a = np.clip(ts, lo, hi)
    b = np.clip(end, lo, hi)
    order = np.lexsort((np.arange(n), -end, ts, lane))
    lane_s = lane[order]
    # a sentinel slice [hi, hi) closes each lane: it drains the lane's open slices
    last_of_lane = np.flatnonzero(np.append(lane_s[1:] != lane_s[:-1], True))
    starts = np.insert(a[order], last_of_lane + 1, hi).tolist()
    ends = np.insert(b[order], last_of_lane + 1, hi).tolist()
    is_close = np.zeros(len(starts), dtype=bool)
    is_close[last_of_lane + np.arange(1, len(last_of_lane) + 1)] = True
    own = [0] * len(starts)
    stack: list[int] = []
    now = lo
    for i, close in enumerate(is_close.tolist()):
        s = starts[i]
        # [now, s) goes to the innermost open slice; slices that ended are popped
        while stack and now < s:
            top = stack[-1]
            e = ends[top]
            if e <= now:
                stack.pop()
            elif e < s:
                own[top] += e - now
                now = e
                stack.pop()
            else:
                own[top] += s - now
                now = s
        if close:
            stack.clear()
            now = lo
        else:
            if now < s:
                now = s
            stack.append(i)
    own_arr = np.asarray(own, dtype=np.int64)[~is_close]
    out[order] = own_arr
    return out


def summarize_time_range(
    trace: Trace,
    start_ns: int,
    end_ns: int,
    lanes: Iterable[Lane] | None = None,
    limit: int | None = None,
) -> TimeRangeSummary:
    """Totals per (name, side), and per rank when the slices come from several ranks, of the
    slices overlapping [start_ns, end_ns] (see module)."""
    lo, hi = (int(start_ns), int(end_ns)) if start_ns <= end_ns else (int(end_ns), int(start_ns))
    ev = trace.events
    ts = ev["ts_ns"].to_numpy(dtype=np.int64)
    end = ts + np.maximum(ev["dur_ns"].to_numpy(dtype=np.int64), 0)
    keep = (ev["ph"] == "X").to_numpy(dtype=bool) & (ev["kind"] != "span").to_numpy(dtype=bool)
    keep &= (ts <= hi) & (end >= lo)
    if lanes is not None:
        wanted = {(int(r), str(p), str(t)) for r, p, t in lanes}
        rows = np.flatnonzero(keep)
        rank = ev["rank"].to_numpy()[rows]
        pid, tid = strs(ev["pid"].iloc[rows]), strs(ev["tid"].iloc[rows])
        on = np.array(
            [(int(r), str(p), str(t)) in wanted for r, p, t in zip(rank, pid, tid, strict=True)],
            dtype=bool,
        )
        keep[rows[~on]] = False
    rows = np.flatnonzero(keep)
    clipped = np.minimum(end[rows], hi) - np.maximum(ts[rows], lo)
    clipped = np.maximum(clipped, 0)
    lane = _lane_codes(ev, rows)
    self_ns = exclusive_ns(lane, ts[rows], end[rows], lo, hi)
    rank_of = ev["rank"].to_numpy(dtype=np.int64)[rows]
    several = len(np.unique(rank_of)) > 1
    frame = pd.DataFrame(
        {
            "rank": rank_of if several else np.full(len(rows), -1, dtype=np.int64),
            "name": strs(ev["name"].iloc[rows]),
            "side": np.where(ev["is_device"].to_numpy(dtype=bool)[rows], "device", "host"),
            "wall": clipped,
            "own": self_ns,
            "dur": end[rows] - ts[rows],
        }
    )
    grouped = frame.groupby(["rank", "name", "side"], sort=False).agg(
        occurrences=("wall", "size"),
        wall=("wall", "sum"),
        own=("own", "sum"),
        avg=("dur", "mean"),
    )
    grouped = grouped.sort_values(["wall", "occurrences"], ascending=False)
    if limit is not None:
        grouped = grouped.head(limit)
    out = tuple(
        NameTotal(str(n), str(s), int(o), int(w), int(sf), float(a), int(r) if several else None)
        for (r, n, s), o, w, sf, a in zip(
            grouped.index,
            grouped["occurrences"],
            grouped["wall"],
            grouped["own"],
            grouped["avg"],
            strict=True,
        )
    )
    return TimeRangeSummary(lo, hi, len(rows), out)
