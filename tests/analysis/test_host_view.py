"""The host view's figures come from the library and say what a trace cannot measure: host busy
counts compile time (as the host-bound verdict does), a CPU-only trace has no device time (not a
device idle 100% of each step), a trace without steps has no per-step figures."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hpuprof
from hpuprof.analysis import analyze
from hpuprof.analysis import intervals as iv
from hpuprof.analysis._common import host_ops, isin
from hpuprof.analysis.key_figures import NO_DEVICE_EVENTS, NO_STEPS
from hpuprof.analysis.step_split import merged
from hpuprof.render import figures
from hpuprof.render.tables import key_figure_rows
from hpuprof.trace.model import Trace
from tests.conftest import SAMPLE_TRACES

CPU_ONLY = (
    "_history/b8cce2cd9cbb56ccb1c352caec82d0e04c118425/tests/data/cpu_only/"
    "rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
)
ALEXNET = "tests/data/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz"


def _load(shared: Path, rel: str) -> Trace:
    if not (shared / rel).is_file():
        pytest.skip(f"{rel} not in ../shared")
    return hpuprof.load(shared / rel)


@pytest.mark.skipif(not (SAMPLE_TRACES / "emulated_lazy").is_dir(), reason="no samples")
def test_host_busy_counts_compile_time() -> None:
    trace = hpuprof.load(SAMPLE_TRACES / "emulated_lazy")
    ev = trace.events
    ops = merged(host_ops(ev))
    compiles = merged(ev[isin(ev["hpu_event"], ("compile",))])
    compile_outside_ops = iv.total(iv.subtract(compiles, iv.intersect(compiles, ops)))
    assert compile_outside_ops > 0, "the lazy sample compiles outside its host ops"
    row = analyze(trace, "bottleneck").sections["bottleneck"].host_device[0]
    assert row.host_busy_ns >= iv.total(ops) + compile_outside_ops


def test_a_cpu_only_trace_has_no_device_time(shared_kineto_dir: Path) -> None:
    report = analyze(_load(shared_kineto_dir, CPU_ONLY))
    figs = report.meta["key_figures"]
    assert report.meta["device_time"] == "none" and figs["device_util_pct"] is None
    assert figs["not_measurable"]["device_util_pct"] == NO_DEVICE_EVENTS
    shown = {c.key: v for c, v in key_figure_rows(report)}
    assert shown["device_util_pct"] == NO_DEVICE_EVENTS and shown["steps_per_rank"] == 5
    steps = figures.steps_figure(report.to_dict())
    names = [t["name"] for t in steps["data"]]
    assert names == ["step time"] and "not measurable" in steps["layout"]["title"]["text"]
    assert len(steps["data"][0]["x"]) == 5 and min(steps["data"][0]["y"]) > 0
    assert not any(f.metric == "device_idle_pct" for f in report.findings)


def test_a_trace_without_steps_has_no_per_step_figures(shared_kineto_dir: Path) -> None:
    report = analyze(_load(shared_kineto_dir, ALEXNET))
    figs = report.meta["key_figures"]
    for key in ("steps_per_rank", "step_time_ns", "device_util_pct"):
        assert figs[key] is None and figs["not_measurable"][key] == NO_STEPS, key
    shown = {c.key: v for c, v in key_figure_rows(report)}
    assert shown["device_util_pct"] == NO_STEPS
    assert not any("host ops per step" in f.title for f in report.findings)
    # the device view of the span is still there: device busy is measured, steps are not
    assert report.sections["bottleneck"].host_device[0].device_busy_ns > 0
    assert np.isfinite(report.sections["bottleneck"].host_device[0].host_ratio_pct)
