"""Fallback report: each op that ran on CPU because the device has no kernel for it, or none
for the dtype it was called with (`op_support`: an op with HPU kernels for other dtypes is
supported; its finding names the dtype that fell back)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

import numpy as np
import orjson
import pandas as pd

from hpuprof.analysis._common import (
    arg_values,
    cat_test,
    host_ops,
    is_fallback,
    isin,
    steps_in,
    strs,
    without_args,
)
from hpuprof.analysis.advice import advise
from hpuprof.analysis.device import TraceDevice, trace_device
from hpuprof.analysis.findings import Finding, Severity
from hpuprof.analysis.op_support import op_support, tensor_dtypes
from hpuprof.analysis.options import AnalysisOptions
from hpuprof.analysis.report import SUMMED_OVER_RANKS
from hpuprof.trace.model import Trace
from hpuprof.trace.schema import NO_ID

COPY_RE = r"copy|_to_copy|aten::to$|memcpy|synMemCopy"


@dataclass(frozen=True)
class FallbackOp:
    """One op that fell back to CPU.

    Args:
        op: the ATen op (`hpuprof.op`, else the event name).
        count: times it fell back.
        host_time_ns: host time spent in it (including its copies).
        copies: device<->host copies nested inside the fallbacks.
        steps: steps where it happened.
        forced_flush: how many of its fallbacks were preceded by a lazy flush
            with reason `cpu fallback`.
        dtypes: the input dtypes it fell back with (from `input_types`; empty when unrecorded).
        hpu_dtypes: the dtypes the op has HPU kernels for (`op_support`), empty when it has
            none or the table does not know it.
        unsupported_dtypes: those of `dtypes` it has no HPU kernel for: when the op has HPU
            kernels (`hpu_dtypes`), the fallback is one of a dtype, not of the op.
    """

    op: str
    count: int
    host_time_ns: int
    copies: int
    steps: tuple[int, ...]
    forced_flush: int
    dtypes: tuple[str, ...] = ()
    hpu_dtypes: tuple[str, ...] = ()
    unsupported_dtypes: tuple[str, ...] = ()

    @property
    def dtype_fallback(self) -> bool:
        """The op has HPU kernels, not for (some of) the dtypes it fell back with."""
        return bool(self.hpu_dtypes and self.unsupported_dtypes)


def _types_list(text: str) -> list[object]:
    try:
        got = orjson.loads(text) if text else []
    except orjson.JSONDecodeError:
        return []
    return got if isinstance(got, list) else []


def _fallback_types(ev: pd.DataFrame, rows: pd.DataFrame, ops: list[str]) -> list[str]:
    """The recorded input types of each fallback (JSON text): its own, else those of the host
    op of the same name on its rank that started last by the fallback's end (lazy mode records
    the op when traced and runs it on CPU at the flush)."""
    own = strs(rows["input_types"]).copy()
    host = host_ops(ev)
    host = host[strs(host["input_types"]) != ""]
    if host.empty or all(own):
        return [str(t) for t in own]
    frame = pd.DataFrame(
        {
            "op": ops,
            "rank": rows["rank"].to_numpy(),
            "end": rows["ts_ns"].to_numpy() + rows["dur_ns"].to_numpy(),
            "missing": own == "",
        }
    )
    names = strs(host["name"])
    ranks = host["rank"].to_numpy()
    for (op, rank), grp in frame[frame["missing"]].groupby(["op", "rank"]):
        same = host[(names == op) & (ranks == rank)].sort_values("ts_ns", kind="stable")
        if same.empty:
            continue
        ts = same["ts_ns"].to_numpy()
        k = np.searchsorted(ts, grp["end"].to_numpy(), side="right") - 1
        types = strs(same["input_types"])
        own[grp.index.to_numpy()] = np.where(k >= 0, types[np.maximum(k, 0)], "")
    return [str(t) for t in own]


@dataclass(frozen=True)
class FallbackReport:
    """Result of `analyze_fallbacks`."""

    total: int = field(metadata=SUMMED_OVER_RANKS)
    host_time_ns: int = field(metadata=SUMMED_OVER_RANKS)
    ops: tuple[FallbackOp, ...]
    findings: tuple[Finding, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)


def _correlated_device_copies(ev: pd.DataFrame, rows: pd.DataFrame) -> pd.Series:
    """Device memcpy events per fallback row, joined on (rank, correlation)."""
    linked = rows[rows["correlation"].to_numpy() != NO_ID]
    device_copies = ev[isin(ev["kind"], ("memcpy",)) & (ev["correlation"].to_numpy() != NO_ID)]
    if linked.empty or device_copies.empty:
        return pd.Series(dtype=np.int64)
    keys = pd.DataFrame(
        {"row": linked.index, "rank": linked["rank"].to_numpy(), "corr": linked["correlation"]}
    )
    per_key = (
        pd.DataFrame(
            {"rank": device_copies["rank"].to_numpy(), "corr": device_copies["correlation"]}
        )
        .value_counts()
        .rename("n")
        .reset_index()
    )
    joined = keys.merge(per_key, on=["rank", "corr"], how="inner")
    return pd.Series(joined["n"].to_numpy(), index=joined["row"].to_numpy())


def analyze_fallbacks(trace: Trace, options: AnalysisOptions | None = None) -> FallbackReport:
    """Per-op CPU fallbacks: count, host time, copies, steps, forced flushes."""
    options = options or AnalysisOptions()
    full = trace.events
    ev = without_args(full)
    rows = ev[is_fallback(ev) & ~ev["is_device"].to_numpy(dtype=bool)]
    # a fallback marker nested in another fallback row counts once (the outermost)
    par = rows["parent"].to_numpy()
    rows = rows[~np.isin(par, rows.index.to_numpy())]
    if rows.empty:
        return FallbackReport(0, 0, ())
    ops = [
        str(op or n)
        for op, n in zip(
            arg_values(full, "aten_op", rows.index), strs(rows["name"]).tolist(), strict=True
        )
    ]
    # copies: descendants (children and grandchildren) whose name looks like a copy
    idx = rows.index.to_numpy()
    parent = ev["parent"].to_numpy()
    child = np.isin(parent, idx)
    grand_parent = pd.Series(parent, index=ev.index).reindex(parent[parent != NO_ID])
    gp = np.full(len(ev), NO_ID, dtype=np.int64)
    has = parent != NO_ID
    gp[has] = grand_parent.fillna(NO_ID).to_numpy(dtype=np.int64)
    grandchild = np.isin(gp, idx)
    owner = np.where(child, parent, np.where(grandchild, gp, NO_ID))
    copy_re = re.compile(COPY_RE)
    is_copy = cat_test(ev["name"], lambda n: copy_re.search(n) is not None)
    sel = (owner != NO_ID) & is_copy
    copies = pd.Series(1, index=owner[sel]).groupby(level=0).sum() if sel.any() else pd.Series()
    # copies modeled on the device (the emulator, a real Gaudi's DMA lanes): memcpy events that
    # share the fallback's launch correlation
    copies = copies.add(_correlated_device_copies(ev, rows), fill_value=0)
    # flushes forced by a fallback: attribute each to the next fallback on its rank
    flush = ev[isin(ev["flush_reason"], ("cpu fallback",))]
    forced = np.zeros(len(rows), dtype=np.int64)
    for rank, fr in flush.groupby("rank"):
        rmask = rows["rank"].to_numpy() == rank
        pos = np.flatnonzero(rmask)
        ts = rows["ts_ns"].to_numpy()[pos]
        order = np.argsort(ts)
        k = np.searchsorted(ts[order], fr["ts_ns"].to_numpy(), side="left")
        k = k[k < pos.size]
        np.add.at(forced, pos[order][k], 1)
    frame = pd.DataFrame(
        {
            "op": ops,
            "types": _fallback_types(ev, rows, ops),
            "dur": rows["dur_ns"].to_numpy(),
            "step": rows["step"].to_numpy(),
            "copies": copies.reindex(idx, fill_value=0).to_numpy(dtype=np.int64),
            "forced": np.minimum(forced, 1),
        }
    )
    out = []
    for op, g in frame.groupby("op"):
        dtypes = tensor_dtypes([t for text in g["types"].unique() for t in _types_list(text)])
        hpu = op_support(str(op)).dtypes
        out.append(
            FallbackOp(
                op=str(op),
                count=len(g),
                host_time_ns=int(g["dur"].sum()),
                copies=int(g["copies"].sum()),
                steps=steps_in(g["step"].tolist()),
                forced_flush=int(g["forced"].sum()),
                dtypes=dtypes,
                hpu_dtypes=hpu,
                unsupported_dtypes=tuple(d for d in dtypes if d not in hpu) if hpu else (),
            )
        )
    out.sort(key=lambda o: (-o.host_time_ns, o.op))
    rep = FallbackReport(len(rows), int(frame["dur"].sum()), tuple(out))
    device = trace_device(trace)
    findings = [
        f for o in out[: options.top_n] if (f := _fallback_finding(o, device, options)) is not None
    ]
    return replace(rep, findings=tuple(findings))


def _fallback_finding(
    o: FallbackOp, device: TraceDevice, options: AnalysisOptions
) -> Finding | None:
    """One op's finding: a dtype fallback (the op has HPU kernels, not for that dtype) is a
    warning naming the dtype; an op without any HPU kernel is critical from
    `options.fallback_critical` fallbacks on."""
    what = f"{o.count} times ({o.host_time_ns / 1e6:.2f} ms host, {o.copies} copies, {o.forced_flush} forced flushes)"
    evidence = {"op": o.op, "steps": list(o.steps[:20]), "copies": o.copies}
    if o.dtype_fallback:
        fell = ", ".join(o.unsupported_dtypes)
        supported = ", ".join(o.hpu_dtypes)
        advice = advise("fallback_dtype", device, op=o.op, dtype=fell, supported=supported)
        title = f"{o.op} fell back to CPU for {fell} inputs {what}; the op itself is supported on HPU ({supported})"
        evidence |= {
            "fell_back_dtypes": list(o.unsupported_dtypes),
            "hpu_dtypes": list(o.hpu_dtypes),
        }
        severity: Severity = "warning"
    else:
        advice = advise("fallback", device, op=o.op)
        title = f"{o.op} fell back to CPU {what}"
        severity = "critical" if o.count >= options.fallback_critical else "warning"
        if o.dtypes:
            evidence["dtypes"] = list(o.dtypes)
    if advice is None:
        return None
    return Finding(severity, "fallback", title, "fallback_count", o.count, 0.0, evidence, advice)
