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

from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import pandas as pd

from hpuprof.analysis._common import args_at, isin, kernel_types, strs, without_args
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

    def __init__(self, ts: list[int], end: list[int]) -> None:
        self.ts = ts
        self.end = end
        self.src: list[int] = []
        self.dst: list[int] = []
        self.weight: list[int] = []
        self.kind: list[int] = []
        self.attr: list[int] = []  # selected-event index the weight is attributed to, or -1

    def node_ts(self, node: int) -> int:
        k = node >> 1
        return self.end[k] if node & 1 else self.ts[k]

    def add(self, src: int, dst: int, kind: int, attr: int = -1, zero: bool = False) -> None:
        weight = 0 if zero or kind in (DEPENDENCY, SYNC) else self.node_ts(dst) - self.node_ts(src)
        self.src.append(src)
        self.dst.append(dst)
        self.weight.append(max(weight, 0))
        self.kind.append(kind)
        self.attr.append(attr)

    def longest_path(self) -> list[int]:
        """Edge indices of a longest path (topological dynamic programming)."""
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


def _host_edges(g: _Graph, lanes: np.ndarray, blocking: list[bool], count: int) -> None:
    """Depth-first walk of each thread's call stack over the host events 0..count-1.

    Events are in (lane, ts, -dur) order; an event nests in the open one that contains it.
    Mirrors HTA's enter/exit callbacks (`_construct_graph_from_call_stack`).
    """
    stack: list[int] = []
    parents: list[int] = []  # parent (selected index or -1) of each open event
    last_node = last_parent = last_top = -1

    def exit_top() -> None:
        nonlocal last_node, last_parent, last_top
        x = stack.pop()
        par = parents.pop()
        if last_node >= 0:
            _attribute(g, last_node, 2 * x + 1, last_parent, zero=blocking[x])
        if stack:
            last_node, last_parent = 2 * x + 1, par
        else:
            last_node, last_top = -1, 2 * x + 1

    for k in range(count):
        if k and lanes[k] != lanes[k - 1]:  # a new thread: close the previous one
            while stack:
                exit_top()
            last_node = last_parent = last_top = -1
        while stack and not (g.ts[k] < g.end[stack[-1]] and g.end[k] <= g.end[stack[-1]]):
            exit_top()
        if not stack and last_top >= 0:
            g.add(last_top, 2 * k, DEPENDENCY)
        if last_node >= 0:
            _attribute(g, last_node, 2 * k, last_parent)
        last_node = 2 * k
        last_parent = stack[-1] if stack else -1
        parents.append(last_parent)
        stack.append(k)
    while stack:
        exit_top()


def _attribute(g: _Graph, src: int, dst: int, src_parent: int, zero: bool = False) -> None:
    """An operator edge, attributed as HTA does: start->x to the source's event, end->end to
    the destination's, end->start to the parent of the source."""
    if not src & 1:
        attr = src >> 1
    elif dst & 1:
        attr = dst >> 1
    else:
        attr = src_parent
    g.add(src, dst, OPERATOR, attr, zero=zero)


def _select(
    ev: pd.DataFrame, pairs: pd.DataFrame, start: int, end: int
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(host nodes, device nodes, sync markers) of the window, host in (lane, ts, -dur) order."""
    ts = ev["ts_ns"].to_numpy(dtype=np.int64)
    dur = ev["dur_ns"].to_numpy(dtype=np.int64)
    host_mask = ~ev["is_device"].to_numpy(dtype=bool) & isin(ev["kind"], HOST_KINDS)
    host_mask &= isin(ev["ph"], ("X",)) & (dur > 0) & (ts >= start) & (ts <= end)
    host = ev[host_mask]
    host = host.assign(_lane=host["pid"].astype(str) + "/" + host["tid"].astype(str))
    host = host.assign(_neg=-host["dur_ns"]).sort_values(["_lane", "ts_ns", "_neg"], kind="stable")
    launched = pairs[(pairs["cpu_ts"] >= start) & (pairs["cpu_ts"] <= end)]
    launched = launched[launched["cpu_end"] > launched["cpu_ts"]]
    dev = ev.loc[np.unique(launched["dev_row"].to_numpy())]
    sync = ev[isin(ev["kind"], ("sync",)) & (ev["stream"].to_numpy() != NO_ID)]
    return host, dev, sync


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


def critical_path(
    full: pd.DataFrame, rank: int, step: int, start: int, end: int
) -> tuple[CriticalPathRow | None, list[CriticalEdge]]:
    """The critical path of the window [start, end] of one rank's events `full`."""
    ev = without_args(full)
    dev_all = device_rows(ev)
    pairs = launches(ev, dev_all)
    return _critical_path(full, ev, dev_all, pairs, _queue_gate(pairs), rank, step, start, end)


def _critical_path(
    full: pd.DataFrame,
    ev: pd.DataFrame,
    dev_all: pd.DataFrame,
    pairs: pd.DataFrame,
    gate: pd.Series,
    rank: int,
    step: int,
    start: int,
    end: int,
) -> tuple[CriticalPathRow | None, list[CriticalEdge]]:
    host, dev, sync = _select(ev, pairs, start, end)
    if host.empty and dev.empty:
        return None, []
    dev = dev.sort_values("ts_ns", kind="stable")
    labels = np.concatenate([host.index.to_numpy(), dev.index.to_numpy()])
    g = _Graph(
        np.concatenate([host["ts_ns"].to_numpy(), dev["ts_ns"].to_numpy()]).tolist(),
        np.concatenate(
            [
                (host["ts_ns"] + host["dur_ns"]).to_numpy(),
                (dev["ts_ns"] + dev["dur_ns"]).to_numpy(),
            ]
        ).tolist(),
    )
    position = {int(label): i for i, label in enumerate(labels.tolist())}
    blocking = [n in BLOCKING_CALLS for n in strs(host["name"]).tolist()]
    _host_edges(g, host["_lane"].to_numpy(dtype=object), blocking, len(host))
    _device_edges(g, full, ev, dev, sync, pairs, gate, position, len(host))
    path = g.longest_path()
    ktype = kernel_types(dev).to_numpy(dtype=object) if len(dev) else np.array([], dtype=object)
    names = strs(ev["name"])
    return _summarize(g, path, labels, names, ktype, len(host), rank, step, ev)


def _device_edges(
    g: _Graph,
    full: pd.DataFrame,
    ev: pd.DataFrame,
    dev: pd.DataFrame,
    sync: pd.DataFrame,
    pairs: pd.DataFrame,
    gate: pd.Series,
    position: dict[int, int],
    offset: int,
) -> None:
    """Edges over device ops, launch / kernel-kernel edges and sync edges (HTA's loop)."""
    host_of = dict(zip(pairs["dev_row"].tolist(), pairs["correlation"].tolist(), strict=True))
    corr_host = _host_rows_by_correlation(ev)
    src_of_wait, host_sync_edges = _event_syncs(full, ev, sync, pairs, corr_host, position)
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
    gate_of = gate.to_dict()
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
    full: pd.DataFrame,
    ev: pd.DataFrame,
    sync: pd.DataFrame,
    pairs: pd.DataFrame,
    corr_host: dict[int, int],
    position: dict[int, int],
) -> tuple[dict[int, int], list[tuple[int, int]]]:
    """CUDA event synchronization: ({waiting device row: selected index of the op it waits
    on}, [(device row waited on, runtime row that waits)]).

    The op waited on is the last one launched on the recorded stream before the cudaEventRecord
    whose correlation the sync marker names (`wait_on_cuda_event_record_corr_id`).
    """
    waits = sync[isin(sync["name"], ("Event Sync", "Stream Wait Event"))]
    if waits.empty or pairs.empty:
        return {}, []
    args = args_at(full, waits.index)
    records = ev[isin(ev["name"], ("cudaEventRecord", "hipEventRecord"))]
    record_ts = dict(zip(records["correlation"].tolist(), records["ts_ns"].tolist(), strict=True))
    launch = pairs.sort_values("cpu_ts", kind="stable")
    by_stream = dict(by_int(launch, "stream"))
    device_wait: dict[int, int] = {}
    host_wait: list[tuple[int, int]] = []
    stream_of_sync = dict(zip(sync.index.tolist(), sync["stream"].tolist(), strict=True))
    ts_of_host = dict(zip(ev.index.tolist(), ev["ts_ns"].tolist(), strict=True))
    names = strs(waits["name"]).tolist()
    for (row, a), name, corr in zip(
        zip(waits.index.tolist(), args, strict=True),
        names,
        waits["correlation"].tolist(),
        strict=True,
    ):
        rec_corr = a.get("wait_on_cuda_event_record_corr_id")
        stream = a.get("wait_on_stream")
        if not isinstance(rec_corr, int) or not isinstance(stream, int):
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


def _summarize(
    g: _Graph,
    path: list[int],
    labels: np.ndarray,
    names: np.ndarray,
    ktype: np.ndarray,
    n_host: int,
    rank: int,
    step: int,
    ev: pd.DataFrame,
) -> tuple[CriticalPathRow | None, list[CriticalEdge]]:
    if not path:
        return None, []
    totals = dict.fromkeys(BOUND_BY, 0)
    edges: list[CriticalEdge] = []
    positions = ev.index.get_indexer(pd.Index(labels))  # for names; ids are row labels
    for e in path:
        kind = g.kind[e]
        attr = g.attr[e]
        weight = g.weight[e]
        if kind == KERNEL_KERNEL:
            bound = "kernel_kernel_overhead"
        elif kind == LAUNCH:
            bound = "launch_overhead"
        elif kind == OPERATOR and attr >= 0:
            if attr < n_host:
                bound = "cpu_bound"
            elif ktype[attr - n_host] == "COMMUNICATION":
                bound = "communication_bound"
            else:
                bound = "compute_bound"
        else:
            bound = ""
        if bound:
            totals[bound] += weight
        src, dst = g.src[e], g.dst[e]
        edges.append(
            CriticalEdge(
                rank=rank,
                step=step,
                src_event=int(labels[src >> 1]),
                dst_event=int(labels[dst >> 1]),
                src_ts_ns=g.node_ts(src),
                dst_ts_ns=g.node_ts(dst),
                kind=EDGE_KINDS[kind],
                weight_ns=weight,
                bound_by=bound,
                event=int(labels[attr]) if attr >= 0 else NO_ID,
                name=str(names[positions[attr]]) if attr >= 0 else "",
            )
        )
    length = sum(totals.values())

    def share(key: str) -> float:
        return round(100.0 * totals[key] / length, 2) if length else 0.0

    row = CriticalPathRow(
        rank=rank,
        step=step,
        length_ns=int(length),
        edges=len(path),
        cpu_bound_pct=share("cpu_bound"),
        compute_bound_pct=share("compute_bound"),
        communication_bound_pct=share("communication_bound"),
        kernel_kernel_overhead_pct=share("kernel_kernel_overhead"),
        launch_overhead_pct=share("launch_overhead"),
    )
    return row, edges


def critical_paths(
    full: pd.DataFrame, rank: int, windows: pd.DataFrame
) -> tuple[list[CriticalPathRow], list[CriticalEdge]]:
    """Critical path of every step window [rank, step, start_ns, end_ns] of one rank; the edges
    of the step with the longest path (the overlay of this rank)."""
    ev = without_args(full)
    dev_all = device_rows(ev)
    pairs = launches(ev, dev_all)
    gate = _queue_gate(pairs)
    rows: list[CriticalPathRow] = []
    longest: list[CriticalEdge] = []
    best = -1
    for step, lo, hi in zip(
        windows["step"].tolist(),
        windows["start_ns"].tolist(),
        windows["end_ns"].tolist(),
        strict=True,
    ):
        row, edges = _critical_path(full, ev, dev_all, pairs, gate, rank, int(step), lo, hi)
        if row is None:
            continue
        rows.append(row)
        if row.length_ns > best:
            best, longest = row.length_ns, edges
    return rows, longest


def overlay_table(edges: list[CriticalEdge]) -> list[dict[str, Any]]:
    """The overlay as plain rows (for a timeline view)."""
    from dataclasses import asdict

    return [asdict(e) for e in edges]
