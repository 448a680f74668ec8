"""`utils.experimental.detect_recompilation` (emulated): the dynamic-shape tools."""

from hpusim.experimental import (
    const_shape_dataloader,
    data_dynamicity,
    detect_recompilation_auto_model,
    get_shape,
)

__all__ = [
    "const_shape_dataloader",
    "data_dynamicity",
    "detect_recompilation_auto_model",
    "get_shape",
]
