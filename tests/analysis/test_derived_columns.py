"""The loader's derived columns (op behind each device op, dtype, FLOPs, call site, cause) and
the ops report built on them: worked by hand on small traces, checked on the samples, and old
(schema 1) saved traces still load."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hpuprof
from hpuprof.analysis import analyze
from hpuprof.analysis.ops import analyze_ops
from hpuprof.trace.derive import _arg_texts, _first_with_key
from hpuprof.trace.model import Trace
from hpuprof.trace.schema import DERIVED_COLUMNS, EVENT_COLUMNS, NO_ID, SCHEMA_VERSION
from tests.tracebuild import make_trace

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "sample_traces"
V1 = Path(__file__).with_name("data") / "schema_v1"


def _row(trace: Trace, name: str, nth: int = 0) -> int:
    ev = trace.events
    return int(ev.index[ev["name"].astype(str) == name][nth])


def _op_of(trace: Trace, device_name: str, nth: int = 0) -> str:
    ev = trace.events
    op_row = int(ev.loc[_row(trace, device_name, nth), "op_row"])
    return "" if op_row == NO_ID else str(ev.loc[op_row, "name"])


def cuda_like() -> Trace:
    """linear > addmm > cudaLaunchKernel -> kernel; a kernel with no launch in the trace."""
    return make_trace(
        [
            {"name": "aten::linear", "ts_ns": 0, "dur_ns": 100_000},
            {"name": "aten::addmm", "ts_ns": 10_000, "dur_ns": 80_000,
             "input_dims": [[64], [32, 128], [128, 64]], "input_types": ["float", "float", "float"]},
            {"name": "cudaLaunchKernel", "kind": "runtime", "cat": "cuda_runtime",
             "ts_ns": 20_000, "dur_ns": 5_000, "correlation": 5},
            {"name": "sgemm_128x64", "kind": "kernel", "cat": "kernel", "engine": "GPU",
             "ts_ns": 40_000, "dur_ns": 40_000, "correlation": 5, "stream": 7},
            {"name": "orphan_kernel", "kind": "kernel", "cat": "kernel", "engine": "GPU",
             "ts_ns": 200_000, "dur_ns": 10_000, "correlation": 99, "stream": 7},
        ]
    )  # fmt: skip


def lazy_graphs() -> Trace:
    """Two flushes of graph 1 (ops accumulated in graph_build windows), each launched later."""
    host = {"pid": "10", "tid": "10"}
    rows = [
        {
            "name": "graph_build",
            "kind": "hpu_runtime",
            "cat": "hpuprof",
            "hpu_event": "graph_build",
            "graph_id": "1",
            "ts_ns": 0,
            "dur_ns": 100_000,
        },
        {"name": "aten::mm", "ts_ns": 10_000, "dur_ns": 10_000},
        {"name": "aten::add_", "ts_ns": 30_000, "dur_ns": 10_000},
        {"name": "aten::mm", "ts_ns": 50_000, "dur_ns": 10_000},
        {
            "name": "launch graph_recipe_1",
            "kind": "hpu_runtime",
            "cat": "hpuprof",
            "hpu_event": "launch",
            "graph_id": "1",
            "ts_ns": 110_000,
            "dur_ns": 5_000,
            "correlation": 9,
        },
        {
            "name": "graph_build",
            "kind": "hpu_runtime",
            "cat": "hpuprof",
            "hpu_event": "graph_build",
            "graph_id": "1",
            "ts_ns": 300_000,
            "dur_ns": 100_000,
        },
        {"name": "aten::mm", "ts_ns": 310_000, "dur_ns": 10_000},
        {
            "name": "launch graph_recipe_1",
            "kind": "hpu_runtime",
            "cat": "hpuprof",
            "hpu_event": "launch",
            "graph_id": "1",
            "ts_ns": 410_000,
            "dur_ns": 5_000,
            "correlation": 10,
        },
    ]
    rows = [{**host, **r} for r in rows]
    dev = {
        "kind": "kernel",
        "cat": "kernel",
        "engine": "MME",
        "graph_id": "1",
        "pid": "0",
        "tid": "3000",
    }
    rows += [
        {
            **dev,
            "name": "mm_f32",
            "ts_ns": 200_000,
            "dur_ns": 10_000,
            "correlation": 9,
            "args": {"dataType": "fp32", "hpuprof.flops": 1000},
        },
        {
            **dev,
            "name": "add_f32",
            "ts_ns": 210_000,
            "dur_ns": 5_000,
            "correlation": 9,
            "engine": "TPC",
            "tid": "4000",
        },
        {
            **dev,
            "name": "mm_bf16",
            "ts_ns": 215_000,
            "dur_ns": 20_000,
            "correlation": 9,
            "args": {"dataType": "bf16"},
        },
        {**dev, "name": "mm_f32", "ts_ns": 500_000, "dur_ns": 30_000, "correlation": 10},
    ]
    return make_trace(rows)


def test_a_kernel_belongs_to_the_innermost_op_that_launched_it() -> None:
    t = cuda_like()
    assert _op_of(t, "sgemm_128x64") == "aten::addmm"
    assert _op_of(t, "orphan_kernel") == ""


def test_lazy_graph_device_ops_go_to_the_graph_ops_of_the_same_name_in_order() -> None:
    t = lazy_graphs()
    ev = t.events
    first_mm, second_mm, late_mm = (_row(t, "aten::mm", i) for i in range(3))
    kernels = ev[ev["is_device"].to_numpy()]
    assert kernels["op_row"].tolist() == [first_mm, _row(t, "aten::add_"), second_mm, late_mm]


def test_a_fused_chains_kernel_goes_to_the_chains_first_op() -> None:
    """The emulator's graph compiler fuses a run of TPC ops into one kernel named after them
    (`fused(gelu_f32+native_layer_norm_f32)`): its time goes to the chain's first op, the k-th
    fused kernel of a launch to the k-th such op of its window (it had no op: 100 us of a
    small lazy run's device time was unattributed)."""
    host = {"pid": "10", "tid": "10"}
    window = {"kind": "hpu_runtime", "cat": "hpuprof", "graph_id": "1"}
    rows = [
        {**window, "name": "graph_build", "hpu_event": "graph_build", "ts_ns": 0,
         "dur_ns": 100_000},
        {"name": "aten::gelu", "ts_ns": 10_000, "dur_ns": 10_000},
        {"name": "aten::native_layer_norm", "ts_ns": 30_000, "dur_ns": 10_000},
        {"name": "aten::gelu", "ts_ns": 50_000, "dur_ns": 10_000},
        {**window, "name": "launch graph_recipe_1", "hpu_event": "launch", "ts_ns": 110_000,
         "dur_ns": 5_000, "correlation": 9},
    ]  # fmt: skip
    dev = {"kind": "kernel", "cat": "kernel", "engine": "TPC", "graph_id": "1", "pid": "0"}
    rows = [{**host, **r} for r in rows] + [
        {**dev, "tid": "7000", "name": name, "ts_ns": ts, "dur_ns": 5_000, "correlation": 9}
        for name, ts in (
            ("fused(gelu_f32+native_layer_norm_f32)", 200_000),
            ("fused(gelu_bf16)", 210_000),
        )
    ]
    t = make_trace(rows)
    kernels = t.events[t.events["is_device"].to_numpy()]
    assert kernels["op_row"].tolist() == [_row(t, "aten::gelu", 0), _row(t, "aten::gelu", 1)]
    assert analyze_ops(t).unattributed_device_ns == 0


def test_ops_report_self_and_total_device_time() -> None:
    rep = analyze_ops(cuda_like())
    by = {o.name: o for o in rep.ops}
    assert (by["aten::addmm"].device_self_ns, by["aten::addmm"].device_total_ns) == (40_000, 40_000)
    assert (by["aten::linear"].device_self_ns, by["aten::linear"].device_total_ns) == (0, 40_000)
    assert by["aten::linear"].self_ns == 20_000 and by["aten::linear"].total_ns == 100_000
    assert rep.device_ns == 50_000 and rep.attributed_device_ns == 40_000
    assert rep.unattributed_device_ns == 10_000 and rep.notes
    kernels = {k.name: k for k in rep.kernels}
    assert kernels["sgemm_128x64"].op == "aten::addmm" and kernels["orphan_kernel"].op == ""
    assert kernels["sgemm_128x64"].pct_of_device == 80.0


def test_ops_report_lazy_graph_time_reaches_its_ops() -> None:
    rep = analyze_ops(lazy_graphs())
    by = {o.name: o for o in rep.ops}
    assert by["aten::mm"].device_self_ns == 60_000 and by["aten::mm"].device_ops == 3
    assert by["aten::add_"].device_self_ns == 5_000
    assert rep.unattributed_device_ns == 0
    assert "graph" in rep.attribution


def test_dtype_and_flops_columns() -> None:
    t = cuda_like()
    ev = t.events
    addmm = _row(t, "aten::addmm")
    assert ev.loc[addmm, "dtype"] == "fp32"
    assert ev.loc[addmm, "flops"] == 2.0 * 32 * 128 * 64  # from shapes
    assert ev.loc[_row(t, "sgemm_128x64"), "dtype"] == "fp32"  # its op's dtype
    assert np.isnan(ev.loc[_row(t, "aten::linear"), "flops"])
    g = lazy_graphs().events
    kernels = g[g["is_device"].to_numpy()]
    assert kernels["dtype"].astype(str).tolist() == ["fp32", "", "bf16", ""]
    assert kernels["flops"].iloc[0] == 1000.0 and np.isnan(kernels["flops"].iloc[1])


def test_profiler_flops_arg_wins_over_shapes() -> None:
    t = make_trace(
        [
            {
                "name": "aten::mm",
                "ts_ns": 0,
                "dur_ns": 10,
                "input_dims": [[2, 3], [3, 4]],
                "args": {"flops": 7},
            }
        ]
    )
    assert t.events["flops"].iloc[0] == 7.0


@pytest.mark.skipif(not SAMPLES.is_dir(), reason="sample_traces/ not present")
def test_samples_every_device_op_has_its_op_and_time_is_conserved() -> None:
    for name in ("emulated_lazy", "emulated_eager", "emulated_hpu_graph", "emulated_two_ranks"):
        trace = hpuprof.load(SAMPLES / name, cache=False)
        rep = analyze_ops(trace)
        assert rep.unattributed_device_ns == 0, name
        assert sum(o.device_self_ns for o in rep.ops) == rep.device_ns, name
        assert sum(k.total_ns for k in rep.kernels) == rep.device_ns, name
    lazy = analyze_ops(hpuprof.load(SAMPLES / "emulated_lazy", cache=False))
    mm = next(o for o in lazy.ops if o.name == "aten::mm")
    assert mm.device_self_ns > 0  # lazy mode: the graph's time reaches the ops it holds


@pytest.mark.skipif(not SAMPLES.is_dir(), reason="sample_traces/ not present")
def test_compile_causes_and_call_sites_are_columns() -> None:
    ev = hpuprof.load(SAMPLES / "emulated_lazy", cache=False).events
    compiles = ev[ev["hpu_event"].astype(str) == "compile"]
    assert set(compiles["cause_kind"].astype(str)) >= {"new_graph", "shape"}
    assert compiles["call_site"].astype(str).str.match(r"gaudi_train\.py:\d+$").all()
    assert compiles["cause"].astype(str).str.startswith("{").all()


@pytest.mark.parametrize("fixture", ["v1_hpu_graph.parquet", "v1_hpu_graph.perfetto-trace"])
def test_schema_1_files_load_with_the_derived_columns(fixture: str) -> None:
    """`source/`: the sample trace the schema-1 files were saved from (the sample has been
    regenerated since)."""
    old = hpuprof.load(V1 / fixture, cache=False)
    fresh = hpuprof.load(V1 / "source", cache=False)
    assert list(old.events.columns) == list(EVENT_COLUMNS)
    assert old.schema_version == SCHEMA_VERSION
    for column in DERIVED_COLUMNS:
        a, b = old.events[column], fresh.events[column]
        if isinstance(a.dtype, pd.CategoricalDtype):
            assert a.astype(str).tolist() == b.astype(str).tolist(), column
        else:
            np.testing.assert_array_equal(a.to_numpy(), b.to_numpy(), err_msg=column)
    assert (old.events["op_row"] >= 0).sum() == old.events["is_device"].sum()


def test_ops_is_in_the_default_reports() -> None:
    rep = analyze(cuda_like())
    assert "ops" in rep.sections
    assert rep.to_dict()["ops"]["kernels"][0]["name"] == "sgemm_128x64"


def test_a_correlation_shared_by_a_runtime_event_and_its_op_goes_to_the_op() -> None:
    t = make_trace(
        [
            {"name": "cpu fallback aten::digamma", "kind": "hpu_runtime", "cat": "hpuprof",
             "hpu_event": "fallback", "ts_ns": 0, "dur_ns": 100, "correlation": 31},
            {"name": "aten::digamma", "ts_ns": 10, "dur_ns": 80, "correlation": 31},
            {"name": "Memcpy DtoH (cpu fallback)", "kind": "memcpy", "cat": "gpu_memcpy",
             "engine": "DMA", "ts_ns": 200, "dur_ns": 5, "correlation": 31},
        ]
    )  # fmt: skip
    assert _op_of(t, "Memcpy DtoH (cpu fallback)") == "aten::digamma"


@given(
    keys=st.lists(st.integers(min_value=-3, max_value=6), max_size=30),
    wanted=st.lists(st.integers(min_value=-4, max_value=8), max_size=30),
)
def test_launch_lookup_takes_the_first_host_row_of_a_correlation(
    keys: list[int], wanted: list[int]
) -> None:
    """The one-rank launch lookup (sort + binary search) = the first row with that key."""
    first: dict[int, int] = {}
    for position, key in enumerate(keys):
        first.setdefault(key, 100 + position)
    got = _first_with_key(
        np.array(keys, dtype=np.int64),
        np.arange(100, 100 + len(keys), dtype=np.int64),
        np.array(wanted, dtype=np.int64),
    )
    assert got.tolist() == [first.get(key, NO_ID) for key in wanted]


def test_arg_texts_are_the_distinct_captures_sorted_with_each_rows_place() -> None:
    args = [b'{"dataType":"fp32"}', b"{}", b'{"x":1,"dataType": "bf16"}', b'{"dataType":"fp32"}']
    events = pd.DataFrame({"args": pd.Series(args, dtype=pd.ArrowDtype(pa.large_binary()))})
    pattern, literal = r'"dataType":\s*"(?P<v>[^"]*)"', b'"dataType":'
    texts, place = _arg_texts(events, np.array([3, 2, 1, 0]), pattern, literal)
    assert texts == ["", "bf16", "fp32"]
    assert [texts[i] for i in place] == ["fp32", "bf16", "", "fp32"]
    none = _arg_texts(events, np.array([1]), pattern, literal)
    assert (none[0], none[1].tolist()) == ([""], [0])
