"""`hpuprof record` on unchanged scripts (CPU and emulated Gaudi) and `hpuprof demo`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from hpuprof.capture.run_dir import read_manifest

from .helpers import child_env, names, read_trace

pytest.importorskip("torch")

CPU_SCRIPT = """
import sys, torch
model = torch.nn.Linear(8, 8)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(4):
    loss = model(torch.ones(2, 8)).sum()
    opt.zero_grad(); loss.backward(); opt.step()
print("script args", sys.argv[1:], __name__)
sys.exit(int(sys.argv[1]))
"""

GAUDI_SCRIPT = """
import torch
import habana_frameworks.torch.core as htcore
device = torch.device("hpu")
model = torch.nn.Linear(16, 4).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for n in (8, 8, 12, 8):
    loss = model(torch.randn(n, 16).to(device)).sum()
    loss.backward()
    htcore.mark_step()
    opt.step()
    htcore.mark_step()
    print(round(loss.item(), 3))
"""


def _hpuprof(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from hpuprof.cli.main import run; run()", *args],
        env=child_env(),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _hpusim_available() -> bool:
    try:
        import hpusim
    except ImportError:
        return False
    return hasattr(hpusim, "enable")


def test_record_cpu_script_passes_exit_code_and_schedule(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(CPU_SCRIPT)
    out = tmp_path / "run"
    done = _hpuprof(
        "record",
        "-o",
        str(out),
        "--schedule",
        "1,1,2",
        "--",
        "python",
        str(script),
        "3",
        cwd=tmp_path,
    )
    assert done.returncode == 3, done.stderr
    assert "script args ['3'] __main__" in done.stdout
    assert f"run written to {out}" in done.stdout
    trace = read_trace(out / "traces" / "train-rank0.pt.trace.json")
    steps = sorted(n for n in names(trace) if n.startswith("ProfilerStep#"))
    assert steps == ["ProfilerStep#2", "ProfilerStep#3"]  # optimizer steps drive the schedule
    manifest = read_manifest(out)
    # the script exited 3: record marks the run failed (issue 9), with the exit code (issue 13)
    assert manifest["backend"] == "cpu" and manifest["status"] == "failed: exit code 3"
    assert manifest["end_state"] == "failed" and manifest["ends"]["0"]["exit_code"] == 3
    assert manifest["argv"][1] == "record"
    # the Perfetto trace, written by `record` once the script had ended (not by its stop)
    assert manifest["perfetto"] == ["perfetto/train-rank0.perfetto-trace"]
    assert (out / "perfetto" / "train-rank0.perfetto-trace").stat().st_size > 0
    assert f"perfetto  {out / 'perfetto' / 'train-rank0.perfetto-trace'}" in done.stdout


def test_record_missing_script_is_a_clear_error(tmp_path: Path) -> None:
    done = _hpuprof("record", "-o", str(tmp_path / "r"), "--", "python", "nope.py", cwd=tmp_path)
    assert done.returncode == 2
    assert "script not found: nope.py" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.skipif(not _hpusim_available(), reason="the emulated runtime is not available")
def test_record_emulated_gaudi_script_unchanged(tmp_path: Path) -> None:
    script = tmp_path / "gaudi_train.py"
    script.write_text(GAUDI_SCRIPT)
    out = tmp_path / "run"
    done = _hpuprof(
        *("record", "--emulate", "--no-perfetto", "-o", str(out)),
        *("--", "python", str(script)),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    trace = read_trace(out / "traces" / "gaudi_train-rank0.pt.trace.json")
    assert trace["hpuprof"]["device_time"] == "modeled"
    assert trace["hpuprof"]["mode"] == "lazy"
    events = trace["traceEvents"]
    assert any(
        e.get("cat") == "hpuprof" and e["args"].get("hpuprof.event") == "compile" for e in events
    )
    assert any(
        e.get("pid") == 0 and e.get("cat") in ("kernel", "gpu_memcpy", "hpu_op") for e in events
    )
    metrics = orjson.loads((out / "metrics" / "gaudi_train-rank0.json").read_bytes())
    by_name = {m["metric_name"]: m["statistics"] for m in metrics}
    assert by_name["graph_compilation"]["TotalNumber"] >= 2  # two batch shapes
    manifest = read_manifest(out)
    assert manifest["backend"] == "emulated"
    assert manifest["device_profile"] == "gaudi2"
    assert manifest["metrics"] == ["metrics/gaudi_train-rank0.json"]
    assert manifest["perfetto"] == [] and not list((out / "perfetto").iterdir())  # --no-perfetto


@pytest.mark.skipif(not _hpusim_available(), reason="the emulated runtime is not available")
def test_demo_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    done = _hpuprof("demo", "-o", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"hpuprof dashboard {out}" in done.stdout
    manifest = read_manifest(out)
    assert manifest["status"] == "complete"
    assert manifest["traces"] and manifest["perfetto"] and manifest["metrics"]
    events = read_trace(out / manifest["traces"][0])["traceEvents"]
    hpu_events = {e["args"].get("hpuprof.event") for e in events if e.get("cat") == "hpuprof"}
    assert {"compile", "fallback", "sync"} <= hpu_events
    compiles = [e for e in events if e.get("args", {}).get("hpuprof.event") == "compile"]
    assert len(compiles) >= 4  # one per distinct sequence length at least
    assert sum(n.startswith("ProfilerStep#") for n in (e["name"] for e in events)) == 8
