"""Markdown renderer: findings first, then every table of every report (from the registry)."""

from __future__ import annotations

from typing import Any

from hpuprof.analysis.registry import Column
from hpuprof.analysis.report import Report
from hpuprof.render.tables import (
    columns_of,
    evidence_text,
    key_figure_rows,
    meta_line,
    report_origin_ns,
    report_views,
    shown_columns,
)


def _esc(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def md_table(
    rows: list[dict[str, Any]] | tuple[dict[str, Any], ...],
    limit: int = 50,
    columns: tuple[Column, ...] | None = None,
) -> str:
    """A Markdown table: worded headers, cells formatted by unit (one unit per column, named
    in its header), at most `limit` rows."""
    cols = columns if columns is not None else tuple(Column(k) for k in columns_of(list(rows)))
    shown = shown_columns(cols, rows[:limit])
    lines = ["| " + " | ".join(_esc(c.header) for c in shown) + " |", "|" + "---|" * len(cols)]
    for r in rows[:limit]:
        lines.append("| " + " | ".join(_esc(c.text(r)) for c in shown) + " |")
    if len(rows) > limit:
        lines.append(f"\n_{len(rows) - limit} more rows in the CSV/JSON output_")
    return "\n".join(lines)


class MarkdownRenderer:
    """Render a Report as a Markdown document."""

    extension = ".md"

    def render(self, report: Report) -> str:
        out = [f"# hpuprof report: {', '.join(report.source) or '(trace)'}", ""]
        out.append(_esc(meta_line(report)))
        figures = key_figure_rows(report)
        if figures:
            row = {c.key: v for c, v in figures}
            out += ["", "## Key figures", "", md_table([row], columns=tuple(c for c, _ in figures))]
        out += ["", "## Findings", ""]
        if not report.findings:
            out.append("No findings.")
        for f in report.findings:
            out.append(f"- **{f.severity}** ({f.report}): {_esc(f.title)}.")
            ev = evidence_text(f, report_origin_ns(report))
            if ev:
                out.append(f"  Evidence: {_esc(ev)}.")
            if f.advice:
                out.append(f"  _{_esc(f.advice)}_")
        for view in report_views(report):
            if view.name == "findings":
                continue
            out += ["", f"## {_esc(view.title)}", "", md_table(view.rows, columns=view.columns)]
        for sec_name, sec in report.sections.items():
            for note in getattr(sec, "notes", ()):
                out.append(f"\n> {sec_name}: {_esc(note)}")
        return "\n".join(out) + "\n"
