"""hpuprof's HPUProfiler in the style of lightning-habana's profiler docs: a per-rank trace file
(`filename` + the launcher's RANK), custom actions with `profiler.profile("...")`, steps; the
`backend` comes from argv ("emulated" or "gaudi": torch.profiler with ProfilerActivity.HPU)."""

import sys

import habana_frameworks.torch.core as htcore
import torch

from hpuprof import HPUProfiler

out, backend = sys.argv[1], sys.argv[2]
model = torch.nn.Linear(16, 4).to("hpu")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
with HPUProfiler(dirpath=out, filename="train", backend=backend) as profiler:
    for _ in range(3):
        with profiler.profile("data_loading"):
            x = torch.randn(8, 16).to("hpu")
        with profiler.profile("train_step"):
            loss = model(x).pow(2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            htcore.mark_step()
        profiler.step()
print("profiled", backend)
