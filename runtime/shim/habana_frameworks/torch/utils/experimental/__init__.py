"""`habana_frameworks.torch.utils.experimental` (emulated): dynamic-shape tools."""

from hpusim.experimental import (
    const_shape_dataloader,
    data_dynamicity,
    detect_recompilation_auto_model,
)

__all__ = ["const_shape_dataloader", "data_dynamicity", "detect_recompilation_auto_model"]
