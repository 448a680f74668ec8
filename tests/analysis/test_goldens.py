"""Golden reports of the sample traces, generated from the report registry: every report, every
table, regenerated only on request.

For each sample (`sample_traces/`) the golden holds every single-trace report of the registry
(`hpuprof.analysis.registry.specs()`), and the two-trace ones hold the pair `COMPARED`: a new
report gets its golden without a change to this test. What is kept, and why: the emulated
samples have fixed seeds, so their ops, shapes, compilations and causes, fallbacks, casts,
engines, kernels, bytes and FLOPs are the same on every regeneration (`sample_traces/README.md`),
while host times are measured and change each time. A golden therefore holds each report's
tables and facts as every view shows them (`hpuprof.render.tables.report_views`) without their
time, timestamp and % columns, and without the parts the registry declares `host_timed` (rows
chosen by host times, counts of slow calls, arrival orders: `ReportSpec.host_timed`); rows
sorted, findings as (report, metric). Compared exactly, floats to 1e-6 relative.

Regenerate after a deliberate change of the analyses or of the samples:

    HPUPROF_REGEN_GOLDEN=1 .venv/bin/python -m pytest tests/analysis/test_goldens.py
"""

from __future__ import annotations

import dataclasses
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

import hpuprof
from hpuprof.analysis import AnalysisOptions, Report, analyze
from hpuprof.analysis.registry import report_names, spec, specs
from hpuprof.render.tables import report_views
from hpuprof.trace.model import Trace

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "sample_traces"
GOLDEN = Path(__file__).with_name("golden")
REGEN = os.environ.get("HPUPROF_REGEN_GOLDEN") == "1"
COMPARED = ("emulated_lazy", "emulated_bf16")
"""The samples a two-trace report (the comparison) compares: B (bf16) against A."""
TIME_UNITS = frozenset({"ns", "ts", "pct", "row"})
"""Column units left out: durations, timestamps, shares, and per-row units (times mostly)."""


def _sample_inputs() -> dict[str, Path]:
    out: dict[str, Path] = {}
    if not SAMPLES.is_dir():
        return out
    for d in sorted(p for p in SAMPLES.iterdir() if p.is_dir()):
        traces = d / "traces"
        if traces.is_dir():
            out[d.name] = traces
        elif any(d.glob("*.json")):
            out[d.name] = next(iter(sorted(d.glob("*.json"))))
    return out


def _row_key(row: dict[str, Any]) -> bytes:
    return orjson.dumps(row, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)


def golden_view(report: Report) -> dict[str, Any]:
    """The part of a report that holds across regenerations of a sample (module docstring)."""
    view: dict[str, Any] = {
        "meta": {"format": report.meta.get("format"), "ranks": report.meta.get("ranks")}
    }
    for table in report_views(report):
        if table.name == "findings" or table.name in spec(table.report).host_timed:
            continue
        timed = spec(table.report).host_timed
        keep = [
            c.key
            for c in table.columns
            if c.kind not in TIME_UNITS and f"{table.name}.{c.key}" not in timed
        ]
        rows = sorted(({k: r.get(k) for k in keep} for r in table.rows), key=_row_key)
        view.setdefault(table.report, {})[table.name] = rows
    view["findings"] = sorted(
        [f.report, f.metric] for f in report.findings if f.metric not in spec(f.report).host_timed
    )
    return orjson.loads(orjson.dumps(view, option=orjson.OPT_NON_STR_KEYS))


def _all_reports(trace: Trace) -> Report:
    return analyze(trace, reports=",".join(report_names()))


def _compared(name: str, a: Trace, b: Trace) -> Report:
    """A two-trace report of the registry on (a, b), as a Report (its one section)."""
    section = spec(name).load()(a, b, AnalysisOptions())
    findings = tuple(getattr(section, "findings", ()))
    return Report(source=(), sections={name: section}, findings=findings, meta={})


def _same(a: Any, b: Any, path: str = "") -> list[str]:
    """Differences between two plain values; floats to 1e-6 relative."""
    numbers = isinstance(a, (int, float)) and isinstance(b, (int, float))
    if numbers and (isinstance(a, float) or isinstance(b, float)):
        return [] if math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9) else [f"{path}: {a} != {b}"]
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return [f"{path}: keys {sorted(set(a) ^ set(b))}"]
        return [d for k in a for d in _same(a[k], b[k], f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} items != {len(b)}: {a!r:.200} vs {b!r:.200}"]
        return [
            d
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for d in _same(x, y, f"{path}[{i}]")
        ]
    return [] if a == b else [f"{path}: {a!r:.200} != {b!r:.200}"]


def _check(view: dict[str, Any], golden: Path) -> None:
    if REGEN:
        GOLDEN.mkdir(exist_ok=True)
        golden.write_bytes(
            orjson.dumps(view, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
        )
        pytest.skip(f"golden regenerated: {golden.name}")
    if not golden.is_file():
        pytest.fail(f"no golden {golden.name}; run with HPUPROF_REGEN_GOLDEN=1 to create it")
    diffs = _same(orjson.loads(golden.read_bytes()), view)
    assert not diffs, "\n".join(diffs[:20])


@pytest.mark.parametrize("name", sorted(_sample_inputs()) or ["(no samples)"])
def test_sample_report_matches_golden(name: str) -> None:
    inputs = _sample_inputs()
    if name not in inputs:
        pytest.skip("sample_traces/ has no samples")
    view = golden_view(_all_reports(hpuprof.load(inputs[name], cache=False)))
    assert set(report_names()) <= set(view)  # every report of the registry has its part
    _check(view, GOLDEN / f"{name}.json")


@pytest.mark.parametrize("name", [s.name for s in specs(inputs=2)])
def test_two_trace_report_matches_golden(name: str) -> None:
    inputs = _sample_inputs()
    if not set(COMPARED) <= set(inputs):
        pytest.skip(f"sample_traces/ lacks {COMPARED}")
    a, b = (hpuprof.load(inputs[n], cache=False) for n in COMPARED)
    view = golden_view(_compared(name, a, b))
    assert name in view
    _check(view, GOLDEN / f"{name}__{COMPARED[0]}__{COMPARED[1]}.json")


def _with_other_host_times(trace: Trace, seed: int = 0) -> Trace:
    """The trace with every host event's duration scaled by a random 0.5..2 (a re-run's
    measured host times, roughly)."""
    ev = trace.events.copy()
    host = ~ev["is_device"].to_numpy(dtype=bool)
    dur = ev.loc[host, "dur_ns"].to_numpy()
    scale = np.random.default_rng(seed).uniform(0.5, 2.0, len(dur))
    ev.loc[host, "dur_ns"] = (dur * scale).astype(np.int64)
    return dataclasses.replace(trace, events=ev)


@pytest.mark.parametrize("name", ["emulated_lazy", "emulated_two_ranks"])
def test_golden_view_ignores_measured_host_times(name: str) -> None:
    """Other host times give the same view (the registry's `host_timed` declarations cover
    what follows them); a changed count does not."""
    inputs = _sample_inputs()
    if name not in inputs:
        pytest.skip(f"sample_traces/{name} is not present")
    trace = hpuprof.load(inputs[name], cache=False)
    base = golden_view(_all_reports(trace))
    assert _same(base, golden_view(_all_reports(_with_other_host_times(trace)))) == []
    facts = base["fallback"]["fallback_summary"][0]
    changed = dict(base, fallback=dict(base["fallback"], fallback_summary=[dict(facts, total=-1)]))
    assert _same(base, changed) == [f".fallback.fallback_summary[0].total: {facts['total']} != -1"]
