"""Oracle: on emulated runs, dynamicity and fallback numbers equal the runtime's own metrics.

A small Gaudi script (variable batch sizes, one op with no HPU kernel) runs under the emulated
runtime and `HPUProfiler` in a child Python; the child reads `metric_global("graph_compilation")`
and `metric_global("cpu_fallback")` (gaudi.md section 1) at the end. The analysis of the trace it
wrote must give the same numbers exactly: compilations and their time (the metric counts
microseconds, our events carry the same modeled durations in ns) and fallbacks per op.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

import hpuprof
from hpuprof.analysis import AnalysisOptions, analyze

REPO = Path(__file__).resolve().parents[2]

CHILD = """
import sys
import orjson
import hpusim
hpusim.enable(mode=sys.argv[2])
import torch
import habana_frameworks.torch.core as htcore
from habana_frameworks.torch.hpu.metrics import metric_global
from hpuprof.capture.profiler import HPUProfiler
out = sys.argv[1]
prof = HPUProfiler(out, backend="emulated", record_shapes=True).start()
torch.manual_seed(0)
device = torch.device("hpu")
model = torch.nn.Sequential(
    torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)
).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for n in (8, 8, 12, 8, 5, 12, 8):
    y = model(torch.randn(n, 16).to(device))
    loss = torch.digamma(y.abs() + 1.0).sum()   # digamma has no HPU kernel: CPU fallback
    loss.backward()
    htcore.mark_step()
    opt.step()
    opt.zero_grad()
    htcore.mark_step()
    prof.step()
prof.stop()
stats = {n: dict(metric_global(n).stats()) for n in ("graph_compilation", "cpu_fallback")}
open(out + "/oracle.json", "wb").write(
    orjson.dumps({"stats": stats, "trace": str(prof.paths.trace)})
)
"""


def _run(tmp_path: Path, mode: str) -> tuple[dict[str, dict[str, object]], Path]:
    pytest.importorskip("torch")
    pytest.importorskip("hpusim")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(REPO / "runtime")])
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(out), mode],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    data = orjson.loads((out / "oracle.json").read_bytes())
    return data["stats"], Path(data["trace"])


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["lazy", "eager"])
def test_dynamicity_and_fallback_equal_runtime_metrics(tmp_path: Path, mode: str) -> None:
    stats, trace_path = _run(tmp_path, mode)
    report = analyze(hpuprof.load(trace_path, cache=False), reports="dynamicity,fallback")
    dyn = report.section("dynamicity")
    fb = report.section("fallback")

    gc = stats["graph_compilation"]
    assert dyn.source == "compile events"
    assert dyn.graph_compilations == gc["TotalNumber"]
    assert dyn.graph_compile_time_ns == int(gc["TotalTime"]) * 1000  # metric: microseconds
    if mode == "lazy":
        # every lazy compile is a graph compile; shape changes recompile (cause recorded)
        assert dyn.compilations == gc["TotalNumber"] > 1
        assert dyn.recompilations >= 1
        assert all(c.cause_kind == "shape" for c in dyn.events if c.recompile)
    else:
        # eager-compiler recipes are compiles too, but the bridge's metric does not count them
        assert dyn.compilations > dyn.graph_compilations == gc["TotalNumber"]

    cf = stats["cpu_fallback"]
    assert fb.total == cf["TotalNumber"] > 0
    assert {o.op: o.count for o in fb.ops} == cf["FallbackOps"]
    assert "aten::digamma" in cf["FallbackOps"]
    # the runtime models a device-to-host copy of the inputs and a host-to-device copy of the
    # results for every fallback (DMA memcpy events sharing the fallback's correlation)
    assert all(o.copies == 2 * o.count for o in fb.ops)


@pytest.mark.slow
def test_bucketing_targets_the_batch_dimension(tmp_path: Path) -> None:
    """The recommender picks the fed batch size (dim 0 of the input), not a weight dim; with
    as many buckets as sizes it says bucketing does not help instead of advising it."""
    _, trace_path = _run(tmp_path, "lazy")
    trace = hpuprof.load(trace_path, cache=False)
    two = AnalysisOptions(bucket_k=2)
    dyn = analyze(trace, reports="dynamicity", options=two).section("dynamicity")
    assert "input 0, dim 0" in dyn.bucketing_target
    plan = dyn.bucketing
    assert plan is not None
    # the first step also moves the model to the device and is left out; sizes 8, 12, 5
    assert set(plan.boundaries) <= {5, 8, 12} and max(plan.boundaries) == 12
    assert plan.distinct_sizes == 3 and plan.compilations_saved == 1
    four = analyze(trace, reports="dynamicity").section("dynamicity")
    assert four.bucketing is None
    assert any("bucketing does not help here: 3 distinct sizes" in n for n in four.notes)
    assert not any(f.metric == "distinct_sizes" for f in four.findings)
