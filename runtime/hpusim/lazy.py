"""Lazy-mode graph flushes, host syncs and mark_step (gaudi.md 2.5, 4.2).

In lazy mode every device op of the pending graph was already executed on CPU (results are
real); the *device* side is accounted here: at a flush the graph's key is looked up in the
recipe cache, a miss is a modeled compile (GRAPH_COMPILATION + CACHE_MISS, with its cause), a
hit a CACHE_HIT, then the recipe is launched and its ops scheduled on the modeled timeline.
"""

from __future__ import annotations

import sys
from time import perf_counter_ns
from typing import Any

from hpusim import state
from hpusim.metrics import EventDispatcher, EventId, publish
from hpusim.recipe_cache import recipe_name


def call_site() -> str:
    """`file.py:123` of the innermost user frame (outside torch and hpusim)."""
    f: Any = sys._getframe(1)
    while f is not None:
        fn = f.f_code.co_filename
        if (
            "/torch/" not in fn
            and "/hpusim/" not in fn
            and "habana_frameworks" not in fn
            and not fn.startswith("<")
        ):
            return f"{fn.rsplit('/', 1)[-1]}:{f.f_lineno}"
        f = f.f_back
    return ""


def flush(rt: state.Runtime, reason: str) -> int:
    """Close the pending lazy graph: compile or hit, launch, schedule. Returns the recipe id.

    `reason` is the bridge's spelling (`step marker due to <reason>`: `host step marker`,
    `local scalar`, `d2h_maybe_eval`, `non zero`, `cpu fallback`, `H2D copy`, ...); it is
    logged like the bridge's PT_IRGRAPH debug line when `LOG_LEVEL_PT_IRGRAPH` allows."""
    rt.compound_ops = 0
    graph = rt.graph
    if not graph:
        return -1
    rt.graph = []
    rt.flushes += 1
    rt.iteration_graphs += 1
    if rt.flags.irgraph_log and rt.config.mode == "lazy":
        rt.log.step_marker(reason)
    sink = rt.sink
    rec = sink.recording
    now = perf_counter_ns()
    key = tuple(k for k, _ in graph)
    n = len(graph)
    look = rt.cache.lookup(key)
    rid = look.recipe_id
    recipe = recipe_name(rid)
    tl = rt.timeline
    ready = now + rt.profile.launch_latency_ns
    if rec:
        sink.runtime(
            "graph_build",
            "graph_build",
            rt.graph_start_ns,
            now - rt.graph_start_ns,
            mode=rt.mode_code,
            graph=rid,
            payload={"hpuprof.flush_reason": reason, "hpuprof.graph_ops": n},
        )
    bus = EventDispatcher.instance()
    if look.hit:
        if bus.has_subscribers(EventId.CACHE_HIT):
            publish(EventId.CACHE_HIT, [("recipe_id", rt.cache.spec_hash(rid))])
    else:
        comp = tl.compile_ns(n)
        ready += comp
        # the bridge's launcher emits the cache miss, then synapse's compile the compilation
        # (recipe names `.graph_dumps/HabanaFusedOpLazy_<n>`, one counter per process)
        if bus.has_subscribers(EventId.CACHE_MISS):
            publish(EventId.CACHE_MISS, [("recipe_id", rt.cache.spec_hash(rid))])
        publish(
            EventId.GRAPH_COMPILATION,
            [("duration", str(comp // 1000)), ("recipe", bridge_recipe_name(rt))],
        )
        if rec:
            sink.runtime(
                "compile",
                recipe,
                now,
                comp,
                mode=rt.mode_code,
                graph=rid,
                payload={
                    "hpuprof.cause": look.cause,
                    "hpuprof.graph_ops": n,
                    "hpuprof.cache": "miss",
                    "hpuprof.flush_reason": reason,
                    "hpuprof.modeled": True,
                    "hpuprof.call_site": call_site(),
                },
            )
            sink.counter("hpu.recipe_cache_size", now, {"recipes": len(rt.cache)})
    corr = rt.next_corr
    rt.next_corr += 1
    if rec:
        sink.runtime(
            "launch",
            f"launch {recipe}",
            now,
            perf_counter_ns() - now,
            mode=rt.mode_code,
            graph=rid,
            corr=corr,
            payload={"hpuprof.cache": "hit" if look.hit else "miss", "hpuprof.graph_ops": n},
        )
    for _, cost in graph:
        start = tl.schedule(cost.engine, ready, cost.dur)
        ready = start + cost.dur
        if rec:
            sink.device(
                cost.dev_name, cost.engine, start, cost.dur, rid, corr, cost.flops, cost.nbytes
            )
    state.memory_counter(rt, now)
    return rid


def bridge_recipe_name(rt: state.Runtime) -> str:
    """The name synapse compiles a lazy graph under: `.graph_dumps/HabanaFusedOpLazy_<n>`."""
    n = rt.synapse_recipes
    rt.synapse_recipes += 1
    return f".graph_dumps/HabanaFusedOpLazy_{n}"


def host_sync(rt: state.Runtime, reason: str, ts: int) -> None:
    """The host waits for the device (`.item()`, D2H, dynamic op, synchronize)."""
    if rt.lazy:
        flush(rt, reason)
    sink = rt.sink
    if sink.recording:
        now = perf_counter_ns()
        wait = max(0, rt.timeline.idle_at() - now)
        sink.runtime(
            "sync",
            f"sync ({reason})",
            ts,
            now - ts,
            mode=rt.mode_code,
            payload={
                "hpuprof.sync_reason": reason,
                "hpuprof.modeled_wait_ns": wait,
                "hpuprof.call_site": call_site(),
            },
        )


HOST_STEP_MARKER = "host step marker"


def mark_step(device_str: str = "", sync: bool = False) -> None:
    """`htcore.mark_step`: publish MARK_STEP, flush the lazy graph (`host step marker`), run
    the step closures (lazy mode; a no-op that warns once otherwise, as the bridge)."""
    rt = state.require_runtime()
    now = perf_counter_ns()
    if not rt.lazy:
        _warn_lazy_only(rt)
    else:
        publish(EventId.MARK_STEP, [])  # the bridge publishes before its StepMarker
        if rt.flags.irgraph_log and not rt.graph:
            rt.log.step_marker(HOST_STEP_MARKER)  # logged even when nothing is pending
        flush(rt, HOST_STEP_MARKER)
        _run_step_closures(rt)
    rt.mark_steps += 1
    if not rt.lazy:
        state.memory_counter(rt, now)
    if rt.sink.recording:
        rt.sink.runtime(
            "mark_step",
            f"mark_step#{rt.mark_steps}",
            now,
            0,
            mode=rt.mode_code,
            payload={"hpuprof.mark_step": rt.mark_steps},
        )


def iter_mark_step(device_str: str = "") -> None:
    """`htcore.iter_mark_step`: the bridge's `IterStepMarker` resets the per-iteration unique
    graph counter and runs the step closures; it does NOT flush the pending graph."""
    rt = state.require_runtime()
    if not rt.lazy:
        _warn_lazy_only(rt)
        return
    rt.iteration_graphs = 0
    _run_step_closures(rt)


def _run_step_closures(rt: state.Runtime) -> None:
    closures, rt.step_closures = rt.step_closures, []
    for fn, args in closures:
        fn(*args)


def add_step_closure(closure: Any, args: tuple[Any, ...] = ()) -> None:
    """Run `closure(*args)` after the next mark_step (lazy mode)."""
    rt = state.require_runtime()
    if not rt.lazy:
        _warn_lazy_only(rt)  # the bridge: a no-op outside lazy mode
        return
    rt.step_closures.append((closure, tuple(args)))


def _warn_lazy_only(rt: state.Runtime) -> None:
    if not rt.warned_mark_step:
        rt.warned_mark_step = True
        import warnings

        warnings.warn(
            "Calling mark_step function does not have any effect. It's lazy mode only "
            "functionality. (warning logged once)",
            stacklevel=3,
        )
