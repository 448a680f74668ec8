"""The emulator's settings and the active `Runtime` (`RT`, None while disabled): a leaf that every
room may import (the rooms themselves are imported only for typing here)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hpusim.sink import MODE_COMPILE, MODE_EAGER, MODE_LAZY

if TYPE_CHECKING:
    from hpusim.allocator import DeviceAllocator
    from hpusim.bridge_log import BridgeLog
    from hpusim.device_model import DeviceProfile, DeviceTimeline
    from hpusim.env import EnvFlags
    from hpusim.lazy_graph import LazyGraph
    from hpusim.module_stack import Attribution
    from hpusim.recipe_cache import RecipeCache
    from hpusim.recorder import Recorder
    from hpusim.sink import Sink


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
    """The emulator while enabled: its settings and the rooms that own its state.

    Each room keeps its own state and is changed only through its methods: `graph` (lazy.py:
    the pending lazy graph and the lazy bridge's counters), `alloc` (allocator.py: device
    memory and its statistics), `events` (recorder.py: every event written, correlation ids,
    steps), `attribution` (attribution.py: module stack, optimizer phase), `log` (bridge_log.py:
    log lines, fallback counts), `clock` / `timeline` (projection.py, device_model.py), the
    recipe caches (recipe_cache.py). Built by `session.build_runtime`. What stays here is the
    execution mode (`lazy`, `mode_code`; torch.compile graphs run in their own, `compiling`),
    the device acquisition, and the optional observers set at enable (fake compute, metrics
    saver, a prediction's ledger).
    """

    def __init__(
        self,
        config: Config,
        flags: EnvFlags,
        profile: DeviceProfile,
        *,
        sink: Sink,
        events: Recorder,
        clock: Any,
        timeline: DeviceTimeline,
        alloc: DeviceAllocator,
        graph: LazyGraph,
        attribution: Attribution,
        cache: RecipeCache,
        eager_cache: RecipeCache,
        log: BridgeLog,
        fake: Any = None,
        saver: Any = None,
        gc_pause: Any = None,
    ) -> None:
        self.config = config
        self.flags = flags
        self.profile = profile
        self.lazy = config.mode == "lazy"
        self.mode_code = MODE_LAZY if self.lazy else MODE_EAGER
        self.sink = sink
        self.events = events
        self.clock = clock
        self.timeline = timeline
        self.alloc = alloc
        self.graph = graph
        self.attribution = attribution
        self.cache = cache
        self.eager_cache = eager_cache
        self.log = log
        self.fake = fake  # fake.FakeCompute of compute="fake"
        self.saver = saver  # metrics.Saver of the env-driven metrics file
        self.gc_pause = gc_pause  # projection.GcPause while the clock is projected
        self.ledger: Any = None  # predict's step ledger (`attach_ledger`)
        self.acquired = False  # a device tensor was created (`acquire`)

    def acquire(self) -> bool:
        """Note that a device tensor exists; True the first time (DEVICE_ACQUIRED)."""
        first = not self.acquired
        self.acquired = True
        return first

    @contextmanager
    def compiling(self) -> Iterator[None]:
        """A torch.compile graph runs: its ops are one lazy graph in mode `compile`."""
        was = self.lazy, self.mode_code
        self.lazy, self.mode_code = True, MODE_COMPILE
        try:
            yield
        finally:
            self.lazy, self.mode_code = was

    def attach_ledger(self, ledger: Any) -> None:
        """A prediction's step ledger observes the run (`on_op`, `on_flush`, `on_mark_step`)."""
        self.ledger = ledger

    def detach_ledger(self, ledger: Any) -> None:
        if self.ledger is ledger:
            self.ledger = None


RT: Runtime | None = None


def require_runtime() -> Runtime:
    """The active `Runtime`; a RuntimeError saying how to enable the emulator when there is none."""
    if RT is None:
        raise RuntimeError("hpusim is not enabled: call hpusim.enable() first")
    return RT
