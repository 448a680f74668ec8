"""`torch.Stream("hpu")` and `torch.Event("hpu")`: torch's device-generic stream and event on the
emulated card.

On the bridge they work because the bridge registers the HPU device's stream guard with torch
(`HABANAGuardImpl`, `backend/habana_device/HPUGuardImpl.h`, registered at `HPUAllocator.cpp:82`); CPU torch has none for the hpu device type, so the
constructors raised "PyTorch is not linked with support for hpu devices" (the bridge's own
`tests/pytest_working/test_hpu_stream.py`). While emulating, `torch.Stream` and `torch.Event`
are subclasses whose hpu instances are views of the emulator's `torch.hpu.Stream` / `Event`
(`device_module`): the same stream ids, current-stream selection, recording, waits and
modeled timings. Every other device gets torch's own class.
"""

from __future__ import annotations

from typing import Any

import torch

import hpusim.device_module as device_module

HPU_DEVICE_TYPE = 15
"""c10's `DeviceType::HPU`, what `torch.Stream.device_type` reads for an hpu stream."""

_orig: dict[str, Any] = {}


def _is_hpu(device: Any) -> bool:
    if device is None:
        return False
    return torch.device(device).type == "hpu"


def _hpu_of(obj: Any) -> Any:
    """The emulator's stream or event behind a generic one (or the object itself)."""
    return getattr(obj, "_hpu", obj)


class _AlsoTorchs(type):
    """Instances of torch's own class (another device's streams) still pass `isinstance` and
    `issubclass` checks against the installed subclass."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return type.__instancecheck__(cls, obj) or isinstance(obj, cls.__mro__[1])

    def __subclasscheck__(cls, sub: Any) -> bool:
        return type.__subclasscheck__(cls, sub) or issubclass(sub, cls.__mro__[1])


class HpuStream(torch.Stream, metaclass=_AlsoTorchs):
    """`torch.Stream` while emulating (module doc)."""

    _hpu: device_module.Stream

    def __new__(cls, device: Any = None, *, priority: int = 0, **kwargs: Any) -> Any:
        if not _is_hpu(device):
            return _orig["Stream"](device, priority=priority, **kwargs)
        obj = super().__new__(cls, "cpu", priority=priority)
        obj._hpu = device_module.Stream(priority=priority)
        return obj

    @property
    def stream_id(self) -> int:  # type: ignore[override]
        return self._hpu.stream_id

    @property
    def device_index(self) -> int:  # type: ignore[override]
        return self._hpu.device_index

    @property
    def device_type(self) -> int:  # type: ignore[override]
        return HPU_DEVICE_TYPE

    @property
    def device(self) -> torch.device:  # type: ignore[override]
        return self._hpu.device

    def query(self) -> bool:
        return self._hpu.query()

    def synchronize(self) -> None:
        self._hpu.synchronize()

    def wait_event(self, event: Any) -> None:
        self._hpu.wait_event(_hpu_of(event))

    def wait_stream(self, stream: Any) -> None:
        self._hpu.wait_stream(_hpu_of(stream))

    def record_event(self, event: Any = None) -> Any:
        event = event if event is not None else HpuEvent("hpu")
        _hpu_of(event).record(self._hpu)
        return event

    def __eq__(self, other: object) -> bool:
        return self._hpu == _hpu_of(other)

    def __hash__(self) -> int:
        return hash(self._hpu)

    def __repr__(self) -> str:
        return f"torch.Stream device_type=hpu, device_index=0, stream_id={self.stream_id}"


class HpuEvent(torch.Event, metaclass=_AlsoTorchs):
    """`torch.Event` while emulating (module doc)."""

    _hpu: device_module.Event

    def __new__(cls, device: Any = None, *, enable_timing: bool = False, **kwargs: Any) -> Any:
        if not _is_hpu(device):
            return _orig["Event"](device, enable_timing=enable_timing, **kwargs)
        obj = super().__new__(cls, "cpu", enable_timing=enable_timing)
        obj._hpu = device_module.Event(enable_timing=enable_timing)
        return obj

    @property
    def device(self) -> torch.device:  # type: ignore[override]
        return self._hpu.device

    @property
    def event_id(self) -> int:  # type: ignore[override]
        return id(self._hpu)

    def record(self, stream: Any = None) -> None:
        self._hpu.record(None if stream is None else _hpu_of(stream))

    def wait(self, stream: Any = None) -> None:
        self._hpu.wait(None if stream is None else _hpu_of(stream))

    def query(self) -> bool:
        return self._hpu.query()

    def synchronize(self) -> None:
        self._hpu.synchronize()

    def elapsed_time(self, end_event: Any) -> float:
        return self._hpu.elapsed_time(_hpu_of(end_event))


def install() -> None:
    """`torch.Stream` / `torch.Event` take hpu devices (idempotent)."""
    if _orig:
        return
    _orig["Stream"], _orig["Event"] = torch.Stream, torch.Event
    torch.Stream = HpuStream  # type: ignore[misc,assignment]
    torch.Event = HpuEvent  # type: ignore[misc]


def uninstall() -> None:
    """torch's own classes again."""
    if _orig:
        torch.Stream, torch.Event = _orig.pop("Stream"), _orig.pop("Event")  # type: ignore[misc]
