"""`hpuprof record --emulate --mode compile` on an unchanged script that calls torch.compile."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hpuprof.capture import compile_mode
from hpuprof.capture.run_dir import read_manifest

from .helpers import child_env, read_trace

pytest.importorskip("torch")
pytest.importorskip("hpusim")

SCRIPT = """
import torch
device = torch.device("hpu")
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
model = model.to(device)
step = torch.compile(model)  # the default backend (inductor): not observable under emulation
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for n in (8, 8, 12, 8):
    loss = step(torch.randn(n, 16).to(device)).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    print(round(loss.item(), 4))
"""


def test_record_compile_mode_forces_hpu_backend(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    out = tmp_path / "run"
    cli = [sys.executable, "-c", "from hpuprof.cli.main import run; run()"]
    done = subprocess.run(
        [
            *cli,
            "record",
            "--emulate",
            "--mode",
            "compile",
            "-o",
            str(out),
            "--",
            "python",
            str(script),
        ],
        env=child_env(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "'inductor' x1 replaced by 'hpu_backend'" in done.stdout
    assert "global hooks" not in done.stderr  # the emulator's hooks are not the user's problem
    manifest = read_manifest(out)
    assert manifest["mode"] == "compile"
    assert manifest["compile_backends_replaced"] == {"inductor": 1}
    trace = read_trace(out / "traces" / "train-rank0.pt.trace.json")
    meta = trace["hpuprof"]
    assert (meta["mode"], meta["frontend"], meta["compile_backend"]) == (
        "compile",
        "eager",
        "hpu_backend",
    )
    assert "inductor" in meta["compile_note"]
    args = [e.get("args", {}) for e in trace["traceEvents"]]
    dynamo = [a for a in args if a.get("hpuprof.event") == "dynamo_compile"]
    # one record per dynamo compile (not the runtime's and the profiler's both): the first
    # compile, then the recompile for the new batch size with dynamo's own guard text
    assert [a["hpuprof.cause"]["kind"] for a in dynamo] == ["new_graph", "guard"]
    assert "size mismatch at index 0. expected 8, actual 12" in dynamo[1]["hpuprof.cause"]["text"]
    # the compiled graphs' ops ran on the emulated device, in compile mode
    assert sum(a.get("hpuprof.mode") == "compile" and a.get("hpuprof.event") == "op" for a in args)


def test_forcing_replaces_any_backend_and_restores_torch_compile() -> None:
    import torch

    original = torch.compile
    seen: list[dict[str, object]] = []

    def fake(model: object = None, **kwargs: object) -> object:
        seen.append(kwargs)
        return model

    torch.compile = fake  # type: ignore[assignment]
    try:
        compile_mode.install()
        assert compile_mode.is_installed()
        torch.compile(len, mode="max-autotune")
        torch.compile(len, backend="hpu_backend")
        torch.compile(len, backend="aot_eager", options={"x": 1})
        assert [k["backend"] for k in seen] == ["hpu_backend"] * 3
        assert "mode" not in seen[0] and "options" not in seen[2]  # inductor-only settings
        assert compile_mode.run_metadata()["compile_backends_replaced"] == {
            "inductor": 1,
            "aot_eager": 1,
        }
        compile_mode.uninstall()
        assert torch.compile is fake and not compile_mode.is_installed()
    finally:
        compile_mode.uninstall()
        compile_mode.replaced.clear()
        torch.compile = original
