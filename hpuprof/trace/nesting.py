"""Vectorized nesting of slices: depth and parent per lane, and the slice enclosing a time.

Input arrays are sorted by (lane, start, -duration, file order), so an enclosing slice always
comes before the slices it encloses. No Python loop per event: one pass in C over every row
(`_kineto_scan.nest`, without the GIL: it runs beside the loader's other threads), or without
the compiled module one numpy pass per lane for the depth and one per depth level for the
parent.

Rules (documented in the trace model):
- a slice j encloses i when j comes before i and ends strictly after i starts; slices that
  merely touch (j ends where i starts) are siblings;
- zero-duration rows (instants, empty slices) get the depth and parent of the slice around
  them and never enclose anything;
- malformed partial overlaps on one lane count the still-open slice as enclosing, and the
  parent is the last slice one level up on the lane.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from hpuprof.trace import fastscan
from hpuprof.trace.schema import NO_ID


def time_order(start: NDArray[np.int64], duration: NDArray[np.int64]) -> NDArray[np.int64]:
    """Positions sorted by (start, -duration, position), the events table's order.

    A stable sort by start alone (quick: traces are nearly in time order) already keeps the
    file order; only the runs of equal starts are then re-sorted, longest first.
    """
    order = np.argsort(start, kind="stable")
    if len(order) < 2:
        return order
    sorted_start = start[order]
    same = sorted_start[1:] == sorted_start[:-1]
    if not same.any():
        return order
    tied = np.zeros(len(order), dtype=bool)
    tied[1:] |= same
    tied[:-1] |= same
    run = np.cumsum(np.concatenate(([True], ~same)))  # run number of each sorted position
    slots = np.flatnonzero(tied)
    members = order[slots]
    order[slots] = members[np.lexsort((members, -duration[members], run[slots]))]
    return order


def lane_order(lane: NDArray[np.int64]) -> NDArray[np.int64]:
    """Positions sorted by lane, file order within a lane (a radix sort for small lane keys)."""
    if len(lane) and int(lane.min()) >= 0 and int(lane.max()) < (1 << 15):
        return np.argsort(lane.astype(np.int16), kind="stable")
    return np.argsort(lane, kind="stable")


def lane_bounds(lane: NDArray[np.int64]) -> list[tuple[int, int]]:
    """(first, past-last) row of each run of equal `lane` values."""
    n = len(lane)
    if n == 0:
        return []
    cuts = np.flatnonzero(lane[1:] != lane[:-1]) + 1
    firsts = np.concatenate(([0], cuts)).tolist()
    lasts = np.concatenate((cuts, [n])).tolist()
    return list(zip(firsts, lasts, strict=True))


def nest(
    lane: NDArray[np.int64], start: NDArray[np.int64], end: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Depth (0 = top level) and parent position (NO_ID at top) of every sorted row."""
    compiled = fastscan.nest_function()
    if compiled is None:
        return nest_numpy(lane, start, end)
    n = len(start)
    depth = np.empty(n, dtype=np.int64)
    parent = np.empty(n, dtype=np.int64)
    as_int64 = [np.ascontiguousarray(a, dtype=np.int64) for a in (lane, start, end)]
    compiled(*as_int64, depth, parent)
    return depth, parent


def nest_numpy(
    lane: NDArray[np.int64], start: NDArray[np.int64], end: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """`nest` in numpy (without the compiled module): a row's depth is the number of earlier
    rows of its lane that end after it starts, its parent the last earlier row one level up."""
    n = len(start)
    depth = np.zeros(n, dtype=np.int64)
    for first, last in lane_bounds(lane):
        if last - first < 2:
            continue
        s = start[first:last]
        e = end[first:last]
        count = last - first
        position = np.arange(count)
        closed = np.searchsorted(np.sort(e), s, side="right")
        # zero-duration rows starting exactly at s_i and placed at or after i are counted in
        # `closed` (they end at s_i) but do not come before i: take them back out
        new_group = np.empty(count, dtype=bool)
        new_group[0] = True
        np.not_equal(s[1:], s[:-1], out=new_group[1:])
        group = np.cumsum(new_group) - 1
        group_end = np.append(np.flatnonzero(new_group)[1:], count)
        zeros = np.bincount(group, weights=(e == s), minlength=len(group_end)).astype(np.int64)
        own_end = group_end[group]
        after = np.clip(own_end - np.maximum(position, own_end - zeros[group]), 0, None)
        depth[first:last] = position - (closed - after)
    parent = np.full(n, NO_ID, dtype=np.int64)
    if n == 0 or depth.max() == 0:
        return depth, parent
    by_depth = np.argsort(depth, kind="stable")
    if depth.max() > _LEVEL_LOOP_MAX:
        return depth, _parents_at_once(lane, depth, by_depth, parent)
    level_starts = np.searchsorted(depth[by_depth], np.arange(depth.max() + 2))
    for level in range(1, int(depth.max()) + 1):
        children = by_depth[level_starts[level] : level_starts[level + 1]]
        above = by_depth[level_starts[level - 1] : level_starts[level]]
        k = np.searchsorted(above, children) - 1
        found = k >= 0
        candidate = above[np.where(found, k, 0)]
        ok = found & (lane[candidate] == lane[children])
        parent[children[ok]] = candidate[ok]
    return depth, parent


_LEVEL_LOOP_MAX = 64
"""Above this depth the parents are found in one search over every row instead of one per
level (a pathological trace nests hundreds of thousands of identical slices)."""


def _parents_at_once(
    lane: NDArray[np.int64],
    depth: NDArray[np.int64],
    by_depth: NDArray[np.int64],
    parent: NDArray[np.int64],
) -> NDArray[np.int64]:
    """The parent of each row: the last row before it one level up, in one `searchsorted`
    over the rows keyed by (depth, position)."""
    n = len(depth)
    keys = depth[by_depth] * n + by_depth  # ascending: by depth, then position
    children = np.flatnonzero(depth > 0)
    k = np.searchsorted(keys, (depth[children] - 1) * n + children) - 1
    candidate = by_depth[np.maximum(k, 0)]
    ok = (k >= 0) & (depth[candidate] == depth[children] - 1) & (lane[candidate] == lane[children])
    parent[children[ok]] = candidate[ok]
    return parent


def enclosing(
    start: NDArray[np.int64],
    end: NDArray[np.int64],
    parent: NDArray[np.int64],
    usable: NDArray[np.bool_],
    times: NDArray[np.int64],
) -> NDArray[np.int64]:
    """Position of the deepest usable slice of one lane with start <= t <= end, NO_ID if none.

    `start`, `end`, `parent` describe one lane's sorted rows (parent positions local to it).
    """
    k = np.searchsorted(start, times, side="right") - 1
    while True:
        valid = k >= 0
        safe = np.where(valid, k, 0)
        bad = valid & ((end[safe] < times) | ~usable[safe])
        if not bad.any():
            return np.where(valid, k, NO_ID)
        k[bad] = parent[safe[bad]]
