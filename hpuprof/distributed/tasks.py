"""What a worker runs for one rank file: load it (or its cache entry), analyse it, return little.

`analyze_rank_file` lives in an importable module so that Dask workers can run it. It returns
only the per-rank partial results of the asked reports (see `ReportSpec.partial`), never the
events; a file that cannot be read comes back as a `FailedRank` (file, position, reason).
"""

from __future__ import annotations

import os
import resource
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hpuprof.analysis.distributed import FailedRank
from hpuprof.analysis.options import AnalysisOptions
from hpuprof.errors import HpuprofError, TraceFormatError


@dataclass(frozen=True)
class RankOutcome:
    """The per-rank results of one rank file.

    Args:
        source: the file. index: its position in the run's file list.
        parts: report name -> {rank: partial result}.
        meta: trace facts (`hpuprof.analysis.trace_meta`) of the file.
        load_s / analyze_s: seconds spent loading and analysing.
        pid: the process that did it. peak_rss: that process's peak resident set so far (bytes).
    """

    source: str
    index: int
    parts: dict[str, dict[int, Any]]
    meta: dict[str, Any]
    load_s: float
    analyze_s: float
    pid: int
    peak_rss: int


def peak_rss_bytes() -> int:
    """Peak resident set of this process so far, in bytes."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def failure(source: str, error: BaseException) -> FailedRank:
    """A failed rank from the error that stopped it (position when the reader knows it)."""
    if isinstance(error, TraceFormatError):
        position = None if error.position is None else str(error.position)
        return FailedRank(source, position, f"expected {error.expected}")
    reason = str(error) or type(error).__name__
    if not isinstance(error, HpuprofError):
        reason = f"{type(error).__name__}: {reason}"
    return FailedRank(source, None, reason)


def analyze_rank_file(
    path: str,
    index: int,
    reports: Sequence[str],
    options: AnalysisOptions,
    filters: Sequence[Any] = (),
    cache: bool = True,
    threads: int | None = None,
) -> RankOutcome | FailedRank:
    """Load one rank file and run the per-rank part of each report on it (`threads`: the
    load's scan threads, see `hpuprof.trace.kineto_json.load_threads`)."""
    from hpuprof.analysis import trace_meta
    from hpuprof.analysis.filters import apply_filters
    from hpuprof.analysis.registry import spec
    from hpuprof.trace.load import load_file

    t0 = time.perf_counter()
    try:
        source = Path(path)
        if not source.is_file():
            raise TraceFormatError(path, None, "an existing trace file (not found)")
        trace = _with_file_rank(load_file(source, cache=cache, threads=threads), source, index)
    except (HpuprofError, OSError, MemoryError) as error:
        return failure(path, error)
    t1 = time.perf_counter()
    view = apply_filters(trace, list(filters)) if filters else trace
    del trace
    parts: dict[str, dict[int, Any]] = {}
    for name in reports:
        partial = spec(name).load("partial")
        parts[name] = {rank: partial(one, options) for rank, one in _by_rank(view)}
    meta = trace_meta(view)
    return RankOutcome(
        source=path,
        index=index,
        parts=parts,
        meta=meta,
        load_s=t1 - t0,
        analyze_s=time.perf_counter() - t1,
        pid=os.getpid(),
        peak_rss=peak_rss_bytes(),
    )


def _with_file_rank(trace: Any, source: Path, index: int) -> Any:
    """A file whose metadata names no rank gets `rank<N>` from its name, else its index in the
    run (as `combine` numbers such files), so that rank files never share rank 0 by default."""
    from hpuprof.trace.combine import with_rank
    from hpuprof.trace.rank_set import rank_of_file

    for meta in trace.metadata.values():
        info = meta.get("distributedInfo") if isinstance(meta, dict) else None
        if isinstance(info, dict) and isinstance(info.get("rank"), int):
            return trace
    if len(trace.ranks) > 1:
        return trace
    rank = rank_of_file(source, index)
    return trace if trace.ranks == [rank] else with_rank(trace, rank)


def _by_rank(trace: Any) -> list[tuple[int, Any]]:
    """(rank, one-rank trace) of a file; most files hold exactly one rank."""
    from hpuprof.analysis.filters import RankFilter, apply_filters

    ranks = trace.ranks or [0]
    if len(ranks) == 1:
        return [(ranks[0], trace)]
    return [(r, apply_filters(trace, [RankFilter((r,))])) for r in ranks]
