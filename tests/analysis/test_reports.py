"""Unit tests of the analyses on small built traces (numbers worked out by hand)."""

from __future__ import annotations

import orjson
import pytest

from hpuprof.analysis import analyze
from hpuprof.analysis import intervals as iv
from hpuprof.analysis.bucketing import recommend_buckets
from hpuprof.analysis.filters import NamePattern, RankFilter, parse_steps
from hpuprof.render import get_renderer
from tests.tracebuild import make_trace


def gaudi_like() -> list[dict]:
    """Two steps on one rank: MME/TPC device ops, a compile, a fallback, a sync, a cast."""
    rows: list[dict] = []
    for step, t0 in ((1, 0), (2, 1_000_000)):
        rows.append(
            {
                "name": f"ProfilerStep#{step}",
                "kind": "user_annotation",
                "cat": "user_annotation",
                "ts_ns": t0,
                "dur_ns": 1_000_000,
            }
        )
        rows.append(
            {
                "name": "aten::linear",
                "ts_ns": t0 + 10_000,
                "dur_ns": 100_000,
                "input_dims": [[8, 64 * step], [32, 64 * step]],
                "input_types": ["float", "float"],
                "module": "encoder.fc",
            }
        )
        rows.append(
            {
                "name": "launch",
                "kind": "hpu_runtime",
                "cat": "hpuprof",
                "hpu_event": "launch",
                "ts_ns": t0 + 20_000,
                "dur_ns": 10_000,
                "correlation": step,
            }
        )
        rows.append(
            {
                "name": "compile",
                "kind": "hpu_runtime",
                "cat": "hpuprof",
                "hpu_event": "compile",
                "ts_ns": t0 + 200_000,
                "dur_ns": 300_000,
                "module": "encoder",
                "args": {
                    "hpuprof.cause": {
                        "kind": "new_graph" if step == 1 else "shape",
                        "input": 0,
                        "from": "[8, 64]",
                        "to": "[8, 128]",
                    }
                },
            }
        )
        rows.append(
            {
                "name": "aten::digamma",
                "kind": "cpu_op",
                "fallback": True,
                "ts_ns": t0 + 600_000,
                "dur_ns": 50_000,
                "args": {"hpuprof.op": "aten::digamma"},
            }
        )
        rows.append({"name": "aten::copy_", "ts_ns": t0 + 610_000, "dur_ns": 5_000})
        rows.append(
            {
                "name": "sync",
                "kind": "hpu_runtime",
                "cat": "hpuprof",
                "hpu_event": "sync",
                "ts_ns": t0 + 700_000,
                "dur_ns": 100_000,
                "args": {"hpuprof.sync_reason": "local scalar"},
            }
        )
        rows.append(
            {
                "name": "mm_fwd",
                "kind": "kernel",
                "engine": "MME",
                "tid": "MME 0",
                "ts_ns": t0 + 50_000,
                "dur_ns": 100_000,
                "correlation": step,
                "args": {"dataType": "bf16", "hpuprof.flops": 1e9},
            }
        )
        rows.append(
            {
                "name": "add_fwd",
                "kind": "kernel",
                "engine": "TPC",
                "tid": "TPC 0",
                "ts_ns": t0 + 100_000,
                "dur_ns": 100_000,
                "args": {"dataType": "float32"},
            }
        )
        rows.append(
            {
                "name": "memcpy",
                "kind": "memcpy",
                "engine": "DMA",
                "tid": "DMA 0",
                "ts_ns": t0 + 900_000,
                "dur_ns": 50_000,
            }
        )
    rows.append(
        {
            "name": "cast",
            "kind": "hpu_runtime",
            "cat": "hpuprof",
            "hpu_event": "cast",
            "ts_ns": 5_000,
            "dur_ns": 1_000,
            "args": {"hpuprof.dtype_from": "float32", "hpuprof.dtype_to": "bfloat16"},
        }
    )
    return rows


def test_intervals_merge_and_windows() -> None:
    m = iv.merge([0, 5, 20, 25], [10, 12, 30, 26])
    assert m[0].tolist() == [0, 20] and m[1].tolist() == [12, 30]
    assert iv.total(m) == 22
    assert iv.covered_in_windows(m, [0, 11, 25], [5, 21, 100]).tolist() == [5, 2, 5]
    a = iv.merge([0], [10])
    b = iv.merge([5], [15])
    assert iv.overlap(a, b) == 5
    assert iv.total(iv.intersect(a, b)) == 5 and iv.total(iv.subtract(a, b)) == 5
    assert iv.sweep_classes([a, b]) == {1: 5, 3: 5, 2: 5}


def test_bucketing_is_optimal_against_brute_force() -> None:
    import itertools

    sizes = [3, 5, 5, 8, 13, 13, 13, 21, 34, 40]
    plan = recommend_buckets(sizes, k=3)
    uniq = sorted(set(sizes))
    best = min(
        sum(min(b for b in (*combo, uniq[-1]) if b >= s) - s for s in sizes)
        for r in range(0, 3)
        for combo in itertools.combinations(uniq[:-1], r)
    )
    assert plan.padding == best
    assert len(plan.boundaries) <= 3 and plan.boundaries[-1] == 40
    assert plan.compilations_saved == len(uniq) - len(plan.boundaries)
    assert plan.padding <= plan.percentile_padding


def test_all_reports_on_built_gaudi_trace() -> None:
    trace = make_trace(gaudi_like())
    rep = analyze(trace)
    d = rep.to_dict()
    t = d["bottleneck"]["temporal"][0]
    # device busy: [50k,200k) + [900k,950k) + [1.05M,1.2M) + [1.9M,1.95M) = 400k of span 1.9M
    assert t["rank"] == 0
    assert t["idle_pct"] == pytest.approx(100 * 1_500_000 / 1_900_000, abs=0.01)
    assert t["compute_pct"] == pytest.approx(100 * 300_000 / 1_900_000, abs=0.01)
    assert d["dynamicity"]["compilations"] == 2
    assert d["dynamicity"]["recompilations"] == 1
    causes = d["dynamicity"]["by_graph"][0]["causes"]
    assert [c["kind"] for c in causes] == ["new_graph", "shape"]
    assert d["fallback"]["ops"][0]["op"] == "aten::digamma"
    assert d["fallback"]["ops"][0]["count"] == 2
    assert d["fallback"]["ops"][0]["host_time_ns"] == 100_000
    dt = {r["dtype"]: r for r in d["precision"]["by_dtype"]}
    assert dt["bf16"]["device_time_ns"] == 200_000 and dt["bf16"]["flops"] == 2e9
    assert dt["fp32"]["device_time_ns"] == 200_000
    causes_idle = {c["cause"] for c in d["bottleneck"]["idle_causes"]}
    assert {"graph compilation", "CPU fallback", "sync wait: local scalar"} <= causes_idle
    assert d["schema"].startswith("hpuprof.report/")
    assert d["findings"]
    assert orjson.loads(get_renderer("json").render(rep)) == orjson.loads(orjson.dumps(d))
    for fmt in ("text", "md", "html", "csv"):
        out = get_renderer(fmt).render(rep)
        assert out and "digamma" in (out if isinstance(out, str) else out.decode())


def test_filters_compose_and_keep_labels() -> None:
    trace = make_trace(gaudi_like())
    rep = analyze(trace, reports="fallback", filters=[parse_steps("2:2"), RankFilter((0,))])
    assert rep.to_dict()["fallback"]["ops"][0]["count"] == 1
    rep2 = analyze(trace, reports=["fallback"], filters=NamePattern("^nothing$"))
    assert rep2.to_dict()["fallback"]["ops"] == []


def test_html_escapes_names() -> None:
    rows = gaudi_like()
    rows.append({"name": "<script>alert(1)</script>", "ts_ns": 10, "dur_ns": 5})
    out = get_renderer("html").render(analyze(make_trace(rows)))
    assert "<script>alert(1)</script>" not in out
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in out
