"""hello_world's `example.py` (Model-References) trains with SGD (momentum, weight decay) and a
MultiStepLR: at each milestone the learning rate changes. In the 1.19 bridge's lazy mode
`add_(grad, alpha=-lr)` (SGD's update) turns an alpha other than 1 into a device tensor
(`add_tensor_hpu_lazy_inplace_parallel_impl` -> `get_tensor_for_scalar`, cached per value), so a
new learning rate is a new input value, not a new graph: no recompilation at the milestones.
The emulated run and our analysis of it must both say so (0 recompilations, no compile after
the first steps), and agree with the runtime's own graph_compilation metric."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

import hpuprof
from hpuprof.analysis import analyze

REPO = Path(__file__).resolve().parents[2]
EPOCHS, STEPS_PER_EPOCH, MILESTONES = 6, 3, (2, 4)

CHILD = f"""
import sys
import orjson
import hpusim
hpusim.enable(mode="lazy")
import torch
import torch.nn.functional as F
import habana_frameworks.torch.core as htcore
from habana_frameworks.torch.hpu.metrics import metric_global
from hpuprof.capture.profiler import HPUProfiler
out = sys.argv[1]
prof = HPUProfiler(out, backend="emulated", record_shapes=True).start()
torch.manual_seed(0)
device = torch.device("hpu")
net = torch.nn.Sequential(
    torch.nn.Linear(784, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10)
).to(device)
opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones={list(MILESTONES)}, gamma=0.1)
for epoch in range({EPOCHS}):
    for _ in range({STEPS_PER_EPOCH}):
        x, y = torch.randn(32, 784).to(device), torch.randint(0, 10, (32,)).to(device)
        opt.zero_grad()
        F.cross_entropy(net(x), y).backward()
        htcore.mark_step()
        opt.step()
        htcore.mark_step()
        prof.step()
    sched.step()
prof.stop()
stats = dict(metric_global("graph_compilation").stats())
lr = opt.param_groups[0]["lr"]
open(out + "/oracle.json", "wb").write(
    orjson.dumps({{"stats": stats, "lr": lr, "trace": str(prof.paths.trace)}})
)
"""


@pytest.mark.slow
def test_sgd_lr_milestones_do_not_recompile_in_lazy_mode(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("hpusim")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(REPO / "runtime")])
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(out)], env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    data = orjson.loads((out / "oracle.json").read_bytes())
    assert data["lr"] == pytest.approx(0.01 * 0.1 * 0.1)  # both milestones were passed
    dyn = analyze(hpuprof.load(Path(data["trace"]), cache=False), "dynamicity").section(
        "dynamicity"
    )
    assert dyn.recompilations == 0, dyn
    assert dyn.graph_compilations == data["stats"]["TotalNumber"]
    milestone_steps = {m * STEPS_PER_EPOCH for m in MILESTONES}
    compiled_in = {s.step for s in dyn.timeline if s.compilations}
    assert compiled_in and max(compiled_in) < min(milestone_steps), compiled_in
