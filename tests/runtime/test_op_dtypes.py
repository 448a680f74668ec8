"""Per-op dtype support: the 1.19 bridge's checks win over the 1.16 docs table.

The ops exercised here are taken from the data: each (op, dtype) pair is one that
`make_op_support.compare` lists as decided differently by 1.19 and 1.16, and the expected
behaviour is read from the 1.19 check in `op_support.json`.
"""

from __future__ import annotations

import json
import os
import runpy
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.runtime.conftest import runtime_events

torch = pytest.importorskip("torch")

DATA = Path(__file__).resolve().parents[2] / "runtime" / "hpusim" / "data"


@cache
def _data() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / "op_support.json").read_text())
    return data


@cache
def _changed() -> dict[tuple[str, str], str]:
    compare = runpy.run_path(str(DATA / "make_op_support.py"))["compare"]
    return {(op, dtype): side for op, dtype, side in compare(_data())}


def _bridge_allows(op: str, dtype: torch.dtype, generation: str = "gaudi2") -> bool:
    sets = _data()["dtypes_1_19"][op]["dtypes"]
    first = sets.get(generation, sets.get("all"))[0]
    return str(dtype).replace("torch.", "") in first


def _fallbacks() -> dict[str, int]:
    from hpusim.metrics import metric_global

    ops: dict[str, int] = dict(metric_global("cpu_fallback").stats())["FallbackOps"]
    return ops


def test_an_op_1_19_supports_on_an_integer_dtype_stays_on_the_device(hpu: Any) -> None:
    assert _changed()[("mul.Tensor", "int32")] == "1.19 only"
    assert _bridge_allows("mul.Tensor", torch.int32)
    hpu()
    a = torch.arange(6, device="hpu", dtype=torch.int32)
    assert torch.equal((a * a).cpu(), torch.arange(6, dtype=torch.int32) ** 2)
    assert "aten::mul.Tensor" not in _fallbacks()


def test_an_op_1_19_refuses_on_fp16_with_an_index_input_falls_back_to_cpu(hpu: Any) -> None:
    # the lazy scatter_add_ wrapper's op_info lists no Half; the index is not floating, so the
    # bridge's dispatch_fallback cannot recompute in fp32: the CPU runs it
    assert _changed()[("scatter_add_", "float16")] == "1.16 only"
    assert not _bridge_allows("scatter_add_", torch.float16)
    hpu("lazy")
    h = torch.zeros(8, device="hpu", dtype=torch.float16)
    h.scatter_add_(
        0, torch.tensor([0, 1, 1], device="hpu"), torch.ones(3, dtype=torch.float16).to("hpu")
    )
    assert h.cpu().tolist()[:3] == [1.0, 2.0, 0.0]
    assert _fallbacks() == {"aten::scatter_add_": 1}


def test_a_lazy_only_check_applies_in_lazy_mode_and_the_1_16_table_in_eager(hpu: Any) -> None:
    assert _changed()[("sort", "int32")] == "1.19 only"
    assert _data()["dtypes_1_19"]["sort"]["lazy_only"]
    assert "INT32" not in _data()["dtypes"]["sort"]
    for mode, expected in (("lazy", {}), ("eager", {"aten::sort": 1})):
        hpu(mode)
        values, _ = torch.sort(torch.tensor([3, 1, 2], device="hpu", dtype=torch.int32))
        assert values.cpu().tolist() == [1, 2, 3]
        assert _fallbacks() == expected, mode


def test_floating_inputs_1_19_refuses_are_recomputed_in_fp32_on_the_device(hpu: Any) -> None:
    # mish_backward is [BFloat16, Float] on every generation in hpu_op.yaml; the 1.16 table
    # has no row for it (every dtype read as supported)
    assert _changed()[("mish_backward", "float16")] == "1.16 only"
    assert _bridge_allows("mish_backward", torch.float32)
    hpu()
    from hpusim.sink import get_sink

    x = torch.linspace(-2, 2, 6, dtype=torch.float16).to("hpu").requires_grad_()
    torch.nn.functional.mish(x).sum().backward()
    ref = torch.linspace(-2, 2, 6, dtype=torch.float16).requires_grad_()
    torch.nn.functional.mish(ref).sum().backward()
    assert torch.equal(x.grad.cpu(), ref.grad)
    assert not _fallbacks()
    rules = [
        (c["hpuprof.dtype_from"], c["hpuprof.dtype_to"])
        for c in runtime_events(get_sink().drain(), "cast")
        if c["hpuprof.rule"] == "unsupported_dtype" and c["hpuprof.op"] == "aten::mish_backward"
    ]
    assert rules == [("float16", "float32")]


def test_a_dtype_check_with_no_tensor_to_check_lets_every_dtype_through(hpu: Any) -> None:
    # gen_op.py checks `dtypes:` on plain Tensor inputs only: _foreach_floor_ (a TensorList op,
    # [BFloat16, Float]) is never refused
    assert ("_foreach_floor_", "float16") not in _changed()
    assert not _bridge_allows("_foreach_floor_", torch.float16)
    hpu()
    from hpusim.sink import get_sink

    ts = [torch.full((3,), 1.5, dtype=torch.float16).to("hpu") for _ in range(2)]
    torch._foreach_floor_(ts)
    assert ts[1].cpu().tolist() == [1.0, 1.0, 1.0]
    assert not _fallbacks()
    assert not [
        c
        for c in runtime_events(get_sink().drain(), "cast")
        if c["hpuprof.rule"] == "unsupported_dtype"
    ]


@pytest.mark.parametrize("device", ["gaudi2", "gaudi3"])
def test_the_check_of_the_emulated_generation_applies(hpu: Any, device: str) -> None:
    # the one 1.19 check whose gaudi2 and gaudi3 sets differ: sum's Long (gaudi2 only)
    sets = _data()["dtypes_1_19"]["sum"]["dtypes"]
    assert set(sets["gaudi2"][0]) - set(sets["gaudi3"][0]) == {"int64"}
    hpu(device=device, PT_ENABLE_INT64_SUPPORT="1")  # else int64 passes as int32
    total = torch.arange(5, device="hpu").sum()
    assert total.item() == 10
    on_device = _bridge_allows("sum", torch.int64, device)
    assert _fallbacks() == ({} if on_device else {"aten::sum": 1})


def test_the_1_19_table_is_rederived_from_the_bridge_source() -> None:
    """With HPUSIM_BRIDGE=<gaudi-pytorch-bridge checkout or git dir> (1.19), the committed
    checks are exactly what the script extracts from it."""
    path = os.environ.get("HPUSIM_BRIDGE")
    if not path:
        pytest.skip("HPUSIM_BRIDGE (a gaudi-pytorch-bridge 1.19 checkout) is not set")
    bridge = Path(path)
    pytest.importorskip("yaml")
    script = runpy.run_path(str(DATA / "make_op_support.py"))
    assert script["extract_dtypes"](bridge) == _data()["dtypes_1_19"]
    assert script["extract_guids"](bridge) == json.loads(
        (DATA / "bridge_op_guids.json").read_text()
    )


def test_ops_running_one_kernel_share_its_dtypes(hpu: Any) -> None:
    """The 1.16 table gives `sub` no int32 or int64 while `add`, which runs the same TPC kernel
    (`binary_with_alpha_fwd` in the 1.19 `hpu_op.yaml`), has both: the kernel's dtypes are the
    union, so integer `sub` (optimum-habana's `token_idx - 1` in generation) stays on the
    device, as the bridge's integral-alpha params say it does."""
    guids = json.loads((DATA / "bridge_op_guids.json").read_text())
    data = _data()
    assert guids["sub"] == guids["add"]
    assert data["widened_by_kernel"]["sub"] == ["INT64", "INT32"]
    groups: dict[str, set[tuple[str, ...]]] = {}
    # dtypes the validator adds (casts, promotions), not the kernel's
    from_validator = {op: {"BOOL"} for op in data["bool_cast_on_device"]}
    for op in data["small_int_as_int32_on_device"]:
        from_validator.setdefault(op, set()).update({"INT8", "BOOL"})
    for op in data["int_to_float_on_device"]:
        from_validator.setdefault(op, set()).update({"INT64", "INT32", "INT16", "INT8", "BOOL"})
    for op, supported in data["dtypes"].items():
        if op in guids:
            kernel_dtypes = tuple(c for c in supported if c not in from_validator.get(op, ()))
            groups.setdefault(guids[op], set()).add(kernel_dtypes)
    assert all(len(kinds) == 1 for kinds in groups.values())  # one dtype list per kernel
    hpu()
    for dtype in (torch.int32, torch.int64):
        a = torch.arange(6, dtype=dtype)
        assert torch.equal((a.to("hpu") - 1).cpu(), a - 1)
    assert "aten::sub.Tensor" not in _fallbacks()


def test_bool_reductions_the_validator_casts_stay_on_the_device(hpu: Any) -> None:
    """The 1.16 table gives amax/amin no bool; the 1.19 validator (`AminAmaxSharedMeta`) casts a
    bool input on the device first, so bool `amax` / `amin` / `aminmax` are device ops (they fell
    back to the CPU, where torch has no bool kernel for them, and raised)."""
    assert {"amax", "amin", "aminmax"} <= set(_data()["bool_cast_on_device"])
    hpu()
    mask = torch.tensor([[True, False], [False, False]])
    on_card = mask.to("hpu")
    assert on_card.amax(dim=1).cpu().tolist() == [True, False]
    assert on_card.amin().cpu().item() is False
    low, high = torch.aminmax(on_card)
    assert (low.cpu().item(), high.cpu().item()) == (False, True)
    assert not {"aminmax", "aminmax.default", "amin", "amax"} & {
        op.removeprefix("aten::") for op in _fallbacks()
    }


def test_integer_xlogy_stays_on_the_device_as_its_validator_promotes_it(hpu: Any) -> None:
    """The 1.16 table gives xlogy no integer dtype; the 1.19 validator (`XlogYSharedMeta`)
    checks its kernels at `get_compute_dtype(..., kPromoteIntToFloat)`, so integer xlogy is a
    device op in float (under PT_HPU_PLACE_ON_CPU=none, as the bridge's own tests run it, the
    emulator refused it as a CPU fallback)."""
    assert {"xlogy", "xlogy_"} <= set(_data()["int_to_float_on_device"])
    hpu(PT_HPU_PLACE_ON_CPU="none")
    a = torch.tensor([[0, 2], [3, 1]], dtype=torch.int32)
    b = torch.tensor([[5, 1], [2, 7]], dtype=torch.int64)
    got = torch.xlogy(a.to("hpu"), b.to("hpu"))
    assert got.dtype == torch.float32
    torch.testing.assert_close(got.cpu(), torch.xlogy(a, b))
    assert "aten::xlogy.Tensor" not in _fallbacks()


def test_int8_cumsum_stays_on_the_device_as_its_validator_reads_it_as_int32(hpu: Any) -> None:
    """The 1.16 table gives cumsum no int8; the 1.19 validator (`FillCumSumProdSharedMeta`)
    checks Bool / Char / Byte inputs as Int, so int8 cumsum is a device op."""
    assert {"cumsum", "isnan"} <= set(_data()["small_int_as_int32_on_device"])
    hpu(PT_HPU_PLACE_ON_CPU="none")
    a = torch.tensor([[1, -2, 3], [4, 5, -6]], dtype=torch.int8)
    got = torch.cumsum(a.to("hpu"), dim=1)
    assert torch.equal(got.cpu(), torch.cumsum(a, dim=1))
    assert "aten::cumsum" not in _fallbacks()


def test_dtypes_the_bridges_own_tests_run_on_the_device_stay_there(hpu: Any) -> None:
    """The 1.16 table gives `ge` no int8 and the shifts no int16; the 1.19 bridge's
    tests/pytest_working (CPU fallback forbidden) runs them on the device."""
    assert _data()["tested_on_device"] == {
        "bitwise_left_shift": ["INT16"],
        "bitwise_right_shift": ["INT16"],
        "ge": ["INT8"],
    }
    hpu("lazy", PT_HPU_PLACE_ON_CPU="none")
    a = torch.tensor([[-3, 0, 5], [7, -1, 2]], dtype=torch.int8)
    out = torch.empty(2, 3, dtype=torch.int8, device="hpu")
    torch.ge(a.to("hpu"), 0, out=out)
    assert torch.equal(out.cpu(), torch.ge(a, 0).to(torch.int8))
    assert torch.equal(a.to("hpu").ge_(2).cpu(), a.clone().ge_(2))
    s = torch.tensor([1, 2, 3], dtype=torch.int16)
    assert torch.equal(torch.bitwise_left_shift(s.to("hpu"), s.to("hpu")).cpu(), s << s)
    assert torch.equal(torch.bitwise_right_shift(s.to("hpu"), 1).cpu(), s >> 1)
    assert not _fallbacks()
