"""The columns read from args that hold no value: one broadcast value in memory, left out of
saved files, kept broadcast by row subsets.

Most traces hold none of hpuprof's own args keys and few of the others (`schema.ARG_COLUMNS`):
such a column is a zero-stride array (no memory per row) until something copies it row by row,
which `subset` avoids; Parquet and the load cache leave it out (`left_out_arg_columns`) and
reading restores it (`with_arg_columns`).
"""

from __future__ import annotations

import math
from typing import Any, Final

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from hpuprof.trace.schema import ARG_COLUMN_DEFAULTS, ARG_COLUMNS, EVENT_COLUMNS

_TEXT: Final = pd.CategoricalDtype(pd.Index([""], dtype="str"))


def absent_column(value: Any, n: int) -> NDArray[Any]:
    """`n` times `value` as one read-only broadcast value (no memory per row)."""
    return np.broadcast_to(np.asarray(value), (n,))


def absent_text(n: int) -> pd.Categorical:
    """`n` empty texts as a categorical over one broadcast code (no memory per row)."""
    return pd.Categorical.from_codes(absent_column(np.int8(0), n), dtype=_TEXT, validate=False)


def absent_arg_column(name: str, n: int) -> NDArray[Any] | pd.Categorical:
    """The column `name` of `schema.ARG_COLUMNS` when no row holds its key."""
    dtype, default = ARG_COLUMNS[name], ARG_COLUMN_DEFAULTS[name]
    if dtype == "category":
        return absent_text(n)  # (text columns are "" where absent)
    return absent_column(np.asarray(default, dtype=dtype), n)


def holds_values(column: pd.Series) -> bool:
    """Whether the arg column `column` (named as in `schema.ARG_COLUMNS`) holds a value on some
    row (not only its default)."""
    default = ARG_COLUMN_DEFAULTS[str(column.name)]
    values = column.array
    if isinstance(values, pd.Categorical):
        return list(values.categories) not in ([], [default])
    array = column.to_numpy()
    if array.strides == (0,) or not len(array):  # one broadcast value (`absent_column`)
        array = array[:1]
    if isinstance(default, float) and math.isnan(default):
        return bool((~np.isnan(array)).any())
    return bool((array != default).any())


def left_out_arg_columns(events: pd.DataFrame) -> pd.DataFrame:
    """`events` without the arg columns that hold no value (as files store them)."""
    empty = [name for name in ARG_COLUMNS if name in events and not holds_values(events[name])]
    return events.drop(columns=empty) if empty else events


def with_arg_columns(events: pd.DataFrame) -> pd.DataFrame:
    """`events` with the arg columns it lacks restored (no value in any row), in schema order."""
    missing = [name for name in ARG_COLUMNS if name not in events.columns]
    if not missing:
        return events
    n = len(events)
    columns = {name: events[name].array for name in events.columns}
    columns.update((name, absent_arg_column(name, n)) for name in missing)
    order = [name for name in EVENT_COLUMNS if name in columns]
    order += [name for name in columns if name not in EVENT_COLUMNS]
    return pd.DataFrame({name: columns[name] for name in order}, index=events.index, copy=False)


def subset(events: pd.DataFrame, mask: NDArray[np.bool_]) -> pd.DataFrame:
    """`events[mask]`, each arg column that holds no value kept as one broadcast value (a row
    subset copies every column it holds: these hold nothing to copy)."""
    empty = [name for name in ARG_COLUMNS if name in events and not holds_values(events[name])]
    return with_arg_columns(events.drop(columns=empty)[mask]) if empty else events[mask]
