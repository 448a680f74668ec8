"""`habana_frameworks.torch.utils.experimental` (emulated): the dynamic-shape tools
(hpusim.experimental) and the device queries (`_get_device_type`, `synDeviceType`)."""

from enum import IntEnum

from hpusim.experimental import (
    const_shape_dataloader,
    data_dynamicity,
    detect_recompilation_auto_model,
)


class synDeviceType(IntEnum):
    """Synapse's device types (synapse_common_types.h)."""

    synDeviceGoya2 = 1
    synDeviceGreco = 1  # an alias of synDeviceGoya2, as in Synapse
    synDeviceGaudi = 2
    synDeviceGaudi2 = 4
    synDeviceGaudi3 = 5
    synDeviceEmulator = 6
    synDeviceTypeInvalid = 7
    synDeviceTypeSize = 8


def _is_available() -> bool:
    import torch

    return bool(torch.hpu.is_available())


def _get_device_type() -> synDeviceType:
    """The emulated card's type: Gaudi2 or Gaudi3 as the device profile says."""
    from hpusim import state

    rt = state.RT
    if rt is None:
        return synDeviceType.synDeviceTypeInvalid
    return (
        synDeviceType.synDeviceGaudi3
        if rt.profile.name == "gaudi3"
        else synDeviceType.synDeviceGaudi2
    )


def _is_fp16_supported() -> bool:
    return _get_device_type() != synDeviceType.synDeviceGaudi


def _data_ptr(t: object) -> int:
    elem = getattr(t, "_elem", None)
    return int(elem.data_ptr()) if elem is not None else 0


def _compute_stream() -> int:
    return 0


__all__ = [
    "const_shape_dataloader",
    "data_dynamicity",
    "detect_recompilation_auto_model",
    "synDeviceType",
]
