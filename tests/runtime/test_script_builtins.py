"""`torch.jit.script` while emulating: the emulator's wrappers of torch functions compile as the
aten ops they stand for (Habana's DeepSpeed fork scripts `F.one_hot` when it imports), and
TorchScript's table holds torch's own functions again after `disable`."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional


def _one_hot_as_float(x: torch.Tensor, n: int) -> torch.Tensor:
    # deepspeed/moe/sharded_moe.py's `_one_hot_to_float`, scripted at import
    return F.one_hot(x, num_classes=n).float()


def _factories(x: torch.Tensor) -> torch.Tensor:
    return torch.zeros(2) + torch.tensor([1.0]) + torch.ones_like(x).to(torch.float32).sum()


def _attention(q: torch.Tensor) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, q, q, is_causal=True)


def test_scripted_functions_compile_and_run_while_emulating(hpu: Any) -> None:
    """Each failed to compile before: TorchScript compiled the wrapper's Python source
    (`*args`, a closure over a dict, a builtin it could not inspect)."""
    from torch.jit._builtins import _find_builtin

    hpu()
    one_hot = torch.jit.script(_one_hot_as_float)
    factories = torch.jit.script(_factories)
    attention = torch.jit.script(_attention)
    assert _find_builtin(F.one_hot) == "aten::one_hot"
    assert _find_builtin(torch.tensor) == "aten::tensor"
    # host tensors: the scripted aten ops give torch's results
    assert torch.equal(one_hot(torch.tensor([0, 2]), 3), torch.tensor([[1.0, 0, 0], [0, 0, 1]]))
    assert torch.equal(factories(torch.ones(3)), torch.full((2,), 4.0))
    # device tensors through a scripted aten op: the device model sees the attention's ops
    q = torch.randn(1, 2, 4, 8)
    out = attention(q.to("hpu"))
    assert out.device.type == "hpu"
    assert torch.allclose(out.cpu(), F.scaled_dot_product_attention(q, q, q, is_causal=True))


def test_the_table_holds_torchs_functions_again_after_disable(hpu: Any) -> None:
    """The wrappers' entries leave with them (their ids may be reused), and a table first
    built while emulating still maps torch's own functions."""
    import hpusim
    from torch.jit._builtins import _get_builtin_table

    hpu()
    wrappers = {id(F.one_hot), id(torch.tensor), id(torch.ones_like)}
    assert wrappers <= _get_builtin_table().keys()
    hpusim.disable()
    table = _get_builtin_table()
    assert not wrappers & table.keys()
    assert (
        table[id(F.one_hot)] == "aten::one_hot" and table[id(torch.ones_like)] == "aten::ones_like"
    )
    assert torch.equal(torch.jit.script(_factories)(torch.ones(1)), torch.full((2,), 2.0))
