"""hpusim: an emulated Intel Gaudi PyTorch bridge on CPU PyTorch.

`import hpusim` has no side effects. `hpusim.enable()` installs the emulated `hpu` device
(tensor subclass, HPU-key factory fallback, `torch.hpu` module, transfer patches, module and
optimizer hooks) and puts `runtime/shim` (the drop-in `habana_frameworks`) on `sys.path`. The
shim exists only in a source or editable checkout (it is never packaged: on a Gaudi machine it
would shadow the real bridge). `disable()` undoes what it can.

Every op really runs on CPU (results bit-identical to CPU); device times are MODELED from a
named device profile, host times are measured.

Contract with the capture layer: `enable`, `disable`, `is_enabled`, `config`,
`sink.get_sink()` (`.recording`, `.drain()`), `chrome_events.to_chrome_events`,
`chrome_events.metadata_events`, `run_metadata()`, `metrics_snapshot()`, `step_marker()`.

Extension points (HPU graphs, autocast, torch.compile):
- `get_sink().runtime(hpu_event, name, ts, dur, payload=...)` records an event;
- `dispatch.add_op_listener(fn)` sees every device op after it ran (capture / replay);
- `on_enable(fn)` / `on_disable(fn)` run extension installers with enable/disable;
- `device_module.register_attribute(name, obj)` exposes `torch.hpu.<name>` and
  `habana_frameworks.torch.hpu.<name>`;
- `autocast_state()` reports whether an `hpu` autocast region is active and its dtype.
"""

from __future__ import annotations

import contextlib
import os
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from time import perf_counter_ns
from typing import Any

import hpusim.state as state
from hpuprof.trace.schema import SCHEMA_VERSION
from hpusim.lazy import mark_step as _lazy_mark_step
from hpusim.lifecycle import is_enabled, on_disable, on_enable, shim_path
from hpusim.metrics import global_records
from hpusim.sink import get_sink

__all__ = [
    "autocast_state",
    "config",
    "disable",
    "enable",
    "host_overhead",
    "is_enabled",
    "mark_step",
    "metrics_snapshot",
    "on_disable",
    "on_enable",
    "project_epoch_ns",
    "run_metadata",
    "shim_path",
    "step_marker",
]


def enable(
    mode: str | None = None,
    device: str = "gaudi2",
    *,
    record: bool = False,
    timeline: str = "projected",
    compute: str = "real",
    cards: int = 1,
) -> None:
    """Install the emulated HPU. Idempotent when called again with the same settings.

    Args:
        mode: "lazy" or "eager"; None reads `PT_HPU_LAZY_MODE` like the bridge (1 = lazy,
            default eager).
        device: device profile, `gaudi2` or `gaudi3`.
        record: initial value of `get_sink().recording`. Off by default so an unprofiled run
            accumulates no events; a profiler switches it on and drains the sink.
        timeline: "projected" (default): host times are those a Gaudi host would see (the
            emulator's own CPU work removed, the bridge's host costs and waits for the device
            modeled; projection.py); "measured": the emulator's own host clock.
        compute: "real" (every op runs on CPU, results exact) or "fake" (FakeTensors: shapes
            only, no data and no memory; fake.py), as `hpuprof predict` runs scripts.
        cards: the data-parallel cards collectives are modeled for.
    """
    if mode not in (None, "lazy", "eager"):
        raise ValueError(f"mode must be 'lazy', 'eager' or None, not {mode!r}")
    if timeline not in ("projected", "measured"):
        raise ValueError(f"timeline must be 'projected' or 'measured', not {timeline!r}")
    if compute not in ("real", "fake"):
        raise ValueError(f"compute must be 'real' or 'fake', not {compute!r}")
    if int(cards) < 1:
        raise ValueError(f"cards must be >= 1, not {cards!r}")
    from hpusim import session  # deferred: torch loads at enable(), not at `import hpusim`

    session.enable(mode, device, record, timeline, compute, int(cards))


def disable() -> None:
    """Uninstall the emulated HPU (flushes a pending lazy graph; existing hpu tensors become
    unusable). The shim leaves `sys.path`; already-imported shim modules stay importable."""
    if state.RT is None:
        return
    from hpusim import session  # deferred: as in enable() (loaded by then)

    session.disable()


def config() -> Any:
    """The active `state.Config` (mode, device_profile), or None when disabled."""
    return state.RT.config if state.RT is not None else None


@cache
def _hpuprof_version() -> str:
    """hpuprof's version, from its package metadata (hpusim does not import hpuprof for it)."""
    try:
        return version("hpuprof")
    except PackageNotFoundError:  # pragma: no cover - hpusim runs from an installed hpuprof
        return "0"


def run_metadata() -> dict[str, Any]:
    """The `hpuprof` top-level trace metadata for an emulated run (docs/trace-keys.md)."""
    cfg = config()
    rank = int(os.environ.get("RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0")))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    return {
        "schema": SCHEMA_VERSION,
        "version": _hpuprof_version(),
        "device_time": "modeled",
        "host_time": "projected" if cfg and cfg.timeline == "projected" else "measured",
        "timeline": cfg.timeline if cfg else "measured",
        "compute": cfg.compute if cfg else "real",
        "cards": cfg.cards if cfg else 1,
        "device_profile": cfg.device_profile if cfg else "",
        "mode": cfg.mode if cfg else "",
        "backend": "emulated",
        "rank": rank,
        "world_size": world,
    }


def metrics_snapshot() -> dict[str, Any]:
    """The global metrics now, in Habana's JSON dump format: `{"records": [...]}` where
    `records` is exactly the array a `metrics_dump(..., "json")` file holds (trigger `user`),
    plus `{"by_name": {metric_name: statistics}}` for convenience."""
    records = global_records("user")
    return {"records": records, "by_name": {r["metric_name"]: r["statistics"] for r in records}}


def mark_step(device_str: str = "", sync: bool = False) -> None:
    """`htcore.mark_step()`."""
    _lazy_mark_step(device_str, sync)


def step_marker(name: str | None = None) -> int:
    """Close the current step (if any) and open the next; returns the new step number.

    Steps are `cat: "hpuprof"` slices named `Step#N` with `hpuprof.event: "step"`."""
    rt = state.require_runtime()
    return rt.events.step(perf_counter_ns(), rt.mode_code)


def host_overhead() -> Any:
    """Context manager: the block's measured host time is the emulator's or the profiler's own
    work, removed from the projected host timeline (a no-op on the measured one)."""
    rt = state.RT
    return rt.clock.pause() if rt is not None else contextlib.nullcontext()


def project_epoch_ns(epoch_ns: int, end: bool = False) -> int:
    """An epoch timestamp measured on this host, on the run's host timeline (projected or
    measured), for events recorded outside the sink (a profiler's step spans). `end` maps an
    interval's end (after a modeled wait at that instant)."""
    rt = state.RT
    if rt is None or not rt.clock.projected:
        return epoch_ns
    off = get_sink()._clock_offset_ns
    clock = rt.clock
    mapped: int = (clock.map_end if end else clock.map_start)(epoch_ns - off) + off
    return mapped


def autocast_state() -> tuple[bool, Any]:
    """(enabled, dtype) of autocast for device type `hpu` in the current thread."""
    import torch

    enabled = torch.is_autocast_enabled("hpu")
    return enabled, torch.get_autocast_dtype("hpu") if enabled else None
