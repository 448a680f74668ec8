"""Findings need evidence and follow what the run does: host-bound is judged only on enough
steps and events (named in `AnalysisOptions`), never advises what the run already does (graph
replays, torch.compile), and TPC-bound names the kernels it counts with advice that follows
them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import hpuprof
from hpuprof.analysis import AnalysisOptions, analyze
from hpuprof.analysis.bottleneck import analyze_bottlenecks
from hpuprof.analysis.run_practice import run_practice
from hpuprof.trace.model import Trace
from tests.conftest import SAMPLE_TRACES
from tests.tracebuild import make_trace

STEPS = 4
OPS_PER_STEP = 130
STEP_NS = 1_000_000


def _host_bound_trace(*, replays: bool, tpc: tuple[str, ...] = ("mm_f32", "mm_f32")) -> Trace:
    """A Gaudi-like trace: 4 steps of 130 host ops each, a few tiny device ops per step (the
    device idle ~99% of each step); with `replays`, an HPU graph replay in each step; `tpc`:
    the TPC kernels of each step (2 us each), beside one MME kernel of 1 us."""
    rows: list[dict[str, Any]] = []
    for step in range(STEPS):
        start = step * STEP_NS
        rows.append(
            {"name": f"ProfilerStep#{step}", "kind": "user_annotation", "cat": "user_annotation",
             "ts_ns": start, "dur_ns": STEP_NS - 1000}
        )  # fmt: skip
        rows += [
            {"name": "aten::add", "ts_ns": start + 1000 + i * 7000, "dur_ns": 5000}
            for i in range(OPS_PER_STEP)
        ]
        if replays:
            rows.append(
                {"name": "HPUGraph replay 1", "kind": "hpu_runtime", "cat": "hpuprof",
                 "hpu_event": "graph_replay", "ts_ns": start + 950_000, "dur_ns": 10_000}
            )  # fmt: skip
        rows += [
            {"name": name, "kind": "kernel", "cat": "kernel", "engine": "TPC", "tid": "TPC",
             "ts_ns": start + 20_000 + k * 100_000, "dur_ns": 2000}
            for k, name in enumerate(tpc)
        ]  # fmt: skip
        rows.append(
            {"name": "addmm_f32", "kind": "kernel", "cat": "kernel", "engine": "MME", "tid": "MME",
             "ts_ns": start + 600_000, "dur_ns": 1000}
        )  # fmt: skip
    return make_trace(rows)


def _host_bound(trace: Trace, options: AnalysisOptions | None = None) -> list[Any]:
    found = analyze_bottlenecks(trace, options).findings
    return [f for f in found if f.metric == "device_idle_pct"]


def test_host_bound_needs_the_steps_and_events_its_options_name() -> None:
    trace = _host_bound_trace(replays=False)
    found = _host_bound(trace)
    assert len(found) == 1 and found[0].severity == "critical", found
    f = found[0]
    assert f.evidence["steps"] == STEPS and f.evidence["events"] >= 500, f.evidence
    assert f.evidence["host_ops_per_step"] == OPS_PER_STEP, f.evidence
    assert f"median of {STEPS} steps" in f.title and "130 host ops per step" in f.title
    # more steps than the trace has: not judged, and a note says why
    rep = analyze_bottlenecks(trace, AnalysisOptions(host_bound_min_steps=STEPS + 1))
    assert not [x for x in rep.findings if x.metric == "device_idle_pct"]
    assert any("4 steps < host_bound_min_steps=5" in n for n in rep.notes), rep.notes
    assert not any("host_bound_min_events" in n for n in rep.notes), rep.notes
    # more events than the trace has: not judged either
    assert not _host_bound(trace, AnalysisOptions(host_bound_min_events=10**6))


def test_host_bound_does_not_advise_what_the_run_already_does() -> None:
    plain = _host_bound(_host_bound_trace(replays=False))[0]
    assert "wrap_in_hpu_graph" in plain.advice and "torch.compile" in plain.advice
    replaying = _host_bound(_host_bound_trace(replays=True))[0]
    assert replaying.evidence["graph_replays"] == STEPS
    assert "wrap_in_hpu_graph" not in replaying.advice, replaying.advice
    assert f"already replays graphs ({STEPS} replays)" in replaying.advice
    assert "host work left around the graph replays;" in replaying.advice  # (said what)
    assert "torch.compile(backend='hpu_backend')" in replaying.advice  # not done yet: advised


@pytest.mark.skipif(not (SAMPLE_TRACES / "emulated_compile").is_dir(), reason="no samples")
def test_a_compiled_run_is_not_told_to_compile() -> None:
    trace = hpuprof.load(SAMPLE_TRACES / "emulated_compile")
    assert run_practice(trace).compiled_regions >= 1
    found = [f for f in analyze(trace, "bottleneck").findings if f.metric == "device_idle_pct"]
    assert found, "the compile sample's steps are ~100% device idle over 6 steps"
    assert all("already uses torch.compile" in f.advice for f in found)
    assert all("left around the compiled regions;" in f.advice for f in found)
    assert not any("torch.compile(backend" in f.advice for f in found)


@pytest.mark.skipif(not (SAMPLE_TRACES / "emulated_hpu_graph").is_dir(), reason="no samples")
def test_a_small_trace_without_steps_is_not_judged_host_bound() -> None:
    """The HPU-graph sample: 82 events, no steps, replays: no host-bound finding, no "0 host
    ops per step", a note saying why."""
    report = analyze(hpuprof.load(SAMPLE_TRACES / "emulated_hpu_graph"), "bottleneck")
    assert not [f for f in report.findings if f.metric == "device_idle_pct"]
    assert not any("0 host ops" in f.title for f in report.findings)
    notes = report.sections["bottleneck"].notes
    assert any(
        n.startswith("host-bound not judged on rank 0: too little evidence (0 steps < ")
        for n in notes
    ), notes


def test_small_real_traces_are_not_critical(shared_kineto_dir: Path) -> None:
    """The MI250 toy (2 steps, 115 events) and AlexNet (no steps) are too small to judge."""
    for rel in (
        "tests/data/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
        "tests/data/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
    ):
        path = shared_kineto_dir / rel
        if not path.is_file():
            pytest.skip(f"{rel} not in ../shared")
        assert not _host_bound(hpuprof.load(path)), rel


def test_tpc_bound_names_its_kernels_and_follows_them() -> None:
    matmuls = analyze_bottlenecks(_host_bound_trace(replays=False)).findings
    tpc = [f for f in matmuls if f.metric == "tpc_to_mme_ratio"]
    assert len(tpc) == 1, matmuls
    assert "top TPC kernels: mm_f32 0.02 ms" in tpc[0].title, tpc[0].title
    assert tpc[0].evidence["top_tpc_kernels_ns"] == {"mm_f32": STEPS * 2 * 2000}
    assert "matmuls placed on TPC" in tpc[0].advice and "elementwise" not in tpc[0].advice
    elementwise = analyze_bottlenecks(
        _host_bound_trace(replays=False, tpc=("gelu_f32", "native_layer_norm_f32"))
    ).findings
    tpc = [f for f in elementwise if f.metric == "tpc_to_mme_ratio"]
    assert "gelu_f32" in tpc[0].title and "native_layer_norm_f32" in tpc[0].title
    assert "elementwise/normalization" in tpc[0].advice and "matmul" not in tpc[0].advice
    optimizer = analyze_bottlenecks(
        _host_bound_trace(replays=False, tpc=("addcdiv_f32", "lerp_f32"))
    ).findings
    tpc = [f for f in optimizer if f.metric == "tpc_to_mme_ratio"]
    assert "fused optimizer" in tpc[0].advice, tpc[0].advice
