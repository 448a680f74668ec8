"""The bridge's first-generation FP8 ops with `out` tensors, and the scalar overloads of the
emulated FP8 casts and GEMM (`hpusim.transformer_engine` holds their numerics).

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
    casted, _ = te.cast_to_fp8_v2(input, scale, stochastic_rounding, False, out.dtype)
    out.copy_(casted)
    if amax.numel():
        amax.copy_(input.detach().abs().amax().float().reshape(amax.shape))
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


SCHEMAS: Final[dict[str, str]] = {
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
    "cast_to_fp8": cast_to_fp8,
    "fp8_gemm": fp8_gemm,
    "cast_to_fp8_v2.scalar": te.cast_to_fp8_v2,
    "cast_to_fp8_v2.scalar_list": te.cast_to_fp8_v2,
    "cast_from_fp8.scalar": te.cast_from_fp8,
    "cast_from_fp8.scalar_list": te.cast_from_fp8,
    "fp8_gemm_v2.scalar": te.fp8_gemm_v2,
    "fp8_gemm_v2.scalar_list": te.fp8_gemm_v2,
}
