"""The device kernels of the `quantized_decomposed` ops the bridge registers for HPU.

The 1.19 bridge runs `quantized_decomposed::quantize_per_tensor` (and its `.tensor` /
`.tensor2` overloads), `quantize_per_channel` and `dequantize_per_channel` as TPC kernels
(`scripts/hpu_op.yaml`'s `custom_op_schema` entries, `hpu_ops/backend/quant_dequant_gen.cpp`),
not as torch's composites (`torch/ao/quantization/fx/_decomposed.py`), which differ from them:

- a float8 result is the scaled value cast to float8 (rounded to the nearest float8 by the
  cast); torch's composite first rounds it to an integer, so 36.4 became 36, not 40 in e4m3;
- the kernels compute in the input's dtype: a bf16 input is scaled in bf16, where torch's
  composite widens it to fp32 first (an integer result then differs by one);
- `dequantize_per_channel` of a float8 tensor: torch's composite subtracts int64 zero points
  from the float8 values, which CPU torch refuses ("Promotion for Float8 Types is not
  supported").

The bridge's own tests state the formulas (`test_hpu_quant_dequant.py`): quantize is
`clamp(round(x / scale) + zero_point, min, max)` for integer results (per channel
`x * (1 / scale)`), without the round for float8; dequantize is `(q - zero_point) * scale` in
the result's dtype. `dequantize_per_tensor` is torch's composite on the bridge's terms already.
"""

from __future__ import annotations

from typing import Any, Final

import torch

Tensor = torch.Tensor


def _in_dtype(value: Any, dtype: torch.dtype) -> Any:
    return value.to(dtype) if isinstance(value, Tensor) else value


def _bound(value: Any) -> Any:
    return value.item() if isinstance(value, Tensor) else value


def _finish(scaled: Tensor, zero_point: Any, quant_min: Any, quant_max: Any, dtype: Any) -> Tensor:
    """round (integer results only), shift, clamp and cast: the kernels' tail."""
    if not dtype.is_floating_point:
        scaled = torch.round(scaled)
    shifted = scaled + _in_dtype(zero_point, scaled.dtype)
    return torch.clamp(shifted, _bound(quant_min), _bound(quant_max)).to(dtype)


def quantize_per_tensor(
    input: Tensor, scale: Any, zero_point: Any, quant_min: Any, quant_max: Any, dtype: Any
) -> Tensor:
    """All three overloads (float scale / int zero point, 0-dim tensors, tensor bounds)."""
    scaled = input / _in_dtype(scale, input.dtype)
    return _finish(scaled, zero_point, quant_min, quant_max, dtype)


def _along(values: Tensor, axis: int, like: Tensor) -> Tensor:
    """`values` (one per slice of `like` along `axis`) shaped to broadcast against `like`."""
    shape = [1] * like.dim()
    shape[axis] = -1
    return values.reshape(shape)


def quantize_per_channel(
    input: Tensor,
    scales: Tensor,
    zero_points: Tensor,
    axis: int,
    quant_min: int,
    quant_max: int,
    dtype: Any,
) -> Tensor:
    inverse = 1.0 / _along(scales, axis, input).to(input.dtype)
    zero = _along(zero_points, axis, input)
    return _finish(input * inverse, zero, quant_min, quant_max, dtype)


def dequantize_per_channel(
    input: Tensor,
    scales: Tensor,
    zero_points: Tensor | None,
    axis: int,
    quant_min: int,
    quant_max: int,
    dtype: Any,
    *,
    out_dtype: Any = None,
) -> Tensor:
    out = out_dtype if out_dtype is not None else torch.float32
    values = input.to(out)
    if zero_points is not None:
        values = values - _along(zero_points, axis, input).to(out)
    return values * _along(scales, axis, input).to(out)


KERNELS: Final[dict[str, Any]] = {
    "quantized_decomposed::quantize_per_tensor": quantize_per_tensor,
    "quantized_decomposed::quantize_per_tensor.tensor": quantize_per_tensor,
    "quantized_decomposed::quantize_per_tensor.tensor2": quantize_per_tensor,
    "quantized_decomposed::quantize_per_channel": quantize_per_channel,
    "quantized_decomposed::dequantize_per_channel": dequantize_per_channel,
}
"""By the op's overload name (`fallback.overload_name`): what an hpu tensor's op runs."""
