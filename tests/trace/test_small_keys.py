"""`small_keys.unique_inverse` gives what `np.unique(..., return_inverse=True)` gives, and the
hardware CSV's combination numbering (`hw_profiler_columns._combinations`) tells rows apart
exactly where their codes differ."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hpuprof.trace import small_keys
from hpuprof.trace.hw_profiler_columns import _combinations

keys = st.lists(st.integers(0, 300), max_size=200)


@settings(max_examples=200, deadline=None)
@given(keys, st.integers(0, 50))
def test_unique_inverse_is_numpys(values: list[int], slack: int) -> None:
    array = np.array(values, dtype=np.int64)
    expected_distinct, expected_inverse = np.unique(array, return_inverse=True)
    for space in (None, int(array.max(initial=-1)) + 1 + slack):
        distinct, inverse = small_keys.unique_inverse(array, space)
        assert distinct.dtype == np.int64 and inverse.dtype == np.int64
        np.testing.assert_array_equal(distinct, expected_distinct)
        np.testing.assert_array_equal(inverse, expected_inverse.reshape(-1))


def test_unique_inverse_sorts_a_range_past_the_table() -> None:
    array = np.array([small_keys.TABLE_LIMIT * 4, 7, 7, 0], dtype=np.int64)
    distinct, inverse = small_keys.unique_inverse(array, small_keys.TABLE_LIMIT * 4 + 1)
    assert distinct.tolist() == [0, 7, small_keys.TABLE_LIMIT * 4]
    assert inverse.tolist() == [2, 1, 1, 0]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(1, 6), min_size=1, max_size=4).flatmap(
        lambda sizes: st.tuples(
            st.just(sizes),
            st.lists(st.tuples(*(st.integers(0, s - 1) for s in sizes)), max_size=60),
        )
    ),
    st.booleans(),
)
def test_combinations_number_the_distinct_rows(
    drawn: tuple[list[int], list[tuple[int, ...]]], wide: bool
) -> None:
    sizes, rows = drawn
    # `wide`: sizes so large that the key is renumbered between columns (not one table)
    scale = small_keys.TABLE_LIMIT if wide else 1
    columns = [
        (np.array([row[i] for row in rows], dtype=np.int64), size * scale)
        for i, size in enumerate(sizes)
    ]
    number, one = _combinations(columns)
    assert len(number) == len(rows)
    assert sorted(set(number.tolist())) == list(range(len(set(rows))))
    for i, row in enumerate(rows):
        assert rows[int(one[number[i]])] == row  # a row of its number holds the same codes
        for j, other in enumerate(rows):
            assert (number[i] == number[j]) == (row == other)
