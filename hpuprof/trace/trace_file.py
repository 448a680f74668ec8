"""One trace file -> `Trace` (its format from `formats.py`, through the load cache), and the
trace files of a directory."""

from __future__ import annotations

import stat
from pathlib import Path

from hpuprof.errors import TraceFormatError
from hpuprof.trace.formats import TRACE_SUFFIXES, LoadProgress, ReadOptions, format_of
from hpuprof.trace.gaudi_node_spans import ANALYZED_NODES_SUFFIX
from hpuprof.trace.leftovers import remove_leftovers
from hpuprof.trace.model import Trace


def trace_files(directory: Path) -> list[Path]:
    """The trace files directly inside `directory`, sorted by name (Intel's analyzed-nodes
    tables are the companions of the hardware traces beside them, not traces)."""
    return sorted(
        p
        for p in directory.iterdir()
        if p.is_file()
        and p.name.lower().endswith(TRACE_SUFFIXES)
        and not p.name.startswith(".")
        and not p.name.endswith(ANALYZED_NODES_SUFFIX)
    )


def directory_trace_files(directory: Path) -> list[Path]:
    """The trace files of a directory: those its `run.json` names (checked to lie inside it) when
    it is a run directory (whose stale leftovers go first: `leftovers.py`), else every trace
    file in it; a `TraceFormatError` when there is none."""
    from hpuprof.trace.run_manifest import is_run_directory, run_trace_files

    if is_run_directory(directory):
        remove_leftovers(directory)  # scratch of killed writers; never a live run's
        files = run_trace_files(directory)
    else:
        files = trace_files(directory)
    if not files:
        raise TraceFormatError(
            str(directory), None, f"trace files ({', '.join(TRACE_SUFFIXES)}) in the directory"
        )
    return files


def require_regular_file(source: Path) -> None:
    """A `TraceFormatError` naming `source` unless it is a regular file (after symbolic links):
    reading a FIFO, socket or device named `x.json` would block or never end."""
    try:
        mode = source.stat().st_mode
    except OSError as error:
        raise TraceFormatError(
            str(source), None, f"an existing trace file or directory ({error.strerror})"
        ) from None
    if not stat.S_ISREG(mode):
        kind = _KINDS.get(stat.S_IFMT(mode), "neither a file nor a directory")
        raise TraceFormatError(str(source), None, f"a regular file or a directory (it is {kind})")


_KINDS = {
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}


def load_file(
    source: Path,
    *,
    cache: bool = True,
    progress: LoadProgress | None = None,
    threads: int | None = None,
    store: bool = True,
) -> Trace:
    """Load one trace file (see `hpuprof.trace.load.load`); with `cache` but not `store`, the
    load cache is read but no entry is written (`hpuprof info` over many files caches only
    their summaries: writing 10,000 entries cost more than reading the files)."""
    import warnings

    require_regular_file(source)
    trace_format = format_of(source)
    cache = cache and trace_format.cached
    if cache:
        from hpuprof.trace.cache import read_cache

        cached = read_cache(source)
        if cached is not None:
            return cached
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            trace = trace_format.read(source, ReadOptions(progress, threads))
        except MemoryError:  # (`ulimit -v`, a container's limit): the limit named, no traceback
            from hpuprof.trace.memory_limit import out_of_memory

            raise out_of_memory(source) from None
    for warning in caught:
        warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    if cache and store and not caught:
        from hpuprof.trace.cache import write_cache

        write_cache(source, trace)
    return trace
