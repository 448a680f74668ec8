"""Training under emulation gives bit-identical fp32 losses to the same loop on CPU.

(bf16 autocast bit-identity belongs with the autocast mirror and its tests.)"""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")


def _train(device: str, opt_name: str, steps: int = 6, lazy_steps: bool = False) -> list[float]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(12, 24), torch.nn.GELU(), torch.nn.LayerNorm(24), torch.nn.Linear(24, 5)
    ).to(device)
    opt: torch.optim.Optimizer
    if opt_name == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    losses = []
    for i in range(steps):
        batch = 8 if i < steps - 1 else 5  # a smaller last batch
        x = torch.randn(batch, 12).to(device)
        y = torch.randint(0, 5, (batch,)).to(device)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        if lazy_steps:
            import hpusim

            hpusim.mark_step()
        opt.step()
        if lazy_steps:
            import hpusim

            hpusim.mark_step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("opt_name", ["sgd", "adamw"])
@pytest.mark.parametrize("mode", ["eager", "lazy"])
def test_fp32_losses_are_bit_identical_to_cpu(hpu: Any, opt_name: str, mode: str) -> None:
    cpu = _train("cpu", opt_name)
    hpu(mode)
    emulated = _train("hpu", opt_name, lazy_steps=mode == "lazy")
    assert emulated == cpu  # exact float equality, not approx


def test_events_carry_phase_and_module(hpu: Any) -> None:
    hpu("eager")
    from hpusim.sink import KIND_OP, PHASES, get_sink

    get_sink().drain()
    _train("hpu", "adamw", steps=1)
    b = get_sink().drain()
    ops = [i for i in range(len(b)) if b.kind[i] == KIND_OP]
    phases = {PHASES[b.phase[i]] for i in ops}
    assert {"fwd", "bwd", "optimizer"} <= phases
    modules = {b.strings[b.module[i]] for i in ops if PHASES[b.phase[i]] == "fwd"}
    assert {"0", "1", "2", "3"} <= modules
    bwd_mm = [i for i in ops if PHASES[b.phase[i]] == "bwd" and b.strings[b.name[i]] == "aten::mm"]
    assert {b.strings[b.module[i]] for i in bwd_mm} == {"0", "3"}  # linear layers' backward
    addmm = [
        i for i in ops if b.strings[b.name[i]] == "aten::addmm" and PHASES[b.phase[i]] == "fwd"
    ]
    assert b.strings[b.dims[addmm[0]]] == "[[24],[5,12],[12,24]]"  # steps=1: the last batch
