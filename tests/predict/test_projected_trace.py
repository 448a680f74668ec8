"""Traces of emulated runs carry the projected timeline (`record --timeline` picks it), and a
prediction's run directory opens like any run."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

SCRIPT = textwrap.dedent(
    """
    import torch
    import habana_frameworks.torch.core as htcore

    a = torch.randn(2048, 2048).to("hpu")
    for step in range(2):
        b = a @ a @ a @ a          # ~70 GFLOP on the modeled MME: milliseconds of device time
        htcore.mark_step()
        print(float(b[0, 0].item()))   # the host waits for the device here
    """
)


def _record(tmp_path: Path, timeline: str) -> dict[str, Any]:
    from hpuprof.cli.main import main

    script = tmp_path / "work.py"
    script.write_text(SCRIPT)
    out = tmp_path / f"run-{timeline}"
    code = main(
        ["record", "--emulate", "--timeline", timeline, "-o", str(out), "--", "python", str(script)]
    )
    import hpusim

    hpusim.disable()
    assert code == 0
    trace = next((out / "traces").glob("*.pt.trace.json"))
    data: dict[str, Any] = json.loads(trace.read_text())
    return data


def _events(doc: dict[str, Any], **match: Any) -> list[dict[str, Any]]:
    return [
        e
        for e in doc["traceEvents"]
        if all(e.get(k) == v or e.get("args", {}).get(k) == v for k, v in match.items())
    ]


def test_projected_trace_waits_for_the_device_and_keeps_measured_times(tmp_path: Path) -> None:
    doc = _record(tmp_path, "projected")
    meta = doc["hpuprof"]
    assert meta["timeline"] == "projected" and meta["host_time"] == "projected"
    ops = _events(doc, cat="cpu_op")
    assert ops and all("hpuprof.measured_us" in e["args"] for e in ops)
    mm = [e for e in ops if e["name"] == "aten::mm"]
    # a lazy op costs the bridge microseconds; its CPU run here took far longer
    assert all(e["dur"] < 50 for e in mm)
    assert max(e["args"]["hpuprof.measured_us"] for e in mm) > 100
    syncs = [e for e in _events(doc, cat="hpuprof") if e["args"].get("hpuprof.event") == "sync"]
    kernels = [
        e for e in doc["traceEvents"] if e.get("cat") == "kernel" and e["name"].startswith("mm")
    ]
    device_end = max(k["ts"] + k["dur"] for k in kernels)
    waited = max(syncs, key=lambda e: e["args"]["hpuprof.modeled_wait_ns"])
    # an .item() waits for the modeled matmuls (the first step's compiles blocked the host long
    # enough): its slice on the host spans that wait and ends as the kernels it waited for do
    # (~300 us on a quiet machine, in the second step; how long, and which step's wait is the
    # longest, depends on the host's projected CPU time, which a loaded machine stretches)
    wait_us = waited["args"]["hpuprof.modeled_wait_ns"] / 1000
    assert wait_us > 0
    assert waited["dur"] >= wait_us * 0.99
    waited_end = waited["ts"] + waited["dur"]
    assert waited_end <= device_end + 100
    assert any(0 <= waited_end - (k["ts"] + k["dur"]) <= 100 for k in kernels)


def test_measured_timeline_keeps_the_emulators_clock(tmp_path: Path) -> None:
    doc = _record(tmp_path, "measured")
    meta = doc["hpuprof"]
    assert meta["timeline"] == "measured" and meta["host_time"] == "measured"
    ops = _events(doc, cat="cpu_op")
    assert ops and not any("hpuprof.measured_us" in e["args"] for e in ops)
    mm = [e for e in ops if e["name"] == "aten::mm"]
    assert max(e["dur"] for e in mm) > 100  # the CPU's own matmul time


def test_prediction_run_directory_opens_in_analyze(tmp_path: Path, capsys: Any) -> None:
    from hpuprof.cli.main import main

    script = tmp_path / "work.py"
    script.write_text(SCRIPT)
    out = tmp_path / "pred"
    assert main(["predict", "-o", str(out), "--", "python", str(script)]) == 0
    text = capsys.readouterr().out
    assert "step time" in text and "MODELED" in text
    pred = json.loads((out / "prediction.json").read_text())
    assert pred["timeline"] == "projected" and pred["steps"] == 2
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["prediction"] == "prediction.json" and manifest["status"].startswith("complete")
    import hpuprof

    trace = hpuprof.load(next((out / "traces").glob("*.pt.trace.json")))
    assert len(trace.events) > 10
