"""`transformer_engine.utils` (emulated): the fp8 metadata types."""

from hpusim.transformer_engine import FP8BwdTensors, FP8FwdTensors, FP8TensorMeta

__all__ = ["FP8BwdTensors", "FP8FwdTensors", "FP8TensorMeta"]
