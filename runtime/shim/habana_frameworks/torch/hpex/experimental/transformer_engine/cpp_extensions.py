"""`transformer_engine.cpp_extensions` (emulated): fp8 casts need the device's fp8 hardware."""

from hpusim.hpex import unavailable_function

from .fp8 import REASON

cast_to_fp8 = unavailable_function("transformer_engine.cpp_extensions.cast_to_fp8", REASON)
cast_from_fp8 = unavailable_function("transformer_engine.cpp_extensions.cast_from_fp8", REASON)
fp8_gemm = unavailable_function("transformer_engine.cpp_extensions.fp8_gemm", REASON)
