"""The `torch.hpu` device module (registered with `torch._register_device_module`).

The C++ argument parser imports `torch.hpu` and calls `_lazy_init()` for `device='hpu'`; dynamo
looks up `torch.hpu.Stream` / `Event`. Memory figures are the emulator's own bookkeeping of the
bytes of live device tensors it created (factories, H2D copies, op outputs with new storage):
MODELED, not a real allocator (no caching, fragmentation or workspace memory).
"""

from __future__ import annotations

import sys
import types
from time import perf_counter_ns
from typing import Any

import torch

from hpusim import state

_extra: dict[str, Any] = {}


def _lazy_init() -> None:
    return None


def is_available() -> bool:
    return state.RT is not None


def is_initialized() -> bool:
    return state.RT is not None


def device_count() -> int:
    return 1 if state.RT is not None else 0


def current_device() -> int:
    return 0


def set_device(device: Any) -> None:
    return None


def get_device_name(device: Any = None) -> str:
    rt = state.RT
    name = rt.profile.name if rt is not None else "gaudi2"
    return {"gaudi2": "GAUDI2", "gaudi3": "GAUDI3"}.get(name, name.upper()) + " (emulated)"


def synchronize(device: Any = None) -> None:
    """Wait for the device: a host sync with reason `synchronize` (flushes in lazy mode)."""
    rt = state.RT
    if rt is None:
        return
    from hpusim.lazy import host_sync

    host_sync(rt, "synchronize", perf_counter_ns())


def manual_seed(seed: int) -> None:
    torch.manual_seed(seed)  # the emulated device uses the CPU generator


def manual_seed_all(seed: int) -> None:
    torch.manual_seed(seed)


def memory_allocated(device: Any = None) -> int:
    rt = state.RT
    return rt.memory_in_use if rt is not None else 0


def max_memory_allocated(device: Any = None) -> int:
    rt = state.RT
    return rt.memory_peak if rt is not None else 0


def memory_stats(device: Any = None) -> dict[str, int]:
    """The bridge's keys (gaudi.md 10); values are not modeled beyond `InUse` and `Limit`."""
    rt = state.RT
    limit = rt.profile.hbm_gbytes * (1 << 30) if rt is not None else 0
    used = memory_allocated()
    return {
        "Limit": limit,
        "InUse": used,
        "MaxInUse": max_memory_allocated(),
        "NumAllocs": 0,
        "NumFrees": 0,
        "ActiveAllocs": 0,
        "MaxAllocSize": 0,
        "TotalSystemAllocs": 0,
        "TotalSystemFrees": 0,
        "TotalActiveAllocs": 0,
    }


def reset_peak_memory_stats(device: Any = None) -> None:
    rt = state.RT
    if rt is not None:
        rt.memory_peak = rt.memory_in_use


class Stream:
    """Placeholder stream (dynamo looks it up); work is ordered on one modeled stream."""

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        self.device = torch.device("hpu", 0)

    def synchronize(self) -> None:
        synchronize()

    def query(self) -> bool:
        return True

    def wait_stream(self, stream: Any) -> None:
        return None


class Event:
    """Placeholder event."""

    def __init__(self, enable_timing: bool = False, **kwargs: Any) -> None:
        self.enable_timing = enable_timing

    def record(self, stream: Any = None) -> None:
        return None

    def synchronize(self) -> None:
        synchronize()

    def query(self) -> bool:
        return True


def current_stream(device: Any = None) -> Stream:
    return Stream()


def default_stream(device: Any = None) -> Stream:
    return Stream()


def register_attribute(name: str, value: Any) -> None:
    """Extension hook: expose `value` as `torch.hpu.<name>` and `habana_frameworks.torch.hpu.<name>`
    (for example B2's `wrap_in_hpu_graph`, `HPUGraph`, `graph`)."""
    _extra[name] = value
    mod = sys.modules.get("torch.hpu")
    if mod is not None:
        setattr(mod, name, value)
    shim = sys.modules.get("habana_frameworks.torch.hpu")
    if shim is not None:
        setattr(shim, name, value)


_PUBLIC = (
    "_lazy_init",
    "is_available",
    "is_initialized",
    "device_count",
    "current_device",
    "set_device",
    "get_device_name",
    "synchronize",
    "manual_seed",
    "manual_seed_all",
    "memory_allocated",
    "max_memory_allocated",
    "memory_stats",
    "reset_peak_memory_stats",
    "Stream",
    "Event",
    "current_stream",
    "default_stream",
)


def build_module() -> types.ModuleType:
    """A fresh `torch.hpu` module object."""
    mod = types.ModuleType("torch.hpu", "Emulated HPU runtime module (hpusim).")
    g = globals()
    for name in _PUBLIC:
        setattr(mod, name, g[name])
    for name, value in _extra.items():
        setattr(mod, name, value)
    return mod


def install() -> None:
    if "torch.hpu" in sys.modules and getattr(torch, "hpu", None) is sys.modules["torch.hpu"]:
        return
    torch._register_device_module("hpu", build_module())


def uninstall() -> None:
    if hasattr(torch, "hpu"):
        delattr(torch, "hpu")
    sys.modules.pop("torch.hpu", None)
