"""An unchanged Gaudi-style training + inference script (htcore.mark_step, hmp.convert,
hmp.disable_casts, wrap_in_hpu_graph, Habana metrics) runs under hpusim in a fresh process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

SCRIPT = """
import torch
import habana_frameworks.torch.core as htcore
import habana_frameworks.torch.hpu as hthpu
from habana_frameworks.torch.hpex import hmp
from habana_frameworks.torch.hpu.metrics import metric_global

device = torch.device("hpu")
hmp.convert(opt_level="O1", bf16_file_path=BF16, fp32_file_path=FP32, isVerbose=False)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


torch.manual_seed(0)
model = Net().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(4):
    x = torch.randn(8, 16).to(device)
    y = torch.randint(0, 4, (8,)).to(device)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    htcore.mark_step()
    with hmp.disable_casts():
        opt.step()
    opt.zero_grad(set_to_none=True)
    htcore.mark_step()
    print(f"step {step} loss {loss.item():.4f}")

model.eval()
model = hthpu.wrap_in_hpu_graph(model)
with torch.no_grad():
    for _ in range(3):
        out = model(torch.randn(8, 16).to(device))
print("pred", out.argmax(-1).cpu().tolist())
print("dtype", out.dtype)
print("compiles", dict(metric_global("graph_compilation").stats())["TotalNumber"])
"""


def test_unchanged_gaudi_script_runs_under_hpusim(tmp_path: Path) -> None:
    (tmp_path / "bf16.txt").write_text("addmm linear mm\n")
    (tmp_path / "fp32.txt").write_text("cross_entropy softmax\n")
    script = tmp_path / "train.py"
    header = f"BF16 = {str(tmp_path / 'bf16.txt')!r}\nFP32 = {str(tmp_path / 'fp32.txt')!r}\n"
    script.write_text(header + SCRIPT)
    shim = Path(__file__).resolve().parents[2] / "runtime" / "shim"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(shim), os.environ.get("PYTHONPATH", "")]),
        "PT_HPU_LAZY_MODE": "1",
        "HABANA_LOGS": str(tmp_path / "logs"),
    }
    env.pop("PT_HPU_METRICS_FILE", None)
    proc = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    losses = [float(ln.split()[-1]) for ln in lines if ln.startswith("step ")]
    assert len(losses) == 4 and all(0 < v < 10 for v in losses)
    assert "dtype torch.bfloat16" in lines  # fc2 (linear) in HMP's bf16 list
    compiles = int(next(ln for ln in lines if ln.startswith("compiles")).split()[1])
    assert compiles >= 2  # lazy graphs compiled (fwd+bwd step, optimizer step, capture)


def test_the_script_under_hpuprof_record_emits_graph_and_cast_events(tmp_path: Path) -> None:
    import json

    (tmp_path / "bf16.txt").write_text("addmm linear mm\n")
    (tmp_path / "fp32.txt").write_text("cross_entropy\n")
    script = tmp_path / "train.py"
    header = f"BF16 = {str(tmp_path / 'bf16.txt')!r}\nFP32 = {str(tmp_path / 'fp32.txt')!r}\n"
    script.write_text(header + SCRIPT)
    env = {**os.environ, "HABANA_LOGS": str(tmp_path / "logs")}
    env.pop("PT_HPU_METRICS_FILE", None)
    out = tmp_path / "run"
    cmd = [sys.executable, "-c", "import sys; from hpuprof.cli.main import main; sys.exit(main())"]
    proc = subprocess.run(
        [*cmd, "record", "--emulate", "--mode", "lazy", "-o", str(out), "--", "python", "train.py"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    trace = next((out / "traces").glob("*.json"))
    events = json.loads(trace.read_text())["traceEvents"]
    kinds = [e.get("args", {}).get("hpuprof.event") for e in events]
    assert kinds.count("graph_capture") == 1
    assert kinds.count("graph_replay") == 2  # 3 calls: capture, then 2 replays
    assert kinds.count("cast") > 0
