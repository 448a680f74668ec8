"""Plain CPU: torch.profiler with `ProfilerActivity.CPU`."""

from __future__ import annotations

from typing import Any

from hpuprof.capture.backends.torch_profiler import TorchProfilerBackend


class CpuBackend(TorchProfilerBackend):
    """torch.profiler CPU activities; no device time (`device_time: "none"`)."""

    name = "cpu"
    device_time = "none"

    def activities(self) -> list[Any]:
        from torch.profiler import ProfilerActivity

        return [ProfilerActivity.CPU]
