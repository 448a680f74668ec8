"""`Trace` <-> one Parquet file, and the transparent load cache built on it.

File layout: the events table is the Parquet data (categoricals kept as dictionary columns,
`args` as binary); the small tables (counters, flows, processes, threads) travel as Arrow IPC
streams in the file's key-value metadata, beside `hpuprof.schema_version`, the per-rank
metadata (JSON), the sources and the format. Writes are atomic (temporary file + rename).

Cache: the second `load` of an unchanged trace reads `<name>.hpuprof-cache/<key>.parquet`
beside the trace, or `$XDG_CACHE_HOME/hpuprof/` (default `~/.cache/hpuprof`) when the trace's
directory is not writable. The key hashes the absolute path, size, mtime, SCHEMA_VERSION and
LOADER_VERSION, so any change to the file or to the loader invalidates it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path
from typing import Any

import msgspec
import pandas as pd
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from hpuprof.errors import OutputError, TraceFormatError
from hpuprof.trace.atomic_write import atomic_output
from hpuprof.trace.model import Trace
from hpuprof.trace.schema import COUNTER_COLUMNS, EVENT_COLUMNS, FLOW_COLUMNS, SCHEMA_VERSION

LOADER_VERSION = 1
"""Bump when normalization changes without a schema change: invalidates every cache."""

CACHE_SUFFIX = ".hpuprof-cache"
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
        return _text_categories(reader.read_all().to_pandas())


def _text_categories(frame: pd.DataFrame) -> pd.DataFrame:
    """Categories as `str` (an empty or all-missing dictionary comes back as object)."""
    for name in frame.columns:
        dtype = frame[name].dtype
        if isinstance(dtype, pd.CategoricalDtype) and dtype.categories.dtype != "str":
            text = pd.CategoricalDtype(pd.Index(dtype.categories.astype(str), dtype="str"))
            codes = frame[name].cat.codes.to_numpy()
            frame[name] = pd.Categorical.from_codes(codes, dtype=text, validate=False)
    return frame


def save_parquet(trace: Trace, path: str | os.PathLike[str]) -> None:
    """Write `trace` to `path` as one Parquet file, atomically."""
    target = Path(path)
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
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), **extra})
    with atomic_output(target) as handle:
        pq.write_table(table, handle, compression=_COMPRESSION, row_group_size=1 << 20)


def _binary_as_arrow(dtype: pa.DataType) -> Any:
    if pa.types.is_binary(dtype) or pa.types.is_large_binary(dtype):
        return pd.ArrowDtype(dtype)
    return None


def load_parquet(path: str | os.PathLike[str]) -> Trace:
    """Read a file written by `save_parquet` (or `Trace.save`)."""
    source = Path(path)
    try:
        table = pq.read_table(source, use_threads=False)
    except (OSError, pa.ArrowInvalid) as error:
        raise TraceFormatError(
            str(source), None, f"a Parquet file written by hpuprof ({error})"
        ) from None
    meta = table.schema.metadata or {}
    version = meta.get(b"hpuprof.schema_version")
    if version is None:
        raise TraceFormatError(str(source), "file metadata", "hpuprof.schema_version (not ours)")
    if int(version) != SCHEMA_VERSION:
        raise TraceFormatError(
            str(source),
            "file metadata",
            f"schema version {SCHEMA_VERSION} (file has {int(version)}; reload the source trace)",
        )
    events = _text_categories(table.to_pandas(types_mapper=_binary_as_arrow, self_destruct=True))
    if list(events.columns) != list(EVENT_COLUMNS):
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
        schema_version=int(version),
    )


# --- cache ------------------------------------------------------------------------------------


def _user_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hpuprof"


def _fingerprint(source: Path) -> tuple[str, str]:
    """(hash of the absolute path, hash of path + size + mtime + versions)."""
    absolute = str(source.resolve())
    stat = source.stat()
    where = hashlib.sha1(absolute.encode()).hexdigest()[:12]
    state = f"{absolute}|{stat.st_size}|{stat.st_mtime_ns}|{SCHEMA_VERSION}|{LOADER_VERSION}"
    return where, hashlib.sha1(state.encode()).hexdigest()[:16]


def cache_candidates(source: Path) -> list[tuple[Path, str, str]]:
    """(directory, file name, stale-entry glob) for each place the cache may live, in order."""
    where, key = _fingerprint(source)
    return [
        (source.parent / f"{source.name}{CACHE_SUFFIX}", f"{key}.parquet", "*.parquet"),
        (_user_cache_dir(), f"{source.name}-{where}-{key}.parquet", f"{source.name}-{where}-*"),
    ]


def read_cache(source: Path) -> Trace | None:
    """The cached Trace of `source` if one matches its current state, else None."""
    for directory, name, _ in cache_candidates(source):
        entry = directory / name
        if entry.is_file():
            try:
                return load_parquet(entry)
            except (TraceFormatError, OSError, KeyError, ValueError):
                with contextlib.suppress(OSError):
                    entry.unlink()
    return None


def write_cache(source: Path, trace: Trace) -> Path | None:
    """Store `trace` as the cache of `source`; returns where, or None if nowhere is writable."""
    for directory, name, stale in cache_candidates(source):
        try:
            directory.mkdir(parents=True, exist_ok=True)
            if not os.access(directory, os.W_OK):
                continue
            for old in directory.glob(stale):
                if old.name != name:
                    old.unlink(missing_ok=True)
            save_parquet(trace, directory / name)
        except (OSError, OutputError):
            continue
        return directory / name
    return None
