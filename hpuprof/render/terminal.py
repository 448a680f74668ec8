"""Terminal renderer (rich): findings first, then the key tables; width-aware, optional colour."""

from __future__ import annotations

import io

from hpuprof.analysis.report import Report
from hpuprof.render.tables import fmt_column, key_figure_rows, meta_line, report_views

SEVERITY_STYLE = {"critical": "bold red", "warning": "yellow", "info": "cyan"}


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
        console.print(
            f"[bold]hpuprof[/bold] {', '.join(report.source) or '(trace)'}: ", end="", markup=True
        )
        console.print(meta_line(report), markup=False)
        figures = key_figure_rows(report)
        if figures:
            console.print(
                "; ".join(f"{c.header}: {fmt_column(c, v)}" for c, v in figures), markup=False
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
        shown = ("brief",) if self.brief else ("brief", "full")
        for view in report_views(report):
            if view.view not in shown:
                continue
            t = Table(title=view.title, title_justify="left", expand=False)
            for c in view.key_columns:
                wide = c.key in ("name", "op", "key", "kernel", "cause")
                t.add_column(
                    c.header,
                    overflow="fold",
                    max_width=48 if wide else None,
                    min_width=16 if wide else None,
                )
            for r in view.rows[: self.max_rows]:
                t.add_row(*(fmt_column(c, r.get(c.key), r) for c in view.key_columns))
            console.print(t)
        for sec_name, sec in report.sections.items():
            for note in getattr(sec, "notes", ()):
                console.print(f"note ({sec_name}): {note}", markup=False, style="dim")
        return console.export_text(styles=self.color)
