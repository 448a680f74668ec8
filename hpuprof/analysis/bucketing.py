"""Bucketing recommender: the K bucket boundaries that minimise padding for <= K compilations.

Given the observed sizes of one dynamic dimension (with counts), every sample is padded up to
the smallest boundary >= its size; each boundary is one compiled shape. The optimal boundaries
are found exactly by dynamic programming over the sorted distinct sizes (the largest size is
always a boundary), in O(K * m^2) with the inner minimisation vectorized (m = distinct sizes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class BucketPlan:
    """A bucketing recommendation for one dimension.

    Args:
        boundaries: bucket sizes (ascending); each is one compilation.
        distinct_sizes: compilations without bucketing (one per distinct size).
        compilations_saved: distinct_sizes - len(boundaries).
        padding: padded elements added along the dimension, summed over samples.
        padding_pct: padding as a share of the real (unpadded) total.
        percentile_padding: padding of the docs' percentile heuristic with the same K (baseline).
    """

    boundaries: tuple[int, ...]
    distinct_sizes: int
    compilations_saved: int
    padding: int
    padding_pct: float
    percentile_padding: int


def _padding(sizes: np.ndarray, counts: np.ndarray, bounds: np.ndarray) -> int:
    idx = np.searchsorted(bounds, sizes, side="left")
    return int(((bounds[idx] - sizes) * counts).sum())


def recommend_buckets(
    sizes: Sequence[int], counts: Sequence[int] | None = None, k: int = 4
) -> BucketPlan:
    """Exact minimum-padding buckets for at most `k` compilations.

    Args:
        sizes: observed sizes (repeats allowed) or distinct sizes with `counts`.
        counts: how often each size occurs (default 1 each).
        k: the most buckets (compilations) allowed; >= 1.
    """
    if k < 1:
        raise ValueError("k must be >= 1")
    s_in = np.asarray(sizes, dtype=np.int64)
    c_in = np.ones_like(s_in) if counts is None else np.asarray(counts, dtype=np.int64)
    if s_in.size == 0:
        return BucketPlan((), 0, 0, 0, 0.0, 0)
    uniq, inv = np.unique(s_in, return_inverse=True)
    cnt = np.bincount(inv, weights=c_in).astype(np.int64)
    m = uniq.size
    kk = min(k, m)
    pc = np.concatenate([[0], np.cumsum(cnt)])  # prefix counts
    ps = np.concatenate([[0], np.cumsum(cnt * uniq)])  # prefix weighted sizes
    inf = np.iinfo(np.int64).max // 4
    # f[j]: best padding covering sizes[0..j] with the current number of buckets
    f = uniq * pc[1:] - ps[1:]  # one bucket at uniq[j] covering 0..j
    choice = [np.zeros(m, dtype=np.int64)]
    for _ in range(1, kk):
        g = np.full(m, inf, dtype=np.int64)
        arg = np.zeros(m, dtype=np.int64)
        for j in range(m):
            # last bucket covers i..j (i >= 1), previous buckets cover 0..i-1
            i = np.arange(1, j + 1)
            if i.size == 0:
                g[j] = f[j]
                arg[j] = 0
                continue
            cost = f[i - 1] + uniq[j] * (pc[j + 1] - pc[i]) - (ps[j + 1] - ps[i])
            best = int(np.argmin(cost))
            if cost[best] < f[j]:
                g[j], arg[j] = cost[best], i[best]
            else:
                g[j], arg[j] = f[j], 0
        f = g
        choice.append(arg)
    # backtrack from the last size
    bounds: list[int] = []
    j = m - 1
    for level in range(kk - 1, -1, -1):
        bounds.append(int(uniq[j]))
        start = int(choice[level][j]) if level > 0 else 0
        if start == 0:
            break
        j = start - 1
    b = np.array(sorted(set(bounds)), dtype=np.int64)
    padding = _padding(uniq, cnt, b)
    real = int((uniq * cnt).sum())
    q = np.percentile(np.repeat(uniq, cnt), np.linspace(0, 100, kk + 1), method="lower")[1:]
    pb = np.unique(np.append(q.astype(np.int64), uniq[-1]))
    return BucketPlan(
        boundaries=tuple(int(x) for x in b),
        distinct_sizes=int(m),
        compilations_saved=int(m - b.size),
        padding=padding,
        padding_pct=round(100.0 * padding / real, 2) if real else 0.0,
        percentile_padding=_padding(uniq, cnt, pb),
    )
