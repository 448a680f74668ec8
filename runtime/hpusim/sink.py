"""The process-wide in-memory event sink the emulator writes and the capture layer drains.

Events are stored column-wise in plain lists of ints (strings interned to ids), so the hot path
of a host op is a handful of ``list.append`` calls and no per-event object. Rare runtime events
(compile causes, counters) may carry a small payload dict, referenced by index.

Clock: host timestamps are ``time.perf_counter_ns()`` readings (measured); device timestamps are
modeled on the same clock. ``drain()`` converts both to epoch nanoseconds.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Final

KIND_OP: Final = 0  # host op dispatched to the emulated device (Kineto cpu_op)
KIND_RUNTIME: Final = 1  # hpuprof runtime event (compile, launch, sync, fallback, ...)
KIND_DEVICE: Final = 2  # modeled device op on an engine lane
KIND_COUNTER: Final = 3  # counter sample; payload holds {series: value}
KIND_NAMES: Final = ("op", "runtime", "device", "counter")

HPU_EVENTS: Final = (
    "",
    "op",
    "graph_build",
    "compile",
    "launch",
    "fallback",
    "sync",
    "mark_step",
    "graph_capture",
    "graph_replay",
    "cast",
    "dynamo_compile",
    "graph_break",
    "step",
)
"""schema.HpuEvent, in order; the sink stores the index."""
EV: Final[dict[str, int]] = {name: i for i, name in enumerate(HPU_EVENTS)}
EV_OP: Final = EV["op"]

PHASES: Final = ("", "fwd", "bwd", "optimizer", "other")
PHASE_FWD: Final = PHASES.index("fwd")
PHASE_BWD: Final = PHASES.index("bwd")
PHASE_OPTIMIZER: Final = PHASES.index("optimizer")
MODES: Final = ("", "lazy", "eager", "compile")
MODE_LAZY: Final = MODES.index("lazy")
MODE_EAGER: Final = MODES.index("eager")
MODE_COMPILE: Final = MODES.index("compile")
ENGINES: Final = ("", "MME", "TPC", "DMA", "NIC")

COLUMNS: Final = (
    "kind",
    "hpu_event",
    "name",
    "ts_ns",
    "dur_ns",
    "tid",
    "module",
    "phase",
    "mode",
    "dims",
    "types",
    "engine",
    "graph",
    "corr",
    "flops",
    "nbytes",
    "payload",
)
NCOL: Final = len(COLUMNS)


@dataclass(frozen=True)
class EventBatch:
    """Drained events, one list per column (all the same length).

    Args:
        kind: KIND_* code per event.
        hpu_event: index into HPU_EVENTS ("" for host and device ops).
        name: string id (see `strings`): `aten::add`, `compile`, a device op name...
        ts_ns: start, epoch nanoseconds (host measured, device modeled).
        dur_ns: duration in ns (host measured; device and compile durations modeled).
        tid: OS thread id of the host thread (0 for device events).
        module: string id of the nn.Module path ("" = 0).
        phase: index into PHASES. mode: index into MODES. engine: index into ENGINES.
        dims: string id of the compact JSON `Input Dims`. types: id of `Input type` JSON.
        graph: recipe / graph id, -1 when none. corr: launch correlation id, -1 when none.
        flops: modeled FLOPs of a device op. nbytes: modeled bytes moved.
        payload: index into `payloads`, -1 when none.
        strings: the interned string table (ids index it).
        payloads: extra args of rare events (compile causes, counter values...).
        pid: OS process id of the recording process.
        measured_dur_ns: on the projected timeline, each event's measured duration (the
            emulator's own time; `dur_ns` is then projected); None on the measured timeline.
    """

    kind: list[int]
    hpu_event: list[int]
    name: list[int]
    ts_ns: list[int]
    dur_ns: list[int]
    tid: list[int]
    module: list[int]
    phase: list[int]
    mode: list[int]
    dims: list[int]
    types: list[int]
    engine: list[int]
    graph: list[int]
    corr: list[int]
    flops: list[int]
    nbytes: list[int]
    payload: list[int]
    strings: tuple[str, ...]
    payloads: tuple[dict[str, Any], ...]
    pid: int
    measured_dur_ns: list[int] | None = None

    def __len__(self) -> int:
        return len(self.kind)

    def string(self, sid: int) -> str:
        """The text of an interned string id."""
        return self.strings[sid]


class Sink:
    """Column store of emulator events. Not thread-safe across concurrent writers by design:
    the emulated device is driven from the thread that owns the tensors (backward included)."""

    def __init__(self) -> None:
        self.recording: bool = False
        self.project: Any = None
        """`fn(columns)` mapping host timestamps to the projected clock at drain (projection.py)."""
        self._strings: list[str] = [""]
        self._ids: dict[str, int] = {"": 0}
        self._lock = threading.Lock()
        self._clock_offset_ns = time.time_ns() - time.perf_counter_ns()
        self._reset()

    def _reset(self) -> None:
        # one flat row-major list, NCOL values per event: a writer is one `list.extend` of a
        # tuple (the hot path), `drain` slices it into columns
        self._flat: list[Any] = []
        self._put = self._flat.extend
        self._payloads: list[dict[str, Any]] = []

    # --- interning ---------------------------------------------------------------------------
    def intern(self, text: str) -> int:
        """The id of `text` in the string table (stable for the life of the sink)."""
        sid = self._ids.get(text)
        if sid is None:
            with self._lock:
                sid = self._ids.get(text)
                if sid is None:
                    sid = len(self._strings)
                    self._strings.append(text)
                    self._ids[text] = sid
        return sid

    def string(self, sid: int) -> str:
        return self._strings[sid]

    def __len__(self) -> int:
        return len(self._flat) // NCOL

    # --- writers (each puts one row of COLUMNS, in order) -----------------------------------
    def op(
        self,
        name: int,
        ts: int,
        dur: int,
        tid: int,
        module: int,
        phase: int,
        mode: int,
        dims: int,
        types: int,
        graph: int,
        corr: int,
    ) -> None:
        """A host op on the emulated device (Kineto `cpu_op`)."""
        self._put(
            (KIND_OP, EV_OP, name, ts, dur, tid, module, phase, mode, dims, types, 0, graph, corr,
             0, 0, -1)
        )  # fmt: skip

    def op_and_device(
        self,
        name: int,
        ts: int,
        dur: int,
        tid: int,
        module: int,
        phase: int,
        mode: int,
        dims: int,
        types: int,
        graph: int,
        corr: int,
        dev_name: int,
        engine: int,
        dev_ts: int,
        dev_dur: int,
        flops: int,
        nbytes: int,
    ) -> None:
        """A host op and the device op it launched (eager), in one call (the hot path)."""
        self._put(
            (KIND_OP, EV_OP, name, ts, dur, tid, module, phase, mode, dims, types, 0, graph, corr,
             0, 0, -1,
             KIND_DEVICE, 0, dev_name, dev_ts, dev_dur, 0, 0, 0, 0, 0, 0, engine, graph, corr,
             flops, nbytes, -1)
        )  # fmt: skip

    def _payload_id(self, payload: dict[str, Any] | None) -> int:
        if payload is None:
            return -1
        self._payloads.append(payload)
        return len(self._payloads) - 1

    def runtime(
        self,
        hpu_event: str,
        name: str,
        ts: int,
        dur: int = 0,
        *,
        tid: int = 0,
        module: int = 0,
        phase: int = 0,
        mode: int = 0,
        graph: int = -1,
        corr: int = -1,
        payload: dict[str, Any] | None = None,
    ) -> None:
        """An hpuprof runtime event (`schema.HpuEvent` name) with optional extra args.

        This is the documented hook for extensions (HPU graphs, autocast, torch.compile) to
        record their own events: `get_sink().runtime("graph_replay", "HPUGraph.replay", ts)`.
        """
        self._put(
            (KIND_RUNTIME, EV[hpu_event], self.intern(name), ts, dur,
             tid or threading.get_native_id(), module, phase, mode, 0, 0, 0, graph, corr, 0, 0,
             self._payload_id(payload))
        )  # fmt: skip

    def device(
        self,
        name: int,
        engine: int,
        ts: int,
        dur: int,
        graph: int,
        corr: int,
        flops: int,
        nbytes: int,
        payload: dict[str, Any] | None = None,
    ) -> None:
        """A modeled device op on an engine lane (`ENGINES` index), optional extra args."""
        self._put(
            (KIND_DEVICE, 0, name, ts, dur, 0, 0, 0, 0, 0, 0, engine, graph, corr, flops, nbytes,
             self._payload_id(payload))
        )  # fmt: skip

    def counter(self, name: str, ts: int, values: dict[str, float]) -> None:
        """A counter sample (`hpu.recipe_cache_size`, `hpu.memory_in_use_bytes`)."""
        self._put(
            (KIND_COUNTER, 0, self.intern(name), ts, 0, 0, 0, 0, 0, 0, 0, 0, -1, -1, 0, 0,
             self._payload_id(dict(values)))
        )  # fmt: skip

    # --- reader ------------------------------------------------------------------------------
    def drain(self) -> EventBatch:
        """Remove and return every recorded event (timestamps converted to epoch ns)."""
        import os

        with self._lock:
            flat, payloads = self._flat, self._payloads
            self._reset()
            strings = tuple(self._strings)
        cols = [flat[i::NCOL] for i in range(NCOL)]
        off = self._clock_offset_ns
        data = dict(zip(COLUMNS, cols, strict=True))
        if self.project is not None:
            self.project(data, payloads)
        data["ts_ns"] = [t + off for t in data["ts_ns"]]
        return EventBatch(**data, strings=strings, payloads=tuple(payloads), pid=os.getpid())

    def now_epoch_ns(self) -> int:
        """The sink clock (perf_counter_ns, or its projection) mapped to epoch ns, for a
        profiler's base time."""
        now = time.perf_counter_ns()
        if self.project is not None:
            now = self.project.clock.at(now)
        return int(now) + self._clock_offset_ns


_SINK = Sink()


def get_sink() -> Sink:
    """The process-wide sink. Recording is off until switched on (`.recording = True`, or
    `hpusim.enable(record=True)`): a profiler turns it on and drains the sink as it goes."""
    return _SINK
