"""Mixed-precision report: device time and FLOPs by dtype, bf16 coverage, casts, list misses.

Device dtype comes from the device op's `dataType` arg (Gaudi bridge, our emulator) or else from
the host op that launched it (its first floating input in `input_types`). FLOPs come from
`hpuprof.flops` on device ops, else torch.profiler's `flops` arg, else from shapes for
mm/bmm/addmm/baddbmm/linear/matmul/conv (conv assumes stride 1 and same padding; labelled).
Autocast op lists: gaudi.md 5.1 (Gaudi's default lower-precision and FP32 lists).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from hpuprof.analysis._common import (
    arg_values,
    cat_test,
    device_events,
    device_time_source,
    factor,
    host_ops,
    isin,
    pct,
    strs,
    without_args,
)
from hpuprof.analysis.advice import advise
from hpuprof.analysis.device import TraceDevice, trace_device
from hpuprof.analysis.findings import Finding
from hpuprof.analysis.options import AnalysisOptions
from hpuprof.analysis.report import SUMMED_OVER_RANKS
from hpuprof.gaudi_autocast_lists import DEFAULT_FP32_OPS, DEFAULT_LOWER_OPS
from hpuprof.trace.model import Trace
from hpuprof.trace.opinfo import (
    MATMUL_CONV,
    norm_dtype,
    short_op,
)
from hpuprof.trace.schema import NO_ID

LOWER_PRECISION_OPS = frozenset(DEFAULT_LOWER_OPS)
FP32_OPS = frozenset(DEFAULT_FP32_OPS)
LOW = ("bf16", "fp16", "fp8")
SILENT = {("fp64", "fp32"), ("int64", "int32"), ("float64", "float32")}


@dataclass(frozen=True)
class DtypeRow:
    """Device time and FLOPs of one dtype."""

    dtype: str
    device_time_ns: int
    flops: float
    ops: int


@dataclass(frozen=True)
class OpDtypeRow:
    """One op (or module) in one dtype."""

    name: str
    dtype: str
    count: int
    device_time_ns: int
    host_time_ns: int
    flops: float


@dataclass(frozen=True)
class CastRow:
    """Casts from one dtype to another, where they were inserted."""

    dtype_from: str
    dtype_to: str
    count: int
    time_ns: int
    where: tuple[str, ...]


@dataclass(frozen=True)
class PrecisionReport:
    """Result of `analyze_precision`.

    `bf16_coverage_pct`: share of matmul/conv FLOPs in bf16/fp16/fp8;
    `low_precision_time_pct`: share of device time (of known dtype) in those dtypes.
    """

    by_dtype: tuple[DtypeRow, ...]
    by_op: tuple[OpDtypeRow, ...]
    by_module: tuple[OpDtypeRow, ...]
    matmul_conv_flops: float = field(metadata=SUMMED_OVER_RANKS)
    bf16_coverage_pct: float
    casts: tuple[CastRow, ...]
    to_copy_ops: int = field(metadata=SUMMED_OVER_RANKS)
    missed_lower_precision: tuple[OpDtypeRow, ...]
    fp32_list_in_low_precision: tuple[OpDtypeRow, ...]
    silent_dtype_changes: tuple[CastRow, ...]
    flops_source: str
    low_precision_time_pct: float | None = None
    findings: tuple[Finding, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)


def _autocast_decided(ev: pd.DataFrame, host: pd.DataFrame) -> np.ndarray:
    """Host ops whose dtype an autocast policy decides: called by user code in forward.

    Backward ops follow their forward's dtypes, optimizer updates run outside autocast, and
    an op nested in another host op is its decomposition (the outer op's list applies).
    """
    phase = strs(host["phase"])
    parent = host["parent"].to_numpy(dtype=np.int64)
    has_parent = parent != NO_ID
    parent_kind = np.full(len(host), "", dtype=object)
    parent_name = np.full(len(host), "", dtype=object)
    if has_parent.any():
        at = ev.index.get_indexer(pd.Index(parent[has_parent]))
        found = at >= 0
        idx = np.flatnonzero(has_parent)[found]
        parent_kind[idx] = strs(ev["kind"].iloc[at[found]])
        parent_name[idx] = strs(ev["name"].iloc[at[found]])
    in_optimizer = np.array([str(n).startswith("Optimizer.") for n in parent_name], dtype=bool)
    return ~np.isin(phase, ("bwd", "optimizer")) & (parent_kind != "cpu_op") & ~in_optimizer


def _by(frame: pd.DataFrame, key: np.ndarray, names: np.ndarray) -> list[OpDtypeRow]:
    """Rows of `frame` (dtype, dur, dev, flops) grouped by (name code, dtype)."""
    if frame.empty:
        return []
    g = (
        frame.assign(_k=key)
        .groupby(["_k", "dtype"])
        .agg(n=("dur", "size"), dev=("dev", "sum"), host=("dur", "sum"), fl=("flops", "sum"))
    )
    g = g.sort_values(["dev", "host"], ascending=False)
    keys: list[tuple[Any, Any]] = list(g.index)
    return [
        OpDtypeRow(str(names[k[0]]), str(k[1]), int(n), int(dv), int(hs), float(fl))
        for k, n, dv, hs, fl in zip(keys, g["n"], g["dev"], g["host"], g["fl"], strict=True)
    ]


def _casts(full: pd.DataFrame, ev: pd.DataFrame) -> tuple[list[CastRow], list[CastRow]]:
    """Cast events (ours: `hpuprof.dtype_from/to`) grouped, and the silent narrowings."""
    cast_rows = ev[isin(ev["hpu_event"], ("cast",))]
    if cast_rows.empty:
        return [], []
    cf = pd.DataFrame(
        {
            "f": [norm_dtype(x or "?") for x in arg_values(full, "dtype_from", cast_rows.index)],
            "t": [norm_dtype(x or "?") for x in arg_values(full, "dtype_to", cast_rows.index)],
            "dur": cast_rows["dur_ns"].to_numpy(),
            "where": strs(cast_rows["module"]),
        }
    )
    casts: list[CastRow] = []
    silent: list[CastRow] = []
    for (f, t), g in cf.groupby(["f", "t"]):
        where = tuple(sorted({w for w in g["where"] if w}))[:10]
        casts.append(CastRow(str(f), str(t), len(g), int(g["dur"].sum()), where))
        if (f, t) in SILENT:
            silent.append(CastRow(str(f), str(t), len(g), int(g["dur"].sum()), ()))
    return casts, silent


def _low_share(by_dtype: tuple[DtypeRow, ...]) -> float | None:
    """Share of device time (of a known dtype) spent in bf16 / fp16 / fp8; None if unknown."""
    known = [r for r in by_dtype if r.dtype != "unknown"]
    total = sum(r.device_time_ns for r in known)
    return pct(sum(r.device_time_ns for r in known if r.dtype in LOW), total) if total else None


def analyze_precision(trace: Trace, options: AnalysisOptions | None = None) -> PrecisionReport:
    """Device time and FLOPs by dtype, per op and module; coverage, casts, list misses.

    Reads the loader's `dtype`, `flops` and `op_row` columns (device time per host op is the
    time of the device ops attributed to it, lazy graphs included); no raw args.
    """
    options = options or AnalysisOptions()
    full = trace.events
    ev = without_args(full)
    host = host_ops(ev)
    dev = device_events(ev)
    notes: list[str] = []
    host_dtype = strs(host["dtype"])
    mm = cat_test(host["name"], lambda n: short_op(n) in MATMUL_CONV)
    host_flops = np.where(mm, np.nan_to_num(host["flops"].to_numpy(dtype=np.float64)), 0.0)
    dtype_dev = strs(dev["dtype"])
    dev_flops_raw = dev["flops"].to_numpy(dtype=np.float64)
    dev_flops = np.nan_to_num(dev_flops_raw)
    hpos = host.index.get_indexer(pd.Index(dev["op_row"].to_numpy()))
    if np.isfinite(dev_flops_raw).any():
        flops_source = "device ops (hpuprof.flops)"
        if device_time_source(trace) == "modeled":
            flops_source += ", modeled"
    elif host_flops.sum() > 0:
        flops_source = "host op shapes / torch.profiler flops"
        notes.append("conv FLOPs from shapes assume stride 1 and same padding")
    else:
        flops_source = "none"
    use_dev_flops = flops_source.startswith("device")
    # by dtype
    d = pd.DataFrame(
        {
            "dtype": np.where(dtype_dev == "", "unknown", dtype_dev),
            "dur": dev["dur_ns"].to_numpy(),
            "flops": dev_flops,
        }
    )
    h = pd.DataFrame(
        {
            "dtype": np.where(host_dtype == "", "unknown", host_dtype),
            "dur": host["dur_ns"].to_numpy(),
            "flops": host_flops if not use_dev_flops else 0.0,
        }
    )
    # device time (and flops) per host op: sum over its device rows
    own = hpos >= 0
    h["dev"] = np.bincount(
        hpos[own], weights=dev["dur_ns"].to_numpy()[own], minlength=len(host)
    ).astype(np.int64)
    if use_dev_flops:
        h["flops"] = np.bincount(hpos[own], weights=dev_flops[own], minlength=len(host))
    by_dtype_dev = d.groupby("dtype").agg(t=("dur", "sum"), f=("flops", "sum"), n=("dur", "size"))
    if not use_dev_flops:
        hf = h.groupby("dtype")["flops"].sum()
        by_dtype_dev = by_dtype_dev.join(hf.rename("hf"), how="outer").fillna(0)
        by_dtype_dev["f"] = by_dtype_dev["hf"]
    by_dtype = tuple(
        DtypeRow(str(k), int(r["t"]), float(r["f"]), int(r["n"]))
        for k, r in by_dtype_dev.sort_values("t", ascending=False).iterrows()
    )
    ncodes, names = factor(host["name"])
    op_rows = _by(h, ncodes, names)
    mcodes, modules = factor(host["module"])
    has_mod = strs(host["module"]) != ""
    mod_rows = _by(h[has_mod], mcodes[has_mod], modules)
    mm_flops = float(h["flops"].to_numpy()[mm].sum())
    low = mm & np.isin(h["dtype"].to_numpy(), LOW)
    low_flops = float(h["flops"].to_numpy()[low].sum())
    if not mm_flops and use_dev_flops:  # lazy/compiled graphs: device ops belong to a launch
        mme = isin(dev["engine"], ("MME",))
        mm_flops = float(dev_flops[mme].sum())
        low_flops = float(dev_flops[mme & np.isin(dtype_dev, LOW)].sum())
    coverage = pct(low_flops, mm_flops)
    casts, silent = _casts(full, ev)
    to_copy = int(isin(host["name"], ("aten::_to_copy", "aten::to")).sum())
    # autocast decides an op's dtype where user code calls it: not for backward or optimizer
    # ops, nor for ops nested in another op (log_softmax inside cross_entropy, on the fp32 list)
    decided = _autocast_decided(ev, host)
    decided_rows = _by(h[decided], ncodes[decided], names)
    missed = [
        r for r in decided_rows if short_op(r.name) in LOWER_PRECISION_OPS and r.dtype == "fp32"
    ]
    risky = [r for r in decided_rows if short_op(r.name) in FP32_OPS and r.dtype in LOW]
    rep = PrecisionReport(
        by_dtype=by_dtype,
        by_op=tuple(op_rows[: options.top_n * 4]),
        by_module=tuple(mod_rows[: options.top_n * 4]),
        matmul_conv_flops=mm_flops,
        bf16_coverage_pct=coverage,
        low_precision_time_pct=_low_share(by_dtype),
        casts=tuple(casts),
        to_copy_ops=to_copy,
        missed_lower_precision=tuple(missed),
        fp32_list_in_low_precision=tuple(risky),
        silent_dtype_changes=tuple(silent),
        flops_source=flops_source,
        notes=tuple(notes),
    )
    return replace(rep, findings=tuple(precision_findings(rep, trace_device(trace), options)))


def precision_findings(
    rep: PrecisionReport, device: TraceDevice, options: AnalysisOptions
) -> list[Finding]:
    """Low bf16 coverage, lower-precision-list ops left in fp32, FP32-list ops in low
    precision, and silent dtype narrowings (Gaudi's autocast lists: Gaudi traces only)."""
    out: list[Finding] = []
    has_low = any(r.dtype in LOW for r in rep.by_dtype)
    autocast = advise("autocast", device)
    lower_list = advise("lower_precision_list", device)
    fp32_list = advise("fp32_list", device)
    silent = advise("silent_dtype", device)
    if (
        rep.matmul_conv_flops > 0
        and rep.bf16_coverage_pct < options.bf16_coverage_warn_pct
        and autocast is not None
    ):
        out.append(
            Finding(
                "warning" if has_low else "info",
                "precision",
                f"only {rep.bf16_coverage_pct:.0f}% of matmul/conv FLOPs run in bf16/fp16",
                "bf16_coverage_pct",
                rep.bf16_coverage_pct,
                options.bf16_coverage_warn_pct,
                {"matmul_conv_flops": rep.matmul_conv_flops},
                autocast,
                "bf16_coverage_warn_pct",
            )
        )
    if rep.missed_lower_precision and has_low and lower_list is not None:
        names = sorted({r.name for r in rep.missed_lower_precision})
        t = sum(r.device_time_ns or r.host_time_ns for r in rep.missed_lower_precision)
        out.append(
            Finding(
                "warning",
                "precision",
                f"{len(names)} ops on Gaudi's lower-precision list still run in fp32 "
                f"({t / 1e6:.2f} ms): {', '.join(names[:5])}",
                "missed_lower_precision_ns",
                t,
                0.0,
                {"ops": names},
                lower_list,
            )
        )
    if rep.fp32_list_in_low_precision and fp32_list is not None:
        names = sorted({r.name for r in rep.fp32_list_in_low_precision})
        out.append(
            Finding(
                "warning",
                "precision",
                f"{len(names)} ops on Gaudi's FP32 list run in low precision (numerical risk): "
                f"{', '.join(names[:5])}",
                "fp32_ops_in_low_precision",
                len(names),
                0.0,
                {"ops": names},
                fp32_list,
            )
        )
    for s in rep.silent_dtype_changes:
        if silent is None:
            break
        out.append(
            Finding(
                "info",
                "precision",
                f"silent dtype change {s.dtype_from} -> {s.dtype_to} x{s.count}",
                "silent_dtype_changes",
                s.count,
                0.0,
                {"from": s.dtype_from, "to": s.dtype_to},
                silent,
            )
        )
    return out
