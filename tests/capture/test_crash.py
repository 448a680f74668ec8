"""Nothing recorded is lost: exception, SIGTERM, SIGINT and kill -9 of a profiled process."""

from __future__ import annotations

import signal
from pathlib import Path

import orjson
import pytest

from hpuprof.capture.run_dir import read_manifest
from hpuprof.capture.run_end import run_end

from .helpers import names, read_trace, spawn, try_load
from .helpers import run_until_ready as _run_until_ready

pytest.importorskip("torch")


def _final(out: Path) -> Path:
    return out / "traces" / "trace-rank0.pt.trace.json"


@pytest.mark.parametrize(
    ("sig", "code"), [(signal.SIGTERM, -signal.SIGTERM), (signal.SIGINT, -signal.SIGINT)]
)
def test_signal_writes_everything_then_dies_as_before(
    tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    child = _run_until_ready(tmp_path)
    child.send_signal(sig)  # type: ignore[attr-defined]
    assert child.wait(60) in (code, 1, 130)  # type: ignore[attr-defined]
    trace = read_trace(_final(tmp_path))
    assert sum(n.startswith("ProfilerStep#") for n in names(trace, "user_annotation")) >= 6
    manifest = read_manifest(tmp_path)
    assert manifest["status"] == f"interrupted: {sig.name}"
    assert manifest["traces"] == ["traces/trace-rank0.pt.trace.json"]
    assert manifest["incomplete"] == []


def test_kill_9_leaves_a_loadable_incomplete_trace(tmp_path: Path) -> None:
    child = _run_until_ready(tmp_path)
    child.kill()  # type: ignore[attr-defined]
    assert child.wait(60) == -signal.SIGKILL  # type: ignore[attr-defined]
    assert not _final(tmp_path).exists()
    manifest = read_manifest(tmp_path)
    assert manifest["status"] == "running"
    [incomplete] = manifest["incomplete"]
    assert incomplete.endswith(".incomplete.json")
    assert manifest["traces"] == [incomplete]  # named from the start: the run directory loads
    assert (try_load(tmp_path).events["name"] == "aten::mm").sum() >= 6
    assert run_end(manifest).state == "killed"
    data = orjson.loads((tmp_path / incomplete).read_bytes())  # valid JSON as left on disk
    steps = [e for e in data["traceEvents"] if e["name"].startswith("ProfilerStep#")]
    assert len(steps) >= 6
    assert data["hpuprof"]["backend"] == "cpu"
    trace = try_load(tmp_path / incomplete)
    assert (trace.events["name"] == "aten::mm").sum() >= 6


def test_exception_in_child_writes_and_exits_1(tmp_path: Path) -> None:
    child = _run_until_ready(tmp_path, fail="if i == 7: raise ValueError('boom')")
    assert child.wait(60) == 1  # type: ignore[attr-defined]
    assert child.stderr is not None and b"ValueError: boom" in child.stderr.read()  # type: ignore[attr-defined]
    trace = read_trace(_final(tmp_path))  # written at exit by the atexit hook
    assert "aten::mm" in names(trace)
    manifest = read_manifest(tmp_path)  # the atexit hook saw the exception that ended it
    assert manifest["end_state"] == "exception"
    assert manifest["ends"]["0"]["exception"] == "ValueError"


EMULATED_LOOP = """
import hpusim
hpusim.enable(mode="lazy")
import torch
import habana_frameworks.torch.core as htcore
from hpuprof.capture.profiler import HPUProfiler
prof = HPUProfiler({out!r}, backend="emulated").start()
x = torch.ones(8, 8).to("hpu")
for i in range(100000):
    x = (x @ x) * 0.1
    htcore.mark_step()
    prof.step()
    if i == 5:
        print("ready", flush=True)
"""


def test_kill_9_emulated_keeps_streamed_chunks(tmp_path: Path) -> None:
    pytest.importorskip("hpusim")
    child = spawn(EMULATED_LOOP.format(out=str(tmp_path)))
    assert child.stdout is not None
    assert child.stdout.readline().strip() == b"ready"
    child.kill()
    assert child.wait(60) == -signal.SIGKILL
    [incomplete] = read_manifest(tmp_path)["incomplete"]
    data = orjson.loads((tmp_path / incomplete).read_bytes())
    assert data["hpuprof"]["device_time"] == "modeled"
    events = data["traceEvents"]
    assert sum(e["name"].startswith("ProfilerStep#") for e in events) >= 6
    assert any(e.get("args", {}).get("hpuprof.event") == "compile" for e in events)
    assert any(e.get("pid") == 0 and e.get("ph") == "X" for e in events)  # device lanes
