"""The `distributed` report: per-rank partials merged into cross-rank tables and findings.

Work splits in two so that ranks can be analysed apart (one process or one Dask task each,
`hpuprof.distributed`) and only small results travel:

- `rank_partial(events, rank, options) -> RankPartial`: everything one rank contributes, from
  that rank's events alone: HTA's stream metrics (`distributed_streams`), the critical path of
  each step (`distributed_critical_path`), its collective instances (`distributed_collectives`)
  and its compute time per step;
- `merge_partials(partials) -> DistributedReport`: concatenates the per-rank rows, matches the
  collectives across ranks (collective skew: who arrives last, and the waiting it causes) and
  compares compute across ranks (load imbalance).

`analyze_distributed(trace, options)` does both on an in-memory `Trace` (one or many ranks).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

import numpy as np
import pandas as pd

from hpuprof.analysis import intervals as iv
from hpuprof.analysis._common import (
    ends,
    host_ops,
    kernel_types,
    pct,
    step_windows,
    without_args,
)
from hpuprof.analysis.distributed_collectives import (
    CollectiveSkew,
    collective_table,
    match_collectives,
    skews,
)
from hpuprof.analysis.distributed_critical_path import (
    CriticalEdge,
    CriticalPathRow,
    critical_paths,
    edges_of,
)
from hpuprof.analysis.distributed_streams import (
    IdleRow,
    LaunchRow,
    MemoryBandwidthRow,
    OverlapRow,
    QueueRow,
    by_int,
    device_rows,
    stream_metrics,
)
from hpuprof.analysis.findings import Finding, sort_findings
from hpuprof.analysis.options import AnalysisOptions
from hpuprof.trace.broadcast_columns import subset
from hpuprof.trace.model import Trace

REPORT: Final = "distributed"


@dataclass(frozen=True)
class ComputeRow:
    """Compute time of one rank (merged device compute, or host op time without a device)."""

    rank: int
    source: str
    compute_ns: int
    steps: int
    per_step_ns: float
    vs_mean_pct: float


@dataclass(frozen=True)
class SkewRankRow:
    """How often a rank arrives last at matched collectives, the waiting it causes the others
    and the time it waits itself for later arrivals (inside its collectives)."""

    rank: int
    collectives: int
    times_last: int
    last_pct: float
    wait_caused_ns: int
    waited_ns: int


@dataclass(frozen=True)
class SkewStepRow:
    """Per step: the rank that arrived last most often and the waiting it caused."""

    step: int
    collectives: int
    last_rank: int
    times_last: int
    wait_caused_ns: int
    max_skew_ns: int


@dataclass(frozen=True)
class FailedRank:
    """A rank that could not be analysed: its file, where in it ("byte 58"), and why."""

    source: str
    position: str | None
    reason: str


@dataclass(frozen=True)
class RankPartial:
    """What one rank contributes to the distributed report (small: no events).

    Args:
        collectives: the rank's collective instances (`distributed_collectives` columns).
        critical_overlay: the edges of the rank's longest critical path (`CriticalEdge`
            columns; a table, small to ship).
        step_compute: per step: step, start_ns, end_ns, compute_ns.
        options: the analysis options (the merge's thresholds).
    """

    rank: int
    source: str
    events: int
    device: str
    device_span_ns: int
    overlap: OverlapRow
    idle: tuple[IdleRow, ...]
    queue: tuple[QueueRow, ...]
    memory: tuple[MemoryBandwidthRow, ...]
    launch: LaunchRow | None
    critical_path: tuple[CriticalPathRow, ...]
    critical_overlay: pd.DataFrame
    collectives: pd.DataFrame
    compute_source: str
    compute_ns: int
    step_compute: pd.DataFrame
    notes: tuple[str, ...] = ()
    options: AnalysisOptions = field(default_factory=AnalysisOptions)


@dataclass(frozen=True)
class DistributedReport:
    """Cross-rank analyses (HTA's definitions where HTA has them; see the modules' docs).

    Args:
        comm_comp_overlap: per rank, % of communication time overlapped by computation.
        idle_breakdown: per rank and stream, idle time by host_wait / kernel_wait / other.
        queue_length: per rank and stream, outstanding launched ops (mean and max).
        memory_bandwidth: per rank and copy kind, bandwidth of concurrent copies (GB/s).
        launch_stats: per rank, host launch time, device time and launch delay.
        critical_path: per rank and step, the critical path length and shares by bound.
        critical_path_overlay: the edges of the longest critical path (a timeline overlay).
        collective_skew: every collective matched across ranks: last rank, skew, waiting
            caused.
        skew_by_rank / skew_by_step: the same per rank and per step.
        load_imbalance: compute time per rank against the mean.
        failed: ranks that could not be analysed (the others are reported).
    """

    ranks: tuple[int, ...]
    comm_comp_overlap: tuple[OverlapRow, ...]
    idle_breakdown: tuple[IdleRow, ...]
    queue_length: tuple[QueueRow, ...]
    memory_bandwidth: tuple[MemoryBandwidthRow, ...]
    launch_stats: tuple[LaunchRow, ...]
    critical_path: tuple[CriticalPathRow, ...]
    critical_path_overlay: tuple[CriticalEdge, ...]
    collective_skew: tuple[CollectiveSkew, ...]
    skew_by_rank: tuple[SkewRankRow, ...]
    skew_by_step: tuple[SkewStepRow, ...]
    load_imbalance: tuple[ComputeRow, ...]
    failed: tuple[FailedRank, ...] = ()
    notes: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = field(default=())


def _rank_events(events: pd.DataFrame, options: AnalysisOptions) -> pd.DataFrame:
    if not options.drop_last_step:
        return events
    from hpuprof.analysis.bottleneck import _drop_last_step

    kept = _drop_last_step(without_args(events)).index
    return subset(events, events.index.isin(kept))  # (args-key columns holding no value: kept)


def rank_partial(
    events: pd.DataFrame, rank: int, options: AnalysisOptions | None = None, source: str = ""
) -> RankPartial:
    """Everything rank `rank` contributes, from its events table alone (pure)."""
    options = options or AnalysisOptions()
    full = _rank_events(events, options)
    ev = without_args(full)
    overlap, idle, queue, memory, launch = stream_metrics(rank, full, options)
    windows = step_windows(ev)
    cp_rows, cp_edges = critical_paths(full, rank, windows)
    dev = device_rows(ev)
    ktype = kernel_types(dev).to_numpy(dtype=object) if len(dev) else None
    collectives = collective_table(full, dev, ktype)
    if ktype is not None and (ktype == "COMPUTATION").any():
        comp = dev[ktype == "COMPUTATION"]
        busy = iv.merge(comp["ts_ns"].to_numpy(dtype=np.int64), ends(comp))
        compute_source = "device"
    else:
        ops = host_ops(ev)
        busy = iv.merge(ops["ts_ns"].to_numpy(dtype=np.int64), ends(ops))
        compute_source = "host"
    lo = windows["start_ns"].to_numpy(dtype=np.int64)
    hi = windows["end_ns"].to_numpy(dtype=np.int64)
    step_compute = pd.DataFrame(
        {
            "step": windows["step"].to_numpy(dtype=np.int64),
            "start_ns": lo,
            "end_ns": hi,
            "compute_ns": iv.covered_in_windows(busy, lo, hi),
        }
    )
    span = 0
    if len(dev):
        span = int(ends(dev).max() - dev["ts_ns"].min())
    notes = ("last ProfilerStep dropped (HTA's default)",) if options.drop_last_step else ()
    return RankPartial(
        rank=rank,
        source=source,
        events=len(full),
        device=events_device(ev),
        device_span_ns=span,
        overlap=overlap,
        idle=tuple(idle),
        queue=tuple(queue),
        memory=tuple(memory),
        launch=launch,
        critical_path=tuple(cp_rows),
        critical_overlay=cp_edges,
        collectives=collectives,
        compute_source=compute_source,
        compute_ns=iv.total(busy),
        step_compute=step_compute,
        notes=notes,
        options=options,
    )


def _skew_tables(
    matched: pd.DataFrame, coll: list[CollectiveSkew]
) -> tuple[list[SkewRankRow], list[SkewStepRow]]:
    if not coll:
        return [], []
    sk = pd.DataFrame([c.__dict__ for c in coll])
    latest = matched.groupby(["pg", "key"])["start_ns"].transform("max")
    matched = matched.assign(_waited=(latest - matched["start_ns"]).to_numpy())
    ranks = []
    for rank, grp in by_int(matched, "rank"):
        n_seen = len(grp[["pg", "key"]].drop_duplicates())
        mine = sk[sk["last_rank"].to_numpy() == rank]
        ranks.append(
            SkewRankRow(
                rank=rank,
                collectives=n_seen,
                times_last=len(mine),
                last_pct=pct(len(mine), n_seen),
                wait_caused_ns=int(mine["wait_caused_ns"].sum()),
                waited_ns=int(grp["_waited"].sum()),
            )
        )
    steps = []
    for step, grp in by_int(sk, "step"):
        counts = grp["last_rank"].value_counts()
        top = int(counts.index.to_numpy()[0])
        steps.append(
            SkewStepRow(
                step=step,
                collectives=len(grp),
                last_rank=top,
                times_last=int(counts.iloc[0]),
                wait_caused_ns=int(grp.loc[grp["last_rank"] == top, "wait_caused_ns"].sum()),
                max_skew_ns=int(grp["skew_ns"].max()),
            )
        )
    ranks.sort(key=lambda r: (-r.times_last, -r.wait_caused_ns, r.rank))
    return ranks, steps


def _compute_rows(partials: Sequence[RankPartial]) -> list[ComputeRow]:
    if not partials:
        return []
    per_step = []
    for p in partials:
        steps = len(p.step_compute)
        per = float(p.step_compute["compute_ns"].mean()) if steps else float(p.compute_ns)
        per_step.append((p, steps, per))
    mean = float(np.mean([x[2] for x in per_step])) or 1.0
    return [
        ComputeRow(
            rank=p.rank,
            source=p.compute_source,
            compute_ns=p.compute_ns,
            steps=steps,
            per_step_ns=round(per, 1),
            vs_mean_pct=round(100.0 * (per / mean - 1.0), 2),
        )
        for p, steps, per in per_step
    ]


def merge_partials(
    partials: Iterable[RankPartial],
    failed: Iterable[FailedRank] = (),
    options: AnalysisOptions | None = None,
) -> DistributedReport:
    """The distributed report of these ranks (failed ones listed, not silently dropped);
    `options` default to those the partials were made with."""
    parts = sorted(partials, key=lambda p: p.rank)
    options = options or (parts[0].options if parts else AnalysisOptions())
    devices = {p.device for p in parts}
    device = "hpu" if "hpu" in devices else ("gpu" if "gpu" in devices else "")
    matched = match_collectives({p.rank: p.collectives for p in parts})
    coll = skews(matched)
    s_ranks, s_steps = _skew_tables(matched, coll)
    cp = [r for p in parts for r in p.critical_path]
    overlay: tuple[CriticalEdge, ...] = ()
    if cp:
        top = max(cp, key=lambda r: r.length_ns)
        owner = next(p for p in parts if p.rank == top.rank)
        table = owner.critical_overlay
        if len(table) and int(table["step"].iloc[0]) == top.step:
            overlay = edges_of(table)
    notes = sorted({n for p in parts for n in p.notes})
    sources = {p.collectives["source"].iloc[0] for p in parts if len(p.collectives)}
    if "host" in sources:
        notes.append("collectives timed on the host (the trace has no device collectives)")
    report = DistributedReport(
        ranks=tuple(p.rank for p in parts),
        comm_comp_overlap=tuple(p.overlap for p in parts),
        idle_breakdown=tuple(r for p in parts for r in p.idle),
        queue_length=tuple(r for p in parts for r in p.queue),
        memory_bandwidth=tuple(r for p in parts for r in p.memory),
        launch_stats=tuple(p.launch for p in parts if p.launch is not None),
        critical_path=tuple(cp),
        critical_path_overlay=overlay,
        collective_skew=tuple(coll),
        skew_by_rank=tuple(s_ranks),
        skew_by_step=tuple(s_steps),
        load_imbalance=tuple(_compute_rows(parts)),
        failed=tuple(failed),
        notes=tuple(notes),
    )
    return replace(report, findings=tuple(distributed_findings(report, parts, options, device)))


def _mean_step_ns(parts: Sequence[RankPartial]) -> float:
    durations = [
        float((p.step_compute["end_ns"] - p.step_compute["start_ns"]).mean())
        for p in parts
        if len(p.step_compute)
    ]
    return float(np.mean(durations)) if durations else 0.0


def _skew_finding(
    rep: DistributedReport, parts: Sequence[RankPartial], options: AnalysisOptions, device: str
) -> Finding | None:
    if len(rep.ranks) < 2 or not rep.skew_by_rank:
        return None
    top = rep.skew_by_rank[0]
    share = top.times_last / top.collectives if top.collectives else 0.0
    chance = min(options.skew_chance_cap_pct / 100, 2.0 / len(rep.ranks))
    need = max(options.skew_min_last_pct / 100, chance)
    if top.collectives < options.skew_min_collectives or share < need:
        return None
    steps = [s for s in rep.skew_by_step if s.step >= 0] or list(rep.skew_by_step)
    n_steps = max(len(steps), 1)
    step_ns = _mean_step_ns(parts)
    others = max(len(rep.ranks) - 1, 1)
    wait_per_step = top.wait_caused_ns / n_steps
    wait_pct = 100.0 * wait_per_step / (step_ns * others) if step_ns else 0.0
    if step_ns and wait_pct < options.skew_min_wait_pct:
        return None
    worst = max(
        (c for c in rep.collective_skew if c.last_rank == top.rank),
        key=lambda c: c.skew_ns,
        default=None,
    )
    host_hint = (
        "graph recompilations or CPU fallbacks on that rank (see its dynamicity report), "
        if device == "hpu"
        else ""
    )
    return Finding(
        severity="critical" if wait_pct >= options.skew_critical_wait_pct else "warning",
        report=REPORT,
        title=(
            f"collective skew: rank {top.rank} arrives last at {100 * share:.0f}% of collectives "
            f"({top.times_last} of {top.collectives}); the other ranks wait "
            f"{wait_per_step / 1e6:.2f} ms per step for it"
        ),
        metric="last_arrival_pct",
        value=round(100 * share, 2),
        threshold=round(100 * need, 2),
        evidence={
            "rank": top.rank,
            "times_last": top.times_last,
            "collectives": top.collectives,
            "wait_caused_ns": top.wait_caused_ns,
            "wait_per_step_ns": round(wait_per_step),
            "wait_pct_of_others_step_time": round(wait_pct, 2),
            "steps_last": [s.step for s in steps if s.last_rank == top.rank],
            "worst_collective": None if worst is None else worst.__dict__,
        },
        advice=(
            f"Look at what rank {top.rank} does before its collectives: uneven input (batch or "
            f"sequence length), data loading or preprocessing on its host, {host_hint}"
            "a slower or throttled device. Compare its compute per step in the load-imbalance "
            "table; rebalance the data or fix its host before tuning communication."
        ),
        threshold_option="skew_min_last_pct",
    )


def _imbalance_finding(rep: DistributedReport, options: AnalysisOptions) -> Finding | None:
    rows = [r for r in rep.load_imbalance if r.per_step_ns > 0]
    if len(rows) < 2:
        return None
    top = max(rows, key=lambda r: r.vs_mean_pct)
    if top.vs_mean_pct < options.imbalance_warn_pct:
        return None
    low = min(rows, key=lambda r: r.per_step_ns)
    return Finding(
        severity="warning",
        report=REPORT,
        title=(
            f"load imbalance: rank {top.rank} computes {top.vs_mean_pct:.0f}% more per step "
            f"than the mean of {len(rows)} ranks (rank {low.rank} the least)"
        ),
        metric="compute_above_mean_pct",
        value=top.vs_mean_pct,
        threshold=options.imbalance_warn_pct,
        threshold_option="imbalance_warn_pct",
        evidence={
            "per_step_ns": {str(r.rank): r.per_step_ns for r in rows},
            "source": top.source,
        },
        advice=(
            "Every rank waits for the busiest one at each collective: give ranks equal work "
            "(shard sizes, sequence-length bucketing, balanced pipeline stages or experts)."
        ),
    )


def _exposed_transfer_findings(
    rep: DistributedReport, parts: Sequence[RankPartial], options: AnalysisOptions
) -> list[Finding]:
    """Exposed transfer: communication busy time not hidden by compute, less the time the
    rank's collectives spent waiting for later ranks (the late rank's doing, not the
    transfer's), as a share of the device span. Not the step split's `exposed_comm_ns`
    (`step_split`), which keeps that waiting and counts over steps."""
    out = []
    spans = {p.rank: p.device_span_ns for p in parts}
    device_colls = {
        p.rank for p in parts if len(p.collectives) and p.collectives["source"].iloc[0] == "device"
    }
    waited = {r.rank: r.waited_ns for r in rep.skew_by_rank if r.rank in device_colls}
    for row in rep.comm_comp_overlap:
        span = spans.get(row.rank, 0)
        if row.overlap_pct is None or not span:
            continue
        wait = min(waited.get(row.rank, 0), row.comm_ns - row.overlap_ns)
        exposed = row.comm_ns - row.overlap_ns - wait
        share = 100.0 * exposed / span
        if share < options.exposed_transfer_warn_pct:
            continue
        out.append(
            Finding(
                severity="warning",
                report=REPORT,
                title=(
                    f"exposed transfer: {share:.0f}% of rank {row.rank}'s device time is "
                    f"transfer not overlapped by compute ({row.overlap_pct:.0f}% of its "
                    "communication overlapped)"
                ),
                metric="exposed_transfer_pct",
                value=round(share, 2),
                threshold=options.exposed_transfer_warn_pct,
                threshold_option="exposed_transfer_warn_pct",
                evidence={
                    "comm_ns": row.comm_ns,
                    "overlap_ns": row.overlap_ns,
                    "waiting_for_other_ranks_ns": wait,
                    "device_span_ns": span,
                },
                advice=(
                    "Overlap gradient communication with the backward pass: DDP bucketing "
                    "(bucket_cap_mb), FSDP prefetch, or issue collectives asynchronously "
                    "and wait on them late."
                ),
            )
        )
    return out


def distributed_findings(
    rep: DistributedReport,
    parts: Sequence[RankPartial],
    options: AnalysisOptions | None = None,
    device: str = "",
) -> list[Finding]:
    """Collective skew, load imbalance and exposed transfer (only where the evidence holds)."""
    options = options or AnalysisOptions()
    skew = _skew_finding(rep, parts, options, device)
    found = [f for f in (skew, _imbalance_finding(rep, options)) if f]
    found += _exposed_transfer_findings(rep, parts, options)
    return sort_findings(found)


def events_device(ev: pd.DataFrame) -> str:
    """ "hpu" for Gaudi or emulated events (engine lanes), "gpu" for other device events,
    "" without device events."""
    if not len(ev) or not bool(ev["is_device"].any()):
        return ""
    engines = set(ev.loc[ev["is_device"].to_numpy(dtype=bool), "engine"].astype(str).unique())
    return "hpu" if engines & {"MME", "TPC", "DMA", "NIC"} else "gpu"


def analyze_distributed(trace: Trace, options: AnalysisOptions | None = None) -> DistributedReport:
    """The distributed report of an in-memory trace (each rank as a partial, then merged)."""
    options = options or AnalysisOptions()
    events = trace.events
    rank_col = events["rank"].to_numpy()
    parts: list[RankPartial] = []
    for rank in sorted(int(r) for r in pd.unique(rank_col)):
        sources = trace.sources
        source = sources[len(parts)] if len(sources) > len(parts) else ""
        parts.append(rank_partial(events[rank_col == rank], rank, options, source))
    return merge_partials(parts, options=options)


def partial_of_rank(trace: Trace, options: AnalysisOptions | None = None) -> RankPartial:
    """The partial of a one-rank trace (the registry's `partial` of this report)."""
    ranks = trace.ranks or [0]
    source = trace.sources[0] if trace.sources else ""
    return rank_partial(trace.events, ranks[0], options, source)


def merge_rank_partials(
    parts: Mapping[int, RankPartial], failed: Iterable[FailedRank] = ()
) -> DistributedReport:
    """The registry's `merge` of this report: `merge_partials` of {rank: partial}."""
    return merge_partials(parts.values(), failed)
