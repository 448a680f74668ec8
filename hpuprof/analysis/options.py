"""Options shared by every analysis: thresholds and sizes, all with documented defaults."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AnalysisOptions:
    """Knobs of the analyses.

    Args:
        top_n: rows kept in top-op tables.
        host_bound_idle_pct: device idle share of a step above which a step is host-bound.
        launch_gap_ns: a device gap at least this long whose next op was launched late is a
            host-bound launch gap (HTA's `consecutive_kernel_delay` is 30 us; we use the same).
        bucket_k: max compilations (buckets) for the bucketing recommender.
        recompile_warn: recompilations per graph above which a finding is raised.
        regression_pct: diff: relative change above which a metric is a regression.
        regression_min_ns: diff: absolute change below which nothing is flagged.
        drop_last_step: drop the last ProfilerStep like HTA's default (off by default).
        straggler_pct: ranks: a rank whose median step is this much slower than the median
            rank's (and beyond its own step-to-step noise) is a straggler.
    """

    top_n: int = 15
    host_bound_idle_pct: float = 30.0
    launch_gap_ns: int = 30_000
    bucket_k: int = 4
    recompile_warn: int = 2
    regression_pct: float = 5.0
    regression_min_ns: int = 10_000
    drop_last_step: bool = False
    straggler_pct: float = 10.0
