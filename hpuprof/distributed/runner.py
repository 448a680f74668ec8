"""Many rank files -> one `Report`, each rank loaded and analysed apart (memory bounded).

`analyze_files(files, reports, options, workers=1)` runs `tasks.analyze_rank_file` on every
file: in this process one after another when `workers <= 1` (no cluster, no start-up cost), else
as Dask tasks on a local cluster of `workers` processes or on the cluster at `scheduler`. Only
the small per-rank results come back, so this process never holds more than one rank's events
(and with workers, none). Each report's per-rank results are merged by the registry's `merge`.
A rank whose file is unreadable or whose worker dies is named in `meta["failed"]` (and in the
distributed report's failed table); the others are reported.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hpuprof.analysis.distributed import FailedRank
from hpuprof.analysis.findings import Finding, sort_findings
from hpuprof.analysis.key_figures import with_key_figures
from hpuprof.analysis.options import AnalysisOptions
from hpuprof.analysis.report import Report
from hpuprof.distributed.tasks import RankOutcome, analyze_rank_file, failure
from hpuprof.errors import TraceFormatError

Progress = Callable[[int, int, str], None]
"""Called after each rank file with (files done, files in all, the file just done)."""


@dataclass(frozen=True)
class RunStats:
    """How a rank-by-rank run went: where, how long, how much memory.

    Args:
        workers: worker processes (0 when run in this process).
        wall_s: seconds from the first task to the last result (cluster start-up excluded).
        startup_s: seconds to start (or connect to) the cluster.
        load_s / analyze_s: per file, in file order (0 for failed files).
        peak_rss: per worker process id, its peak resident set in bytes.
    """

    workers: int
    scheduler: str
    wall_s: float
    startup_s: float
    load_s: tuple[float, ...]
    analyze_s: tuple[float, ...]
    peak_rss: dict[int, int] = field(default_factory=dict)


def analyze_files(
    files: Sequence[Path | str],
    reports: Sequence[str],
    options: AnalysisOptions | None = None,
    filters: Sequence[Any] = (),
    *,
    workers: int = 1,
    scheduler: str | None = None,
    worker_memory: str | None = None,
    cache: bool = True,
    progress: Progress | None = None,
) -> tuple[Report, RunStats]:
    """Analyse each rank file apart and merge the reports (see the module docstring)."""
    options = options or AnalysisOptions()
    paths = [str(f) for f in files]
    args: tuple[Any, ...] = (tuple(reports), options, tuple(filters), cache)
    t0 = time.perf_counter()
    if scheduler or (workers > 1 and len(paths) > 1):
        from hpuprof.distributed.cluster import dask_client, local_load_threads

        with dask_client(workers, scheduler, worker_memory) as client:
            startup = time.perf_counter() - t0
            threads = None if scheduler else local_load_threads(workers)
            results = _on_cluster(client, paths, (*args, threads), progress)
            n_workers = len(client.scheduler_info().get("workers", {}))
    else:
        startup = 0.0
        results = []
        for i, path in enumerate(paths):
            try:
                results.append(analyze_rank_file(path, i, *args))
            except Exception as error:  # an analysis bug on one rank must not lose the others
                results.append(failure(path, error))
            if progress is not None:
                progress(i + 1, len(paths), path)
        n_workers = 0
    wall = time.perf_counter() - t0 - startup
    return _merge(paths, reports, results, scheduler or "", n_workers, wall, startup)


def _on_cluster(
    client: Any, paths: list[str], args: tuple[Any, ...], progress: Progress | None
) -> list[RankOutcome | FailedRank]:
    from distributed import as_completed

    futures = client.map(
        analyze_rank_file,
        paths,
        range(len(paths)),
        *[[a] * len(paths) for a in args],
        pure=False,
        key=[f"hpuprof-rank-file-{i}" for i in range(len(paths))],
    )
    where = {f.key: p for f, p in zip(futures, paths, strict=True)}
    results: list[RankOutcome | FailedRank] = []
    for done, future in enumerate(as_completed(futures), start=1):
        path = where[future.key]
        try:
            results.append(future.result())
        except Exception as error:  # a dead worker (KilledWorker) or a failed task
            results.append(_cluster_failure(path, error))
        future.release()
        if progress is not None:
            progress(done, len(paths), path)
    return results


def _cluster_failure(path: str, error: BaseException) -> FailedRank:
    if type(error).__name__ == "KilledWorker":
        return FailedRank(path, None, "the worker analysing this rank died (out of memory?)")
    return failure(path, error)


def _unique_ranks(
    results: list[RankOutcome | FailedRank],
) -> tuple[list[RankOutcome], list[FailedRank]]:
    """Outcomes in file order, each rank from one file: a later file naming a rank an earlier
    one has is failed (named), not merged over it."""
    done: list[RankOutcome] = []
    failed = [r for r in results if isinstance(r, FailedRank)]
    owner: dict[int, str] = {}
    for r in sorted((r for r in results if isinstance(r, RankOutcome)), key=lambda r: r.index):
        ranks = {rank for parts in r.parts.values() for rank in parts} or set(r.meta["ranks"])
        clash = sorted(ranks & set(owner))
        if clash:
            other = owner[clash[0]]
            failed.append(FailedRank(r.source, None, f"rank {clash[0]} is also in {other}"))
            continue
        owner.update(dict.fromkeys(ranks, r.source))
        done.append(r)
    return done, failed


def _merge(
    paths: list[str],
    reports: Sequence[str],
    results: list[RankOutcome | FailedRank],
    scheduler: str,
    workers: int,
    wall: float,
    startup: float,
) -> tuple[Report, RunStats]:
    from hpuprof.analysis.registry import spec

    done, failed = _unique_ranks(results)
    if not done:
        first = failed[0] if failed else FailedRank(", ".join(paths), None, "no rank files")
        raise TraceFormatError(
            first.source,
            first.position,
            f"a readable rank ({len(failed)} of {len(paths)} failed; the first: {first.reason})",
        )
    sections: dict[str, Any] = {}
    for name in reports:
        parts = {rank: part for r in done for rank, part in r.parts[name].items()}
        sections[name] = spec(name).load("merge")(parts, failed)
    findings: list[Finding] = []
    for sec in sections.values():
        findings += list(getattr(sec, "findings", ()) or ())
    first_meta = done[0].meta
    meta = {
        "format": ",".join(sorted({str(r.meta.get("format", "")) for r in done})),
        "events": sum(int(r.meta.get("events", 0)) for r in done),
        "ranks": sorted({int(x) for r in done for x in r.meta.get("ranks", [])}),
        "device": first_meta.get("device"),
        "timeline": first_meta.get("timeline"),
        "reports": list(reports),
        "rank_files": len(paths),
        "failed": [asdict(f) for f in failed],
    }
    meta = with_key_figures(sections, meta)
    by_pid: dict[int, int] = {}
    for r in done:
        by_pid[r.pid] = max(by_pid.get(r.pid, 0), r.peak_rss)
    load = {r.index: r.load_s for r in done}
    analyze = {r.index: r.analyze_s for r in done}
    stats = RunStats(
        workers=workers,
        scheduler=scheduler,
        wall_s=wall,
        startup_s=startup,
        load_s=tuple(load.get(i, 0.0) for i in range(len(paths))),
        analyze_s=tuple(analyze.get(i, 0.0) for i in range(len(paths))),
        peak_rss=by_pid,
    )
    report = Report(
        source=tuple(r.source for r in done),
        sections=sections,
        findings=tuple(sort_findings(findings)),
        meta=meta,
    )
    return report, stats
