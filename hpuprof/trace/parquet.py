"""`Trace` <-> one Parquet file (`save_parquet`; `hpuprof convert` to `.parquet`).

File layout: the events table is the Parquet data (categoricals kept as dictionary columns,
`args` as binary; the columns of `schema.ARG_COLUMNS` that hold no value are left out, and
restored on reading); the small tables (counters, flows, processes, threads) travel as Arrow IPC
streams in the file's key-value metadata, beside `hpuprof.schema_version`, the per-rank
metadata (JSON), the sources and the format. Writes are atomic (temporary file + rename).
`events_table` / `trace_from_table` are shared with the load cache (`cache.py`), which keeps
the same table as a memory-mapped Arrow IPC file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec
import pandas as pd
import pyarrow as pa
import pyarrow.ipc as ipc

from hpuprof.errors import TraceFormatError
from hpuprof.trace.arrow_frame import frame_from_arrow
from hpuprof.trace.atomic_write import atomic_output
from hpuprof.trace.broadcast_columns import left_out_arg_columns, with_arg_columns
from hpuprof.trace.derive import OLDEST_READABLE_VERSION
from hpuprof.trace.formats import ReadOptions, WriteProgress
from hpuprof.trace.model import Trace
from hpuprof.trace.schema import ARG_COLUMNS, SCHEMA_VERSION, stored_event_columns

_TABLES = ("counters", "flows", "processes", "threads")
_COMPRESSION = "lz4"
_KEY = "hpuprof."


def _ipc_bytes(frame: pd.DataFrame) -> bytes:
    table = pa.Table.from_pandas(frame, preserve_index=False)
    sink = pa.BufferOutputStream()
    options = ipc.IpcWriteOptions(compression="lz4")
    with ipc.new_stream(sink, table.schema, options=options) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def _from_ipc(data: bytes) -> pd.DataFrame:
    with ipc.open_stream(pa.py_buffer(data)) as reader:
        return frame_from_arrow(reader.read_all())


def events_table(trace: Trace) -> pa.Table:
    """The events table as Arrow, with every other part of the trace in its schema metadata."""
    table = pa.Table.from_pandas(left_out_arg_columns(trace.events), preserve_index=False)
    extra: dict[bytes, bytes] = {
        b"hpuprof.schema_version": str(trace.schema_version).encode(),
        b"hpuprof.metadata": msgspec.json.encode(
            {str(rank): dict(meta) for rank, meta in trace.metadata.items()}
        ),
        b"hpuprof.sources": msgspec.json.encode(list(trace.sources)),
        b"hpuprof.format": trace.format.encode(),
    }
    for name in _TABLES:
        extra[f"{_KEY}{name}".encode()] = _ipc_bytes(getattr(trace, name))
    return table.replace_schema_metadata({**(table.schema.metadata or {}), **extra})


def save_parquet(trace: Trace, path: str | os.PathLike[str]) -> None:
    """Write `trace` to `path` as one Parquet file, atomically."""
    import pyarrow.parquet as pq  # here, not at the top: every trace load imports this module

    table = events_table(trace)
    with atomic_output(Path(path)) as handle:
        pq.write_table(table, handle, compression=_COMPRESSION, row_group_size=1 << 20)


def load_parquet(path: str | os.PathLike[str]) -> Trace:
    """Read a file written by `save_parquet`.

    Raises:
        TraceFormatError: not a Parquet file, or not one hpuprof wrote (a missing or damaged
            key, a column of another type, events that break the model's invariants).
    """
    import pyarrow.parquet as pq  # here, not at the top: every trace load imports this module

    from hpuprof.trace.heap import small_pages

    source = Path(path)
    with small_pages():  # no huge-page compaction for the column copies (see cache.read_cache)
        try:
            # a file object: pyarrow turns a path into a URI, which must be valid UTF-8
            with open(source, "rb") as handle:
                table = pq.read_table(handle, use_threads=False)
        except (OSError, pa.ArrowException) as error:
            raise TraceFormatError(
                str(source),
                "file structure",
                f"a Parquet file written by hpuprof ({_first_line(error)})",
            ) from None
        return trace_from_table(table, source)


def trace_from_table(table: pa.Table, source: Path, *, check_values: bool = True) -> Trace:
    """The `Trace` held by a table from `events_table` (read from Parquet or the cache).

    Args:
        table: the events table with the other parts in its schema metadata.
        source: the file it came from (named in errors).
        check_values: check the events' values too (see `validate.check_trace`), not only
            the keys, columns and types.
    """
    from hpuprof.trace.validate import check_trace

    meta = table.schema.metadata or {}
    version = _key(meta, "schema_version", source)
    try:
        number = int(version)
    except ValueError:
        raise TraceFormatError(str(source), "file metadata", "an integer schema version") from None
    if not OLDEST_READABLE_VERSION <= number <= SCHEMA_VERSION:
        raise TraceFormatError(
            str(source),
            "file metadata",
            f"schema version {OLDEST_READABLE_VERSION} to {SCHEMA_VERSION} (file has "
            f"{number!s:.40}; reload the source trace)",
        )
    # an older version's columns lack the derived ones: check_trace adds them once the
    # columns they are computed from are checked
    names = set(table.column_names)
    expected = [c for c in stored_event_columns(number) if c not in ARG_COLUMNS or c in names]
    if list(table.column_names) != expected:
        raise TraceFormatError(str(source), "columns", "the event columns of schema.py")
    try:
        events = frame_from_arrow(table)
        if number == SCHEMA_VERSION:
            events = with_arg_columns(events)
        tables = {name: _from_ipc(_key(meta, name, source)) for name in _TABLES}
    except (pa.ArrowException, OSError, ValueError, TypeError) as error:
        raise TraceFormatError(
            str(source), "file contents", f"tables hpuprof wrote ({_first_line(error)})"
        ) from None
    raw_meta = _decoded(meta, "metadata", source, dict)
    sources = _decoded(meta, "sources", source, list)
    if not all(isinstance(s, str) for s in sources):
        raise TraceFormatError(
            str(source), f"file metadata key {_KEY}sources", "a JSON list of file names"
        )
    try:
        metadata = {int(rank): value for rank, value in raw_meta.items()}
        trace_format = _key(meta, "format", source).decode()
    except (ValueError, UnicodeDecodeError):
        raise TraceFormatError(
            str(source), "file metadata", "ranks as integers and a UTF-8 format name"
        ) from None
    trace = Trace(
        events=events,
        counters=tables["counters"],
        flows=tables["flows"],
        metadata=metadata,
        processes=tables["processes"],
        threads=tables["threads"],
        sources=tuple(sources),
        format=trace_format,
        schema_version=number,
    )
    return check_trace(trace, str(source), values=check_values, version=number)


def _key(meta: dict[bytes, bytes], name: str, source: Path) -> bytes:
    value = meta.get(f"{_KEY}{name}".encode())
    if value is None:
        raise TraceFormatError(
            str(source), f"file metadata key {_KEY}{name}", "hpuprof's metadata (not ours?)"
        )
    return value


def _decoded(meta: dict[bytes, bytes], name: str, source: Path, kind: type) -> Any:
    try:
        value = msgspec.json.decode(_key(meta, name, source))
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
        value = None
    if not isinstance(value, kind):
        raise TraceFormatError(
            str(source), f"file metadata key {_KEY}{name}", f"a JSON {kind.__name__}"
        )
    return value


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0][:200] if lines else type(error).__name__


def read_trace(path: Path, options: ReadOptions) -> Trace:
    """The reader of `formats.PARQUET` (`load_parquet`; one pass, no progress)."""
    return load_parquet(path)


def write_trace(trace: Trace, path: Path, progress: WriteProgress | None = None) -> list[Path]:
    """The writer of `formats.PARQUET` (`save_parquet`)."""
    save_parquet(trace, path)
    return [path]
