"""Analyses of a loaded `Trace`: pure functions returning frozen dataclasses, and `analyze`.

`analyze(trace, reports=..., options=...)` runs several analyses and returns one `Report`;
`summarize(trace)` is the short terminal summary printed at the end of `record` / `demo`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from hpuprof.analysis.filters import EventFilter, apply_filters
from hpuprof.analysis.findings import Finding, sort_findings
from hpuprof.analysis.options import AnalysisOptions
from hpuprof.analysis.report import REPORT_NAMES, Report
from hpuprof.errors import UsageError
from hpuprof.trace.model import Trace

__all__ = ["REPORT_NAMES", "AnalysisOptions", "Finding", "Report", "analyze", "summarize"]


def _runners() -> dict[str, Callable[[Trace, AnalysisOptions], Any]]:
    from hpuprof.analysis.bottleneck import analyze_bottlenecks
    from hpuprof.analysis.dynamicity import analyze_dynamicity
    from hpuprof.analysis.fallback import analyze_fallbacks
    from hpuprof.analysis.hpu_graphs import analyze_hpu_graphs
    from hpuprof.analysis.precision import analyze_precision

    return {
        "bottleneck": analyze_bottlenecks,
        "dynamicity": analyze_dynamicity,
        "precision": analyze_precision,
        "fallback": analyze_fallbacks,
        "graphs": analyze_hpu_graphs,
    }


def parse_reports(text: str | Sequence[str] | None) -> tuple[str, ...]:
    """`"bottleneck,dynamicity"` or a list into validated report names (all when empty)."""
    if not text:
        return REPORT_NAMES
    items = text.split(",") if isinstance(text, str) else list(text)
    names = tuple(n.strip() for n in items if n.strip())
    bad = [n for n in names if n not in REPORT_NAMES]
    if bad:
        raise UsageError(f"unknown report {bad[0]!r}; choose from {', '.join(REPORT_NAMES)}")
    return names


def analyze(
    trace: Trace,
    reports: str | Sequence[str] | None = None,
    options: AnalysisOptions | None = None,
    filters: Iterable[EventFilter] | EventFilter | None = None,
) -> Report:
    """Run the named analyses (default: all) on `trace` (optionally filtered) into a Report."""
    options = options or AnalysisOptions()
    names = parse_reports(reports)
    view = apply_filters(trace, filters)
    runners = _runners()
    sections = {name: runners[name](view, options) for name in names}
    findings: list[Finding] = []
    for sec in sections.values():
        findings += list(getattr(sec, "findings", ()))
    ev = view.events
    meta = {
        "format": view.format,
        "events": len(ev),
        "ranks": sorted(int(r) for r in ev["rank"].unique()) if len(ev) else [],
        "reports": list(names),
    }
    bott = sections.get("bottleneck")
    if bott is not None:
        meta["device_time"] = bott.device_time
    return Report(
        source=tuple(view.sources),
        sections=sections,
        findings=tuple(sort_findings(findings)),
        meta=meta,
    )


def summarize(trace: Trace, options: AnalysisOptions | None = None, width: int = 100) -> str:
    """A short plain-text summary: the temporal split per rank and the top findings."""
    from hpuprof.render.terminal import TerminalRenderer

    return TerminalRenderer(width=width, brief=True).render(analyze(trace, options=options))
