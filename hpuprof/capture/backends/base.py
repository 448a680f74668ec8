"""What every capture backend implements, and what the profiler gives it."""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from hpuprof.errors import OutputError


@dataclass(frozen=True)
class CaptureOptions:
    """torch.profiler's recording switches, honoured by the backends that can.

    Args:
        record_shapes: record op input shapes and dtypes (`Input Dims`, `Input type`).
        profile_memory: record allocator events (`[memory]` instants).
        with_stack: record Python frames (`python_function` events).
        with_modules: record nn.Module hierarchy.
        with_flops: estimate FLOPs of matmul/conv ops.
        schedule: a step -> action callable, or None to record from start to stop.
    """

    record_shapes: bool = False
    profile_memory: bool = False
    with_stack: bool = False
    with_modules: bool = False
    with_flops: bool = False
    schedule: Callable[[int], Any] | None = None


class BackendContext(Protocol):
    """The capture session a backend talks to (`hpuprof.capture.session.CaptureSession`)."""

    @property
    def base_ns(self) -> int:
        """Epoch ns that is ts 0 in the Chrome JSON we write."""

    @property
    def pid(self) -> int: ...

    @property
    def options(self) -> CaptureOptions: ...

    @property
    def scratch_dir(self) -> Path:
        """A folder for temporary exports (removed at the end of the run)."""

    def emit(self, events: list[dict[str, Any]]) -> None:
        """Stream a chunk of Chrome-trace event dicts (ts relative to base_ns) to disk."""

    def emit_raw(self, body: bytes) -> None:
        """Stream already-encoded events: the bytes between a JSON array's brackets."""

    def set_trace_keys(self, keys: Mapping[str, Any]) -> None:
        """Top-level trace keys learnt on the way (deviceProperties, ...), written at close."""

    def window_ready(self) -> None:
        """A schedule window closed and was emitted (on_trace_ready is called)."""

    def warn(self, text: str) -> None:
        """A problem the run survives (listed under `warnings` in `run.json`)."""

    def output_failed(self, error: OutputError) -> None:
        """Nothing more can be written to the run directory (a full disk): recording stops
        at the next step, poll or window, and the program goes on."""


class Backend(abc.ABC):
    """A source of trace events.

    A backend that `handles_schedule` (torch.profiler with the user's schedule) runs the
    schedule itself and calls `ctx.window_ready()`; for the others the profiler calls
    `set_recording` per step, writes the step spans and ends windows with `end_window`.
    """

    name: ClassVar[str]
    device_time: ClassVar[str]  # schema.DeviceTimeSource
    handles_schedule: bool = False  # decided at `start` (torch backends: a schedule was given)

    @abc.abstractmethod
    def start(self, ctx: BackendContext) -> None: ...

    @abc.abstractmethod
    def stop(self) -> None:
        """Stop recording and emit everything not yet emitted."""

    def step(self) -> None:
        """The user called `prof.step()`."""
        return None

    def poll(self) -> None:
        """Emit what was recorded so far (called on the thread that runs the model)."""
        return None

    def end_window(self) -> None:
        """End the current recording window and stream all of it, recording on in a new one
        (called on the thread that started the profiler, at a step boundary or a tick), so a
        process killed later loses at most the window after this one."""
        self.poll()

    def drop_unstreamed(self) -> None:
        """Forget what was recorded but not streamed yet: the process is being stopped by a
        signal inside the code that records it, so that part may be half-written."""
        return None

    def set_recording(self, on: bool) -> None:
        """Schedule: record (True) or not (False) from now on."""
        return None

    def abandon(self) -> None:
        """Stop recording for good, exporting nothing (the trace can no longer be written: a
        full disk); `stop` then does nothing."""
        self.set_recording(False)
        self.drop_unstreamed()

    def run_metadata(self) -> dict[str, Any]:
        """Keys for our `hpuprof` top-level metadata (device_profile, mode, ...)."""
        return {}

    def dynamo_compile_ids(self) -> frozenset[str]:
        """Dynamo compile ids the backend already recorded itself (the profiler's dynamo
        records skip them, so a compile is not in the trace twice)."""
        return frozenset()

    def metrics(self) -> list[dict[str, Any]] | None:
        """The Habana-format metrics dump records, or None when the backend has none."""
        return None

    def project_epoch_ns(self, epoch_ns: int, end: bool = False) -> int:
        """An epoch timestamp the profiler measured, on the clock of the backend's events
        (the emulated runtime's projected host clock; identity elsewhere). `end` maps an
        interval's end (after a modeled wait at that instant)."""
        return epoch_ns
