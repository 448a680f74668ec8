"""habana_perf_tool's summary of a Gaudi torch.profiler trace, field by field, as Intel names them.

Intel's `habana_perf_tool --trace <file.pt.trace.json>` prints, per trace: the device ratio
(device time / the profiled window), the Device/Host ratio, a Host Summary (Graph Build,
DataLoader, Input Time and Compile Time as shares of the window), the MME lower-precision ratio,
the device-host overlapping degree, MME / TPC / DMA total times, the MME/TPC overlap time, the
idle total time, and host recommendations. This module computes each field from the one trace
model, per rank, and turns the recommendations into findings. Every field's definition, the
docs page it comes from and where ours differs on purpose are in docs/reports.md
("habana_perf_tool fields"); the fields are the bottleneck report's Gaudi section, registered as
the report `perf_tool` beside it.

Definitions (ns, per rank):
- window: the profiled steps (first ProfilerStep / step start .. last end), else every event;
- device time: the union of the device ops (`device_events`) inside the window; device ratio =
  device time / window, host ratio = 100 - device ratio (Intel prints the two as a pair);
- engine totals: the union of each engine class's ops (MME, TPC, DMA) inside the window; on a
  trace with one lane per class (the emulator's) that is the sum of the ops' durations;
- MME/TPC overlap: the time both an MME and a TPC op run;
- idle: the device span inside the window (first device start .. last end) less device time;
- Host Summary: the union of host intervals of each kind inside the window: DataLoader (host
  events named like a DataLoader fetch), Input (host ops that copy to the device: those an
  H2D copy's `op_row` points at), Compile (recipe / dynamo compiles), Graph Build (every other
  host op: in lazy mode running ops on the host builds the graph); each as % of the window;
- MME lower-precision ratio: MME op time in bf16 / fp16 / fp8, as % of all MME op time;
- device-host overlapping degree: the share of device time during which host ops run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Final

import numpy as np
import pandas as pd

from hpuprof.analysis import intervals as iv
from hpuprof.analysis._common import (
    cat_test,
    device_events,
    ends,
    host_ops,
    isin,
    pct,
    positions,
    step_windows,
    strs,
)
from hpuprof.analysis.advice import advise
from hpuprof.analysis.bottleneck import DATA_LOADING_RE
from hpuprof.analysis.device import TraceDevice, trace_device
from hpuprof.analysis.findings import Finding
from hpuprof.analysis.options import AnalysisOptions
from hpuprof.analysis.step_split import engine_sets, merged
from hpuprof.trace.model import Trace

LOWER_PRECISION: Final = frozenset(
    {"bf16", "bfloat16", "fp16", "float16", "half", "fp8", "fp8_143", "fp8_152", "f8e4m3", "f8e5m2"}
)
"""`dtype` values counted as lower precision in the MME lower-precision ratio."""
_H2D: Final = re.compile(r"HtoD|H2D|Host -> Device|host_to_device", re.IGNORECASE)
_DATA_LOADING: Final = re.compile(DATA_LOADING_RE)
_COMPILE_EVENTS: Final = ("compile", "dynamo_compile")
HOST_SUMMARY: Final = ("graph_build", "dataloader", "input", "compile")
"""The Host Summary fields, in Intel's order (Graph Build, DataLoader, Input, Compile)."""
_ADVICE_TOPIC: Final = {
    "graph_build": "host_bound",
    "dataloader": "data_loading",
    "input": "data_loading",
    "compile": "recompile",
}
_INTEL_NAME: Final = {
    "graph_build": "Host Summary Graph Build",
    "dataloader": "Host Summary DataLoader",
    "input": "Host Summary Input Time",
    "compile": "Host Summary Compile Time",
}


@dataclass(frozen=True)
class PerfToolRow:
    """habana_perf_tool's fields for one rank (times in ns, shares in %).

    Args:
        rank: the rank.
        window_ns: the profiled window the ratios divide by.
        steps: steps in the window (0: no step markers; the window is the whole trace).
        device_time_ns: "Device ratio"'s numerator: device busy time in the window.
        device_ratio_pct: "Device ratio".
        host_ratio_pct: "Device/Host ratio"'s host part (100 - device ratio).
        graph_build_ns / graph_build_pct: "Host Summary Graph Build".
        dataloader_ns / dataloader_pct: "Host Summary DataLoader".
        input_ns / input_pct: "Host Summary Input Time".
        compile_ns / compile_pct: "Host Summary Compile Time".
        compiles: compile events in the window; compiles_per_step: per step (per window
            without steps).
        mme_lower_precision_ratio_pct: "Device Summary MME Lower Precision Ratio".
        device_host_overlapping_degree_pct: "Device Host Overlapping degree".
        mme_total_ns / tpc_total_ns / dma_total_ns: "[Device Summary] MME / TPC / DMA total time".
        mme_tpc_overlap_ns: "[Device Summary] MME/TPC overlap time".
        idle_total_ns: "[Device Summary] Idle total time".
    """

    rank: int
    window_ns: int
    steps: int
    device_time_ns: int
    device_ratio_pct: float
    host_ratio_pct: float
    graph_build_ns: int
    graph_build_pct: float
    dataloader_ns: int
    dataloader_pct: float
    input_ns: int
    input_pct: float
    compile_ns: int
    compile_pct: float
    compiles: int
    compiles_per_step: float
    mme_lower_precision_ratio_pct: float
    device_host_overlapping_degree_pct: float
    mme_total_ns: int
    tpc_total_ns: int
    dma_total_ns: int
    mme_tpc_overlap_ns: int
    idle_total_ns: int


@dataclass(frozen=True)
class PerfToolReport:
    """Result of `analyze_perf_tool`: one row per rank with device activity (Gaudi only).

    Args:
        device: the trace's device in words (`TraceDevice.label`).
        ranks: habana_perf_tool's fields per rank.
    """

    device: str
    ranks: tuple[PerfToolRow, ...]
    findings: tuple[Finding, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        from hpuprof.analysis.report import as_plain

        return as_plain(self)


def _window(ev: pd.DataFrame, windows: pd.DataFrame) -> tuple[int, int, int]:
    """(start, end, steps) of one rank's profiled window."""
    if len(windows):
        return int(windows["start_ns"].min()), int(windows["end_ns"].max()), len(windows)
    return int(ev["ts_ns"].min()), int(ends(ev).max()), 0


def _input_rows(ev: pd.DataFrame, dev: pd.DataFrame) -> pd.DataFrame:
    """Host ops that launched a host-to-device copy (via the copy's `op_row`)."""
    copies = dev[isin(dev["kind"], ("memcpy",)) & cat_test(dev["name"], _is_h2d)]
    rows = copies["op_row"].to_numpy(dtype=np.int64)
    at = positions(ev.index, rows[rows >= 0])
    return ev.iloc[np.unique(at[at >= 0])]


def _is_data_loading(name: str) -> bool:
    return _DATA_LOADING.search(name) is not None


def _is_h2d(name: str) -> bool:
    return _H2D.search(name) is not None


def _lower_precision_pct(mme: pd.DataFrame) -> float:
    dur = mme["dur_ns"].to_numpy(dtype=np.int64)
    low = isin(mme["dtype"], LOWER_PRECISION)
    return pct(int(dur[low].sum()), int(dur.sum()))


_READ: Final = (
    *("rank", "ts_ns", "dur_ns", "is_device", "kind", "ph", "name", "hpu_event", "engine"),
    *("dtype", "op_row"),
)
"""The events' columns the fields are computed from."""


def _rank_row(rank: int, ev: pd.DataFrame, dev: pd.DataFrame, windows: pd.DataFrame) -> PerfToolRow:
    """The fields of one rank (`ev` its events, `dev` its device ops, not empty)."""
    lo, hi, steps = _window(ev, windows)
    window = hi - lo

    def clipped(rows: pd.DataFrame) -> iv.Merged:
        return iv.clip(merged(rows), lo, hi)

    busy = clipped(dev)
    device_ns = iv.total(busy)
    engine = strs(dev["engine"])
    engines = engine_sets(dev, engine).clipped(lo, hi)
    host = ev[~ev["is_device"].to_numpy(dtype=bool)]
    dataloader = clipped(host[cat_test(host["name"], _is_data_loading)])
    compiles = host[isin(host["hpu_event"], _COMPILE_EVENTS)]
    in_window = (compiles["ts_ns"].to_numpy() >= lo) & (compiles["ts_ns"].to_numpy() < hi)
    compile_set = clipped(compiles)
    input_set = iv.subtract(clipped(_input_rows(ev, dev)), iv.union(dataloader, compile_set))
    ops = clipped(host_ops(ev))
    claimed = iv.union(iv.union(dataloader, compile_set), input_set)
    graph_build = iv.subtract(ops, claimed)
    host_busy = iv.union(ops, claimed)
    shares = {
        "graph_build": iv.total(graph_build),
        "dataloader": iv.total(dataloader),
        "input": iv.total(input_set),
        "compile": iv.total(compile_set),
    }
    device_ratio = pct(device_ns, window)
    span = (int(busy[1][-1]) - int(busy[0][0])) if busy[0].size else 0
    compile_count = int(in_window.sum())
    return PerfToolRow(
        rank=rank,
        window_ns=window,
        steps=steps,
        device_time_ns=device_ns,
        device_ratio_pct=device_ratio,
        host_ratio_pct=round(100.0 - device_ratio, 2) if window else 0.0,
        graph_build_ns=shares["graph_build"],
        graph_build_pct=pct(shares["graph_build"], window),
        dataloader_ns=shares["dataloader"],
        dataloader_pct=pct(shares["dataloader"], window),
        input_ns=shares["input"],
        input_pct=pct(shares["input"], window),
        compile_ns=shares["compile"],
        compile_pct=pct(shares["compile"], window),
        compiles=compile_count,
        compiles_per_step=round(compile_count / max(steps, 1), 3),
        mme_lower_precision_ratio_pct=_lower_precision_pct(dev[engine == "MME"]),
        device_host_overlapping_degree_pct=pct(iv.overlap(busy, host_busy), device_ns),
        mme_total_ns=iv.total(engines.mme),
        tpc_total_ns=iv.total(engines.tpc),
        dma_total_ns=iv.total(engines.dma),
        mme_tpc_overlap_ns=engines.mme_tpc_overlap_ns,
        idle_total_ns=span - device_ns,
    )


def analyze_perf_tool(trace: Trace, options: AnalysisOptions | None = None) -> PerfToolReport:
    """habana_perf_tool's fields per rank, and its host recommendations as findings."""
    options = options or AnalysisOptions()
    device = trace_device(trace)
    if not device.is_hpu:
        only_gaudi = "habana_perf_tool's fields are for Gaudi traces"
        return PerfToolReport(device.label, (), notes=(only_gaudi,))
    ev = trace.events[list(_READ)]  # (the row subsets below copy only these columns)
    dev = device_events(ev)
    windows = step_windows(ev)
    rows = []
    for rank in sorted(int(r) for r in pd.unique(dev["rank"])):
        rows.append(
            _rank_row(rank, _of_rank(ev, rank), _of_rank(dev, rank), _of_rank(windows, rank))
        )
    notes = [] if rows else ["no device ops: habana_perf_tool's fields need a device timeline"]
    if device.emulated:
        notes.append(
            "device times are the emulator's device model (modeled), host times as recorded"
        )
    report = PerfToolReport(device.label, tuple(rows), notes=tuple(notes))
    return replace(report, findings=tuple(perf_tool_findings(report, options, device)))


def _of_rank(frame: pd.DataFrame, rank: int) -> pd.DataFrame:
    """The rows of `frame` of `rank`: `frame` itself when it holds no other rank (a
    one-card trace's events are not copied)."""
    in_rank = frame["rank"].to_numpy() == rank
    return frame if in_rank.all() else frame[in_rank]


def perf_tool_findings(
    report: PerfToolReport, options: AnalysisOptions, device: TraceDevice
) -> list[Finding]:
    """habana_perf_tool's recommendations: a large Host Summary share, MME in fp32."""
    out: list[Finding] = []
    for row in report.ranks:
        for part in HOST_SUMMARY:
            share = float(getattr(row, f"{part}_pct"))
            advice = advise(_ADVICE_TOPIC[part], device, bucketing="")
            if share < options.host_summary_warn_pct or advice is None:
                continue
            out.append(
                Finding(
                    "warning",
                    "perf_tool",
                    f"{_INTEL_NAME[part]}: {share:.1f}% of the profiled window (rank {row.rank})",
                    f"host_summary_{part}_pct",
                    share,
                    options.host_summary_warn_pct,
                    {
                        "rank": row.rank,
                        "time_ns": getattr(row, f"{part}_ns"),
                        "window_ns": row.window_ns,
                        "compiles_per_step": row.compiles_per_step,
                    },
                    advice,
                    "host_summary_warn_pct",
                )
            )
        ratio = row.mme_lower_precision_ratio_pct
        autocast = advise("autocast", device)
        if row.mme_total_ns and ratio < options.bf16_coverage_warn_pct and autocast is not None:
            out.append(
                Finding(
                    "info",
                    "perf_tool",
                    f"MME Lower Precision Ratio {ratio:.1f}%: MME time in fp32 (rank {row.rank})",
                    "mme_lower_precision_ratio_pct",
                    ratio,
                    options.bf16_coverage_warn_pct,
                    {"rank": row.rank, "mme_total_ns": row.mme_total_ns},
                    autocast,
                    "bf16_coverage_warn_pct",
                )
            )
    return out
