"""An unchanged Gaudi-style training script runs under hpusim in a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

GAUDI_SCRIPT = """
import torch
import habana_frameworks.torch.core as htcore
import habana_frameworks.torch.hpu as hthpu

device = torch.device("hpu")
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(10, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
data = [(torch.randn(4, 10), torch.randint(0, 2, (4,))) for _ in range(5)] + [(torch.randn(2, 10), torch.randint(0, 2, (2,)))]
for x, y in data:
    x, y = x.to(device), y.to(device)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    htcore.mark_step()
    optimizer.step()
    htcore.mark_step()
    print(f"loss {loss.item():.6f}")
print("compiles", hthpu.metric_global("graph_compilation").stats()[0][1])
print("available", hthpu.is_available(), torch.hpu.device_count())
"""

LAUNCHER = (
    "import sys, runpy, hpusim; hpusim.enable(); runpy.run_path(sys.argv[1], run_name='__main__')"
)


def test_unchanged_gaudi_script_runs_under_hpusim(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(GAUDI_SCRIPT)
    metrics = tmp_path / "metrics.json"
    env = dict(os.environ)
    env.update(
        PT_HPU_LAZY_MODE="1",
        PT_HPU_METRICS_FILE=str(metrics),
        HABANA_LOGS=str(tmp_path / "logs"),
    )
    env.pop("RANK", None)
    out = subprocess.run(
        [sys.executable, "-c", LAUNCHER, str(script)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert sum(1 for line in lines if line.startswith("loss ")) == 6
    # fwd+bwd and optimizer graphs, then the smaller last batch recompiles fwd+bwd
    assert "compiles 3" in lines
    assert "available True 1" in lines
    # the bridge's startup banner, once, on stderr
    assert out.stderr.count("HABANA PT BRIDGE CONFIGURATION") == 1
    assert " PT_HPU_LAZY_MODE = 1" in out.stderr
    dumped = json.loads(metrics.read_text())  # process_exit dump
    assert dumped[0]["metric_name"] == "graph_compilation"
    assert dumped[0]["triggered_by"] == "process_exit"
    assert dumped[0]["statistics"]["TotalNumber"] == 3
