"""Integer categories (flow ids) kept as numbers: `NumberTexts` reads as the list of their
texts, and `categorical` made from it (in Arrow) equals the one made from that list."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from hpuprof.trace.categories import categorical
from hpuprof.trace.columns import NumberTexts
from hpuprof.trace.schema import NO_ID

INT64 = st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1)


def test_reads_as_the_list_of_texts() -> None:
    texts = NumberTexts(np.array([NO_ID, 5, -3, NO_ID, 1 << 62], dtype=np.int64))
    assert list(texts) == ["", "5", "-3", "-1", str(1 << 62)]  # the first is the absent ""
    assert len(texts) == 5
    assert texts[-1] == str(1 << 62)
    assert texts[1:3] == ["5", "-3"]
    assert texts == ["", "5", "-3", "-1", str(1 << 62)]
    assert texts != ["", "5"]
    assert NumberTexts(np.array([NO_ID], dtype=np.int64)) in ([], [""])
    assert texts.texts_at(np.array([3, 0, 1])).to_pylist() == ["-1", "", "5"]


@given(
    numbers=st.lists(INT64, min_size=1, max_size=300, unique=True),
    picks=st.lists(st.integers(min_value=0, max_value=300), max_size=400),
)
def test_categorical_equals_the_one_of_the_texts(numbers: list[int], picks: list[int]) -> None:
    values = np.array([NO_ID, *numbers], dtype=np.int64)
    codes = np.array([p % len(values) for p in picks], dtype=np.int32)
    fast = categorical(codes, NumberTexts(values))
    slow = categorical(codes, list(NumberTexts(values)))
    assert fast.dtype == slow.dtype
    assert list(fast.categories) == list(slow.categories)
    assert fast.codes.dtype == slow.codes.dtype
    assert pd.Series(fast).equals(pd.Series(slow))
