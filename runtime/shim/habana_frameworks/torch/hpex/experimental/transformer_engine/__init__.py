"""`habana_frameworks.torch.hpex.experimental.transformer_engine` (emulated, hpusim): FP8
`Linear` modules under `fp8_autocast`, at the MME's FP8 rate in the modeled device."""

from hpusim.transformer_engine import (
    DelayedScaling,
    Format,
    Linear,
    fp8_autocast,
    is_fp8_enabled,
)

from . import recipe

__all__ = ["DelayedScaling", "Format", "Linear", "fp8_autocast", "is_fp8_enabled", "recipe"]
