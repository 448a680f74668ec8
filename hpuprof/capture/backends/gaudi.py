"""Real Gaudi: torch.profiler with `ProfilerActivity.HPU`, plus the bridge's global metrics.

What it does on a Gaudi machine (gaudi.md sections 1 and 6):
- sets `HABANA_PROFILE=profile_api_light` when unset (what importing
  `habana_frameworks.torch.core` does anyway; device tracing needs it) and imports the bridge,
  which patches `torch.profiler.ProfilerActivity` with its `HPU` member;
- runs `torch.profiler.profile(activities=[CPU, HPU], ...)`: the bridge merges the device
  engine lanes (`/device:HPU:0`, `MME`/`TPC`/`DMA` threads) into the exported JSON, which we
  stream to the run directory like any other window;
- at stop reads `metric_global(name).stats()` for `graph_compilation`, `cpu_fallback`,
  `memory_defragmentation` and (when `PT_HPU_ENABLE_CACHE_METRICS` was set) `recipe_cache`,
  and writes them in the bridge's JSON dump format (trigger `user`). These are process-wide
  counters: they cover the whole process up to `stop()`, not only the profiled window.

No card is available to the project's CI: the tests run this adapter against a fake
`habana_frameworks` module that provides `metric_global`.
"""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

from hpuprof.capture.backends.torch_profiler import TorchProfilerBackend

GLOBAL_METRICS = ("graph_compilation", "cpu_fallback", "memory_defragmentation", "recipe_cache")


class GaudiBackend(TorchProfilerBackend):
    """torch.profiler CPU + HPU activities on a real Gaudi, device time measured."""

    name = "gaudi"
    device_time = "measured"

    def activities(self) -> list[Any]:
        os.environ.setdefault("HABANA_PROFILE", "profile_api_light")
        import habana_frameworks.torch.core  # noqa: F401  (patches ProfilerActivity)
        from torch.profiler import ProfilerActivity

        return [ProfilerActivity.CPU, ProfilerActivity.HPU]

    def run_metadata(self) -> dict[str, Any]:
        try:
            import habana_frameworks.torch.hpu as hthpu

            name = str(hthpu.get_device_name()) if hasattr(hthpu, "get_device_name") else ""
        except Exception:  # the bridge raises its own types when no card is acquired
            name = ""
        return {"device_profile": name.lower()} if name else {}

    def metrics(self) -> list[dict[str, Any]] | None:
        try:
            from habana_frameworks.torch.hpu.metrics import metric_global
        except ImportError:
            return None
        now = dt.datetime.now().isoformat()
        records: list[dict[str, Any]] = []
        for name in GLOBAL_METRICS:
            metric = metric_global(name)
            if metric is None:  # recipe_cache is registered only when enabled
                continue
            records.append(
                {
                    "metric_name": name,
                    "triggered_by": "user",
                    "generated_on": now,
                    "statistics": dict(metric.stats()),
                }
            )
        return records
