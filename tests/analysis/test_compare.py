"""compare = diff_traces: each time counted once (self time, device time on its own op), and a
change flagged only beyond the step-to-step noise."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import hpuprof
from hpuprof.analysis import compare
from hpuprof.analysis.diff import diff_traces
from hpuprof.render import get_renderer
from hpuprof.trace.model import Trace
from tests.tracebuild import make_trace

CHAIN = ("aten::conv2d", "aten::convolution", "aten::_convolution", "aten::cudnn_convolution")


def _steps(kernel_ns: int, view_ns: list[int], steps: int = 4) -> Trace:
    """`steps` steps: a conv op chain launching one kernel, and an aten::view per step."""
    rows: list[dict[str, Any]] = []
    for s in range(steps):
        t0 = s * 10_000_000
        rows.append({"name": f"ProfilerStep#{s}", "kind": "user_annotation", "cat": "user_annotation", "ts_ns": t0, "dur_ns": 9_000_000})  # fmt: skip
        for depth, name in enumerate(CHAIN):
            rows.append({"name": name, "ts_ns": t0 + 1000 * (depth + 1), "dur_ns": 100_000 - 2000 * depth})  # fmt: skip
        rows.append({"name": "cudaLaunchKernel", "kind": "runtime", "cat": "cuda_runtime", "ts_ns": t0 + 10_000, "dur_ns": 5_000, "correlation": s + 1})  # fmt: skip
        rows.append({"name": "cudnn_conv_kernel", "kind": "kernel", "cat": "kernel", "engine": "GPU", "ts_ns": t0 + 200_000, "dur_ns": kernel_ns + 1000 * s, "correlation": s + 1, "stream": 7})  # fmt: skip
        rows.append({"name": "aten::view", "ts_ns": t0 + 300_000, "dur_ns": view_ns[s % len(view_ns)]})  # fmt: skip
    return make_trace(rows)


def test_a_slower_kernel_is_one_regression_not_one_per_wrapper() -> None:
    a = _steps(3_000_000, [20_000, 60_000, 30_000, 90_000])
    b = _steps(6_000_000, [60_000, 30_000, 90_000, 40_000])  # view: noise only
    d = diff_traces(a, b)
    assert (d.a_steps, d.b_steps) == (4, 4)
    regressed = {o.name: o.regression for o in d.ops if o.regression}
    assert regressed == {"aten::cudnn_convolution": "device"}
    ops = {o.name: o for o in d.ops}
    assert ops["aten::cudnn_convolution"].diff_device_ns == 3_000_000
    assert all(ops[n].diff_device_ns == 0 for n in CHAIN[:3])  # wrappers: no device time
    assert ops["aten::view"].diff_host_ns == 5_000 and ops["aten::view"].host_noise_ns
    [op_finding] = d.regressions  # the step windows (9 ms each) did not change
    assert op_finding.title.startswith("aten::cudnn_convolution: device time per step")
    kernels = {k.name: k for k in d.kernels}
    assert kernels["cudnn_conv_kernel"].diff_ns == 3_000_000
    assert kernels["cudnn_conv_kernel"].regression  # the same rule as its op's


def test_single_step_traces_flag_nothing_and_say_why() -> None:
    a = _steps(3_000_000, [20_000], steps=1)
    b = _steps(9_000_000, [80_000], steps=1)
    d = diff_traces(a, b)
    assert d.regressions == () and not any(o.regression for o in d.ops)
    assert any("no step-to-step noise" in n for n in d.notes)
    assert next(o for o in d.ops if o.name == "aten::cudnn_convolution").diff_device_ns == 6e6


def test_compare_report_renders_everywhere() -> None:
    rep = compare(_steps(3_000_000, [20_000]), _steps(6_000_000, [20_000]))
    md = get_renderer("md").render(rep)
    assert "## Per-op changes" in md and "## Per-kernel changes" in md and "3.00 ms" in md
    text = get_renderer("text", width=160).render(rep)
    assert "aten::cudnn_convolution" in text and "Mean step time" in text


def _run(step_ms: list[float], op_ms: dict[str, list[float]], ranks: int = 1) -> Trace:
    """Steps of the given lengths (ms) on each rank; in each, one call of every op for the
    given time (ms) and a 1 ms kernel."""
    rows: list[dict[str, Any]] = []
    for rank in range(ranks):
        t0 = 0
        for s, length in enumerate(step_ms):
            step_ns = int(length * 1e6)
            rows.append({"name": f"ProfilerStep#{s}", "kind": "user_annotation", "cat": "user_annotation", "ts_ns": t0, "dur_ns": step_ns, "rank": rank})  # fmt: skip
            at = t0 + 1000
            for name, times in op_ms.items():
                dur = int(times[s] * 1e6)
                rows.append({"name": name, "ts_ns": at, "dur_ns": dur, "rank": rank})
                at += dur + 1000
            rows.append({"name": "gemm", "kind": "kernel", "cat": "kernel", "engine": "GPU", "pid": "0", "tid": "7", "ts_ns": t0 + 1000, "dur_ns": 1_000_000, "rank": rank})  # fmt: skip
            t0 += step_ns
    return make_trace(rows)


LAZY_STEPS = [22.2, 5.9, 4.0, 4.7, 3.8, 3.7]  # sample_traces: emulated_lazy
COMPILE_STEPS = [939.2, 674.4, 42.7, 116.4, 6.1, 15.3]  # emulated_compile: compiles in 4 steps


def test_a_40x_slower_step_and_every_large_op_change_are_flagged() -> None:
    """Lazy (A) against torch.compile (B), whose first steps compile: B's own spread is what
    changed, not noise. aten::mm (+16 ms, spread wildly) is flagged as aten::addmm (+10 ms) is."""
    a = _run(LAZY_STEPS, {"aten::mm": [0.125, 0.082, 0.041, 0.055, 0.045, 0.044], "aten::addmm": [0.47, 0.10, 0.047, 0.084, 0.045, 0.051]})  # fmt: skip
    b = _run(COMPILE_STEPS, {"aten::mm": [39.0, 0.115, 6.0, 53.5, 0.053, 0.049], "aten::addmm": [13.2, 11.7, 9.0, 15.6, 0.071, 9.8]})  # fmt: skip
    d = diff_traces(a, b)
    step = d.regressions[0]
    assert step.metric == "mean_step_ns" and "40.5x" in step.title
    flagged = {f.evidence.get("name") for f in d.regressions[1:]}
    assert {"aten::mm", "aten::addmm"} <= flagged
    # the reverse (B faster) flags nothing
    assert diff_traces(b, a).regressions == ()


def test_jitter_alone_is_not_flagged() -> None:
    a = _run([5.0, 5.4, 4.8, 5.2, 5.1, 4.9], {"aten::mm": [1.0, 1.2, 0.9, 1.1, 1.0, 0.8]})
    b = _run([5.3, 4.9, 5.1, 5.0, 5.2, 4.8], {"aten::mm": [1.1, 0.9, 1.2, 1.0, 0.9, 1.0]})
    assert diff_traces(a, b).regressions == ()


JITTER_STEPS = [5.0, 5.4, 4.8, 5.2, 5.1, 4.9]
"""A's steps (ms): a standard deviation of 0.21 ms, noise 0.12 ms over 6 + 6 steps."""


def test_an_op_only_in_b_is_flagged_as_new_when_beyond_the_step_noise() -> None:
    """B runs aten::nonzero (2 ms per step) that A never ran: flagged, "new in B", from 0; a
    0.2 ms new op stays under 3 x the noise of A's step time (0.37 ms) and is only listed."""
    mm = {"aten::mm": [1.0, 1.2, 0.9, 1.1, 1.0, 0.8]}
    a = _run(JITTER_STEPS, mm)
    b = _run([7.1, 7.3, 6.9, 7.2, 7.0, 7.1], mm | {"aten::nonzero": [2.0] * 6, "aten::item": [0.2] * 6})  # fmt: skip
    d = diff_traces(a, b)
    ops = {o.name: o for o in d.ops}
    new = ops["aten::nonzero"]
    assert (new.status, new.a_calls, new.a_host_ns, new.b_host_ns) == ("new in B", 0, 0, 2e6)
    assert new.regression == "host"
    step_noise = np.std(np.array(JITTER_STEPS) * 1e6, ddof=1) * math.sqrt(2 / 6)
    assert new.host_noise_ns == pytest.approx(step_noise, abs=0.1)
    assert ops["aten::item"].status == "new in B" and ops["aten::item"].regression == ""
    assert set(d.new_ops) == {"aten::nonzero", "aten::item"}
    [finding] = [f for f in d.regressions if f.evidence.get("name") == "aten::nonzero"]
    assert "new in B" in finding.title and "0.0 us -> 2,000.0 us" in finding.title
    assert "aten::item" not in {f.evidence.get("name") for f in d.regressions}


def test_an_op_only_in_a_is_gone_never_a_regression() -> None:
    mm = {"aten::mm": [1.0, 1.2, 0.9, 1.1, 1.0, 0.8]}
    a = _run(JITTER_STEPS, mm | {"aten::nonzero": [2.0] * 6})
    d = diff_traces(a, _run(JITTER_STEPS, mm))
    gone = next(o for o in d.ops if o.name == "aten::nonzero")
    assert (gone.status, gone.regression, gone.b_calls) == ("gone in B", "", 0)
    assert d.vanished_ops == ("aten::nonzero",) and d.new_ops == ()
    assert d.regressions == ()
    assert any(n.startswith("gone in B") and "aten::nonzero (2,000.0 us per step)" in n for n in d.notes)  # fmt: skip


def test_a_new_op_is_not_flagged_without_steps_to_judge_by() -> None:
    a = _run([5.0], {"aten::mm": [1.0]})
    b = _run([9.0], {"aten::mm": [1.0], "aten::nonzero": [4.0]})
    d = diff_traces(a, b)
    assert d.regressions == () and d.new_ops == ("aten::nonzero",)


def test_every_metric_is_per_step_never_a_run_total() -> None:
    """Idle 4 steps x 9 ms of a 10 ms step beside a 10 ms step: 9 ms per step, not 36 ms."""
    d = diff_traces(_run([10.0] * 4, {}), _run([10.0] * 4, {}))
    m = {x.metric: x for x in d.metrics}
    assert m["mean_step_ns"].a == 10e6
    assert m["compute_ns"].a == 1e6 and m["idle_ns"].a == 9e6
    assert m["idle_pct"].a == 90.0 and m["idle_pct"].pct is None  # a share: change in points
    assert all(x.label.endswith("per step") or x.unit in ("pct", "") or x.metric == "mean_step_ns" for x in d.metrics)  # fmt: skip


def test_two_ranks_are_eight_steps_times_two_ranks() -> None:
    d = diff_traces(_run([10.0] * 8, {}, ranks=2), _run([10.0] * 8, {}))
    assert (d.a_steps, d.a_ranks, d.a_samples, d.a_sampled) == (8, 2, 16, "8 steps x 2 ranks")
    assert d.b_sampled == "8 steps"
    assert any("8 steps x 2 ranks (A) and 8 steps (B)" in n for n in d.notes)
    [m] = [x for x in d.metrics if x.metric == "mean_step_ns"]
    assert (m.a, m.b) == (10e6, 10e6)  # a step of one rank, both sides


def test_a_step_the_trace_cut_off_is_left_out_and_said(shared_kineto_dir: Path) -> None:
    """HTA's MI250 trace: step 1 (9.29 ms, 70 host ops), step 2 (49 us, none: opened by the
    last prof.step() and closed when the profiler stopped)."""
    amd = hpuprof.load(shared_kineto_dir / "tests/data/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz")  # fmt: skip
    d = diff_traces(amd, amd)
    assert (d.a_samples, d.metrics[0].a) == (1, 9_288_291)
    assert [(c.rank, c.step, c.ops) for c in d.cut_steps] == [(0, 2, 0), (0, 2, 0)]
    assert any(n.startswith("A: rank 0, step 2 left out") for n in d.notes)


def test_different_devices_are_said_first(shared_kineto_dir: Path) -> None:
    data = shared_kineto_dir / "tests/data"
    a100 = hpuprof.load(data / "critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz")  # fmt: skip
    mi250 = hpuprof.load(data / "amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz")
    rep = compare(a100, mi250)
    first = rep.findings[0]
    assert first.metric == "same_device" and first.severity == "warning"
    assert "NVIDIA A100-PG509-200 (CUDA)" in first.title and "(ROCm)" in first.title
    text = get_renderer("text", width=160).render(rep)
    assert text.index("different devices") < text.index("Per-step metrics")
    same = compare(a100, a100)
    assert not any(f.metric == "same_device" for f in same.findings)


def test_two_emulated_device_profiles_are_named_as_information() -> None:
    samples = Path(__file__).resolve().parents[2] / "sample_traces"
    a = hpuprof.load(samples / "emulated_lazy", cache=False)
    b = hpuprof.load(samples / "emulated_gaudi3_lazy", cache=False)
    first = diff_traces(a, b).findings[0]
    assert (first.metric, first.severity) == ("same_device", "info")
    assert first.title == "different devices: A ran on Gaudi 2 (emulated), B on Gaudi 3 (emulated)"
