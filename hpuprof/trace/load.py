"""`load(path) -> Trace`: pick the reader by suffix (or content), use the cache, combine ranks."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hpuprof.errors import TraceFormatError
from hpuprof.trace.model import Trace

JSON_SUFFIXES = (".json", ".json.gz", ".gz")
PERFETTO_SUFFIXES = (".perfetto-trace", ".pftrace")
PARQUET_SUFFIXES = (".parquet",)
TRACE_SUFFIXES = JSON_SUFFIXES + PERFETTO_SUFFIXES + PARQUET_SUFFIXES

Progress = Callable[[int], None]
"""Called with the number of input-file bytes read since the last call."""


def load(
    path: str | os.PathLike[str],
    *,
    cache: bool = True,
    progress: Progress | None = None,
    threads: int | None = None,
) -> Trace:
    """Load a trace file, or a directory of per-rank trace files, into one `Trace`.

    Args:
        path: `.json`, `.json.gz`, bare `.gz`, `.perfetto-trace`/`.pftrace`, `.parquet`, or a
            directory of such files (one per rank; ranks from each file's metadata or name).
        cache: read/write the load cache in the user cache dir (see `hpuprof.trace.cache`).
        progress: optional callback for progress reporting.
        threads: threads that scan one JSON file's chunks (default: `$HPUPROF_LOAD_THREADS`,
            else the cores this process may use; see `kineto_json.load_threads`).
    """
    source = Path(path)
    if source.is_dir():
        return _load_directory(source, cache=cache, progress=progress, threads=threads)
    if not source.exists():
        raise TraceFormatError(str(source), None, "an existing trace file or directory (not found)")
    return load_file(source, cache=cache, progress=progress, threads=threads)


def trace_files(directory: Path) -> list[Path]:
    """The trace files directly inside `directory`, sorted by name."""
    return sorted(
        p
        for p in directory.iterdir()
        if p.is_file() and p.name.endswith(TRACE_SUFFIXES) and not p.name.startswith(".")
    )


def _load_directory(
    directory: Path, *, cache: bool, progress: Progress | None, threads: int | None = None
) -> Trace:
    from hpuprof.trace.combine import combine
    from hpuprof.trace.run_manifest import is_run_directory, run_trace_files

    files = run_trace_files(directory) if is_run_directory(directory) else trace_files(directory)
    if not files:
        raise TraceFormatError(
            str(directory), None, f"trace files ({', '.join(TRACE_SUFFIXES)}) in the directory"
        )
    return combine([load_file(f, cache=cache, progress=progress, threads=threads) for f in files])


def _kind(source: Path) -> str:
    name = source.name.lower()
    if name.endswith(PARQUET_SUFFIXES):
        return "parquet"
    if name.endswith(PERFETTO_SUFFIXES):
        return "perfetto"
    if name.endswith(JSON_SUFFIXES):
        return "json"
    with open(source, "rb") as handle:
        head = handle.read(64)
    if head.startswith(b"PAR1"):
        return "parquet"
    if head.startswith(b"\x1f\x8b") or head.lstrip()[:1] in (b"{", b"["):
        return "json"
    raise TraceFormatError(
        str(source), 0, "a trace file: .json, .json.gz, .perfetto-trace, .pftrace or .parquet"
    )


def load_file(
    source: Path,
    *,
    cache: bool = True,
    progress: Progress | None = None,
    threads: int | None = None,
) -> Trace:
    """Load one trace file (see `load`)."""
    import warnings

    kind = _kind(source)
    if kind == "parquet":
        from hpuprof.trace.parquet import load_parquet

        return load_parquet(source)
    if cache:
        from hpuprof.trace.cache import read_cache

        cached = read_cache(source)
        if cached is not None:
            return cached
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trace = _read(source, kind, progress, threads)
    for warning in caught:
        warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    if cache and not caught:
        from hpuprof.trace.cache import write_cache

        write_cache(source, trace)
    return trace


def _read(source: Path, kind: str, progress: Any, threads: int | None = None) -> Trace:
    if kind == "perfetto":
        from hpuprof.trace.perfetto_read import load_perfetto

        return load_perfetto(source)
    from hpuprof.trace.kineto_json import read_kineto_json

    return read_kineto_json(source, progress=progress, threads=threads)
