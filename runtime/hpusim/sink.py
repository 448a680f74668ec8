"""The process-wide in-memory event sink the emulator writes and the capture layer drains.

Events are recorded as small rows of ints (strings interned to ids, what a recurring op's events
share interned once as a template), so the hot path of an eager op is one ``list.extend`` of an
8-tuple and no per-event object; `drain` expands the rows into columns with numpy. Rare runtime
events (compile causes, counters) may carry a small payload dict, referenced by index.

Clock: host timestamps are ``time.perf_counter_ns()`` readings (measured); device timestamps are
modeled on the same clock. ``drain()`` converts both to epoch nanoseconds.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Final

from hpuprof.trace.schema import ENGINE_KINDS, EXECUTION_MODES, HPU_EVENTS, PHASES

KIND_OP: Final = 0  # host op dispatched to the emulated device (Kineto cpu_op)
KIND_RUNTIME: Final = 1  # hpuprof runtime event (compile, launch, sync, fallback, ...)
KIND_DEVICE: Final = 2  # modeled device op on an engine lane
KIND_COUNTER: Final = 3  # counter sample; payload holds {series: value}
KIND_NAMES: Final = ("op", "runtime", "device", "counter")

EV: Final[dict[str, int]] = {name: i for i, name in enumerate(HPU_EVENTS)}
"""`schema.HPU_EVENTS` by name -> the index the sink stores."""
EV_OP: Final = EV["op"]

PHASE_FWD: Final = PHASES.index("fwd")
PHASE_BWD: Final = PHASES.index("bwd")
PHASE_OPTIMIZER: Final = PHASES.index("optimizer")
MODES: Final = EXECUTION_MODES
MODE_LAZY: Final = MODES.index("lazy")
MODE_EAGER: Final = MODES.index("eager")
MODE_COMPILE: Final = MODES.index("compile")
ENGINES: Final = ENGINE_KINDS[:5]
"""The emulator's lanes ("", MME, TPC, DMA, NIC): the first five `schema.ENGINE_KINDS`."""

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


class _ThreadIds(threading.local):
    """The calling thread's OS id (`tid`), read once per thread: `threading.get_native_id()`
    is a system call (about 0.5 us on this project's VM; a thread-local attribute 0.05-0.15
    us). A forked child's surviving thread reads it again (`_watch_forks`)."""

    def __init__(self) -> None:
        self.tid = threading.get_native_id()


THREAD_IDS: Final = _ThreadIds()
"""`THREAD_IDS.tid`: the calling thread's OS id (what `threading.get_native_id()` returns)."""
_WATCHING_FORKS: list[bool] = []


def _watch_forks() -> None:
    """Re-read the thread id in a forked child (registered once, at the first recorded op)."""
    if not _WATCHING_FORKS:
        import os

        _WATCHING_FORKS.append(True)
        os.register_at_fork(after_in_child=_reread_after_fork)


def _reread_after_fork() -> None:
    THREAD_IDS.tid = threading.get_native_id()


ROW: Final = 8
"""Values per recorded row: (template, ts, dur, tid, module, phase, corr, dev_ts)."""
TEMPLATE_FIELDS: Final = (
    "events", "name", "mode", "dims", "types", "graph", "dev_name", "engine", "dev_dur", "flops",
    "nbytes",
)  # fmt: skip
"""A template holds what a recurring op's events share: `events` 1 (the host op) or 2 (the host
op and the device op it launched), then the constant columns of both."""
_FULL_ROW: Final = (-1, 0, 0, 0, 0, 0, 0, 0)
"""The row of an event stored whole (its NCOL values in the sink's `full` list, in order)."""
_T_EVENTS, _T_NAME, _T_MODE, _T_DIMS, _T_TYPES, _T_GRAPH = range(6)
_T_DEV_NAME, _T_ENGINE, _T_DEV_DUR, _T_FLOPS, _T_NBYTES = range(6, 11)


class Sink:
    """Event store of the emulator. Not thread-safe across concurrent writers by design: the
    emulated device is driven from the thread that owns the tensors (backward included).

    Storage (the hot path is one `list.extend` of a small tuple of ints): one flat list of
    `ROW`-value rows. A host op and its eager device op recur with the same name, shapes, recipe
    and modeled cost, so what they share is a *template* (interned once, `TEMPLATE_FIELDS`) and
    a row holds only what changes: (template, ts, dur, tid, module, phase, corr, dev_ts). Rarer
    events (runtime, device, counter) are stored whole, NCOL values in a second list, with a
    `_FULL_ROW` marker in the first so that `drain` restores the recording order."""

    def __init__(self) -> None:
        self.recording: bool = False
        self.project: Any = None
        """`fn(columns, payloads)` mapping host timestamps to the projected clock at drain
        (projection.BatchProjector; `columns` are int64 numpy arrays, changed in place)."""
        self._strings: list[str] = [""]
        self._ids: dict[str, int] = {"": 0}
        self._templates: list[tuple[int, ...]] = []
        self._template_ids: dict[tuple[int, ...], int] = {}
        self._lock = threading.Lock()
        self._clock_offset_ns = time.time_ns() - time.perf_counter_ns()
        self._reset()

    def _reset(self) -> None:
        self._flat: list[int] = []
        self.put = self._flat.extend
        """The hot path's writer: one `ROW`-tuple whose template came from `template()`."""
        self._full: list[Any] = []
        self._put_full = self._full.extend
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

    def template(
        self,
        name: int,
        mode: int,
        dims: int,
        types: int,
        graph: int,
        dev_name: int = -1,
        engine: int = 0,
        dev_dur: int = 0,
        flops: int = 0,
        nbytes: int = 0,
    ) -> int:
        """The id of a host op's template (`dev_name` >= 0: with the device op it launched);
        stable for the life of the sink, so a caller may keep it (dispatch keeps it per op
        cost)."""
        events = 1 if dev_name < 0 else 2
        key = (events, name, mode, dims, types, graph, dev_name, engine, dev_dur, flops, nbytes)
        tid = self._template_ids.get(key)
        if tid is None:
            with self._lock:
                tid = self._template_ids.get(key)
                if tid is None:
                    _watch_forks()
                    tid = len(self._templates)
                    self._templates.append(key)
                    self._template_ids[key] = tid
        return tid

    def __len__(self) -> int:
        """Recorded rows (an eager op's host and device events are one row)."""
        return len(self._flat) // ROW

    # --- writers -----------------------------------------------------------------------------
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
        self.put(
            (self.template(name, mode, dims, types, graph), ts, dur, tid, module, phase, corr, 0)
        )

    def op_and_device(
        self,
        template: int,
        ts: int,
        dur: int,
        tid: int,
        module: int,
        phase: int,
        corr: int,
        dev_ts: int,
    ) -> None:
        """A host op and the device op it launched (eager), from a `template()` with its device
        op; `sink.put` of the same tuple is this without the call (dispatch's hot path)."""
        self.put((template, ts, dur, tid, module, phase, corr, dev_ts))

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
        self._put_full(
            (KIND_RUNTIME, EV[hpu_event], self.intern(name), ts, dur,
             tid or THREAD_IDS.tid, module, phase, mode, 0, 0, 0, graph, corr, 0, 0,
             self._payload_id(payload))
        )  # fmt: skip
        self.put(_FULL_ROW)

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
        self._put_full(
            (KIND_DEVICE, 0, name, ts, dur, 0, 0, 0, 0, 0, 0, engine, graph, corr, flops, nbytes,
             self._payload_id(payload))
        )  # fmt: skip
        self.put(_FULL_ROW)

    def counter(self, name: str, ts: int, values: dict[str, float]) -> None:
        """A counter sample (`hpu.recipe_cache_size`, `hpu.memory_in_use_bytes`)."""
        self._put_full(
            (KIND_COUNTER, 0, self.intern(name), ts, 0, 0, 0, 0, 0, 0, 0, 0, -1, -1, 0, 0,
             self._payload_id(dict(values)))
        )  # fmt: skip
        self.put(_FULL_ROW)

    # --- reader ------------------------------------------------------------------------------
    def drain(self) -> EventBatch:
        """Remove and return every recorded event (timestamps converted to epoch ns)."""
        import os

        with self._lock:
            flat, full, payloads = self._flat, self._full, self._payloads
            self._reset()
            strings = tuple(self._strings)
            templates = list(self._templates)
        cols = expand_rows(flat, full, templates)
        if self.project is not None:
            self.project(cols, payloads)
        cols["ts_ns"] += self._clock_offset_ns
        data = {name: col.tolist() for name, col in cols.items()}
        return EventBatch(**data, strings=strings, payloads=tuple(payloads), pid=os.getpid())

    def now_epoch_ns(self) -> int:
        """The sink clock (perf_counter_ns, or its projection) mapped to epoch ns, for a
        profiler's base time."""
        now = time.perf_counter_ns()
        if self.project is not None:
            now = self.project.clock.pin(now)  # later events map at or after it
        return int(now) + self._clock_offset_ns


def expand_rows(
    flat: list[int], full: list[Any], templates: list[tuple[int, ...]]
) -> dict[str, Any]:
    """The events of recorded rows as one int64 numpy array per column of `COLUMNS`, in
    recording order: a template row gives its host op (and device op), a `_FULL_ROW` the next
    whole event of `full`. Raises ValueError when the two lists disagree (an event
    half-written when the sink was swapped)."""
    import numpy as np

    if len(flat) % ROW or len(full) % NCOL:
        raise ValueError(f"sink rows disagree: {len(flat)} row values, {len(full)} event values")
    # the writers pass ints (EventBatch's columns are ints): int64 holds every one of them
    rows = np.fromiter(flat, dtype=np.int64, count=len(flat)).reshape(-1, ROW)
    whole = np.fromiter(full, dtype=np.int64, count=len(full)).reshape(-1, NCOL)
    tmpl = rows[:, 0]
    is_full = tmpl < 0
    if int(is_full.sum()) != len(whole):
        raise ValueError(
            f"sink rows disagree: {int(is_full.sum())} whole-event rows, {len(whole)} whole events"
        )
    table = np.array(templates, dtype=np.int64).reshape(-1, len(TEMPLATE_FIELDS))
    t = table[np.where(is_full, 0, tmpl)] if len(table) else np.zeros((len(rows), 11), np.int64)
    events = np.where(is_full, 1, t[:, _T_EVENTS])
    first = np.cumsum(events) - events  # each row's first event
    n = int(events.sum())
    out = np.zeros((NCOL, n), dtype=np.int64)
    pos = first[is_full]
    out[:, pos] = whole.T
    ops = ~is_full
    pos, r, t = first[ops], rows[ops], t[ops]
    c = _COL
    out[c["kind"], pos] = KIND_OP
    out[c["hpu_event"], pos] = EV_OP
    out[c["name"], pos] = t[:, _T_NAME]
    out[c["ts_ns"], pos] = r[:, 1]
    out[c["dur_ns"], pos] = r[:, 2]
    out[c["tid"], pos] = r[:, 3]
    out[c["module"], pos] = r[:, 4]
    out[c["phase"], pos] = r[:, 5]
    out[c["mode"], pos] = t[:, _T_MODE]
    out[c["dims"], pos] = t[:, _T_DIMS]
    out[c["types"], pos] = t[:, _T_TYPES]
    out[c["graph"], pos] = t[:, _T_GRAPH]
    out[c["corr"], pos] = r[:, 6]
    out[c["payload"], pos] = -1
    dev = t[:, _T_EVENTS] == 2
    pos, r, t = pos[dev] + 1, r[dev], t[dev]
    out[c["kind"], pos] = KIND_DEVICE
    out[c["name"], pos] = t[:, _T_DEV_NAME]
    out[c["ts_ns"], pos] = r[:, 7]
    out[c["dur_ns"], pos] = t[:, _T_DEV_DUR]
    out[c["engine"], pos] = t[:, _T_ENGINE]
    out[c["graph"], pos] = t[:, _T_GRAPH]
    out[c["corr"], pos] = r[:, 6]
    out[c["flops"], pos] = t[:, _T_FLOPS]
    out[c["nbytes"], pos] = t[:, _T_NBYTES]
    out[c["payload"], pos] = -1
    return {name: out[i] for i, name in enumerate(COLUMNS)}


_COL: Final = {name: i for i, name in enumerate(COLUMNS)}


_SINK = Sink()


def get_sink() -> Sink:
    """The process-wide sink. Recording is off until switched on (`.recording = True`, or
    `hpusim.enable(record=True)`): a profiler turns it on and drains the sink as it goes."""
    return _SINK
