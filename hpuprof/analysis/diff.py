"""Compare two traces: step time, device time split, per-op and per-kernel changes, regressions.

Each instant of time is counted once: an op's host time is its *self* time (a wrapper such as
conv2d -> convolution -> _convolution -> cudnn_convolution does not count the same work four
times), its device time the device time attributed to that op itself (`op_row`); kernels are
listed with their own device time.

One unit throughout: the step. Every (rank, step) window of a trace is one sample (each rank's
span is one when the trace has no steps; a last step the trace cut off is left out, `cut_steps`),
and every figure, the step time, its split (`step_split`), an op's or a kernel's time, is its mean
per sample: the time of one step on one rank. No run total stands beside these means.

The significance rule, one for the step time, every op and every kernel: B's change is a
regression when it is a worsening larger than `options.regression_min_ns`, larger than
`options.regression_pct` % of A, and larger than `options.noise_sigmas` times its noise. The noise
is A's step-to-step standard deviation times sqrt(1/n_A + 1/n_B): how far the mean of B's steps
would move by chance if B's steps varied as A's do. A, the baseline, measures the variation
of a step when nothing changed; B's own spread is part of what changed (compilations in its
first steps, a recompilation), so it does not hide the change (Glass's delta, against Welch's
test, which let a 40x slower step time and a +16 ms op pass while a +10 ms op was flagged).
With fewer than two samples in A there is no noise estimate and nothing is flagged.

An op only in B ("new in B") is held to the same rule with A's value taken as 0: having no
spread of its own in A, its noise is that of A's step time (the most a step's parts varied
together), so a new op is flagged when its time per step exceeds `regression_min_ns` and
`noise_sigmas` times that noise. An op only in A is "gone in B": listed, never a regression.

Traces of different devices are compared too, and the report says so first (`same_device`).

`op_summary` / `first_step` / `events_with_steps` keep HTA's `TraceDiff` definition (counts and
total durations of every slice of one step), checked against HTA in the tests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Final

import numpy as np
import pandas as pd

from hpuprof.analysis._common import (
    device_events,
    ends,
    host_ops,
    kernel_types,
    pct,
    self_time,
    step_windows,
    strs,
    without_args,
)
from hpuprof.analysis.cut_steps import CutStep, complete_steps
from hpuprof.analysis.findings import Finding
from hpuprof.analysis.options import AnalysisOptions
from hpuprof.analysis.step_split import SPLIT_PARTS, device_sets, split_windows
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
        status: "new in B", "gone in B", "changed" or "same".
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
    """One device op name in both traces: count and device time per step (ns).

    Args:
        regression: its time per step passes the significance rule (the module docstring);
            the finding is its op's, which this kernel's time is part of.
    """

    name: str
    a_count: float
    b_count: float
    a_ns: float
    b_ns: float
    diff_ns: float
    noise_ns: float | None
    status: str
    regression: bool = False


@dataclass(frozen=True)
class MetricDelta:
    """A per-step metric in both traces (`unit` says how its values read; `pct` is None for a
    share, whose change `diff` is in points)."""

    metric: str
    a: float
    b: float
    diff: float
    pct: float | None
    label: str = ""
    unit: str = ""
    noise: float | None = None


@dataclass(frozen=True)
class DiffReport:
    """Result of `diff_traces`.

    Args:
        a_step, b_step: the one step compared, when one was asked for (else None).
        a_steps, b_steps: steps of each rank compared (None when ranks have different
            numbers; 0 without steps: then each rank's span is one sample).
        a_ranks, b_ranks: ranks of each trace.
        a_samples, b_samples: (rank, step) samples: steps x ranks.
        a_sampled, b_sampled: the same in words ("8 steps x 2 ranks").
        findings: a different device first (`same_device`), then the regressions.
        cut_steps: steps left out because the trace cut them off (`cut_steps`).
    """

    a_source: tuple[str, ...]
    b_source: tuple[str, ...]
    a_step: int | None
    b_step: int | None
    a_steps: int | None
    b_steps: int | None
    a_ranks: int
    b_ranks: int
    a_samples: int
    b_samples: int
    a_sampled: str
    b_sampled: str
    metrics: tuple[MetricDelta, ...]
    ops: tuple[OpDelta, ...]
    kernels: tuple[KernelDelta, ...]
    new_ops: tuple[str, ...]
    vanished_ops: tuple[str, ...]
    regressions: tuple[Finding, ...]
    findings: tuple[Finding, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)
    cut_steps: tuple[CutStep, ...] = ()


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
    """Per-step values of one trace: op name -> per-sample arrays, step durations and split.

    Args:
        n: samples: (rank, step) windows, or one window per rank without steps.
        ranks: ranks sampled; steps_per_rank: their steps when every rank has as many.
        split: the step split (`step_split.SPLIT_PARTS`) of every sample (ns).
        cut: steps the trace cut off, left out (`cut_steps`).
    """

    n: int
    ranks: int
    steps_per_rank: int | None
    step_ns: np.ndarray
    split: dict[str, np.ndarray]
    calls: pd.DataFrame
    host: pd.DataFrame
    device: pd.DataFrame
    kernels: pd.DataFrame
    kernel_counts: pd.DataFrame
    cut: tuple[CutStep, ...] = ()

    @property
    def words(self) -> str:
        """What the means are over: "8 steps x 2 ranks", "6 steps", "the whole trace"."""
        if self.steps_per_rank == 0:
            return "the whole trace (no steps)" + (
                f", {self.ranks} ranks" if self.ranks > 1 else ""
            )
        if self.ranks == 1:
            return f"{self.n} step{'s' if self.n != 1 else ''}"
        if self.steps_per_rank is not None:
            return f"{self.steps_per_rank} steps x {self.ranks} ranks"
        return f"{self.n} steps over {self.ranks} ranks"


def _windows(
    ev: pd.DataFrame, step: int | None, options: AnalysisOptions
) -> tuple[pd.DataFrame, np.ndarray, tuple[CutStep, ...]]:
    """The sample windows [rank, step, start_ns, end_ns], each row's sample (-1: none), the
    steps left out. Without steps, each rank's span is one sample."""
    every = step_windows(ev)
    cut: tuple[CutStep, ...] = ()
    if step is not None:  # asked for by number: compared even when cut off
        w = every[every["step"] == step]
    else:
        w, cut = complete_steps(ev, every, options.cut_step_ops_pct)
    w = w.reset_index(drop=True)
    rank = ev["rank"].to_numpy()
    if w.empty:
        if len(ev) == 0:
            return w, np.zeros(0, dtype=np.int64), cut
        ranks, sample = np.unique(rank, return_inverse=True)
        ts = ev["ts_ns"].to_numpy(dtype=np.int64)
        spans = pd.DataFrame({"r": sample, "lo": ts, "hi": ends(ev)}).groupby("r")
        w = pd.DataFrame(
            {
                "rank": ranks,
                "step": NO_ID,
                "start_ns": spans["lo"].min().to_numpy(),
                "end_ns": spans["hi"].max().to_numpy(),
            }
        )
        return w, sample.astype(np.int64), cut
    keys = pd.MultiIndex.from_arrays([w["rank"].to_numpy(), w["step"].to_numpy()])
    ids = pd.Series(np.arange(len(w)), index=keys)
    got = ids.reindex(pd.MultiIndex.from_arrays([rank, ev["step"].to_numpy()]))
    return w, got.fillna(-1).to_numpy(dtype=np.int64), cut


def _split(dev: pd.DataFrame, w: pd.DataFrame) -> dict[str, np.ndarray]:
    """The step split of every window, each rank's device rows against its own windows."""
    out = {part: np.zeros(len(w), dtype=np.int64) for part in SPLIT_PARTS}
    ktype = kernel_types(dev).to_numpy()
    dev_rank = dev["rank"].to_numpy()
    for rank in pd.unique(w["rank"]):
        at = np.flatnonzero(w["rank"].to_numpy() == rank)
        mine = dev_rank == rank
        got = split_windows(
            device_sets(dev[mine], ktype[mine]),
            w["start_ns"].to_numpy(dtype=np.int64)[at],
            w["end_ns"].to_numpy(dtype=np.int64)[at],
        )
        for part in SPLIT_PARTS:
            out[part][at] = got[part]
    return out


def _per_sample(sample: np.ndarray, names: np.ndarray, values: np.ndarray, n: int) -> pd.DataFrame:
    """name x sample table of summed values (0 where a name has none in a sample)."""
    keep = sample >= 0
    frame = pd.DataFrame({"name": names[keep], "s": sample[keep], "v": values[keep]})
    table = frame.groupby(["name", "s"])["v"].sum().unstack(fill_value=0)
    return table.reindex(columns=range(n), fill_value=0)


def _samples(trace: Trace, step: int | None, options: AnalysisOptions) -> _Samples:
    ev = without_args(trace.events)
    w, sample, cut = _windows(ev, step, options)
    n = len(w)
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
    per_rank = w[w["step"] != NO_ID].groupby("rank").size() if n else pd.Series(dtype=int)
    counts = set(per_rank.tolist())
    return _Samples(
        n=n,
        ranks=int(w["rank"].nunique()) if n else 0,
        steps_per_rank=0 if n and per_rank.empty else (counts.pop() if len(counts) == 1 else None),
        step_ns=(w["end_ns"] - w["start_ns"]).to_numpy(dtype=np.int64),
        split=_split(dev, w),
        calls=_per_sample(hs, hnames, np.ones(len(host), dtype=np.int64), n),
        host=_per_sample(hs, hnames, self_time(ev, host).to_numpy(dtype=np.int64), n),
        device=_per_sample(ds[attributed], owner[attributed], ddur[attributed], n),
        kernels=_per_sample(ds, dnames, ddur, n),
        kernel_counts=_per_sample(ds, dnames, np.ones(len(dev), dtype=np.int64), n),
        cut=cut,
    )


def _stats(table: pd.DataFrame, names: pd.Index) -> tuple[np.ndarray, np.ndarray, int]:
    """Per name: mean and variance over the samples (0 for absent names), sample count."""
    t = table.reindex(names, fill_value=0).to_numpy(dtype=np.float64)
    n = t.shape[1]
    if n == 0:
        return np.zeros(len(names)), np.zeros(len(names)), 0
    var = t.var(axis=1, ddof=1) if n > 1 else np.full(len(names), np.nan)
    return t.mean(axis=1), var, n


def _variance(values: np.ndarray) -> float:
    """The sample variance of `values` (NaN for fewer than two)."""
    return float(values.astype(np.float64).var(ddof=1)) if len(values) > 1 else math.nan


def _noise(var_a: np.ndarray, na: int, nb: int) -> np.ndarray:
    """The noise of a difference of means when B's steps vary as A's do: A's step-to-step
    variance times (1/na + 1/nb), square-rooted (NaN when A has one sample, or B none)."""
    if na < 2 or nb < 1:
        return np.full(len(var_a), np.nan)
    return np.sqrt(var_a * (1.0 / na + 1.0 / nb))


def _beyond(diff: float, a: float, noise: float, options: AnalysisOptions) -> bool:
    """The significance rule (module docstring): a worsening larger than
    `regression_min_ns`, than `regression_pct` of A, and than `noise_sigmas` times the noise."""
    big = diff > options.regression_min_ns and (a == 0 or 100.0 * diff / a > options.regression_pct)
    return big and not math.isnan(noise) and diff > options.noise_sigmas * noise


NEW, GONE = "new in B", "gone in B"


def _status(a_calls: float, b_calls: float, same: bool) -> str:
    if a_calls == 0:
        return NEW
    if b_calls == 0:
        return GONE
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
    hb, _, nb = _stats(sb.host, names)
    da, dva, _ = _stats(sa.device, names)
    db, _, _ = _stats(sb.device, names)
    # an op only in B has no spread of its own in A: the noise is A's step time's
    new = (ca == 0) & (cb > 0)
    step_noise = _noise(np.array([_variance(sa.step_ns)]), sa.n, sb.n)[0]
    hnoise = np.where(new, step_noise, _noise(hva, na, nb))
    dnoise = np.where(new, step_noise, _noise(dva, na, nb))
    out = []
    for i, name in enumerate(names.tolist()):
        kinds = [
            k
            for k, d, a, noise in (
                ("host", hb[i] - ha[i], ha[i], hnoise[i]),
                ("device", db[i] - da[i], da[i], dnoise[i]),
            )
            if _beyond(d, a, noise, options) and cb[i] > 0
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


def _kernel_deltas(sa: _Samples, sb: _Samples, options: AnalysisOptions) -> list[KernelDelta]:
    names = sa.kernels.index.union(sb.kernels.index)
    ka, kva, na = _stats(sa.kernels, names)
    kb, _, nb = _stats(sb.kernels, names)
    ca, _, _ = _stats(sa.kernel_counts, names)
    cb, _, _ = _stats(sb.kernel_counts, names)
    noise = _noise(kva, na, nb)
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
            bool(ca[i] > 0 and cb[i] > 0 and _beyond(kb[i] - ka[i], ka[i], noise[i], options)),
        )
        for i, name in enumerate(names.tolist())
    ]
    return sorted(out, key=lambda k: -abs(k.diff_ns))


_SPLIT_LABELS: Final = {
    "compute": "Compute per step",
    "exposed_comm": "Exposed communication per step",
    "exposed_memory": "Exposed memory per step",
    "idle": "Device idle per step",
}


def _metric(name: str, values_a: np.ndarray, values_b: np.ndarray, label: str = "") -> MetricDelta:
    """A per-step metric: the two means, their change, and its noise (`_noise`)."""
    from hpuprof.analysis.registry import column_label, column_unit

    va, vb = values_a.astype(np.float64), values_b.astype(np.float64)
    a = float(va.mean()) if len(va) else 0.0
    b = float(vb.mean()) if len(vb) else 0.0
    noise = _maybe(_noise(np.array([_variance(va)]), len(va), len(vb))[0])
    unit = column_unit(name)
    return MetricDelta(name, a, b, b - a, pct(b - a, a), label or column_label(name), unit, noise)


def _share(name: str, part: MetricDelta, step: MetricDelta) -> MetricDelta:
    """A part's share of the mean step (%) in both traces: the change is in points, the
    relative change of a share is left out."""
    a, b = pct(part.a, step.a), pct(part.b, step.b)
    label = part.label.replace(" per step", " % of the step")
    return MetricDelta(name, a, b, round(b - a, 2), None, label, "pct")


def _metrics(sa: _Samples, sb: _Samples) -> list[MetricDelta]:
    """Mean step time and the step split per step, with their noise; the shares of the step."""
    step = _metric("mean_step_ns", sa.step_ns, sb.step_ns)
    parts = {
        part: _metric(f"{part}_ns", sa.split[part], sb.split[part], _SPLIT_LABELS[part])
        for part in SPLIT_PARTS
    }
    shares = [_share(f"{p}_pct", parts[p], step) for p in ("compute", "exposed_comm", "idle")]
    return [step, *parts.values(), *shares]


def _worst(d: OpDelta, host_diff: float, device_diff: float) -> tuple[str, float]:
    """The regressed kind of time with the larger change: ("host self" | "device", change)."""
    kinds = [("host self", host_diff)] if "host" in d.regression else []
    kinds += [("device", device_diff)] if "device" in d.regression else []
    return max(kinds, key=lambda k: k[1])


def _device_finding(a: Trace, b: Trace) -> Finding | None:
    """Said first when A and B ran on different devices: every change below mixes the two."""
    from hpuprof.analysis.device import trace_device

    da, db = trace_device(a), trace_device(b)
    if da.label == db.label:
        return None
    return Finding(
        "info" if da.emulated and db.emulated else "warning",  # two device models: the point
        "compare",
        f"different devices: A ran on {da.label}, B on {db.label}",
        "same_device",
        0.0,
        1.0,
        {"a_device": da.label, "b_device": db.label},
        "every change below is the two devices' difference as much as the two runs': kernels "
        "are named and timed per device; compare runs of one device to see what a code change "
        "did",
    )


def _step_finding(step: MetricDelta, options: AnalysisOptions) -> Finding | None:
    """The mean step time's regression, when it passes the significance rule."""
    if step.noise is None or step.diff <= 0 or not _beyond(step.diff, step.a, step.noise, options):
        return None
    ratio = step.b / step.a if step.a else math.inf
    change = f"{ratio:.1f}x" if ratio >= 2 else f"{step.pct:+.1f}%"
    return Finding(
        "warning",
        "compare",
        f"mean step time regressed {change} ({step.a / 1e6:,.2f} ms -> {step.b / 1e6:,.2f} ms "
        "per step), beyond the step-to-step noise",
        "mean_step_ns",
        float(step.pct or 0.0),
        options.regression_pct,
        {"a_ns": step.a, "b_ns": step.b, "noise_ns": step.noise},
        "the per-op changes below show where the time went",
        "regression_pct",
    )


def _op_finding(
    d: OpDelta, host_diff: float, device_diff: float, options: AnalysisOptions
) -> Finding:
    kind, worse = _worst(d, host_diff, device_diff)
    a_ns = d.a_device_ns if kind == "device" else d.a_host_ns
    noise = d.device_noise_ns if kind == "device" else d.host_noise_ns
    new = " (new in B: not run in A)" if d.status == NEW else ""
    return Finding(
        "warning",
        "compare",
        f"{d.name}: {kind} time per step {a_ns / 1e3:,.1f} us -> "
        f"{(a_ns + worse) / 1e3:,.1f} us ({d.a_calls:g} -> {d.b_calls:g} calls per step){new}",
        f"op_{kind.replace(' ', '_')}_ns",
        round(worse, 1),
        float(options.regression_min_ns),
        {"name": d.name, "diff_ns": round(worse, 1), "noise_ns": noise},
        "",
        "regression_min_ns",
    )


def _notes(sa: _Samples, sb: _Samples, options: AnalysisOptions) -> list[str]:
    notes = [
        f"per step means over {sa.words} (A) and {sb.words} (B): each step of each rank is one "
        "sample; host time is self time, device time is counted once, on the op it is "
        "attributed to",
        f"flagged: a worsening per step larger than {options.regression_min_ns / 1e3:g} us, "
        f"than {options.regression_pct:g}% of A, and than {options.noise_sigmas:g} times the "
        "noise: how much a mean of B's steps would move if they varied as A's do (A's "
        "step-to-step spread); an op new in B counts from 0, against the noise of A's step time",
    ]
    notes += [f"A: {c.note}" for c in sa.cut] + [f"B: {c.note}" for c in sb.cut]
    if sa.n < 2:
        notes.append(
            "A has fewer than two steps: no step-to-step noise to judge a change by, so no "
            "change is flagged as a regression"
        )
    return notes


def _gone_note(ops: tuple[OpDelta, ...], shown: int = 5) -> list[str]:
    """What no longer runs in B: the ops only in A, by their time per step in A."""
    gone = sorted(
        (o for o in ops if o.status == GONE), key=lambda o: -(o.a_host_ns + o.a_device_ns)
    )
    if not gone:
        return []
    names = ", ".join(
        f"{o.name} ({(o.a_host_ns + o.a_device_ns) / 1e3:,.1f} us per step)" for o in gone[:shown]
    )
    more = f" and {len(gone) - shown} more" if len(gone) > shown else ""
    return [f"gone in B (run in A, not in B): {names}{more}"]


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
    sa, sb = _samples(a, a_step, options), _samples(b, b_step, options)
    deltas = _op_deltas(sa, sb, options)
    metrics = _metrics(sa, sb)
    ops_flagged = sorted(
        (_op_finding(d, dh, dd, options) for d, dh, dd in deltas if d.regression),
        key=lambda f: -f.value,
    )
    step_flagged = _step_finding(metrics[0], options)
    regressions = ([step_flagged] if step_flagged else []) + ops_flagged
    device = _device_finding(a, b)
    ops = tuple(d for d, _, _ in deltas)
    return DiffReport(
        a_source=tuple(a.sources),
        b_source=tuple(b.sources),
        a_step=a_step,
        b_step=b_step,
        a_steps=sa.steps_per_rank,
        b_steps=sb.steps_per_rank,
        a_ranks=sa.ranks,
        b_ranks=sb.ranks,
        a_samples=sa.n,
        b_samples=sb.n,
        a_sampled=sa.words,
        b_sampled=sb.words,
        metrics=tuple(metrics),
        ops=ops,
        kernels=tuple(_kernel_deltas(sa, sb, options)),
        new_ops=tuple(o.name for o in ops if o.status == NEW),
        vanished_ops=tuple(o.name for o in ops if o.status == GONE),
        regressions=tuple(regressions),
        findings=((device,) if device else ()) + tuple(regressions[: options.top_n]),
        notes=tuple(_notes(sa, sb, options) + _gone_note(ops)),
        cut_steps=sa.cut + sb.cut,
    )
