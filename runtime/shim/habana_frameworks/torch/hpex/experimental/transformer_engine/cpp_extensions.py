"""`transformer_engine.cpp_extensions` (emulated): the FP8 casts by an `FP8TensorMeta`'s scales
(recording amaxes in its history) and the TN-layout FP8 GEMM, over the bridge's emulated ops."""

from hpusim.transformer_engine import cast_from_fp8, cast_to_fp8, cast_to_fp8_hybrid, fp8_gemm

__all__ = ["cast_from_fp8", "cast_to_fp8", "cast_to_fp8_hybrid", "fp8_gemm"]
