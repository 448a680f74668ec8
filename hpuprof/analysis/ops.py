"""Ops report: every host op with its host and device time, and every device kernel.

Host time per op name counts like torch's `key_averages()`: an op directly inside an op of the
same name is part of that call (not a second call; its time not counted twice in `total_ns`);
`self_ns` is duration minus direct children.

Device time is the time of the device ops the loader attributed to a host op (`op_row`, see
`hpuprof.trace.derive`): the op that launched them, or, for a lazy-mode graph or an HPU-graph
replay, the graph's own op of the same name. `device_self_ns` is the time attributed to the op
itself; `device_total_ns` adds the time attributed to the ops it calls (each counted once), like
key_averages' self and total device time. Device time that no host op accounts for is reported
as `unattributed_device_ns`, never spread over ops.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from hpuprof.analysis._common import (
    device_events,
    factor,
    host_ops,
    kernel_types,
    records,
    self_time,
    strs,
    without_args,
)
from hpuprof.analysis.options import AnalysisOptions
from hpuprof.trace.model import Trace
from hpuprof.trace.schema import NO_ID

MAX_NESTING = 256
"""Deepest op nesting followed when adding device time to enclosing ops."""


@dataclass(frozen=True)
class OpStats:
    """One host op name (times in ns).

    Args:
        name: the op name.
        calls: calls (an op directly inside an op of the same name is part of that call).
        total_ns, self_ns, mean_ns, max_ns: host time, inclusive and self, per call mean, max.
        device_self_ns: device time attributed to this op itself.
        device_total_ns: device time of this op and the ops it calls (counted once).
        device_ops: device ops attributed to this op itself.
        flops: FLOPs of its device ops (modeled) or, where no device op says, of its shapes.
        fallbacks: calls that ran on CPU for lack of a device kernel.
        shapes, dtype, module, phase: the most common input shapes, dtype, module, phase.
    """

    name: str
    calls: int
    total_ns: int
    self_ns: int
    mean_ns: float
    max_ns: int
    device_self_ns: int
    device_total_ns: int
    device_ops: int
    flops: float
    fallbacks: int
    shapes: str
    dtype: str
    module: str
    phase: str


@dataclass(frozen=True)
class KernelStats:
    """One device op (kernel, copy, engine op) name (times in ns).

    Args:
        op: the host op most of its time is attributed to ("" when none).
        ops: how many host op names it is attributed to.
        pct_of_device: its share of all device time (summed over streams).
    """

    name: str
    kernel_type: str
    engine: str
    count: int
    total_ns: int
    mean_ns: float
    max_ns: int
    pct_of_device: float
    op: str
    ops: int


@dataclass(frozen=True)
class OpRankStats:
    """One host op name on one rank (times in ns; see `OpStats`)."""

    rank: int
    name: str
    calls: int
    total_ns: int
    self_ns: int
    device_self_ns: int
    device_ops: int


@dataclass(frozen=True)
class OpsReport:
    """Result of `analyze_ops`.

    Args:
        ops: every host op name, by device self time then host self time.
        kernels: every device op name, by total time.
        host_self_ns: host self time of all ops (each instant of op work counted once).
        device_ns: device time of all device ops, summed over streams.
        attributed_device_ns: the part attributed to a host op.
        unattributed_device_ns: the part no host op accounts for.
        attribution: how device time reached the ops (launch correlation, lazy graphs, ...).
        by_rank: with several ranks, each op name on each rank (`ops` adds the ranks up);
            empty for one rank.
    """

    ops: tuple[OpStats, ...]
    kernels: tuple[KernelStats, ...]
    host_self_ns: int
    device_ns: int
    attributed_device_ns: int
    unattributed_device_ns: int
    attribution: str
    notes: tuple[str, ...] = field(default_factory=tuple)
    by_rank: tuple[OpRankStats, ...] = ()


@dataclass(frozen=True)
class HostOpTimes:
    """Host op rows with their call flags and times (rows of `host_ops`)."""

    rows: pd.DataFrame
    codes: np.ndarray
    names: np.ndarray
    calls: np.ndarray
    counted_ns: np.ndarray
    self_ns: np.ndarray


def host_op_times(ev: pd.DataFrame) -> HostOpTimes:
    """Per host op row: is it a call of its own, its duration as counted, its self time."""
    host = host_ops(ev)
    codes, names = factor(host["name"])
    ppos = host.index.get_indexer(pd.Index(host["parent"].to_numpy()))
    nested = (ppos >= 0) & (codes[np.maximum(ppos, 0)] == codes) if len(host) else np.zeros(0, bool)
    dur = host["dur_ns"].to_numpy(dtype=np.int64)
    return HostOpTimes(
        rows=host,
        codes=codes,
        names=names,
        calls=~nested,
        counted_ns=np.where(nested, 0, dur),
        self_ns=self_time(ev, host).to_numpy(dtype=np.int64),
    )


def host_op_table(times: HostOpTimes) -> pd.DataFrame:
    """Per op name (index: name code): calls, total, self, max host time (ns)."""
    frame = pd.DataFrame(
        {
            "code": times.codes,
            "calls": times.calls.astype(np.int64),
            "total": times.counted_ns,
            "slf": times.self_ns,
            "dur": times.rows["dur_ns"].to_numpy(dtype=np.int64),
        }
    )
    return frame.groupby("code").agg(
        calls=("calls", "sum"), total=("total", "sum"), slf=("slf", "sum"), mx=("dur", "max")
    )


def _device_per_host_row(
    ev: pd.DataFrame, dev: pd.DataFrame, host: pd.DataFrame
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per host op row: attributed device time (self, total), device op count, device FLOPs."""
    n = len(host)
    op_row = dev["op_row"].to_numpy(dtype=np.int64)
    dur = dev["dur_ns"].to_numpy(dtype=np.int64)
    flops = np.nan_to_num(dev["flops"].to_numpy(dtype=np.float64))
    at = host.index.get_indexer(pd.Index(op_row))
    own = at >= 0
    dev_self = np.bincount(at[own], weights=dur[own], minlength=n).astype(np.int64)
    dev_count = np.bincount(at[own], minlength=n).astype(np.int64)
    dev_flops = np.bincount(at[own], weights=flops[own], minlength=n)
    # inclusive: each attributed device op also counts for every enclosing host op
    dev_total = dev_self.copy()
    parent = ev["parent"].to_numpy(dtype=np.int64)
    cur = op_row[own]
    weight = dur[own]
    for _ in range(MAX_NESTING):
        pos = ev.index.get_indexer(pd.Index(cur))
        ok = pos >= 0
        cur, weight, pos = cur[ok], weight[ok], pos[ok]
        cur = parent[pos]
        keep = cur != NO_ID
        cur, weight = cur[keep], weight[keep]
        if not len(cur):
            break
        hit = host.index.get_indexer(pd.Index(cur))
        np.add.at(dev_total, hit[hit >= 0], weight[hit >= 0])
    return dev_self, dev_total, dev_count, dev_flops


def _most_common(codes: np.ndarray, values: pd.Series, keep: np.ndarray) -> dict[int, str]:
    """Per name code, its most common non-empty value of `values`."""
    vcodes, vnames = factor(values)
    sel = keep & (vcodes >= 0)
    text = np.asarray(vnames, dtype=object)
    nonempty = np.array([bool(str(t)) for t in text] + [False], dtype=bool)
    sel &= nonempty[np.where(vcodes >= 0, vcodes, len(text))]
    if not sel.any():
        return {}
    pairs = pd.DataFrame({"c": codes[sel], "v": vcodes[sel]}).value_counts()
    best = pairs.reset_index().drop_duplicates("c")
    return {int(c): str(text[v]) for c, v in zip(best["c"], best["v"], strict=True)}


def _attribution(ev: pd.DataFrame, dev: pd.DataFrame) -> str:
    has = dev["op_row"].to_numpy() != NO_ID
    if not len(dev):
        return "none (no device ops)"
    if not has.any():
        return "none (no device op is linked to a host op)"
    launches = ev[np.isin(strs(ev["hpu_event"]), ("launch", "graph_replay"))]
    graph_corr = set(launches["correlation"].tolist()) - {NO_ID}
    via_graph = np.isin(dev["correlation"].to_numpy(), list(graph_corr)) & has
    if via_graph.any() and not via_graph[has].all():
        return "launch correlation; graph launches by op name within each graph"
    if via_graph.any():
        return "graph launches: each device op to the graph's op of the same name"
    return "launch correlation: each device op to the innermost op that launched it"


def _by_rank(times: HostOpTimes, dev_self: np.ndarray, dev_count: np.ndarray) -> list[OpRankStats]:
    """Each op name on each rank, by rank then device self and host self time."""
    frame = pd.DataFrame(
        {
            "rank": times.rows["rank"].to_numpy(),
            "code": times.codes,
            "calls": times.calls.astype(np.int64),
            "total": times.counted_ns,
            "slf": times.self_ns,
            "dself": dev_self,
            "dcount": dev_count,
        }
    )
    g = frame.groupby(["rank", "code"], as_index=False).sum()
    g = g.sort_values(["rank", "dself", "slf"], ascending=[True, False, False])
    return [
        OpRankStats(
            int(r["rank"]),
            str(times.names[int(r["code"])]),
            int(r["calls"]),
            int(r["total"]),
            int(r["slf"]),
            int(r["dself"]),
            int(r["dcount"]),
        )
        for r in g.to_dict("records")
    ]


def analyze_ops(trace: Trace, options: AnalysisOptions | None = None) -> OpsReport:
    """Every host op (host self/total time, attributed device self/total time) and kernel."""
    ev = without_args(trace.events)
    dev = device_events(ev)
    times = host_op_times(ev)
    host = times.rows
    notes: list[str] = []
    dev_self, dev_total, dev_count, dev_flops = _device_per_host_row(ev, dev, host)
    host_flops = np.nan_to_num(host["flops"].to_numpy(dtype=np.float64))
    table = host_op_table(times)
    per = (
        pd.DataFrame(
            {
                "code": times.codes,
                "dself": dev_self,
                "dtotal": np.where(times.calls, dev_total, 0),
                "dcount": dev_count,
                "flops": np.where(dev_count > 0, dev_flops, host_flops),
                "fallback": host["fallback"].to_numpy(dtype=bool).astype(np.int64),
            }
        )
        .groupby("code")
        .sum()
    )
    table = table.join(per)
    table = table.sort_values(["dself", "slf", "total"], ascending=False)
    common = {
        col: _most_common(times.codes, host[col], np.ones(len(host), dtype=bool))
        for col in ("input_dims", "dtype", "module", "phase")
    }
    ops = tuple(
        OpStats(
            name=str(times.names[code]),
            calls=int(r["calls"]),
            total_ns=int(r["total"]),
            self_ns=int(r["slf"]),
            mean_ns=round(float(r["total"]) / max(int(r["calls"]), 1), 1),
            max_ns=int(r["mx"]),
            device_self_ns=int(r["dself"]),
            device_total_ns=int(r["dtotal"]),
            device_ops=int(r["dcount"]),
            flops=float(r["flops"]),
            fallbacks=int(r["fallback"]),
            shapes=common["input_dims"].get(int(code), ""),
            dtype=common["dtype"].get(int(code), ""),
            module=common["module"].get(int(code), ""),
            phase=common["phase"].get(int(code), ""),
        )
        for r in records(table, "code")
        for code in (int(r["code"]),)
    )
    kernels = kernel_stats(ev, dev)
    ranks = int(host["rank"].nunique()) if len(host) else 0
    by_rank = _by_rank(times, dev_self, dev_count) if ranks > 1 else []
    if by_rank:
        notes.append(
            f"{ranks} ranks: every op's calls and times are added over the ranks; 'Ops per "
            "rank' gives each rank's own"
        )
    device_ns = int(dev["dur_ns"].sum())
    attributed = int(dev_self.sum())
    if device_ns - attributed > 0:
        share = 100.0 * (device_ns - attributed) / device_ns
        notes.append(
            f"{share:.1f}% of device time has no host op in the trace (no launch link): it "
            "is counted in the kernels, not in any op"
        )
    return OpsReport(
        ops=ops,
        kernels=kernels,
        host_self_ns=int(times.self_ns.sum()),
        device_ns=device_ns,
        attributed_device_ns=attributed,
        unattributed_device_ns=device_ns - attributed,
        attribution=_attribution(ev, dev),
        notes=tuple(notes),
        by_rank=tuple(by_rank),
    )


def kernel_stats(
    ev: pd.DataFrame, dev: pd.DataFrame, ktype: pd.Series | None = None
) -> tuple[KernelStats, ...]:
    """Every device op name, by total time (see `KernelStats`); `ktype`: `kernel_types(dev)`
    when the caller has it."""
    if dev.empty:
        return ()
    codes, names = factor(dev["name"])
    op_codes, op_names = factor(ev["name"])
    pos = ev.index.get_indexer(pd.Index(dev["op_row"].to_numpy(dtype=np.int64)))
    op = np.where(pos >= 0, op_codes[np.maximum(pos, 0)], -1)
    dur = dev["dur_ns"].to_numpy(dtype=np.int64)
    types = (kernel_types(dev) if ktype is None else ktype).to_numpy()
    order = np.argsort(codes, kind="stable")
    first = order[np.unique(codes[order], return_index=True)[1]]
    frame = pd.DataFrame({"code": codes, "dur": dur, "op": op})
    g = frame.groupby("code").agg(n=("dur", "size"), total=("dur", "sum"), mx=("dur", "max"))
    by_op = frame[op >= 0].groupby(["code", "op"])["dur"].sum()
    top_op = by_op.sort_values(ascending=False).reset_index().drop_duplicates("code")
    top = dict(zip(top_op["code"].tolist(), top_op["op"].tolist(), strict=True))
    n_ops = by_op.reset_index().groupby("code").size().to_dict()
    kind_of = dict(zip(codes[first].tolist(), types[first].tolist(), strict=True))
    engines = strs(dev["engine"].iloc[first]).tolist()
    engine_of = dict(zip(codes[first].tolist(), engines, strict=True))
    whole = float(dur.sum()) or 1.0
    g = g.sort_values("total", ascending=False)
    return tuple(
        KernelStats(
            name=str(names[code]),
            kernel_type=str(kind_of[code]),
            engine=str(engine_of[code]),
            count=int(r["n"]),
            total_ns=int(r["total"]),
            mean_ns=round(float(r["total"]) / int(r["n"]), 1),
            max_ns=int(r["mx"]),
            pct_of_device=round(100.0 * float(r["total"]) / whole, 2),
            op=str(op_names[top[code]]) if code in top else "",
            ops=int(n_ops.get(code, 0)),
        )
        for r in records(g, "code")
        for code in (int(r["code"]),)
    )
