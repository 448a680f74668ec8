"""Markdown renderer: findings first, then one table per report table."""

from __future__ import annotations

from typing import Any

from hpuprof.analysis.report import Report
from hpuprof.render.tables import columns_of, fmt_cell, report_tables


def _esc(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def md_table(rows: list[dict[str, Any]], limit: int = 50) -> str:
    cols = columns_of(rows)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows[:limit]:
        lines.append("| " + " | ".join(_esc(fmt_cell(c, r.get(c))) for c in cols) + " |")
    if len(rows) > limit:
        lines.append(f"\n_{len(rows) - limit} more rows in the CSV/JSON output_")
    return "\n".join(lines)


class MarkdownRenderer:
    """Render a Report as a Markdown document."""

    extension = ".md"

    def render(self, report: Report) -> str:
        out = [f"# hpuprof report: {', '.join(report.source) or '(trace)'}", ""]
        meta = report.meta
        out.append(
            f"format `{meta.get('format', '')}`, {meta.get('events', 0):,} events, ranks "
            f"{meta.get('ranks', [])}, device time {meta.get('device_time', 'n/a')}"
        )
        out += ["", "## Findings", ""]
        if not report.findings:
            out.append("No findings.")
        for f in report.findings:
            out.append(f"- **{f.severity}** ({f.report}): {_esc(f.title)}. _{_esc(f.advice)}_")
        for name, rows in report_tables(report).items():
            if name == "findings":
                continue
            out += ["", f"## {name.replace('_', ' ')}", "", md_table(rows)]
        for sec_name, sec in report.sections.items():
            for note in getattr(sec, "notes", ()):
                out.append(f"\n> {sec_name}: {_esc(note)}")
        return "\n".join(out) + "\n"
