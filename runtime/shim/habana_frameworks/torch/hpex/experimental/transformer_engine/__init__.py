"""`habana_frameworks.torch.hpex.experimental.transformer_engine` (emulated).

In the bridge this re-exports Intel's `intel_transformer_engine`; here `hpusim.transformer_engine`
emulates it: `Linear` under `fp8_autocast` runs in FP8 with delayed scaling (per-module
`fp8_meta`: scales, amax histories, measurement intervals, `save_fp8_meta` / `load_fp8_meta`,
the extra state in `state_dict`) over the bridge's emulated FP8 casts and GEMM. The rest of the
fp8 surface that Intel's package builds on fused device kernels (`LayerNormLinear`,
`FP8ContextWrapper`, `fp8_model_init`, `FusedAttention` in an FP8 region) raises
NotImplementedError on use."""

from hpusim.hpex import unavailable, unavailable_function
from hpusim.transformer_engine import FusedAttention, Linear, fp8_autocast, is_fp8_enabled

from . import cpp_extensions, distributed, fp8, recipe, utils
from .fp8 import is_fp8_available

_API = "habana_frameworks.torch.hpex.experimental.transformer_engine"
_WHY = "fp8 modules beyond te.Linear need the device's fused fp8 kernels"
LayerNormLinear = unavailable(f"{_API}.LayerNormLinear", _WHY)
FP8ContextWrapper = unavailable(f"{_API}.FP8ContextWrapper", _WHY)
fp8_model_init = unavailable_function(f"{_API}.fp8_model_init", _WHY)

__all__ = [
    "FP8ContextWrapper",
    "FusedAttention",
    "LayerNormLinear",
    "Linear",
    "cpp_extensions",
    "distributed",
    "fp8",
    "fp8_autocast",
    "fp8_model_init",
    "is_fp8_available",
    "is_fp8_enabled",
    "recipe",
    "utils",
]
