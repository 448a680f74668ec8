"""DeepSpeed from PyPI on the emulated Gaudi (pyproject's `deepspeed` extra).

DeepSpeed's HPU accelerator selects itself when `habana_frameworks` imports. What it needs of
the bridge, checked without DeepSpeed: `Module.to("hpu")` moves a parameter that something holds
a weak reference to (DeepSpeed's `WeakIdNameMap` of parameter names) and keeps its identity, as
the bridge's in-place `param.data = ...` does; `torch.hpu.set_device(local_rank)` on a card of a
server. With DeepSpeed installed: ZeRO-1/2/3 bf16 training steps on 1 and 2 emulated cards, with
the collectives each stage implies on the cards' NIC lanes.
"""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest

torch = pytest.importorskip("torch")


def test_a_parameter_with_a_weak_reference_moves_to_hpu_and_keeps_its_identity(
    hpu: Any,
) -> None:
    hpu("eager")
    model = torch.nn.Linear(4, 3)
    weight = model.weight
    finalized: list[str] = []
    weakref.finalize(weight, finalized.append, "weight")  # as DeepSpeed's WeakIdNameMap does
    ref = weakref.ref(weight)
    model.to("hpu")
    assert model.weight is weight and ref() is weight  # the same Parameter, now on the card
    assert weight.device == torch.device("hpu", 0) and isinstance(weight, torch.nn.Parameter)
    model(torch.randn(2, 4).to("hpu")).sum().backward()
    assert weight.grad is not None and weight.grad.device.type == "hpu"
    assert not finalized
    del model, weight
    gc.collect()
    assert finalized == ["weight"] and ref() is None  # the weak reference still follows it


def test_host_tensors_with_weak_references_still_refuse_a_swap(hpu: Any) -> None:
    """torch's own refusal stands where the bridge is not involved (two host tensors)."""
    hpu("eager")
    a, b = torch.zeros(2), torch.ones(2)
    ref = weakref.ref(a)
    with pytest.raises(RuntimeError, match="weakref"):
        torch.utils.swap_tensors(a, b)
    assert ref() is a and a.sum().item() == 0


def test_set_device_of_a_lone_process_supports_index_0_only(
    hpu: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("LOCAL_WORLD_SIZE", "HABANA_VISIBLE_MODULES", "HLS_MODULE_ID"):
        monkeypatch.delenv(var, raising=False)
    hpu("eager")
    torch.hpu.set_device(0)
    with pytest.raises(AssertionError, match="the only supported device idx is 0"):
        torch.hpu.set_device(1)


def test_set_device_on_a_card_of_a_server_selects_its_module(
    hpu: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`hpuprof record --cards N` starts N processes of an eight-card server (LOCAL_WORLD_SIZE):
    DeepSpeed's `set_device(local_rank)` selects that module (HLS_MODULE_ID), as on an HLS."""
    monkeypatch.delenv("HLS_MODULE_ID", raising=False)
    monkeypatch.delenv("HABANA_VISIBLE_MODULES", raising=False)
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    hpu("eager")
    torch.hpu.set_device(1)
    import os

    assert os.environ["HLS_MODULE_ID"] == "1"
    torch.hpu.set_device(1)  # again: the same module
    monkeypatch.delenv("HLS_MODULE_ID")
    monkeypatch.setenv("HABANA_VISIBLE_MODULES", "4,5")
    torch.hpu.set_device(1)
    assert os.environ["HLS_MODULE_ID"] == "5"


def test_parameters_pointed_into_a_flat_buffer_compile(hpu: Any) -> None:
    """DeepSpeed's ZeRO points every parameter into one flat buffer (`param.data = flat.narrow(
    offset, n).view_as(param)`); torch.compile then fakifies each parameter. The second one sits
    at an offset: its wrapper takes that offset with the data (dynamo raised 'Attempted to set the
    storage of a tensor on device "cpu" to a storage on different device "meta"'), and the
    compiled module computes what the eager one does."""
    hpu("eager")
    torch.manual_seed(0)
    linear = torch.nn.Linear(8, 4).to("hpu").to(torch.bfloat16)
    params = list(linear.parameters())
    flat = torch.cat([p.detach().reshape(-1) for p in params])
    offset = 0
    for p in params:
        p.data = flat.narrow(0, offset, p.numel()).view_as(p)
        offset += p.numel()
    bias = params[1]
    assert bias.storage_offset() == 32 and bias.untyped_storage() is not None
    x = torch.randn(2, 8).to("hpu").to(torch.bfloat16)
    eager = linear(x)
    compiled = torch.compile(linear, backend="hpu_backend")(x)
    assert compiled.device.type == "hpu"
    assert torch.equal(compiled.cpu(), eager.cpu())
    with torch.no_grad():
        flat.zero_()  # the parameters are views of the buffer: they read zeros now
    assert linear(x).cpu().abs().sum().item() == 0
