"""Analyses of a loaded `Trace`: pure functions returning frozen dataclasses, and `analyze`.

The public names (`analyze`, `compare`, `summarize`, `AnalysisOptions`, `Report`, ...) are
defined in `hpuprof.analysis.api` and its modules and loaded on first use: importing a light
submodule such as `hpuprof.analysis.registry` (the report names `hpuprof --help` lists) must not
import pandas, numpy and pyarrow through this package's `__init__`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hpuprof.analysis.api import REPORT_NAMES, analyze, compare, summarize, trace_meta
    from hpuprof.analysis.findings import Finding
    from hpuprof.analysis.options import AnalysisOptions
    from hpuprof.analysis.registry import parse_reports
    from hpuprof.analysis.report import Report

__all__ = [
    "REPORT_NAMES",
    "AnalysisOptions",
    "Finding",
    "Report",
    "analyze",
    "compare",
    "parse_reports",
    "summarize",
    "trace_meta",
]

_HOME: dict[str, str] = {
    "REPORT_NAMES": "hpuprof.analysis.api",
    "analyze": "hpuprof.analysis.api",
    "compare": "hpuprof.analysis.api",
    "summarize": "hpuprof.analysis.api",
    "trace_meta": "hpuprof.analysis.api",
    "Finding": "hpuprof.analysis.findings",
    "AnalysisOptions": "hpuprof.analysis.options",
    "parse_reports": "hpuprof.analysis.registry",
    "Report": "hpuprof.analysis.report",
}
"""Each public name and the module that defines it (imported on first use: start-up time)."""


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'hpuprof.analysis' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later lookups skip this function
    return value
