"""Every way a device tensor reaches the host gives what the bridge gives (issue 24): a host
tensor where torch copies, the bridge's errors where it refuses (numpy, DLPack)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.runtime.conftest import runtime_events

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")


@pytest.fixture
def dev(hpu: Any) -> Any:
    hpu(mode="lazy")
    return torch.arange(6, dtype=torch.float32).reshape(2, 3).to("hpu")


def test_torch_tensor_of_a_device_tensor_copies_to_the_asked_device(dev: Any) -> None:
    """tensor_new.cpp `internal_new_from_data`: a tensor argument is `to(device, dtype,
    copy=True)`, default device its own; torch warns to use detach().clone()."""
    with pytest.warns(UserWarning, match="To copy construct from a tensor"):
        host = torch.tensor(dev, device="cpu")
    assert type(host) is torch.Tensor and host.device.type == "cpu"
    assert torch.equal(host, torch.arange(6.0).reshape(2, 3))
    host + torch.ones(3)  # Model-References' utils.accuracy: the next CPU op works
    with pytest.warns(UserWarning):
        f64 = torch.tensor(dev, dtype=torch.float64, device="cpu")
    assert f64.dtype == torch.float64 and f64.device.type == "cpu"
    with pytest.warns(UserWarning):
        same = torch.tensor(dev)
    assert same.device.type == "hpu" and same is not dev
    same.add_(1)
    assert dev.cpu()[0, 0].item() == 0.0  # a copy, not an alias


def test_sequences_of_device_scalars_build_host_tensors(dev: Any) -> None:
    """`torch.tensor([t0, t1])` reads each one-element tensor (`item()`: a local-scalar read
    on the bridge) and keeps its dtype for inference; the result is on the default device."""
    from hpusim.sink import get_sink

    get_sink().drain()
    pending = dev * 2  # a lazy op: the first read flushes it
    out = torch.tensor([pending[0, 1], pending[1, 2]])
    assert out.device.type == "cpu" and out.tolist() == [2.0, 10.0]
    assert out.dtype == torch.float32
    builds = runtime_events(get_sink().drain(), "graph_build")
    assert [b["hpuprof.flush_reason"] for b in builds] == ["local scalar"]
    assert torch.as_tensor([[dev[0, 0]], [dev[1, 1]]]).tolist() == [[0.0], [4.0]]
    ints = torch.tensor([dev[0, 2].to(torch.int32)])
    assert ints.dtype == torch.int32
    on_hpu = torch.tensor([dev[0, 1], dev[0, 2]], device="hpu")
    assert on_hpu.device.type == "hpu" and on_hpu.cpu().tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match="only one element tensors"):
        torch.tensor([dev[0], dev[1]])  # as torch refuses multi-element tensors in a list


def test_as_tensor_and_asarray_copy_to_the_host(dev: Any) -> None:
    host = torch.as_tensor(dev, device="cpu")
    assert type(host) is torch.Tensor and host.tolist() == dev.tolist()
    assert torch.as_tensor(dev) is dev  # no device given: the tensor itself
    arr = torch.asarray(dev, device="cpu")
    assert type(arr) is torch.Tensor and arr.device.type == "cpu"
    assert torch.asarray(dev) is dev
    copied = torch.asarray(dev, copy=True)
    assert copied is not dev and copied.device.type == "hpu"
    with pytest.raises(ValueError, match="can't alias"):
        torch.asarray(dev, device="cpu", copy=False)


def test_host_factories_from_a_device_tensor(dev: Any) -> None:
    """The `device` argument picks the backend: `zeros_like(t, device="cpu")` is a host tensor."""
    for out in (
        torch.zeros_like(dev, device="cpu"),
        torch.ones_like(dev, device="cpu"),
        torch.empty_like(dev, device="cpu"),
        dev.new_zeros(4, device="cpu"),
    ):
        assert type(out) is torch.Tensor and out.device.type == "cpu"
    assert torch.zeros_like(dev).device.type == "hpu"
    assert torch.zeros_like(dev, device="hpu").device.type == "hpu"


def test_numpy_tolist_copy_and_mixed_devices_match_torch_on_a_device(dev: Any) -> None:
    with pytest.raises(TypeError, match="can't convert hpu:0 device type tensor to numpy"):
        dev.numpy()
    with pytest.raises(TypeError, match="can't convert hpu:0"):
        np.asarray(dev)
    assert np.array_equal(dev.cpu().numpy(), np.arange(6.0).reshape(2, 3))
    assert dev.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    host = torch.zeros(2, 3)
    host.copy_(dev)
    assert host.tolist() == dev.tolist() and type(host) is torch.Tensor
    for fn in (torch.stack, torch.cat):
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            fn([torch.zeros(2, 3), dev])
    storage = dev.untyped_storage().cpu()
    assert type(storage) is torch.UntypedStorage and storage.nbytes() == 24


def test_dlpack_refuses_device_tensors_as_torch_does_for_hpu(dev: Any) -> None:
    """DLConvertor.cpp `torchDeviceToDLDevice` has no HPU case: `Cannot pack tensors on
    hpu:0`; `__dlpack_device__` (torch/_tensor.py) has none either."""
    with pytest.raises(BufferError, match="Cannot pack tensors on hpu:0"):
        torch.utils.dlpack.to_dlpack(dev)
    with pytest.raises(BufferError, match="Cannot pack tensors on hpu:0"):
        np.from_dlpack(dev)
    with pytest.raises(ValueError, match="Unknown device type hpu for Dlpack"):
        torch.from_dlpack(dev)
    assert np.array_equal(np.from_dlpack(dev.cpu()), np.arange(6.0).reshape(2, 3))


def test_pin_memory_gives_a_pinned_copy_for_the_hpu(dev: Any) -> None:
    """The bridge's test_hpu_streams `testCopyNonBlocking`: `pin_memory(device="hpu")` returns a
    new host tensor in pinned memory, `is_pinned(device="hpu")` says so; the original stays
    pageable; a non-blocking copy from it reaches the device."""
    host = torch.zeros(16, dtype=torch.uint8)
    pinned = host.pin_memory(device="hpu")
    assert pinned is not host and torch.equal(pinned, host)
    assert pinned.is_pinned(device="hpu") is True and pinned.is_pinned() is True
    assert host.is_pinned(device="hpu") is False
    view = pinned[1:]
    assert view.untyped_storage().data_ptr() == pinned.untyped_storage().data_ptr()
    on_device = torch.ones(15, dtype=torch.uint8, device="hpu")
    on_device.copy_(view, non_blocking=True)
    assert torch.equal(on_device.cpu(), torch.zeros(15, dtype=torch.uint8))
    assert dev.pin_memory() is dev  # device memory: nothing to pin


def test_tensor_packer_round_trip(dev: Any) -> None:
    """The bridge's lazy/test_hpu_graph.py `test_tensor_packer`: nested outputs flatten to a
    tuple of tensors and metadata printed with `#<index>` leaves, and unpack to the same."""
    import habana_frameworks.torch as ht

    x, y, z = dev, dev * 2, dev + 1
    output = {"x": x, "y": y}, z
    packer = ht.hpu.TensorPacker()
    tensors, metadata = packer.pack(output)
    assert str(metadata) == "({'x': #0, 'y': #1}, #2)"
    assert tensors[0] is x and tensors[1] is y and tensors[2] is z
    unpacked = packer.unpack(tensors, metadata)
    assert unpacked[0]["y"] is y and unpacked[1] is z
    nested, meta = packer.pack([1, [x], "s"])
    assert str(meta) == "[1, [#0], 's']" and packer.unpack(nested, meta)[1][0] is x


def test_copies_keep_the_bytes_of_a_bool_view(hpu: Any) -> None:
    """A bool view of float data (the bridge's test_multilevel_view_dtype): a DMA copies bytes,
    CPU torch's bool copy writes 0 / 1, so the floats came back as 2.37e-38."""
    hpu(mode="lazy")
    floats = torch.tensor([0.5, -1.25, 3.0, 1e-3])
    as_bool = floats.view(torch.bool)
    assert not torch.equal(as_bool.clone().view(torch.float32), floats)  # CPU torch's copy
    on_device = as_bool.to("hpu")
    assert torch.equal(on_device.view(torch.float32).cpu(), floats)
    assert torch.equal(on_device.cpu().view(torch.float32), floats)
    assert torch.equal(on_device.cpu(), as_bool)  # the values as bools are unchanged
