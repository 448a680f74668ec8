"""`habana_frameworks.torch.hpex.experimental.transformer_engine` (emulated).

fp8 training needs the device's fp8 MME and scaling hardware: `fp8.is_fp8_available()` answers
`(False, reason)` and the modules (`Linear`, `fp8_autocast`, ...) raise NotImplementedError on
use. The recipe configuration objects (`recipe.DelayedScaling`, `recipe.Format`) exist, so
clients that only import them (lightning-habana, optimum-habana) work."""

from hpusim.hpex import unavailable, unavailable_function

from . import distributed, fp8, recipe
from .fp8 import is_fp8_available

_API = "habana_frameworks.torch.hpex.experimental.transformer_engine"
_WHY = "fp8 training needs the device's fp8 hardware"
Linear = unavailable(f"{_API}.Linear", _WHY)
LayerNormLinear = unavailable(f"{_API}.LayerNormLinear", _WHY)
FP8ContextWrapper = unavailable(f"{_API}.FP8ContextWrapper", _WHY)
fp8_autocast = unavailable_function(f"{_API}.fp8_autocast", _WHY)
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
    "recipe",
]
