"""The real-Gaudi adapter, run against a fake `habana_frameworks` (no card here)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from hpuprof.capture import backends
from hpuprof.capture.profiler import HPUProfiler
from hpuprof.capture.run_dir import read_manifest

from .helpers import names, read_trace

torch = pytest.importorskip("torch")

FAKE_METRICS = """
class _Metric:
    def __init__(self, name, stats):
        self._name, self._stats = name, stats
    def name(self):
        return self._name
    def stats(self):
        return list(self._stats.items())

_GLOBAL = {
    "graph_compilation": _Metric("graph_compilation", {"TotalNumber": 3, "TotalTime": 412345, "AvgTime": 137448.3}),
    "cpu_fallback": _Metric("cpu_fallback", {"TotalNumber": 1, "FallbackOps": {"aten::digamma": 1}}),
    "memory_defragmentation": _Metric("memory_defragmentation", {"TotalNumber": 0, "TotalSuccessful": 0, "AvgTime": 0, "MaxTime": 0}),
}

def metric_global(name):
    return _GLOBAL.get(name)
"""


@pytest.fixture
def fake_habana(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "fake"
    pkg = root / "habana_frameworks" / "torch"
    (pkg / "core").mkdir(parents=True)
    (pkg / "hpu").mkdir()
    (root / "habana_frameworks" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "core" / "__init__.py").write_text("IMPORTED = True\n")
    (pkg / "hpu" / "__init__.py").write_text("def get_device_name():\n    return 'GAUDI2'\n")
    (pkg / "hpu" / "metrics.py").write_text(FAKE_METRICS)
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.delenv("HABANA_PROFILE", raising=False)
    _forget_habana_modules()  # the emulator's shim, imported by an earlier test, would shadow us
    yield root
    _forget_habana_modules()


def _forget_habana_modules() -> None:
    for name in [m for m in sys.modules if m.startswith("habana_frameworks")]:
        del sys.modules[name]


def test_gaudi_backend_with_fake_bridge(fake_habana: Path, tmp_path: Path) -> None:
    hpusim = sys.modules.get("hpusim")
    if hpusim is None or not hpusim.is_enabled():
        assert backends.choose() == "gaudi"
    out = tmp_path / "run"
    with HPUProfiler(out, filename="g", backend="gaudi", record_shapes=True) as prof:
        torch.mm(torch.ones(4, 4), torch.ones(4, 4))
    assert prof.backend == "gaudi"
    import os

    assert os.environ["HABANA_PROFILE"] == "profile_api_light"
    assert sys.modules["habana_frameworks.torch.core"].IMPORTED
    trace = read_trace(out / "traces" / "g-rank0.pt.trace.json")
    assert "aten::mm" in names(trace)
    assert trace["hpuprof"]["device_time"] == "measured"
    assert trace["hpuprof"]["device_profile"] == "gaudi2"
    metrics = orjson.loads((out / "metrics" / "g-rank0.json").read_bytes())
    assert [m["metric_name"] for m in metrics] == [
        "graph_compilation",
        "cpu_fallback",
        "memory_defragmentation",
    ]
    assert metrics[1]["statistics"] == {"TotalNumber": 1, "FallbackOps": {"aten::digamma": 1}}
    assert {m["triggered_by"] for m in metrics} == {"user"}
    assert read_manifest(out)["metrics"] == ["metrics/g-rank0.json"]
