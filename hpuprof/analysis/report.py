"""The combined `Report` of several analyses, and its plain-dict form (the JSON contract)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from hpuprof.analysis.findings import Finding, sort_findings

REPORT_SCHEMA = "hpuprof.report/1"
"""Version of the report's dict/JSON layout. Keys are only added within a version."""


ACROSS_RANKS = "across_ranks"
"""Field metadata key: how a report merged rank by rank (`hpuprof analyze --workers`) combines
the field's per-rank values; fields without it keep a value every rank agrees on."""

SUMMED_OVER_RANKS: dict[str, str] = {ACROSS_RANKS: "sum"}
"""`field(metadata=SUMMED_OVER_RANKS)`: a field that adds up over ranks (a count, a time);
merged rank by rank, the ranks' values are summed, as one analysis of all ranks counts them."""


def as_plain(value: Any) -> Any:
    """Dataclasses, tuples and numpy scalars to JSON-ready dicts, lists and numbers."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: as_plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): as_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_plain(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


@dataclass(frozen=True)
class Report:
    """Several analyses of one trace.

    Args:
        source: the trace file(s) analysed.
        sections: report name -> its frozen dataclass (BottleneckReport, ...).
        findings: all findings, most severe first.
        meta: trace facts (format, ranks, events, device time source, filters applied).
    """

    source: tuple[str, ...]
    sections: dict[str, Any]
    findings: tuple[Finding, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)

    def section(self, name: str) -> Any:
        return self.sections.get(name)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "schema": REPORT_SCHEMA,
            "source": list(self.source),
            "meta": as_plain(self.meta),
        }
        from hpuprof.analysis.registry import report_names

        order = [n for n in report_names(None) if n in self.sections]
        order += [n for n in self.sections if n not in order]
        for name in order:
            body = as_plain(self.sections[name])
            if isinstance(body, dict):
                body.pop("findings", None)
            out[name] = body
        out["findings"] = [f.to_dict() for f in sort_findings(list(self.findings))]
        return out
