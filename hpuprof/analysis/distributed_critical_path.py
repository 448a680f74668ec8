"""The lightweight critical path of a step on one rank (HTA 0.5.0's definition), as data.

HTA's `critical_path_analysis` (hta/analyzers/critical_path_analysis.py) builds a DAG whose
nodes are the start and end of every host op / runtime call and device op of a step, and takes
its longest path. We build the same graph on one rank's events table:

- host ops (`cpu_op`, runtime calls, our emulator's runtime events) starting inside the step
  window with a positive duration; per thread they nest by time, and the graph walks each
  thread's call stack depth first: an edge from the last node to each start and end, weighted
  by the time between them; consecutive top-level ops are joined by zero-weight dependency edges
  (the time between them is not on the path); the exit edge of a blocking call
  (cudaStreamSynchronize, cudaMemcpy, ...) weighs 0 (its wait is the sync edge below);
- device ops launched from inside the window: an edge over each op (its duration); a launch
  edge from its runtime call's start when the stream was empty at the launch and the op started
  after the previous op of its stream ended, else a kernel-kernel edge from the previous op's
  end (the gap between them);
- sync edges of weight 0: "Stream Sync" / "Context Sync" from the last op of the stream(s) to
  the end of the runtime call; "Event Sync" from the op launched last on the recorded stream
  before the matching cudaEventRecord; "Stream Wait Event" from that op to the next op launched
  on the waiting stream.

Each path edge is attributed to an event (HTA's rules: a span to its op, a gap between nested
ops to their parent, a kernel-kernel gap to the earlier op) and classed as cpu_bound,
compute_bound, communication_bound, kernel_kernel_overhead or launch_overhead (HTA's
`bound_by`: cpu_bound, gpu_compute_bound, gpu_communication_bound, gpu_kernel_kernel_overhead,
gpu_kernel_launch_overhead). Differences: negative edge weights (clock jitter) count as 0
where HTA rejects the graph; ties between equally long paths may resolve differently.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Final

import numpy as np
import pandas as pd

from hpuprof.analysis._common import arg_values, ends, isin, kernel_types, strs, without_args
from hpuprof.analysis.distributed_streams import by_int, device_rows, launches
from hpuprof.trace.schema import NO_ID

EDGE_KINDS: Final = (
    "operator",
    "dependency",
    "kernel_launch_delay",
    "kernel_kernel_delay",
    "sync_dependency",
)
OPERATOR, DEPENDENCY, LAUNCH, KERNEL_KERNEL, SYNC = range(len(EDGE_KINDS))
BOUND_BY: Final = (
    "cpu_bound",
    "compute_bound",
    "communication_bound",
    "kernel_kernel_overhead",
    "launch_overhead",
)
BLOCKING_CALLS: Final = frozenset(
    {
        "cudaDeviceSynchronize",
        "cudaStreamSynchronize",
        "cudaEventQuery",
        "cudaEventSynchronize",
        "cudaMemcpy",
        "cudaMemcpyAsync",
        "hipDeviceSynchronize",
        "hipStreamSynchronize",
        "hipEventSynchronize",
        "hipMemcpy",
    }
)
"""HTA's BLOCKING_SYNC_CALLS (and their ROCm names): their exit edge weighs nothing."""
HOST_KINDS: Final = ("cpu_op", "runtime", "hpu_runtime")
MAX_STEPS: Final = 8
"""Steps per rank whose critical path is computed: all up to this many, else this many evenly
spaced from the first to the last (the path costs a graph walk over every event of a step)."""


@dataclass(frozen=True)
class CriticalPathRow:
    """The critical path of one step on one rank: its length and shares by bound (in %)."""

    rank: int
    step: int
    length_ns: int
    edges: int
    cpu_bound_pct: float
    compute_bound_pct: float
    communication_bound_pct: float
    kernel_kernel_overhead_pct: float
    launch_overhead_pct: float


@dataclass(frozen=True)
class CriticalEdge:
    """One edge of a critical path, for a timeline overlay.

    Args:
        src_event, dst_event: row labels (in the events table analysed: positions for a
            one-rank trace) of the events whose start or end the edge joins; src_ts_ns /
            dst_ts_ns: those instants.
        kind: one of EDGE_KINDS. bound_by: one of BOUND_BY, "" for zero-weight edges.
        event: the row the edge's time is attributed to (NO_ID for none); name: its name.
    """

    rank: int
    step: int
    src_event: int
    dst_event: int
    src_ts_ns: int
    dst_ts_ns: int
    kind: str
    weight_ns: int
    bound_by: str
    event: int
    name: str


class _Graph:
    """Nodes 2k (start) and 2k+1 (end) of the k-th selected event; edges in three lists."""

    def __init__(self, ts: np.ndarray, end: np.ndarray) -> None:
        self.ts_array = ts.astype(np.int64, copy=False)
        self.end_array = end.astype(np.int64, copy=False)
        self.ts: list[int] = self.ts_array.tolist()
        self.end: list[int] = self.end_array.tolist()
        self.src: list[int] = []
        self.dst: list[int] = []
        self.weight: list[int] = []
        self.kind: list[int] = []
        self.attr: list[int] = []  # selected-event index the weight is attributed to, or -1
        self.bulk: list[tuple[np.ndarray, ...]] = []  # (src, dst, weight, kind, attr) arrays

    def add_many(
        self, src: np.ndarray, dst: np.ndarray, kind: np.ndarray, attr: np.ndarray, zero: np.ndarray
    ) -> None:
        """Many edges at once (arrays); weights from the node times, 0 where `zero`."""
        ts, end = self.ts_array, self.end_array
        t_src = np.where(src & 1, end[src >> 1], ts[src >> 1])
        t_dst = np.where(dst & 1, end[dst >> 1], ts[dst >> 1])
        weight = np.where(zero | (kind == DEPENDENCY) | (kind == SYNC), 0, t_dst - t_src)
        self.bulk.append((src, dst, np.maximum(weight, 0), kind, attr))

    def freeze(self) -> None:
        """Fold the bulk arrays into the edge lists (edge ids: list order)."""
        for src, dst, weight, kind, attr in self.bulk:
            self.src += src.tolist()
            self.dst += dst.tolist()
            self.weight += weight.tolist()
            self.kind += kind.tolist()
            self.attr += attr.tolist()
        self.bulk = []

    def node_ts(self, node: int) -> int:
        k = node >> 1
        return self.end[k] if node & 1 else self.ts[k]

    def add(self, src: int, dst: int, kind: int, attr: int = -1, zero: bool = False) -> None:
        if zero or kind in (DEPENDENCY, SYNC):
            weight = 0
        else:
            ts, end = self.ts, self.end
            weight = (end[dst >> 1] if dst & 1 else ts[dst >> 1]) - (
                end[src >> 1] if src & 1 else ts[src >> 1]
            )
            weight = weight if weight > 0 else 0
        self.src.append(src)
        self.dst.append(dst)
        self.weight.append(weight)
        self.kind.append(kind)
        self.attr.append(attr)

    def longest_path(self) -> list[int]:
        """Edge indices of a longest path (topological dynamic programming)."""
        self.freeze()
        n = 2 * len(self.ts)
        if not self.src:
            return []
        src = np.asarray(self.src, dtype=np.int64)
        dst = np.asarray(self.dst, dtype=np.int64)
        order = np.argsort(src, kind="stable")
        start = np.searchsorted(src[order], np.arange(n + 1)).tolist()
        out_edges = order.tolist()
        dsts = dst.tolist()
        weights = self.weight
        indeg = np.bincount(dst, minlength=n).tolist()
        dist = [0] * n
        best_in = [-1] * n
        queue = [v for v in range(n) if indeg[v] == 0]
        for u in queue:  # the list grows as nodes become ready
            du = dist[u]
            for k in range(start[u], start[u + 1]):
                e = out_edges[k]
                v = dsts[e]
                cand = du + weights[e]
                if best_in[v] < 0 or cand > dist[v]:
                    dist[v] = cand
                    best_in[v] = e
                indeg[v] -= 1
                if indeg[v] == 0:
                    queue.append(v)
        if len(queue) < n:  # a cycle: cannot happen with forward-in-time edges; be safe
            return []
        node = int(np.argmax(dist))
        path: list[int] = []
        while best_in[node] >= 0:
            e = best_in[node]
            path.append(e)
            node = self.src[e]
        path.reverse()
        return path


def _host_edges(g: _Graph, lanes: np.ndarray, blocking: np.ndarray, count: int) -> None:
    """Edges of a depth-first walk of each thread's call stack over host events 0..count-1.

    The walk visits every start and end of a thread in time order (an end before a start at the
    same time; the outer of two starts, the inner of two ends first), which is HTA's call stack
    (`hta/common/call_stack.py`) walked by its enter/exit callbacks: an edge from each node to
    the next, except into a top-level start, which gets a zero-weight dependency edge from the
    previous top-level end. `lanes`: an integer per event naming its thread.
    """
    if count == 0:
        return
    ts = g.ts_array[:count]
    end = g.end_array[:count]
    k = np.arange(count, dtype=np.int64)
    node = np.concatenate([2 * k, 2 * k + 1])
    is_end = node & 1
    event = node >> 1
    time = np.where(is_end, end[event], ts[event])
    tie = np.where(is_end, -ts[event], -end[event])
    order = np.lexsort((node, tie, 1 - is_end, time, lanes[event]))
    seq = node[order]
    seq_event = seq >> 1
    seq_end = (seq & 1).astype(bool)
    depth_after = np.cumsum(np.where(seq_end, -1, 1))
    depth_before = depth_after - np.where(seq_end, -1, 1)
    parent = _parents(seq, seq_end, depth_before, count)
    same_lane = lanes[seq_event[:-1]] == lanes[seq_event[1:]]
    src, dst = seq[:-1], seq[1:]
    dst_end = seq_end[1:]
    src_end = seq_end[:-1]
    top_start = ~dst_end & (depth_before[1:] == 0)
    dep = same_lane & top_start & src_end
    op = same_lane & ~top_start
    attr = np.where(~src_end, src >> 1, np.where(dst_end, dst >> 1, parent[src >> 1]))
    zero = dst_end & blocking[dst >> 1]
    g.add_many(
        src[op], dst[op], np.full(int(op.sum()), OPERATOR), attr[op], zero[op]
    )  # fmt: skip
    n_dep = int(dep.sum())
    g.add_many(
        src[dep], dst[dep], np.full(n_dep, DEPENDENCY), np.full(n_dep, -1), np.ones(n_dep, bool)
    )  # fmt: skip


def _parents(
    seq: np.ndarray, seq_end: np.ndarray, depth_before: np.ndarray, count: int
) -> np.ndarray:
    """The enclosing event of each host event (-1 at top level), from the walk's depths: the
    parent of a start at depth d is the last start at depth d-1 before it."""
    parent = np.full(count, -1, dtype=np.int64)
    starts = np.flatnonzero(~seq_end)
    depth = depth_before[starts]
    for d in range(1, int(depth.max(initial=0)) + 1):
        openers = starts[depth == d - 1]
        inner = starts[depth == d]
        if openers.size == 0 or inner.size == 0:
            continue
        at = np.searchsorted(openers, inner) - 1
        ok = at >= 0
        parent[seq[inner[ok]] >> 1] = seq[openers[at[ok]]] >> 1
    return parent


def _select(
    ev: pd.DataFrame, pairs: pd.DataFrame, start: int, end: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(host nodes, device nodes) of the window."""
    ts = ev["ts_ns"].to_numpy(dtype=np.int64)
    dur = ev["dur_ns"].to_numpy(dtype=np.int64)
    host_mask = ~ev["is_device"].to_numpy(dtype=bool) & isin(ev["kind"], HOST_KINDS)
    host_mask &= isin(ev["ph"], ("X",)) & (dur > 0) & (ts >= start) & (ts <= end)
    host = ev[host_mask]
    launched = pairs[(pairs["cpu_ts"] >= start) & (pairs["cpu_ts"] <= end)]
    launched = launched[launched["cpu_end"] > launched["cpu_ts"]]
    dev = ev.loc[np.unique(launched["dev_row"].to_numpy())]
    return host, dev


def _queue_gate(pairs: pd.DataFrame) -> pd.Series:
    """Per device row: True when its stream was empty at its launch and nothing else was queued
    when it started (HTA's `queue_length_runtime == 1 and queue_length == 0`)."""
    n = len(pairs)
    if n == 0:
        return pd.Series(dtype=bool)
    frame = pd.DataFrame(
        {
            "stream": np.concatenate([pairs["stream"].to_numpy()] * 2),
            "ts": np.concatenate([pairs["cpu_ts"].to_numpy(), pairs["dev_ts"].to_numpy()]),
            "delta": np.concatenate([np.ones(n, np.int64), -np.ones(n, np.int64)]),
            "pos": np.concatenate([np.arange(n), np.arange(n)]),
        }
    ).sort_values(["stream", "ts", "delta"], ascending=[True, True, False], kind="stable")
    frame["queue"] = frame.groupby("stream")["delta"].cumsum()
    launch_q = frame[frame["delta"] > 0].groupby("pos")["queue"].first()
    start_q = frame[frame["delta"] < 0].set_index("pos")["queue"]
    per = pairs.assign(
        _lq=launch_q.reindex(np.arange(n)).to_numpy(), _sq=start_q.reindex(np.arange(n)).to_numpy()
    )
    # one launch may feed several device ops (a Gaudi recipe): its own queued ops do not count
    group = per.groupby("correlation")
    size = group["dev_ts"].transform("size").to_numpy()
    order = group["dev_ts"].rank(method="first").to_numpy().astype(np.int64)
    before_launch = per["_lq"].to_numpy() - size  # queued on the stream before this launch
    others_at_start = per["_sq"].to_numpy() - (size - order)
    gate = (before_launch <= 0) & (others_at_start <= 0)
    return pd.Series(gate, index=per["dev_row"].to_numpy())


class _Rank:
    """What every step of one rank shares, computed once: launches, queue gates, lookups."""

    def __init__(self, full: pd.DataFrame) -> None:
        self.full = full
        ev = without_args(full)
        lane = ev.groupby(["pid", "tid"], observed=True, sort=False).ngroup()
        self.ev = ev = ev.assign(_lane=lane.to_numpy(dtype=np.int64))
        self.pairs = launches(ev, device_rows(ev))
        self.gate = _queue_gate(self.pairs).to_dict()
        self.host_of = dict(
            zip(self.pairs["dev_row"].tolist(), self.pairs["correlation"].tolist(), strict=True)
        )
        self.corr_host = _host_rows_by_correlation(ev)
        self.sync = ev[isin(ev["kind"], ("sync",)) & (ev["stream"].to_numpy() != NO_ID)]
        self.names = ev["name"]


def critical_path(
    full: pd.DataFrame, rank: int, step: int, start: int, end: int
) -> tuple[CriticalPathRow | None, list[CriticalEdge]]:
    """The critical path of the window [start, end] of one rank's events `full`."""
    ctx = _Rank(full)
    row, found = _critical_path(ctx, rank, step, start, end)
    return row, list(edges_of(found.table(ctx.names))) if found is not None else []


def _critical_path(
    ctx: _Rank, rank: int, step: int, start: int, end: int
) -> tuple[CriticalPathRow | None, _Path | None]:
    host, dev = _select(ctx.ev, ctx.pairs, start, end)
    if host.empty and dev.empty:
        return None, None
    dev = dev.sort_values("ts_ns", kind="stable")
    labels = np.concatenate([host.index.to_numpy(), dev.index.to_numpy()])
    g = _Graph(
        np.concatenate([host["ts_ns"].to_numpy(), dev["ts_ns"].to_numpy()]),
        np.concatenate([ends(host), ends(dev)]),
    )
    position = {int(label): i for i, label in enumerate(labels.tolist())}
    blocking = isin(host["name"], BLOCKING_CALLS)
    _host_edges(g, host["_lane"].to_numpy(dtype=np.int64), blocking, len(host))
    _device_edges(g, ctx, dev, position, len(host))
    path = g.longest_path()
    ktype = kernel_types(dev).to_numpy(dtype=object) if len(dev) else np.array([], dtype=object)
    return _summarize(g, path, labels, ktype, len(host), rank, step)


def _device_edges(
    g: _Graph, ctx: _Rank, dev: pd.DataFrame, position: dict[int, int], offset: int
) -> None:
    """Edges over device ops, launch / kernel-kernel edges and sync edges (HTA's loop)."""
    host_of, corr_host, sync = ctx.host_of, ctx.corr_host, ctx.sync
    src_of_wait, host_sync_edges = _event_syncs(ctx, position)
    items: list[tuple[int, int, int]] = []  # (sort time, 0 = op / 1 = sync, row)
    for k, row in enumerate(dev.index.tolist()):
        items.append((g.ts[offset + k], 0, row))
    stream_of = dict(zip(sync.index.tolist(), sync["stream"].tolist(), strict=True))
    names = strs(sync["name"]).tolist()
    sync_name = dict(zip(sync.index.tolist(), names, strict=True))
    sync_end = (sync["ts_ns"] + sync["dur_ns"]).tolist()
    for row, t in zip(sync.index.tolist(), sync_end, strict=True):
        if sync_name[row] in ("Stream Sync", "Context Sync"):
            items.append((int(t), 1, row))
    items.sort()
    last: dict[int, int] = {}  # stream -> end node of its last op
    streams = dict(zip(dev.index.tolist(), dev["stream"].tolist(), strict=True))
    gate_of = ctx.gate
    sync_corr = dict(zip(sync.index.tolist(), sync["correlation"].tolist(), strict=True))
    for _, is_sync, row in items:
        if is_sync:
            runtime = position.get(corr_host.get(sync_corr[row], -1), -1)
            if runtime < 0:
                continue
            targets = (
                list(last.values())
                if sync_name[row] == "Context Sync"
                else [last.get(stream_of[row], -1)]
            )
            for node in targets:
                if node >= 0:
                    g.add(node, 2 * runtime + 1, SYNC)
            continue
        k = position[row]
        stream = streams[row]
        g.add(2 * k, 2 * k + 1, OPERATOR, k)
        runtime = position.get(corr_host.get(host_of.get(row, NO_ID), -1), -1)
        waited = src_of_wait.get(row, -1)
        waited_end = g.end[waited] if waited >= 0 else None
        if waited >= 0:
            g.add(2 * waited + 1, 2 * k, SYNC)
        prev = last.get(stream, -1)
        runtime_ts = g.ts[runtime] if runtime >= 0 else 0
        if (
            runtime >= 0
            and gate_of.get(row, False)
            and (prev < 0 or g.node_ts(prev) < runtime_ts)
            and (waited_end is None or waited_end < runtime_ts)
        ):
            g.add(2 * runtime, 2 * k, LAUNCH)
        elif prev >= 0 and (waited_end is None or waited_end < g.node_ts(prev)):
            g.add(prev, 2 * k, KERNEL_KERNEL, prev >> 1)
        last[stream] = 2 * k + 1
    for src_dev_row, runtime_row in host_sync_edges:
        s, r = position.get(src_dev_row, -1), position.get(runtime_row, -1)
        if s >= 0 and r >= 0:
            g.add(2 * s + 1, 2 * r + 1, SYNC)


def _host_rows_by_correlation(ev: pd.DataFrame) -> dict[int, int]:
    """correlation -> row of the host runtime call carrying it (first one)."""
    host = ev[
        ~ev["is_device"].to_numpy(dtype=bool)
        & (ev["correlation"].to_numpy() != NO_ID)
        & isin(ev["kind"], ("runtime", "hpu_runtime"))
    ]
    out: dict[int, int] = {}
    for corr, row in zip(host["correlation"].tolist(), host.index.tolist(), strict=True):
        out.setdefault(int(corr), int(row))
    return out


def _event_syncs(
    ctx: _Rank, position: dict[int, int]
) -> tuple[dict[int, int], list[tuple[int, int]]]:
    """CUDA event synchronization: ({waiting device row: selected index of the op it waits
    on}, [(device row waited on, runtime row that waits)]).

    The op waited on is the last one launched on the recorded stream before the cudaEventRecord
    whose correlation the sync marker names (`wait_on_cuda_event_record_corr_id`).
    """
    full, ev, sync, pairs, corr_host = ctx.full, ctx.ev, ctx.sync, ctx.pairs, ctx.corr_host
    waits = sync[isin(sync["name"], ("Event Sync", "Stream Wait Event"))]
    if waits.empty or pairs.empty:
        return {}, []
    waited = zip(
        arg_values(full, "wait_record_correlation", waits.index).tolist(),
        arg_values(full, "wait_stream", waits.index).tolist(),
        strict=True,
    )
    records = ev[isin(ev["name"], ("cudaEventRecord", "hipEventRecord"))]
    record_ts = dict(zip(records["correlation"].tolist(), records["ts_ns"].tolist(), strict=True))
    launch = pairs.sort_values("cpu_ts", kind="stable")
    by_stream = dict(by_int(launch, "stream"))
    device_wait: dict[int, int] = {}
    host_wait: list[tuple[int, int]] = []
    stream_of_sync = dict(zip(sync.index.tolist(), sync["stream"].tolist(), strict=True))
    ts_of_host = dict(zip(ev.index.tolist(), ev["ts_ns"].tolist(), strict=True))
    names = strs(waits["name"]).tolist()
    for row, (rec_corr, stream), name, corr in zip(
        waits.index.tolist(), waited, names, waits["correlation"].tolist(), strict=True
    ):
        if rec_corr == NO_ID or stream == NO_ID:  # (not an event sync with both keys)
            continue
        rec_ts = record_ts.get(rec_corr)
        grp = by_stream.get(stream)
        if rec_ts is None or grp is None:
            continue
        before = grp[grp["cpu_ts"].to_numpy() < rec_ts]
        if before.empty:
            continue
        src_row = int(before["dev_row"].to_numpy()[-1])
        runtime_row = corr_host.get(int(corr), -1)
        if name == "Event Sync":
            host_wait.append((src_row, runtime_row))
            continue
        # Stream Wait Event: the next launch on the waiting stream from the same thread
        waiting = by_stream.get(stream_of_sync[row])
        if waiting is None or runtime_row < 0:
            continue
        wait_ts = ts_of_host[runtime_row]
        after = waiting[waiting["cpu_ts"].to_numpy() > wait_ts]
        if after.empty:
            continue
        src = position.get(src_row, -1)
        if src >= 0:
            device_wait[int(after["dev_row"].to_numpy()[0])] = src
    return device_wait, host_wait


@dataclass(frozen=True)
class _Path:
    """A computed critical path, its edges as arrays (made into `CriticalEdge`s on demand)."""

    rank: int
    step: int
    src: np.ndarray  # event labels
    dst: np.ndarray
    src_ts: np.ndarray
    dst_ts: np.ndarray
    kind: np.ndarray  # index into EDGE_KINDS
    weight: np.ndarray
    bound: np.ndarray  # index into BOUND_BY, -1 for none
    event: np.ndarray  # attributed label, NO_ID for none

    def table(self, names: pd.Series) -> pd.DataFrame:
        """The edges as a table (columns: `CriticalEdge`'s fields), compact to ship."""
        has = self.event != NO_ID
        event_names = np.full(self.event.size, "", dtype=object)
        if has.any():
            pos = names.index.get_indexer(pd.Index(self.event[has]))
            event_names[has] = strs(names)[pos]
        bound_names = np.array([*BOUND_BY, ""], dtype=object)
        return pd.DataFrame(
            {
                "rank": np.full(self.src.size, self.rank, dtype=np.int64),
                "step": np.full(self.src.size, self.step, dtype=np.int64),
                "src_event": self.src,
                "dst_event": self.dst,
                "src_ts_ns": self.src_ts,
                "dst_ts_ns": self.dst_ts,
                "kind": np.array(EDGE_KINDS, dtype=object)[self.kind],
                "weight_ns": self.weight,
                "bound_by": bound_names[self.bound],
                "event": self.event,
                "name": event_names,
            }
        )


def edges_of(table: pd.DataFrame) -> tuple[CriticalEdge, ...]:
    """`CriticalEdge` rows of an edge table (`_Path.table`)."""
    fields = [f.name for f in dataclasses.fields(CriticalEdge)]
    cols = [table[f].astype(object).tolist() for f in fields]
    return tuple(CriticalEdge(*row) for row in zip(*cols, strict=True))


def _summarize(
    g: _Graph,
    path: list[int],
    labels: np.ndarray,
    ktype: np.ndarray,
    n_host: int,
    rank: int,
    step: int,
) -> tuple[CriticalPathRow | None, _Path | None]:
    if not path:
        return None, None
    e = np.asarray(path, dtype=np.int64)
    kind = np.asarray(g.kind, dtype=np.int64)[e]
    attr = np.asarray(g.attr, dtype=np.int64)[e]
    weight = np.asarray(g.weight, dtype=np.int64)[e]
    src = np.asarray(g.src, dtype=np.int64)[e]
    dst = np.asarray(g.dst, dtype=np.int64)[e]
    ts, end = g.ts_array, g.end_array
    comm = np.zeros(attr.size, dtype=bool)
    on_device = attr >= n_host
    comm[on_device] = ktype[attr[on_device] - n_host] == "COMMUNICATION"
    bound = np.full(attr.size, -1, dtype=np.int64)
    operator = (kind == OPERATOR) & (attr >= 0)
    bound[operator & ~on_device] = BOUND_BY.index("cpu_bound")
    bound[operator & on_device & comm] = BOUND_BY.index("communication_bound")
    bound[operator & on_device & ~comm] = BOUND_BY.index("compute_bound")
    bound[kind == KERNEL_KERNEL] = BOUND_BY.index("kernel_kernel_overhead")
    bound[kind == LAUNCH] = BOUND_BY.index("launch_overhead")
    totals = np.bincount(bound[bound >= 0], weights=weight[bound >= 0], minlength=len(BOUND_BY))
    length = int(totals.sum())

    def share(key: str) -> float:
        return round(100.0 * float(totals[BOUND_BY.index(key)]) / length, 2) if length else 0.0

    row = CriticalPathRow(
        rank=rank,
        step=step,
        length_ns=length,
        edges=len(path),
        cpu_bound_pct=share("cpu_bound"),
        compute_bound_pct=share("compute_bound"),
        communication_bound_pct=share("communication_bound"),
        kernel_kernel_overhead_pct=share("kernel_kernel_overhead"),
        launch_overhead_pct=share("launch_overhead"),
    )
    node_ts = np.where(src & 1, end[src >> 1], ts[src >> 1])
    node_te = np.where(dst & 1, end[dst >> 1], ts[dst >> 1])
    found = _Path(
        rank,
        step,
        labels[src >> 1],
        labels[dst >> 1],
        node_ts,
        node_te,
        kind,
        weight,
        bound,
        np.where(attr >= 0, labels[np.maximum(attr, 0)], NO_ID),
    )
    return row, found


def sample_steps(windows: pd.DataFrame, limit: int = MAX_STEPS) -> pd.DataFrame:
    """The step windows whose critical path is computed (see `MAX_STEPS`)."""
    if len(windows) <= limit:
        return windows
    picks = np.unique(np.round(np.linspace(0, len(windows) - 1, limit)).astype(np.int64))
    return windows.iloc[picks]


def critical_paths(
    full: pd.DataFrame, rank: int, windows: pd.DataFrame
) -> tuple[list[CriticalPathRow], pd.DataFrame]:
    """Critical path of the step windows [rank, step, start_ns, end_ns] of one rank (at most
    `MAX_STEPS` of them, `sample_steps`); the edge table of the step with the longest path (the
    overlay of this rank; `edges_of` makes `CriticalEdge`s of it)."""
    ctx = _Rank(full)
    rows: list[CriticalPathRow] = []
    longest: _Path | None = None
    best = -1
    windows = sample_steps(windows)
    for step, lo, hi in zip(
        windows["step"].tolist(),
        windows["start_ns"].tolist(),
        windows["end_ns"].tolist(),
        strict=True,
    ):
        row, found = _critical_path(ctx, rank, int(step), lo, hi)
        if row is None:
            continue
        rows.append(row)
        if row.length_ns > best:
            best, longest = row.length_ns, found
    if longest is None:
        return rows, pd.DataFrame(columns=[f.name for f in dataclasses.fields(CriticalEdge)])
    return rows, longest.table(ctx.names)
