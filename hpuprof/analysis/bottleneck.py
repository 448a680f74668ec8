"""Bottleneck report: where device time goes, why the device is idle, what the host does.

Definitions (comparable with HTA 0.5.0 `get_temporal_breakdown`, hta.md §1):
- device events: device activity rows (kernels, memcpy, memset, other device ops), device
  annotations excluded;
- per rank, `span` = first device start .. last device end; intervals merged across streams;
- `idle` = span - merged busy; `compute` = merged COMPUTATION intervals;
  `non_compute` = span - idle - compute (communication, memory and OTHER);
- kernel type: Gaudi engine where known (MME/TPC compute, DMA memory, NIC comm), then the event
  kind (memcpy/memset memory, collective comm), then HTA's name regexes.
Differences from HTA's defaults, by design: we keep the last ProfilerStep (HTA drops it unless
`include_last_profiler_step=True`; `options.drop_last_step` mimics it) and keep nanoseconds (HTA
rounds to microseconds); HTA sees no device events on HPU traces at all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from hpuprof.analysis import intervals as iv
from hpuprof.analysis._common import (
    arg_values,
    cat_test,
    device_events,
    device_time_source,
    ends,
    host_ops,
    host_time_source,
    host_work,
    is_fallback,
    isin,
    kernel_types,
    pct,
    records,
    step_windows,
    strs,
    without_args,
)
from hpuprof.analysis.advice import advise, host_bound_advice
from hpuprof.analysis.cut_steps import complete_steps
from hpuprof.analysis.device import TraceDevice, trace_device
from hpuprof.analysis.findings import Finding
from hpuprof.analysis.options import AnalysisOptions
from hpuprof.analysis.run_practice import RunPractice, run_practice
from hpuprof.analysis.step_split import DeviceSets, device_sets, engine_sets, split_windows
from hpuprof.analysis.step_split import merged as _merged
from hpuprof.trace.model import Trace
from hpuprof.trace.schema import NO_ID

DATA_LOADING_RE = r"enumerate\(DataLoader\)|DataLoader|dataloader|_next_data|__next__"


@dataclass(frozen=True)
class TemporalRow:
    """HTA's temporal breakdown for one rank (times in ns)."""

    rank: int
    span_ns: int
    idle_ns: int
    compute_ns: int
    non_compute_ns: int
    comm_ns: int
    memory_ns: int
    idle_pct: float
    compute_pct: float
    non_compute_pct: float


@dataclass(frozen=True)
class KernelTypeRow:
    """Exclusive device time of a kernel-type class (overlaps as their own classes)."""

    kernel_type: str
    time_ns: int
    pct: float


@dataclass(frozen=True)
class EngineRow:
    """Busy time of one device engine class on one rank (merged across its lanes)."""

    rank: int
    engine: str
    busy_ns: int
    ops: int
    pct_of_span: float


@dataclass(frozen=True)
class HostDeviceRow:
    """habana_perf_tool-style summary for one rank (gaudi.md 6.4), for every device, over the
    rank's whole span (host and device); the `perf_tool` report gives Intel's fields over the
    profiled steps, Gaudi only. Both take the engine sets from `step_split.engine_sets`. The
    MME / TPC / DMA times are a Gaudi's engines: None on a trace of another device."""

    rank: int
    wall_ns: int
    device_busy_ns: int
    host_busy_ns: int
    device_ratio_pct: float
    host_ratio_pct: float
    mme_ns: int | None
    tpc_ns: int | None
    dma_ns: int | None
    mme_tpc_overlap_ns: int | None
    device_idle_ns: int
    overlap_host_device_pct: float


@dataclass(frozen=True)
class StepRow:
    """One step on one rank: wall duration and the step split (`step_split`, ns)."""

    rank: int
    step: int
    duration_ns: int
    compute_ns: int
    exposed_comm_ns: int
    exposed_memory_ns: int
    idle_ns: int
    idle_pct: float
    host_ops: int


@dataclass(frozen=True)
class IdleCauseRow:
    """Device idle time attributed to one cause (exclusive; priority order in the docs)."""

    rank: int
    cause: str
    time_ns: int
    gaps: int
    pct_of_idle: float


@dataclass(frozen=True)
class OpRow:
    """An op name aggregated (ns).

    Host ops count like torch's `key_averages()`: an op directly inside an op of the same
    name is part of that call (not a second call, its time not counted twice in `total_ns`);
    `self_ns` is duration minus direct children. Checked against key_averages in the tests.
    """

    name: str
    count: int
    total_ns: int
    self_ns: int
    mean_ns: float
    max_ns: int
    kernel_type: str = ""
    engine: str = ""


@dataclass(frozen=True)
class LaunchStats:
    """Host launch -> device op statistics (HTA's launch stats, any runtime name)."""

    launches: int
    by_api: dict[str, int]
    cpu_mean_ns: float
    cpu_p95_ns: float
    delay_mean_ns: float
    delay_p95_ns: float
    short_kernels: int
    runtime_outliers: int
    delay_outliers: int


@dataclass(frozen=True)
class BottleneckReport:
    """Result of `analyze_bottlenecks`."""

    temporal: tuple[TemporalRow, ...]
    kernel_types: tuple[KernelTypeRow, ...]
    engines: tuple[EngineRow, ...]
    host_device: tuple[HostDeviceRow, ...]
    steps: tuple[StepRow, ...]
    idle_causes: tuple[IdleCauseRow, ...]
    top_host_ops: tuple[OpRow, ...]
    top_device_ops: tuple[OpRow, ...]
    launch: LaunchStats
    device_time: str
    findings: tuple[Finding, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        from hpuprof.analysis.report import as_plain

        return as_plain(self)


def _drop_last_step(ev: pd.DataFrame) -> pd.DataFrame:
    """HTA's default: drop events at or after the start of the last ProfilerStep (>= 2 steps).

    Device events go by the start of their launching host event (correlation), like HTA.
    """
    win = step_windows(ev)
    if len(win) < 2:
        return ev
    keep = np.ones(len(ev), dtype=bool)
    host = ~ev["is_device"].to_numpy(dtype=bool)
    ts = ev["ts_ns"].to_numpy()
    corr = ev["correlation"].to_numpy()
    for rank, w in win.groupby("rank"):
        last = int(w["start_ns"].max())
        in_rank = (ev["rank"] == rank).to_numpy()
        keep &= ~(in_rank & host & (ts >= last))
        launch = ev[in_rank & host & (corr != NO_ID)]
        late = set(launch.loc[launch["ts_ns"] >= last, "correlation"].tolist())
        if late:
            dev = in_rank & ~host & np.isin(corr, list(late))
            keep &= ~dev
    return ev[keep]


def _launch_pairs(ev: pd.DataFrame, dev: pd.DataFrame) -> pd.DataFrame:
    """Host launch events joined to device events on (rank, correlation)."""
    host = ev[
        (~ev["is_device"].to_numpy(dtype=bool))
        & (ev["correlation"].to_numpy() != NO_ID)
        & isin(ev["kind"], ("runtime", "hpu_runtime"))
    ]
    left = pd.DataFrame(
        {
            "rank": host["rank"].to_numpy(),
            "correlation": host["correlation"].to_numpy(),
            "api": strs(host["name"]),
            "cpu_ts": host["ts_ns"].to_numpy(),
            "cpu_end": ends(host),
        }
    ).drop_duplicates(["rank", "correlation"])
    d = dev[dev["correlation"].to_numpy() != NO_ID]
    right = pd.DataFrame(
        {
            "rank": d["rank"].to_numpy(),
            "correlation": d["correlation"].to_numpy(),
            "gpu_ts": d["ts_ns"].to_numpy(),
            "gpu_dur": d["dur_ns"].to_numpy(),
            "row": d.index.to_numpy(),
        }
    )
    return left.merge(right, on=["rank", "correlation"], how="inner")


def _launch_stats(pairs: pd.DataFrame, options: AnalysisOptions) -> LaunchStats:
    if pairs.empty:
        return LaunchStats(0, {}, 0.0, 0.0, 0.0, 0.0, 0, 0, 0)
    first = pairs.drop_duplicates(["rank", "correlation"])
    cpu = (first["cpu_end"] - first["cpu_ts"]).to_numpy(dtype=np.float64)
    delay = np.maximum(first["gpu_ts"].to_numpy() - first["cpu_end"].to_numpy(), 0).astype(
        np.float64
    )
    by_api = first["api"].value_counts().to_dict()
    return LaunchStats(
        launches=len(first),
        by_api={str(k): int(v) for k, v in by_api.items()},
        cpu_mean_ns=round(float(cpu.mean()), 1),
        cpu_p95_ns=round(float(np.percentile(cpu, 95)), 1),
        delay_mean_ns=round(float(delay.mean()), 1),
        delay_p95_ns=round(float(np.percentile(delay, 95)), 1),
        short_kernels=int((first["gpu_dur"].to_numpy() < cpu).sum()),
        runtime_outliers=int((cpu > options.launch_runtime_outlier_ns).sum()),
        delay_outliers=int((delay > options.launch_delay_outlier_ns).sum()),
    )


def _cause_sets(ev: pd.DataFrame, full: pd.DataFrame, rank: int) -> list[tuple[str, iv.Merged]]:
    """Host intervals that explain device idle, in priority order.

    `ev` has no args column; `full` is the events table the args of sync rows are read from.
    """
    keep = (ev["rank"].to_numpy() == rank) & ~ev["is_device"].to_numpy(dtype=bool)
    hev = ev["hpu_event"]
    out: list[tuple[str, iv.Merged]] = []
    compile_rows = ev[keep & isin(hev, ("compile", "dynamo_compile"))]
    out.append(("graph compilation", _merged(compile_rows)))
    fb = ev[keep & is_fallback(ev)]
    out.append(("CPU fallback", _merged(fb)))
    dl_re = re.compile(DATA_LOADING_RE)
    dl = ev[keep & cat_test(ev["name"], lambda n: dl_re.search(n) is not None)]
    out.append(("data loading", _merged(dl)))
    sync = ev[keep & (isin(ev["kind"], ("sync",)) | isin(hev, ("sync",)))]
    if not sync.empty:
        reasons = [
            str(reason or n)
            for reason, n in zip(
                arg_values(full, "sync_reason", sync.index),
                strs(sync["name"]).tolist(),
                strict=True,
            )
        ]
        sync = sync.assign(_reason=reasons)
        for reason, grp in sync.groupby("_reason"):
            out.append((f"sync wait: {reason}", _merged(grp)))
    return out


def _idle_causes(
    ev: pd.DataFrame,
    full: pd.DataFrame,
    rank: int,
    busy: iv.Merged,
    pairs: pd.DataFrame,
    options: AnalysisOptions,
) -> list[IdleCauseRow]:
    """Device idle time of `rank` (the gaps of `busy`) split by cause, exclusively.

    Host intervals from `_cause_sets` claim idle time first, in priority order; the rest goes
    by its gap: a host-bound launch gap when the op after it was launched after the gap began,
    else a short gap (under `options.launch_gap_ns`) or other.
    """
    gap_s, gap_e = iv.gaps(busy)
    keep = gap_e > gap_s
    gaps_set: iv.Merged = (gap_s[keep], gap_e[keep])
    total_idle = iv.total(gaps_set)
    if total_idle == 0:
        return []
    rows: list[IdleCauseRow] = []
    remaining = gaps_set
    for cause, cset in _cause_sets(ev, full, rank):
        if cset[0].size == 0:
            continue
        hit = iv.intersect(remaining, cset)
        t = iv.total(hit)
        if t > 0:
            rows.append(IdleCauseRow(rank, cause, t, int(hit[0].size), pct(t, total_idle)))
            remaining = iv.subtract(remaining, hit)
    # what is left: classify each piece by the gap it belongs to
    rs, re_ = remaining
    if rs.size:
        gi = np.searchsorted(gaps_set[0], rs, side="right") - 1
        gap_len = gaps_set[1][gi] - gaps_set[0][gi]
        # the device op right after each gap, and when its launch started on the host
        rp = pairs[pairs["rank"] == rank]
        late = np.zeros(rs.size, dtype=bool)
        if not rp.empty:
            first_after = rp.groupby("gpu_ts")["cpu_ts"].min()
            nxt = first_after.reindex(gaps_set[1][gi]).to_numpy()
            late = np.nan_to_num(nxt.astype(np.float64), nan=-1.0) >= gaps_set[0][gi]
        piece = re_ - rs
        classes = np.where(
            late,
            "host-bound launch gap",
            np.where(gap_len < options.launch_gap_ns, "short gap (kernel wait)", "other"),
        )
        for cause in ("host-bound launch gap", "short gap (kernel wait)", "other"):
            sel = classes == cause
            if sel.any():
                t = int(piece[sel].sum())
                rows.append(IdleCauseRow(rank, cause, t, int(sel.sum()), pct(t, total_idle)))
    return rows


def _kernel_type_rows(per_rank_sets: list[DeviceSets]) -> list[KernelTypeRow]:
    names = ["COMPUTATION", "COMMUNICATION", "MEMORY"]
    totals: dict[str, int] = {}
    for sets in per_rank_sets:
        res = iv.sweep_classes([sets.compute, sets.comm, sets.memory])
        for mask, t in res.items():
            label = " overlapping ".join(n for i, n in enumerate(names) if mask & (1 << i))
            totals[label] = totals.get(label, 0) + t
    whole = sum(totals.values())
    return [
        KernelTypeRow(k, v, pct(v, whole)) for k, v in sorted(totals.items(), key=lambda kv: -kv[1])
    ]


def _top_ops(
    ev: pd.DataFrame, dev: pd.DataFrame, ktype: pd.Series, top_n: int
) -> tuple[list[OpRow], list[OpRow]]:
    from hpuprof.analysis.ops import host_op_table, host_op_times, kernel_stats

    times = host_op_times(ev)
    host_rows: list[OpRow] = []
    if len(times.rows):
        g = host_op_table(times).sort_values(["slf", "total"], ascending=False).head(top_n)
        host_rows = [
            OpRow(
                str(times.names[int(r["code"])]),
                int(r["calls"]),
                int(r["total"]),
                int(r["slf"]),
                round(float(r["total"]) / float(r["calls"]), 1),
                int(r["mx"]),
            )
            for r in records(g, "code")
        ]
    dev_rows = [
        OpRow(k.name, k.count, k.total_ns, k.total_ns, k.mean_ns, k.max_ns, k.kernel_type, k.engine)
        for k in kernel_stats(ev, dev, ktype)[:top_n]
    ]
    return host_rows, dev_rows


def _temporal_row(rank: int, sets: DeviceSets) -> TemporalRow:
    """HTA's temporal breakdown of one rank's device span (`sets.busy` not empty)."""
    busy = sets.busy
    span = int(busy[1][-1] - busy[0][0])
    idle = span - iv.total(busy)
    compute = iv.total(sets.compute)
    return TemporalRow(
        rank=rank,
        span_ns=span,
        idle_ns=idle,
        compute_ns=compute,
        non_compute_ns=span - idle - compute,
        comm_ns=iv.total(sets.comm),
        memory_ns=iv.total(sets.memory),
        idle_pct=pct(idle, span),
        compute_pct=pct(compute, span),
        non_compute_pct=pct(span - idle - compute, span),
    )


def _engine_rows(rank: int, rdev: pd.DataFrame, span: int) -> list[EngineRow]:
    """Busy time of each engine class of one rank, as a share of its device span."""
    eng = strs(rdev["engine"])
    rows = []
    for e in sorted(set(eng.tolist()) - {""}):
        sel = rdev[eng == e]
        b = iv.total(_merged(sel))
        rows.append(EngineRow(rank, e, b, len(sel), pct(b, span)))
    return rows


def _host_device_row(
    rank: int, rdev: pd.DataFrame, sets: DeviceSets, rwork: pd.DataFrame, hpu: bool
) -> HostDeviceRow:
    """habana_perf_tool's host / device summary of one rank (`sets.busy` not empty); host busy
    is the union of the host's own work (`_common.host_work`: ops, runtime calls, compiles)."""
    busy = sets.busy
    engines = engine_sets(rdev, strs(rdev["engine"]))
    host_set = _merged(rwork)
    lo = min(int(busy[0][0]), int(host_set[0][0]) if host_set[0].size else int(busy[0][0]))
    hi = max(int(busy[1][-1]), int(host_set[1][-1]) if host_set[1].size else 0)
    dev_busy = iv.total(busy)
    host_busy = iv.total(host_set)
    return HostDeviceRow(
        rank=rank,
        wall_ns=hi - lo,
        device_busy_ns=dev_busy,
        host_busy_ns=host_busy,
        device_ratio_pct=pct(dev_busy, hi - lo),
        host_ratio_pct=pct(host_busy, hi - lo),
        mme_ns=iv.total(engines.mme) if hpu else None,
        tpc_ns=iv.total(engines.tpc) if hpu else None,
        dma_ns=iv.total(engines.dma) if hpu else None,
        mme_tpc_overlap_ns=engines.mme_tpc_overlap_ns if hpu else None,
        device_idle_ns=int(busy[1][-1] - busy[0][0]) - dev_busy,
        overlap_host_device_pct=pct(iv.overlap(busy, host_set), dev_busy),
    )


def _step_rows(
    rank: int, sets: DeviceSets, windows: pd.DataFrame, rhost: pd.DataFrame
) -> list[StepRow]:
    """Each step of one rank: its duration, the step split and its host op count."""
    if windows.empty:
        return []
    lo = windows["start_ns"].to_numpy(dtype=np.int64)
    hi = windows["end_ns"].to_numpy(dtype=np.int64)
    split = split_windows(sets, lo, hi)
    ops_per = rhost["step"].value_counts()
    rows = []
    for i, s in enumerate(windows["step"].tolist()):
        dur = int(hi[i] - lo[i])
        rows.append(
            StepRow(
                rank,
                int(s),
                dur,
                int(split["compute"][i]),
                int(split["exposed_comm"][i]),
                int(split["exposed_memory"][i]),
                int(split["idle"][i]),
                pct(int(split["idle"][i]), dur),
                int(ops_per.get(s, 0)),
            )
        )
    return rows


def _time_source_note(trace: Trace) -> str | None:
    """What the trace's device and host times are, when they are not both measured."""
    if device_time_source(trace) != "modeled":
        return None
    if host_time_source(trace) == "projected":
        return (
            "device times are MODELED by the emulated runtime; host times PROJECTED (as a "
            "Gaudi host would see them: the emulator's own work removed, the bridge's costs "
            "and device waits modeled)"
        )
    return "device times are MODELED by the emulated runtime, host times measured"


def _top_tpc_kernels(dev: pd.DataFrame, n: int = 3) -> dict[int, tuple[tuple[str, int], ...]]:
    """Each rank's TPC kernels with the most device time: (name, summed duration in ns)."""
    tpc = dev[isin(dev["engine"], ("TPC",))]
    if tpc.empty:
        return {}
    frame = pd.DataFrame(
        {"rank": tpc["rank"].to_numpy(), "name": strs(tpc["name"]), "dur": tpc["dur_ns"]}
    )
    out: dict[int, tuple[tuple[str, int], ...]] = {}
    ranks = frame["rank"].to_numpy()
    for rank in np.unique(ranks):
        grp = frame[ranks == rank]
        top = grp.groupby("name")["dur"].sum().sort_values(ascending=False, kind="stable")
        out[int(rank)] = tuple((str(k), int(v)) for k, v in top.head(n).items())
    return out


@dataclass(frozen=True)
class FindingEvidence:
    """What the findings need beyond the report's tables.

    Args:
        events: host ops plus device ops of each rank (`options.host_bound_min_events`).
        practice: what the run already does (graph replays, compiled regions).
        tpc_kernels: each rank's top TPC kernels by device time, (name, ns).
    """

    events: dict[int, int]
    practice: RunPractice
    tpc_kernels: dict[int, tuple[tuple[str, int], ...]]


def analyze_bottlenecks(trace: Trace, options: AnalysisOptions | None = None) -> BottleneckReport:
    """Temporal and kernel-type breakdowns, idle causes, top ops, launch stats, findings."""
    options = options or AnalysisOptions()
    full = trace.events
    ev = without_args(full)
    notes: list[str] = []
    if options.drop_last_step:
        ev = _drop_last_step(ev)
        notes.append("last ProfilerStep dropped (HTA's default)")
    dev = device_events(ev)
    device = trace_device(trace)
    ktype = kernel_types(dev)
    pairs = _launch_pairs(ev, dev)
    temporal: list[TemporalRow] = []
    engines: list[EngineRow] = []
    host_device: list[HostDeviceRow] = []
    steps: list[StepRow] = []
    causes: list[IdleCauseRow] = []
    per_rank_sets: list[DeviceSets] = []
    windows, cut = complete_steps(ev, step_windows(ev), options.cut_step_ops_pct)
    notes += [c.note for c in cut]
    host_all = host_ops(ev)
    work_all = host_work(ev)
    events: dict[int, int] = {}
    for rank in sorted(int(r) for r in pd.unique(ev["rank"])):
        rmask = dev["rank"].to_numpy() == rank
        rdev = dev[rmask]
        sets = device_sets(rdev, ktype.to_numpy()[rmask])
        rhost = host_all[host_all["rank"].to_numpy() == rank]
        events[rank] = len(rhost) + len(rdev)
        if sets.busy[0].size:
            per_rank_sets.append(sets)
            temporal.append(_temporal_row(rank, sets))
            causes += _idle_causes(ev, full, rank, sets.busy, pairs, options)
            engines += _engine_rows(rank, rdev, temporal[-1].span_ns)
            rwork = work_all[work_all["rank"].to_numpy() == rank]
            host_device.append(_host_device_row(rank, rdev, sets, rwork, device.is_hpu))
        steps += _step_rows(rank, sets, windows[windows["rank"] == rank], rhost)
    if dev.empty:
        notes.append(
            "no device events: device time is not measurable, device breakdowns are empty "
            "(CPU-only trace?)"
        )
    host_rows, dev_rows = _top_ops(ev, dev, ktype, options.top_n)
    source_note = _time_source_note(trace)
    notes += [source_note] if source_note else []
    report = BottleneckReport(
        temporal=tuple(temporal),
        kernel_types=tuple(_kernel_type_rows(per_rank_sets)),
        engines=tuple(engines),
        host_device=tuple(host_device),
        steps=tuple(steps),
        idle_causes=tuple(causes),
        top_host_ops=tuple(host_rows),
        top_device_ops=tuple(dev_rows),
        launch=_launch_stats(pairs, options),
        device_time="none" if dev.empty else device_time_source(trace),
        notes=tuple(notes),
    )
    evidence = FindingEvidence(events, run_practice(trace), _top_tpc_kernels(dev))
    found, unjudged = bottleneck_findings(report, options, device, evidence)
    return replace(report, findings=tuple(found), notes=report.notes + tuple(unjudged))


def _host_bound_finding(
    rep: BottleneckReport,
    t: TemporalRow,
    options: AnalysisOptions,
    device: TraceDevice,
    evidence: FindingEvidence,
) -> Finding | str | None:
    """The host-bound finding of one rank; a note (str) when the rank has too few steps or
    events to be judged; None when it is not host-bound (or the device has no such advice)."""
    rank_steps = [s for s in rep.steps if s.rank == t.rank]
    events = evidence.events.get(t.rank, 0)
    short = [
        f"{have:,} {what} < {option}={need:,}"
        for have, what, option, need in (
            (len(rank_steps), "steps", "host_bound_min_steps", options.host_bound_min_steps),
            (events, "events", "host_bound_min_events", options.host_bound_min_events),
        )
        if have < need
    ]
    if short:
        return f"host-bound not judged on rank {t.rank}: too little evidence ({'; '.join(short)})"
    idle = float(np.median([s.idle_pct for s in rank_steps]))
    practice = evidence.practice
    advice = host_bound_advice(device, practice.graph_replays, practice.compiled_regions)
    if idle < options.host_bound_idle_pct or advice is None:
        return None
    ops = int(np.median([s.host_ops for s in rank_steps]))
    rc = sorted((c for c in rep.idle_causes if c.rank == t.rank), key=lambda c: -c.time_ns)
    top = rc[0].cause if rc else "unknown"
    # a trace without host ops in its steps (device rows only) has no host-op evidence to give
    per_step = f", {ops:,} host ops per step" if ops else ""
    return Finding(
        severity="critical" if idle >= options.host_bound_critical_pct else "warning",
        report="bottleneck",
        title=(
            f"host-bound: device idle {idle:.0f}% of each step (median of {len(rank_steps)}"
            f" steps){per_step} (rank {t.rank}); largest idle cause: {top}"
        ),
        metric="device_idle_pct",
        value=round(idle, 2),
        threshold=options.host_bound_idle_pct,
        evidence={
            "rank": t.rank,
            "steps": len(rank_steps),
            "events": events,
            **({"host_ops_per_step": ops} if ops else {}),
            "graph_replays": practice.graph_replays,
            "compiled_regions": practice.compiled_regions,
            "idle_causes_ns": {c.cause: c.time_ns for c in rc},
        },
        advice=advice,
        threshold_option="host_bound_idle_pct",
    )


MATMUL_KERNEL_RE = re.compile(r"(^|_)(mm|bmm|addmm|baddbmm|matmul|linear|gemm|conv\w*)(_|$)")
OPTIMIZER_KERNEL_RE = re.compile(r"addcmul|addcdiv|lerp|adam|sgd|lamb|_foreach|sqrt")
"""Kernel-name classes of the TPC-bound advice (Gaudi kernel names: `mm_f32`, `lerp_bf16`)."""


def _tpc_bound_advice(device: TraceDevice, kernels: tuple[tuple[str, int], ...]) -> str | None:
    """Advice that follows the TPC kernels counted: matmuls placed on TPC, optimizer updates,
    or elementwise/normalization ops, by which of them holds the most of their time."""
    names = ", ".join(k for k, _ in kernels)
    time_by_class = {"tpc_bound_matmul": 0, "tpc_bound_optimizer": 0, "tpc_bound": 0}
    for name, ns in kernels:
        if MATMUL_KERNEL_RE.search(name):
            time_by_class["tpc_bound_matmul"] += ns
        elif OPTIMIZER_KERNEL_RE.search(name):
            time_by_class["tpc_bound_optimizer"] += ns
        else:
            time_by_class["tpc_bound"] += ns
    topic = max(time_by_class, key=lambda k: time_by_class[k])
    return advise(topic, device, kernels=names or "its kernels")


def bottleneck_findings(
    rep: BottleneckReport,
    options: AnalysisOptions,
    device: TraceDevice,
    evidence: FindingEvidence,
) -> tuple[list[Finding], list[str]]:
    """Host-bound steps, dominant idle causes, MME/TPC balance (advice for `device`), and a
    note for each rank too small to be judged host-bound."""
    out: list[Finding] = []
    unjudged: list[str] = []
    sync_wait = advise("sync_wait", device)
    data_loading = advise("data_loading", device)
    for t in rep.temporal:
        host_bound = _host_bound_finding(rep, t, options, device, evidence)
        if isinstance(host_bound, str):
            unjudged.append(host_bound)
        elif host_bound is not None:
            out.append(host_bound)
    for c in rep.idle_causes:
        if (
            c.cause.startswith("sync wait")
            and c.pct_of_idle >= options.idle_cause_warn_pct
            and sync_wait is not None
        ):
            out.append(
                Finding(
                    "warning",
                    "bottleneck",
                    f"{c.pct_of_idle:.0f}% of device idle is the host waiting ({c.cause}), "
                    f"{c.gaps} waits, rank {c.rank}",
                    "idle_pct_sync",
                    c.pct_of_idle,
                    options.idle_cause_warn_pct,
                    {"rank": c.rank, "cause": c.cause, "time_ns": c.time_ns},
                    sync_wait,
                    "idle_cause_warn_pct",
                )
            )
        if (
            c.cause == "data loading"
            and c.pct_of_idle >= options.idle_cause_warn_pct
            and data_loading is not None
        ):
            out.append(
                Finding(
                    "warning",
                    "bottleneck",
                    f"{c.pct_of_idle:.0f}% of device idle is data loading (rank {c.rank})",
                    "idle_pct_data_loading",
                    c.pct_of_idle,
                    options.idle_cause_warn_pct,
                    {"rank": c.rank, "time_ns": c.time_ns},
                    data_loading,
                    "idle_cause_warn_pct",
                )
            )
    ratio = options.tpc_bound_ratio
    for h in rep.host_device:
        kernels = evidence.tpc_kernels.get(h.rank, ())
        tpc_bound = _tpc_bound_advice(device, kernels)
        if h.mme_ns and h.tpc_ns and h.tpc_ns > ratio * h.mme_ns and tpc_bound is not None:
            top = ", ".join(f"{k} {ns / 1e6:.2f} ms" for k, ns in kernels)
            out.append(
                Finding(
                    "info",
                    "bottleneck",
                    f"TPC-bound: TPC busy {h.tpc_ns / 1e6:.2f} ms vs MME {h.mme_ns / 1e6:.2f} ms"
                    f" (rank {h.rank}); top TPC kernels: {top}",
                    "tpc_to_mme_ratio",
                    round(h.tpc_ns / h.mme_ns, 2),
                    ratio,
                    {
                        "rank": h.rank,
                        "tpc_ns": h.tpc_ns,
                        "mme_ns": h.mme_ns,
                        "top_tpc_kernels_ns": dict(kernels),
                    },
                    tpc_bound,
                    "tpc_bound_ratio",
                )
            )
    return out, unjudged
