"""The transparent load cache: the second `load` of an unchanged trace is a memory-mapped read.

Where: `$HPUPROF_CACHE_DIR` if set, else `$XDG_CACHE_HOME/hpuprof` (default
`~/.cache/hpuprof`). Never beside the trace: input directories may be read-only, shared, or
watched by the dashboard.

Entry: one Arrow IPC file (Feather v2, uncompressed) named
`<trace name>-<hash of absolute path>-<hash of path, size, mtime_ns, SCHEMA_VERSION,
LOADER_VERSION>.arrow`, holding the events table of `parquet.events_table` (the other tables and
the metadata in its schema metadata). Reading maps the file: categoricals come back from the
dictionary columns, numbers are copied once, and the big `args` column stays a zero-copy
`pd.ArrowDtype(pa.large_binary())` over the map.

Invalidation and size: any change to the trace file (size or mtime) or to the loader gives a
new key; writing an entry deletes the older entries of the same trace. Writes are atomic
(temporary file + rename). After each write the directory is trimmed to
`$HPUPROF_CACHE_MAX_BYTES` (default 8 GiB), least recently used entries first (a read touches
the entry's mtime). Nothing here ever fails a load: an unreadable or unwritable cache is skipped.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from hpuprof.errors import HpuprofError
from hpuprof.path_text import path_text
from hpuprof.trace.schema import SCHEMA_VERSION

if TYPE_CHECKING:
    from hpuprof.trace.model import Trace

# pyarrow, pandas and the atomic writer are imported by the functions that read or write an
# entry: `entry_path` alone (the key of the summary cache) is read by `hpuprof info` before it
# knows whether it needs them (start-up time, issue 27)

LOADER_VERSION = 3
"""Bump when normalization changes without a schema change: invalidates every cache entry."""

SUFFIX = ".arrow"
DEFAULT_MAX_BYTES = 8 << 30


def cache_dir() -> Path:
    """The directory holding cache entries (see the module docstring)."""
    explicit = os.environ.get("HPUPROF_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hpuprof"


def max_bytes() -> int:
    """The size cap of the cache directory, from `$HPUPROF_CACHE_MAX_BYTES`."""
    try:
        return int(os.environ.get("HPUPROF_CACHE_MAX_BYTES", DEFAULT_MAX_BYTES))
    except ValueError:
        return DEFAULT_MAX_BYTES


def _prefix(source: Path, resolved: Path | None = None) -> str:
    # os.fsencode: a file name need not be valid UTF-8 (b"x\xff.json" decodes to a lone
    # surrogate, which str.encode() refuses).
    digest = hashlib.sha256(os.fsencode(resolved or source.resolve())).hexdigest()[:12]
    return f"{path_text(source.name[:64])}-{digest}-"


def entry_path(source: Path) -> Path:
    """Where the cache entry of `source` in its current state lives (it may not exist)."""
    stat = source.stat()
    resolved = source.resolve()  # (once: `info DIR` takes the entry of 10,000 small files)
    state = os.fsencode(resolved) + b"|"
    state += f"{stat.st_size}|{stat.st_mtime_ns}|{SCHEMA_VERSION}|{LOADER_VERSION}".encode()
    key = hashlib.sha256(state).hexdigest()[:16]
    return cache_dir() / f"{_prefix(source, resolved)}{key}{SUFFIX}"


def read_cache(source: Path) -> Trace | None:
    """The cached Trace of `source` if an entry matches its current state, else None."""
    import pyarrow as pa
    import pyarrow.ipc as ipc

    from hpuprof.trace.heap import small_pages
    from hpuprof.trace.parquet import trace_from_table

    try:
        entry = entry_path(source)
        if not entry.is_file():
            return None
        # Small pages: right after a JSON load (which runs under small_pages and leaves free
        # memory in 4 KiB pieces between the new entry's page-cache pages) every huge page
        # of the column copies needed a direct compaction: 2 M-event reopen 0.085 s on a
        # quiet heap, 0.165 s right after the load; 0.115 s either way without huge pages.
        with small_pages():
            with pa.memory_map(str(entry)) as mapped:
                table = ipc.open_file(mapped).read_all()
            trace = trace_from_table(table, entry, check_values=False)  # our own entry
        os.utime(entry)  # least recently used goes first when trimming
        return trace
    except (HpuprofError, OSError, KeyError, ValueError, pa.ArrowException):
        with contextlib.suppress(OSError, UnboundLocalError):
            entry.unlink()
        return None


def write_cache(source: Path, trace: Trace) -> Path | None:
    """Store `trace` as the cache entry of `source`; returns where, or None if not writable."""
    import pyarrow as pa
    import pyarrow.ipc as ipc

    from hpuprof.trace.atomic_write import atomic_output
    from hpuprof.trace.parquet import events_table

    try:
        entry = entry_path(source)
        table = events_table(trace)
        with atomic_output(entry) as handle, ipc.new_file(handle, table.schema) as writer:
            writer.write_table(table, max_chunksize=max(len(table), 1))
        for old in entry.parent.glob(f"{_prefix(source)}*{SUFFIX}"):
            if old != entry:
                old.unlink(missing_ok=True)
        trim(entry.parent, max_bytes(), keep=entry)
    except (HpuprofError, OSError, pa.ArrowException):
        return None
    return entry


def trim(directory: Path, limit: int, keep: Path | None = None) -> list[Path]:
    """Delete the least recently used entries until the directory holds at most `limit` bytes.

    `keep` (the entry just written) is never deleted. Returns the deleted paths.
    """
    entries = []
    for path in directory.glob(f"*{SUFFIX}"):
        with contextlib.suppress(OSError):
            stat = path.stat()
            entries.append((stat.st_mtime_ns, stat.st_size, path))
    total = sum(size for _, size, _ in entries)
    deleted = []
    for _, size, path in sorted(entries):
        if total <= limit:
            break
        if path == keep:
            continue
        with contextlib.suppress(OSError):
            path.unlink()
            deleted.append(path)
            total -= size
    return deleted
