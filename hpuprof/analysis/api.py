"""The analysis package's public functions: `analyze`, `compare`, `summarize`, `trace_meta`.

`analyze(trace, reports=..., options=...)` runs the named analyses of the registry
(`hpuprof.analysis.registry`: every report, its function and its tables) and returns one
`Report`; `compare(a, b)` is the comparison of two traces as a `Report` too, so both render
through the same renderers. `summarize(trace)` is the short terminal summary printed at the end
of `record` / `demo`. `hpuprof.analysis` exports them without importing this module (and
pandas) until one is used.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from hpuprof.analysis.filters import EventFilter, apply_filters
from hpuprof.analysis.findings import Finding, sort_findings
from hpuprof.analysis.key_figures import with_key_figures
from hpuprof.analysis.options import AnalysisOptions
from hpuprof.analysis.registry import default_report_names, parse_reports, spec
from hpuprof.analysis.report import Report
from hpuprof.trace.model import Trace

REPORT_NAMES: tuple[str, ...] = default_report_names()
"""The reports `analyze()` runs by default (see `registry.default_report_names()`)."""


def trace_meta(trace: Trace) -> dict[str, Any]:
    """Facts about a trace that every view shows beside its numbers."""
    from hpuprof.analysis.device import trace_device

    ev = trace.events
    device = trace_device(trace)
    return {
        "format": trace.format,
        "events": len(ev),
        "ranks": sorted(int(r) for r in ev["rank"].unique()) if len(ev) else [],
        "start_ns": int(ev["ts_ns"].min()) if len(ev) else 0,
        "device": device.to_dict(),
        "timeline": device.timeline,
    }


def analyze(
    trace: Trace,
    reports: str | Sequence[str] | None = None,
    options: AnalysisOptions | None = None,
    filters: Iterable[EventFilter] | EventFilter | None = None,
) -> Report:
    """Run the named analyses (default: the registry's defaults) on `trace` into a Report."""
    options = options or AnalysisOptions()
    names = parse_reports(reports)
    view = apply_filters(trace, filters)
    sections = {name: spec(name).load()(view, options) for name in names}
    findings: list[Finding] = []
    for sec in sections.values():
        findings += list(getattr(sec, "findings", ()))
    meta = with_key_figures(sections, trace_meta(view) | {"reports": list(names)})
    return Report(
        source=tuple(view.sources),
        sections=sections,
        findings=tuple(sort_findings(findings)),
        meta=meta,
    )


def compare(
    a: Trace,
    b: Trace,
    options: AnalysisOptions | None = None,
    a_step: int | None = None,
    b_step: int | None = None,
) -> Report:
    """Trace `b` (test) against `a` (control) as a Report with one `compare` section
    (per-step means over every step; `a_step`/`b_step` compare one step of each)."""
    options = options or AnalysisOptions()
    diff = spec("compare").load()(a, b, options, a_step, b_step)
    meta = {
        "a": trace_meta(a) | {"source": list(a.sources)},
        "b": trace_meta(b) | {"source": list(b.sources)},
        "reports": ["compare"],
    }
    return Report(
        source=tuple(a.sources) + tuple(b.sources),
        sections={"compare": diff},
        findings=tuple(diff.findings),  # in the comparison's order: a different device first
        meta=meta,
    )


def summarize(trace: Trace, options: AnalysisOptions | None = None, width: int = 100) -> str:
    """A short plain-text summary: the temporal split per rank and the top findings."""
    from hpuprof.render.terminal import TerminalRenderer

    return TerminalRenderer(width=width, brief=True).render(analyze(trace, options=options))
