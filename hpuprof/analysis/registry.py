"""The registry of analyses: every report hpuprof makes, named once, with how it renders.

`analyze()`, every renderer (text, json, md, html, csv), the CLI's `--report` choices, `hpuprof
diff` and the dashboard read this table; nothing else lists the reports.

How to add a report:

1. write one module, `hpuprof/analysis/<name>.py`, with a frozen dataclass `XReport` (give it
   `findings: tuple[Finding, ...]` and `notes: tuple[str, ...]` fields when it has any) and a
   pure function `analyze_x(trace, options) -> XReport` that never mutates the trace;
2. add one `ReportSpec(...)` line to `BUILTIN` below: its name, a title, the function as
   `"module:function"` (imported only when the report runs), the tables it shows (an attribute
   of the report holding rows, or a function from the report to rows) and its scalar facts.

Column headers and units come from the column keys (`self_ns` -> "Self time", a time;
`idle_pct` -> "Idle %"); give a `Column(key, label, unit)` where the words need help. Another
package can call `register(spec)` instead of editing this file.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from hpuprof.errors import UsageError

Unit = Literal["", "ns", "ts", "pct", "bytes", "flops", "count", "row"]
"""How a column's values read: a duration in ns, a timestamp in ns ("ts": shown as the time
since the trace's first event), a percentage, bytes, FLOPs, a count, text (""), or "row": each
row's own `unit` field says (a table of metrics of different kinds)."""

View = Literal["brief", "full", "data"]
"""Where a table shows: `brief` also in the short summary after a run, `full` in the terminal
report, `data` only in the documents (md, html, csv, json), being too wide for a terminal."""


@dataclass(frozen=True)
class Column:
    """One column of a table.

    Args:
        key: the row key (a field of the row dataclass).
        label: the header in words (default: from the key, see `column_label`).
        unit: how the values read (default: from the key's suffix, see `column_unit`).
    """

    key: str
    label: str = ""
    unit: Unit | None = None

    @property
    def header(self) -> str:
        return self.label or column_label(self.key)

    @property
    def kind(self) -> Unit:
        return self.unit if self.unit is not None else column_unit(self.key)


@dataclass(frozen=True)
class Table:
    """A table of a report.

    Args:
        name: unique across all reports (the CSV file name, the JSON-free table id).
        title: the heading in words.
        rows: the report attribute holding the rows (a tuple of dataclasses or dicts), or a
            function from the report to rows.
        columns: the columns a terminal shows (every key when empty); the documents show all.
        view: where the table shows (`View`).
    """

    name: str
    title: str
    rows: str | Callable[[Any], Iterable[Any]]
    columns: tuple[Column, ...] = ()
    view: View = "data"

    def rows_of(self, section: Any) -> list[Any]:
        if callable(self.rows):
            return list(self.rows(section))
        return list(getattr(section, self.rows, ()) or ())


@dataclass(frozen=True)
class ReportSpec:
    """One analysis and how it renders.

    Args:
        name: the report's name (`--report NAME`, the JSON key of its section).
        title: its heading in words.
        function: `"module:function"`; called as `function(trace, options)` (or, for a
            comparison, `function(a, b, options)`), returning the report dataclass.
        tables: its tables, in display order.
        facts: scalar attributes shown as a small "name: value" table.
        default: run by `analyze()` when no reports are named.
        inputs: how many traces the function takes (1, or 2 for a comparison).
        partial: rank by rank (`hpuprof analyze --workers`, `hpuprof.distributed`):
            `"module:function"` called as `function(one_rank_trace, options)` on a worker,
            returning a small picklable per-rank result; empty: `function` itself.
        merge: `"module:function"` called as `function({rank: partial}, failed)` on the
            client, returning the report dataclass; empty: the per-rank reports stacked with
            their rank (`hpuprof.analysis.stack:stack_ranks`).
        host_timed: the parts of the report that follow measured host times even where their
            unit is no time: a table (its rows are chosen or ordered by them), a
            `"table.column"` (facts are the table `"<report>_summary"`), or a finding's
            metric. The golden reports of the sample traces, which hold across regenerations
            of the samples, leave these out as they leave out every time and % column
            (`tests/analysis/test_goldens.py`).
    """

    name: str
    title: str
    function: str
    tables: tuple[Table, ...] = ()
    facts: tuple[Column, ...] = ()
    default: bool = True
    inputs: int = 1
    partial: str = ""
    merge: str = ""
    host_timed: tuple[str, ...] = ()

    def load(
        self, which: Literal["function", "partial", "merge"] = "function"
    ) -> Callable[..., Any]:
        """The analysis function (or its per-rank `partial` / `merge`), imported on first use."""
        target = getattr(self, which) or (
            self.function if which == "partial" else "hpuprof.analysis.stack:stack_ranks"
        )
        module, _, attr = target.partition(":")
        fn: Callable[..., Any] = getattr(importlib.import_module(module), attr)
        return fn


def cols(*keys: str | Column) -> tuple[Column, ...]:
    """Columns from keys (or ready Columns), for short registry lines."""
    return tuple(k if isinstance(k, Column) else Column(k) for k in keys)


# --- column words and units ------------------------------------------------------------------

_WORDS: dict[str, str] = {
    "mme": "MME",
    "tpc": "TPC",
    "dma": "DMA",
    "nic": "NIC",
    "hpu": "HPU",
    "cpu": "CPU",
    "gpu": "GPU",
    "id": "id",
    "p50": "p50",
    "p90": "p90",
    "p95": "p95",
    "bf16": "bf16",
    "fp32": "fp32",
    "flops": "FLOPs",
    "util": "utilisation",
    "dur": "duration",
    "ts": "start",
    "num": "number of",
    "vs": "vs",
    "comm": "communication",
}
_LABELS: dict[str, str] = {
    "span_ns": "Span",
    "self_ns": "Self time",
    "total_ns": "Total time",
    "mean_ns": "Mean time",
    "max_ns": "Max time",
    "min_ns": "Min time",
    "time_ns": "Time",
    "dur_ns": "Duration",
    "ts_ns": "Start",
    "duration_ns": "Duration",
    "count": "Calls",
    "calls": "Calls",
    "pct": "%",
    "pct_of_idle": "% of idle",
    "pct_of_span": "% of span",
    # the `nodes` report: Intel's "Analyzed Nodes" headers (µs values, as Intel gives them)
    "start_us": "Start time of node",
    "end_us": "End time of node",
    "min_single_engine_us": "Min single engine (us)",
    "max_single_engine_us": "Max single engine (us)",
    "diff_max_min_single_engine_us": "Diff max min single engine (us)",
    "avg_single_engine_active_us": "Avg single engine active (us)",
    "variance_single_engine_us2": "Variance single engine (us²)",
    "unexposed_tpc_us": "Unexposed tpc (us)",
    "exposed_tpc_us": "Exposed tpc (us)",
    "unexposed_mme_us": "Unexposed mme (us)",
    "exposed_mme_us": "Exposed mme (us)",
    "exposed_dma_us": "Exposed dma (us)",
    "mme_parallel_execution_pct": "MME Parallel Execution (%)",
    "tpc_parallel_execution_pct": "TPC Parallel Execution (%)",
}


def column_unit(key: str) -> Unit:
    """The unit a key's suffix names: `ts_ns` timestamp, `_ns` time, `_pct` %, `_bytes`,
    `flops`; else none."""
    if key == "ts_ns" or key.endswith("_ts_ns"):
        return "ts"
    if key.endswith("_ns") or key == "ns":
        return "ns"
    if key.endswith("_pct") or key == "pct" or key.startswith("pct_"):
        return "pct"
    if key.endswith("_bytes") or key == "bytes":
        return "bytes"
    if key.endswith("flops"):
        return "flops"
    return ""


def column_label(key: str) -> str:
    """A column key in words: `device_ratio_pct` -> "Device ratio %", `self_ns` -> "Self time"."""
    if key in _LABELS:
        return _LABELS[key]
    unit = column_unit(key)
    stem = key
    for suffix in ("_ns", "_pct", "_bytes"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
    words = [_WORDS.get(w, w) for w in stem.split("_") if w]
    text = " ".join(words) or key
    text = text[0].upper() + text[1:]
    if unit == "pct":
        return f"{text} %"
    if unit == "ns" and not any(w in words for w in ("time", "duration", "span")):
        return f"{text} time"
    return text


# --- the registry ----------------------------------------------------------------------------

_REGISTRY: dict[str, ReportSpec] = {}


def register(spec: ReportSpec) -> ReportSpec:
    """Add (or replace) a report; its table names must not clash with another report's."""
    taken = {t.name: s.name for s in _REGISTRY.values() if s.name != spec.name for t in s.tables}
    for t in spec.tables:
        if t.name in taken:
            raise ValueError(
                f"table {t.name!r} of {spec.name!r} already belongs to {taken[t.name]!r}"
            )
    _REGISTRY[spec.name] = spec
    return spec


def specs(inputs: int | None = 1) -> tuple[ReportSpec, ...]:
    """Registered reports in registry order (only those taking `inputs` traces; None: all)."""
    return tuple(s for s in _REGISTRY.values() if inputs is None or s.inputs == inputs)


def spec(name: str) -> ReportSpec:
    """The report named `name`; a UsageError naming the choices otherwise."""
    found = _REGISTRY.get(name)
    if found is None:
        raise UsageError(f"unknown report {name!r}; choose from {', '.join(report_names())}")
    return found


def report_names(inputs: int | None = 1) -> tuple[str, ...]:
    """Names of the registered reports (single-trace ones by default)."""
    return tuple(s.name for s in specs(inputs))


def default_report_names() -> tuple[str, ...]:
    """The reports `analyze()` runs when none are named."""
    return tuple(s.name for s in specs() if s.default)


def parse_reports(text: str | Sequence[str] | None) -> tuple[str, ...]:
    """`"bottleneck,ops"` or a list into validated report names (the defaults when empty)."""
    if not text:
        return default_report_names()
    items = text.split(",") if isinstance(text, str) else list(text)
    names = tuple(n.strip() for n in items if n.strip())
    single = set(report_names())
    for n in names:
        if n not in single:
            if n in _REGISTRY:
                raise UsageError(f"report {n!r} compares two traces: use `hpuprof diff`")
            spec(n)  # raises with the choices
    return names


def tables_of(name: str, section: Any) -> list[tuple[Table, list[Any]]]:
    """(table, rows) of one report section, in display order (empty tables included)."""
    s = _REGISTRY.get(name)
    if s is None:
        return []
    return [(t, t.rows_of(section)) for t in s.tables]


def facts_of(name: str, section: Any) -> list[tuple[Column, Any]]:
    """(column, value) of a section's scalar facts that it has."""
    s = _REGISTRY.get(name)
    if s is None:
        return []
    out = []
    for c in s.facts:
        if dataclasses.is_dataclass(section) and hasattr(section, c.key):
            out.append((c, getattr(section, c.key)))
        elif isinstance(section, Mapping) and c.key in section:
            out.append((c, section[c.key]))
    return out


def all_tables() -> dict[str, tuple[ReportSpec, Table]]:
    """Every table name -> (its report, the table)."""
    return {t.name: (s, t) for s in _REGISTRY.values() for t in s.tables}


# --- the built-in reports --------------------------------------------------------------------


def _rank_of(row: Any) -> dict[str, Any]:
    """{"rank": r} for a row stacked rank by rank (`hpuprof.analysis.stack`), else {}."""
    return {"rank": row.rank} if hasattr(row, "rank") else {}


def _group_rows(groups: Any) -> list[dict[str, Any]]:
    """Compilation groups with their causes in words (not the raw cause dicts)."""
    return [
        {
            **_rank_of(g),
            "key": g.key,
            "compilations": g.compilations,
            "recompilations": g.recompilations,
            "time_ns": g.time_ns,
            "cause_summary": g.cause_summary,
            "causes": "; ".join(str(c.get("cause") or c.get("kind")) for c in g.causes),
        }
        for g in groups
    ]


def _shape_rows(rep: Any) -> list[dict[str, Any]]:
    return [
        {**_rank_of(h), "op": h.op, "shape": s, "count": c}
        for h in rep.shape_histograms
        for s, c in h.shapes
    ]


BUILTIN: tuple[ReportSpec, ...] = (
    ReportSpec(
        "bottleneck",
        "Bottlenecks",
        "hpuprof.analysis.bottleneck:analyze_bottlenecks",
        tables=(
            Table(
                "temporal",
                "Temporal breakdown",
                "temporal",
                cols("rank", "span_ns", "idle_pct", "compute_pct", "non_compute_pct"),
                "brief",
            ),
            Table("kernel_types", "Device time by kernel type", "kernel_types", view="full"),
            Table("engines", "Device engines", "engines"),
            Table(
                "host_device",
                "Host and device",
                "host_device",
                cols(
                    "rank",
                    "device_ratio_pct",
                    "mme_ns",
                    "tpc_ns",
                    "dma_ns",
                    "mme_tpc_overlap_ns",
                    "device_idle_ns",
                ),
                "full",
            ),
            Table(
                "steps",
                "Steps",
                "steps",
                cols("rank", "step", "duration_ns", "compute_ns", "idle_pct", "host_ops"),
                "full",
            ),
            Table("idle_causes", "Device idle causes", "idle_causes", view="brief"),
            Table(
                "top_host_ops",
                "Top host ops",
                "top_host_ops",
                cols("name", "count", "total_ns", "self_ns"),
                "full",
            ),
            Table(
                "top_device_ops",
                "Top device ops",
                "top_device_ops",
                cols("name", "kernel_type", "engine", "count", "total_ns"),
                "full",
            ),
        ),
        facts=cols(Column("device_time", "Device time is")),
        host_timed=(
            "idle_causes",
            "top_host_ops",
            "device_idle_pct",
            "idle_pct_sync",
            "idle_pct_data_loading",
        ),
    ),
    ReportSpec(
        "perf_tool",
        "habana_perf_tool summary",
        "hpuprof.analysis.perf_tool:analyze_perf_tool",
        tables=(
            Table(
                "perf_tool",
                "habana_perf_tool fields",
                "ranks",
                cols(
                    "rank",
                    Column("device_ratio_pct", "Device ratio %"),
                    Column("graph_build_pct", "Graph Build %"),
                    Column("dataloader_pct", "DataLoader %"),
                    Column("input_pct", "Input %"),
                    Column("compile_pct", "Compile %"),
                    "compiles_per_step",
                    Column("mme_lower_precision_ratio_pct", "MME lower precision %"),
                    Column("device_host_overlapping_degree_pct", "Device-host overlap %"),
                    Column("mme_total_ns", "MME total"),
                    Column("tpc_total_ns", "TPC total"),
                    Column("dma_total_ns", "DMA total"),
                    Column("mme_tpc_overlap_ns", "MME/TPC overlap"),
                    Column("idle_total_ns", "Idle total"),
                ),
                "full",
            ),
        ),
        facts=cols(Column("device", "Device")),
        host_timed=(
            "perf_tool.compiles",  # those in the window: its edges are host times
            "perf_tool.compiles_per_step",
            "host_summary_graph_build_pct",
            "host_summary_dataloader_pct",
            "host_summary_input_pct",
            "host_summary_compile_pct",
        ),
    ),
    ReportSpec(
        "synapse",
        "Synapse API calls",
        "hpuprof.analysis.synapse:analyze_synapse",
        tables=(
            Table(
                "synapse_calls",
                "Time in each Synapse call",
                "by_call",
                cols("call", "kind", "count", "total_ns", "mean_ns", "max_ns", "pct_of_calls"),
                "full",
            ),
            Table(
                "synapse_streams",
                "Launches, copies and syncs per recipe and stream",
                "by_recipe_stream",
                cols("recipe", "stream_name", "stream", "launches", "copies", "syncs", "time_ns"),
                "full",
            ),
            Table("synapse_scopes", "Synapse calls per bridge scope", "by_scope", view="full"),
        ),
        facts=cols(
            Column("calls", "Synapse calls", "count"),
            Column("call_time_ns", "Time in Synapse calls"),
            Column("in_scope_pct", "Calls inside a bridge scope %"),
        ),
        default=False,
    ),
    ReportSpec(
        "dynamicity",
        "Dynamicity and compilations",
        "hpuprof.analysis.dynamicity:analyze_dynamicity",
        tables=(
            Table("compilations", "Compilations", "events"),
            Table(
                "compiles_by_graph",
                "Compilations by graph",
                lambda rep: _group_rows(rep.by_graph),
                cols(
                    Column("key", "Graph"),
                    "compilations",
                    "recompilations",
                    "time_ns",
                    Column("cause_summary", "Recompile causes"),
                ),
                "full",
            ),
            Table(
                "compiles_by_module",
                "Compilations by module",
                lambda rep: _group_rows(rep.by_module),
            ),
            Table("compile_timeline", "Compilations per step", "timeline"),
            Table("recompile_table_1", "Recompiling modules", "recompile_table"),
            Table("recompile_table_2", "Recompile counts per module", "recompile_counts"),
            Table("dynamic_ops", "Data-dependent-shape ops", "dynamic_ops", view="full"),
            Table("shape_histograms", "Input shapes per op", _shape_rows),
        ),
        facts=cols(
            Column("source", "Source"),
            "compilations",
            "recompilations",
            Column("compile_time_ns", "Compile time"),
            "bucketing_target",
        ),
    ),
    ReportSpec(
        "precision",
        "Mixed precision",
        "hpuprof.analysis.precision:analyze_precision",
        tables=(
            Table(
                "precision_by_dtype",
                "Device time by dtype",
                "by_dtype",
                cols("dtype", "device_time_ns", "flops", "ops"),
                "full",
            ),
            Table("precision_by_op", "Ops by dtype", "by_op"),
            Table("precision_by_module", "Modules by dtype", "by_module"),
            Table("casts", "Casts", "casts", view="full"),
            Table(
                "missed_lower_precision",
                "Lower-precision-list ops left in fp32",
                "missed_lower_precision",
            ),
            Table(
                "fp32_list_in_low_precision",
                "FP32-list ops in low precision",
                "fp32_list_in_low_precision",
            ),
        ),
        facts=cols(
            Column("bf16_coverage_pct", "Matmul/conv FLOPs in bf16/fp16 %"),
            Column("matmul_conv_flops", "Matmul/conv FLOPs"),
            Column("flops_source", "FLOPs from"),
            Column("to_copy_ops", "to/_to_copy calls", "count"),
        ),
    ),
    ReportSpec(
        "fallback",
        "CPU fallbacks",
        "hpuprof.analysis.fallback:analyze_fallbacks",
        tables=(
            Table(
                "fallback_ops",
                "Ops that fell back to CPU",
                "ops",
                cols(
                    "op",
                    "count",
                    "host_time_ns",
                    "copies",
                    "forced_flush",
                    "dtypes",
                    "unsupported_dtypes",
                ),
                "full",
            ),
        ),
        facts=cols(Column("total", "Fallbacks", "count"), Column("host_time_ns", "Host time")),
    ),
    ReportSpec(
        "graphs",
        "HPU graphs",
        "hpuprof.analysis.hpu_graphs:analyze_hpu_graphs",
        tables=(
            Table("hpu_graphs", "HPU graphs", "graphs", view="full"),
            Table(
                "graph_candidates", "Modules that could be wrapped", "eligible_modules", view="full"
            ),
        ),
        facts=cols(
            "captures", "replays", "cache_misses", Column("host_saved_ns", "Host time saved")
        ),
    ),
    ReportSpec(
        "ops",
        "Ops and kernels",
        "hpuprof.analysis.ops:analyze_ops",
        tables=(
            Table(
                "ops",
                "Ops: host and device time",
                "ops",
                cols(
                    "name",
                    "calls",
                    "self_ns",
                    "total_ns",
                    Column("device_self_ns", "Device self time"),
                    Column("device_total_ns", "Device total time"),
                ),
                "full",
            ),
            Table(
                "kernels",
                "Device kernels",
                "kernels",
                cols(
                    "name",
                    "kernel_type",
                    "count",
                    "total_ns",
                    Column("pct_of_device", "% of device time"),
                    Column("op", "Launched by"),
                ),
                "full",
            ),
            Table(
                "ops_by_rank",
                "Ops per rank",
                "by_rank",
                cols(
                    "rank",
                    "name",
                    "calls",
                    "self_ns",
                    "total_ns",
                    Column("device_self_ns", "Device self time"),
                ),
                "full",
            ),
        ),
        facts=cols(
            Column("host_self_ns", "Host op time"),
            Column("device_ns", "Device time"),
            Column("attributed_device_ns", "Device time of ops"),
            Column("unattributed_device_ns", "Device time without an op"),
            Column("attribution", "Device time attributed by"),
        ),
    ),
    ReportSpec(
        "ranks",
        "Ranks",
        "hpuprof.analysis.ranks:analyze_ranks",
        tables=(
            Table(
                "rank_summary",
                "Ranks: step time and where it went",
                "ranks",
                cols(
                    "rank",
                    "steps",
                    Column("median_step_ns", "Median step"),
                    "compute_pct",
                    Column("exposed_comm_pct", "Exposed communication %"),
                    "idle_pct",
                    Column("vs_median_pct", "vs median rank %"),
                    "straggler",
                ),
                "full",
            ),
            Table("rank_steps", "Step time per rank and step", "steps"),
        ),
        facts=cols(
            Column("steps_per_rank", "Steps per rank", "count"),
            Column("mean_step_ns", "Mean step time"),
            "stragglers",
        ),
        partial="hpuprof.analysis.ranks:partial_of_rank",
        merge="hpuprof.analysis.ranks:merge_ranks",
        host_timed=(
            "rank_summary.straggler",
            "ranks_summary.stragglers",
            "rank_step_vs_median_pct",
        ),
    ),
    ReportSpec(
        "memory",
        "Memory",
        "hpuprof.analysis.memory:analyze_memory",
        tables=(
            Table(
                "memory_devices",
                "Memory per device",
                "devices",
                cols(
                    "rank",
                    "device",
                    Column("peak_bytes", "Peak"),
                    Column("peak_at_ns", "Peak at"),
                    Column("final_bytes", "At the end"),
                    "allocations",
                ),
                "full",
            ),
            Table(
                "memory_top_ops",
                "Top allocating ops",
                "top_ops",
                cols(
                    "device",
                    Column("op", "Allocated in"),
                    "allocations",
                    Column("allocated_bytes", "Allocated"),
                    Column("live_at_peak_bytes", "Live at the peak"),
                ),
                "full",
            ),
            Table("memory_timeline", "Memory over time", "timeline"),
        ),
        facts=cols(Column("source", "Memory data from")),
        host_timed=("memory_top_ops",),  # an allocation belongs to the op running at its time
    ),
    ReportSpec(
        "distributed",
        "Distributed: ranks, streams, critical path, collective skew",
        "hpuprof.analysis.distributed:analyze_distributed",
        tables=(
            Table(
                "comm_comp_overlap",
                "Communication overlapped by computation",
                "comm_comp_overlap",
                cols(
                    "rank",
                    Column("overlap_pct", "Comm overlapped %"),
                    Column("comm_ns", "Comm time"),
                    "overlap_ns",
                ),
                "full",
            ),
            Table(
                "idle_breakdown",
                "Idle time per stream",
                "idle_breakdown",
                cols("rank", "stream", "category", "idle_ns", "ratio"),
                "full",
            ),
            Table("queue_length", "Launch queue length per stream", "queue_length", view="full"),
            Table("memory_bandwidth", "Copy bandwidth (GB/s)", "memory_bandwidth"),
            Table(
                "launch_stats",
                "Launches",
                "launch_stats",
                cols(
                    "rank",
                    "launches",
                    Column("cpu_mean_ns", "Host call mean"),
                    Column("delay_mean_ns", "Delay mean"),
                    Column("delay_p95_ns", "Delay p95"),
                ),
                "full",
            ),
            Table(
                "critical_path",
                "Critical path per step",
                "critical_path",
                cols(
                    "rank",
                    "step",
                    Column("length_ns", "Length"),
                    Column("cpu_bound_pct", "Host %"),
                    Column("compute_bound_pct", "Compute %"),
                    Column("communication_bound_pct", "Comm %"),
                    Column("kernel_kernel_overhead_pct", "Op gaps %"),
                    Column("launch_overhead_pct", "Launch %"),
                ),
                "full",
            ),
            Table("critical_path_overlay", "Critical path edges", "critical_path_overlay"),
            Table("collective_skew", "Collectives: arrival skew", "collective_skew"),
            Table(
                "skew_by_rank",
                "Last arrivals at collectives per rank",
                "skew_by_rank",
                view="brief",
            ),
            Table("skew_by_step", "Collective skew per step", "skew_by_step", view="full"),
            Table("load_imbalance", "Compute per rank", "load_imbalance", view="full"),
            Table("failed_ranks", "Ranks not analysed", "failed", view="brief"),
        ),
        default=False,
        partial="hpuprof.analysis.distributed:partial_of_rank",
        merge="hpuprof.analysis.distributed:merge_rank_partials",
        host_timed=(
            "idle_breakdown.gaps",
            "idle_breakdown.ratio",
            "queue_length.mean",
            "queue_length.p50",
            "queue_length.max",
            "launch_stats.runtime_outliers",
            "launch_stats.delay_outliers",
            "launch_stats.short_kernels",
            "critical_path",
            "critical_path_overlay",
            "collective_skew",
            "skew_by_rank",
            "skew_by_step",
            "last_arrival_pct",
            "compute_above_mean_pct",
            "exposed_transfer_pct",
        ),
    ),
    ReportSpec(
        "nodes",
        "Analyzed nodes (Intel's per-node table)",
        "hpuprof.analysis.nodes:analyze_nodes",
        tables=(
            Table(
                "nodes",
                "Analyzed Nodes",
                "nodes",
                cols(
                    Column("unit", "Unit"),
                    Column("node", "Node Name"),
                    Column("op_type", "Op Type"),
                    Column("duration_us", "Duration (us)", ""),
                    Column("active_us", "Active (us)", ""),
                    Column("avg_single_engine_us", "Avg single engine (us)", ""),
                    Column("num_activations", "Num activations", "count"),
                    Column("parallel_engines", "Parallel Engines", "count"),
                ),
                "full",
            ),
        ),
        facts=cols(Column("iterations_from", "Iterations from")),
        default=False,
    ),
    ReportSpec(
        "compare",
        "Comparison",
        "hpuprof.analysis.diff:diff_traces",
        tables=(
            Table(
                "compare_metrics",
                "Per-step metrics (mean per step and rank)",
                "metrics",
                cols(
                    Column("label", "Metric"),
                    Column("a", "A", "row"),
                    Column("b", "B", "row"),
                    Column("diff", "B - A", "row"),
                    Column("pct", "Change %"),
                    Column("noise", "Noise", "row"),
                ),
                "full",
            ),
            Table(
                "compare_ops",
                "Per-op changes (per step; host self time, device time counted once)",
                "ops",
                cols(
                    "name",
                    Column("a_host_ns", "A host self"),
                    Column("b_host_ns", "B host self"),
                    Column("a_device_ns", "A device"),
                    Column("b_device_ns", "B device"),
                    "regression",
                ),
                "full",
            ),
            Table("compare_kernels", "Per-kernel changes (device time per step)", "kernels"),
        ),
        facts=cols(
            Column("a_sampled", "A: means over"),
            Column("b_sampled", "B: means over"),
            Column("a_step", "Only step of A"),
            Column("b_step", "Only step of B"),
        ),
        default=False,
        inputs=2,
        host_timed=(
            "compare_metrics.noise",
            "compare_ops.status",
            "compare_ops.regression",
            "compare_kernels.status",
            "mean_step_ns",
            "op_host_self_ns",
            "op_device_ns",
        ),
    ),
)

for _spec in BUILTIN:
    register(_spec)
