"""The one builder of `Trace` objects for tests, per hpuprof/trace/schema.py, and their comparison.

- `make_trace(events, counters, flows, derive=True, **fields)`: a Trace from row dicts (keys:
  schema columns; unnamed columns take defaults; `args` may be a dict, `input_dims` /
  `input_types` lists). With `derive` the columns a loader computes are computed the same way:
  `is_device` from the kind, `depth` / `parent` by containment within each (rank, pid, tid)
  lane, `step` from ProfilerStep#N or our step slices, then the derived and args-key columns by
  the loader's own `derive.with_derived`. Without, the tables hold exactly the rows given (for
  the writers' and readers' round trips).
- `table(spec, rows)`, `typed_table(spec, columns, n)`: one table with exactly the columns and
  dtypes of `spec`; `derived_events(table)`: the events of `GIVEN_COLUMNS` with the rest
  computed (for generators that lay out columns themselves: tests/dashboard/synth.py).
- `assert_same_table`, `assert_same_trace`, `column_values`; `SMALL_SHARED`, `kineto_or_skip`
  for the shared real traces.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pandas as pd
import pytest

from hpuprof.errors import TraceFormatError
from hpuprof.trace.derive import with_derived
from hpuprof.trace.model import Trace
from hpuprof.trace.schema import (
    ARG_COLUMN_DEFAULTS,
    COUNTER_COLUMNS,
    DEVICE_KINDS,
    EVENT_COLUMNS,
    FLOW_COLUMNS,
    NO_ID,
    STEP_ANNOTATION_PREFIX,
    stored_event_columns,
)
from tests.conftest import shared_trace_files

GIVEN_COLUMNS: dict[str, str] = {c: EVENT_COLUMNS[c] for c in stored_event_columns(1)}
"""The event columns a builder gives: every other one is computed from them (derived columns,
args-key columns), as a loader computes them."""

AS_LOADED: dict[str, Any] = {
    "cat": "cpu_op",
    "ph": "X",
    "pid": "1",
    "tid": "1",
    "dur_ns": 0,
    "rank": 0,
    "kind": "cpu_op",
    "is_device": False,
    "engine": "",
    "fallback": False,
    "args": b"",
}
"""Defaults of `make_trace(derive=True)`: a host op on thread 1 (device rows: process 0)."""
AS_GIVEN: dict[str, Any] = {
    **ARG_COLUMN_DEFAULTS,
    **{"depth": 0, "kind": "other", "ph": "X", "rank": 0, "dur_ns": 0},
}
"""Defaults of `make_trace(derive=False)` besides those of each dtype (`_dtype_default`)."""


def _dtype_default(dtype: str) -> Any:
    return {"category": "", "binary": b"", "bool": False, "float64": 0.0}.get(dtype, NO_ID)


def typed_table(
    spec: Mapping[str, str],
    columns: Mapping[str, Sequence[Any]],
    n: int,
    defaults: Mapping[str, Any] = AS_GIVEN,
) -> pd.DataFrame:
    """A DataFrame of `n` rows with exactly the columns and dtypes of `spec` (a column missing
    from `columns` takes `defaults`, else its dtype's default)."""
    out: dict[str, Any] = {}
    for column, dtype in spec.items():
        values = columns.get(column)
        if values is None:
            values = [defaults.get(column, _dtype_default(dtype))] * n
        if dtype == "category":
            out[column] = pd.Categorical([str(v) for v in values])
        elif dtype == "binary":
            out[column] = pd.Series(list(values), dtype=object)
        else:
            out[column] = np.array(values, dtype=dtype)
    return pd.DataFrame(out)


def table(
    spec: Mapping[str, str],
    rows: Sequence[Mapping[str, Any]],
    defaults: Mapping[str, Any] = AS_GIVEN,
) -> pd.DataFrame:
    """`typed_table` from row dicts."""
    named = {column for row in rows for column in row}
    columns = {
        column: [row.get(column, defaults.get(column, _dtype_default(dtype))) for row in rows]
        for column, dtype in spec.items()
        if column in named
    }
    return typed_table(spec, columns, len(rows), defaults)


def derived_events(given: pd.DataFrame) -> pd.DataFrame:
    """The events table from `GIVEN_COLUMNS` (in any order), the other columns computed."""
    return with_derived(given[list(GIVEN_COLUMNS)])


def make_trace(
    events: Sequence[Mapping[str, Any]],
    counters: Sequence[Mapping[str, Any]] = (),
    flows: Sequence[Mapping[str, Any]] = (),
    *,
    derive: bool = True,
    **fields: Any,
) -> Trace:
    """A Trace from row dicts (see the module docstring); `fields`: the other `Trace` fields
    (metadata, processes, threads, sources, format, ...)."""
    if derive:
        events_table = derived_events(_nested(table(GIVEN_COLUMNS, _as_loaded(events), AS_LOADED)))
        fields = {"metadata": {0: {}}, "sources": ("<built>",), "format": "test-built", **fields}
    else:
        events_table = table(EVENT_COLUMNS, events)
    return Trace(
        events=events_table,
        counters=table(COUNTER_COLUMNS, counters),
        flows=table(FLOW_COLUMNS, flows),
        **fields,
    )


def _as_loaded(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Rows with the values a loader would give: device rows on process 0, JSON texts."""
    filled = []
    for given in rows:
        row = {**AS_LOADED, **given}
        if row["kind"] in DEVICE_KINDS and "is_device" not in given:
            row["is_device"] = True
        if row["is_device"] and "pid" not in given:
            row["pid"] = "0"
        if isinstance(row["args"], dict):
            row["args"] = orjson.dumps(row["args"])
        for key in ("input_dims", "input_types"):
            if key in row and not isinstance(row[key], str):
                row[key] = orjson.dumps(row[key]).decode()
        filled.append(row)
    return filled


def _nested(df: pd.DataFrame) -> pd.DataFrame:
    """Rows sorted by (rank, ts), with `depth`, `parent` (containment per lane) and `step`."""
    df = df.sort_values(["rank", "ts_ns"], kind="stable", ignore_index=True)
    n = len(df)
    depth = np.zeros(n, dtype=np.int16)
    parent = np.full(n, NO_ID, dtype=np.int64)
    ts = df["ts_ns"].to_numpy()
    end = ts + df["dur_ns"].to_numpy()
    for idx in df.groupby(["rank", "pid", "tid"], observed=True).indices.values():
        stack: list[int] = []
        for i in sorted(idx, key=lambda k: (ts[k], -end[k])):
            while stack and not (ts[i] >= ts[stack[-1]] and end[i] <= end[stack[-1]]):
                stack.pop()
            if stack:
                parent[i] = stack[-1]
                depth[i] = len(stack)
            if df.at[i, "ph"] == "X":
                stack.append(i)
    step = np.full(n, NO_ID, dtype=np.int32)
    names = df["name"].astype(str)
    is_step = (names.str.startswith(STEP_ANNOTATION_PREFIX) & (df["kind"] == "user_annotation")) | (
        df["hpu_event"] == "step"
    )
    for i in np.flatnonzero(is_step.to_numpy()):
        num = int(names[i].split("#")[1])
        inside = (df["rank"] == df.at[i, "rank"]).to_numpy() & (ts >= ts[i]) & (ts < end[i])
        step[inside] = num
    return df.assign(depth=depth, parent=parent, step=step)


# --- comparison ----------------------------------------------------------------------------------


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
    for name in TABLES:
        assert_same_table(getattr(left, name), getattr(right, name), name)


def kineto_or_skip(source: Path) -> Trace:
    """Load a shared file with the JSON reader; skip the ones that are not Kineto traces."""
    from hpuprof.trace.kineto_json import read_kineto_json

    try:
        return read_kineto_json(source)
    except TraceFormatError:
        pytest.skip("not a Kineto trace (execution trace / memory timeline)")
