"""The bridge's first-generation FP8 ops with `out` tensors, the scalar overloads of the
emulated FP8 casts and GEMM (`hpusim.transformer_engine` holds their numerics), and the FP8
convolution, sum and softmax and the hybrid (E5M2 + E4M3) cast.

`hpu::cast_to_fp8(input, scale, stochastic_rounding, out, amax)` writes the cast into `out`
(its dtype is the FP8 format) and, when `amax` has elements, `input`'s amax into it;
`hpu::fp8_gemm(..., out)` writes `fp8_gemm_v2`'s product into `out`. Schemas as the 1.19
bridge registers them (`habana_eager/eager_custom_op_register.cpp`); each call is ONE device
op (the GEMM at the MME's FP8 rate in the device model).
"""

from __future__ import annotations

from typing import Any, Final

import torch

from hpusim import transformer_engine as te

Tensor = torch.Tensor


def cast_to_fp8(
    input: Tensor, scale: Tensor | None, stochastic_rounding: bool, out: Tensor, amax: Tensor
) -> tuple[Tensor, Tensor]:
    if input.dtype not in (torch.float32, torch.bfloat16):
        raise RuntimeError("CastToFp8 input must be of float or bfloat16 dtype.")
    if input.shape != out.shape:
        raise RuntimeError("Input and output must have the same shape")
    casted, measured = te.cast_to_fp8_v2(
        input, scale, stochastic_rounding, bool(amax.numel()), out.dtype
    )
    out.copy_(casted)
    if amax.numel():
        amax.copy_(measured.reshape(amax.shape))
    return out, amax


def fp8_gemm(
    A: Tensor,
    trans_A: bool,
    B: Tensor,
    trans_B: bool,
    D: Tensor,
    out_dtype: torch.dtype,
    A_scale_inv: Tensor | None,
    B_scale_inv: Tensor | None,
    bias: Tensor | None,
    accumulate: bool,
    out: Tensor,
) -> Tensor:
    product = te.fp8_gemm_v2(
        A, trans_A, B, trans_B, D, out_dtype, A_scale_inv, B_scale_inv, bias, accumulate
    )
    return out.copy_(product)


def conv2d_fp8(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: list[int] | int = 1,
    padding: list[int] | int = 0,
    dilation: list[int] | int = 1,
    groups: int = 1,
    out_dtype: torch.dtype | None = None,
    scale_input: te.Scale = None,
    scale_weight: te.Scale = None,
) -> Tensor:
    """The bridge's `hpu::conv2d_fp8` (and `.scalar`): conv2d of the FP8 input and weight,
    dequantized by both scales, plus `bias`, in `out_dtype` (bf16 by default, as the kernel)."""
    out = torch.nn.functional.conv2d(
        input.to(torch.float32), weight.to(torch.float32), None, stride, padding, dilation, groups
    )
    out = te.times(out, te.scale_tensor(scale_input, None), te.scale_tensor(scale_weight, None))
    if bias is not None:
        out = out + bias.to(torch.float32).reshape(1, -1, 1, 1)
    return out.to(out_dtype or torch.bfloat16)


def sum_fp8(
    self: Tensor,
    dim: list[int] | None = None,
    keepdim: bool = False,
    out_dtype: torch.dtype | None = None,
) -> Tensor:
    """The bridge's `hpu::sum_fp8`: the sum over `dim` (all when None), accumulated in fp32,
    in `out_dtype` (the input's FP8 dtype by default)."""
    wide = self.to(torch.float32)
    total = wide.sum() if dim is None else wide.sum(dim=dim, keepdim=keepdim)
    if dim is None and keepdim:
        total = total.reshape([1] * self.dim())
    return total.to(out_dtype or self.dtype)


def softmax_fp8(
    input: Tensor,
    dim: int,
    input_scale: te.Scale = None,
    output_scale: te.Scale = None,
    inv_attn_heads: Tensor | float | None = None,
    fused_add: Tensor | None = None,
) -> Tensor:
    """The bridge's `hpu::softmax_fp8` (and `.Scalar_scales`, `.Scalar`): softmax over `dim`
    of `input * inv_attn_heads * input_scale + fused_add` (each when given) in fp32; with an
    `output_scale` the probabilities times it in E4M3 (saturated), else bf16."""
    x = te.times(
        input.to(torch.float32),
        te.scale_tensor(inv_attn_heads, None),
        te.scale_tensor(input_scale, None),
    )
    if fused_add is not None:
        x = x + fused_add.to(torch.float32)
    probs = torch.softmax(x, dim=dim)
    out_scale = te.scale_tensor(output_scale, None)
    if out_scale is None:
        return probs.to(torch.bfloat16)
    scaled, _ = te.cast_to_fp8_v2(probs, out_scale, False, False, torch.float8_e4m3fn)
    return scaled


def cast_to_fp8_hybrid(
    input: Tensor,
    scale_152: Tensor | None = None,
    scale_143: Tensor | None = None,
    stochastic_rounding: bool = False,
    is_amax: bool = False,
) -> tuple[Tensor, Tensor, Tensor]:
    """The bridge's `hpu::cast_to_fp8_hybrid`: (E5M2 cast of `input * scale_152`, stochastic
    if asked; E4M3 cast of `input * scale_143`, to nearest, as the bridge's test checks; the
    amax of `input` when `is_amax`, else an empty tensor)."""
    e5m2, amax = te.cast_to_fp8_v2(
        input, scale_152, stochastic_rounding, is_amax, torch.float8_e5m2
    )
    e4m3, _ = te.cast_to_fp8_v2(input, scale_143, False, False, torch.float8_e4m3fn)
    return e5m2, e4m3, amax


SCHEMAS: Final[dict[str, str]] = {
    "cast_to_fp8_hybrid": "(Tensor input, Tensor? scale_152=None, Tensor? scale_143=None, bool stochastic_rounding=False, bool is_amax=False) -> (Tensor, Tensor, Tensor)",
    "softmax_fp8": "(Tensor input, int dim, Tensor? input_scale=None, Tensor? output_scale=None, Tensor? inv_attn_heads=None, Tensor? fused_add=None) -> Tensor",
    "softmax_fp8.Scalar_scales": "(Tensor input, int dim, float input_scale, float output_scale, Tensor? inv_attn_heads=None, Tensor? fused_add=None) -> Tensor",
    "softmax_fp8.Scalar": "(Tensor input, int dim, float input_scale, float output_scale, float inv_attn_heads, Tensor? fused_add=None) -> Tensor",
    "conv2d_fp8": "(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, SymInt[2] padding=0, SymInt[2] dilation=1, int groups=1, ScalarType? out_dtype=None, Tensor? scale_input=None, Tensor? scale_weight=None) -> Tensor",
    "conv2d_fp8.scalar": "(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, SymInt[2] padding=0, SymInt[2] dilation=1, int groups=1, ScalarType? out_dtype=None, float scale_input=1.0, float scale_weight=1.0) -> Tensor",
    "sum_fp8": "(Tensor self, int[1]? dim=None, bool keepdim=False, ScalarType? out_dtype=None) -> Tensor",
    "cast_to_fp8": "(Tensor input, Tensor? scale, bool stochastic_rounding, Tensor(a!) out, Tensor(b!) amax) -> (Tensor(a!), Tensor(b!))",
    "fp8_gemm": "(Tensor A, bool trans_A, Tensor B, bool trans_B, Tensor D, ScalarType out_dtype, Tensor? A_scale_inv, Tensor? B_scale_inv, Tensor? bias, bool accumulate, Tensor(a!) out) -> Tensor(a!)",
    "cast_to_fp8_v2.scalar": "(Tensor input, float scale, bool stochastic_rounding=False, bool is_amax=False, ScalarType dtype=None, int[]? scale_shape=None) -> (Tensor, Tensor)",
    "cast_to_fp8_v2.scalar_list": "(Tensor input, float[] scale, bool stochastic_rounding=False, bool is_amax=False, ScalarType dtype=None, int[]? scale_shape=None) -> (Tensor, Tensor)",
    "cast_from_fp8.scalar": "(Tensor input, float scale, ScalarType out_dtype, int[]? scale_shape=None) -> Tensor",
    "cast_from_fp8.scalar_list": "(Tensor input, float[] scale, ScalarType out_dtype, int[]? scale_shape=None) -> Tensor",
    "fp8_gemm_v2.scalar": "(Tensor A, bool trans_A, Tensor B, bool trans_B, Tensor? D, ScalarType out_dtype, float A_scale_inv, float B_scale_inv, Tensor? bias=None, bool accumulate=False, int[]? B_scale_shape=None) -> Tensor",
    "fp8_gemm_v2.scalar_list": "(Tensor A, bool trans_A, Tensor B, bool trans_B, Tensor? D, ScalarType out_dtype, float[] A_scale_inv, float[] B_scale_inv, Tensor? bias=None, bool accumulate=False, int[]? B_scale_shape=None) -> Tensor",
}  # fmt: skip
"""The bridge's schemas (1.19), by op name and overload."""

KERNELS: Final[dict[str, Any]] = {
    "cast_to_fp8_hybrid": cast_to_fp8_hybrid,
    "softmax_fp8": softmax_fp8,
    "softmax_fp8.Scalar_scales": softmax_fp8,
    "softmax_fp8.Scalar": softmax_fp8,
    "conv2d_fp8": conv2d_fp8,
    "conv2d_fp8.scalar": conv2d_fp8,
    "sum_fp8": sum_fp8,
    "cast_to_fp8": cast_to_fp8,
    "fp8_gemm": fp8_gemm,
    "cast_to_fp8_v2.scalar": te.cast_to_fp8_v2,
    "cast_to_fp8_v2.scalar_list": te.cast_to_fp8_v2,
    "cast_from_fp8.scalar": te.cast_from_fp8,
    "cast_from_fp8.scalar_list": te.cast_from_fp8,
    "fp8_gemm_v2.scalar": te.fp8_gemm_v2,
    "fp8_gemm_v2.scalar_list": te.fp8_gemm_v2,
}
