"""`Trace` <-> one Parquet file (`Trace.save`, the user-facing on-disk form).

File layout: the events table is the Parquet data (categoricals kept as dictionary columns,
`args` as binary); the small tables (counters, flows, processes, threads) travel as Arrow IPC
streams in the file's key-value metadata, beside `hpuprof.schema_version`, the per-rank
metadata (JSON), the sources and the format. Writes are atomic (temporary file + rename).
`events_table` / `trace_from_table` are shared with the load cache (`cache.py`), which keeps
the same table as a memory-mapped Arrow IPC file.
"""

from __future__ import annotations

import os
from pathlib import Path

import msgspec
import pandas as pd
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from hpuprof.errors import TraceFormatError
from hpuprof.trace.arrow_frame import frame_from_arrow
from hpuprof.trace.atomic_write import atomic_output
from hpuprof.trace.derive import OLDEST_READABLE_VERSION, upgrade_events
from hpuprof.trace.model import Trace
from hpuprof.trace.schema import COUNTER_COLUMNS, EVENT_COLUMNS, FLOW_COLUMNS, SCHEMA_VERSION

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
    table = pa.Table.from_pandas(trace.events, preserve_index=False)
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
    table = events_table(trace)
    with atomic_output(Path(path)) as handle:
        pq.write_table(table, handle, compression=_COMPRESSION, row_group_size=1 << 20)


def load_parquet(path: str | os.PathLike[str]) -> Trace:
    """Read a file written by `save_parquet` (or `Trace.save`)."""
    from hpuprof.trace.heap import small_pages

    source = Path(path)
    with small_pages():  # no huge-page compaction for the column copies (see cache.read_cache)
        try:
            table = pq.read_table(source, use_threads=False)
        except (OSError, pa.ArrowInvalid) as error:
            raise TraceFormatError(
                str(source), None, f"a Parquet file written by hpuprof ({error})"
            ) from None
        return trace_from_table(table, source)


def trace_from_table(table: pa.Table, source: Path) -> Trace:
    """The `Trace` held by a table from `events_table` (read from Parquet or the cache)."""
    meta = table.schema.metadata or {}
    version = meta.get(b"hpuprof.schema_version")
    if version is None:
        raise TraceFormatError(str(source), "file metadata", "hpuprof.schema_version (not ours)")
    if not OLDEST_READABLE_VERSION <= int(version) <= SCHEMA_VERSION:
        raise TraceFormatError(
            str(source),
            "file metadata",
            f"schema version {SCHEMA_VERSION} (file has {int(version)}; reload the source trace)",
        )
    stored = frame_from_arrow(table)
    events = upgrade_events(stored) if int(version) < SCHEMA_VERSION else stored
    if events is None or list(events.columns) != list(EVENT_COLUMNS):
        raise TraceFormatError(str(source), "columns", "the event columns of schema.py")
    tables = {name: _from_ipc(meta[f"{_KEY}{name}".encode()]) for name in _TABLES}
    for name, schema in (("counters", COUNTER_COLUMNS), ("flows", FLOW_COLUMNS)):
        if list(tables[name].columns) != list(schema):
            raise TraceFormatError(str(source), name, f"the {name} columns of schema.py")
    raw_meta = msgspec.json.decode(meta[b"hpuprof.metadata"])
    return Trace(
        events=events,
        counters=tables["counters"],
        flows=tables["flows"],
        metadata={int(rank): value for rank, value in raw_meta.items()},
        processes=tables["processes"],
        threads=tables["threads"],
        sources=tuple(msgspec.json.decode(meta[b"hpuprof.sources"])),
        format=meta[b"hpuprof.format"].decode(),
        schema_version=SCHEMA_VERSION,
    )
