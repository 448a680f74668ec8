"""`hpex.optimizers.FusedLars` is an `Optimizer`, as the bridge's 1.19 one is
(`hpex/optimizers/FusedLars.py`: `class FusedLars(Optimizer)`, `super().__init__(optimizer.
param_groups, defaults)`): torch's LR schedulers take it, which Model-References' ResNet LARS
run does (`PolynomialDecayWithWarmup(FusedLars(...))`: "FusedLars is not an Optimizer" before)."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")


def _lars(hpu: Any) -> tuple[Any, Any, Any]:
    hpu("eager")
    from habana_frameworks.torch.hpex.optimizers import FusedLars, FusedResourceApplyMomentum

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    model = model.to("hpu")
    inner = FusedResourceApplyMomentum(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    skip_mask = [name.endswith("weight") for name, _ in model.named_parameters()]
    return model, inner, FusedLars(inner, skip_mask, eps=0.0)


def test_fused_lars_is_an_optimizer_sharing_the_wrapped_groups_and_state(hpu: Any) -> None:
    _, inner, lars = _lars(hpu)
    assert isinstance(lars, torch.optim.Optimizer)
    assert lars.param_groups[0] is inner.param_groups[0]
    assert lars.state is inner.state
    assert {"skip_mask", "eeta", "eps"} <= set(inner.defaults)  # the bridge updates them in place


def test_an_lr_scheduler_drives_fused_lars_and_its_steps_move_the_weights(hpu: Any) -> None:
    model, inner, lars = _lars(hpu)
    schedule = torch.optim.lr_scheduler.LambdaLR(lars, lambda step: 1.0 / (step + 1))
    before = [p.detach().cpu().clone() for p in model.parameters()]
    x = torch.randn(5, 8).to("hpu")
    for _ in range(2):
        lars.zero_grad(set_to_none=True)
        model(x).pow(2).sum().backward()
        lars.step()
        schedule.step()
    assert inner.param_groups[0]["lr"] == pytest.approx(0.1 / 3)
    after = [p.detach().cpu() for p in model.parameters()]
    assert all(not torch.equal(b, a) for b, a in zip(before, after, strict=True))
