"""Diff of two traces: step time, category and per-op deltas, new/vanished ops, regressions.

Per-op counts and total durations follow HTA's `TraceDiff.compare_traces` where the
definitions coincide: every slice of one iteration (default: the first step of each trace, on
its first rank), grouped by name; device events belong to the step of the host event that
launched them (correlation). HTA rounds to microseconds; we keep nanoseconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from hpuprof.analysis._common import pct, step_windows
from hpuprof.analysis.bottleneck import analyze_bottlenecks
from hpuprof.analysis.findings import Finding
from hpuprof.analysis.options import AnalysisOptions
from hpuprof.trace.model import Trace
from hpuprof.trace.schema import NO_ID


@dataclass(frozen=True)
class OpDelta:
    """One op name in both traces (times in ns)."""

    name: str
    a_count: int
    a_total_ns: int
    b_count: int
    b_total_ns: int
    diff_count: int
    diff_ns: int
    change: str  # '+', '-', '=' on counts (HTA's counts_change_categories)
    status: str  # new, vanished, changed, same


@dataclass(frozen=True)
class MetricDelta:
    """A scalar metric in both traces."""

    metric: str
    a: float
    b: float
    diff: float
    pct: float
    label: str = ""
    unit: str = ""


@dataclass(frozen=True)
class DiffReport:
    """Result of `diff_traces`."""

    a_source: tuple[str, ...]
    b_source: tuple[str, ...]
    a_step: int | None
    b_step: int | None
    metrics: tuple[MetricDelta, ...]
    ops: tuple[OpDelta, ...]
    new_ops: tuple[str, ...]
    vanished_ops: tuple[str, ...]
    regressions: tuple[Finding, ...]
    findings: tuple[Finding, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        from hpuprof.analysis.report import as_plain

        d = as_plain(self)
        d["schema"] = "hpuprof.diff/1"
        d["findings"] = [f.to_dict() for f in self.findings]
        d["regressions"] = [f.to_dict() for f in self.regressions]
        return dict(d)


def events_with_steps(ev: pd.DataFrame) -> pd.Series:
    """Step of each event like HTA's `add_iteration`: host events by their ProfilerStep window;
    device events by the step of the host event that launched them (correlation), and NO_ID
    when that launch is not in the trace (the loader would place them by start time)."""
    step = ev["step"].to_numpy(dtype=np.int64).copy()
    dev = ev["is_device"].to_numpy(dtype=bool)
    corr = ev["correlation"].to_numpy()
    rank = ev["rank"].to_numpy()
    step[dev] = NO_ID
    need = dev & (corr != NO_ID)
    if need.any():
        host = ~dev & (corr != NO_ID)
        lookup = pd.Series(step[host], index=pd.MultiIndex.from_arrays([rank[host], corr[host]]))
        lookup = lookup[~lookup.index.duplicated()]
        got = lookup.reindex(pd.MultiIndex.from_arrays([rank[need], corr[need]]))
        step[need] = got.fillna(NO_ID).to_numpy(dtype=np.int64)
    return pd.Series(step, index=ev.index)


def op_summary(trace: Trace, step: int | None = None, rank: int | None = None) -> pd.DataFrame:
    """Counts and total duration (ns) per name over slices of one step (or all), one rank."""
    ev = trace.events
    if rank is None and len(ev):
        rank = int(ev["rank"].min())
    ev = ev[(ev["rank"].to_numpy() == rank) & (ev["ph"] == "X").to_numpy()]
    ev = ev[(ev["kind"] != "span").to_numpy()]
    if step is not None:
        ev = ev[events_with_steps(ev).to_numpy() == step]
    g = pd.DataFrame({"name": ev["name"].astype(str).to_numpy(), "dur": ev["dur_ns"].to_numpy()})
    return g.groupby("name").agg(counts=("dur", "size"), total_ns=("dur", "sum"))


def first_step(trace: Trace) -> int | None:
    """The first step number of the first rank, or None when the trace has no steps."""
    w = step_windows(trace.events)
    if w.empty:
        return None
    w = w[w["rank"] == w["rank"].min()]
    return int(w.sort_values("start_ns")["step"].iloc[0])


def _metric(name: str, a: float, b: float) -> MetricDelta:
    from hpuprof.analysis.registry import column_label, column_unit

    return MetricDelta(name, a, b, b - a, pct(b - a, a), column_label(name), column_unit(name))


def diff_traces(
    a: Trace,
    b: Trace,
    options: AnalysisOptions | None = None,
    a_step: int | None = -1,
    b_step: int | None = -1,
) -> DiffReport:
    """Compare trace `b` (test) against `a` (control).

    Args:
        a_step, b_step: the step compared per op; -1 (default) = each trace's first step, like
            HTA; None = the whole trace.
    """
    options = options or AnalysisOptions()
    sa = first_step(a) if a_step == -1 else a_step
    sb = first_step(b) if b_step == -1 else b_step
    oa = op_summary(a, sa)
    ob = op_summary(b, sb)
    both = oa.add_suffix("_a").join(ob.add_suffix("_b"), how="outer").fillna(0)
    ops: list[OpDelta] = []
    for name, r in both.iterrows():
        ac, bc = int(r["counts_a"]), int(r["counts_b"])
        at, bt = int(r["total_ns_a"]), int(r["total_ns_b"])
        status = (
            "new"
            if ac == 0
            else "vanished"
            if bc == 0
            else "same"
            if (ac, at) == (bc, bt)
            else "changed"
        )
        change = "+" if bc > ac else "-" if bc < ac else "="
        ops.append(OpDelta(str(name), ac, at, bc, bt, bc - ac, bt - at, change, status))
    ops.sort(key=lambda o: -abs(o.diff_ns))
    ba = analyze_bottlenecks(a, options)
    bb = analyze_bottlenecks(b, options)
    metrics: list[MetricDelta] = []

    def mean_step(rep: Any) -> float:
        return float(np.mean([s.duration_ns for s in rep.steps])) if rep.steps else 0.0

    metrics.append(_metric("mean_step_ns", mean_step(ba), mean_step(bb)))
    if ba.temporal and bb.temporal:
        ta, tb = ba.temporal[0], bb.temporal[0]
        for f in (
            "span_ns",
            "idle_ns",
            "compute_ns",
            "non_compute_ns",
            "comm_ns",
            "memory_ns",
            "idle_pct",
            "compute_pct",
            "non_compute_pct",
        ):
            metrics.append(_metric(f, float(getattr(ta, f)), float(getattr(tb, f))))
    regressions: list[Finding] = []
    for m in metrics:
        if (
            m.metric in ("mean_step_ns", "idle_ns")
            and m.pct > options.regression_pct
            and (m.diff > options.regression_min_ns)
        ):
            regressions.append(
                Finding(
                    "warning",
                    "diff",
                    f"{m.metric} regressed {m.pct:+.1f}% ({m.a:,.0f} -> {m.b:,.0f})",
                    m.metric,
                    m.pct,
                    options.regression_pct,
                    {"a": m.a, "b": m.b},
                    "inspect the per-op deltas below for the ops that grew",
                )
            )
    for o in ops:
        if o.diff_ns > options.regression_min_ns and (
            o.a_total_ns == 0 or 100.0 * o.diff_ns / o.a_total_ns > options.regression_pct
        ):
            regressions.append(
                Finding(
                    "warning" if o.status != "new" else "info",
                    "diff",
                    f"{o.name}: {o.a_total_ns / 1e3:,.1f} us -> {o.b_total_ns / 1e3:,.1f} us "
                    f"({o.a_count} -> {o.b_count} calls){' [new]' if o.status == 'new' else ''}",
                    "op_time_ns",
                    float(o.diff_ns),
                    float(options.regression_min_ns),
                    {"name": o.name, "a_count": o.a_count, "b_count": o.b_count},
                    "",
                )
            )
        if len(regressions) >= options.top_n * 2:
            break
    rep = DiffReport(
        a_source=tuple(a.sources),
        b_source=tuple(b.sources),
        a_step=sa,
        b_step=sb,
        metrics=tuple(metrics),
        ops=tuple(ops),
        new_ops=tuple(o.name for o in ops if o.status == "new"),
        vanished_ops=tuple(o.name for o in ops if o.status == "vanished"),
        regressions=tuple(regressions),
        notes=("per-op rows cover one step per trace (HTA's default: the first)",)
        if sa is not None or sb is not None
        else (),
    )
    return replace(rep, findings=tuple(regressions[:10]))
