"""Terminal renderer (rich): findings first, then the key tables; width-aware, optional colour."""

from __future__ import annotations

import io

from hpuprof.analysis.report import Report
from hpuprof.render.tables import fmt_cell, report_tables

SEVERITY_STYLE = {"critical": "bold red", "warning": "yellow", "info": "cyan"}
BRIEF_TABLES = ("temporal", "idle_causes")
FULL_TABLES = (
    "temporal",
    "kernel_types",
    "host_device",
    "idle_causes",
    "steps",
    "top_host_ops",
    "top_device_ops",
    "compiles_by_graph",
    "dynamic_ops",
    "precision_by_dtype",
    "casts",
    "fallback_ops",
    "hpu_graphs",
    "graph_candidates",
)
COLUMNS: dict[str, tuple[str, ...]] = {
    "temporal": ("rank", "span_ns", "idle_pct", "compute_pct", "non_compute_pct"),
    "steps": ("rank", "step", "duration_ns", "compute_ns", "idle_pct", "host_ops"),
    "top_host_ops": ("name", "count", "total_ns", "self_ns"),
    "top_device_ops": ("name", "kernel_type", "engine", "count", "total_ns"),
    "compiles_by_graph": ("key", "compilations", "recompilations", "time_ns"),
    "host_device": (
        "rank",
        "device_ratio_pct",
        "mme_ns",
        "tpc_ns",
        "dma_ns",
        "mme_tpc_overlap_ns",
        "device_idle_ns",
    ),
    "precision_by_dtype": ("dtype", "device_time_ns", "flops", "ops"),
    "fallback_ops": ("op", "count", "host_time_ns", "copies", "forced_flush"),
}


class TerminalRenderer:
    """Render a Report for a terminal.

    Args:
        width: console width (None: detect).
        color: emit ANSI colours.
        brief: only the findings and the temporal split (the summary after a run).
        max_rows: rows per table.
    """

    extension = ".txt"

    def __init__(
        self, width: int | None = 100, color: bool = False, brief: bool = False, max_rows: int = 12
    ) -> None:
        self.width = width
        self.color = color
        self.brief = brief
        self.max_rows = max_rows

    def render(self, report: Report) -> str:
        from rich.console import Console
        from rich.table import Table

        console = Console(
            width=self.width,
            record=True,
            force_terminal=self.color,
            color_system="standard" if self.color else None,
            file=io.StringIO(),
            highlight=False,
        )
        meta = report.meta
        console.print(
            f"[bold]hpuprof[/bold] {', '.join(report.source) or '(trace)'}: "
            f"{meta.get('events', 0):,} events, ranks {meta.get('ranks', [])}, "
            f"device time {meta.get('device_time', 'n/a')}",
            markup=True,
        )
        if report.findings:
            console.print("[bold]Findings[/bold]")
            for f in report.findings[: 5 if self.brief else 30]:
                style = SEVERITY_STYLE.get(f.severity, "")
                console.print(f"[{style}]{f.severity.upper():8}[/{style}] ", end="")
                console.print(f.title, markup=False)
                if f.advice:
                    console.print(f"         -> {f.advice}", markup=False, style="dim")
        else:
            console.print("No findings.")
        tables = report_tables(report)
        for name in BRIEF_TABLES if self.brief else FULL_TABLES:
            rows = tables.get(name)
            if not rows:
                continue
            cols = COLUMNS.get(name) or tuple(rows[0].keys())
            t = Table(title=name.replace("_", " "), title_justify="left", expand=False)
            for c in cols:
                t.add_column(
                    c, overflow="fold", max_width=48 if c in ("name", "op", "key") else None
                )
            for r in rows[: self.max_rows]:
                t.add_row(*(fmt_cell(c, r.get(c)) for c in cols))
            console.print(t)
        for sec_name, sec in report.sections.items():
            for note in getattr(sec, "notes", ()):
                console.print(f"note ({sec_name}): {note}", markup=False, style="dim")
        return console.export_text(styles=self.color)
