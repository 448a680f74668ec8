"""CUDA: torch.profiler with CPU and CUDA activities (device time measured by CUPTI)."""

from __future__ import annotations

from typing import Any

from hpuprof.capture.backends.torch_profiler import TorchProfilerBackend


class CudaBackend(TorchProfilerBackend):
    """torch.profiler CPU + CUDA activities."""

    name = "cuda"
    device_time = "measured"

    def activities(self) -> list[Any]:
        from torch.profiler import ProfilerActivity

        return [ProfilerActivity.CPU, ProfilerActivity.CUDA]

    def run_metadata(self) -> dict[str, Any]:
        import torch

        if not torch.cuda.is_available():
            return {}
        return {"device_profile": torch.cuda.get_device_name(0)}
