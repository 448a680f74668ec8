"""`enable()` and `disable()`: build the `Runtime` from its rooms, install the emulated device
and its extensions, and undo them (see hpusim/__init__.py for the public contract)."""

from __future__ import annotations

import atexit
import gc
import sys

import hpusim.attribution as attribution
import hpusim.bridge_log as bridge_log
import hpusim.composites as composites
import hpusim.device_module as device_module
import hpusim.dispatch as dispatch
import hpusim.distributed as distributed
import hpusim.extensions as extensions
import hpusim.factories as factories
import hpusim.generic_streams as generic_streams
import hpusim.hltv_profile as hltv_profile
import hpusim.host_fake as host_fake
import hpusim.hpu_ops as hpu_ops
import hpusim.metrics as metrics
import hpusim.module_names as module_names
import hpusim.script_builtins as script_builtins
import hpusim.state as state
import hpusim.tensor as tensor
import hpusim.transfers as transfers
from hpusim.allocator import DeviceAllocator
from hpusim.bridge_log import BridgeLog
from hpusim.device_model import DeviceProfile, DeviceTimeline, load_profile
from hpusim.disk_recipe_cache import open_disk_cache
from hpusim.env import EnvFlags, read_flags
from hpusim.fake import make_mode
from hpusim.lazy import HOST_STEP_MARKER, flush
from hpusim.lazy_graph import LazyGraph
from hpusim.lifecycle import run_disable_hooks, run_enable_hooks, shim_path
from hpusim.module_stack import Attribution
from hpusim.projection import (
    BatchProjector,
    GcPause,
    HostClock,
    MeasuredClock,
    dispatch_overhead_ns,
)
from hpusim.recipe_cache import EAGER_RECIPE_BASE, RecipeCache
from hpusim.recorder import Recorder
from hpusim.sink import get_sink
from hpusim.state import Config, Runtime


def build_runtime(config: Config, flags: EnvFlags, profile: DeviceProfile) -> Runtime:
    """A `Runtime` with fresh rooms for `config`."""
    sink = get_sink()
    clock: HostClock | MeasuredClock = MeasuredClock()
    gc_pause = None
    if config.timeline == "projected":
        clock = HostClock(gap_overhead_ns=dispatch_overhead_ns(), glue_ns=profile.host_glue_max_ns)
        gc_pause = GcPause(clock)
    where = Attribution(sink)
    timeline = DeviceTimeline(profile, clock, config.cards)
    alloc = DeviceAllocator(profile.usable_hbm_bytes, where.module_path)
    timeline.attach_memory(alloc)
    return Runtime(
        config,
        flags,
        profile,
        sink=sink,
        events=Recorder(sink),
        clock=clock,
        timeline=timeline,
        alloc=alloc,
        graph=LazyGraph(flags.max_compound_op_size),
        attribution=where,
        cache=RecipeCache(
            dynamic=flags.refine_dynamic_shapes,
            disk=open_disk_cache(flags.recipe_cache, config.device_profile),
        ),
        eager_cache=RecipeCache(first_id=EAGER_RECIPE_BASE),
        log=BridgeLog(flags.console, flags.log_dir),
        fake=make_mode() if config.compute == "fake" else None,
        saver=(
            metrics.Saver(flags.metrics_file, flags.metrics_format, flags.metrics_triggers)
            if flags.metrics_file
            else None
        ),
        gc_pause=gc_pause,
    )


def enable(
    mode: str | None,
    device: str,
    record: bool,
    timeline: str,
    compute: str,
    cards: int,
) -> None:
    """`hpusim.enable` (its arguments checked there)."""
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
            cards,
        ):
            return
        disable()
    cfg = Config(resolved, device, "argument" if mode else "env", timeline, compute, cards)
    bridge_log.reset_levels()
    metrics.install(cache_metrics=flags.cache_metrics)
    rt = build_runtime(cfg, flags, profile)
    hpu_ops.install()  # the bridge's torch.ops.hpu.* (fp8_gemm_v2 among them)
    rt.sink.project = BatchProjector(rt.clock) if rt.clock.projected else None
    if rt.gc_pause is not None:
        gc.callbacks.append(rt.gc_pause)
    rt.sink.recording = record
    dispatch.reset_caches()
    script_builtins.build_table()  # from torch's own functions, before any is replaced
    tensor.install(dispatch.hpu_dispatch, transfers.to_cpu)
    device_module.install()
    generic_streams.install()
    factories.install()
    transfers.install()
    if compute == "fake":
        host_fake.install()  # a model built on the host costs no memory either
    composites.install()
    attribution.install()
    if rt.lazy:
        module_names.install()  # the bridge's, in lazy mode only (torch_overwrites.py:182,281)
    distributed.install_data_parallel()
    state.RT = rt
    shim = str(shim_path())
    if shim not in sys.path:
        sys.path.insert(0, shim)
    atexit.register(_at_exit)
    extensions.install()
    hltv_profile.install(rt.sink)  # HABANA_PROFILE=1: the whole process, an .hltv at exit
    run_enable_hooks()


def disable() -> None:
    """`hpusim.disable`."""
    rt = state.RT
    if rt is None:
        return
    extensions.uninstall()
    run_disable_hooks()
    _release_device(rt)
    if rt.saver is not None:
        rt.saver.process_exit()
        rt.saver.close()
    attribution.uninstall()
    module_names.uninstall()
    distributed.uninstall_data_parallel()
    composites.uninstall()
    transfers.uninstall()
    host_fake.uninstall()
    script_builtins.forget()
    factories.uninstall()
    generic_streams.uninstall()
    device_module.uninstall()
    metrics.uninstall()
    rt.sink.project = None
    pause = rt.gc_pause
    if pause is not None and pause in gc.callbacks:
        gc.callbacks.remove(pause)
    state.RT = None
    shim = str(shim_path())
    while shim in sys.path:
        sys.path.remove(shim)
    atexit.unregister(_at_exit)


def _release_device(rt: Runtime) -> None:
    """Flush a pending lazy graph and log the CPU-fallback summary (at disable and at exit, as
    the bridge does when it releases the device)."""
    if rt.lazy:
        flush(rt, HOST_STEP_MARKER)
    rt.log.release_device()


def _at_exit() -> None:
    if state.RT is not None:
        _release_device(state.RT)
