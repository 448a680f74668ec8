"""The events table's orders computed with fast stable sorts equal the plain lexsort."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from hpuprof.trace.nesting import lane_order, time_order

small = st.lists(st.tuples(st.integers(0, 6), st.integers(0, 3)), max_size=60)


@given(small)
def test_time_order_is_start_then_longest_then_file_order(rows: list[tuple[int, int]]) -> None:
    start = np.array([r[0] for r in rows], dtype=np.int64)
    duration = np.array([r[1] for r in rows], dtype=np.int64)
    expected = np.lexsort((np.arange(len(rows)), -duration, start))
    assert time_order(start, duration).tolist() == expected.tolist()


@given(st.lists(st.integers(0, 4), max_size=60), st.sampled_from([1, 1 << 20]))
def test_lane_order_keeps_file_order_in_a_lane(lanes: list[int], scale: int) -> None:
    lane = np.array(lanes, dtype=np.int64) * scale  # small keys take the radix sort
    expected = np.lexsort((np.arange(len(lanes)), lane))
    assert lane_order(lane).tolist() == expected.tolist()
