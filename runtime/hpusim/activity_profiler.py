"""`torch.profiler` with `ProfilerActivity.HPU` on the emulated card (the bridge's
`activity_profiler.py` behaviour, gaudi.md 6.2).

While the emulator is enabled, `torch.profiler.ProfilerActivity` is an Enum with `CPU`, `CUDA`,
`HPU` (so `isinstance(a, torch._C._profiler.ProfilerActivity)` is False, which lightning-habana
checks), `torch.profiler.profile` is a subclass that takes `debug_activities` and defaults to
`(CPU, HPU)`, and `torch.autograd.profiler.profile.export_chrome_trace(path)` merges the
emulated card's events into the written JSON in the bridge's trace shape
(`chrome_events.bridge_events`): the `/device:HPU:0` process with one thread per engine,
`Kernel` / `Memcpy` / `Runtime` device events with `recipeId`, `recipeName`, `streamHandle`,
`eventHandle`, `dataType`, the `Bridge Logs` and `Synapse Logger` processes, and
`deviceProperties`. Device times are MODELED (every merged event says `hpuprof.modeled`).

The HPU activity records from the emulator's sink: with another consumer already recording
(`hpuprof record --emulate`), that consumer keeps the events and the torch.profiler export has
only the host side. `disable()` restores torch's classes.
"""

from __future__ import annotations

import json
import os
from enum import Enum
from typing import Any

import hpusim.state as state
from hpusim.chrome_events import bridge_events, bridge_metadata, device_properties
from hpusim.sink import get_sink

_orig: dict[str, Any] = {}


class DebugActivity(Enum):
    SYNAPSE_FUNCTION_CALLS = 1
    BRIDGE_FUNCTION_CALLS = 2


class HabanaProfilerActivity(Enum):
    CPU = 1
    CUDA = 2
    HPU = 3


MANDATORY_EVENTS = (
    "SyncTensorsGraphInternal",
    "ExecuteCachedGraph",
    "LaunchSyncTensorsGraph",
    "synEventRecord",
    "synEventSynchronize",
    "synLaunchWithExternalEvents",
    "hpu_lazy",
    "synMemCopyAsync",
)


class _Capture:
    """Owns the sink while an HPU activity trace is active."""

    def __init__(self) -> None:
        self.shared = False
        self.batches: list[Any] = []

    def start(self) -> None:
        sink = get_sink()
        self.shared = sink.recording  # someone else (a profiler) drains it already
        if not self.shared:
            sink.drain()
            sink.recording = True

    def stop(self) -> None:
        if self.shared:
            return
        sink = get_sink()
        self.batches.append(sink.drain())
        sink.recording = False


def _classes() -> tuple[type, type]:
    import torch
    import torch.autograd.profiler as autograd_profiler

    original_activity = _orig["activity"]
    base_profile = _orig["profile"]
    base_autograd = _orig["autograd_profile"]

    class habana_autograd_profile_wrapper(base_autograd):  # type: ignore[misc, valid-type]
        """torch's autograd profile whose Chrome export also has the emulated card's events."""

        def export_chrome_trace(self, path: str, *args: Any, **kwargs: Any) -> Any:
            result = super().export_chrome_trace(path, *args, **kwargs)
            batches = getattr(self, "_hpu_batches", None)
            if batches:
                merge_into_export(path, batches)
            return result

    class habana_profile(base_profile):  # type: ignore[misc, valid-type]
        """`torch.profiler.profile` with `ProfilerActivity.HPU` (and `debug_activities`)."""

        def __init__(
            self,
            *,
            activities: Any = None,
            debug_activities: Any = None,
            schedule: Any = None,
            on_trace_ready: Any = None,
            record_shapes: bool = False,
            profile_memory: bool = False,
            with_stack: bool = False,
            with_flops: bool = False,
            with_modules: bool = False,
            experimental_config: Any = None,
            use_cuda: Any = None,
            **kwargs: Any,
        ) -> None:
            activity = torch.profiler.ProfilerActivity
            if activities is None:
                activities = (activity.CPU, activity.HPU)
            activities = list(activities)
            self.hpu_profiling_active = any(_is_hpu(a) for a in activities)
            self.debug_activities = debug_activities
            self._hpu_capture = _Capture()
            native = [n for n in (_native(a, original_activity) for a in activities) if n]
            extra = {"use_cuda": use_cuda} if use_cuda is not None else {}
            super().__init__(
                activities=native or [original_activity.CPU],
                schedule=schedule,
                on_trace_ready=on_trace_ready,
                record_shapes=record_shapes,
                profile_memory=profile_memory,
                with_stack=with_stack,
                with_flops=with_flops,
                with_modules=with_modules,
                experimental_config=experimental_config,
                **extra,
                **kwargs,
            )

        def start_trace(self) -> None:
            if self.hpu_profiling_active:
                self._hpu_capture = _Capture()
                self._hpu_capture.start()
            super().start_trace()

        def stop_trace(self) -> None:
            super().stop_trace()
            if self.hpu_profiling_active:
                self._hpu_capture.stop()
                if self.profiler is not None:
                    self.profiler._hpu_batches = self._hpu_capture.batches

    del autograd_profiler
    return habana_profile, habana_autograd_profile_wrapper


def _is_hpu(activity: Any) -> bool:
    return getattr(activity, "name", None) == "HPU"


def _native(activity: Any, original: Any) -> Any:
    """The torch (C++) activity of a CPU / CUDA activity of either enum; None for HPU."""
    name = getattr(activity, "name", None)
    if name in ("CPU", "CUDA"):
        return getattr(original, name)
    return None


def merge_into_export(path: str, batches: list[Any]) -> None:
    """Append the emulated card's events (bridge shape) to a Chrome trace torch wrote."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    base_ns = int(doc.get("baseTimeNanoseconds", 0))
    pid = os.getpid()
    events: list[dict[str, Any]] = bridge_metadata(pid)
    for batch in batches:
        events.extend(bridge_events(batch, pid=pid, base_ns=base_ns))
    doc.setdefault("traceEvents", []).extend(events)
    rt = state.RT
    doc["deviceProperties"] = device_properties(rt.profile if rt is not None else None)
    tmp = f"{path}.hpusim-{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    os.replace(tmp, path)


def install() -> None:
    """Patch torch.profiler as importing the bridge does (idempotent)."""
    import torch
    import torch.autograd.profiler as autograd_profiler
    import torch.profiler

    if _orig:
        return
    _orig["activity"] = torch.profiler.ProfilerActivity
    _orig["profile"] = torch.profiler.profile
    _orig["autograd_profile"] = autograd_profiler.profile
    profile_cls, autograd_cls = _classes()
    torch.profiler.ProfilerActivity = HabanaProfilerActivity  # type: ignore[misc, assignment]
    torch.profiler.profile = profile_cls  # type: ignore[misc, assignment]
    autograd_profiler.profile = autograd_cls  # type: ignore[misc, assignment]
    del torch


def uninstall() -> None:
    """Restore torch's profiler classes."""
    if not _orig:
        return
    import torch.autograd.profiler as autograd_profiler
    import torch.profiler

    torch.profiler.ProfilerActivity = _orig.pop("activity")  # type: ignore[misc]
    torch.profiler.profile = _orig.pop("profile")  # type: ignore[misc]
    autograd_profiler.profile = _orig.pop("autograd_profile")  # type: ignore[misc]
