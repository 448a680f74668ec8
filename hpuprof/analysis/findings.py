"""Findings as data: what is wrong, by how much, against which threshold, and what to do."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Severity = Literal["info", "warning", "critical"]
SEVERITY_ORDER: dict[str, int] = {"critical": 0, "warning": 1, "info": 2}


@dataclass(frozen=True)
class Finding:
    """One diagnosis with its numbers.

    Args:
        severity: info, warning or critical.
        report: which report raised it (bottleneck, dynamicity, ...).
        title: one line, with the key number in it.
        metric: the measured quantity's name.
        value: the measured value.
        threshold: the value above (or below) which this finding is raised.
        evidence: supporting numbers (names, counts, times in ns).
        advice: what to do about it.
        threshold_option: the `AnalysisOptions` field the threshold comes from ("" where
            any occurrence is a finding, threshold 0).
    """

    severity: Severity
    report: str
    title: str
    metric: str
    value: float
    threshold: float
    evidence: dict[str, Any] = field(default_factory=dict)
    advice: str = ""
    threshold_option: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "severity": self.severity,
            "report": self.report,
            "title": self.title,
            "metric": self.metric,
            "value": self.value,
            "threshold": self.threshold,
            "threshold_option": self.threshold_option,
            "evidence": dict(self.evidence),
            "advice": self.advice,
        }


def sort_findings(findings: list[Finding]) -> list[Finding]:
    """Most severe first, then by value (largest first)."""
    return sorted(findings, key=lambda f: (SEVERITY_ORDER[f.severity], -abs(f.value)))
