"""The `nodes` report: Intel's "Analyzed Nodes" table, per graph node, from the engine lanes.

One row per graph node (and iteration) with Intel's columns and units (µs, %): how long it ran,
how busy its engines were, how many activations on how many engines, and how much of it other
engines hid. Every figure comes from the device lanes' slices (a hardware-profiler trace's
BEGIN / END pairs, a torch.profiler trace's engine lanes, the emulator's modeled lanes).

Grouping: a node is the device slices of one name in one graph (`graph_id`, the recipe) on the
MME / TPC / DMA engines. Where Intel's analyzed-nodes rows came with the trace (the table
beside a hardware CSV, an `.hltv`'s `views/trace_analyzer.json`: the "Analyzed Nodes" lane),
they split a node into its iterations (`name`, `name iter 2`, ...): each activation goes to the
iteration of its name that started last at or before it. Without them one row covers every
activation of the name in the graph. Definitions: docs/gaudi-hardware-traces.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from hpuprof.analysis import intervals
from hpuprof.analysis._common import device_events, isin, strs, without_args
from hpuprof.analysis.device import trace_device
from hpuprof.analysis.options import AnalysisOptions
from hpuprof.trace.gaudi_node_spans import NODES_LANE
from hpuprof.trace.model import Trace

NODE_ENGINES = ("MME", "TPC", "DMA")
"""The engine classes whose slices make nodes."""
OTHER_COMPUTE = {"MME": ("TPC",), "TPC": ("MME",), "DMA": ("MME", "TPC")}
"""For each engine class, the engines whose activity hides (unexposes) its time."""
_ITERATION = re.compile(r"^(.*) iter \d+$")
_INTEL_RESOLUTION = 1
"""Intel's node times are µs printed to the ns (3 decimals), not a tunable threshold: an
activation may start up to this many ns before the node's printed start."""


@dataclass(frozen=True)
class NodeRow:
    """One node (iteration) with Intel's "Analyzed Nodes" columns (times in µs).

    `*_single_engine_*`: per engine the node ran on, from its first start to its last end
    (`avg_single_engine_active_us`: the time that engine was busy in between); their minimum,
    maximum, mean and population variance (µs²). None where a column does not apply to the
    node's unit (Intel's nan).
    """

    unit: str
    node: str
    op_type: str
    graph: str
    start_us: float
    end_us: float
    duration_us: float
    active_us: float
    min_single_engine_us: float
    max_single_engine_us: float
    diff_max_min_single_engine_us: float
    avg_single_engine_us: float
    avg_single_engine_active_us: float
    variance_single_engine_us2: float
    num_activations: int
    parallel_engines: int
    unexposed_tpc_us: float | None
    exposed_tpc_us: float | None
    unexposed_mme_us: float | None
    exposed_mme_us: float | None
    exposed_dma_us: float | None
    mme_parallel_execution_pct: int
    tpc_parallel_execution_pct: int


@dataclass(frozen=True)
class NodesReport:
    """Result of `analyze_nodes`: the rows in start order, and notes on what is left out."""

    nodes: tuple[NodeRow, ...]
    iterations_from: str
    notes: tuple[str, ...] = field(default_factory=tuple)


NOT_COMPUTED = (
    "MME Compute Utilization (%) and MME expected vs actual (%) are left out: they need the "
    "MME's own compute-cycle counters and the node's operand shapes (for the device model's "
    "MME term), which hardware-profiler CSV rows do not carry (Intel's table leaves them "
    "empty too)."
)
NOT_COMPUTED_KINETO = (
    "MME Compute Utilization (%) and MME expected vs actual (%) are left out: they need the "
    "MME's own compute-cycle counters and the node's operand shapes (for the device model's "
    "MME term); a torch.profiler trace's device rows carry neither (operand shapes are on "
    "host ops, and a lazy-mode kernel belongs to its graph's launch, not to an op)."
)
HARDWARE_FORMATS = ("gaudi-hw-profiler-csv", "gaudi-hltv")
"""Trace formats of the hardware profiler (`Trace.format`'s first part)."""
MODELED = (
    "Device times here are the emulator's device model's own: MME expected vs actual would "
    "compare the model with itself, so it is left out."
)


ONE_ROW_PER_NAME = (
    "No Intel node rows came with this trace: each row covers every activation of its name in "
    "its graph, so Duration spans from the first of them to the last (across launches)."
)


def analyze_nodes(trace: Trace, options: AnalysisOptions | None = None) -> NodesReport:
    """Intel's "Analyzed Nodes" table from the device lanes of `trace`."""
    full = without_args(trace.events)
    dev = device_events(full)
    dev = dev[isin(dev["engine"], NODE_ENGINES)]
    hardware = trace.format.split("+", 1)[0] in HARDWARE_FORMATS
    notes = [NOT_COMPUTED if hardware else NOT_COMPUTED_KINETO]
    if trace.device_time == "modeled" or trace_device(trace).emulated:
        notes.append(MODELED)
    spans = _node_spans(full)
    if dev.empty:
        return NodesReport((), "none", (*notes, "No MME / TPC / DMA slices in this trace."))
    frame = pd.DataFrame(
        {
            "name": strs(dev["name"]),
            "graph": strs(dev["graph_id"]),
            "engine": strs(dev["engine"]),
            "lane": strs(dev["pid"]).astype(object) + "/" + strs(dev["tid"]).astype(object),
            "device": dev["device"].to_numpy(),
            "start": dev["ts_ns"].to_numpy(np.int64),
            "end": dev["ts_ns"].to_numpy(np.int64) + dev["dur_ns"].to_numpy(np.int64),
            "row": np.arange(len(dev)),
        }
    )
    frame["node"] = _iterations(frame, spans)
    busy: dict[tuple[int, str], intervals.Merged] = {}
    for (device, engine), group in frame.groupby(["device", "engine"], sort=False):
        busy[(int(str(device)), str(engine))] = intervals.merge(group["start"], group["end"])
    op_types = _op_types(trace, dev)
    rows = [
        _row(group, str(node), str(graph), busy, op_types)
        for (graph, node), group in frame.groupby(["graph", "node"], sort=False)
    ]
    rows.sort(key=lambda r: (r.start_us, r.node))
    if len(spans):
        return NodesReport(tuple(rows), "Intel's analyzed-nodes rows", tuple(notes))
    return NodesReport(tuple(rows), "node names", (*notes, ONE_ROW_PER_NAME))


def _node_spans(events: pd.DataFrame) -> pd.DataFrame:
    """Intel's node rows carried on the "Analyzed Nodes" lane: name and start, by start."""
    on_lane = isin(events["kind"], ("device_annotation",)) & (strs(events["tid"]) == NODES_LANE)
    spans = events[on_lane]
    return pd.DataFrame(
        {"name": strs(spans["name"]), "start": spans["ts_ns"].to_numpy(np.int64)}
    ).sort_values("start", kind="stable")


def _iterations(frame: pd.DataFrame, spans: pd.DataFrame) -> np.ndarray:
    """Each activation's node: the name of its iteration's row when Intel's rows are there."""
    node = frame["name"].to_numpy(dtype=object).copy()
    if spans.empty:
        return node
    base = np.array([(m.group(1) if (m := _ITERATION.match(n)) else n) for n in spans["name"]])
    for name, group in frame.groupby("name", sort=False):
        mine = spans[base == name]
        if mine.empty:
            continue
        starts = mine["start"].to_numpy(np.int64)
        which = np.searchsorted(
            starts, group["start"].to_numpy(np.int64) + _INTEL_RESOLUTION, "right"
        )
        names = mine["name"].to_numpy(dtype=object)
        node[group.index.to_numpy()] = names[np.maximum(which - 1, 0)]
    return node


def _op_types(trace: Trace, dev: pd.DataFrame) -> dict[str, str]:
    """The first `Operation` arg (hardware-profiler traces) per slice name, else ""."""
    found: dict[str, str] = {}
    names = strs(dev["name"])
    positions = trace.events.index.get_indexer(dev.index)
    for name in pd.unique(names):
        first = int(positions[int(np.flatnonzero(names == name)[0])])
        operation = trace.args(first).get("Operation", "")
        found[str(name)] = str(operation) if operation else ""
    return found


def _us(ns: float) -> float:
    return round(ns / 1000.0, 3)


def _row(
    group: pd.DataFrame,
    node: str,
    graph: str,
    busy: dict[tuple[int, str], intervals.Merged],
    op_types: dict[str, str],
) -> NodeRow:
    unit = str(group["engine"].mode().iloc[0])
    merged = intervals.merge(group["start"], group["end"])
    start, end = int(group["start"].min()), int(group["end"].max())
    active = intervals.total(merged)
    per_engine = group.groupby("lane", sort=False).agg(first=("start", "min"), last=("end", "max"))
    single = (per_engine["last"] - per_engine["first"]).to_numpy(np.float64) / 1000.0
    single_active = np.array(
        [
            intervals.total(intervals.merge(g["start"], g["end"]))
            for _, g in group.groupby("lane", sort=False)
        ],
        dtype=np.float64,
    )
    device = int(group["device"].iloc[0])
    others = _EMPTY
    for other in OTHER_COMPUTE[unit]:
        others = intervals.union(others, busy.get((device, other), _EMPTY))
    hidden = intervals.overlap(merged, others)
    duration = end - start
    share = int(np.floor(100.0 * active / duration)) if duration > 0 else 100

    def of(wanted: str, value: float) -> float | None:
        return _us(value) if unit == wanted else None

    return NodeRow(
        unit=unit,
        node=node,
        op_type=op_types.get(str(group["name"].iloc[0]), ""),
        graph=graph,
        start_us=_us(start),
        end_us=_us(end),
        duration_us=_us(duration),
        active_us=_us(active),
        min_single_engine_us=round(float(single.min()), 3),
        max_single_engine_us=round(float(single.max()), 3),
        diff_max_min_single_engine_us=round(float(single.max() - single.min()), 3),
        avg_single_engine_us=round(float(single.mean()), 3),
        avg_single_engine_active_us=_us(float(single_active.mean())),
        variance_single_engine_us2=round(float(single.var()), 3),
        num_activations=len(group),
        parallel_engines=len(per_engine),
        unexposed_tpc_us=of("TPC", hidden),
        exposed_tpc_us=of("TPC", active - hidden),
        unexposed_mme_us=of("MME", hidden),
        exposed_mme_us=of("MME", active - hidden),
        exposed_dma_us=of("DMA", active - hidden),
        mme_parallel_execution_pct=share if unit == "MME" else 0,
        tpc_parallel_execution_pct=share if unit == "TPC" else 0,
    )


_EMPTY: intervals.Merged = (np.zeros(0, np.int64), np.zeros(0, np.int64))
