"""The bridge's first-generation FP8 ops with `out` tensors, the scalar overloads of the
emulated FP8 casts and GEMM (`hpu::cast_to_fp8_v2`, `hpu::cast_from_fp8`, `hpu::fp8_gemm_v2`,
whose numerics are here too: `te.Linear` and Habana's quantization toolkit call them), and the
FP8 convolution, sum and softmax and the hybrid (E5M2 + E4M3) cast.

`hpu::cast_to_fp8(input, scale, stochastic_rounding, out, amax)` writes the cast into `out`
(its dtype is the FP8 format) and, when `amax` has elements, `input`'s amax into it;
`hpu::fp8_gemm(..., out)` writes `fp8_gemm_v2`'s product into `out`. Schemas as the 1.19
bridge registers them (`habana_eager/eager_custom_op_register.cpp`); each call is ONE device
op (the GEMM at the MME's FP8 rate in the device model).
"""

from __future__ import annotations

import math
from typing import Any, Final

import torch

import hpusim.state as state

Tensor = torch.Tensor

Scale = torch.Tensor | float | list[float] | None
"""A scale argument: a tensor, or the `.scalar` / `.scalar_list` overloads' float(s)."""

FP8_DTYPES: Final = (torch.float8_e5m2, torch.float8_e4m3fn)


def _operand(t: torch.Tensor, trans: bool) -> torch.Tensor:
    return t.transpose(-2, -1) if trans else t


def fp8_gemm_v2(
    A: torch.Tensor,
    trans_A: bool,
    B: torch.Tensor,
    trans_B: bool,
    D: torch.Tensor | None,
    out_dtype: torch.dtype,
    A_scale_inv: Scale = None,
    B_scale_inv: Scale = None,
    bias: torch.Tensor | None = None,
    accumulate: bool = False,
    B_scale_shape: list[int] | None = None,
) -> torch.Tensor:
    """The bridge's `hpu::fp8_gemm_v2` (and its `.scalar` / `.scalar_list` overloads): op(A)
    times op(B), dequantized by both inverse scales (B's may be per channel: `B_scale_shape`,
    broadcast over the product), plus `bias`, plus `D` when `accumulate`."""
    out = _operand(A, trans_A).to(torch.float32) @ _operand(B, trans_B).to(torch.float32)
    out = times(out, scale_tensor(A_scale_inv, None), scale_tensor(B_scale_inv, B_scale_shape))
    if bias is not None:
        out = out + bias.to(torch.float32)
    if accumulate and D is not None:
        out = out + D.to(torch.float32)
    return out.to(out_dtype)


_FP8_MAX: Final = {torch.float8_e4m3fn: 448.0, torch.float8_e5m2: 57344.0}
_GAUDI2_E4M3_MAX: Final = 240.0
"""Gaudi 2's E4M3 keeps IEEE specials, so its largest value is 240, not OCP E4M3FN's 448 (the
range Habana's quantization toolkit computes for Gaudi 2: 2**7 * 1.875); Gaudi 3 uses 448."""


def device_fp8_max(dtype: torch.dtype) -> float:
    """The largest finite value of `dtype` on the emulated device (casts saturate to it)."""
    rt = state.RT
    if dtype == torch.float8_e4m3fn and rt is not None and rt.profile.name == "gaudi2":
        return _GAUDI2_E4M3_MAX
    return _FP8_MAX[dtype]


def scale_tensor(scale: Scale, scale_shape: list[int] | None) -> torch.Tensor | None:
    """`scale` as an fp32 tensor in the kernel's layout: a per-channel scale takes
    `scale_shape` (checked against its element count, as the bridge's `ValidateScaleShape`)."""
    if scale is None:
        return None
    t = scale if isinstance(scale, torch.Tensor) else torch.tensor(scale, dtype=torch.float32)
    if scale_shape is not None and not isinstance(scale, float):
        if t.numel() != math.prod(scale_shape):
            raise RuntimeError(
                f"Number of scale elements ({t.numel()}) is not equal to number of "
                f"scale_shape elements ({math.prod(scale_shape)})."
            )
        if t.numel() > 1:
            t = t.reshape(scale_shape)
    return t.to(torch.float32)


def times(x: torch.Tensor, *factors: torch.Tensor | None) -> torch.Tensor:
    """`x` times each factor given (None: none)."""
    for factor in factors:
        if factor is not None:
            x = x * factor
    return x


def saturated(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """`x` in fp32, clamped to `dtype`'s range on the emulated device (an FP8 cast saturates)."""
    limit = device_fp8_max(dtype)
    return x.to(torch.float32).clamp(-limit, limit)


def amax(t: torch.Tensor) -> torch.Tensor:
    """The largest magnitude in `t`, as an fp32 scalar tensor (no gradient)."""
    return t.detach().abs().amax().float()


def _dtype_name(dtype: torch.dtype) -> str:
    """c10's spelling (`Float8_e5m2`), as the bridge's messages print a ScalarType."""
    return str(dtype).removeprefix("torch.").capitalize()


def cast_to_fp8_v2(
    input: torch.Tensor,
    scale: Scale = None,
    stochastic_rounding: bool = False,
    is_amax: bool = False,
    dtype: torch.dtype | None = None,
    scale_shape: list[int] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The bridge's `hpu::cast_to_fp8_v2` (and its `.scalar` / `.scalar_list` overloads):
    (`input * scale` saturated to the device's FP8 range and cast, amax of `input` when
    `is_amax` else an empty tensor), with the kernel's input checks (an fp8 input keeps its
    dtype and has no amax). Rounding is to nearest, or stochastic (`stochastic_rounding`)."""
    dtype = dtype or torch.float8_e4m3fn
    if input.dtype not in (torch.float32, torch.bfloat16, *FP8_DTYPES):
        raise RuntimeError(
            "CastToFp8V2 input dtype must be one of [float, bfloat16, float8_e5m2, float8_e4m3fn]."
        )
    if input.dtype in FP8_DTYPES:
        if is_amax:
            raise RuntimeError("CastToFp8V2 must have no amax for float8.")
        if input.dtype != dtype:
            raise RuntimeError(
                "CastToFp8V2 input and output must have the same dtype for float8, but are "
                f"{_dtype_name(input.dtype)} and {_dtype_name(dtype)}"
            )
    x = input if input.dtype not in FP8_DTYPES else input.to(torch.float32)
    factor = scale_tensor(scale, scale_shape)
    if factor is not None:  # in the input's dtype, as the kernel (the bridge's tests: exact)
        x = x * factor.to(x.dtype)
    clamped = saturated(x, dtype)
    out = _stochastic_round(clamped, dtype) if stochastic_rounding else clamped.to(dtype)
    return out, amax(input) if is_amax else input.new_empty(0, dtype=torch.float32)


def _stochastic_round(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """`x` (fp32, within `dtype`'s range) rounded to one of its two neighbouring FP8 values,
    the farther one with probability (distance to the nearer) / (gap between them): unbiased
    on average, as the kernel's CAST_ROUND_SR."""
    nearest = x.to(dtype)
    near = nearest.to(torch.float32)
    bits = nearest.view(torch.uint8).to(torch.int16)  # sign-magnitude: +1 is one step out
    outward = x.abs() > near.abs()
    other_bits = torch.where(outward, bits + 1, bits - 1).clamp(0, 255).to(torch.uint8)
    other = other_bits.view(dtype).to(torch.float32)
    gap = (other - near).abs()
    p_other = torch.where(gap > 0, (x - near).abs() / gap, torch.zeros_like(gap))
    pick = torch.rand(x.shape, device=x.device) < p_other
    return torch.where(pick & (x != near), other, near).to(dtype)


def cast_from_fp8(
    input: torch.Tensor,
    scale: Scale,
    out_dtype: torch.dtype,
    scale_shape: list[int] | None = None,
) -> torch.Tensor:
    """The bridge's `hpu::cast_from_fp8` (and its `.scalar` / `.scalar_list` overloads):
    `input` in `out_dtype`, times `scale` (the inverse of the scale it was cast with)."""
    out = input.to(out_dtype)
    factor = scale_tensor(scale, scale_shape)
    if factor is not None:  # in `out_dtype`, as the kernel (the bridge's tests: exact)
        out = out * factor.to(out_dtype)
    return out


def cast_to_fp8(
    input: Tensor, scale: Tensor | None, stochastic_rounding: bool, out: Tensor, amax: Tensor
) -> tuple[Tensor, Tensor]:
    if input.dtype not in (torch.float32, torch.bfloat16):
        raise RuntimeError("CastToFp8 input must be of float or bfloat16 dtype.")
    if input.shape != out.shape:
        raise RuntimeError("Input and output must have the same shape")
    casted, measured = cast_to_fp8_v2(
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
    product = fp8_gemm_v2(
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
    scale_input: Scale = None,
    scale_weight: Scale = None,
) -> Tensor:
    """The bridge's `hpu::conv2d_fp8` (and `.scalar`): conv2d of the FP8 input and weight,
    dequantized by both scales, plus `bias`, in `out_dtype` (bf16 by default, as the kernel)."""
    out = torch.nn.functional.conv2d(
        input.to(torch.float32), weight.to(torch.float32), None, stride, padding, dilation, groups
    )
    out = times(out, scale_tensor(scale_input, None), scale_tensor(scale_weight, None))
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
    input_scale: Scale = None,
    output_scale: Scale = None,
    inv_attn_heads: Tensor | float | None = None,
    fused_add: Tensor | None = None,
) -> Tensor:
    """The bridge's `hpu::softmax_fp8` (and `.Scalar_scales`, `.Scalar`): softmax over `dim`
    of `input * inv_attn_heads * input_scale + fused_add` (each when given) in fp32; with an
    `output_scale` the probabilities times it in E4M3 (saturated), else bf16."""
    x = times(
        input.to(torch.float32),
        scale_tensor(inv_attn_heads, None),
        scale_tensor(input_scale, None),
    )
    if fused_add is not None:
        x = x + fused_add.to(torch.float32)
    probs = torch.softmax(x, dim=dim)
    out_scale = scale_tensor(output_scale, None)
    if out_scale is None:
        return probs.to(torch.bfloat16)
    scaled, _ = cast_to_fp8_v2(probs, out_scale, False, False, torch.float8_e4m3fn)
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
    e5m2, amax = cast_to_fp8_v2(input, scale_152, stochastic_rounding, is_amax, torch.float8_e5m2)
    e4m3, _ = cast_to_fp8_v2(input, scale_143, False, False, torch.float8_e4m3fn)
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
    "cast_to_fp8_v2.scalar": cast_to_fp8_v2,
    "cast_to_fp8_v2.scalar_list": cast_to_fp8_v2,
    "cast_from_fp8.scalar": cast_from_fp8,
    "cast_from_fp8.scalar_list": cast_from_fp8,
    "fp8_gemm_v2.scalar": fp8_gemm_v2,
    "fp8_gemm_v2.scalar_list": fp8_gemm_v2,
}
