"""`transformer_engine.fp8` (emulated): the FP8 global state (`FP8GlobalStateManager`: autocast
region, measurement mode, global amax buffer), `fp8_autocast` and the delayed-scaling update
(`hpusim.transformer_engine`)."""

from hpusim.transformer_engine import (
    NO_FP8_DEVICE,
    FP8GlobalStateManager,
    MetaTensorType,
    _default_sf_compute,
    amax_and_scale_update,
    fp8_autocast,
    get_fp8_te_dtype,
    get_fp8_te_sr,
    is_fp8_available,
    is_fp8_enabled,
    set_measurement_mode,
)

__all__ = [
    "_default_sf_compute",
    "NO_FP8_DEVICE",
    "FP8GlobalStateManager",
    "MetaTensorType",
    "amax_and_scale_update",
    "fp8_autocast",
    "get_fp8_te_dtype",
    "get_fp8_te_sr",
    "is_fp8_available",
    "is_fp8_enabled",
    "set_measurement_mode",
]
