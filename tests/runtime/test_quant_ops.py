"""`quantized_decomposed` ops on hpu tensors run the bridge's HPU kernels
(`hpusim.quant_ops`), not torch's composites: float8 results without an integer round, bf16
inputs scaled in bf16, float8 dequantization per channel."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")


def _ops() -> Any:
    import torch.ao.quantization.fx._decomposed

    return torch.ops.quantized_decomposed


def test_quantize_per_tensor_to_float8_casts_the_scaled_value(hpu: Any) -> None:
    hpu("lazy")
    x = torch.tensor([37.6, 182.0, 3.0, 500.0])
    want = torch.clamp(x / 2.0 + 1, 0, 125).to(torch.float8_e4m3fn)
    got = _ops().quantize_per_tensor(x.to("hpu"), 2.0, 1, 0, 125, torch.float8_e4m3fn)
    assert got.dtype == torch.float8_e4m3fn
    assert torch.equal(got.cpu().float(), want.float())
    # 37.6: the kernel casts it to e4m3's nearest, 36; torch's composite (on the host) rounds
    # it to 38 first, a tie between 36 and 40 that goes to 40
    one = _ops().quantize_per_tensor(x[:1].to("hpu"), 1.0, 0, 0, 125, torch.float8_e4m3fn)
    assert one.cpu().float().item() == 36.0
    assert _ops().quantize_per_tensor(x[:1], 1.0, 0, 0, 125, torch.float8_e4m3fn).float() == 40.0


def test_quantize_per_tensor_tensor_overloads_round_integer_results(hpu: Any) -> None:
    hpu("lazy")
    x = torch.rand(6, 8) * 1000
    scale, zero = torch.tensor(5.0), torch.tensor(10)
    want = torch.clamp(torch.round(x / scale) + zero, 20, 125).to(torch.int8)
    on = (x.to("hpu"), scale.to("hpu"), zero.to("hpu"))
    got = _ops().quantize_per_tensor.tensor(*on, 20, 125, torch.int8)
    assert torch.equal(got.cpu(), want)
    bounds = (torch.tensor(20).to("hpu"), torch.tensor(125).to("hpu"))
    got2 = _ops().quantize_per_tensor.tensor2(*on, *bounds, torch.int8)
    assert torch.equal(got2.cpu(), want)


def test_quantize_per_channel_of_bf16_computes_in_bf16(hpu: Any) -> None:
    hpu("lazy")
    torch.manual_seed(0)
    x = (torch.rand(4, 6, 5) * 500).to(torch.bfloat16)
    scales = torch.rand(6) * 20 + 5
    zeros = torch.randint(0, 10, (6,))
    s, z = scales.to(torch.bfloat16).view(1, 6, 1), zeros.to(torch.bfloat16).view(1, 6, 1)
    want = torch.clamp(torch.round(x * (1.0 / s)) + z, 10, 125).to(torch.int8)
    on = (x.to("hpu"), scales.to("hpu"), zeros.to("hpu"))
    got = _ops().quantize_per_channel(*on, 1, 10, 125, torch.int8)
    assert torch.equal(got.cpu(), want)
    widened = _ops().quantize_per_channel(x, scales, zeros, 1, 10, 125, torch.int8)
    assert not torch.equal(widened, want)  # torch's composite, in fp32, differs


@pytest.mark.parametrize("out_dtype", ["float32", "bfloat16"])
def test_dequantize_per_channel_of_float8(hpu: Any, out_dtype: str) -> None:
    hpu("lazy")
    out = getattr(torch, out_dtype)
    q = (torch.rand(3, 4) * 100).to(torch.float8_e5m2)
    scales, zeros = torch.rand(3), torch.randint(-10, 10, (3,))
    with pytest.raises(RuntimeError, match="Promotion for Float8 Types"):
        _ops().dequantize_per_channel(q, scales, zeros, 0, 0, 0, q.dtype, out_dtype=out)
    on = (q.to("hpu"), scales.to("hpu"), zeros.to("hpu"))
    got = _ops().dequantize_per_channel(*on, 0, 0, 0, q.dtype, out_dtype=out)
    want = (q.to(out) - zeros.view(3, 1).to(out)) * scales.view(3, 1).to(out)
    assert got.dtype == out
    assert torch.equal(got.cpu(), want)
