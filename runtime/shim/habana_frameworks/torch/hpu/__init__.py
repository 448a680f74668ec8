"""`habana_frameworks.torch.hpu` (emulated): the device API plus `from .metrics import *`."""

from hpusim import device_module as _dm
from hpusim.device_module import (
    Event,
    Stream,
    current_device,
    current_stream,
    default_stream,
    device_count,
    get_device_name,
    is_available,
    is_initialized,
    manual_seed,
    manual_seed_all,
    max_memory_allocated,
    memory_allocated,
    memory_stats,
    reset_peak_memory_stats,
    set_device,
    synchronize,
)

from .metrics import *  # noqa: F403 - as the bridge does
from .metrics import metric_global, metric_localcontext, metrics_dump

_dynamic_shape = [False]


def enable_dynamic_shape() -> None:
    _dynamic_shape[0] = True


def disable_dynamic_shape() -> None:
    _dynamic_shape[0] = False


def get_dynamic_shape_status() -> bool:
    return _dynamic_shape[0]


def _install_extras() -> None:
    g = globals()
    for name, value in _dm._extra.items():
        g[name] = value


_install_extras()

__all__ = [
    "Event",
    "Stream",
    "current_device",
    "current_stream",
    "default_stream",
    "device_count",
    "disable_dynamic_shape",
    "enable_dynamic_shape",
    "get_device_name",
    "get_dynamic_shape_status",
    "is_available",
    "is_initialized",
    "manual_seed",
    "manual_seed_all",
    "max_memory_allocated",
    "memory_allocated",
    "memory_stats",
    "metric_global",
    "metric_localcontext",
    "metrics_dump",
    "reset_peak_memory_stats",
    "set_device",
    "synchronize",
]
