"""Totals per name over a time range: what a timeline's area selection reports.

`summarize_time_range(trace, start_ns, end_ns, lanes=...)` takes every slice (host or device,
not the profiler's own span) overlapping [start_ns, end_ns] on the chosen lanes and sums, per
name and side (host / device): occurrences, wall time inside the range (each slice clipped to
it), self time inside the range (wall minus the clipped time of its children) and the average
full duration. The same table as Perfetto UI's area selection, computed once for every view.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from hpuprof.analysis._common import strs
from hpuprof.trace.model import Trace
from hpuprof.trace.schema import NO_ID

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
    """

    name: str
    side: str
    occurrences: int
    wall_ns: int
    self_ns: int
    avg_ns: float


@dataclass(frozen=True)
class TimeRangeSummary:
    """The range, how many slices it holds, and the totals per name (largest wall first)."""

    start_ns: int
    end_ns: int
    slices: int
    rows: tuple[NameTotal, ...]


def summarize_time_range(
    trace: Trace,
    start_ns: int,
    end_ns: int,
    lanes: Iterable[Lane] | None = None,
    limit: int | None = None,
) -> TimeRangeSummary:
    """Totals per (name, side) of the slices overlapping [start_ns, end_ns] (see module)."""
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
    child = np.zeros(len(ev), dtype=np.int64)
    parent = ev["parent"].to_numpy(dtype=np.int64)[rows]
    has_parent = parent != NO_ID
    np.add.at(child, parent[has_parent], clipped[has_parent])
    self_ns = np.maximum(clipped - child[rows], 0)
    frame = pd.DataFrame(
        {
            "name": strs(ev["name"].iloc[rows]),
            "side": np.where(ev["is_device"].to_numpy(dtype=bool)[rows], "device", "host"),
            "wall": clipped,
            "own": self_ns,
            "dur": end[rows] - ts[rows],
        }
    )
    grouped = frame.groupby(["name", "side"], sort=False).agg(
        occurrences=("wall", "size"),
        wall=("wall", "sum"),
        own=("own", "sum"),
        avg=("dur", "mean"),
    )
    grouped = grouped.sort_values(["wall", "occurrences"], ascending=False)
    if limit is not None:
        grouped = grouped.head(limit)
    out = tuple(
        NameTotal(str(n), str(s), int(o), int(w), int(sf), float(a))
        for (n, s), o, w, sf, a in zip(
            grouped.index,
            grouped["occurrences"],
            grouped["wall"],
            grouped["own"],
            grouped["avg"],
            strict=True,
        )
    )
    return TimeRangeSummary(lo, hi, len(rows), out)
