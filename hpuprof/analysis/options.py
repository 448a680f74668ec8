"""Options shared by every analysis: sizes, and every threshold a finding is raised at.

A finding names the option its threshold comes from (`Finding.threshold_option`), so a reader
can see which knob decided it and change it. Units are in the names: `_ns` nanoseconds, `_pct`
percent (0-100); other thresholds are counts or ratios, as their docs say.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AnalysisOptions:
    """Knobs of the analyses.

    Args:
        top_n: rows kept in top-op tables (and findings listed per op).
        drop_last_step: drop the last ProfilerStep like HTA's default (off by default).
        bucket_k: max compilations (buckets) for the bucketing recommender.
        host_bound_idle_pct: bottleneck: device idle share of a rank's steps (their median, in
            %) at or above which the rank is host-bound.
        host_bound_critical_pct: bottleneck: that idle share (%) at or above which the
            host-bound finding is critical rather than a warning.
        host_bound_min_steps: bottleneck: steps a rank needs before it is judged host-bound (a
            count): a median over fewer steps, or a trace without steps, is no evidence.
        host_bound_min_events: bottleneck: host ops plus device ops a rank needs before it is
            judged host-bound (a count): a test trace of a few hundred events is no evidence.
        launch_gap_ns: bottleneck and distributed: a device gap at least this long whose next
            op was launched late is a host-bound launch gap; a shorter one is a kernel wait
            (HTA's `consecutive_kernel_delay` is 30 us; we use the same).
        idle_cause_warn_pct: bottleneck: share of a rank's device idle time (%) at or above
            which a sync wait or data loading is a finding.
        tpc_bound_ratio: bottleneck: TPC busy time over MME busy time above which a rank is
            TPC-bound (a ratio).
        launch_runtime_outlier_ns: bottleneck and distributed launch stats: a host launch call
            longer than this is a runtime outlier (HTA's `runtime_cutoff`, 50 us).
        launch_delay_outlier_ns: bottleneck and distributed launch stats: a launch-to-device
            delay longer than this is a delay outlier (HTA's `launch_delay_cutoff`, 100 us).
        recompile_warn: dynamicity: recompilations of one graph (or module, or the whole
            trace) at or above which a finding is raised (a count).
        recompile_critical: dynamicity: recompilations at or above which that finding is
            critical (a count).
        fallback_critical: fallback: CPU fallbacks of one op at or above which its finding is
            critical; fewer are a warning (a count).
        bf16_coverage_warn_pct: precision: matmul/conv FLOPs in bf16/fp16/fp8 (%) below which
            a finding is raised.
        host_summary_warn_pct: perf_tool: a habana_perf_tool Host Summary share (Graph Build,
            DataLoader, Input, Compile: % of the profiled window) at or above which it is a
            finding (perf_tool's MME lower-precision finding uses `bf16_coverage_warn_pct`).
        straggler_pct: ranks: a rank whose median step is this much slower (%) than the median
            rank's (and beyond its own step-to-step noise) is a straggler.
        skew_min_collectives: distributed: matched collectives a rank needs before its
            arrivals are judged (a count).
        skew_min_last_pct: distributed: share of the matched collectives (%) a rank must
            arrive last at to be named; twice chance (200 / ranks %, at most
            `skew_chance_cap_pct`) when that is higher.
        skew_chance_cap_pct: distributed: the cap of that twice-chance share (%): two ranks
            ask 75%, not 100%.
        skew_min_wait_pct: distributed: the waiting a late rank causes, as % of the other
            ranks' step time, below which it is no finding.
        skew_critical_wait_pct: distributed: that waiting (%) at or above which the finding is
            critical.
        imbalance_warn_pct: distributed: compute per step of the busiest rank this much (%)
            above the ranks' mean is a load imbalance.
        exposed_transfer_warn_pct: distributed: communication not hidden by compute (waiting for
            later ranks excluded), as % of a rank's device span, at or above which a finding
            is raised.
        regression_pct: compare: relative change (%) above which a metric is a regression.
        regression_min_ns: compare (and ranks' straggler test): absolute change below which
            nothing is flagged.
        noise_sigmas: compare: a change is beyond the steps' noise when larger than this many
            times its noise (A's step-to-step spread, `hpuprof.analysis.diff`).
        cut_step_ops_pct: ranks and compare: a rank's last step holding fewer host ops than
            this share (%) of the median of its other steps was cut off by the end of the
            trace, and is left out of the step means (`hpuprof.analysis.cut_steps`).
    """

    top_n: int = 15
    drop_last_step: bool = False
    bucket_k: int = 4
    host_bound_idle_pct: float = 30.0
    host_bound_critical_pct: float = 50.0
    host_bound_min_steps: int = 3
    host_bound_min_events: int = 500
    launch_gap_ns: int = 30_000
    idle_cause_warn_pct: float = 20.0
    tpc_bound_ratio: float = 2.0
    launch_runtime_outlier_ns: int = 50_000
    launch_delay_outlier_ns: int = 100_000
    recompile_warn: int = 2
    recompile_critical: int = 5
    fallback_critical: int = 10
    bf16_coverage_warn_pct: float = 90.0
    host_summary_warn_pct: float = 20.0
    straggler_pct: float = 10.0
    skew_min_collectives: int = 3
    skew_min_last_pct: float = 30.0
    skew_chance_cap_pct: float = 75.0
    skew_min_wait_pct: float = 1.0
    skew_critical_wait_pct: float = 10.0
    imbalance_warn_pct: float = 10.0
    exposed_transfer_warn_pct: float = 10.0
    regression_pct: float = 5.0
    regression_min_ns: int = 10_000
    noise_sigmas: float = 3.0
    cut_step_ops_pct: float = 50.0
