"""Grouped matching on plain numpy arrays, by stable sorts and binary searches (no pandas
merge or groupby, no hash table): what the load-time derivations need per graph launch."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from hpuprof.trace.schema import NO_ID


def group_keys(*columns: NDArray[np.integer]) -> NDArray[np.int64]:
    """One int64 key per row, equal exactly where every one of `columns` is equal (dense codes
    of the distinct rows, no overflow whatever the values)."""
    n = len(columns[0]) if columns else 0
    key = np.zeros(n, dtype=np.int64)
    for column in columns:
        _, codes = np.unique(np.asarray(column), return_inverse=True)
        width = int(codes.max()) + 1 if n else 1
        _, key = np.unique(key * width + codes.reshape(-1), return_inverse=True)
        key = key.reshape(-1).astype(np.int64)
    return key


def last_at_or_before(
    row_groups: NDArray[np.int64],
    row_ts: NDArray[np.int64],
    start_groups: NDArray[np.int64],
    start_ts: NDArray[np.int64],
) -> NDArray[np.int64]:
    """For each row, the index of the last start of its group at or before its time (of starts
    at one time, the last of them), or NO_ID: `pandas.merge_asof(direction="backward", by=...)`
    over arrays. Group keys are compared as given (see `group_keys`)."""
    n_starts = len(start_ts)
    if n_starts == 0 or len(row_ts) == 0:
        return np.full(len(row_ts), NO_ID, dtype=np.int64)
    groups = np.concatenate([start_groups, row_groups])
    is_row = np.concatenate([np.zeros(n_starts, dtype=np.int8), np.ones(len(row_ts), np.int8)])
    # stable: starts in their own order at one time, before the rows at that time
    order = np.lexsort((is_row, np.concatenate([start_ts, row_ts]), groups))
    position = np.arange(len(order), dtype=np.int64)
    seen = np.maximum.accumulate(np.where(order < n_starts, position, -1))
    at_rows = np.flatnonzero(order >= n_starts)
    last = seen[at_rows]
    start = np.where(last >= 0, order[np.maximum(last, 0)], NO_ID)
    same = (start >= 0) & (groups[np.maximum(start, 0)] == groups[order[at_rows]])
    out = np.full(len(row_ts), NO_ID, dtype=np.int64)
    out[order[at_rows] - n_starts] = np.where(same, start, NO_ID)
    return out


def _grouped_order(groups: NDArray[np.int64]) -> tuple[NDArray[np.intp], NDArray[np.int64]]:
    """The rows' positions sorted by group, the rows' order kept within a group, and the group
    keys in that order: the one ordering every grouped helper here walks."""
    order = np.argsort(groups, kind="stable")
    return order, groups[order]


def rank_in_group(groups: NDArray[np.int64]) -> NDArray[np.int64]:
    """Each row's number among the rows of its group, counted in the rows' order (0 first):
    `DataFrame.groupby(...).cumcount()` over an array."""
    order, ordered = _grouped_order(groups)
    position = np.arange(len(groups), dtype=np.int64)
    first = np.ones(len(groups), dtype=bool)
    first[1:] = ordered[1:] != ordered[:-1]
    group_start = np.maximum.accumulate(np.where(first, position, 0))
    rank = np.empty(len(groups), dtype=np.int64)
    rank[order] = position - group_start
    return rank


def nth_of_group(
    groups: NDArray[np.int64],
    values: NDArray[np.int64],
    wanted: NDArray[np.int64],
    nth: NDArray[np.int64],
) -> NDArray[np.int64]:
    """For each of `wanted` (a group key), the value of the (`nth` modulo the group's size)-th
    row of that group in the rows' order, or NO_ID when the group has no row."""
    order, ordered = _grouped_order(groups)
    first = np.searchsorted(ordered, wanted, side="left")
    size = np.searchsorted(ordered, wanted, side="right") - first
    out = np.full(len(wanted), NO_ID, dtype=np.int64)
    has = size > 0
    out[has] = values[order[first[has] + nth[has] % size[has]]]
    return out
