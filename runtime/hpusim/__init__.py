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

import os
import sys
from collections.abc import Callable
from pathlib import Path
from time import perf_counter_ns
from typing import Any

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

_on_enable: list[Callable[[], None]] = []
_on_disable: list[Callable[[], None]] = []


def shim_path() -> Path:
    """`runtime/shim`, beside this package in a source/editable checkout."""
    return Path(__file__).resolve().parent.parent / "shim"


def on_enable(fn: Callable[[], None]) -> None:
    """Run `fn()` at every `enable()` (now too, if already enabled)."""
    _on_enable.append(fn)
    if is_enabled():
        fn()


def on_disable(fn: Callable[[], None]) -> None:
    """Run `fn()` at every `disable()`."""
    _on_disable.append(fn)


def is_enabled() -> bool:
    from hpusim import state

    return state.RT is not None


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
    from hpusim import state

    if mode not in (None, "lazy", "eager"):
        raise ValueError(f"mode must be 'lazy', 'eager' or None, not {mode!r}")
    if timeline not in ("projected", "measured"):
        raise ValueError(f"timeline must be 'projected' or 'measured', not {timeline!r}")
    if compute not in ("real", "fake"):
        raise ValueError(f"compute must be 'real' or 'fake', not {compute!r}")
    if int(cards) < 1:
        raise ValueError(f"cards must be >= 1, not {cards!r}")
    from hpusim.device_model import load_profile
    from hpusim.env import read_flags

    profile = load_profile(device)
    flags = read_flags()
    resolved = mode or ("lazy" if flags.lazy else "eager")
    if state.RT is not None:
        cfg = state.RT.config
        if (cfg.mode, cfg.device_profile, cfg.timeline, cfg.compute, cfg.cards) == (
            resolved,
            device,
            timeline,
            compute,
            int(cards),
        ):
            return
        disable()

    from hpusim import (
        attribution,
        composites,
        device_module,
        dispatch,
        distributed,
        factories,
        metrics,
        transfers,
    )
    from hpusim.state import Config, Runtime

    cfg = Config(resolved, device, "argument" if mode else "env", timeline, compute, int(cards))
    rt = Runtime(cfg, flags, profile)
    if compute == "fake":
        from hpusim.fake import make_mode

        rt.fake = make_mode()
    from hpusim.projection import BatchProjector
    from hpusim.transformer_engine import ensure_ops

    ensure_ops()  # the bridge's FP8 GEMM, torch.ops.hpu.fp8_gemm_v2

    rt.sink.project = BatchProjector(rt.clock) if rt.clock.projected else None
    if rt.clock.projected:
        import gc

        from hpusim.projection import GcPause

        rt.gc_pause = GcPause(rt.clock)
        gc.callbacks.append(rt.gc_pause)
    rt.sink.recording = record
    from hpusim import bridge_log

    bridge_log.reset_levels()
    metrics.install(gc_details=flags.gc_details, cache_metrics=flags.cache_metrics)
    if flags.metrics_file:
        rt.saver = metrics.Saver(flags.metrics_file, flags.metrics_format, flags.metrics_triggers)
    dispatch.reset_caches()  # importing dispatch also installs it into HpuTensor
    device_module.install()
    factories.install()
    transfers.install()
    composites.install()
    attribution.install()
    distributed.install_data_parallel()
    state.RT = rt
    shim = str(shim_path())
    if shim not in sys.path:
        sys.path.insert(0, shim)
    import atexit

    atexit.register(_at_exit)
    for fn in list(_on_enable):
        fn()


def disable() -> None:
    """Uninstall the emulated HPU (flushes a pending lazy graph; existing hpu tensors become
    unusable). The shim leaves `sys.path`; already-imported shim modules stay importable."""
    from hpusim import state

    rt = state.RT
    if rt is None:
        return
    for fn in list(_on_disable):
        fn()
    from hpusim import (
        attribution,
        composites,
        device_module,
        distributed,
        factories,
        metrics,
        transfers,
    )

    _flush_pending(rt)
    if rt.saver is not None:
        rt.saver.process_exit()
        rt.saver.close()
    attribution.uninstall()
    distributed.uninstall_data_parallel()
    composites.uninstall()
    transfers.uninstall()
    factories.uninstall()
    device_module.uninstall()
    metrics.uninstall()
    rt.sink.project = None
    pause = getattr(rt, "gc_pause", None)
    if pause is not None:
        import gc

        if pause in gc.callbacks:
            gc.callbacks.remove(pause)
    state.RT = None
    shim = str(shim_path())
    while shim in sys.path:
        sys.path.remove(shim)
    import atexit

    atexit.unregister(_at_exit)


def _flush_pending(rt: Any) -> None:
    """Flush a pending lazy graph and log the CPU-fallback summary (at disable and at exit, as
    the bridge does when it releases the device)."""
    if rt.lazy:
        from hpusim import lazy

        lazy.flush(rt, lazy.HOST_STEP_MARKER)
    from hpusim import bridge_log

    # the bridge logs the summary at critical level when the device is released: written
    # unless PT_FALLBACK's level is above critical (LOG_LEVEL_PT_FALLBACK=6 turns it off)
    if rt.fallback_counts and bridge_log.levels()["PT_FALLBACK"] <= bridge_log.CRITICAL:
        rt.log.fallback_summary(rt.fallback_counts)
    rt.fallback_counts = {}


def _at_exit() -> None:
    from hpusim import state

    if state.RT is not None:
        _flush_pending(state.RT)


def config() -> Any:
    """The active `state.Config` (mode, device_profile), or None when disabled."""
    from hpusim import state

    return state.RT.config if state.RT is not None else None


def run_metadata() -> dict[str, Any]:
    """The `hpuprof` top-level trace metadata for an emulated run (docs/trace-keys.md)."""
    from hpuprof.trace.schema import SCHEMA_VERSION

    cfg = config()
    rank = int(os.environ.get("RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0")))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    try:
        from hpuprof import __version__ as version
    except ImportError:  # pragma: no cover
        version = "0"
    return {
        "schema": SCHEMA_VERSION,
        "version": version,
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
    from hpusim import metrics

    records = metrics.global_records("user")
    return {"records": records, "by_name": {r["metric_name"]: r["statistics"] for r in records}}


def mark_step(device_str: str = "", sync: bool = False) -> None:
    """`htcore.mark_step()`."""
    from hpusim import lazy

    lazy.mark_step(device_str, sync)


def step_marker(name: str | None = None) -> int:
    """Close the current step (if any) and open the next; returns the new step number.

    Steps are `cat: "hpuprof"` slices named `Step#N` with `hpuprof.event: "step"`."""
    from hpusim import state

    rt = state.require_runtime()
    now = perf_counter_ns()
    if rt.step_number >= 0 and rt.sink.recording:
        rt.sink.runtime(
            "step",
            f"Step#{rt.step_number}",
            rt.step_start_ns,
            now - rt.step_start_ns,
            mode=rt.mode_code,
            payload={"hpuprof.step": rt.step_number},
        )
    rt.step_number += 1
    rt.step_start_ns = now
    return rt.step_number


def host_overhead() -> Any:
    """Context manager: the block's measured host time is the emulator's or the profiler's own
    work, removed from the projected host timeline (a no-op on the measured one)."""
    import contextlib

    from hpusim import state

    rt = state.RT
    return rt.clock.pause() if rt is not None else contextlib.nullcontext()


def project_epoch_ns(epoch_ns: int, end: bool = False) -> int:
    """An epoch timestamp measured on this host, on the run's host timeline (projected or
    measured), for events recorded outside the sink (a profiler's step spans). `end` maps an
    interval's end (after a modeled wait at that instant)."""
    from hpusim import state
    from hpusim.sink import get_sink

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


# Extensions (torch.compile `hpu_backend`, Habana autocast, HPU graphs) install with enable().
from hpusim import extensions as _extensions  # noqa: E402

_extensions.register()
