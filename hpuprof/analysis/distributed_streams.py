"""Per-rank stream metrics with HTA 0.5.0's definitions, on one rank's events (pure functions).

Each function takes the events of ONE rank (the `events` table of a one-rank `Trace`, or that
rank's rows of a combined one) and returns small rows; `distributed.py` runs them per rank and
merges. Definitions follow HTA 0.5.0 (hta/analyzers/*.py), in integer nanoseconds:

- device events: kernels, copies, sets and other device ops (`_common.device_events`);
  kernel type from `_common.kernel_types` (HTA's name regexes, plus Gaudi engines: MME/TPC
  compute, DMA memory, NIC communication).
- launch: a host runtime call whose correlation reaches a device event of the same rank
  (cudaLaunchKernel[ExC], cuLaunchKernel, cudaMemcpyAsync/MemsetAsync, hip*, MTIA runFunction,
  the Gaudi bridge's enqueue and our emulator's recipe launch); synchronous calls (cudaMemcpy,
  *Synchronize) are not launches. HTA's launch statistics ignore cuLaunchKernel and hip* (its
  issue list notes empty results on Triton and ROCm traces); we count them, and HPU launches.
- `comm_comp_overlap`: |merged COMMUNICATION intersected with merged COMPUTATION| / |merged
  COMMUNICATION| in % (HTA `get_comm_comp_overlap`); None when the rank has no communication.
- `idle_breakdown`: per stream, each gap before a device event is host_wait (its launch began
  after the previous event ended), kernel_wait (a gap shorter than `options.launch_gap_ns`,
  30 us as HTA's `consecutive_kernel_delay`) or other (HTA `get_idle_time_breakdown`). Unlike HTA, gaps are
  measured from the running end of the stream (not the previous row's end), so overlapping
  events on a stream never count negative idle.
- `queue_length`: per stream, +1 at each launch and -1 when its device event starts; the
  summary is over the points of that step function, as HTA's `describe()`.
- `memory_bandwidth`: per copy kind (Memcpy HtoD/DtoH/DtoD/..., Memset), the bandwidth of
  concurrent copies summed as a step function (+GB/s at start, -GB/s at end), points above 0
  summarized (HTA `get_memory_bw_summary`); bandwidth from the event's "memory bandwidth
  (GB/s)" arg, else its bytes over its duration.
- `launch_stats`: per launch correlation: host duration, device duration (first start to last
  end of its device events: one kernel on CUDA, a whole recipe on a Gaudi) and launch delay
  (device start - host end, clipped at 0), with HTA's outlier cut-offs
  (`options.launch_runtime_outlier_ns`, `options.launch_delay_outlier_ns`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

import numpy as np
import pandas as pd

from hpuprof.analysis import intervals as iv
from hpuprof.analysis._common import (
    arg_values,
    cat_test,
    ends,
    isin,
    kernel_types,
    strs,
    without_args,
)
from hpuprof.analysis.options import AnalysisOptions
from hpuprof.trace.schema import NO_ID

IDLE_CATEGORIES: Final = ("host_wait", "kernel_wait", "other")

SYNCHRONOUS_API_RE: Final = re.compile(
    r"Synchronize|^(cuda|hip)(Memcpy|Memset|Memcpy2D|Memset2D)$|StreamWaitEvent|EventRecord"
)
"""Host runtime calls that carry a correlation but are not launches."""
HTA_LAUNCH_APIS: Final = frozenset(
    {
        "cudaLaunchKernel",
        "cudaLaunchKernelExC",
        "runFunction - job_prep_and_submit_for_execution",
        "cudaMemcpyAsync",
        "cudaMemsetAsync",
    }
)
"""The launch calls HTA 0.5.0's `get_cuda_kernel_launch_stats` counts (memory events included)."""


@dataclass(frozen=True)
class OverlapRow:
    """Communication/computation overlap of one rank (HTA `comp_comm_overlap_pctg`)."""

    rank: int
    overlap_pct: float | None
    comm_ns: int
    compute_ns: int
    overlap_ns: int


@dataclass(frozen=True)
class IdleRow:
    """Idle time of one stream in one category; `ratio` is its share of the stream's idle."""

    rank: int
    stream: int
    category: str
    idle_ns: int
    ratio: float
    gaps: int


@dataclass(frozen=True)
class QueueRow:
    """Queue length summary of one stream (over the step function's points)."""

    rank: int
    stream: int
    points: int
    mean: float
    p50: float
    max: int


@dataclass(frozen=True)
class MemoryBandwidthRow:
    """Bandwidth summary of one copy kind on one rank, in GB/s."""

    rank: int
    kind: str
    copies: int
    mean_gbps: float
    p50_gbps: float
    max_gbps: float


@dataclass(frozen=True)
class LaunchRow:
    """Launch statistics of one rank (per correlation), times in ns."""

    rank: int
    launches: int
    hpu_launches: int
    cpu_mean_ns: float
    cpu_p95_ns: float
    device_mean_ns: float
    delay_mean_ns: float
    delay_p95_ns: float
    delay_max_ns: int
    short_kernels: int
    runtime_outliers: int
    delay_outliers: int


def by_int(frame: pd.DataFrame, column: str) -> Iterator[tuple[int, pd.DataFrame]]:
    """(value, rows) per distinct integer value of `column`, in ascending order."""
    values = frame[column].to_numpy(dtype=np.int64)
    for value in np.unique(values).tolist():
        yield int(value), frame[values == value]


def device_rows(ev: pd.DataFrame) -> pd.DataFrame:
    """Device activity rows of `ev`: kernels, copies, sets, other device ops (no annotations,
    no cuda_sync markers), slices only."""
    mask = ev["is_device"].to_numpy(dtype=bool) & isin(ev["ph"], ("X",))
    mask &= isin(ev["kind"], ("kernel", "memcpy", "memset", "device_op"))
    return without_args(ev)[mask]


def launches(ev: pd.DataFrame, dev: pd.DataFrame) -> pd.DataFrame:
    """Host launches of one rank joined to their device events, one row per device event.

    Columns: correlation, api, cpu_ts, cpu_end, hpu (a Gaudi/emulated launch), dev_row
    (label of the device event), stream, dev_ts, dev_end.
    """
    host = ev[
        ~ev["is_device"].to_numpy(dtype=bool)
        & (ev["correlation"].to_numpy() != NO_ID)
        & isin(ev["kind"], ("runtime", "hpu_runtime"))
    ]
    host = host[~cat_test(host["name"], lambda n: SYNCHRONOUS_API_RE.search(n) is not None)]
    left = pd.DataFrame(
        {
            "correlation": host["correlation"].to_numpy(dtype=np.int64),
            "api": strs(host["name"]),
            "cpu_ts": host["ts_ns"].to_numpy(dtype=np.int64),
            "cpu_end": ends(host),
            "hpu": isin(host["hpu_event"], ("launch",))
            | cat_test(host["cat"], lambda c: c in ("hpu_op", "Runtime", "hpuprof")),
        }
    ).drop_duplicates("correlation")
    d = dev[dev["correlation"].to_numpy() != NO_ID]
    right = pd.DataFrame(
        {
            "correlation": d["correlation"].to_numpy(dtype=np.int64),
            "dev_row": d.index.to_numpy(),
            "stream": d["stream"].to_numpy(dtype=np.int64),
            "dev_ts": d["ts_ns"].to_numpy(dtype=np.int64),
            "dev_end": ends(d),
        }
    )
    return left.merge(right, on="correlation", how="inner")


def comm_comp_overlap(rank: int, dev: pd.DataFrame, ktype: np.ndarray) -> OverlapRow:
    """HTA's communication/computation overlap of one rank (`ktype` from `kernel_types`)."""
    ts = dev["ts_ns"].to_numpy(dtype=np.int64)
    end = ends(dev)
    comm = iv.merge(ts[ktype == "COMMUNICATION"], end[ktype == "COMMUNICATION"])
    comp = iv.merge(ts[ktype == "COMPUTATION"], end[ktype == "COMPUTATION"])
    comm_ns = iv.total(comm)
    both = iv.total(iv.intersect(comm, comp))
    share = round(100.0 * both / comm_ns, 2) if comm_ns else None
    return OverlapRow(rank, share, comm_ns, iv.total(comp), both)


def idle_breakdown(
    rank: int, dev: pd.DataFrame, pairs: pd.DataFrame, kernel_wait_ns: int
) -> list[IdleRow]:
    """Idle time per stream split into host_wait / kernel_wait / other (HTA's rules)."""
    if dev.empty:
        return []
    launch_ts = pd.Series(pairs["cpu_ts"].to_numpy(), index=pairs["dev_row"].to_numpy())
    launch_ts = launch_ts[~launch_ts.index.duplicated()]
    frame = pd.DataFrame(
        {
            "stream": dev["stream"].to_numpy(dtype=np.int64),
            "ts": dev["ts_ns"].to_numpy(dtype=np.int64),
            "end": ends(dev),
            "launch": launch_ts.reindex(dev.index).to_numpy(dtype=np.float64),
        }
    ).sort_values(["stream", "ts"], kind="stable")
    rows: list[IdleRow] = []
    for stream, grp in by_int(frame, "stream"):
        ts = grp["ts"].to_numpy()
        reach = np.maximum.accumulate(grp["end"].to_numpy())
        prev_end = reach[:-1]
        gap = np.maximum(ts[1:] - prev_end, 0)
        launch = grp["launch"].to_numpy()[1:]
        host_wait = launch > prev_end  # NaN (no launch) compares False, as in HTA
        kernel_wait = ~host_wait & (gap < kernel_wait_ns)
        other = ~host_wait & ~kernel_wait
        total = int(gap.sum())
        for name, sel in zip(IDLE_CATEGORIES, (host_wait, kernel_wait, other), strict=True):
            idle = int(gap[sel].sum())
            ratio = round(idle / total, 4) if total else 0.0
            rows.append(IdleRow(rank, stream, name, idle, ratio, int(sel.sum())))
    return rows


def queue_length(rank: int, pairs: pd.DataFrame) -> list[QueueRow]:
    """Outstanding launched operations per stream: +1 at a launch, -1 at its device start."""
    if pairs.empty:
        return []
    n = len(pairs)
    frame = pd.DataFrame(
        {
            "stream": np.concatenate([pairs["stream"].to_numpy()] * 2),
            "ts": np.concatenate([pairs["cpu_ts"].to_numpy(), pairs["dev_ts"].to_numpy()]),
            "delta": np.concatenate([np.ones(n, np.int64), -np.ones(n, np.int64)]),
        }
    )
    # at equal times a launch counts before a start (the op was queued, then began)
    frame = frame.sort_values(["stream", "ts", "delta"], ascending=[True, True, False])
    frame["queue"] = frame.groupby("stream")["delta"].cumsum()
    rows = []
    for stream, grp in by_int(frame, "stream"):
        q = grp["queue"].to_numpy()
        rows.append(
            QueueRow(
                rank,
                stream,
                int(q.size),
                round(float(q.mean()), 3),
                float(np.median(q)),
                int(q.max()),
            )
        )
    return rows


def copy_kind(name: str) -> str:
    """HTA's `get_memory_kernel_type` ("Memcpy DtoH", "Memset", ...), plus Gaudi copy names."""
    if name.startswith("Memset") or name.startswith("memset"):
        return "Memset"
    if name.startswith("Memcpy"):
        return name[:11]
    low = name.lower()
    for key, kind in (
        ("host_to_device", "Memcpy HtoD"),
        ("device_to_host", "Memcpy DtoH"),
        ("device_to_device", "Memcpy DtoD"),
        ("h2d", "Memcpy HtoD"),
        ("d2h", "Memcpy DtoH"),
    ):
        if key in low:
            return kind
    return "Memcpy Unknown"


def _bandwidth_gbps(given: float, nbytes: int, dur_ns: int) -> float:
    """A copy's bandwidth: the one the trace gives, else its bytes over its duration."""
    if not math.isnan(given):
        return given
    if nbytes > 0:
        return float(nbytes) / max(dur_ns, 1)  # bytes per ns == GB/s
    return 0.0


def memory_bandwidth(
    rank: int, full: pd.DataFrame, dev: pd.DataFrame, ktype: np.ndarray
) -> list[MemoryBandwidthRow]:
    """Bandwidth of concurrent copies per copy kind, summarized over the step function."""
    mem = dev[ktype == "MEMORY"]
    if mem.empty:
        return []
    dur = mem["dur_ns"].to_numpy(dtype=np.int64)
    dur = np.where(dur > 0, dur, 1000)  # HTA: a zero duration counts as 1 us
    given = arg_values(full, "copy_bandwidth_gbps", mem.index).tolist()
    copied = arg_values(full, "copy_bytes", mem.index)
    modeled = arg_values(full, "bytes_moved", mem.index)  # the emulator's device copies
    nbytes = np.where(copied != NO_ID, copied, modeled).tolist()
    bw = np.array(
        [_bandwidth_gbps(g, b, int(d)) for g, b, d in zip(given, nbytes, dur, strict=True)]
    )
    kinds = np.array([copy_kind(n) for n in strs(mem["name"])], dtype=object)
    ts = mem["ts_ns"].to_numpy(dtype=np.int64)
    rows = []
    for kind in sorted(set(kinds.tolist())):
        sel = kinds == kind
        t = np.concatenate([ts[sel], ts[sel] + dur[sel]])
        delta = np.concatenate([bw[sel], -bw[sel]])
        # at equal times an end counts before a start: back-to-back copies do not add up
        order = np.lexsort((delta, t))
        level = np.cumsum(delta[order])
        points = level[level > 1e-9]
        if points.size == 0:
            continue
        rows.append(
            MemoryBandwidthRow(
                rank,
                kind,
                int(sel.sum()),
                round(float(points.mean()), 4),
                round(float(np.median(points)), 4),
                round(float(points.max()), 4),
            )
        )
    return rows


def launch_stats(rank: int, pairs: pd.DataFrame, options: AnalysisOptions) -> LaunchRow | None:
    """Per-correlation launch statistics of one rank (None when it has no launches)."""
    if pairs.empty:
        return None
    per = pairs.groupby("correlation", sort=False).agg(
        cpu_ts=("cpu_ts", "first"),
        cpu_end=("cpu_end", "first"),
        hpu=("hpu", "first"),
        dev_ts=("dev_ts", "min"),
        dev_end=("dev_end", "max"),
    )
    cpu = (per["cpu_end"] - per["cpu_ts"]).to_numpy(dtype=np.float64)
    device = (per["dev_end"] - per["dev_ts"]).to_numpy(dtype=np.float64)
    delay = np.maximum(per["dev_ts"].to_numpy() - per["cpu_end"].to_numpy(), 0)
    return LaunchRow(
        rank=rank,
        launches=len(per),
        hpu_launches=int(per["hpu"].to_numpy(dtype=bool).sum()),
        cpu_mean_ns=round(float(cpu.mean()), 1),
        cpu_p95_ns=round(float(np.percentile(cpu, 95)), 1),
        device_mean_ns=round(float(device.mean()), 1),
        delay_mean_ns=round(float(delay.mean()), 1),
        delay_p95_ns=round(float(np.percentile(delay, 95)), 1),
        delay_max_ns=int(delay.max()),
        short_kernels=int((device < cpu).sum()),
        runtime_outliers=int((cpu > options.launch_runtime_outlier_ns).sum()),
        delay_outliers=int((delay > options.launch_delay_outlier_ns).sum()),
    )


def stream_metrics(
    rank: int, full: pd.DataFrame, options: AnalysisOptions
) -> tuple[OverlapRow, list[IdleRow], list[QueueRow], list[MemoryBandwidthRow], LaunchRow | None]:
    """Every metric of this module for the events `full` of one rank."""
    ev = without_args(full)
    dev = device_rows(ev)
    ktype = kernel_types(dev).to_numpy(dtype=object)
    pairs = launches(ev, dev)
    return (
        comm_comp_overlap(rank, dev, ktype),
        idle_breakdown(rank, dev, pairs, options.launch_gap_ns),
        queue_length(rank, pairs),
        memory_bandwidth(rank, full, dev, ktype),
        launch_stats(rank, pairs, options),
    )
