"""Categorical columns in the model's canonical form: only the used categories, sorted.

Every text column of a `Trace` is a `pd.Categorical` made here, so that two traces of the same
content compare equal column by column, whichever reader made them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from hpuprof.trace.columns import NumberTexts


def categorical(codes: NDArray[Any] | Sequence[int], categories: Sequence[str]) -> pd.Categorical:
    """A categorical with only the used categories, sorted (a canonical form for equality)."""
    codes = np.asarray(codes)
    if codes.dtype.kind not in "iu":
        codes = codes.astype(np.int64)
    if len(categories) == 0 or len(codes) == 0:
        empty = pd.CategoricalDtype(pd.Index([], dtype="str"))
        return pd.Categorical.from_codes(np.zeros(0, dtype=np.int8), dtype=empty)
    used = np.flatnonzero(np.bincount(codes, minlength=len(categories)))
    index: pd.Index
    if isinstance(categories, NumberTexts):  # made and sorted in Arrow, without the GIL
        texts = categories.texts_at(used)
        order: list[int] | NDArray[np.int64] = pc.array_sort_indices(texts).to_numpy()
        index = pd.Index(texts.take(order), dtype="str")  # (Arrow-backed: not copied)
    else:
        # Python str, not numpy's fixed-width unicode (which drops trailing NUL characters)
        names = [str(categories[i]) for i in used.tolist()]
        order = _text_order(names)
        index = pd.Index([names[i] for i in order], dtype="str")
    # codes of the width pandas narrows them to (pandas' coerce_indexer_dtype), taken in one
    # pass: no second pass to narrow them
    width = np.int8 if len(used) < 127 else np.int16 if len(used) < 32767 else np.int32
    remap: NDArray[np.signedinteger[Any]] = np.full(len(categories), -1, dtype=width)
    remap[used[order]] = np.arange(len(used), dtype=width)
    dtype = pd.CategoricalDtype(index)
    return pd.Categorical.from_codes(remap.take(codes), dtype=dtype, validate=False)


def _text_order(names: list[str]) -> list[int] | NDArray[np.int64]:
    """Positions of `names` in sorted order (code point order, as Python sorts str): sorted by
    Arrow for many names (667k flow ids: 0.4 s in Python), where UTF-8 byte order is the same."""
    if len(names) > 4096:
        try:
            return pc.array_sort_indices(pa.array(names, pa.large_string())).to_numpy()
        except (pa.ArrowException, UnicodeEncodeError):  # a lone surrogate: Python's sort
            pass
    return sorted(range(len(names)), key=names.__getitem__)


def text_categorical(values: Sequence[str] | NDArray[Any]) -> pd.Categorical:
    """A categorical of text values, categories sorted."""
    codes, uniques = pd.factorize(np.asarray(values, dtype=object))
    return categorical(codes, [str(u) for u in uniques]) if len(codes) else categorical([], [])
