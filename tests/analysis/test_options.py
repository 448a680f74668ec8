"""Thresholds live in `AnalysisOptions`: findings name the option that decided them, changing
the option changes the finding, and no analysis keeps a threshold of its own."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest

import hpuprof
from hpuprof.analysis import AnalysisOptions, analyze
from hpuprof.analysis.findings import Finding
from hpuprof.analysis.registry import report_names
from tests.multirank.ranks import write_run

ANALYSES = Path(hpuprof.__file__).parent / "analysis"
SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"
OPTION_NAMES = {f.name for f in dataclasses.fields(AnalysisOptions)}
THRESHOLD_NAME = re.compile(r"_(PCT|NS|WARN|CRITICAL|RATIO|SHARE|SIGMAS|COLLECTIVES)$")


def _check_named(findings: tuple[Finding, ...]) -> None:
    defaults = AnalysisOptions()
    for f in findings:
        if not f.threshold_option:
            assert f.threshold == 0, f  # any occurrence is a finding
            continue
        assert f.threshold_option in OPTION_NAMES, f
        option = float(getattr(defaults, f.threshold_option))
        if f.threshold_option == "skew_min_last_pct":  # or twice chance, when higher
            assert f.threshold >= option, f
        else:
            assert f.threshold == option, f


@pytest.mark.skipif(not (SAMPLES / "emulated_lazy").is_dir(), reason="no sample_traces/")
def test_findings_name_their_option_and_follow_it() -> None:
    trace = hpuprof.load(SAMPLES / "emulated_lazy", cache=False)
    names = ",".join(report_names())
    found = analyze(trace, names).findings
    metrics = {f.metric for f in found}
    assert {"device_idle_pct", "recompilations", "tpc_to_mme_ratio", "bf16_coverage_pct"} <= metrics
    _check_named(found)
    never = AnalysisOptions(
        host_bound_idle_pct=100.1,
        recompile_warn=10**9,
        tpc_bound_ratio=1e12,
        bf16_coverage_warn_pct=0.0,
    )
    quiet = {f.metric for f in analyze(trace, names, options=never).findings}
    assert not quiet & {
        "device_idle_pct",
        "recompilations",
        "tpc_to_mme_ratio",
        "bf16_coverage_pct",
    }


def test_collective_skew_thresholds_come_from_the_options(tmp_path: Path) -> None:
    write_run(tmp_path / "run", ranks=3, straggler=1)
    trace = hpuprof.load(tmp_path / "run", cache=False)
    found = analyze(trace, "distributed").findings
    skew = [f for f in found if f.metric == "last_arrival_pct"]
    assert (
        skew and skew[0].evidence["rank"] == 1 and skew[0].threshold_option == "skew_min_last_pct"
    )
    _check_named(found)
    strict = AnalysisOptions(skew_min_collectives=10**6)
    assert not [
        f
        for f in analyze(trace, "distributed", options=strict).findings
        if f.metric == "last_arrival_pct"
    ]


def test_no_analysis_keeps_a_threshold_constant() -> None:
    """Module-level numbers named like thresholds (`*_PCT`, `*_NS`, `*_WARN`, ...) belong in
    `AnalysisOptions`; sizes and vocabularies (`MAX_POINTS`, regexes, names) may stay."""
    kept = []
    for path in sorted(ANALYSES.glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            target = node.target if isinstance(node, ast.AnnAssign) else None
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
            value = getattr(node, "value", None)
            if not isinstance(target, ast.Name) or not isinstance(value, ast.Constant):
                continue
            number = isinstance(value.value, (int, float)) and not isinstance(value.value, bool)
            if number and THRESHOLD_NAME.search(target.id):
                kept.append(f"{path.name}: {target.id}")
    assert kept == [], kept
