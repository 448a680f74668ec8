"""The `hpu` module: ONE module object that is both `torch.hpu` and `habana_frameworks.torch.hpu`
(as on the bridge, whose `core` registers its `hpu` package as torch's device module).

The public names and behaviour follow the bridge 1.19 `habana_frameworks/torch/hpu` package
(`__init__`, `memory`, `events`, `streams`, `random`, `metrics`, and `graphs` in lazy mode;
`register_attribute` adds the extensions' names). The module is built once per `enable()`,
placed in `sys.modules` under both names and registered with `torch._register_device_module`;
its `__path__` is the shim's `hpu/` folder, so `habana_frameworks.torch.hpu.metrics`,
`.graphs`, `.random`... import as submodules of it.

Memory figures come from the emulator's allocator bookkeeping (bytes and counts of live device
tensors it created: factories, H2D copies, op outputs with new storage). MODELED: no caching
allocator, fragmentation or workspace memory; `Limit` is the device profile's HBM size.
Events measure MODELED device time (the timeline's clock when the work queued before them ends).
Streams are placeholders of the one modeled stream. The RNG functions act on the device's own
generator (`hpusim.rng`, the bridge's `hpu/random.py`).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import types
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from time import perf_counter_ns
from typing import Any, Final

import torch

import hpusim.hpex as hpex
import hpusim.metrics as metrics
import hpusim.rng as rng
import hpusim.state as state
from hpusim.env import DRIVER_VERSION
from hpusim.lazy import DEVICE_SYNC, EVENT_SYNC, STREAM_SYNC, device_wait, flush, host_sync
from hpusim.lifecycle import shim_path

HABANA_VISIBLE_MODULES_VAR: Final = "HABANA_VISIBLE_MODULES"
HLS_MODULE_ID_VAR: Final = "HLS_MODULE_ID"
MODULE_NAME: Final = "habana_frameworks.torch.hpu"

_extra: dict[str, Any] = {}
_MODULE: list[types.ModuleType] = []
_flags: dict[str, bool] = {"deterministic": False}


def _rt() -> state.Runtime:
    rt = state.RT
    if rt is None:
        raise RuntimeError("hpusim is not enabled: no emulated HPU (call hpusim.enable() first)")
    return rt


def _device_index(device: Any = None, optional: bool = True) -> int:
    """The bridge's `_get_device_index`: hpu device / str / int / None -> index."""
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != "hpu":
            raise ValueError(f"Expected a hpu device, but got: {device}")
        return 0 if device.index is None else int(device.index)
    if isinstance(device, int):
        return device
    if device is None and optional:
        return current_device()
    raise ValueError(
        f"Expected a torch.device with a specified index or an integer, but got:{device}"
    )


def _get_device_index(device: Any, optional: bool = False, allow_cpu: bool = False) -> int:
    """The bridge's `hpu._utils._get_device_index` (its signature, errors and `-1` for an allowed
    cpu device), exported on the module as the bridge's `hpu` package does."""
    if isinstance(device, torch.device | str):
        device = torch.device(device)
        if device.type not in (("hpu", "cpu") if allow_cpu else ("hpu",)):
            kinds = "a hpu or cpu device" if allow_cpu else "a hpu device"
            raise ValueError(f"Expected {kinds}, but got: {device}")
        if device.type == "cpu":
            return -1
        if device.index is not None:
            return int(device.index)
    elif isinstance(device, int):
        return device
    if optional:
        return current_device()
    raise ValueError(
        f"Expected a torch.device with a specified index or an integer, but got:{device}"
    )


def _check(device: Any) -> int:
    idx = _device_index(device)
    if idx < 0 or idx >= device_count():
        raise AssertionError("Invalid device id")
    return idx


# --- device ---------------------------------------------------------------------------------


def _lazy_init() -> None:
    return None


def init() -> None:
    _lazy_init()


def is_initialized() -> bool:
    return state.RT is not None


def is_available() -> bool:
    return state.RT is not None


def device_count() -> int:
    """The cards of the emulated server, as the bridge counts the devices of the machine
    (`synDeviceGetCount`): the cards `hpuprof record --emulate --cards N` started (torchrun's
    `LOCAL_WORLD_SIZE`), else 1. Clients size their device lists by it (lightning-habana's
    `HPUFSDPStrategy` indexes its `parallel_devices` by local rank)."""
    if state.RT is None:
        return 0
    local = os.environ.get("LOCAL_WORLD_SIZE", "")
    return max(1, int(local)) if local.isdigit() else 1


def current_device() -> int:
    return 0


SERVER_CARDS: Final = 8
"""The cards of a Gaudi server (HLS), the machine `hpuprof record --emulate --cards N` models."""


def _visible_modules() -> list[int]:
    """The bridge's `_get_available_modules_from_environ`: `HABANA_VISIBLE_MODULES`, else all
    eight modules of the server."""
    text = os.environ.get(HABANA_VISIBLE_MODULES_VAR, "0,1,2,3,4,5,6,7")
    modules = [int(m) for m in text.split(",")] if text else list(range(SERVER_CARDS))
    if not 0 < len(modules) <= SERVER_CARDS:
        raise AssertionError(f"{HABANA_VISIBLE_MODULES_VAR} does not have valid value.")
    return modules


def _module_id() -> int:
    """The bridge's `_get_module_id_from_environ`: `HLS_MODULE_ID`, else -1."""
    text = os.environ.get(HLS_MODULE_ID_VAR, "")
    return int(text) if text else -1


def set_device(device: Any) -> None:
    """The bridge's `set_device`: a card started by `hpuprof record --cards N` (one of the N
    processes of an eight-card server, as `deepspeed` and `torchrun` start them) selects module
    `HABANA_VISIBLE_MODULES[idx]` and records it in `HLS_MODULE_ID`; a lone process (the bridge:
    on a machine of fewer than eight cards) without `HABANA_VISIBLE_MODULES` supports index 0
    only. DeepSpeed's HPU accelerator calls `set_device(local_rank)`. The emulated card is the
    same whichever module is named."""
    idx = _device_index(device)
    modules = _visible_modules()
    if idx not in modules and idx > len(modules):
        raise AssertionError(
            f"Trying to open device with idx={idx} when only {modules} are avaliable)"
        )
    current = _module_id()
    if current >= 0:
        idx = modules.index(current) if current in modules else idx
        if idx >= len(modules) or modules[idx] != current:
            raise AssertionError(
                f"Requested module_id={modules[min(idx, len(modules) - 1)]} is different from "
                f"current_module_id={current} which was previously set."
            )
    on_server = "LOCAL_WORLD_SIZE" in os.environ  # a card of `hpuprof record --cards N`
    if current == -1 and HABANA_VISIBLE_MODULES_VAR not in os.environ and not on_server:
        if idx != 0:
            raise AssertionError(
                f"As {HABANA_VISIBLE_MODULES_VAR} is not provided, the only supported device "
                "idx is 0."
            )
    else:
        os.environ[HLS_MODULE_ID_VAR] = str(modules[idx])


def get_device_name(device: Any = None) -> str:
    """`GAUDI2` / `GAUDI3`: the name the bridge reports for the emulated card."""
    if not is_available():
        warnings.warn("Device not available", stacklevel=2)
        return ""
    _check(device)
    return {"gaudi2": "GAUDI2", "gaudi3": "GAUDI3"}.get(_rt().profile.name, "GAUDI2")


def get_device_capability(device: Any = None) -> str:
    if not is_available():
        warnings.warn("Device not available", stacklevel=2)
        return ""
    _check(device)
    return DRIVER_VERSION  # HPUDevice.cpp:211 -> device.cpp:1800: synDriverGetVersion


def get_device_properties(device: Any = None) -> str:
    """The bridge returns a description string; so does the emulator (name, memory, cores)."""
    if not is_available():
        warnings.warn("Device not available", stacklevel=2)
        return ""
    _check(device)
    limit = _rt().profile.hbm_gbytes * (1 << 30)
    return f"(sramBaseAddress=0, dramBaseAddress=0, sramSize=0, dramSize={limit}, tpcEnabledMask=0, dramEnabled=1, fd=0, device_id=0, device_type={get_device_name()} (emulated))"


def can_device_access_peer(device: Any, peer_device: Any) -> bool:
    a, b = _device_index(device), _device_index(peer_device)
    count = device_count()
    for d in (a, b):
        if d < 0 or d >= count:
            raise AssertionError(f"Invalid device id : {d}")
    if a == b:
        raise AssertionError("Both the ids are same.")
    return True


def get_gencode_flags() -> str:
    return ""


def get_arch_list() -> list[str]:
    return [get_device_name(current_device())]


def synchronize() -> None:
    """Wait for the device: a host sync with reason `synchronize` (flushes in lazy mode). The
    bridge's takes no device (hpu/__init__.py:151): `synchronize(0)` is a TypeError there."""
    rt = state.RT
    if rt is None:
        return
    host_sync(rt, DEVICE_SYNC, perf_counter_ns())
    _synced_to[0] = max(_synced_to[0], rt.timeline.idle_at())


def set_sync_debug_mode(debug_mode: Any) -> None:
    os.environ["PT_ENABLE_HABANA_STREAMASYNC"] = str(debug_mode)


def get_sync_debug_mode() -> int:
    return int(os.environ["PT_ENABLE_HABANA_STREAMASYNC"])


def setDeterministic(val: bool) -> None:
    warnings.warn(
        "torch.hpu.setDeterministic is deprecated and will be removed in next release. Please "
        "use torch.use_deterministic_algorithms instead.",
        stacklevel=2,
    )
    _flags["deterministic"] = bool(val)


def getDeterministic() -> bool:
    warnings.warn(
        "torch.hpu.getDeterministic is deprecated and will be removed in next release. Please "
        "use torch.are_deterministic_algorithms_enabled instead.",
        stacklevel=2,
    )
    return _flags["deterministic"]


def _switch(name: str, value: bool) -> Any:
    def fn() -> None:
        _flags[name] = value

    return fn


def enable_dynamic_shape() -> None:
    """`SetRefineDynamicShape(true)` (dynamic_shape_info.cpp:28-45): the lazy graphs' recipes
    are bucketed from now on (dynamic_buckets.py)."""
    _rt().cache.dynamic = True


def disable_dynamic_shape() -> None:
    _rt().cache.dynamic = False


enable_optim_output_sif = _switch("optim_output_sif", True)
disable_optim_output_sif = _switch("optim_output_sif", False)
enable_inference_mode = _switch("inference_mode", True)
disable_inference_mode = _switch("inference_mode", False)
enable_quantization = _switch("quantization", True)
disable_quantization = _switch("quantization", False)
enable_matmul3d_2d_reshape = _switch("matmul3d_2d_reshape", True)
disable_matmul3d_2d_reshape = _switch("matmul3d_2d_reshape", False)


def get_dynamic_shape_status() -> bool:
    """`GetRefineDynamicShapeStatus`: PT_HPU_ENABLE_REFINE_DYNAMIC_SHAPES unless switched."""
    rt = state.RT
    return rt is not None and rt.cache.dynamic


def enable_const_section_serialization(path: Any, clear_path: bool, use_compression: bool) -> None:
    _flags["const_section_serialization"] = bool(str(path))


def disable_const_section_serialization() -> None:
    _flags["const_section_serialization"] = False


def is_bf16_supported() -> bool:
    return is_available()


def memory_usage(device: Any = None) -> int:
    _check(device)
    return int(memory_stats(device)["InUse"])


def utilization(device: Any = None) -> int:
    raise NotImplementedError(
        "torch.hpu.utilization reads the card through pyhlml: not available under the hpusim "
        "emulator (no card)"
    )


class device:
    """`with torch.hpu.device(0):` (one emulated card: index 0 only)."""

    def __init__(self, device: Any) -> None:
        self.idx = _device_index(device) if device is not None else 0
        if self.idx not in (0, -1):
            raise AssertionError(
                f"Requested device_id={self.idx} is different from env_device_id=0"
            )

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


class device_of(device):
    """Context manager that selects the device of `obj` (an hpu tensor: device 0)."""

    def __init__(self, obj: Any) -> None:
        super().__init__(obj.get_device() if getattr(obj, "is_hpu", False) else -1)


# --- memory (the emulator's allocator bookkeeping) ------------------------------------------


def memory_stats(device: Any = None) -> dict[str, int]:
    """The bridge's keys, from the emulated allocator: `Limit` (HBM of the profile), `InUse`,
    `MaxInUse`, allocation counts (live device tensors the emulator created)."""
    _check(device)
    rt = _rt()
    a = rt.alloc
    return {
        "Limit": rt.profile.hbm_gbytes * (1 << 30),
        "InUse": a.in_use,
        "MaxInUse": a.max_in_use,
        "NumAllocs": a.num_allocs,
        "NumFrees": a.num_frees,
        "ActiveAllocs": a.num_allocs - a.num_frees,
        "MaxAllocSize": a.max_alloc_size,
        "TotalSystemAllocs": a.total_allocs,
        "TotalSystemFrees": a.total_frees,
        "TotalActiveAllocs": a.total_allocs - a.total_frees,
    }


def memory_allocated(device: Any = None) -> int:
    return memory_stats(device)["InUse"]


def max_memory_allocated(device: Any = None) -> int:
    return memory_stats(device)["MaxInUse"]


def reset_peak_memory_stats(device: Any = None) -> None:
    _check(device)
    _rt().alloc.reset_peak()


def reset_accumulated_memory_stats(device: Any = None) -> None:
    """Clears the allocation and free counts (the bridge's `clear_memory_stats`)."""
    _check(device)
    _rt().alloc.reset_counts()


def memory_reserved(device: Any = None) -> int:
    return memory_stats(device)["Limit"]


def max_memory_reserved(device: Any = None) -> int:
    return memory_stats(device)["Limit"]


def memory_cached(device: Any = None) -> int:
    warnings.warn(
        "torch.hpu.memory_cached has been renamed to torch.hpu.memory_reserved",
        FutureWarning,
        stacklevel=2,
    )
    return memory_reserved(device)


def max_memory_cached(device: Any = None) -> int:
    warnings.warn(
        "torch.hpu.max_memory_cached has been renamed to torch.hpu.max_memory_reserved",
        FutureWarning,
        stacklevel=2,
    )
    return max_memory_reserved(device)


def mem_get_info(device: Any = None) -> tuple[int, int]:
    """(free, total) bytes: `Limit - InUse`, `Limit`."""
    stats = memory_stats(device)
    return stats["Limit"] - stats["InUse"], stats["Limit"]


_BYTE_STATS: Final = frozenset({"Limit", "InUse", "MaxInUse", "MaxAllocSize"})


def memory_summary(device: Any = None, abbreviated: bool = False) -> str:
    """The bridge's framed header, then one line per statistic of `memory_stats`."""
    idx = _check(device)
    rule = "=" * 52
    head = f"|{rule}|\n| {'':5} PyTorch HPU memory summary, device ID {idx:<6d} |\n|{'-' * 52}|\n"
    gib = 1024**3
    lines = []
    for key, value in memory_stats(idx).items():
        label = f"{key}:"
        shown = f"{value} ({value / gib:.2f} GB)" if key in _BYTE_STATS else str(value)
        lines.append("  " + label + " " * max(1, 50 - len(label) - len(shown)) + shown + "  ")
    return head + "\n".join(lines) + "\n"


# --- streams and events ---------------------------------------------------------------------


_synced_to: list[int] = [0]
"""The modeled device time the host has last waited for (`Event.query` is True up to it)."""


class Event:
    """`torch.hpu.Event(enable_timing=False)`: records the MODELED device clock at the point
    where the work queued before it completes; `elapsed_time` is in milliseconds."""

    def __init__(self, enable_timing: bool = False, **kwargs: Any) -> None:
        self.enable_timing = enable_timing
        self.device = torch.device("hpu", 0)
        self._device_ns: int | None = None
        self.hpu_event = 0

    def record(self, stream: Any = None) -> None:
        """HPUEvent.cpp:82-100: recorded on the current stream in lazy mode, the event closes
        the pending graph ("step marker due to HPUEvent::record"); on another stream it only
        marks the work already launched."""
        rt = _rt()
        current = stream is None or getattr(stream, "stream_id", 0) == current_stream().stream_id
        if rt.lazy and current:
            flush(rt, "HPUEvent::record")
        self._device_ns = max(rt.timeline.idle_at(), perf_counter_ns())
        self.hpu_event = id(self)

    def wait(self, stream: Any = None) -> None:
        return None  # one modeled stream: work is already ordered

    def query(self) -> bool:
        """Done when the host has waited past it (a synchronize of it, its stream or the
        device: the modeled device time may run ahead of this machine's clock), or when this
        machine's clock has."""
        done = self._device_ns
        return done is None or done <= _synced_to[0] or perf_counter_ns() >= done

    def synchronize(self) -> None:
        """HPUEvent.cpp:129-134: waits for the recorded event (no step marker); an event never
        recorded returns at once."""
        rt = state.RT
        if rt is not None and self._device_ns is not None:
            device_wait(rt, EVENT_SYNC, perf_counter_ns())
            _synced_to[0] = max(_synced_to[0], self._device_ns)

    def elapsed_time(self, end_event: Event) -> float:
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if self._device_ns is None or end_event._device_ns is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return (end_event._device_ns - self._device_ns) / 1e6

    def __repr__(self) -> str:
        if self.hpu_event:
            return f"<htorch.hpu.Event {self.hpu_event:#x}>"
        return "<htorch.hpu.Event uninitialized>"


class Stream:
    """`torch.hpu.Stream(device=None, priority=0)`: the emulator orders all work on one
    modeled stream, so every Stream is a view of it (`stream_id` distinguishes user streams)."""

    _next_id = 1

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        if "stream_id" in kwargs:
            self.stream_id = int(kwargs["stream_id"])
        else:
            self.stream_id = Stream._next_id
            Stream._next_id += 1
        self.device_index = 0
        self.device_type = 0
        self.priority = priority
        self.device = torch.device("hpu", 0)
        self.hpu_stream = self.stream_id

    def wait_event(self, event: Event) -> None:
        event.wait(self)

    def wait_stream(self, stream: Stream) -> None:
        self.wait_event(stream.record_event())

    def record_event(self, event: Event | None = None) -> Event:
        event = event if event is not None else Event()
        event.record(self)
        return event

    def query(self) -> bool:
        rt = state.RT
        return rt is None or perf_counter_ns() >= rt.timeline.idle_at()

    def synchronize(self) -> None:
        """HPUStream.cpp:148-158: in lazy mode the current stream only waits for the work
        already launched (`StepMarkerFinish`, no new graph); another stream ends the pending
        graph first (`StepMarker`, "step marker due to HPUStream::synchronize")."""
        rt = state.RT
        if rt is None:
            return
        if rt.lazy and self.stream_id != current_stream().stream_id:
            host_sync(rt, "HPUStream::synchronize", perf_counter_ns())
        else:
            device_wait(rt, STREAM_SYNC, perf_counter_ns())
        _synced_to[0] = max(_synced_to[0], rt.timeline.idle_at())

    def id(self) -> int:
        return self.stream_id

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and other.stream_id == self.stream_id

    def __hash__(self) -> int:
        return hash((self.stream_id, 0))

    def __repr__(self) -> str:
        return f"<torch.hpu.Stream device=hpu:0 hpu_stream={self.hpu_stream:#x}>"


_DEFAULT_STREAM: Final = Stream(stream_id=0)
_current: list[Stream] = [_DEFAULT_STREAM]


def current_stream(device: Any = None) -> Stream:
    return _current[0]


def default_stream(device: Any = None) -> Stream:
    return _DEFAULT_STREAM


def set_stream(stream: Stream | None) -> None:
    if stream is not None:
        _current[0] = stream


class StreamContext:
    """`with torch.hpu.stream(s):` selects `s` as the current stream (None: no-op)."""

    def __init__(self, stream: Stream | None) -> None:
        self.stream = stream
        self.src_prev_stream: Stream | None = None

    def __enter__(self) -> None:
        if self.stream is None:
            return
        self.src_prev_stream = current_stream()
        set_stream(self.stream)

    def __exit__(self, *exc: Any) -> None:
        if self.stream is not None and self.src_prev_stream is not None:
            set_stream(self.src_prev_stream)


def stream(stream: Stream | None) -> StreamContext:
    return StreamContext(stream)


def get_stream_info(stream: Stream) -> tuple[int, int, int]:
    return stream.stream_id, stream.device_index, stream.device_type


def record_stream(tensor: torch.Tensor, stream: Stream) -> None:
    return None  # one modeled stream: nothing to keep alive across streams


# --- random (the device's own generator, hpusim.rng; the bridge's hpu/random.py) ------------

default_generators: Final[list[torch.Generator]] = [rng.DEVICE_GENERATOR]


def _check_zero(device: Any, what: str) -> None:
    if _device_index(device) != 0:
        raise RuntimeError(f"hpu {what} supports only device 0")


def get_rng_state(device: Any = "hpu") -> torch.Tensor:
    _check_zero(device, "get_rng_state")
    return default_generators[0].get_state()


def set_rng_state(new_state: torch.Tensor, device: Any = "hpu") -> None:
    _check_zero(device, "set_rng_state")
    default_generators[0].set_state(new_state)


def get_rng_state_all() -> list[torch.Tensor]:
    return [get_rng_state(0)]


def set_rng_state_all(new_states: Iterable[torch.Tensor]) -> None:
    states = list(new_states)
    if len(states) != 1:
        raise RuntimeError("hpu set_rng_state_all supports only states len of 1")
    set_rng_state(states[0], 0)


def manual_seed(seed: int) -> torch.Generator:
    return default_generators[0].manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    manual_seed(seed)


def seed() -> int:
    return default_generators[0].seed()


def seed_all() -> None:
    default_generators[0].seed()


def initial_seed() -> int:
    return default_generators[0].initial_seed()


# --- autocast, SDPA switches, legacy tensor types -------------------------------------------


def set_autocast_hpu_enabled(enabled: bool) -> None:
    torch.set_autocast_enabled("hpu", bool(enabled))


def is_autocast_hpu_enabled() -> bool:
    return bool(torch.is_autocast_enabled("hpu"))


def set_autocast_hpu_dtype(dtype: torch.dtype) -> None:
    torch.set_autocast_dtype("hpu", dtype)


def get_autocast_hpu_dtype() -> torch.dtype:
    return torch.get_autocast_dtype("hpu")


def enable_recompute_sdp(enabled: bool) -> None:
    hpex.enable_recompute_sdp(enabled)


def recompute_sdp_enabled() -> bool:
    return hpex.recompute_sdp_enabled()


@contextlib.contextmanager
def sdp_kernel(enable_recompute: bool = True) -> Iterator[dict[str, Any]]:
    """Selects the recompute (flash) or the plain fused SDPA inside the block."""
    before = recompute_sdp_enabled()
    try:
        enable_recompute_sdp(enable_recompute)
        yield {}
    finally:
        enable_recompute_sdp(before)


def _tensor_alias(name: str, dtype: torch.dtype) -> type:
    """`torch.hpu.FloatTensor(data)` and friends: a copy of `data` on the device."""

    def new(cls: type, *args: Any, **kwargs: Any) -> torch.Tensor:
        dev = kwargs.get("device")
        if dev is not None and str(dev) != "hpu":
            raise RuntimeError(
                f"legacy constructor expects device type: hpu but device type: {dev} was passed"
            )
        want = kwargs.get("dtype")
        if want is not None and want != dtype:
            raise RuntimeError(
                f"legacy constructor expects dtype: {dtype} but dtype: {want} was passed"
            )
        kwargs.update(device="hpu", dtype=dtype)
        return torch.tensor(*args, **kwargs)

    return type(name, (), {"__new__": new, "dtype": dtype})


_TENSOR_TYPES: Final = {
    "BFloat16Tensor": torch.bfloat16,
    "BoolTensor": torch.bool,
    "ByteTensor": torch.uint8,
    "CharTensor": torch.int8,
    "DoubleTensor": torch.float64,
    "FloatTensor": torch.float32,
    "HalfTensor": torch.float16,
    "IntTensor": torch.int32,
    "LongTensor": torch.int64,
    "ShortTensor": torch.int16,
}


# --- the module -----------------------------------------------------------------------------


def register_attribute(name: str, value: Any) -> None:
    """Extension hook: expose `value` as `torch.hpu.<name>` (= `habana_frameworks.torch.hpu`)."""
    _extra[name] = value
    if _MODULE:
        setattr(_MODULE[0], name, value)


def unregister_attribute(name: str) -> None:
    _extra.pop(name, None)
    if _MODULE and name in vars(_MODULE[0]):
        delattr(_MODULE[0], name)


_PUBLIC: Final = [
    "Event",
    "Stream",
    "StreamContext",
    "HABANA_VISIBLE_MODULES_VAR",
    "HLS_MODULE_ID_VAR",
    "can_device_access_peer",
    "current_device",
    "current_stream",
    "default_stream",
    "default_generators",
    "device",
    "device_count",
    "device_of",
    "disable_const_section_serialization",
    "disable_dynamic_shape",
    "disable_inference_mode",
    "disable_matmul3d_2d_reshape",
    "disable_optim_output_sif",
    "disable_quantization",
    "enable_const_section_serialization",
    "enable_dynamic_shape",
    "enable_inference_mode",
    "enable_matmul3d_2d_reshape",
    "enable_optim_output_sif",
    "enable_quantization",
    "enable_recompute_sdp",
    "getDeterministic",
    "get_arch_list",
    "get_autocast_hpu_dtype",
    "get_device_capability",
    "get_device_name",
    "get_device_properties",
    "get_dynamic_shape_status",
    "get_gencode_flags",
    "get_rng_state",
    "get_rng_state_all",
    "get_stream_info",
    "get_sync_debug_mode",
    "init",
    "initial_seed",
    "is_autocast_hpu_enabled",
    "is_available",
    "is_bf16_supported",
    "is_initialized",
    "manual_seed",
    "manual_seed_all",
    "max_memory_allocated",
    "max_memory_cached",
    "max_memory_reserved",
    "mem_get_info",
    "memory_allocated",
    "memory_cached",
    "memory_reserved",
    "memory_stats",
    "memory_summary",
    "memory_usage",
    "recompute_sdp_enabled",
    "record_stream",
    "reset_accumulated_memory_stats",
    "reset_peak_memory_stats",
    "sdp_kernel",
    "seed",
    "seed_all",
    "setDeterministic",
    "set_autocast_hpu_dtype",
    "set_autocast_hpu_enabled",
    "set_device",
    "set_rng_state",
    "set_rng_state_all",
    "set_stream",
    "set_sync_debug_mode",
    "stream",
    "synchronize",
    "utilization",
    "_lazy_init",
]


def _metrics_names() -> dict[str, Any]:
    return {
        n: getattr(metrics, n)
        for n in (
            "metric_global",
            "metric_localcontext",
            "metrics_dump",
            "MetricNotFound",
            "InvalidMetricDumpFileFormat",
            "InvalidMetricDumpTrigger",
        )
    }


def shim_dir() -> Path:
    """The shim's `habana_frameworks/torch/hpu` folder (the module's `__path__`)."""
    return shim_path() / "habana_frameworks" / "torch" / "hpu"


_SUBMODULES: Final = ("events", "memory", "metrics", "random", "streams")
"""The submodules the bridge's `hpu/__init__.py` imports (`from .events import *` ... `from
.streams import *`, python_packages/habana_frameworks/torch/hpu/__init__.py:39-43), which binds
each as an attribute of the package: DeepSpeed's HPU accelerator calls `hpu.random.manual_seed`
(deepspeed/accelerator/hpu_accelerator.py). `graphs` joins them in lazy mode only (:45-46)."""


def _submodule(name: str) -> types.ModuleType:
    """The module's `__getattr__`: a bridge submodule, imported on first access (importing them
    while the module is built would re-enter the shim's half-imported `habana_frameworks`)."""
    if name in _SUBMODULES or (name == "graphs" and hpex.is_lazy()):
        return importlib.import_module(f"{MODULE_NAME}.{name}")
    raise AttributeError(f"module {MODULE_NAME!r} has no attribute {name!r}")


def build_module() -> types.ModuleType:
    """A fresh `hpu` module object (the bridge's public names plus registered extras)."""
    mod = types.ModuleType(MODULE_NAME, "The HPU runtime module (hpusim emulation).")
    mod.__path__ = [str(shim_dir())]
    mod.__package__ = MODULE_NAME
    g = globals()
    for name in _PUBLIC:
        setattr(mod, name, g[name])
    for name, dtype in _TENSOR_TYPES.items():
        setattr(mod, name, _tensor_alias(name, dtype))
    for name, value in _metrics_names().items():
        setattr(mod, name, value)
    mod.is_lazy = hpex.is_lazy  # type: ignore[attr-defined]
    mod.is_lazy_mode = hpex.is_lazy()  # type: ignore[attr-defined]
    mod._get_device_index = _get_device_index  # type: ignore[attr-defined]
    mod.hpu = mod  # type: ignore[attr-defined]  # `from .memory import *` brings the module itself
    mod.torch = torch  # type: ignore[attr-defined]
    mod.__getattr__ = _submodule  # type: ignore[method-assign]
    for name, value in _extra.items():
        setattr(mod, name, value)
    return mod


def module() -> types.ModuleType:
    """The `hpu` module (one object for the life of the process, refreshed at each enable)."""
    if not _MODULE:
        _MODULE.append(build_module())
    return _MODULE[0]


def install() -> None:
    """Make the module `torch.hpu`; the shim's `habana_frameworks/torch/hpu/__init__.py`
    replaces itself with the same object when `habana_frameworks.torch.hpu` is imported."""
    mod = module()
    mod.is_lazy_mode = hpex.is_lazy()  # type: ignore[attr-defined]
    for name, value in _extra.items():
        setattr(mod, name, value)
    if getattr(torch, "hpu", None) is not mod:
        if hasattr(torch, "hpu"):
            delattr(torch, "hpu")
        sys.modules.pop("torch.hpu", None)
        torch._register_device_module("hpu", mod)
    if MODULE_NAME in sys.modules and sys.modules[MODULE_NAME] is not mod:
        sys.modules[MODULE_NAME] = mod  # imported as a plain package before the first enable
        parent = sys.modules.get("habana_frameworks.torch")
        if parent is not None:
            parent.hpu = mod  # type: ignore[attr-defined]
    _current[0] = _DEFAULT_STREAM
    _synced_to[0] = 0
    rng.install()


def uninstall() -> None:
    rng.uninstall()
    if hasattr(torch, "hpu"):
        delattr(torch, "hpu")
    sys.modules.pop("torch.hpu", None)
