"""Bucketing follows the dynamic dimension back to the script: a step that makes its input with
`torch.randn(4, seq, 32)` is told to pad what `aten::randn` makes at the script's line, not
`aten::normal_` (the op inside randn that first sees the shape)."""

from __future__ import annotations

from typing import Any

from hpuprof.analysis import AnalysisOptions
from hpuprof.analysis.dynamicity import analyze_dynamicity
from hpuprof.trace.model import Trace
from tests.tracebuild import make_trace

SEQ = (16, 24, 16, 32, 40, 48, 56, 24)
STEP_NS = 1_000_000


def _trace(*, with_stack: bool) -> Trace:
    rows: list[dict[str, Any]] = []
    for step, seq in enumerate(SEQ):
        t = step * STEP_NS
        shape = [4, seq, 32]
        rows.append({"name": f"ProfilerStep#{step}", "kind": "user_annotation",
                     "cat": "user_annotation", "ts_ns": t, "dur_ns": STEP_NS - 100})  # fmt: skip
        if with_stack:
            rows.append({"name": "train.py(45): main", "kind": "python_function",
                         "cat": "python_function", "ts_ns": t + 10, "dur_ns": 5000})  # fmt: skip
            rows.append({"name": "torch/_refs/__init__.py(99): randn", "kind": "python_function",
                         "cat": "python_function", "ts_ns": t + 15, "dur_ns": 4000})  # fmt: skip
        rows += [
            {"name": "aten::randn", "ts_ns": t + 20, "dur_ns": 3000,
             "input_dims": [[], [], [], [], []], "input_types": ["", "", "", "", ""]},
            {"name": "aten::empty", "ts_ns": t + 30, "dur_ns": 500,
             "input_dims": [[], [], [], [], []]},
            {"name": "aten::normal_", "ts_ns": t + 600, "dur_ns": 2000,
             "input_dims": [shape, [], [], []], "input_types": ["float", "", "", ""]},
            {"name": "aten::linear", "ts_ns": t + 10_000, "dur_ns": 5000,
             "input_dims": [shape, [64, 32], [64]], "input_types": ["float", "float", "float"]},
            {"name": "mm_f32", "kind": "kernel", "cat": "kernel", "engine": "MME", "tid": "MME",
             "ts_ns": t + 20_000, "dur_ns": 1000},
        ]  # fmt: skip
    return make_trace(rows)


def test_bucketing_names_the_op_the_script_called_and_its_line() -> None:
    rep = analyze_dynamicity(_trace(with_stack=True), AnalysisOptions(bucket_k=4))
    assert rep.bucketing is not None and rep.bucketing.compilations_saved > 0
    target = rep.bucketing_target
    assert target.startswith("aten::randn's output, dim 1 (at train.py:45;"), target
    assert "first seen by aten::normal_" in target
    advice = [f.advice for f in rep.findings if f.metric == "distinct_sizes"]
    assert advice and advice[0].startswith("pad aten::randn's output, dim 1"), rep.findings


def test_without_a_stack_the_op_the_script_called_is_still_named() -> None:
    rep = analyze_dynamicity(_trace(with_stack=False), AnalysisOptions(bucket_k=4))
    assert rep.bucketing_target.startswith("aten::randn's output, dim 1 (first seen by"), (
        rep.bucketing_target
    )
