"""The one writer of the emulator's events: what each event is called, which payload keys it
carries, and the correlation ids that join a launch to its device ops.

Every room that has something to record calls a method here (`compile`, `sync`, `cast`...)
instead of writing sink rows with its own keys; the sink (sink.py) only stores the rows and the
Kineto export (chrome_events.py) only shapes them. Most methods record nothing while the sink is
not recording; `host_op` and `eager_op` leave that check to their callers (dispatch's per-op
path, which has read it already).
"""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Iterable
from typing import Any, Final

import torch

from hpuprof.trace.schema import (
    ARG_CACHE,
    ARG_CALL_SITE,
    ARG_CAUSE,
    ARG_COMPILE_ID,
    ARG_COMPUTED_AS,
    ARG_DRY_RUN,
    ARG_DTYPE_FROM,
    ARG_DTYPE_TO,
    ARG_DYNAMIC,
    ARG_EAGER,
    ARG_FALLBACK,
    ARG_FLUSH_REASON,
    ARG_FRAME,
    ARG_GRAPH_OPS,
    ARG_MARK_STEP,
    ARG_MODELED,
    ARG_MODELED_WAIT_NS,
    ARG_OP,
    ARG_POLICY,
    ARG_RULE,
    ARG_SOURCE,
    ARG_STEP,
    ARG_SUBGRAPHS,
    ARG_SYNC_REASON,
    COUNTERS,
    STEP_MARKER_PREFIX,
    CacheResult,
    CastSource,
    CauseKind,
)
from hpusim.recipe_cache import recipe_name
from hpusim.sink import ENGINES, THREAD_IDS, Sink

ENGINE_DMA: Final = ENGINES.index("DMA")
ENGINE_NIC: Final = ENGINES.index("NIC")
MEMCPY_LABELS: Final = {
    "h2d": "Memcpy HtoD (Host -> Device)",
    "d2h": "Memcpy DtoH (Device -> Host)",
}
RECIPE_CACHE_SIZE, MEMORY_IN_USE = COUNTERS
"""The counter tracks: the recipe cache's size and the modeled allocator's bytes in use."""
FALLBACK_COPY_LABELS: Final = ("Memcpy DtoH (cpu fallback)", "Memcpy HtoD (cpu fallback)")

TYPE_NAMES: Final[dict[torch.dtype, str]] = {
    torch.float32: "float",
    torch.float64: "double",
    torch.bfloat16: "c10::BFloat16",
    torch.float16: "c10::Half",
    torch.int64: "long int",
    torch.int32: "int",
    torch.int16: "short int",
    torch.int8: "signed char",
    torch.uint8: "unsigned char",
    torch.bool: "bool",
}
"""Kineto's `Input type` spelling of a dtype (C++ type names)."""


def type_name(dtype: torch.dtype) -> str:
    """A dtype as Kineto's `Input type` names it (`float`, `c10::BFloat16`...)."""
    return TYPE_NAMES.get(dtype, str(dtype).replace("torch.", ""))


def input_json(sig: tuple[Any, ...]) -> tuple[str, str]:
    """(`Input Dims`, `Input type`) of an op signature (dispatch.unwrap's), as compact JSON."""
    dims: list[Any] = []
    types: list[Any] = []
    for a in sig:
        if type(a) is tuple and len(a) == 5 and a[0] == "T":
            dims.append(list(a[1]))
            types.append(type_name(a[3]))
        elif (
            type(a) is tuple
            and a
            and all(type(x) is tuple and len(x) == 5 and x[0] == "T" for x in a)
        ):
            dims.append([list(x[1]) for x in a])
            types.append("TensorList")
        elif a is None:
            dims.append([])
            types.append("")
        elif type(a) is tuple:
            dims.append([])
            types.append("ScalarList")
        elif isinstance(a, (int, float, bool)):
            dims.append([])
            types.append("Scalar")
        else:
            dims.append([])
            types.append(type(a).__name__)
    return json.dumps(dims, separators=(",", ":")), json.dumps(types, separators=(",", ":"))


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


def fused_name(sink: Sink, names: tuple[int, ...]) -> str:
    """A fused TPC chain's kernel name: its first ops' device names joined by `+`."""
    parts = [sink.string(n) for n in names[:4]]
    more = f"+{len(names) - 4} more" if len(names) > 4 else ""
    return "fused(" + "+".join(parts) + more + ")"


def _dtype_text(dtype: Any) -> str:
    return str(dtype).replace("torch.", "")


class Recorder:
    """Writes events into `sink` and numbers launches.

    `new_corr()` gives the next correlation id (whether or not the sink records, so ids do not
    depend on when a profiler looked); `step()` closes the current `Step#N` and opens the next.
    """

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self.new_corr = itertools.count(1).__next__
        """The next correlation id (a launch and the device ops it ran share it)."""
        self.step_number = -1
        self._step_start_ns = 0

    # --- host ops (dispatch's per-op path: the caller checks `sink.recording`) -------------
    def host_op(
        self, name: int, cost: Any, t0: int, t1: int, module: int, phase: int, mode: int,
        graph: int = -1, corr: int = -1,
    ) -> None:  # fmt: skip
        """A host op without its own device op (lazy, views, fallbacks, collectives): one sink
        row from a template cached on the op's `cost` (`OpCost.record_host`)."""
        sink = self.sink
        cached = cost.record_host
        if cached[0] == mode and graph == -1:
            tmpl = cached[1]
        else:
            tmpl = sink.template(name, mode, cost.dims, cost.types, graph)
            if graph == -1:
                cost.record_host = (mode, tmpl)
        sink.put((tmpl, t0, t1 - t0, THREAD_IDS.tid, module, phase, corr, 0))

    def eager_op(
        self, name: int, mode: int, cost: Any, t0: int, t1: int, module: int, phase: int,
        corr: int, start: int,
    ) -> None:  # fmt: skip
        """An eager op and the device op it launched: one sink row from a template cached on
        the op's `cost` (`OpCost.record`)."""
        sink = self.sink
        tmpl = cost.record
        if tmpl < 0:
            tmpl = cost.record = sink.template(
                name, mode, cost.dims, cost.types, cost.eager_rid, cost.dev_name, cost.engine,
                cost.dur, cost.flops, cost.nbytes,
            )  # fmt: skip
        sink.put((tmpl, t0, t1 - t0, THREAD_IDS.tid, module, phase, corr, start))

    def op(
        self, name: str, t0: int, dur: int, module: int, phase: int, mode: int, dims: str,
        types: str, corr: int = -1, tid: int = 0,
    ) -> None:  # fmt: skip
        """A host op recorded outside dispatch (factories, transfers)."""
        sink = self.sink
        if not sink.recording:
            return
        sink.op(
            sink.intern(name), t0, dur, tid or THREAD_IDS.tid, module, phase, mode,
            sink.intern(dims), sink.intern(types), -1, corr,
        )  # fmt: skip

    # --- lazy graphs -----------------------------------------------------------------------
    def graph_build(self, start: int, end: int, mode: int, graph: int, reason: str, n: int) -> None:
        if self.sink.recording:
            self.sink.runtime(
                "graph_build",
                "graph_build",
                start,
                end - start,
                mode=mode,
                graph=graph,
                payload={ARG_FLUSH_REASON.key: reason, ARG_GRAPH_OPS.key: n},
            )

    def compile(
        self, graph: int, ts: int, dur: int, mode: int, cause: Any, n: int, reason: str
    ) -> None:
        """A lazy graph's modeled compile (a recipe-cache miss)."""
        if self.sink.recording:
            miss: CacheResult = "miss"
            self.sink.runtime(
                "compile",
                recipe_name(graph),
                ts,
                dur,
                mode=mode,
                graph=graph,
                payload={
                    ARG_CAUSE.key: cause,
                    ARG_GRAPH_OPS.key: n,
                    ARG_CACHE.key: miss,
                    ARG_FLUSH_REASON.key: reason,
                    ARG_MODELED.key: True,
                    ARG_CALL_SITE.key: call_site(),
                },
            )

    def eager_compile(self, recipe: int, ts: int, dur: int, mode: int) -> None:
        """An eager op's first recipe: the eager compiler's modeled compile."""
        if self.sink.recording:
            kind: CauseKind = "new_graph"
            miss: CacheResult = "miss"
            self.sink.runtime(
                "compile",
                recipe_name(recipe),
                ts,
                dur,
                mode=mode,
                graph=recipe,
                payload={
                    ARG_CAUSE.key: {
                        "kind": kind,
                        "text": "first use of this op, dtypes and ranks (eager compiler)",
                    },
                    ARG_GRAPH_OPS.key: 1,
                    ARG_CACHE.key: miss,
                    ARG_MODELED.key: True,
                    ARG_EAGER.key: True,
                },
            )

    def launch(
        self, name: str, ts: int, dur: int, mode: int, corr: int, graph: int = -1,
        payload: dict[str, Any] | None = None,
    ) -> None:  # fmt: skip
        if self.sink.recording:
            self.sink.runtime("launch", name, ts, dur, mode=mode, graph=graph, corr=corr,
                              payload=payload)  # fmt: skip

    def graph_launch(
        self, graph: int, ts: int, dur: int, mode: int, corr: int, hit: bool, n: int
    ) -> None:
        """The launch of a flushed lazy graph's recipe."""
        cache: CacheResult = "hit" if hit else "miss"
        self.launch(
            f"launch {recipe_name(graph)}",
            ts,
            dur,
            mode,
            corr,
            graph,
            {ARG_CACHE.key: cache, ARG_GRAPH_OPS.key: n},
        )

    def device_nodes(self, nodes: Iterable[Any], graph: int, corr: int) -> None:
        """The device ops of a launched graph (`DeviceTimeline.run_graph`'s nodes)."""
        sink = self.sink
        if not sink.recording:
            return
        for name, engine, start, dur, flops, nbytes in nodes:
            sid = name if type(name) is int else sink.intern(fused_name(sink, name))
            sink.device(sid, engine, start, dur, graph, corr, flops, nbytes)

    def recipe_cache_size(self, ts: int, recipes: int) -> None:
        if self.sink.recording:
            self.sink.counter(RECIPE_CACHE_SIZE, ts, {"recipes": recipes})

    def memory(self, ts: int, in_use: int) -> None:
        """The `hpu.memory_in_use_bytes` counter (the modeled allocator)."""
        if self.sink.recording:
            self.sink.counter(MEMORY_IN_USE, ts, {"bytes": in_use})

    # --- syncs and steps -------------------------------------------------------------------
    def sync(self, reason: str, ts: int, dur: int, mode: int, wait_ns: int) -> None:
        if self.sink.recording:
            self.sink.runtime(
                "sync",
                f"sync ({reason})",
                ts,
                dur,
                mode=mode,
                payload={
                    ARG_SYNC_REASON.key: reason,
                    ARG_MODELED_WAIT_NS.key: wait_ns,
                    ARG_CALL_SITE.key: call_site(),
                },
            )

    def mark_step(self, number: int, ts: int, mode: int) -> None:
        if self.sink.recording:
            self.sink.runtime(
                "mark_step",
                f"mark_step#{number}",
                ts,
                0,
                mode=mode,
                payload={ARG_MARK_STEP.key: number},
            )

    def step(self, now: int, mode: int) -> int:
        """Close the current `Step#N` (if any) and open the next; returns its number."""
        if self.step_number >= 0 and self.sink.recording:
            self.sink.runtime(
                "step",
                f"{STEP_MARKER_PREFIX}{self.step_number}",
                self._step_start_ns,
                now - self._step_start_ns,
                mode=mode,
                payload={ARG_STEP.key: self.step_number},
            )
        self.step_number += 1
        self._step_start_ns = now
        return self.step_number

    # --- fallbacks, transfers, collectives -------------------------------------------------
    def fallback(
        self, op: str, t0: int, t1: int, module: int, phase: int, mode: int, corr: int,
        wait_ns: int, copies: Iterable[tuple[int, int, int]],
    ) -> None:  # fmt: skip
        """A CPU fallback and its two modeled copies (`copies`: (start, dur, bytes) of the
        inputs' D2H and the results' H2D)."""
        sink = self.sink
        if not sink.recording:
            return
        sink.runtime(
            "fallback",
            f"cpu fallback {op}",
            t0,
            t1 - t0,
            module=module,
            phase=phase,
            mode=mode,
            corr=corr,
            payload={
                ARG_OP.key: op,
                ARG_FALLBACK.key: True,
                ARG_SYNC_REASON.key: "cpu fallback",
                ARG_MODELED_WAIT_NS.key: wait_ns,
            },
        )
        for label, (start, dur, nbytes) in zip(FALLBACK_COPY_LABELS, copies, strict=True):
            sink.device(sink.intern(label), ENGINE_DMA, start, dur, -1, corr, 0, nbytes)

    def transfer(
        self, name: str, direction: str, elem: torch.Tensor, t0: int, t1: int, module: int,
        phase: int, mode: int, corr: int, start: int, dur: int,
    ) -> None:  # fmt: skip
        """A host<->device copy: the host op and its modeled DMA."""
        sink = self.sink
        if not sink.recording:
            return
        nbytes = elem.numel() * elem.element_size()
        dims = f"[{list(elem.shape)}]".replace(" ", "")
        types = f'["{type_name(elem.dtype)}"]'
        sink.intern(dims)  # (interned before the name, as ever)
        sink.intern(types)
        self.op(name, t0, t1 - t0, module, phase, mode, dims, types, corr)
        sink.device(sink.intern(MEMCPY_LABELS[direction]), ENGINE_DMA, start, dur, -1, corr, 0,
                    nbytes)  # fmt: skip

    def collective(
        self, device_op: str, t1: int, enqueued: int, mode: int, corr: int, ready: int,
        end: int, nbytes: int, kineto_args: dict[str, Any], wait_ns: int,
    ) -> None:  # fmt: skip
        """A collective's `launch hccl_<op>` and its modeled NIC op (with Kineto's collective
        args, `kineto_args`, and the time it waited for the other cards)."""
        sink = self.sink
        if not sink.recording:
            return
        sink.runtime("launch", f"launch {device_op}", t1, max(enqueued - t1, 1), mode=mode,
                     corr=corr)  # fmt: skip
        payload = {**kineto_args, ARG_MODELED_WAIT_NS.key: wait_ns}
        sink.device(sink.intern(device_op), ENGINE_NIC, ready, end - ready, -1, corr, 0, nbytes,
                    payload)  # fmt: skip

    def modeled_collective(self, name: int, start: int, dur: int, nbytes: int) -> None:
        """A modeled collective with no host launch (`predict.modeled_collective`)."""
        if self.sink.recording:
            self.sink.device(name, ENGINE_NIC, start, dur, -1, -1, 0, nbytes)

    # --- dtype rules and casts -------------------------------------------------------------
    def dtype_rule(
        self, op: str, dtype_from: Any, dtype_to: Any, rule: str, computed_as: Any, ts: int,
        mode: int,
    ) -> None:  # fmt: skip
        """A device dtype rule applied (dtype_rules.py): a `cast` event."""
        if self.sink.recording:
            self.sink.runtime(
                "cast",
                f"dtype rule {rule}",
                ts,
                0,
                mode=mode,
                payload={
                    ARG_OP.key: op,
                    ARG_DTYPE_FROM.key: _dtype_text(dtype_from),
                    ARG_DTYPE_TO.key: _dtype_text(dtype_to),
                    ARG_RULE.key: rule,
                    ARG_COMPUTED_AS.key: _dtype_text(computed_as),
                },
            )

    def autocast_cast(
        self, op: str, src: Any, dst: Any, policy: str, source: CastSource, ts: int, dur: int,
        mode: int,
    ) -> None:  # fmt: skip
        """A cast made by autocast or hmp (`source`) under `policy`: a `cast` event."""
        if self.sink.recording:
            self.sink.runtime(
                "cast",
                f"{source} {op}",
                ts,
                dur,
                mode=mode,
                payload={
                    ARG_OP.key: f"aten::{op}",
                    ARG_DTYPE_FROM.key: _dtype_text(src),
                    ARG_DTYPE_TO.key: _dtype_text(dst),
                    ARG_POLICY.key: policy,
                    ARG_SOURCE.key: source,
                },
            )

    # --- HPU graphs and torch.compile ------------------------------------------------------
    def graph_capture(
        self, graph: int, ts: int, dur: int, mode: int, ops: int, subgraphs: int, dry_run: bool
    ) -> None:
        if self.sink.recording:
            self.sink.runtime(
                "graph_capture",
                f"HPUGraph capture {graph}",
                ts,
                dur,
                mode=mode,
                graph=graph,
                payload={
                    ARG_GRAPH_OPS.key: ops,
                    ARG_SUBGRAPHS.key: subgraphs,
                    ARG_DRY_RUN.key: dry_run,
                },
            )

    def graph_replay(self, graph: int, ts: int, dur: int, mode: int, corr: int, ops: int) -> None:
        if self.sink.recording:
            self.sink.runtime(
                "graph_replay",
                f"HPUGraph replay {graph}",
                ts,
                dur,
                mode=mode,
                graph=graph,
                corr=corr,
                payload={ARG_GRAPH_OPS.key: ops, ARG_MODELED.key: True},
            )

    def dynamo_compile(
        self, frame: str, ts: int, dur: int, mode: int, guard_failure: str | None, ops: int,
        compile_id: str, dynamic: bool,
    ) -> None:  # fmt: skip
        """A torch.compile frame compiled: first (`guard_failure` None) or again."""
        if self.sink.recording:
            kind: CauseKind = "new_graph" if guard_failure is None else "guard"
            cause = {"kind": kind, "text": guard_failure or "first compile of this frame"}
            self.sink.runtime(
                "dynamo_compile",
                f"dynamo_compile {frame}" if frame else "dynamo_compile",
                ts,
                dur,
                mode=mode,
                payload={
                    ARG_CAUSE.key: cause,
                    ARG_GRAPH_OPS.key: ops,
                    ARG_COMPILE_ID.key: compile_id,
                    ARG_FRAME.key: frame,
                    ARG_DYNAMIC.key: dynamic,
                },
            )

    def graph_break(self, reason: str, ts: int, mode: int) -> None:
        if self.sink.recording:
            kind: CauseKind = "graph_break"
            self.sink.runtime(
                "graph_break",
                "graph_break",
                ts,
                0,
                mode=mode,
                payload={
                    ARG_CAUSE.key: {
                        "kind": kind,
                        "text": reason.split("\n", 1)[0],
                        "detail": reason,
                    }
                },
            )
