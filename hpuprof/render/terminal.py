"""Terminal renderer (rich): findings first, then the key tables; width-aware, optional colour.

Every line fits the width: rich wraps each piece in its own place (a finding's title and advice
in a column right of its severity, so their continuation lines keep that indent; a path with
no spaces is folded), nothing is printed on the rest of a line another print began.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from hpuprof.analysis.report import Report
from hpuprof.render.tables import (
    fmt_column,
    key_figure_rows,
    meta_line,
    report_views,
    shown_columns,
)

if TYPE_CHECKING:
    from rich.console import RenderableType

SEVERITY_STYLE = {"critical": "bold red", "warning": "yellow", "info": "cyan"}
SEVERITY_WIDTH = max(len(s) for s in SEVERITY_STYLE)
"""The gutter left of a finding's text: its severity, or the arrow of its advice."""
ADVICE_MARK = "->"
WIDE_COLUMNS = frozenset({"name", "op", "key", "kernel", "cause"})


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

        console = Console(
            width=self.width,
            record=True,
            force_terminal=self.color,
            color_system="standard" if self.color else None,
            file=io.StringIO(),
            highlight=False,
        )
        for part in self._parts(report):
            console.print(part)
        return console.export_text(styles=self.color)

    def _parts(self, report: Report) -> list[RenderableType]:
        from rich.text import Text

        parts: list[RenderableType] = [
            Text.assemble(
                ("hpuprof", "bold"),
                f" {', '.join(report.source) or '(trace)'}: ",
                meta_line(report),
            )
        ]
        figures = key_figure_rows(report)
        if figures:
            parts.append(Text("; ".join(f"{c.header}: {fmt_column(c, v)}" for c, v in figures)))
        parts.append(self._findings(report))
        parts.extend(self._tables(report))
        parts.extend(
            Text(f"note ({sec_name}): {note}", style="dim")
            for sec_name, sec in report.sections.items()
            for note in getattr(sec, "notes", ())
        )
        return parts

    def _findings(self, report: Report) -> RenderableType:
        """Severity in a fixed gutter, title and advice wrapped right of it (a hanging indent)."""
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        if not report.findings:
            return Text("No findings.")
        grid = Table.grid(padding=(0, 1))
        grid.add_column(width=SEVERITY_WIDTH, no_wrap=True)
        grid.add_column(overflow="fold")
        for finding in report.findings[: 5 if self.brief else 30]:
            style = SEVERITY_STYLE.get(finding.severity, "")
            grid.add_row(Text(finding.severity.upper(), style=style), Text(finding.title))
            if finding.advice:
                grid.add_row(
                    Text(ADVICE_MARK, style="dim", justify="right"),
                    Text(finding.advice, style="dim"),
                )
        return Group(Text("Findings", style="bold"), grid)

    def _tables(self, report: Report) -> list[RenderableType]:
        from rich.table import Table

        shown = ("brief",) if self.brief else ("brief", "full")
        tables: list[RenderableType] = []
        for view in report_views(report):
            if view.view not in shown:
                continue
            table = Table(title=view.title, title_justify="left", expand=False)
            rows = view.rows[: self.max_rows]
            columns = shown_columns(view.key_columns, rows)
            for c in columns:
                wide = c.column.key in WIDE_COLUMNS
                table.add_column(
                    c.header,
                    overflow="fold",
                    max_width=48 if wide else None,
                    min_width=16 if wide else None,
                )
            for r in rows:
                table.add_row(*(c.text(r) for c in columns))
            tables.append(table)
        return tables
