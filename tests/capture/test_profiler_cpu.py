"""HPUProfiler on the plain CPU backend: files, ranks, schedules, actions, exceptions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hpuprof.capture.profiler import HPUProfiler
from hpuprof.capture.run_dir import read_manifest
from hpuprof.capture.schedule import schedule
from hpuprof.errors import UsageError

from .helpers import names, read_trace, try_load

torch = pytest.importorskip("torch")


def _work(n: int = 3) -> None:
    x = torch.ones(8, 8)
    for _ in range(n):
        x = torch.mm(x, x) * 0.1


def test_with_block_writes_run_dir(tmp_path: Path) -> None:
    prof = HPUProfiler(tmp_path, filename="fit", backend="cpu", record_shapes=True)
    with prof, prof.profile("training_step"):
        _work()
    assert prof.status == "complete"
    trace_file = tmp_path / "traces" / "fit-rank0.pt.trace.json"
    trace = read_trace(trace_file)
    assert "aten::mm" in names(trace, "cpu_op")
    assert "training_step" in names(trace, "user_annotation")
    assert trace["hpuprof"]["backend"] == "cpu"
    assert trace["hpuprof"]["device_time"] == "none"
    assert trace["distributedInfo"]["rank"] == 0
    assert not list((tmp_path / "traces").glob("*incomplete*"))
    manifest = read_manifest(tmp_path)
    assert manifest["status"] == "complete"
    assert manifest["traces"] == ["traces/fit-rank0.pt.trace.json"]
    assert manifest["incomplete"] == []
    assert manifest["backend"] == "cpu"
    assert manifest["torch_version"] == torch.__version__
    assert manifest["end_time"] and manifest["start_time"]
    assert "cpu_op" in prof.summary() or "events" in prof.summary()


def test_rank_in_file_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    with HPUProfiler(tmp_path, filename="job", backend="cpu"):
        _work(1)
    with HPUProfiler(tmp_path, filename="job", backend="cpu", rank=0):
        _work(1)
    files = sorted(p.name for p in (tmp_path / "traces").glob("*.json"))
    assert files == ["job-rank0.pt.trace.json", "job-rank1.pt.trace.json"]
    assert read_trace(tmp_path / "traces" / files[1])["distributedInfo"]["world_size"] == 2
    assert read_manifest(tmp_path)["ranks"] == [0, 1]


def test_schedule_windows_and_on_trace_ready(tmp_path: Path) -> None:
    ready: list[int] = []

    def on_ready(prof: HPUProfiler) -> None:
        ready.append(prof.step_num)
        prof.export_chrome_trace(tmp_path / f"window{len(ready)}.json")

    sched = schedule(wait=1, warmup=1, active=2, repeat=2)
    prof = HPUProfiler(tmp_path, backend="cpu", schedule=sched, on_trace_ready=on_ready)
    prof.start()
    for _ in range(10):
        _work(1)
        prof.step()
    prof.stop()
    assert len(ready) == 2
    trace = read_trace(prof.trace_path)
    steps = sorted(n for n in names(trace, "user_annotation") if n.startswith("ProfilerStep#"))
    assert steps == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#6", "ProfilerStep#7"]
    assert read_trace(tmp_path / "window1.json")["traceEvents"]


def test_exception_still_writes_and_reraises(tmp_path: Path) -> None:
    with pytest.raises(ZeroDivisionError), HPUProfiler(tmp_path, backend="cpu") as prof:
        _work(2)
        raise ZeroDivisionError
    assert prof.status == "error: ZeroDivisionError"
    assert "aten::mm" in names(read_trace(tmp_path / "traces" / "trace-rank0.pt.trace.json"))
    assert read_manifest(tmp_path)["status"] == "error: ZeroDivisionError"


def test_lightning_actions(tmp_path: Path) -> None:
    prof = HPUProfiler(dirpath=tmp_path, filename="lit", backend="cpu")
    prof.start("training_step")
    _work(1)
    prof.stop("training_step")
    prof.start("validation_step")  # left open: closed at stop
    prof.stop()
    trace = read_trace(tmp_path / "traces" / "lit-rank0.pt.trace.json")
    assert {"training_step", "validation_step"} <= set(names(trace, "user_annotation"))
    with pytest.raises(UsageError):
        HPUProfiler(tmp_path, backend="nope")


def test_stop_without_start_action(tmp_path: Path) -> None:
    prof = HPUProfiler(tmp_path, backend="cpu").start()
    with pytest.raises(UsageError):
        prof.stop("never_started")
    prof.stop()


def test_dynamo_compile_records(tmp_path: Path) -> None:
    def f(x: Any) -> Any:
        return (x * 2).sum()

    compiled = torch.compile(f, backend="eager")
    with HPUProfiler(tmp_path, backend="cpu"):
        compiled(torch.ones(3))
        compiled(torch.ones(5))
    trace = read_trace(tmp_path / "traces" / "trace-rank0.pt.trace.json")
    records = [e for e in trace["traceEvents"] if e.get("cat") == "hpuprof"]
    assert [e["args"]["hpuprof.event"] for e in records] == ["dynamo_compile"] * len(records)
    assert len(records) >= 2
    recompile = [e for e in records if e["args"]["dynamo.recompile"]]
    assert recompile and recompile[0]["args"]["hpuprof.cause"]["kind"] == "shape"
    assert "size mismatch" in recompile[0]["args"]["hpuprof.cause"]["text"]
    assert read_manifest(tmp_path)["dynamo_counters"]["stats"]["unique_graphs"] >= 2


def test_trace_loads(tmp_path: Path) -> None:
    with HPUProfiler(tmp_path, backend="cpu", record_shapes=True):
        _work(2)
    trace = try_load(tmp_path / "traces" / "trace-rank0.pt.trace.json")
    assert (trace.events["name"] == "aten::mm").sum() == 2
