"""`habana_frameworks.torch.hpex.experimental.transformer_engine` (emulated).

`Linear` under `fp8_autocast` runs in FP8 (`hpusim.transformer_engine`: E4M3/E5M2 casts with
amax scales and the bridge's `hpu::fp8_gemm_v2`, at the MME's FP8 rate on the modeled device;
numerics emulated as dequantize-then-matmul). The rest of the fp8 surface that needs the
device's fp8 scaling hardware (`LayerNormLinear`, `FP8ContextWrapper`, `fp8_model_init`, the
cast kernels) raises NotImplementedError on use. The recipe configuration objects
(`recipe.DelayedScaling`, `recipe.Format`) exist, so clients that only import them
(lightning-habana, optimum-habana) work."""

from hpusim.hpex import unavailable, unavailable_function
from hpusim.transformer_engine import Linear, fp8_autocast, is_fp8_enabled

from . import distributed, fp8, recipe
from .fp8 import is_fp8_available

_API = "habana_frameworks.torch.hpex.experimental.transformer_engine"
_WHY = "fp8 scaling kernels need the device's fp8 hardware (te.Linear is emulated)"
LayerNormLinear = unavailable(f"{_API}.LayerNormLinear", _WHY)
FP8ContextWrapper = unavailable(f"{_API}.FP8ContextWrapper", _WHY)
fp8_model_init = unavailable_function(f"{_API}.fp8_model_init", _WHY)

__all__ = [
    "FP8ContextWrapper",
    "LayerNormLinear",
    "Linear",
    "distributed",
    "fp8",
    "fp8_autocast",
    "fp8_model_init",
    "is_fp8_available",
    "is_fp8_enabled",
    "recipe",
]
