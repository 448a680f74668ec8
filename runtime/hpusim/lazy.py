"""Lazy-mode graph flushes, host syncs and mark_step (gaudi.md 2.5, 4.2).

In lazy mode every device op of the pending graph was already executed on CPU (results are
real); the *device* side is accounted here: at a flush the graph's key is looked up in the
recipe cache, a miss is a modeled compile (GRAPH_COMPILATION + CACHE_MISS, with its cause), a
hit a CACHE_HIT, then the recipe is launched and its ops scheduled on the modeled timeline.

`LazyGraph` is this room's state (the pending graph and the lazy bridge's counters); other
modules change it only through its methods.
"""

from __future__ import annotations

import warnings
from time import perf_counter_ns
from typing import TYPE_CHECKING, Any

import hpusim.state as state
from hpusim.metrics import EventDispatcher, EventId, publish

if TYPE_CHECKING:
    from hpusim.state import Runtime

HOST_STEP_MARKER = "host step marker"


class LazyGraph:
    """The pending lazy graph and the lazy bridge's counters.

    `ops`: the pending ops `(op key, OpCost)` in program order; `deps`: per graphed op, the
    storages it reads and writes (`accounting.after_op`); `flushes`: graphs flushed so far
    (`HpuTensor._epoch` compares against it); `compound_ops`: top-level ops since the last flush
    (`PT_HPU_MAX_COMPOUND_OP_SIZE`); `iteration_graphs`: graphs since the last
    `iter_mark_step` (the bridge's per-iteration counter); `mark_steps`: `mark_step` calls.
    """

    def __init__(self, max_compound_ops: int) -> None:
        self.max_compound_ops = max_compound_ops
        self.ops: list[Any] = []
        self.deps: list[Any] = []
        self.start_ns = 0
        self.flushes = 0
        self.compound_ops = 0
        self.iteration_graphs = 0
        self.mark_steps = 0
        self._bridge_recipes = 0  # the bridge's recipe-name counter (get_unique_recipe_name)
        self._plans: list[Any] | None = None  # graphs flushed during an HPU-graph capture
        self._closures: list[tuple[Any, tuple[Any, ...]]] = []
        self._warned_lazy_only = False

    # --- the pending graph -----------------------------------------------------------------
    def __len__(self) -> int:
        """Ops pending."""
        return len(self.ops)

    def add(self, key: Any, cost: Any, t0: int) -> None:
        """Op `key` (modeled as `cost`), dispatched at `t0`, joins the pending graph."""
        ops = self.ops
        if not ops:
            self.start_ns = t0
        ops.append((key, cost))

    def note_dataflow(self, inputs: Any, outputs: Any) -> None:
        """The storages a graphed op reads and writes (`(gid, bytes)` tuples)."""
        self.deps.append((inputs, outputs))

    def count_op(self) -> bool:
        """One more top-level op since the last flush; whether the compound-op limit is hit."""
        self.compound_ops += 1
        return self.compound_ops >= self.max_compound_ops

    def pending_outputs(self) -> set[int]:
        """The storages the pending graph writes."""
        return {g for _, outs in self.deps for g, _ in outs}

    def take(self) -> tuple[list[Any], list[Any]] | None:
        """Close the pending graph: its (ops, dataflow), or None when nothing is pending."""
        self.compound_ops = 0
        ops = self.ops
        if not ops:
            return None
        deps = self.deps
        self.ops, self.deps = [], []
        self.flushes += 1
        self.iteration_graphs += 1
        return ops, deps

    def set_aside(self) -> tuple[list[Any], list[Any]]:
        """Hold the pending graph apart (an HPU-graph replay runs its own ops meanwhile)."""
        held = self.ops, self.deps
        self.ops, self.deps = [], []
        return held

    def restore(self, held: tuple[list[Any], list[Any]]) -> None:
        """Put back a graph `set_aside` held."""
        self.ops, self.deps = held

    def bridge_recipe_name(self) -> str:
        """The name synapse compiles the next graph under: `.graph_dumps/HabanaFusedOpLazy_<n>`."""
        n = self._bridge_recipes
        self._bridge_recipes += 1
        return f".graph_dumps/HabanaFusedOpLazy_{n}"

    # --- HPU-graph captures: the recipes a replay runs again -------------------------------
    def begin_plans(self) -> None:
        self._plans = []

    def end_plans(self) -> list[Any]:
        """The graphs flushed since `begin_plans` (then no longer collected)."""
        plans, self._plans = self._plans or [], None
        return plans

    def note_plan(self, ops: list[Any], deps: list[Any], alive: Any) -> None:
        """While a capture collects: a flushed graph, with the storages that outlive it."""
        if self._plans is None:
            return
        # what outlives the graph: in an inference capture nothing but its outputs (the
        # capture's own references keep its intermediates alive only in the emulator)
        kept: frozenset[int] = frozenset()
        if _grad_enabled():
            kept = frozenset(g for _, outs in deps for g, _ in outs if alive(g))
        self._plans.append((ops, deps, kept))

    # --- steps -----------------------------------------------------------------------------
    def count_mark_step(self) -> int:
        self.mark_steps += 1
        return self.mark_steps

    def new_iteration(self) -> None:
        """`iter_mark_step`: the per-iteration graph counter starts again."""
        self.iteration_graphs = 0

    def add_closure(self, closure: Any, args: tuple[Any, ...]) -> None:
        self._closures.append((closure, args))

    def run_closures(self) -> None:
        closures, self._closures = self._closures, []
        for fn, args in closures:
            fn(*args)

    def warn_lazy_only(self) -> None:
        """The bridge's warning for a lazy-only call outside lazy mode (logged once)."""
        if not self._warned_lazy_only:
            self._warned_lazy_only = True
            warnings.warn(
                "Calling mark_step function does not have any effect. It's lazy mode only "
                "functionality. (warning logged once)",
                stacklevel=3,
            )


def _grad_enabled() -> bool:
    import torch  # deferred: lazy.py itself loads before torch is needed

    return bool(torch.is_grad_enabled())


def flush_host_cost(rt: Runtime, n_ops: int) -> int:
    """Host ns of a lazy flush besides compile: graph hashing and the recipe-cache lookup."""
    p = rt.profile
    cost: int = p.host_flush_base_ns + p.host_flush_per_op_ns * n_ops
    return cost


def flush(rt: Runtime, reason: str) -> int:
    """Close the pending lazy graph: compile or hit, launch, schedule. Returns the recipe id.

    `reason` is the bridge's spelling (`step marker due to <reason>`: `host step marker`,
    `local scalar`, `d2h_maybe_eval`, `non zero`, `cpu fallback`, `H2D copy`, ...); it is
    logged like the bridge's PT_IRGRAPH debug line when `LOG_LEVEL_PT_IRGRAPH` allows."""
    lazy_graph = rt.graph
    start_ns = lazy_graph.start_ns
    taken = lazy_graph.take()
    if taken is None:
        return -1
    graph, deps = taken
    if rt.flags.irgraph_log and rt.config.mode == "lazy":
        rt.log.step_marker(reason)
    events = rt.events
    now = perf_counter_ns()
    key = tuple(k for k, _ in graph)
    n = len(graph)
    look = rt.cache.lookup(key)
    rid = look.recipe_id
    tl = rt.timeline
    # the bridge hashes the graph and looks its recipe up on the host (projected timeline)
    tl.host_block(now, flush_host_cost(rt, n))
    events.graph_build(start_ns, now, rt.mode_code, rid, reason, n)
    comp = 0
    bus = EventDispatcher.instance()
    if look.hit:
        if bus.has_subscribers(EventId.CACHE_HIT):
            publish(EventId.CACHE_HIT, [("recipe_id", rt.cache.spec_hash(rid))])
    else:
        comp = tl.compile_ns(n)
        tl.host_block(now + 1, comp)  # the compile blocks the host
        # the bridge's launcher emits the cache miss, then synapse's compile the compilation
        # (recipe names `.graph_dumps/HabanaFusedOpLazy_<n>`, one counter per process)
        if bus.has_subscribers(EventId.CACHE_MISS):
            publish(EventId.CACHE_MISS, [("recipe_id", rt.cache.spec_hash(rid))])
        publish(
            EventId.GRAPH_COMPILATION,
            [("duration", str(comp // 1000)), ("recipe", lazy_graph.bridge_recipe_name())],
        )
        events.compile(rid, now + 1, comp, rt.mode_code, look.cause, n, reason)
        events.recipe_cache_size(now, len(rt.cache))
    if tl.clock.projected:  # the launch's modeled host time, after the compile
        tl.host_block(now + 2, rt.profile.host_launch_ns)
        launch_ts, launch_dur = now + 2, 0
        ready = tl.at(now + 2) + rt.profile.launch_latency_ns
    else:  # the measured timeline: the device starts after the modeled compile
        launch_ts, launch_dur = now, perf_counter_ns() - now
        ready = now + rt.profile.launch_latency_ns + comp
    corr = events.new_corr()
    events.graph_launch(rid, launch_ts, launch_dur, rt.mode_code, corr, look.hit, n)
    nodes = tl.run_graph(graph, deps, ready, rt.alloc.alive)
    lazy_graph.note_plan(graph, deps, rt.alloc.alive)
    events.device_nodes(nodes, rid, corr)
    if rt.ledger is not None:
        rt.ledger.on_flush(n, look)
    events.memory(now, rt.alloc.in_use)
    return rid


def host_sync(rt: Runtime, reason: str, ts: int) -> None:
    """The host waits for the device (`.item()`, D2H, dynamic op, synchronize)."""
    if rt.lazy:
        flush(rt, reason)
    tl = rt.timeline
    t = perf_counter_ns()
    wait = tl.host_wait(t)
    if reason != "synchronize":  # the read itself: a small D2H copy and its completion
        tl.host_block(t + 1, rt.profile.host_d2h_ns)
    if rt.sink.recording:
        now = perf_counter_ns()
        if not tl.clock.projected:
            wait = max(0, tl.idle_at() - now)
        rt.events.sync(reason, ts, now - ts, rt.mode_code, wait)


def host_read(reason: str) -> None:
    """print(t) / tolist(): the host reads device memory (a sync; flushes in lazy mode)."""
    rt = state.RT
    if rt is not None:
        host_sync(rt, reason, perf_counter_ns())


def mark_step(device_str: str = "", sync: bool = False) -> None:
    """`htcore.mark_step`: publish MARK_STEP, flush the lazy graph (`host step marker`), run
    the step closures (lazy mode; a no-op that warns once otherwise, as the bridge)."""
    rt = state.require_runtime()
    now = perf_counter_ns()
    lazy_graph = rt.graph
    if not rt.lazy:
        lazy_graph.warn_lazy_only()
    else:
        publish(EventId.MARK_STEP, [])  # the bridge publishes before its StepMarker
        if rt.flags.irgraph_log and not lazy_graph.ops:
            rt.log.step_marker(HOST_STEP_MARKER)  # logged even when nothing is pending
        with rt.clock.pause():  # the emulator's flush work is replaced by its modeled cost
            flush(rt, HOST_STEP_MARKER)
        lazy_graph.run_closures()
    number = lazy_graph.count_mark_step()
    if rt.ledger is not None:
        rt.ledger.on_mark_step()
    if not rt.lazy:
        rt.events.memory(now, rt.alloc.in_use)
    rt.events.mark_step(number, now, rt.mode_code)


def iter_mark_step(device_str: str = "") -> None:
    """`htcore.iter_mark_step`: the bridge's `IterStepMarker` resets the per-iteration unique
    graph counter and runs the step closures; it does NOT flush the pending graph."""
    rt = state.require_runtime()
    if not rt.lazy:
        rt.graph.warn_lazy_only()
        return
    rt.graph.new_iteration()
    rt.graph.run_closures()


def add_step_closure(closure: Any, args: tuple[Any, ...] = ()) -> None:
    """Run `closure(*args)` after the next mark_step (lazy mode)."""
    rt = state.require_runtime()
    if not rt.lazy:
        rt.graph.warn_lazy_only()  # the bridge: a no-op outside lazy mode
        return
    rt.graph.add_closure(closure, tuple(args))
