"""Lazy-mode graph flushes, host syncs and mark_step (gaudi.md 2.5, 4.2).

In lazy mode every device op of the pending graph was already executed on CPU (results are
real); the *device* side is accounted here: at a flush the graph's key is looked up in the
recipe cache, a miss is a modeled compile (GRAPH_COMPILATION + CACHE_MISS, with its cause), a
hit a CACHE_HIT, then the recipe is launched and its ops scheduled on the modeled timeline.

`LazyGraph` (lazy_graph.py) is this room's state (the pending graph and the lazy bridge's
counters); other modules change it only through its methods.
"""

from __future__ import annotations

from time import perf_counter_ns
from typing import TYPE_CHECKING, Any, Final

import hpusim.state as state
from hpusim.metrics import EventDispatcher, EventId, publish

if TYPE_CHECKING:
    from hpusim.state import Runtime

HOST_STEP_MARKER = "host step marker"


def flush_host_cost(rt: Runtime, n_ops: int) -> int:
    """Host ns of a lazy flush besides compile: graph hashing and the recipe-cache lookup."""
    p = rt.profile
    cost: int = p.host_flush_base_ns + p.host_flush_per_op_ns * n_ops
    return cost


COLLECTIVE: Final = "collective"
"""The flush before a collective (its inputs): its graph waits for the earlier collectives
whose storages it reads or writes; every other flush's graph waits for every collective issued
before it."""


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
        ready = tl.launch_ready(now + 2)
    else:  # the measured timeline: the device starts after the modeled compile
        launch_ts, launch_dur = now, perf_counter_ns() - now
        ready = now + rt.profile.launch_latency_ns + comp
    corr = events.new_corr()
    events.graph_launch(rid, launch_ts, launch_dur, rt.mode_code, corr, look.hit, n)
    if reason != COLLECTIVE:  # a graph after the collectives reads what they reduced (DDP's
        tl.wait_collectives()  # optimizer step reads the all-reduced gradients)
    else:  # a collective's own flush: it waits for the earlier collectives whose storages it
        # reads or writes (the bridge's lazy collective produces its tensor,
        # lazy_kernels.cpp:5934-5944), not for the others (DDP's buckets overlap the backward)
        tl.wait_collectives_on(frozenset(g for io in deps for side in io for g, _ in side))
    nodes = tl.run_graph(graph, deps, ready, rt.alloc.alive)
    lazy_graph.note_plan(graph, deps, rt.alloc.alive)
    events.device_nodes(nodes, rid, corr)
    if rt.ledger is not None:
        rt.ledger.on_flush(n, look)
    events.memory(now, rt.alloc.in_use)
    return rid


DEVICE_SYNC: Final = "bindings-synchronize_device"
"""`torch.hpu.synchronize()`'s step-marker reason (hpu/csrc/bindings.cpp)."""
STREAM_SYNC: Final = "HPUStream::synchronize userthread"
"""The current stream's `synchronize()`: the bridge only waits (HPUStream.cpp:148-158)."""
EVENT_SYNC: Final = "HPUEvent::synchronize"
"""`Event.synchronize()`: waits for the recorded event, no step marker (HPUEvent.cpp:129-134)."""


def host_sync(rt: Runtime, reason: str, ts: int) -> None:
    """The host waits for the device (`.item()`, D2H, dynamic op, synchronize)."""
    if rt.lazy:
        flush(rt, reason)
    device_wait(rt, reason, ts, reads=reason != DEVICE_SYNC)


def device_wait(rt: Runtime, reason: str, ts: int, reads: bool = False) -> None:
    """The host waits for the work already launched (no lazy flush); `reads`: then reads a
    value back (a small D2H copy and its completion)."""
    tl = rt.timeline
    t = perf_counter_ns()
    wait = tl.host_wait(t)
    if reads:
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


def mark_step(device_str: str = "", sync: bool = False, *, warn: bool = True) -> None:
    """`htcore.mark_step`: publish MARK_STEP, flush the lazy graph (`host step marker`), run
    the step closures (lazy mode; otherwise nothing the script sees, a warning once unless
    `warn` is False). In every mode the call is noted as a step marker for the profiler (the
    trace's mark_step event, a prediction's step boundary)."""
    rt = state.require_runtime()
    now = perf_counter_ns()
    lazy_graph = rt.graph
    if not rt.lazy:
        if warn:
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
