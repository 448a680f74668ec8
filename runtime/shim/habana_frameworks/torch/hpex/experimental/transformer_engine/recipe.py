"""`transformer_engine.recipe` (emulated): fp8 recipe configuration (`hpusim.transformer_engine`
reads `fp8_format` to pick the gradients' FP8 type)."""

from hpusim.transformer_engine import DelayedScaling, Format

__all__ = ["DelayedScaling", "Format"]
