"""Small `Trace` fixtures built column by column from `schema.py`, and a table comparison."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from conftest import shared_trace_files

from hpuprof.errors import TraceFormatError
from hpuprof.trace.model import Trace
from hpuprof.trace.schema import COUNTER_COLUMNS, EVENT_COLUMNS, FLOW_COLUMNS, NO_ID

_DEFAULTS: dict[str, Any] = {"depth": 0, "kind": "other", "ph": "X", "rank": 0, "dur_ns": 0}


def frame(spec: Mapping[str, str], rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """A DataFrame with exactly the columns and dtypes of `spec`, missing values defaulted."""
    columns: dict[str, Any] = {}
    for column, dtype in spec.items():
        if dtype in ("category", "binary"):
            fallback: Any = b"" if dtype == "binary" else ""
        elif dtype == "bool":
            fallback = False
        elif dtype == "float64":
            fallback = 0.0
        else:
            fallback = NO_ID
        values = [row.get(column, _DEFAULTS.get(column, fallback)) for row in rows]
        if dtype == "category":
            columns[column] = pd.Categorical(values)
        elif dtype == "binary":
            columns[column] = pd.Series(values, dtype=object)
        else:
            columns[column] = np.array(values, dtype=dtype)
    return pd.DataFrame(columns)


def make_trace(
    events: Sequence[Mapping[str, Any]],
    counters: Sequence[Mapping[str, Any]] = (),
    flows: Sequence[Mapping[str, Any]] = (),
    **fields: Any,
) -> Trace:
    """A Trace from row dicts (keys are schema columns; unnamed columns take defaults)."""
    return Trace(
        events=frame(EVENT_COLUMNS, events),
        counters=frame(COUNTER_COLUMNS, counters),
        flows=frame(FLOW_COLUMNS, flows),
        **fields,
    )


def column_values(series: pd.Series) -> list[Any]:
    """A column as plain Python values (categoricals as their values)."""
    return [v.item() if isinstance(v, np.generic) else v for v in series.astype(object).tolist()]


def assert_same_table(left: pd.DataFrame, right: pd.DataFrame, what: str) -> None:
    """Same columns, same kinds of dtype, same values column by column (categoricals as values)."""
    assert list(left.columns) == list(right.columns), what
    assert len(left) == len(right), f"{what}: {len(left)} rows != {len(right)}"
    for column in left.columns:
        a, b = left[column], right[column]
        assert isinstance(a.dtype, pd.CategoricalDtype) == isinstance(
            b.dtype, pd.CategoricalDtype
        ), f"{what}.{column}: {a.dtype} vs {b.dtype}"
        if not isinstance(a.dtype, pd.CategoricalDtype):
            assert str(a.dtype) == str(b.dtype), f"{what}.{column}: {a.dtype} vs {b.dtype}"
        va, vb = column_values(a), column_values(b)
        if pd.api.types.is_float_dtype(a.dtype):
            assert np.allclose(np.array(va, float), np.array(vb, float), equal_nan=True, rtol=0), (
                f"{what}.{column}"
            )
        else:
            assert va == vb, f"{what}.{column} differs"


TABLES = ("events", "counters", "flows", "processes", "threads")
SMALL_SHARED = [p for p in shared_trace_files() if p.stat().st_size < 200_000]
"""The small real traces of ../shared (empty when absent), for round-trip parametrizes."""


def assert_same_trace(left: Trace, right: Trace) -> None:
    """Every table equal column by column (categoricals as values)."""
    for table in TABLES:
        assert_same_table(getattr(left, table), getattr(right, table), table)


def kineto_or_skip(source: Path) -> Trace:
    """Load a shared file with the JSON reader; skip the ones that are not Kineto traces."""
    from hpuprof.trace.kineto_json import read_kineto_json

    try:
        return read_kineto_json(source)
    except TraceFormatError:
        pytest.skip("not a Kineto trace (execution trace / memory timeline)")
