"""Compare two traces: step time, device time split, per-op and per-kernel changes, regressions.

Each instant of time is counted once: an op's host time is its *self* time (a wrapper such as
conv2d -> convolution -> _convolution -> cudnn_convolution does not count the same work four
times), its device time the device time attributed to that op itself (`op_row`); kernels are
listed with their own device time.

Numbers are per step: every (rank, step) window of a trace is one sample (the whole trace is
one sample when it has no steps), an op's value is its mean over the samples, and its noise is
the run-to-run spread of those samples. A change is a regression only when it is larger than
`options.regression_pct` of A, larger than `options.regression_min_ns`, and larger than
`options.noise_sigmas` standard errors of the difference of the two means; with fewer than two steps
on a side the noise is unknown and a change is reported as `info`, never as a regression.

`op_summary` / `first_step` / `events_with_steps` keep HTA's `TraceDiff` definition (counts and
total durations of every slice of one step), checked against HTA in the tests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from hpuprof.analysis._common import (
    device_events,
    host_ops,
    pct,
    self_time,
    step_windows,
    strs,
    without_args,
)
from hpuprof.analysis.findings import Finding
from hpuprof.analysis.options import AnalysisOptions
from hpuprof.trace.model import Trace
from hpuprof.trace.schema import NO_ID


@dataclass(frozen=True)
class OpDelta:
    """One op name in both traces: per-step means (ns) and their change.

    Args:
        a_calls, b_calls: calls per step.
        a_host_ns, b_host_ns: host self time per step.
        a_device_ns, b_device_ns: device time attributed to the op itself, per step.
        host_noise_ns, device_noise_ns: standard error of the difference (None: unknown).
        status: new, vanished, changed or same.
        regression: "", "host", "device" or "host, device".
    """

    name: str
    a_calls: float
    b_calls: float
    a_host_ns: float
    b_host_ns: float
    diff_host_ns: float
    a_device_ns: float
    b_device_ns: float
    diff_device_ns: float
    host_noise_ns: float | None
    device_noise_ns: float | None
    status: str
    regression: str


@dataclass(frozen=True)
class KernelDelta:
    """One device op name in both traces: count and device time per step (ns)."""

    name: str
    a_count: float
    b_count: float
    a_ns: float
    b_ns: float
    diff_ns: float
    noise_ns: float | None
    status: str


@dataclass(frozen=True)
class MetricDelta:
    """A scalar metric in both traces (`unit` says how its values read)."""

    metric: str
    a: float
    b: float
    diff: float
    pct: float
    label: str = ""
    unit: str = ""
    noise: float | None = None


@dataclass(frozen=True)
class DiffReport:
    """Result of `diff_traces`.

    Args:
        a_steps, b_steps: the (rank, step) samples of each trace.
        a_step, b_step: the one step compared, when one was asked for (else None).
    """

    a_source: tuple[str, ...]
    b_source: tuple[str, ...]
    a_step: int | None
    b_step: int | None
    a_steps: int
    b_steps: int
    metrics: tuple[MetricDelta, ...]
    ops: tuple[OpDelta, ...]
    kernels: tuple[KernelDelta, ...]
    new_ops: tuple[str, ...]
    vanished_ops: tuple[str, ...]
    regressions: tuple[Finding, ...]
    findings: tuple[Finding, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)


# --- HTA's TraceDiff definition (one step, every slice, total durations) ------------------------


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
    """HTA TraceDiff's per-op table: counts and total duration (ns) per name over every slice
    of one step (or all), one rank (default: the first)."""
    ev = without_args(trace.events)  # (row subsets below: no args to copy)
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


# --- per-step samples ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Samples:
    """Per-step values of one trace: op name -> per-sample arrays, step durations."""

    n: int
    step_ns: np.ndarray
    calls: pd.DataFrame
    host: pd.DataFrame
    device: pd.DataFrame
    kernels: pd.DataFrame
    kernel_counts: pd.DataFrame


def _sample_ids(ev: pd.DataFrame, step: int | None) -> tuple[np.ndarray, np.ndarray, int]:
    """(sample id per row, -1 outside any; step durations; number of samples)."""
    w = step_windows(ev)
    if step is not None:
        w = w[w["step"] == step]
    if w.empty:
        if len(ev) == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), 0
        ts = ev["ts_ns"].to_numpy(dtype=np.int64)
        span = int((ts + ev["dur_ns"].to_numpy(dtype=np.int64)).max() - ts.min())
        return np.zeros(len(ev), dtype=np.int64), np.array([span], dtype=np.int64), 1
    keys = pd.MultiIndex.from_arrays([w["rank"].to_numpy(), w["step"].to_numpy()])
    ids = pd.Series(np.arange(len(w)), index=keys)
    got = ids.reindex(pd.MultiIndex.from_arrays([ev["rank"].to_numpy(), ev["step"].to_numpy()]))
    sample = got.fillna(-1).to_numpy(dtype=np.int64)
    dur = (w["end_ns"] - w["start_ns"]).to_numpy(dtype=np.int64)
    return sample, dur, len(w)


def _per_sample(sample: np.ndarray, names: np.ndarray, values: np.ndarray, n: int) -> pd.DataFrame:
    """name x sample table of summed values (0 where a name has none in a sample)."""
    keep = sample >= 0
    frame = pd.DataFrame({"name": names[keep], "s": sample[keep], "v": values[keep]})
    table = frame.groupby(["name", "s"])["v"].sum().unstack(fill_value=0)
    return table.reindex(columns=range(n), fill_value=0)


def _samples(trace: Trace, step: int | None) -> _Samples:
    ev = without_args(trace.events)
    sample, step_ns, n = _sample_ids(ev, step)
    at = pd.Series(sample, index=ev.index)
    host = host_ops(ev)
    hs = at.reindex(host.index).to_numpy()
    hnames = strs(host["name"])
    dev = device_events(ev)
    ds = at.reindex(dev.index).to_numpy()
    dnames = strs(dev["name"])
    op_pos = ev.index.get_indexer(pd.Index(dev["op_row"].to_numpy()))
    owner = np.full(len(dev), "", dtype=object)
    owner[op_pos >= 0] = strs(ev["name"].iloc[op_pos[op_pos >= 0]])
    attributed = owner != ""
    ddur = dev["dur_ns"].to_numpy(dtype=np.int64)
    return _Samples(
        n=n,
        step_ns=step_ns,
        calls=_per_sample(hs, hnames, np.ones(len(host), dtype=np.int64), n),
        host=_per_sample(hs, hnames, self_time(ev, host).to_numpy(dtype=np.int64), n),
        device=_per_sample(ds[attributed], owner[attributed], ddur[attributed], n),
        kernels=_per_sample(ds, dnames, ddur, n),
        kernel_counts=_per_sample(ds, dnames, np.ones(len(dev), dtype=np.int64), n),
    )


def _stats(table: pd.DataFrame, names: pd.Index) -> tuple[np.ndarray, np.ndarray, int]:
    """Per name: mean and variance over the samples (0 for absent names), sample count."""
    t = table.reindex(names, fill_value=0).to_numpy(dtype=np.float64)
    n = t.shape[1]
    if n == 0:
        return np.zeros(len(names)), np.zeros(len(names)), 0
    var = t.var(axis=1, ddof=1) if n > 1 else np.full(len(names), np.nan)
    return t.mean(axis=1), var, n


def _noise(var_a: np.ndarray, na: int, var_b: np.ndarray, nb: int) -> np.ndarray:
    """Standard error of the difference of two means (NaN when a side has one sample)."""
    if na < 2 or nb < 2:
        return np.full(len(var_a), np.nan)
    return np.sqrt(var_a / na + var_b / nb)


def _beyond(diff: float, a: float, noise: float, options: AnalysisOptions) -> bool:
    """A worsening large in absolute, relative and noise terms."""
    big = diff > options.regression_min_ns and (a == 0 or 100.0 * diff / a > options.regression_pct)
    return big and not math.isnan(noise) and diff > options.noise_sigmas * noise


def _status(a_calls: float, b_calls: float, same: bool) -> str:
    if a_calls == 0:
        return "new"
    if b_calls == 0:
        return "vanished"
    return "same" if same else "changed"


def _maybe(value: float) -> float | None:
    return None if math.isnan(value) else round(float(value), 1)


def _op_deltas(
    sa: _Samples, sb: _Samples, options: AnalysisOptions
) -> list[tuple[OpDelta, float, float]]:
    names = sa.calls.index.union(sb.calls.index)
    ca, _, _ = _stats(sa.calls, names)
    cb, _, _ = _stats(sb.calls, names)
    ha, hva, na = _stats(sa.host, names)
    hb, hvb, nb = _stats(sb.host, names)
    da, dva, _ = _stats(sa.device, names)
    db, dvb, _ = _stats(sb.device, names)
    hnoise = _noise(hva, na, hvb, nb)
    dnoise = _noise(dva, na, dvb, nb)
    out = []
    for i, name in enumerate(names.tolist()):
        kinds = [
            k
            for k, d, a, noise in (
                ("host", hb[i] - ha[i], ha[i], hnoise[i]),
                ("device", db[i] - da[i], da[i], dnoise[i]),
            )
            if _beyond(d, a, noise, options) and ca[i] > 0 and cb[i] > 0
        ]
        same = (ca[i], ha[i], da[i]) == (cb[i], hb[i], db[i])
        delta = OpDelta(
            name=str(name),
            a_calls=round(float(ca[i]), 2),
            b_calls=round(float(cb[i]), 2),
            a_host_ns=round(float(ha[i]), 1),
            b_host_ns=round(float(hb[i]), 1),
            diff_host_ns=round(float(hb[i] - ha[i]), 1),
            a_device_ns=round(float(da[i]), 1),
            b_device_ns=round(float(db[i]), 1),
            diff_device_ns=round(float(db[i] - da[i]), 1),
            host_noise_ns=_maybe(hnoise[i]),
            device_noise_ns=_maybe(dnoise[i]),
            status=_status(float(ca[i]), float(cb[i]), same),
            regression=", ".join(kinds),
        )
        out.append((delta, float(hb[i] - ha[i]), float(db[i] - da[i])))
    out.sort(key=lambda t: -max(abs(t[1]), abs(t[2])))
    return out


def _kernel_deltas(sa: _Samples, sb: _Samples) -> list[KernelDelta]:
    names = sa.kernels.index.union(sb.kernels.index)
    ka, kva, na = _stats(sa.kernels, names)
    kb, kvb, nb = _stats(sb.kernels, names)
    ca, _, _ = _stats(sa.kernel_counts, names)
    cb, _, _ = _stats(sb.kernel_counts, names)
    noise = _noise(kva, na, kvb, nb)
    out = [
        KernelDelta(
            str(name),
            round(float(ca[i]), 2),
            round(float(cb[i]), 2),
            round(float(ka[i]), 1),
            round(float(kb[i]), 1),
            round(float(kb[i] - ka[i]), 1),
            _maybe(noise[i]),
            _status(float(ca[i]), float(cb[i]), (ca[i], ka[i]) == (cb[i], kb[i])),
        )
        for i, name in enumerate(names.tolist())
    ]
    return sorted(out, key=lambda k: -abs(k.diff_ns))


def _metric(name: str, a: float, b: float, noise: float | None = None) -> MetricDelta:
    from hpuprof.analysis.registry import column_label, column_unit

    return MetricDelta(
        name, a, b, b - a, pct(b - a, a), column_label(name), column_unit(name), noise
    )


def _metrics(a: Trace, b: Trace, sa: _Samples, sb: _Samples) -> list[MetricDelta]:
    from hpuprof.analysis.ranks import analyze_ranks

    va = sa.step_ns.astype(np.float64)
    vb = sb.step_ns.astype(np.float64)
    noise = _noise(
        np.array([va.var(ddof=1) if len(va) > 1 else np.nan]),
        len(va),
        np.array([vb.var(ddof=1) if len(vb) > 1 else np.nan]),
        len(vb),
    )[0]
    out = [
        _metric(
            "mean_step_ns",
            float(va.mean()) if len(va) else 0.0,
            float(vb.mean()) if len(vb) else 0.0,
            _maybe(noise),
        )
    ]
    ra, rb = analyze_ranks(a), analyze_ranks(b)
    if ra.ranks and rb.ranks:

        def total(rep: Any, f: str) -> float:
            return float(sum(getattr(r, f) for r in rep.ranks))

        covered_a, covered_b = total(ra, "covered_ns"), total(rb, "covered_ns")
        for f in ("compute_ns", "exposed_comm_ns", "exposed_memory_ns", "idle_ns"):
            out.append(_metric(f, total(ra, f), total(rb, f)))
        for f in ("compute", "exposed_comm", "idle"):
            out.append(
                _metric(
                    f"{f}_pct",
                    pct(total(ra, f"{f}_ns"), covered_a),
                    pct(total(rb, f"{f}_ns"), covered_b),
                )
            )
    return out


def _worst(d: OpDelta, host_diff: float, device_diff: float) -> tuple[str, float]:
    """The regressed kind of time with the larger change: ("host self" | "device", change)."""
    kinds = [("host self", host_diff)] if "host" in d.regression else []
    kinds += [("device", device_diff)] if "device" in d.regression else []
    return max(kinds, key=lambda k: k[1])


def diff_traces(
    a: Trace,
    b: Trace,
    options: AnalysisOptions | None = None,
    a_step: int | None = None,
    b_step: int | None = None,
) -> DiffReport:
    """Compare trace `b` (test) against `a` (control), per step (see the module docstring).

    Args:
        a_step, b_step: compare only this step of each trace (None: every step).
    """
    options = options or AnalysisOptions()
    sa, sb = _samples(a, a_step), _samples(b, b_step)
    deltas = _op_deltas(sa, sb, options)
    metrics = _metrics(a, b, sa, sb)
    noise_known = sa.n > 1 and sb.n > 1
    regressions: list[Finding] = []
    step = metrics[0]
    if (
        step.noise is not None
        and step.diff > 0
        and _beyond(step.diff, step.a, float(step.noise), options)
    ):
        regressions.append(
            Finding(
                "warning",
                "compare",
                f"mean step time regressed {step.pct:+.1f}% ({step.a / 1e6:.2f} ms -> "
                f"{step.b / 1e6:.2f} ms), beyond the step-to-step noise",
                "mean_step_ns",
                step.pct,
                options.regression_pct,
                {"a_ns": step.a, "b_ns": step.b, "noise_ns": step.noise},
                "the per-op changes below show where the time went",
                "regression_pct",
            )
        )
    for d, dh, dd in deltas:
        if not d.regression:
            continue
        kind, worse = _worst(d, dh, dd)
        a_ns = d.a_device_ns if kind == "device" else d.a_host_ns
        noise = d.device_noise_ns if kind == "device" else d.host_noise_ns
        regressions.append(
            Finding(
                "warning",
                "compare",
                f"{d.name}: {kind} time per step {a_ns / 1e3:,.1f} us -> "
                f"{(a_ns + worse) / 1e3:,.1f} us ({d.a_calls:g} -> {d.b_calls:g} calls per step)",
                f"op_{kind.replace(' ', '_')}_ns",
                round(worse, 1),
                float(options.regression_min_ns),
                {"name": d.name, "diff_ns": round(worse, 1), "noise_ns": noise},
                "",
                "regression_min_ns",
            )
        )
    notes = [
        f"per step means over {sa.n} (A) and {sb.n} (B) steps; host time is self time, device "
        "time is counted once, on the op it is attributed to"
    ]
    if not noise_known:
        notes.append(
            "fewer than two steps on a side: no run-to-run noise estimate, so no change is "
            "flagged as a regression"
        )
    regressions.sort(key=lambda f: -f.value)
    ops = tuple(d for d, _, _ in deltas)
    return DiffReport(
        a_source=tuple(a.sources),
        b_source=tuple(b.sources),
        a_step=a_step,
        b_step=b_step,
        a_steps=sa.n,
        b_steps=sb.n,
        metrics=tuple(metrics),
        ops=ops,
        kernels=tuple(_kernel_deltas(sa, sb)),
        new_ops=tuple(o.name for o in ops if o.status == "new"),
        vanished_ops=tuple(o.name for o in ops if o.status == "vanished"),
        regressions=tuple(regressions),
        findings=tuple(regressions[: options.top_n]),
        notes=tuple(notes),
    )
