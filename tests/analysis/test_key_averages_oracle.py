"""Oracle: our top host ops on a fresh torch.profiler trace equal torch's own key_averages().

A small CPU model is profiled in the test with record_shapes; the exported Chrome trace goes
through `hpuprof.load` and `analyze_bottlenecks`; for every op name both sides see, the call
count must be equal and total / self host time agree within 1% (+1 us per call: the trace
rounds times to ns-precision decimal microseconds, key_averages keeps its own clock values).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import hpuprof
from hpuprof.analysis import AnalysisOptions
from hpuprof.analysis.bottleneck import analyze_bottlenecks

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def test_top_ops_match_key_averages(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.LayerNorm(256), torch.nn.Linear(256, 8)
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = torch.randn(32, 64)
    path = tmp_path / "oracle.pt.trace.json"
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True
    ) as prof:
        for _ in range(3):
            opt.zero_grad()
            model(data).square().mean().backward()
            opt.step()
            prof.step()
    prof.export_chrome_trace(str(path))
    theirs = {a.key: a for a in prof.key_averages()}

    trace = hpuprof.load(path, cache=False)
    rep = analyze_bottlenecks(trace, AnalysisOptions(top_n=10_000))
    ours = {o.name: o for o in rep.top_host_ops}
    common = sorted(set(ours) & set(theirs))
    assert len(common) >= 20, common
    # every op torch counted is in our table, except record_function annotations
    ev = trace.events
    annotations = set(ev.loc[(ev["kind"] == "user_annotation").to_numpy(), "name"].astype(str))
    assert "Optimizer.step#SGD.step" in annotations
    assert set(theirs) - set(ours) <= annotations
    for name in common:
        o, a = ours[name], theirs[name]
        assert o.count == a.count, name
        slack = 1000 * o.count
        assert o.total_ns == pytest.approx(a.cpu_time_total * 1000, rel=0.01, abs=slack), name
        assert o.self_ns == pytest.approx(a.self_cpu_time_total * 1000, rel=0.01, abs=slack), name
