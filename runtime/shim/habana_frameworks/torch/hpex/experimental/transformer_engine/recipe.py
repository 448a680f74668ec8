"""`transformer_engine.recipe` (emulated): FP8 scaling recipes."""

from hpusim.transformer_engine import DelayedScaling, Format

__all__ = ["DelayedScaling", "Format"]
