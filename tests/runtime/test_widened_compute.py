"""Device ops on fp8 / bf16 / fp16 tensors that CPU torch has no kernel for
(`hpusim.widened_compute`): the emulator computes them in fp32 and keeps the dtypes of the
results, as a Gaudi does."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")


def _fp8(shape: tuple[int, ...], dtype: Any, seed: int) -> Any:
    torch.manual_seed(seed)
    return (torch.randn(shape) * 4).to(dtype)


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2"])
def test_reductions_and_binaries_on_fp8_keep_the_dtype(hpu: Any, dtype: str) -> None:
    hpu("eager")
    fp8 = getattr(torch, dtype)
    x, y = _fp8((3, 4, 5), fp8, 0), _fp8((3, 4, 5), fp8, 1)
    with pytest.raises(NotImplementedError, match="not implemented for 'Float8_"):
        torch.amax(x, dim=1)  # what CPU torch itself does
    wide_x, wide_y = x.float(), y.float()
    cases = {
        "amax": (torch.amax(x.to("hpu"), dim=1), torch.amax(wide_x, dim=1)),
        "max": (x.to("hpu").max(), wide_x.max()),
        "clamp": (x.to("hpu").clamp(-1, 1), wide_x.clamp(-1, 1)),
        "add": (x.to("hpu") + y.to("hpu"), wide_x + wide_y),
    }
    for name, (got, want) in cases.items():
        assert got.dtype == fp8, name
        assert torch.equal(got.cpu().float(), want.to(fp8).float()), name
    values, indices = torch.min(x.to("hpu"), dim=2)
    assert values.dtype == fp8 and indices.dtype == torch.int64
    assert torch.equal(indices.cpu(), torch.min(wide_x, dim=2).indices)


def test_in_place_and_out_ops_on_fp8_write_their_fp8_tensor(hpu: Any) -> None:
    hpu("eager")
    fp8 = torch.float8_e5m2
    x = _fp8((5, 7), fp8, 2)
    on_device = x.to("hpu")
    same = on_device.index_fill_(1, torch.tensor([0, 3]).to("hpu"), 10.0)
    assert same is on_device and on_device.dtype == fp8
    want = x.float().index_fill_(1, torch.tensor([0, 3]), 10.0).to(fp8)
    assert torch.equal(on_device.cpu().float(), want.float())
    out = torch.empty(5, 7, dtype=fp8, device="hpu")
    torch.maximum(x.to("hpu"), torch.zeros(5, 7, dtype=fp8, device="hpu"), out=out)
    assert torch.equal(out.cpu().float(), x.float().clamp(min=0))


def test_an_fp8_op_stays_one_device_op(hpu: Any) -> None:
    from hpusim.sink import KIND_DEVICE, get_sink

    hpu("eager")
    x = _fp8((4, 4), torch.float8_e4m3fn, 3).to("hpu")
    get_sink().drain()
    torch.amax(x, dim=0)
    batch = get_sink().drain()
    names = [
        batch.strings[batch.name[i]] for i in range(len(batch)) if batch.kind[i] == KIND_DEVICE
    ]
    assert names == ["amax"]


def test_a_cpu_fallback_op_on_fp8_fails_as_on_a_gaudi(hpu: Any) -> None:
    # digamma falls back to the CPU on the bridge, where CPU torch has no fp8 kernel either
    hpu("eager")
    with pytest.raises(NotImplementedError, match="not implemented for 'Float8_e4m3fn'"):
        torch.digamma(_fp8((3,), torch.float8_e4m3fn, 4).to("hpu"))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_add_relu_in_half_precision_runs_as_on_the_device(hpu: Any, dtype: str) -> None:
    # CPU torch's _add_relu asserts on bf16 / fp16; the bridge has an add_relu_fwd kernel
    hpu("eager")
    half = getattr(torch, dtype)
    x, y = (torch.randn(4, 6).to(half) for _ in range(2))
    with pytest.raises(RuntimeError, match="Unsupported datatype for add_relu"):
        torch._add_relu(x, y, alpha=0.5)
    got = torch._add_relu(x.to("hpu"), y.to("hpu"), alpha=0.5)
    assert got.dtype == half
    assert torch.equal(got.cpu(), torch.relu(x + y * 0.5))  # the product rounded first
    in_place = x.to("hpu")
    torch._add_relu_(in_place, y.to("hpu"), alpha=0.5)
    assert torch.equal(in_place.cpu(), got.cpu())


def test_take_with_int32_indices_as_on_the_device(hpu: Any) -> None:
    # CPU torch's take wants int64 indices; the bridge's take runs int32 ones in eager and lazy
    hpu("eager")
    x = torch.arange(12.0).reshape(3, 4)
    index = torch.tensor([0, 5, 11], dtype=torch.int32)
    with pytest.raises(RuntimeError, match="Expected a long tensor for index"):
        torch.take(x, index)
    got = torch.take(x.to("hpu"), index.to("hpu"))
    assert torch.equal(got.cpu(), torch.tensor([0.0, 5.0, 11.0]))


@pytest.mark.parametrize("op", ["trunc", "floor", "ceil"])
def test_rounding_a_bool_tensor_is_the_identity_kernel_on_the_device(hpu: Any, op: str) -> None:
    # the bridge's RoundingSharedMeta runs `identity` for every integral dtype, bool included;
    # CPU torch has no bool kernel for them
    hpu("lazy")
    x = torch.tensor([True, False, True])
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        getattr(torch, op)(x)
    got = getattr(torch, op)(x.to("hpu"))
    assert got.dtype == torch.bool and torch.equal(got.cpu(), x)
    out = torch.zeros(3, dtype=torch.bool, device="hpu")
    getattr(torch, op)(x.to("hpu"), out=out)
    assert torch.equal(out.cpu(), x)
    in_place = x.to("hpu")
    assert getattr(in_place, f"{op}_")() is in_place
    assert torch.equal(in_place.cpu(), x)
    from hpusim.metrics import metric_global

    assert not dict(metric_global("cpu_fallback").stats())["FallbackOps"]  # device ops


def test_uniform_of_an_int32_tensor_draws_integers_in_its_range(hpu: Any) -> None:
    # the device's philox_random_uniform takes integer bounds for int32; CPU torch refuses
    hpu("lazy")
    with pytest.raises(NotImplementedError, match="check_uniform_bounds"):
        torch.empty(4, dtype=torch.int32).uniform_(20, 120)
    x = torch.empty(500, dtype=torch.int32, device="hpu")
    assert x.uniform_(20, 120) is x
    first = x.cpu()
    second = x.uniform_(-50, 10).cpu()
    assert first.dtype == torch.int32
    assert int(first.min()) >= 20 and int(first.max()) <= 120 and len(first.unique()) > 20
    assert int(second.min()) >= -50 and int(second.max()) <= 10


def test_lerp_of_int32_tensors_runs_in_int32(hpu: Any) -> None:
    # the bridge's lerp is sub, mult and add in the input's dtype (int32 listed for it); a
    # scalar weight becomes an int32 constant. CPU torch has no integer lerp kernel
    hpu("lazy")
    start = torch.tensor([0, 3, 10, 7], dtype=torch.int32)
    end = torch.tensor([4, 1, 10, 9], dtype=torch.int32)
    weight = torch.tensor([2, 3, 0, 5], dtype=torch.int32)
    with pytest.raises(NotImplementedError, match="lerp_kernel_tensor"):
        torch.lerp(start, end, weight)
    got = torch.lerp(start.to("hpu"), end.to("hpu"), weight.to("hpu"))
    assert got.dtype == torch.int32
    assert got.cpu().tolist() == [8, -3, 10, 17]
    assert torch.lerp(start.to("hpu"), end.to("hpu"), 5).cpu().tolist() == [20, -7, 10, 17]
    in_place = start.to("hpu")
    in_place.lerp_(end.to("hpu"), 2)
    assert in_place.cpu().tolist() == [8, -1, 10, 11]
