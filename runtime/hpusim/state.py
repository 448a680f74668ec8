"""The emulator's process-wide mutable state while enabled (one `Runtime`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hpusim.allocator import DeviceAllocator
from hpusim.bridge_log import BridgeLog
from hpusim.device_model import DeviceProfile, DeviceTimeline
from hpusim.env import EnvFlags
from hpusim.projection import HostClock, MeasuredClock, dispatch_overhead_ns
from hpusim.recipe_cache import EAGER_RECIPE_BASE, RecipeCache
from hpusim.sink import MODE_EAGER, MODE_LAZY, Sink, get_sink


@dataclass(frozen=True)
class Config:
    """What `hpusim.config()` reports.

    Args:
        mode: "lazy" or "eager" (torch.compile runs inside either, like the bridge's eager).
        device_profile: modeled device profile name (`gaudi2`, `gaudi3`).
        lazy_source: where the mode came from: "env" (PT_HPU_LAZY_MODE) or "argument".
        timeline: "projected" (host times as a Gaudi host would see them, the default) or
            "measured" (the emulator's own host clock); see projection.py.
        compute: "real" (every op runs on CPU) or "fake" (shapes only: hpuprof predict).
        cards: data-parallel cards the collectives are modeled for.
    """

    mode: str
    device_profile: str
    lazy_source: str
    timeline: str = "projected"
    compute: str = "real"
    cards: int = 1


class Runtime:
    """Mutable emulator state: flags, modeled device, recipe cache, lazy graph, counters."""

    def __init__(self, config: Config, flags: EnvFlags, profile: DeviceProfile) -> None:
        self.config = config
        self.flags = flags
        self.profile = profile
        self.lazy = config.mode == "lazy"
        self.mode_code = MODE_LAZY if self.lazy else MODE_EAGER
        self.sink: Sink = get_sink()
        self.clock: Any = (
            HostClock(gap_overhead_ns=dispatch_overhead_ns(), glue_ns=profile.host_glue_max_ns)
            if config.timeline == "projected"
            else MeasuredClock()
        )
        self.timeline = DeviceTimeline(profile, self.clock, config.cards)
        self.alloc = DeviceAllocator(self, profile.usable_hbm_bytes)
        self.timeline.attach_memory(self.alloc)
        self.fake: Any = None  # the FakeTensorMode of compute="fake"
        self.ledger: Any = None  # predict's step ledger (hpusim.predict)
        self.graph_deps: list[Any] = []  # per pending lazy op: (inputs, outputs) storage ids
        self.gc_pause: Any = None  # projection.GcPause while the clock is projected
        self.plan_log: list[Any] | None = None  # lazy graphs flushed during an HPU-graph capture
        self.cache = RecipeCache()
        self.eager_cache = RecipeCache(first_id=EAGER_RECIPE_BASE)
        self.graph: list[Any] = []  # pending lazy ops: (op key, OpCost)
        self.graph_start_ns = 0
        self.synapse_recipes = 0  # the bridge's recipe-name counter (get_unique_recipe_name)
        self.flushes = 0  # lazy flushes so far (HpuTensor._epoch compares against it)
        self.compound_ops = 0  # top-level ops since the last flush (PT_HPU_MAX_COMPOUND_OP_SIZE)
        self.iteration_graphs = 0  # graphs since the last iter_mark_step (the bridge's counter)
        self.next_corr = 1
        self.mark_steps = 0
        self.step_number = -1
        self.step_start_ns = 0
        self.fallback_counts: dict[str, int] = {}
        self.acquired = False
        self.optimizer_depth = 0
        self.module_stack: list[int] = []
        self.log = BridgeLog(flags.console, flags.log_dir)
        self.saver: Any = None
        self.step_closures: list[tuple[Any, tuple[Any, ...]]] = []
        self.warned_mark_step = False
        self.memory_in_use = 0  # the modeled allocator's bytes in use (allocator.py)
        self.memory_peak = 0
        self.num_allocs = 0  # allocations / frees since the last reset_accumulated_memory_stats
        self.num_frees = 0
        self.total_allocs = 0  # since enable
        self.total_frees = 0
        self.max_alloc_size = 0


def track_alloc(rt: Runtime, t: object, nbytes: int, op: str = "") -> None:
    """A new device storage of `nbytes` held by wrapper `t` (freed when its last wrapper dies:
    `DeviceAllocator.release`, which counts the frees)."""
    rt.alloc.alloc(t, nbytes, op)


def memory_counter(rt: Runtime, ts: int) -> None:
    """Record the `hpu.memory_in_use_bytes` counter (the modeled allocator, allocator.py)."""
    if rt.sink.recording:
        rt.sink.counter("hpu.memory_in_use_bytes", ts, {"bytes": rt.memory_in_use})


RT: Runtime | None = None


def require_runtime() -> Runtime:
    """The active `Runtime`; a RuntimeError saying how to enable the emulator when there is none."""
    if RT is None:
        raise RuntimeError("hpusim is not enabled: call hpusim.enable() first")
    return RT
