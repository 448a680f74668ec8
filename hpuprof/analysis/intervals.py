"""Vectorized interval arithmetic on numpy arrays of [start, end) in integer nanoseconds.

A *merged set* is a pair of sorted int64 arrays (starts, ends) of disjoint, non-touching
intervals. Every function here is O(n log n) or better and loops over no event in Python.
"""

from __future__ import annotations

from typing import TypeAlias

import numpy as np
import numpy.typing as npt

IntArray: TypeAlias = npt.NDArray[np.int64]
Merged: TypeAlias = tuple[IntArray, IntArray]


def _as_int(values: npt.ArrayLike) -> IntArray:
    return np.asarray(values, dtype=np.int64)


def merge(starts: npt.ArrayLike, ends: npt.ArrayLike) -> Merged:
    """Union of intervals as a merged set (overlapping or touching intervals join).

    Args:
        starts: interval starts.
        ends: interval ends (>= starts; negative-length intervals are clipped to empty).
    """
    s = _as_int(starts)
    e = np.maximum(_as_int(ends), s)
    if s.size == 0:
        return s, e
    order = np.argsort(s, kind="stable")
    s = s[order]
    e = e[order]
    reach = np.maximum.accumulate(e)
    # a new group starts where this start lies beyond everything before it
    new = np.empty(s.size, dtype=bool)
    new[0] = True
    new[1:] = s[1:] > reach[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, s.size - 1)
    return s[first], reach[last]


def total(merged: Merged) -> int:
    """Total covered length of a merged set."""
    s, e = merged
    return int((e - s).sum())


def union(a: Merged, b: Merged) -> Merged:
    """Union of two merged sets."""
    return merge(np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]]))


def overlap(a: Merged, b: Merged) -> int:
    """Length of the intersection of two merged sets (|A| + |B| - |A u B|)."""
    return total(a) + total(b) - total(union(a, b))


def clip(merged: Merged, lo: int, hi: int) -> Merged:
    """The part of a merged set inside [lo, hi)."""
    s, e = merged
    keep = (e > lo) & (s < hi)
    s2 = np.maximum(s[keep], lo)
    e2 = np.minimum(e[keep], hi)
    return s2, e2


def covered_in_windows(merged: Merged, lo: IntArray, hi: IntArray) -> IntArray:
    """Covered length of a merged set inside each window [lo[i], hi[i]), vectorized.

    Uses a prefix sum of lengths and binary search, so it costs O((n + w) log n).
    """
    s, e = merged
    lo = _as_int(lo)
    hi = _as_int(hi)
    if s.size == 0:
        return np.zeros(lo.size, dtype=np.int64)
    prefix = np.concatenate([[0], np.cumsum(e - s)])

    def covered_before(t: IntArray) -> IntArray:
        # length of the set inside (-inf, t)
        k = np.searchsorted(s, t, side="right")  # intervals starting before or at t
        full = prefix[np.maximum(k - 1, 0)]
        last = np.maximum(k - 1, 0)
        partial = np.clip(t - s[last], 0, e[last] - s[last])
        return np.where(k > 0, full + partial, 0)

    return covered_before(hi) - covered_before(lo)


def gaps(merged: Merged) -> Merged:
    """The holes between consecutive intervals of a merged set (inside its span)."""
    s, e = merged
    return e[:-1].copy(), s[1:].copy()


def sweep_classes(sets: list[Merged]) -> dict[int, int]:
    """Exclusive time per combination of up to 62 merged sets.

    Returns {bitmask: length}: bit i set means set i is active. Mask 0 (nothing) is omitted.
    """
    times: list[IntArray] = []
    deltas: list[IntArray] = []
    for i, (s, e) in enumerate(sets):
        bit = np.int64(1) << np.int64(i)
        times += [s, e]
        deltas += [np.full(s.size, bit, dtype=np.int64), np.full(e.size, -bit, dtype=np.int64)]
    if not times:
        return {}
    t = np.concatenate(times)
    d = np.concatenate(deltas)
    if t.size == 0:
        return {}
    order = np.argsort(t, kind="stable")
    t = t[order]
    running = np.cumsum(d[order])
    length = np.diff(t)
    mask = running[:-1]
    out: dict[int, int] = {}
    keep = mask > 0
    if keep.any():
        codes, inverse = np.unique(mask[keep], return_inverse=True)
        sums = np.bincount(inverse, weights=length[keep].astype(np.float64))
        for code, value in zip(codes.tolist(), sums.tolist(), strict=True):
            out[int(code)] = round(value)
    return out


def _segments(a: Merged, b: Merged) -> tuple[IntArray, IntArray, IntArray]:
    """Elementary segments of two merged sets with their membership mask (1=a, 2=b)."""
    t = np.concatenate([a[0], a[1], b[0], b[1]])
    d = np.concatenate(
        [
            np.ones(a[0].size, np.int64),
            -np.ones(a[1].size, np.int64),
            np.full(b[0].size, 2, np.int64),
            np.full(b[1].size, -2, np.int64),
        ]
    )
    if t.size == 0:
        empty = np.zeros(0, np.int64)
        return empty, empty, empty
    order = np.argsort(t, kind="stable")
    t = t[order]
    running = np.cumsum(d[order])
    return t[:-1], t[1:], running[:-1]


def intersect(a: Merged, b: Merged) -> Merged:
    """A intersected with B, as a merged set."""
    s, e, m = _segments(a, b)
    keep = (m == 3) & (e > s)
    return merge(s[keep], e[keep])


def subtract(a: Merged, b: Merged) -> Merged:
    """A minus B, as a merged set."""
    s, e, m = _segments(a, b)
    keep = (m == 1) & (e > s)
    return merge(s[keep], e[keep])
