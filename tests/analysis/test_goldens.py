"""Golden reports for the sample traces (`sample_traces/`), regenerated only on request.

What is compared, and why: the emulated samples have fixed seeds, so their ops, shapes,
compilations and causes, fallbacks, casts and *modeled* device durations are the same on every
regeneration (`sample_traces/README.md`), while host times are measured and change each time.
A golden therefore holds only the deterministic part of each report (`stable_view`): counts,
names, causes, steps and modeled device sums, compared exactly (floats to 1e-6 relative, for
rounding across platforms). Measured host times, and everything derived from them (idle %,
host-bound findings, top ops ordered by host time), are left out on purpose.

Regenerate after a deliberate change of the analyses or of the samples:

    HPUPROF_REGEN_GOLDEN=1 .venv/bin/python -m pytest tests/analysis/test_goldens.py
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import orjson
import pytest

import hpuprof
from hpuprof.analysis import analyze

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "sample_traces"
GOLDEN = Path(__file__).with_name("golden")
REGEN = os.environ.get("HPUPROF_REGEN_GOLDEN") == "1"


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


def stable_view(report: dict[str, Any], emulated: bool) -> dict[str, Any]:
    """The deterministic part of a report dict (see the module docstring)."""
    dyn, fb, pr, gr, bo = (
        report[k] for k in ("dynamicity", "fallback", "precision", "graphs", "bottleneck")
    )
    view: dict[str, Any] = {
        "schema": report["schema"],
        "format": report["meta"]["format"],
        "ranks": report["meta"]["ranks"],
        "device_time": bo["device_time"],
        "dynamicity": {
            "source": dyn["source"],
            "compilations": dyn["compilations"],
            "recompilations": dyn["recompilations"],
            "graph_compilations": dyn["graph_compilations"],
            "compiles": [
                [
                    e["rank"],
                    e["step"],
                    e["graph"],
                    e["recompile"],
                    e["cause_kind"],
                    e["cause_from"],
                    e["cause_to"],
                ]
                for e in dyn["events"]
            ],
            "shape_histograms": [
                [h["op"], h["calls"], h["unique_shapes"]] for h in dyn["shape_histograms"]
            ],
            "dynamic_ops": [[d["op"], d["count"], d["steps"]] for d in dyn["dynamic_ops"]],
            "bucketing_target": dyn["bucketing_target"],
            "bucketing": dyn["bucketing"],
            "port_estimate": dyn["port_estimate"],
        },
        "fallback": {
            "total": fb["total"],
            "ops": [
                [o["op"], o["count"], o["copies"], o["steps"], o["forced_flush"]] for o in fb["ops"]
            ],
        },
        "precision": {
            "flops_source": pr["flops_source"],
            "casts": [[c["dtype_from"], c["dtype_to"], c["count"]] for c in pr["casts"]],
            "to_copy_ops": pr["to_copy_ops"],
            "missed_lower_precision": sorted({r["name"] for r in pr["missed_lower_precision"]}),
            "fp32_list_in_low_precision": sorted(
                {r["name"] for r in pr["fp32_list_in_low_precision"]}
            ),
        },
        "graphs": {k: gr[k] for k in ("captures", "replays", "cache_misses")},
        "bottleneck": {
            "steps": sorted([s["rank"], s["step"]] for s in bo["steps"]),
            "engines": sorted([e["rank"], e["engine"], e["ops"]] for e in bo["engines"]),
            "device_ops": sorted([o["name"], o["count"]] for o in bo["top_device_ops"]),
            "launches": bo["launch"]["launches"],
        },
        "findings": sorted(
            [f["report"], f["metric"]] for f in report["findings"] if f["report"] != "bottleneck"
        ),
    }
    if emulated:
        # modeled device time: deterministic on the emulator, measured (so left out) elsewhere
        view["precision"]["by_dtype"] = sorted(
            [d["dtype"], d["device_time_ns"], d["flops"], d["ops"]] for d in pr["by_dtype"]
        )
        view["precision"]["bf16_coverage_pct"] = pr["bf16_coverage_pct"]
        view["dynamicity"]["graph_compile_time_ns"] = dyn["graph_compile_time_ns"]
        view["bottleneck"]["device_ops"] = sorted(
            [o["name"], o["count"], o["total_ns"]] for o in bo["top_device_ops"]
        )
    return view


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


@pytest.mark.parametrize("name", sorted(_sample_inputs()) or ["(no samples)"])
def test_sample_report_matches_golden(name: str) -> None:
    inputs = _sample_inputs()
    if name not in inputs:
        pytest.skip("sample_traces/ has no samples")
    trace = hpuprof.load(inputs[name], cache=False)
    view = stable_view(analyze(trace).to_dict(), emulated=name.startswith("emulated"))
    view = orjson.loads(orjson.dumps(view))
    golden = GOLDEN / f"{name}.json"
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


def test_stable_view_ignores_measured_host_times() -> None:
    """Two reports that differ only in host times give the same view; a count change does not."""
    inputs = _sample_inputs()
    if "emulated_lazy" not in inputs:
        pytest.skip("sample_traces/emulated_lazy is not present")
    trace = hpuprof.load(inputs["emulated_lazy"], cache=False)
    ev = trace.events
    # measured: host ops (compile events carry modeled compile time on the emulator)
    host = (ev["kind"] == "cpu_op").to_numpy()
    slower = ev.copy()
    slower.loc[host, "dur_ns"] = slower.loc[host, "dur_ns"] * 2
    import dataclasses

    base = stable_view(analyze(trace).to_dict(), emulated=True)
    other = stable_view(analyze(dataclasses.replace(trace, events=slower)).to_dict(), emulated=True)
    assert _same(base, other) == []
    changed = dict(base, fallback=dict(base["fallback"], total=base["fallback"]["total"] + 1))
    assert _same(base, changed) == [
        f".fallback.total: {base['fallback']['total']} != {base['fallback']['total'] + 1}"
    ]
