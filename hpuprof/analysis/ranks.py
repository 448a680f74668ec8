"""Ranks report: step time per rank and step, the step split per rank, and stragglers.

Steps are counted per rank (a two-rank run of 4 steps has 4 steps on each rank, never 8). A
rank's split is the step split (`hpuprof.analysis.step_split`: compute, exposed communication,
exposed memory, idle, exclusive, in that precedence) over its steps, or over its device span
when it has none; `overlapped_comm_ns` is the communication hidden under compute.

A straggler is a slow rank: one whose median step time exceeds the median rank's by more than
`options.straggler_pct` and by more than the run-to-run spread of that rank's own steps
(`noise_ns`: the median absolute deviation of its step times), so ordinary jitter is no
finding. (Arrival order at collectives is the distributed report's collective skew.)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from hpuprof.analysis._common import (
    device_events,
    kernel_types,
    pct,
    step_windows,
    without_args,
)
from hpuprof.analysis.cut_steps import CutStep, complete_steps
from hpuprof.analysis.findings import Finding
from hpuprof.analysis.options import AnalysisOptions
from hpuprof.analysis.step_split import OVERLAPPED_COMM, SPLIT_PARTS, device_sets, split_windows
from hpuprof.trace.model import Trace


@dataclass(frozen=True)
class RankStep:
    """One step on one rank (ns) and its step split (`step_split`)."""

    rank: int
    step: int
    duration_ns: int
    compute_ns: int
    exposed_comm_ns: int
    exposed_memory_ns: int
    idle_ns: int
    vs_median_pct: float


@dataclass(frozen=True)
class RankSummary:
    """One rank: its steps and where its time went (ns)."""

    rank: int
    steps: int
    mean_step_ns: float
    median_step_ns: float
    min_step_ns: int
    max_step_ns: int
    noise_ns: float
    covered_ns: int
    compute_ns: int
    exposed_comm_ns: int
    exposed_memory_ns: int
    idle_ns: int
    overlapped_comm_ns: int
    compute_pct: float
    exposed_comm_pct: float
    exposed_memory_pct: float
    idle_pct: float
    vs_median_pct: float
    straggler: bool


@dataclass(frozen=True)
class RanksReport:
    """Result of `analyze_ranks`.

    Args:
        ranks: one row per rank.
        steps: rank x step grid (one row per step of each rank).
        steps_per_rank: the number of steps when every rank has the same, else None.
        mean_step_ns: mean over ranks of each rank's mean step time (each rank counts once).
        stragglers: ranks flagged as stragglers.
        cut_steps: steps the trace cut off (`cut_steps`), left out of everything above.
    """

    ranks: tuple[RankSummary, ...]
    steps: tuple[RankStep, ...]
    steps_per_rank: int | None
    mean_step_ns: float | None
    stragglers: tuple[int, ...]
    findings: tuple[Finding, ...] = ()
    cut_steps: tuple[CutStep, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)


def _mad(values: np.ndarray) -> float:
    return float(np.median(np.abs(values - np.median(values)))) if len(values) else 0.0


@dataclass(frozen=True)
class RankPartial:
    """One rank's steps and device split, before any comparison with the other ranks: what a
    worker sends back (`hpuprof analyze --workers`), small and picklable.

    Args:
        rank: the rank.
        steps: step numbers (empty when the rank has no steps: then one window, its device
            span).
        lo_ns / hi_ns: each window's start and end.
        split_ns: the step split inside each window (`step_split.split_windows`).
        options: the analysis options (the merge's straggler thresholds).
        cut: the rank's step the trace cut off, left out of `steps` (`cut_steps`).
    """

    rank: int
    steps: tuple[int, ...]
    lo_ns: tuple[int, ...]
    hi_ns: tuple[int, ...]
    split_ns: dict[str, tuple[int, ...]]
    options: AnalysisOptions
    cut: tuple[CutStep, ...] = ()


def _rank_partial(
    rank: int,
    rdev: pd.DataFrame,
    rtype: np.ndarray,
    w: pd.DataFrame,
    options: AnalysisOptions,
    cut: tuple[CutStep, ...] = (),
) -> RankPartial | None:
    sets = device_sets(rdev, rtype)
    if len(w):
        lo = w["start_ns"].to_numpy(dtype=np.int64)
        hi = w["end_ns"].to_numpy(dtype=np.int64)
        steps = w["step"].to_numpy(dtype=np.int64)
    elif sets.busy[0].size:
        lo = sets.busy[0][:1]
        hi = sets.busy[1][-1:]
        steps = np.zeros(0, dtype=np.int64)
    else:
        return None
    split = split_windows(sets, lo, hi)
    return RankPartial(
        rank,
        tuple(steps.tolist()),
        tuple(lo.tolist()),
        tuple(hi.tolist()),
        {k: tuple(np.asarray(v, dtype=np.int64).tolist()) for k, v in split.items()},
        options,
        cut,
    )


def _partials(trace: Trace, options: AnalysisOptions) -> dict[int, RankPartial | None]:
    ev = without_args(trace.events)
    dev = device_events(ev)
    ktype = kernel_types(dev).to_numpy()
    windows, cut = complete_steps(ev, step_windows(ev), options.cut_step_ops_pct)
    ranks = sorted(int(r) for r in pd.unique(ev["rank"])) if len(ev) else []
    out: dict[int, RankPartial | None] = {}
    for rank in ranks:
        mine = dev["rank"].to_numpy() == rank
        out[rank] = _rank_partial(
            rank,
            dev[mine],
            ktype[mine],
            windows[windows["rank"] == rank],
            options,
            tuple(c for c in cut if c.rank == rank),
        )
    return out


def partial_of_rank(trace: Trace, options: AnalysisOptions | None = None) -> RankPartial | None:
    """The partial of a one-rank trace (the registry's `partial`); None without device work."""
    parts = _partials(trace, options or AnalysisOptions())
    return next(iter(parts.values()), None)


def analyze_ranks(trace: Trace, options: AnalysisOptions | None = None) -> RanksReport:
    """Per-rank step times (rank x step), the step split per rank, stragglers."""
    options = options or AnalysisOptions()
    return merge_ranks(_partials(trace, options), options=options)


def merge_ranks(
    parts: Mapping[int, RankPartial | None],
    failed: Iterable[Any] = (),
    options: AnalysisOptions | None = None,
) -> RanksReport:
    """The report from each rank's partial (the registry's `merge`): each rank against the
    median rank. `options` default to those the partials were made with."""
    kept = [p for _, p in sorted(parts.items()) if p is not None]
    options = options or (kept[0].options if kept else AnalysisOptions())
    cut = tuple(c for p in kept for c in p.cut)
    notes: list[str] = [c.note for c in cut]
    durations = {
        p.rank: np.asarray(p.hi_ns, dtype=np.int64) - np.asarray(p.lo_ns, dtype=np.int64)
        for p in kept
    }
    medians = {p.rank: float(np.median(durations[p.rank])) for p in kept if p.steps}
    median_rank = float(np.median(list(medians.values()))) if medians else 0.0
    step_rows: list[RankStep] = []
    summaries: list[RankSummary] = []
    for part in kept:
        rank, s = part.rank, {k: np.asarray(v, dtype=np.int64) for k, v in part.split_ns.items()}
        dur = durations[rank]
        for i, step in enumerate(part.steps):
            step_rows.append(
                RankStep(
                    rank,
                    int(step),
                    int(dur[i]),
                    int(s["compute"][i]),
                    int(s["exposed_comm"][i]),
                    int(s["exposed_memory"][i]),
                    int(s["idle"][i]),
                    pct(float(dur[i]) - median_rank, median_rank),
                )
            )
        covered = int(dur.sum())
        totals = {k: int(s[k].sum()) for k in (*SPLIT_PARTS, OVERLAPPED_COMM)}
        has_steps = len(part.steps) > 0
        med = medians.get(rank, 0.0)
        noise = _mad(dur.astype(np.float64)) if has_steps else 0.0
        slower = pct(med - median_rank, median_rank) if has_steps else 0.0
        straggler = (
            len(medians) > 1
            and slower > options.straggler_pct
            and (med - median_rank) > max(noise, options.regression_min_ns)
        )
        summaries.append(
            RankSummary(
                rank=rank,
                steps=len(part.steps),
                mean_step_ns=round(float(dur.mean()), 1) if has_steps else 0.0,
                median_step_ns=med,
                min_step_ns=int(dur.min()) if has_steps else 0,
                max_step_ns=int(dur.max()) if has_steps else 0,
                noise_ns=round(noise, 1),
                covered_ns=covered,
                compute_ns=totals["compute"],
                exposed_comm_ns=totals["exposed_comm"],
                exposed_memory_ns=totals["exposed_memory"],
                idle_ns=totals["idle"],
                overlapped_comm_ns=totals[OVERLAPPED_COMM],
                compute_pct=pct(totals["compute"], covered),
                exposed_comm_pct=pct(totals["exposed_comm"], covered),
                exposed_memory_pct=pct(totals["exposed_memory"], covered),
                idle_pct=pct(totals["idle"], covered),
                vs_median_pct=slower,
                straggler=bool(straggler),
            )
        )
        if not has_steps:
            notes.append(f"rank {rank} has no steps: its split covers its device span")
    counts = {s.steps for s in summaries if s.steps}
    means = [s.mean_step_ns for s in summaries if s.steps]
    rep = RanksReport(
        ranks=tuple(summaries),
        steps=tuple(step_rows),
        steps_per_rank=counts.pop() if len(counts) == 1 else None,
        mean_step_ns=round(float(np.mean(means)), 1) if means else None,
        stragglers=tuple(s.rank for s in summaries if s.straggler),
        notes=tuple(notes),
        cut_steps=cut,
    )
    return replace(rep, findings=tuple(_findings(rep, options)))


def _findings(rep: RanksReport, options: AnalysisOptions) -> list[Finding]:
    out = []
    median = float(np.median([s.median_step_ns for s in rep.ranks if s.steps] or [0.0]))
    for s in rep.ranks:
        if not s.straggler:
            continue
        out.append(
            Finding(
                "warning",
                "ranks",
                f"rank {s.rank} is a straggler: median step {s.median_step_ns / 1e6:.2f} ms, "
                f"{s.vs_median_pct:+.0f}% vs the median rank ({median / 1e6:.2f} ms)",
                "rank_step_vs_median_pct",
                s.vs_median_pct,
                options.straggler_pct,
                {
                    "rank": s.rank,
                    "median_step_ns": s.median_step_ns,
                    "median_rank_step_ns": median,
                    "noise_ns": s.noise_ns,
                    "idle_pct": s.idle_pct,
                    "exposed_comm_pct": s.exposed_comm_pct,
                },
                "the other ranks wait for this one at every collective: compare its input "
                "batches (uneven sizes), data loading and host load with the other ranks",
                "straggler_pct",
            )
        )
    return out
