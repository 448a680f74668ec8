"""The grouped matching of `sorted_groups` equals the pandas operations it replaces."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpuprof.trace.schema import NO_ID
from hpuprof.trace.sorted_groups import group_keys, last_at_or_before, nth_of_group, rank_in_group

_small = st.integers(min_value=-2, max_value=3)
_times = st.integers(min_value=0, max_value=6)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    starts=st.lists(st.tuples(_small, _small, _times), max_size=12),
    rows=st.lists(st.tuples(_small, _small, _times), max_size=12),
)
def test_last_at_or_before_is_merge_asof_backward(
    starts: list[tuple[int, int, int]], rows: list[tuple[int, int, int]]
) -> None:
    s = np.array(starts, dtype=np.int64).reshape(-1, 3)
    r = np.array(rows, dtype=np.int64).reshape(-1, 3)
    both = np.concatenate([s, r])
    group = group_keys(both[:, 0], both[:, 1])
    got = last_at_or_before(group[len(s) :], r[:, 2], group[: len(s)], s[:, 2])
    left = pd.DataFrame({"ts": r[:, 2], "a": r[:, 0], "b": r[:, 1], "i": np.arange(len(r))})
    right = pd.DataFrame({"ts": s[:, 2], "a": s[:, 0], "b": s[:, 1], "w": np.arange(len(s))})
    want = np.full(len(r), NO_ID, dtype=np.int64)
    if len(r) and len(s):
        merged = pd.merge_asof(
            left.sort_values("ts", kind="stable"),
            right.sort_values("ts", kind="stable"),
            on="ts",
            by=["a", "b"],
            direction="backward",
        )
        want[merged["i"].to_numpy()] = merged["w"].fillna(NO_ID).to_numpy(dtype=np.int64)
    assert got.tolist() == want.tolist()


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_small, st.integers(-(2**62), 2**62)), max_size=20))
def test_group_keys_equal_exactly_where_the_rows_are_equal(pairs: list[tuple[int, int]]) -> None:
    a = np.array([p[0] for p in pairs], dtype=np.int64)
    b = np.array([p[1] for p in pairs], dtype=np.int64)
    keys = group_keys(a, b)
    for i in range(len(pairs)):
        for j in range(len(pairs)):
            assert (keys[i] == keys[j]) == (pairs[i] == pairs[j])


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_small, max_size=30))
def test_rank_in_group_is_cumcount(groups: list[int]) -> None:
    array = np.array(groups, dtype=np.int64)
    want = pd.Series(array).groupby(array).cumcount().to_numpy()
    assert rank_in_group(array).tolist() == want.tolist()


def test_nth_of_group_wraps_around_and_misses_empty_groups() -> None:
    groups = np.array([5, 7, 5, 5], dtype=np.int64)
    values = np.array([10, 20, 30, 40], dtype=np.int64)
    wanted = np.array([5, 5, 5, 7, 7, 6], dtype=np.int64)
    nth = np.array([0, 2, 4, 0, 1, 0], dtype=np.int64)
    assert nth_of_group(groups, values, wanted, nth).tolist() == [10, 40, 30, 20, 20, NO_ID]
