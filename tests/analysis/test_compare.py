"""compare = diff_traces: each time counted once (self time, device time on its own op), and a
change flagged only beyond the step-to-step noise."""

from __future__ import annotations

from typing import Any

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


def test_single_step_traces_flag_nothing_and_say_why() -> None:
    a = _steps(3_000_000, [20_000], steps=1)
    b = _steps(9_000_000, [80_000], steps=1)
    d = diff_traces(a, b)
    assert d.regressions == () and not any(o.regression for o in d.ops)
    assert any("no run-to-run noise" in n for n in d.notes)
    assert next(o for o in d.ops if o.name == "aten::cudnn_convolution").diff_device_ns == 6e6


def test_compare_report_renders_everywhere() -> None:
    rep = compare(_steps(3_000_000, [20_000]), _steps(6_000_000, [20_000]))
    md = get_renderer("md").render(rep)
    assert "## Per-op changes" in md and "## Per-kernel changes" in md and "3.00 ms" in md
    text = get_renderer("text", width=160).render(rep)
    assert "aten::cudnn_convolution" in text and "Mean step time" in text
