"""Memory report: memory over time, its peak, what held it at the peak, the top allocating ops.

Sources, best first:
- allocator events (`[memory]` instants, torch.profiler `profile_memory=True`): every
  allocation and free with its address, size and the allocator's running total; each is
  attributed to the op around it (the instant's enclosing slice);
- the emulator's `hpu.memory_in_use_bytes` counter (modeled bookkeeping of live device tensors,
  not an allocator): samples of the total; a rise is attributed to the host slice enclosing the
  sample (a launch, an op).
A trace with neither has an empty report that says so.

`timeline` keeps at most `MAX_POINTS` points per device: the samples are bucketed in time and
each bucket keeps its largest value, so the peak is always drawn.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import pandas as pd

from hpuprof.analysis._common import arg_values, isin, strs, without_args
from hpuprof.analysis.device import trace_device
from hpuprof.analysis.options import AnalysisOptions
from hpuprof.trace.model import Trace
from hpuprof.trace.schema import NO_ID

MEMORY_EVENT = "[memory]"
EMULATOR_COUNTER = "hpu.memory_in_use_bytes"
MAX_POINTS = 2000
_FAMILY = {"cuda": "CUDA", "rocm": "ROCm", "hpu": "HPU", "mtia": "MTIA", "xpu": "XPU", "gpu": "GPU"}


@dataclass(frozen=True)
class MemoryPoint:
    """Memory of one device at one time (bytes), `t_ns` after the trace's first event;
    reserved is -1 when the source has none."""

    rank: int
    device: str
    t_ns: int
    allocated_bytes: int
    reserved_bytes: int


@dataclass(frozen=True)
class DeviceMemory:
    """One device of one rank: peak and final memory, allocation counts (bytes); the peak
    `peak_at_ns` after the trace's first event."""

    rank: int
    device: str
    peak_bytes: int
    peak_at_ns: int
    final_bytes: int
    peak_reserved_bytes: int
    allocations: int
    allocated_bytes: int
    frees: int


@dataclass(frozen=True)
class OpMemory:
    """Allocations made inside one op (or runtime event), on one device."""

    rank: int
    device: str
    op: str
    allocations: int
    allocated_bytes: int
    largest_bytes: int
    live_at_peak_bytes: int


@dataclass(frozen=True)
class MemoryReport:
    """Result of `analyze_memory`.

    Args:
        source: where the numbers come from (see the module docstring), "none" without data.
        start_ns: the trace's first event (times in the report count from it).
        devices: one row per (rank, device).
        timeline: memory over time (decimated, peaks kept).
        top_ops: ops by bytes allocated (allocator events: with what they held at the peak).
    """

    source: str
    start_ns: int
    devices: tuple[DeviceMemory, ...]
    timeline: tuple[MemoryPoint, ...]
    top_ops: tuple[OpMemory, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)


def _start(trace: Trace) -> int:
    ts = trace.events["ts_ns"]
    return int(ts.min()) if len(ts) else 0


def _points(frame: pd.DataFrame, start: int) -> tuple[MemoryPoint, ...]:
    return tuple(
        MemoryPoint(int(r), str(d), int(t) - start, int(a), int(v))
        for r, d, t, a, v in frame.itertuples(index=False, name=None)
    )


def _per_device(frame: pd.DataFrame) -> Iterator[tuple[int, str, pd.DataFrame]]:
    """(rank, device, rows) for each device of each rank, in order."""
    for key, g in frame.groupby(["rank", "device"], sort=True):
        rank, device = cast(tuple[Any, Any], key)
        yield int(rank), str(device), g


def _decimate(frame: pd.DataFrame, limit: int = MAX_POINTS) -> pd.DataFrame:
    """At most `limit` rows per (rank, device): the largest value of each time bucket."""
    out = []
    for _, g in frame.groupby(["rank", "device"], sort=True):
        if len(g) <= limit:
            out.append(g)
            continue
        ts = g["ts_ns"].to_numpy()
        bucket = ((ts - ts.min()) * (limit - 1) // max(int(ts.max() - ts.min()), 1)).astype(int)
        keep = g.assign(_b=bucket).sort_values("allocated_bytes").groupby("_b").tail(1)
        out.append(keep.drop(columns="_b").sort_values("ts_ns"))
    return pd.concat(out, ignore_index=True) if out else frame


def _enclosing_names(ev: pd.DataFrame, rows: pd.Index) -> np.ndarray:
    """Name of the slice enclosing each row (its parent), "" at top level."""
    parent = ev.loc[rows, "parent"].to_numpy(dtype=np.int64)
    names = np.full(len(rows), "", dtype=object)
    pos = ev.index.get_indexer(pd.Index(parent))
    ok = (parent != NO_ID) & (pos >= 0)
    names[ok] = strs(ev["name"].iloc[pos[ok]])
    return names


def _device_label(kind: str, device_type: int, device_id: int) -> str:
    if device_type == 0:
        return "CPU"
    return f"{_FAMILY.get(kind, 'device')} {device_id}"


def allocator_samples(trace: Trace) -> pd.DataFrame | None:
    """The allocator events (`[memory]` instants) by time: rank, device ("CUDA 0", "CPU"),
    ts_ns, bytes (negative: a free), allocated_bytes, reserved_bytes (the allocator's running
    totals), addr and the events' rows; None when the trace has none."""
    full = trace.events
    ev = without_args(full)
    rows = ev[isin(ev["name"], (MEMORY_EVENT,)) & isin(ev["kind"], ("instant",))]
    if rows.empty:
        return None
    kind = trace_device(trace).kind

    def column(name: str) -> np.ndarray:
        return np.asarray(arg_values(full, name, rows.index), dtype=np.int64)

    # one label per (device type, device id) pair, not one per event
    pairs, which = np.unique(
        np.stack([column("memory_device_type"), column("memory_device_id")]),
        axis=1,
        return_inverse=True,
    )
    labels = np.array([_device_label(kind, int(t), int(i)) for t, i in pairs.T], dtype=object)
    return pd.DataFrame(
        {
            "rank": rows["rank"].to_numpy(dtype=np.int64),
            "device": labels[which.reshape(-1)],
            "ts_ns": rows["ts_ns"].to_numpy(dtype=np.int64),
            "bytes": column("alloc_bytes"),
            "allocated_bytes": column("total_allocated"),
            "reserved_bytes": column("total_reserved"),
            "addr": column("alloc_addr").astype(np.uint64),
            "row": rows.index.to_numpy(),
        }
    ).sort_values("ts_ns", kind="stable", ignore_index=True)


def _from_allocator(trace: Trace, options: AnalysisOptions) -> MemoryReport | None:
    frame = allocator_samples(trace)
    if frame is None:
        return None
    frame["op"] = _enclosing_names(without_args(trace.events), pd.Index(frame.pop("row")))
    frame["op"] = frame["op"].where(frame["op"] != "", "(outside any op)")
    devices, ops = [], []
    for rank, device, g in _per_device(frame):
        at = int(g["allocated_bytes"].to_numpy().argmax())
        peak_ts = int(g["ts_ns"].iloc[at])
        start = _start(trace)
        alloc = g[g["bytes"] > 0]
        devices.append(
            DeviceMemory(
                rank,
                device,
                int(g["allocated_bytes"].iloc[at]),
                peak_ts - start,
                int(g["allocated_bytes"].iloc[-1]),
                int(g["reserved_bytes"].max()),
                len(alloc),
                int(alloc["bytes"].sum()),
                int((g["bytes"] < 0).sum()),
            )
        )
        live = _live_at(g, peak_ts)
        per = alloc.groupby("op")["bytes"].agg(["size", "sum", "max"])
        per = per.join(live.rename("live"), how="left").fillna(0)
        per = per.sort_values(["sum", "live"], ascending=False).head(options.top_n)
        ops += [
            OpMemory(
                int(rank),
                str(device),
                str(op),
                int(r["size"]),
                int(r["sum"]),
                int(r["max"]),
                int(r["live"]),
            )
            for op, r in per.iterrows()
        ]
    return _report(
        trace,
        frame,
        devices,
        ops,
        "allocator events (profile_memory)",
        "an allocation belongs to the op around it; live at peak: bytes it allocated that "
        "were not yet freed when the device's memory peaked",
    )


def _report(
    trace: Trace,
    frame: pd.DataFrame,
    devices: list[DeviceMemory],
    ops: list[OpMemory],
    source: str,
    note: str,
) -> MemoryReport:
    """The report of one memory source: its decimated timeline and its ops by bytes allocated."""
    points = _decimate(frame[["rank", "device", "ts_ns", "allocated_bytes", "reserved_bytes"]])
    start = _start(trace)
    return MemoryReport(
        source=source,
        devices=tuple(devices),
        start_ns=start,
        timeline=_points(points, start),
        top_ops=tuple(sorted(ops, key=lambda o: -o.allocated_bytes)),
        notes=(note,),
    )


def _live_at(g: pd.DataFrame, peak_ts: int) -> pd.Series:
    """Bytes allocated by each op that are still live at `peak_ts` (alloc matched to the next
    free of the same address)."""
    upto = g[g["ts_ns"] <= peak_ts].sort_values(["addr", "ts_ns"], kind="stable")
    nxt_bytes = upto.groupby("addr")["bytes"].shift(-1)
    alive = (upto["bytes"] > 0) & ~(nxt_bytes < 0)
    return upto[alive].groupby("op")["bytes"].sum()


def counter_samples(trace: Trace) -> pd.DataFrame | None:
    """The emulator's memory counter (`hpu.memory_in_use_bytes`) by rank and time: rank,
    device ("HPU <rank>"), ts_ns, allocated_bytes, reserved_bytes (-1: not modeled), pid;
    None when the trace has none."""
    c = trace.counters
    if c.empty:
        return None
    rows = c[(c["name"].astype(str) == EMULATOR_COUNTER).to_numpy()]
    if rows.empty:
        return None
    return pd.DataFrame(
        {
            "rank": rows["rank"].to_numpy(dtype=np.int64),
            "device": [f"HPU {r}" for r in rows["rank"].tolist()],
            "ts_ns": rows["ts_ns"].to_numpy(dtype=np.int64),
            "allocated_bytes": rows["value"].to_numpy(dtype=np.float64).astype(np.int64),
            "reserved_bytes": -1,
            "pid": rows["pid"].astype(str).to_numpy(),
        }
    ).sort_values(["rank", "ts_ns"], kind="stable", ignore_index=True)


def _from_counter(trace: Trace, options: AnalysisOptions) -> MemoryReport | None:
    frame = counter_samples(trace)
    if frame is None:
        return None
    ev = without_args(trace.events)
    host = ev[~ev["is_device"].to_numpy(dtype=bool) & isin(ev["ph"], ("X",))]
    frame["op"] = _innermost_at(host, frame)
    devices, ops = [], []
    for rank, device, g in _per_device(frame):
        values = g["allocated_bytes"].to_numpy()
        at = int(values.argmax())
        rise = np.diff(values, prepend=0)
        grew = g.assign(rise=rise)[rise > 0]
        devices.append(
            DeviceMemory(
                rank,
                device,
                int(values[at]),
                int(g["ts_ns"].iloc[at]) - _start(trace),
                int(values[-1]),
                -1,
                len(grew),
                int(grew["rise"].sum()),
                int((rise < 0).sum()),
            )
        )
        per = (
            grew.groupby("op")["rise"]
            .agg(["size", "sum", "max"])
            .sort_values("sum", ascending=False)
        )
        ops += [
            OpMemory(
                int(rank), str(device), str(op), int(r["size"]), int(r["sum"]), int(r["max"]), 0
            )
            for op, r in per.head(options.top_n).iterrows()
        ]
    return _report(
        trace,
        frame,
        devices,
        ops,
        "emulator counter hpu.memory_in_use_bytes (modeled bookkeeping of live tensors)",
        "memory samples, not allocations: a rise is attributed to the host slice running "
        "when it was sampled",
    )


def _innermost_at(host: pd.DataFrame, samples: pd.DataFrame) -> np.ndarray:
    """Name of the innermost host slice of the sample's rank and process running at its time:
    the last slice started at or before it, or the nearest enclosing one still running."""
    out = np.full(len(samples), "(outside any op)", dtype=object)
    if host.empty:
        return out
    names = strs(host["name"])
    parent = host["parent"].to_numpy(dtype=np.int64)
    end_all = host["ts_ns"].to_numpy(dtype=np.int64) + host["dur_ns"].to_numpy(dtype=np.int64)
    keys = pd.MultiIndex.from_arrays([host["rank"].to_numpy(), host["pid"].astype(str).to_numpy()])
    groups = dict(pd.Series(np.arange(len(host))).groupby(keys).indices)
    srank = samples["rank"].to_numpy()
    spid = samples["pid"].astype(str).to_numpy()
    sts = samples["ts_ns"].to_numpy(dtype=np.int64)
    ts_all = host["ts_ns"].to_numpy(dtype=np.int64)
    for key, members in groups.items():
        rank, pid = cast(tuple[Any, Any], key)
        mine = np.flatnonzero((srank == rank) & (spid == pid))
        if not len(mine):
            continue
        rows = np.asarray(members, dtype=np.int64)
        order = rows[np.argsort(ts_all[rows], kind="stable")]
        k = np.searchsorted(ts_all[order], sts[mine], side="right") - 1
        cur = np.where(k >= 0, order[np.maximum(k, 0)], -1)
        for _ in range(256):
            stale = (cur >= 0) & (end_all[np.maximum(cur, 0)] <= sts[mine])
            if not stale.any():
                break
            up = host.index.get_indexer(pd.Index(parent[cur[stale]]))
            cur[stale] = up
        found = cur >= 0
        out[mine[found]] = names[cur[found]]
    return out


def analyze_memory(trace: Trace, options: AnalysisOptions | None = None) -> MemoryReport:
    """Memory over time, peak, live-at-peak and top allocating ops (see the module docstring)."""
    options = options or AnalysisOptions()
    for source in (_from_allocator, _from_counter):
        got = source(trace, options)
        if got is not None:
            return got
    return MemoryReport(
        "none",
        _start(trace),
        (),
        (),
        (),
        ("no memory data: record with profile_memory=True (torch.profiler) or an emulated run",),
    )
