"""Check a `Trace` read back from one of our own files (Parquet, the load cache, Perfetto).

A file hpuprof wrote holds the tables of `schema.py` exactly; one that was damaged or crafted
may hold anything. `check_trace` finds the first table, column or row that is not what hpuprof
writes and raises one `TraceFormatError` naming it, so that no analysis meets a column of the
wrong type, a parent or op row that does not exist or a negative duration. A file of an older
schema version is checked against that version's columns first, then gets the derived columns
(`derive.upgrade_events`), so that they are computed only from checked columns.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from hpuprof.errors import TraceFormatError
from hpuprof.trace.model import Trace
from hpuprof.trace.schema import (
    COUNTER_COLUMNS,
    EVENT_COLUMNS,
    EVENT_KINDS,
    FLOW_COLUMNS,
    NO_ID,
    SCHEMA_VERSION,
    EngineKind,
    stored_event_columns,
)

ENGINES: frozenset[str] = frozenset(EngineKind.__args__)  # type: ignore[attr-defined]
PROCESS_COLUMNS: Mapping[str, str] = {
    "rank": "int32",
    "pid": "text",
    "name": "text",
    "labels": "text",
    "sort_index": "int64",
}
THREAD_COLUMNS: Mapping[str, str] = {
    "rank": "int32",
    "pid": "text",
    "tid": "text",
    "name": "text",
    "sort_index": "int64",
}


def check_trace(
    trace: Trace, source: str, *, values: bool = True, version: int = SCHEMA_VERSION
) -> Trace:
    """`trace` when its tables are what hpuprof writes (with the derived columns added when
    it was read from a file of an older schema version); `TraceFormatError` otherwise.

    Args:
        trace: the trace as read.
        source: the file it was read from (named in the error).
        values: also check the event values the analyses rely on (durations, depths,
            parents, op rows, vocabularies), not only the columns and their types.
        version: the schema version the file says it holds (`derive.OLDEST_READABLE_VERSION`
            up to `SCHEMA_VERSION`; the caller refuses others).
    """
    from hpuprof.trace.derive import upgrade_events

    old = version < SCHEMA_VERSION
    stored = stored_event_columns(version)
    event_columns = {c: t for c, t in EVENT_COLUMNS.items() if c in stored}
    tables: tuple[tuple[str, Mapping[str, str]], ...] = (
        ("events", event_columns),
        ("counters", COUNTER_COLUMNS),
        ("flows", FLOW_COLUMNS),
        ("processes", PROCESS_COLUMNS),
        ("threads", THREAD_COLUMNS),
    )
    for name, schema in tables:
        frame = getattr(trace, name)
        if not isinstance(frame, pd.DataFrame):
            raise TraceFormatError(source, f"table {name}", "a table")
        if name in ("processes", "threads"):  # names only: columns may be left out
            schema = {c: t for c, t in schema.items() if c in frame.columns}
        elif list(frame.columns) != list(schema):
            raise TraceFormatError(
                source, f"table {name}", f"the columns {', '.join(schema)} (schema.py)"
            )
        for column, dtype in schema.items():
            if not _has_type(frame[column], dtype, exact=name not in ("processes", "threads")):
                raise TraceFormatError(
                    source,
                    f"table {name}, column {column}",
                    f"{dtype} values (found {frame[column].dtype})",
                )
    _check_parts(trace, source)
    if values or old:  # (derived columns are computed from checked values only)
        _check_events(trace.events, source)
    if old:
        upgraded = upgrade_events(trace.events, version)
        assert upgraded is not None  # (its columns were checked above)
        trace = replace(trace, events=upgraded, schema_version=SCHEMA_VERSION)
    return trace


def _has_type(column: pd.Series, dtype: str, *, exact: bool = True) -> bool:
    kind = column.dtype
    if not exact and dtype.startswith("int"):
        return pd.api.types.is_integer_dtype(kind)
    if dtype == "category":
        return isinstance(kind, pd.CategoricalDtype) and (
            len(kind.categories) == 0 or pd.api.types.is_string_dtype(kind.categories.dtype)
        )
    if dtype == "binary":
        if kind == np.dtype(object):  # bytes objects (read back from Perfetto)
            return all(isinstance(v, bytes) for v in column.tolist())
        return isinstance(kind, pd.ArrowDtype) and str(kind.pyarrow_dtype) in (
            "binary",
            "large_binary",
        )
    if dtype == "text":
        return pd.api.types.is_string_dtype(kind) and (
            kind != np.dtype(object) or all(isinstance(v, str) for v in column.tolist())
        )
    return bool(kind == np.dtype(dtype))


def _check_parts(trace: Trace, source: str) -> None:
    if not isinstance(trace.metadata, Mapping) or not all(
        isinstance(rank, int) and isinstance(meta, Mapping) for rank, meta in trace.metadata.items()
    ):
        raise TraceFormatError(source, "metadata", "an object of rank -> metadata object")
    if not all(isinstance(s, str) for s in trace.sources):
        raise TraceFormatError(source, "sources", "a list of file names")
    if not isinstance(trace.format, str):
        raise TraceFormatError(source, "format", "a format name")


def _check_events(events: pd.DataFrame, source: str) -> None:
    n = len(events)
    if n == 0:
        return
    problems: list[tuple[Any, str]] = [
        (events["dur_ns"].to_numpy() < 0, "a duration of at least 0 ns"),
        (events["depth"].to_numpy() < 0, "a depth of at least 0"),
    ]
    parent = events["parent"].to_numpy()
    rows = np.arange(n)
    problems.append(
        (
            ((parent < 0) & (parent != NO_ID)) | (parent >= rows),
            "-1 or an earlier row as parent (an enclosing slice comes first)",
        )
    )
    if "op_row" in events.columns:
        op_row = events["op_row"].to_numpy()
        problems.append(
            (((op_row < 0) & (op_row != NO_ID)) | (op_row >= n), "-1 or a row as op_row")
        )
    for mask, expected in problems:
        bad = np.flatnonzero(mask)
        if len(bad):
            raise TraceFormatError(source, f"events row {int(bad[0])}", expected)
    _check_utf8_args(events["args"], source)
    for column, allowed in (("ph", {"X", "i"}), ("kind", set(EVENT_KINDS)), ("engine", ENGINES)):
        unknown = set(events[column].cat.categories) - allowed
        if unknown:
            raise TraceFormatError(
                source,
                f"events column {column}",
                f"one of {', '.join(sorted(allowed))} (found {sorted(unknown)[0]!r:.40})",
            )


def _check_utf8_args(column: pd.Series, source: str) -> None:
    """Every args value is UTF-8 (JSON text is): analyses search it as text."""
    import pyarrow as pa

    arrow = getattr(column.array, "__arrow_array__", None)
    values = arrow() if arrow is not None else pa.array(column.tolist(), type=pa.large_binary())
    try:
        values.cast(pa.large_string() if "large" in str(values.type) else pa.string())
    except pa.ArrowInvalid:
        for row, value in enumerate(column.tolist()):
            try:
                bytes(value).decode("utf-8")
            except UnicodeDecodeError as error:
                raise TraceFormatError(
                    source, f"events row {row}", f"UTF-8 JSON as args ({error.reason})"
                ) from None
