"""Turn drained sink batches into Kineto-shaped Chrome-trace event dicts (docs/trace-keys.md).

Host ops become `cpu_op` slices with `Input Dims` / `Input type`; the emulated card is process
`pid` 0 named `/device:HPU:0` with one thread per engine; runtime events are `cat: "hpuprof"`
with `hpuprof.*` args; launches are linked to their first device op by `ac2g` flows; counters are
`ph: "C"`. Timestamps are float microseconds relative to `base_ns` (ns precision).
"""

from __future__ import annotations

import json
from typing import Any, Final

from hpuprof.trace.schema import (
    ARG_BYTES,
    ARG_EVENT,
    ARG_FLOPS,
    ARG_GRAPH_ID,
    ARG_MEASURED_US,
    ARG_MODE,
    ARG_MODELED,
    ARG_MODULE,
    ARG_PHASE,
    HPU_EVENTS,
    HPUPROF_CATEGORY,
    PHASES,
)
from hpusim.recipe_cache import recipe_name
from hpusim.sink import (
    ENGINES,
    KIND_COUNTER,
    KIND_DEVICE,
    KIND_OP,
    KIND_RUNTIME,
    MODES,
    EventBatch,
)

# the args keys this export writes (hpuprof.trace.schema declares them), bound once
_BYTES: Final = ARG_BYTES.key
_EVENT: Final = ARG_EVENT.key
_FLOPS: Final = ARG_FLOPS.key
_GRAPH_ID: Final = ARG_GRAPH_ID.key
_MEASURED_US: Final = ARG_MEASURED_US.key
_MODE: Final = ARG_MODE.key
_MODELED: Final = ARG_MODELED.key
_MODULE: Final = ARG_MODULE.key
_PHASE: Final = ARG_PHASE.key

DEVICE_PID: Final = 0
DEVICE_PROCESS_NAME: Final = "/device:HPU:0"
BRIDGE_ENGINE_PREFIXES: Final = (
    "**DMA ", "**MME ", "**TPC ",  # Gaudi 1
    "*PDMA", "*EDMA ", "*KDMA", "*MME ", "*TPC ", "*PSOC", "*SM", "*PMMU", "*ROTATOR",
    "*ARC_FARM", "*VIDEO_DECODER", "*NIC ", "*NIC External ", "*NIC Internal ", "**NIC ",
)  # fmt: skip
"""The bridge trace parser's engine types of interest, in its order (1.19
`backend/profiling/trace_sources/trace_parser.cpp:54-75`, `EngineType::getIdx`): the Gaudi 1
entries come first, so on Gaudi 2/3 EDMA is type 4, MME 6, TPC 7 and NIC 14."""


def bridge_engine_tid(prefix: str, engine_index: int = 0) -> int:
    """A lane's tid as the bridge's `EngineDatabase::setLine` writes it (trace_parser.cpp:126):
    `typeIdx * 1000 + engineIndex` (+ the parser's offset, 0)."""
    return BRIDGE_ENGINE_PREFIXES.index(prefix) * 1000 + engine_index


ENGINE_TIDS: Final[dict[str, int]] = {
    "DMA": bridge_engine_tid("*EDMA "),
    "MME": bridge_engine_tid("*MME "),
    "TPC": bridge_engine_tid("*TPC "),
    "NIC": bridge_engine_tid("*NIC "),  # collectives (hpusim.distributed; device_model)
}
"""Lane ids of the emulated Gaudi 2/3 engines (engine 0 of each type): 4000 / 6000 / 7000 /
14000."""
ENGINE_THREAD_NAMES: Final[dict[str, str]] = {
    "MME": "MME 0",
    "TPC": "TPC 0",
    "DMA": "EDMA 0",
    "NIC": "NIC 0",
}
STREAM_HANDLE: Final = "0x1"
"""The one modeled compute stream's handle, as the bridge writes `streamHandle`."""
BRIDGE_LOGS_PID_OFFSET: Final = 20000
SYNAPSE_LOGGER_PID_OFFSET: Final = 10000
_INSTANT_EVENTS: Final = frozenset({"mark_step"})


def _us(ts_ns: int, base_ns: int) -> float:
    return round((ts_ns - base_ns) / 1000.0, 3)


def metadata_events(pid: int) -> list[dict[str, Any]]:
    """Process / thread name metadata (`ph: "M"`) for the host process and the emulated card."""
    out: list[dict[str, Any]] = [
        {
            "name": "process_name",
            "ph": "M",
            "ts": 0.0,
            "pid": pid,
            "tid": 0,
            "args": {"name": "python"},
        },
        {
            "name": "process_name",
            "ph": "M",
            "ts": 0.0,
            "pid": DEVICE_PID,
            "tid": 0,
            "args": {"name": DEVICE_PROCESS_NAME},
        },
        {
            "name": "process_labels",
            "ph": "M",
            "ts": 0.0,
            "pid": DEVICE_PID,
            "tid": 0,
            "args": {"labels": DEVICE_PROCESS_NAME},
        },
        {
            "name": "process_sort_index",
            "ph": "M",
            "ts": 0.0,
            "pid": DEVICE_PID,
            "tid": 0,
            "args": {"sort_index": 0x1000000},
        },
    ]
    for engine, tid in ENGINE_TIDS.items():
        out.append(
            {
                "name": "thread_name",
                "ph": "M",
                "ts": 0.0,
                "pid": DEVICE_PID,
                "tid": tid,
                "args": {"name": ENGINE_THREAD_NAMES[engine]},
            }
        )
        out.append(
            {
                "name": "thread_sort_index",
                "ph": "M",
                "ts": 0.0,
                "pid": DEVICE_PID,
                "tid": tid,
                "args": {"sort_index": -1},
            }
        )
    return out


def to_chrome_events(batch: EventBatch, *, pid: int, base_ns: int) -> list[dict[str, Any]]:
    """Kineto-shaped event dicts for every event in `batch` (metadata not included).

    Args:
        batch: drained events.
        pid: the host process id to write on host events.
        base_ns: epoch ns that becomes `ts` 0.
    """
    out: list[dict[str, Any]] = []
    # correlations with a host start (an op or a launch) in this batch; each gets one flow to
    # its first device op
    started = {
        batch.corr[i]
        for i in range(len(batch.kind))
        if batch.corr[i] >= 0 and batch.kind[i] != KIND_DEVICE
    }
    flowed: set[int] = set()
    parsed = _JsonStrings(batch.strings)
    for i in range(len(batch.kind)):
        kind = batch.kind[i]
        if kind == KIND_OP:
            _host_op(out, batch, i, pid, base_ns, parsed)
        elif kind == KIND_DEVICE:
            _device_op(out, batch, i, base_ns, started, flowed)
        elif kind == KIND_COUNTER:
            out.append(_counter(batch, i, pid, base_ns))
        else:
            _runtime_event(out, batch, i, pid, base_ns)
    return out


class _JsonStrings:
    """Interned strings holding JSON (`Input Dims`, `Input type`), parsed once each."""

    def __init__(self, strings: tuple[str, ...]) -> None:
        self._strings = strings
        self._parsed: dict[int, Any] = {}

    def __call__(self, sid: int) -> Any:
        v = self._parsed.get(sid)
        if v is None:
            text = self._strings[sid]
            v = self._parsed[sid] = json.loads(text) if text else []
        return v


def _host_op(
    out: list[dict[str, Any]], batch: EventBatch, i: int, pid: int, base_ns: int,
    parsed: _JsonStrings,
) -> None:  # fmt: skip
    """A host op: a `cpu_op` slice, and the start of its flow to the device when it launched."""
    ts = _us(batch.ts_ns[i], base_ns)
    corr = batch.corr[i]
    args: dict[str, Any] = {
        "Input Dims": parsed(batch.dims[i]),
        "Input type": parsed(batch.types[i]),
        _EVENT: "op",
    }
    if batch.measured_dur_ns is not None:  # projected timeline: the emulator's own time
        args[_MEASURED_US] = round(batch.measured_dur_ns[i] / 1000.0, 3)
    _common_args(args, batch, i)
    if corr >= 0:
        args["correlation"] = corr
    out.append(
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": batch.strings[batch.name[i]],
            "pid": pid,
            "tid": batch.tid[i],
            "ts": ts,
            "dur": round(batch.dur_ns[i] / 1000.0, 3),
            "args": args,
        }
    )
    if corr >= 0:
        out.append(_flow_start(corr, pid, batch.tid[i], ts))


def _device_op(
    out: list[dict[str, Any]], batch: EventBatch, i: int, base_ns: int, started: set[int],
    flowed: set[int],
) -> None:  # fmt: skip
    """A modeled device op on its engine's lane, and the end of the flow from its launch (the
    first device op of a correlation started on the host in this batch)."""
    ts = _us(batch.ts_ns[i], base_ns)
    name = batch.strings[batch.name[i]]
    graph = batch.graph[i]
    corr = batch.corr[i]
    engine = ENGINES[batch.engine[i]]
    args: dict[str, Any] = {
        "recipeId": graph,
        "recipeName": recipe_name(graph) if graph >= 0 else "",
        "device": 0,
        "correlation": corr,
        "streamHandle": STREAM_HANDLE,
        "eventHandle": _event_handle(corr),
        "dataType": _data_type(name),
        _GRAPH_ID: str(graph),
        _MODELED: True,
        _FLOPS: batch.flops[i],
        _BYTES: batch.nbytes[i],
    }
    if batch.payload[i] >= 0:
        args.update(batch.payloads[batch.payload[i]])
    tid = ENGINE_TIDS.get(engine, ENGINE_TIDS["TPC"])
    out.append(
        {
            "ph": "X",
            "cat": "gpu_memcpy" if engine == "DMA" else "kernel",
            "name": name,
            "pid": DEVICE_PID,
            "tid": tid,
            "ts": ts,
            "dur": round(batch.dur_ns[i] / 1000.0, 3),
            "args": args,
        }
    )
    if corr in started and corr not in flowed:
        flowed.add(corr)
        out.append(
            {
                "ph": "f",
                "bp": "e",
                "cat": "ac2g",
                "name": "ac2g",
                "id": corr,
                "pid": DEVICE_PID,
                "tid": tid,
                "ts": ts,
            }
        )


def _counter(batch: EventBatch, i: int, pid: int, base_ns: int) -> dict[str, Any]:
    p = batch.payload[i]
    values = batch.payloads[p] if p >= 0 else {}
    return {
        "ph": "C",
        "cat": HPUPROF_CATEGORY,
        "name": batch.strings[batch.name[i]],
        "pid": pid,
        "tid": 0,
        "ts": _us(batch.ts_ns[i], base_ns),
        "args": dict(values),
    }


def _runtime_event(
    out: list[dict[str, Any]], batch: EventBatch, i: int, pid: int, base_ns: int
) -> None:
    """An hpuprof runtime event (`cat: "hpuprof"`): a slice, or an instant for a zero-length
    `mark_step`; launches and fallbacks start a flow to their device ops."""
    ts = _us(batch.ts_ns[i], base_ns)
    corr = batch.corr[i]
    hev = HPU_EVENTS[batch.hpu_event[i]]
    args: dict[str, Any] = {_EVENT: hev}
    _common_args(args, batch, i)
    p = batch.payload[i]
    if p >= 0:
        args.update(batch.payloads[p])
    dur_ns = batch.dur_ns[i]
    if corr >= 0:
        args["correlation"] = corr
    name, tid = batch.strings[batch.name[i]], batch.tid[i]
    if hev in _INSTANT_EVENTS and dur_ns == 0:
        out.append(
            {"ph": "i", "s": "t", "cat": HPUPROF_CATEGORY, "name": name, "pid": pid, "tid": tid,
             "ts": ts, "args": args}
        )  # fmt: skip
    else:
        out.append(
            {"ph": "X", "cat": HPUPROF_CATEGORY, "name": name, "pid": pid, "tid": tid, "ts": ts,
             "dur": round(dur_ns / 1000.0, 3), "args": args}
        )  # fmt: skip
    if hev in ("launch", "fallback") and corr >= 0:
        out.append(_flow_start(corr, pid, tid, ts))


_DATA_TYPES = {"bf16": "bf16", "f32": "fp32", "f16": "fp16", "i64": "int64", "i32": "int32"}


def _data_type(device_op: str) -> str:
    """The bridge's `dataType` arg of a device op, from its dtype suffix (`mm_bf16` -> bf16);
    "" for ops without one (DMA copies)."""
    return _DATA_TYPES.get(device_op.rsplit("_", 1)[-1], "")


def _event_handle(corr: int) -> str:
    """The launch's Synapse event handle (`0x…`), one per correlation, as the bridge writes."""
    return f"{max(corr, 0):#x}"


def bridge_category(name: str, engine: str) -> str:
    """The bridge's device category: `Kernel` (TPC / MME), `Memcpy` / `Memset` (by name),
    else `Runtime` (json_file_parser.cpp)."""
    if engine in ("MME", "TPC"):
        return "Kernel"
    low = name.lower()
    if low.startswith("memcpy"):
        return "Memcpy"
    if low.startswith("memset"):
        return "Memset"
    return "Runtime"


def device_properties(profile: Any) -> list[dict[str, Any]]:
    """The bridge's `deviceProperties`: `[{"name": <device name>, "totalGlobalMem": bytes}]`."""
    if profile is None:
        return []
    name = {"gaudi2": "GAUDI2", "gaudi3": "GAUDI3"}.get(profile.name, profile.name.upper())
    return [{"name": name, "totalGlobalMem": int(profile.hbm_gbytes) * (1 << 30)}]


def bridge_metadata(pid: int) -> list[dict[str, Any]]:
    """Process / thread names of the bridge's merged trace: the device, `Bridge Logs`
    (pid + 20000) and `Synapse Logger` (pid + 10000)."""
    out = [e for e in metadata_events(pid) if e["pid"] == DEVICE_PID]
    for offset, label in (
        (BRIDGE_LOGS_PID_OFFSET, "Bridge Logs"),
        (SYNAPSE_LOGGER_PID_OFFSET, "Synapse Logger"),
    ):
        out.append(
            {
                "name": "process_name",
                "ph": "M",
                "ts": 0.0,
                "pid": pid + offset,
                "tid": 0,
                "args": {"name": label},
            }
        )
    return out


_BRIDGE_LOG_NAMES: Final[dict[str, tuple[str, ...]]] = {
    "graph_build": ("SyncTensorsGraphInternal",),
    "launch": ("LaunchSyncTensorsGraph",),
    "graph_replay": ("ExecuteCachedGraph",),
}
_SYNAPSE_NAMES: Final[dict[str, str]] = {
    "launch": "synLaunchWithExternalEvents",
    "graph_replay": "synLaunchWithExternalEvents",
    "sync": "synEventSynchronize",
}


def bridge_events(batch: EventBatch, *, pid: int, base_ns: int) -> list[dict[str, Any]]:
    """The emulated card's side of a merged torch.profiler trace, in the bridge's shape:
    device events (`Kernel`/`Memcpy`/`Runtime` with `recipeId`, `recipeName`, `streamHandle`,
    `eventHandle`, `dataType`, `device`), `Bridge Logs` slices (`SyncTensorsGraphInternal`,
    `LaunchSyncTensorsGraph`, `ExecuteCachedGraph`) and `Synapse Logger` API calls
    (`synLaunchWithExternalEvents`, `synMemCopyAsync`, `synEventSynchronize`). Host ops are
    left out: torch.profiler records them itself."""
    s = batch.strings
    out: list[dict[str, Any]] = []
    bridge_pid, synapse_pid = pid + BRIDGE_LOGS_PID_OFFSET, pid + SYNAPSE_LOGGER_PID_OFFSET
    for i in range(len(batch.kind)):
        kind = batch.kind[i]
        ts = _us(batch.ts_ns[i], base_ns)
        dur = round(batch.dur_ns[i] / 1000.0, 3)
        name = s[batch.name[i]]
        graph, corr = batch.graph[i], batch.corr[i]
        if kind == KIND_DEVICE:
            engine = ENGINES[batch.engine[i]]
            cat = bridge_category(name, engine)
            args: dict[str, Any] = {
                "recipeId": graph,
                "recipeName": recipe_name(graph) if graph >= 0 else "",
                "streamHandle": STREAM_HANDLE,
                "eventHandle": _event_handle(corr),
                "dataType": _data_type(name),
                _MODELED: True,
            }
            if cat == "Kernel":
                args["device"] = 0
            out.append(
                {
                    "ph": "X",
                    "cat": cat,
                    "name": name,
                    "pid": DEVICE_PID,
                    "tid": ENGINE_TIDS.get(engine, ENGINE_TIDS["TPC"]),
                    "ts": ts,
                    "dur": dur,
                    "args": args,
                }
            )
            continue
        tid = batch.tid[i]
        if kind == KIND_OP:
            if batch.dims[i] and "copy" in name and corr >= 0:  # a host<->device transfer
                out.append(_api(synapse_pid, tid, "synMemCopyAsync", ts, dur))
            continue
        if kind != KIND_RUNTIME:
            continue
        hev = HPU_EVENTS[batch.hpu_event[i]]
        for label in _BRIDGE_LOG_NAMES.get(hev, ()):
            out.append(_api(bridge_pid, tid, label, ts, dur, recipe=graph))
        api = _SYNAPSE_NAMES.get(hev)
        if api is not None:
            out.append(_api(synapse_pid, tid, api, ts, dur, recipe=graph))
    return out


def _api(pid: int, tid: int, name: str, ts: float, dur: float, recipe: int = -1) -> dict[str, Any]:
    args: dict[str, Any] = {_MODELED: False}
    if recipe >= 0:
        args["recipeId"] = recipe
    return {
        "ph": "X", "cat": "Runtime", "name": name, "pid": pid, "tid": tid, "ts": ts,
        "dur": dur, "args": args,
    }  # fmt: skip


def _flow_start(corr: int, pid: int, tid: int, ts: float) -> dict[str, Any]:
    return {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": corr, "pid": pid, "tid": tid, "ts": ts}


def _common_args(args: dict[str, Any], batch: EventBatch, i: int) -> None:
    mode = batch.mode[i]
    if mode:
        args[_MODE] = MODES[mode]
    module = batch.module[i]
    if module:
        args[_MODULE] = batch.strings[module]
    phase = batch.phase[i]
    if phase:
        args[_PHASE] = PHASES[phase]
    graph = batch.graph[i]
    if graph >= 0:
        args[_GRAPH_ID] = str(graph)
