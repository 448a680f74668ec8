"""Device semantics of the emulated HPU: factories, transfers, host reads, errors, persistence."""

from __future__ import annotations

import copy
import io
from typing import Any

import pytest

torch = pytest.importorskip("torch")


def test_import_has_no_side_effects() -> None:
    import subprocess
    import sys

    code = (
        "import sys, torch, hpusim; "
        "assert not hasattr(torch, 'hpu'); assert 'torch.hpu' not in sys.modules; "
        "assert not any('shim' in p for p in sys.path); "
        "assert not any(m.startswith('habana_frameworks') for m in sys.modules); print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.randn(3, 4, device="hpu"),
        lambda: torch.zeros(3, 4, device=torch.device("hpu")),
        lambda: torch.ones(3, 4, device="hpu:0"),
        lambda: torch.full((3, 4), 2.5, device="hpu"),
        lambda: torch.empty(3, 4, device="hpu"),
        lambda: torch.arange(12, device="hpu").reshape(3, 4),
        lambda: torch.linspace(0, 1, 12, device="hpu").reshape(3, 4),
        lambda: torch.eye(3, 4, device="hpu"),
        lambda: torch.tensor([[1.0] * 4] * 3, device="hpu"),
        lambda: torch.as_tensor([[1] * 4] * 3, device="hpu"),
    ],
)
def test_factories_make_hpu_tensors_of_the_right_shape(hpu: Any, make: Any) -> None:
    hpu()
    t = make()
    assert t.device == torch.device("hpu", 0)
    assert str(t.device) == "hpu:0"
    assert t.is_hpu and not t.is_cpu
    assert tuple(t.shape) == (3, 4)


def test_resizing_factories_have_real_values(hpu: Any) -> None:
    hpu()
    assert torch.arange(5, device="hpu").tolist() == [0, 1, 2, 3, 4]
    assert torch.linspace(0, 1, 3, device="hpu").tolist() == [0.0, 0.5, 1.0]
    assert sorted(torch.randperm(6, device="hpu").tolist()) == list(range(6))
    assert torch.eye(2, device="hpu").tolist() == [[1.0, 0.0], [0.0, 1.0]]


def test_transfers_and_host_reads(hpu: Any) -> None:
    hpu()
    x = torch.tensor([1.0, 2.0, 3.0])
    h = x.to("hpu")
    assert h.device.type == "hpu" and x.device.type == "cpu"
    assert x.hpu().device.type == "hpu"
    assert x.to(device="hpu", dtype=torch.float64).dtype == torch.float64
    back = (h * 2).cpu()
    assert type(back) is torch.Tensor and back.device.type == "cpu"
    assert back.tolist() == [2.0, 4.0, 6.0]
    assert (h * 2).to("cpu").tolist() == [2.0, 4.0, 6.0]
    assert h.sum().item() == 6.0
    assert f"{h.sum():.1f}" == "6.0"
    assert repr(h) == "tensor([1., 2., 3.], device='hpu:0')"
    h[0] = 5.0  # copy into a view
    assert h.tolist() == [5.0, 2.0, 3.0]
    assert x.tolist() == [1.0, 2.0, 3.0]  # .to('hpu') copied


def test_mixed_devices_raise_like_a_real_device(hpu: Any) -> None:
    hpu()
    h = torch.ones(3, device="hpu")
    with pytest.raises(
        RuntimeError,
        match="Expected all tensors to be on the same device, but found at least two devices, hpu:0 and cpu!",
    ):
        h + torch.ones(3)
    assert (h + torch.tensor(1.0)).tolist() == [2.0, 2.0, 2.0]  # a 0-dim cpu scalar is allowed
    with pytest.raises(TypeError, match="can't convert hpu:0 device type tensor to numpy"):
        h.numpy()


def test_one_hot_of_hpu_labels_stays_on_the_device(hpu: Any) -> None:
    """torch's C++ one_hot allocates with the input's (CPU) options: the emulator redoes it."""
    import hpusim

    hpu()
    labels = torch.tensor([[0, 3], [4, 1]])
    for n in (-1, 7):
        out = torch.nn.functional.one_hot(labels.to("hpu"), n)
        assert out.device.type == "hpu" and out.dtype == torch.long
        assert torch.equal(out.cpu(), torch.nn.functional.one_hot(labels, n))
    empty = torch.nn.functional.one_hot(torch.zeros(0, 16, dtype=torch.long, device="hpu"), 50)
    assert empty.shape == (0, 16, 50) and empty.device.type == "hpu"
    with pytest.raises(RuntimeError, match="LongTensor"):
        torch.nn.functional.one_hot(torch.zeros(2, dtype=torch.int32, device="hpu"), 3)
    hpusim.disable()
    assert torch.nn.functional.one_hot(labels, 5).shape == (2, 2, 5)  # torch's own again


@pytest.mark.parametrize("mode", ["eager", "lazy"])
def test_causal_attention_of_hpu_tensors_matches_the_host(hpu: Any, mode: str) -> None:
    """`scaled_dot_product_attention`'s math path (torch's choice with attention dropout, as in
    training) builds its causal mask with the query's C++ (CPU) options; nn.Transformer's decoder
    takes it for a causal tgt_mask, which failed with the mixed-device error (lightning's
    Transformer demo). On the emulated card the mask is a device tensor; the numbers are the
    host's."""
    import hpusim
    from torch.nn.attention import SDPBackend, sdpa_kernel

    hpu(mode)
    torch.manual_seed(0)
    model = torch.nn.Transformer(16, 2, 1, 1, 32, dropout=0.0, batch_first=True)
    x = torch.randn(2, 5, 16)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(5)
    with sdpa_kernel(SDPBackend.MATH):
        expected = model(x, x, tgt_mask=mask)
        expected.sum().backward()
        grads = [p.grad.clone() for p in model.parameters()]
        model.zero_grad()
        model.to("hpu")
        out = model(x.to("hpu"), x.to("hpu"), tgt_mask=mask.to("hpu"))
        out.sum().backward()
    assert out.device.type == "hpu"
    torch.testing.assert_close(out.cpu(), expected, rtol=1e-5, atol=1e-5)
    for p, g in zip(model.parameters(), grads, strict=True):
        torch.testing.assert_close(p.grad.cpu(), g, rtol=1e-4, atol=1e-5)
    q = torch.randn(1, 2, 4, 8)
    attention = torch.nn.functional.scaled_dot_product_attention
    on_card = attention(*[q.to("hpu")] * 3, dropout_p=0.5, is_causal=True)  # the math path
    assert on_card.device.type == "hpu" and on_card.isfinite().all()
    hpusim.disable()
    assert (
        torch.nn.functional.scaled_dot_product_attention
        is torch._C._nn.scaled_dot_product_attention
    )


@pytest.mark.parametrize("mode", ["eager", "lazy"])
def test_backward_formulas_allocate_on_the_device(hpu: Any, mode: str) -> None:
    """`split`'s backward fills the gradient of an unused piece with zeros made from its input's
    C++ (CPU) options and cats them with the others (FSDP1's padded flat parameter in lightning's
    FSDP demo failed with the mixed-device error); on a Gaudi those zeros are device memory."""
    hpu(mode)
    x = torch.arange(5.0).to("hpu").requires_grad_()
    used, _unused = torch.split(x, [3, 2])
    (used * 2).sum().backward()
    assert x.grad is not None and x.grad.device.type == "hpu"
    assert x.grad.cpu().tolist() == [2.0, 2.0, 2.0, 0.0, 0.0]
    with pytest.raises(RuntimeError, match="same device"):
        x.detach() + torch.ones(5)  # outside a backward node, host tensors still do not mix


def test_autograd_crosses_devices(hpu: Any) -> None:
    hpu()
    x = torch.randn(4, requires_grad=True)
    y = (x.to("hpu") * 3).sum()
    y.backward()
    assert x.grad is not None and x.grad.device.type == "cpu"
    assert x.grad.tolist() == [3.0] * 4


def test_model_state_dict_save_load_deepcopy(hpu: Any) -> None:
    hpu()
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)  # built before .to(): params keep identity
    model.to("hpu")
    assert all(
        p.device.type == "hpu" and isinstance(p, torch.nn.Parameter) for p in model.parameters()
    )
    assert opt.param_groups[0]["params"][0] is model.weight
    sd = model.state_dict()
    assert all(v.device.type == "hpu" for v in sd.values())
    buf = io.BytesIO()
    torch.save(sd, buf)
    buf.seek(0)
    loaded = torch.load(buf)
    assert loaded["weight"].device.type == "hpu"
    assert torch.equal(loaded["weight"].cpu(), model.weight.cpu())
    buf.seek(0)
    assert torch.load(buf, map_location="cpu")["weight"].device.type == "cpu"
    twin = copy.deepcopy(model)
    assert twin.weight.device.type == "hpu"
    assert torch.equal(twin.weight.cpu(), model.weight.cpu())
    twin.load_state_dict(loaded)
    on_cpu = model.to("cpu")
    assert on_cpu.weight.device.type == "cpu" and type(on_cpu.weight) is torch.nn.Parameter


def test_a_callable_map_location_places_loaded_hpu_tensors(hpu: Any) -> None:
    """torch.load hands a callable map_location the host storage and `hpu:0`: the tensor goes
    where the storage it returns is (DeepSpeed's checkpoint loader passes
    `lambda storage, loc: storage` and gets host tensors; it raised "Callable map_location not
    supported" here); None keeps the saved device. The patch is gone after the emulator."""
    hpu()
    saved = {"w": torch.arange(6.0).to("hpu")}
    buf = io.BytesIO()
    torch.save(saved, buf)
    seen: list[str] = []

    def keep_on_host(storage: Any, loc: str) -> Any:
        seen.append(loc)
        return storage

    buf.seek(0)
    on_host = torch.load(buf, map_location=keep_on_host, weights_only=False)["w"]
    assert on_host.device.type == "cpu" and on_host.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    # asked with the tensor's location (the emulator saves a host copy, whose storage torch asks
    # about too, as "cpu": the bridge's real hpu storage is asked once, as "hpu:0")
    assert seen == ["cpu", "hpu:0"]
    buf.seek(0)
    kept = torch.load(buf, map_location=lambda storage, loc: None, weights_only=False)["w"]
    assert kept.device.type == "hpu" and kept.cpu().tolist() == on_host.tolist()


def test_the_restore_location_patch_ends_with_the_emulator(hpu: Any) -> None:
    import hpusim

    hpu()
    original = torch._utils._get_restore_location.__wrapped__
    hpusim.disable()
    assert torch._utils._get_restore_location is original


def test_in_place_and_views_alias_like_cpu(hpu: Any) -> None:
    hpu()
    x = torch.arange(6.0).to("hpu")
    v = x.view(2, 3)
    v[0].mul_(2)
    assert x.tolist() == [0.0, 2.0, 4.0, 3.0, 4.0, 5.0]
    r = x.add_(1)
    assert r is x
    assert x.narrow(0, 2, 2).storage_offset() == 2


def test_torch_hpu_module(hpu: Any) -> None:
    hpu()
    assert torch.hpu.is_available() and torch.hpu.device_count() == 1
    torch.hpu.synchronize()
    stats = torch.hpu.memory_stats()
    assert list(stats)[:3] == ["Limit", "InUse", "MaxInUse"]
    assert stats["Limit"] == 96 * (1 << 30)  # gaudi2 HBM


def test_modeled_memory_bookkeeping(hpu: Any) -> None:
    hpu()
    base = torch.hpu.memory_allocated()
    a = torch.zeros(1000, device="hpu")  # 4000 bytes: a 4096-byte block (128-byte alignment)
    assert torch.hpu.memory_allocated() == base + 4096
    b = a * 2
    assert torch.hpu.memory_allocated() == base + 8192
    a.view(10, 100).add_(1)  # views and in-place ops allocate nothing
    assert torch.hpu.memory_allocated() == base + 8192
    del b
    assert torch.hpu.memory_allocated() == base + 4096
    assert torch.hpu.max_memory_allocated() >= base + 8192


def test_storage_resizes_free_and_reallocate_device_memory(hpu: Any) -> None:
    """FSDP frees an unsharded parameter with `untyped_storage().resize_(0)` (FSDP1:
    `_typed_storage()._resize_(0)`) and re-allocates it by resizing back: the bridge's
    allocator sees a free and an allocation, and so does the emulated one."""
    hpu()
    stats = torch.hpu.memory_stats
    base, allocs, frees = (stats()[k] for k in ("InUse", "NumAllocs", "NumFrees"))
    t = torch.empty(1000, device="hpu")
    view = t.view(10, 100)  # shares the storage: one block (4000 bytes, 128-byte aligned)
    assert torch.hpu.memory_allocated() == base + 4096
    t.untyped_storage().resize_(0)
    assert torch.hpu.memory_allocated() == base
    assert (stats()["NumAllocs"], stats()["NumFrees"]) == (allocs + 1, frees + 1)
    torch.hpu.reset_peak_memory_stats()
    view._typed_storage()._resize_(2000)  # FSDP1's spelling, through a view, in elements
    assert torch.hpu.memory_allocated() == base + 8064 == torch.hpu.max_memory_allocated()
    assert stats()["NumAllocs"] == allocs + 2 and stats()["MaxAllocSize"] >= 8064
    t.untyped_storage().resize_(0)
    del t, view  # already freed: the last wrapper's death frees nothing more
    assert torch.hpu.memory_allocated() == base
    assert stats()["NumFrees"] == frees + 2


def test_disable_restores_torch(hpu: Any) -> None:
    import hpusim
    import torch.distributed as dist

    reducer = dist.Reducer
    hpu()
    assert dist.Reducer is not reducer  # DDP's buckets of hpu parameters are hpu tensors
    hpusim.disable()
    assert dist.Reducer is reducer
    assert not hasattr(torch, "hpu")
    assert not hasattr(torch.Tensor, "hpu")
    assert torch.ones(2).to("cpu").tolist() == [1.0, 1.0]
    # stock torch: a RuntimeError, or ModuleNotFoundError ('torch.hpu') where nothing in the
    # process has touched the hpu device type yet
    with pytest.raises((RuntimeError, ModuleNotFoundError)):
        torch.zeros(2, device="hpu")


def test_inference_mode_and_no_grad(hpu: Any) -> None:
    hpu()
    attn = torch.nn.MultiheadAttention(8, 2, batch_first=True).to("hpu")
    x = torch.randn(2, 3, 8).to("hpu")
    with torch.inference_mode():
        y, _ = attn(x, x, x)
    assert y.device.type == "hpu" and tuple(y.shape) == (2, 3, 8)
    with torch.no_grad():
        z, _ = attn(x, x, x)
    torch.testing.assert_close(y.cpu(), z.cpu())  # MHA's fast path differs in the last bits


def test_in_place_ops_that_resize_an_hpu_tensor(hpu: Any) -> None:
    """resize_, set_ and out= that must resize give the hpu tensor the new metadata, as on the
    device (FSDP's flat parameters and `torch.cat(..., out=empty)` rely on it)."""
    hpu()
    a, b = torch.randn(2, 3), torch.randn(2, 3)
    out = torch.empty(0, device="hpu")
    torch.add(a.to("hpu"), b.to("hpu"), out=out)
    assert out.shape == (2, 3) and out.device.type == "hpu"
    torch.testing.assert_close(out.cpu(), a + b)
    t = torch.zeros(4, device="hpu")
    t.resize_(3, 5)
    assert t.shape == (3, 5) and t.stride() == (5, 1)
    src = torch.arange(6.0).reshape(2, 3).to("hpu")
    t.set_(src)
    assert t.shape == (2, 3)
    torch.testing.assert_close(t.cpu(), torch.arange(6.0).reshape(2, 3))
    p = torch.nn.Parameter(torch.randn(4).to("hpu"))
    p.data = torch.ones(2, 2).to("hpu").to(torch.bfloat16)  # shape and dtype (FSDP casts)
    assert p.shape == (2, 2) and p.dtype == torch.bfloat16 and p.device.type == "hpu"
    assert p.cpu().float().sum().item() == 4.0
