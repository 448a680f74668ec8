"""`load(path) -> Trace`: a trace file (`trace_file.py`), or a directory of rank files combined
into one `Trace` or opened one at a time (`RankSet`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Literal, overload

from hpuprof.errors import TraceFormatError
from hpuprof.trace.formats import LoadProgress
from hpuprof.trace.model import Trace
from hpuprof.trace.trace_file import directory_trace_files, load_file, require_regular_file

if TYPE_CHECKING:
    from hpuprof.trace.rank_set import RankSet

Progress = LoadProgress
"""Called with the number of input-file bytes read since the last call."""


@overload
def load(
    path: str | os.PathLike[str],
    *,
    cache: bool = ...,
    progress: Progress | None = ...,
    threads: int | None = ...,
    lazy: Literal[False] = ...,
) -> Trace: ...


@overload
def load(
    path: str | os.PathLike[str],
    *,
    cache: bool = ...,
    progress: Progress | None = ...,
    threads: int | None = ...,
    lazy: Literal[True],
) -> RankSet: ...


def load(
    path: str | os.PathLike[str],
    *,
    cache: bool = True,
    progress: Progress | None = None,
    threads: int | None = None,
    lazy: bool = False,
) -> Trace | RankSet:
    """Load a trace file, or a directory of per-rank trace files, into one `Trace`.

    Args:
        path: a file of one of `formats.FORMATS` (`.json`, `.json.gz`, bare `.gz`,
            `.perfetto-trace`/`.pftrace`, `.parquet`), or a directory of such files (one per
            rank; ranks from each file's metadata or name).
        cache: read/write the load cache in the user cache dir (see `hpuprof.trace.cache`).
        progress: optional callback for progress reporting.
        threads: threads that scan one JSON file's chunks (default: `$HPUPROF_LOAD_THREADS`,
            else the cores this process may use; see `kineto_json.load_threads`).
        lazy: return a `RankSet` instead: the rank files, each opened only when asked for
            (`hpuprof.trace.rank_set`); nothing is read now.
    """
    source = Path(path)
    if lazy:
        return _lazy(source, cache)
    if source.is_dir():
        return _load_directory(source, cache=cache, progress=progress, threads=threads)
    if not source.exists():
        raise TraceFormatError(str(source), None, "an existing trace file or directory (not found)")
    return load_file(source, cache=cache, progress=progress, threads=threads)


def _lazy(source: Path, cache: bool) -> RankSet:
    from hpuprof.trace.rank_set import RankSet

    if source.is_file():
        return RankSet((source,), cache)
    if not source.is_dir():
        if source.exists():
            require_regular_file(source)  # a FIFO, socket or device: refused now, not later
        raise TraceFormatError(str(source), None, "an existing trace file or directory (not found)")
    files = directory_trace_files(source)
    return RankSet(tuple(files), cache)


def _load_directory(
    directory: Path, *, cache: bool, progress: Progress | None, threads: int | None = None
) -> Trace:
    from hpuprof.trace.combine import combine

    files = directory_trace_files(directory)
    return combine([load_file(f, cache=cache, progress=progress, threads=threads) for f in files])
