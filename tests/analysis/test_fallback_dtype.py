"""A fallback of one dtype is not an op without an HPU kernel: `aten::is_nonzero` (what `bool(t)`
calls) has fp32 / bf16 / int32 kernels, so its bool fallback names bool and says the op is
supported; `aten::digamma` has no HPU kernel at all."""

from __future__ import annotations

from typing import Any

import pytest

from hpuprof.analysis import AnalysisOptions
from hpuprof.analysis.fallback import analyze_fallbacks
from hpuprof.analysis.op_support import op_support, tensor_dtypes
from hpuprof.trace.model import Trace
from tests.tracebuild import make_trace

pytest.importorskip("hpusim")  # the op table is hpusim's data (read without torch)


def _fallbacks(
    op: str, types: list[str], n: int, *, own_types: bool, at: int
) -> list[dict[str, Any]]:
    """`n` fallbacks of `op`: the types on the fallback row itself, or (lazy mode) on the host
    op of the same name traced before it."""
    rows: list[dict[str, Any]] = []
    for i in range(n):
        ts = 1_000_000 * (i + 1) + at
        if not own_types:
            rows.append({"name": op, "ts_ns": ts, "dur_ns": 1000, "input_types": types})
        rows.append(
            {"name": f"cpu fallback {op}", "kind": "hpu_runtime", "cat": "hpuprof",
             "hpu_event": "fallback", "fallback": True, "ts_ns": ts + 200_000, "dur_ns": 5000,
             "args": {"hpuprof.op": op}, **({"input_types": types} if own_types else {})}
        )  # fmt: skip
    return rows


def _trace() -> Trace:
    device = {"name": "mm_f32", "kind": "kernel", "cat": "kernel", "engine": "MME", "tid": "MME",
              "ts_ns": 0, "dur_ns": 1000}  # fmt: skip
    rows = [device, *_fallbacks("aten::is_nonzero", ["bool"], 12, own_types=True, at=0)]
    rows += _fallbacks("aten::digamma", ["float"], 12, own_types=False, at=500_000)
    return make_trace(rows)


def test_the_table_knows_dtype_support() -> None:
    assert op_support("aten::is_nonzero").dtypes == ("fp32", "bf16", "int32")
    assert op_support("aten::digamma").known and not op_support("aten::digamma").dtypes
    assert not op_support("aten::no_such_op").known
    assert tensor_dtypes(["bool", "Scalar", "", "c10::BFloat16", "bool"]) == ("bool", "bf16")


def test_a_dtype_fallback_names_the_dtype_and_the_supported_op() -> None:
    rep = analyze_fallbacks(_trace(), AnalysisOptions(fallback_critical=10))
    by_op = {o.op: o for o in rep.ops}
    nonzero = by_op["aten::is_nonzero"]
    assert nonzero.dtypes == ("bool",) and nonzero.unsupported_dtypes == ("bool",)
    assert nonzero.dtype_fallback
    assert by_op["aten::digamma"].dtypes == ("fp32",) and not by_op["aten::digamma"].dtype_fallback
    found = {f.evidence["op"]: f for f in rep.findings}
    f = found["aten::is_nonzero"]
    assert f.severity == "warning", f  # 12 >= fallback_critical, but the op is supported
    assert "for bool inputs" in f.title and "supported on HPU (fp32, bf16, int32)" in f.title
    assert "no HPU kernel" not in f.title + f.advice, f.advice
    assert f.evidence["fell_back_dtypes"] == ["bool"]
    g = found["aten::digamma"]
    assert g.severity == "critical" and "has no HPU kernel" in g.advice
