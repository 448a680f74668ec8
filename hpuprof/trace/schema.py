"""The versioned trace model: column names, dtypes, units and category vocabularies.

This module is the single source of truth for what a loaded `Trace` holds. Every loader
normalizes its input into these columns; every analysis, writer and the dashboard read
only these names. Change a column here, bump `SCHEMA_VERSION`, and keep an old fixture in
the tests.

Units: every time is an int64 count of nanoseconds (`ts_ns`, `dur_ns`) on one clock per
trace: epoch nanoseconds where the source gives an epoch (Kineto `baseTimeNanoseconds` or
integer epoch microseconds), otherwise the source's own zero. Sizes are bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final, Literal

SCHEMA_VERSION: Final = 3
"""Written into every saved file (Parquet metadata, Perfetto and JSON exports).

2: the derived columns `op_row`, `dtype`, `flops`, `call_site`, `cause_kind`, `cause`
(`derive.py`); files of version 1 load and get them computed.
3: a column per hpuprof args key (`ARG_COLUMNS`); files of versions 1 and 2 get them read
from their args."""

NO_ID: Final = -1
"""Sentinel for a missing integer key (correlation, stream, parent, step, device, rank)."""

# --- the events table: one row per slice (X, B/E pairs) or instant (i/I) ------------------

_EVENT_TABLE: Final[dict[str, str]] = {
    # raw identity, as in the source
    "name": "category",  # event name, interned
    "cat": "category",  # source category verbatim ("cpu_op", "Kernel", "hpu_op", ...)
    "ph": "category",  # "X" for slices (B/E are paired into X), "i" for instants
    "pid": "category",  # process id as text: Kineto mixes ints and strings ("", "Spans")
    "tid": "category",  # thread / stream / engine lane id as text
    "ts_ns": "int64",  # start, ns
    "dur_ns": "int64",  # duration, ns (0 for instants)
    # normalized, computed once by the loader
    "rank": "int32",  # distributed rank (distributedInfo.rank, file name, or 0)
    "kind": "category",  # closed vocabulary EventKind below
    "is_device": "bool",  # runs on the accelerator (kernel, memcpy, memset, device_op, ...)
    "device": "int32",  # accelerator index for device events, NO_ID on host
    "stream": "int64",  # CUDA stream, or HPU engine lane id; NO_ID on host
    "engine": "category",  # device engine class: EngineKind below ("" on host)
    "correlation": "int64",  # host launch <-> device op join key; NO_ID when none
    "external_id": "int64",  # Kineto "External id" (cpu_op <-> runtime); NO_ID when none
    "depth": "int16",  # nesting depth within its (rank, pid, tid) lane, 0 = top level
    "parent": "int64",  # row index of the enclosing slice in the same lane; NO_ID at top
    "step": "int32",  # ProfilerStep#N / our step marker containing the event; NO_ID outside
    "input_dims": "category",  # record_shapes "Input Dims" as compact JSON text, "" if absent
    "input_types": "category",  # record_shapes "Input type" as compact JSON text, "" if absent
    # hpuprof's own keys (from `hpuprof.*` args, see docs/trace-keys.md); "" / NO_ID if absent
    "mode": "category",  # ExecutionMode
    "module": "category",  # nn.Module path, e.g. "encoder.layers.0.self_attn"
    "phase": "category",  # Phase
    "graph_id": "category",  # recipe / graph / HPU-graph id (real Gaudi recipeId too)
    "hpu_event": "category",  # HpuEvent: our runtime event type
    "flush_reason": "category",  # lazy-mode flush reason in the bridge's vocabulary
    "fallback": "bool",  # op ran on CPU because the device has no kernel for it
    # derived once at load time (derive.py), so analyses never re-parse the raw args
    "op_row": "int64",  # device rows: row index of the host op their time belongs to; NO_ID
    "dtype": "category",  # fp32, bf16, ...: host ops' first float input, device ops' dataType
    "flops": "float64",  # device ops' hpuprof.flops; matmul/conv host ops' flops; NaN unknown
    "call_site": "category",  # hpuprof runtime events: `file.py:123` that triggered them
    "cause_kind": "category",  # compile events: shape, stride, dtype, scalar, new_graph, guard
    "cause": "category",  # compile events: the whole `hpuprof.cause` as compact JSON text
    # the columns of the other hpuprof args keys (ARG_COLUMNS) come here, then
    # lossless raw args: the exact JSON bytes of the event's "args" object (b"" if none)
    "args": "binary",
}

DERIVED_COLUMNS: Final = ("op_row", "dtype", "flops", "call_site", "cause_kind", "cause")
"""Event columns computed from the others by `derive.py` (at load, or when reading v1 files)."""
ROW_COLUMNS: Final = ("parent", "op_row")
"""Event columns holding row indices of the same table: re-based when tables are combined."""

COUNTER_COLUMNS: Final[dict[str, str]] = {
    "name": "category",  # counter track name (the event name)
    "series": "category",  # the key inside args (one row per key per sample)
    "cat": "category",
    "pid": "category",
    "tid": "category",
    "rank": "int32",
    "ts_ns": "int64",
    "value": "float64",
}

FLOW_COLUMNS: Final[dict[str, str]] = {
    "id": "category",  # flow id as text: real ids overflow int64 (uint64 "Comms Id" era)
    "cat": "category",  # "ac2g", "fwdbwd", "async_cpu_to_gpu", "async_gpu", "enqueue", ...
    "name": "category",
    "ph": "category",  # "s", "t", "f"
    "pid": "category",
    "tid": "category",
    "rank": "int32",
    "ts_ns": "int64",
    "binding": "category",  # "bp" ("e" = enclosing slice), "" if absent
}

# --- closed vocabularies --------------------------------------------------------------------

EventKind = Literal[
    "cpu_op",  # ATen / torch op on the host
    "user_annotation",  # record_function scopes, ProfilerStep#N
    "python_function",  # with_stack Python frames
    "runtime",  # host runtime API: cudaLaunchKernel, hip*, mtia_runtime, Synapse host calls
    "kernel",  # device compute (CUDA/ROCm kernel, Gaudi TPC/MME op, MTIA ccp)
    "memcpy",  # device copy
    "memset",  # device set
    "device_op",  # other device activity (Gaudi DMA/NIC lanes, device "Runtime")
    "device_annotation",  # gpu_user_annotation: annotation projected on a device lane
    "sync",  # cuda_sync / host waits on the device
    "collective",  # collective_comm
    "hpu_runtime",  # hpuprof emulator host events: compile, launch, flush, fallback, ...
    "instant",  # ph i / I (memory events, markers)
    "span",  # cat "Trace": the profiler's own span
    "other",
]
EVENT_KINDS: Final[tuple[str, ...]] = EventKind.__args__  # type: ignore[attr-defined]
DEVICE_KINDS: Final = frozenset({"kernel", "memcpy", "memset", "device_op", "device_annotation"})

EngineKind = Literal["", "MME", "TPC", "DMA", "NIC", "ROTATOR", "ARC", "GPU", "OTHER"]
"""Device engine class. Gaudi lanes map by thread name; CUDA/ROCm/MTIA streams are 'GPU'."""
ENGINE_KINDS: Final[tuple[str, ...]] = EngineKind.__args__  # type: ignore[attr-defined]
"""EngineKind in order: the emulator's lanes ("", MME, TPC, DMA, NIC) are its first five."""

ExecutionMode = Literal["", "lazy", "eager", "compile"]
EXECUTION_MODES: Final[tuple[str, ...]] = ExecutionMode.__args__  # type: ignore[attr-defined]
Phase = Literal["", "fwd", "bwd", "optimizer", "other"]
PHASES: Final[tuple[str, ...]] = Phase.__args__  # type: ignore[attr-defined]

HpuEvent = Literal[
    "",
    "op",  # a host op dispatched to the emulated device
    "graph_build",  # lazy graph accumulation closed (a flush)
    "compile",  # recipe compilation (cache miss); args carry the cause
    "launch",  # recipe launch (cache hit or after compile)
    "fallback",  # op ran on CPU
    "sync",  # host waited on the device; args carry the reason
    "mark_step",
    "graph_capture",  # HPU graph capture
    "graph_replay",  # HPU graph replay
    "cast",  # autocast / HMP cast
    "dynamo_compile",  # torch.compile compile or recompile; args carry guard failure
    "graph_break",
    "step",  # our step marker (a training / inference step)
]
HPU_EVENTS: Final[tuple[str, ...]] = HpuEvent.__args__  # type: ignore[attr-defined]
"""HpuEvent in order (the emulator's sink stores the index)."""

FlushReason = Literal[
    "",
    "mark_step",
    "local scalar",  # .item()
    "d2h_maybe_eval",  # .cpu(), print
    "cpu fallback",
    "non zero",
    "unique",
    "op count limit",
    "synchronize",
    "step marker",
]
FLUSH_REASONS: Final[tuple[str, ...]] = FlushReason.__args__  # type: ignore[attr-defined]
"""The lazy flush reasons the analyses know by name (the bridge's words). The vocabulary is
open: the emulator also writes the bridge's other reasons verbatim (`H2D copy`, `collective`,
`HPUGraph::replay`, ...), and the column keeps any text."""

CauseKind = Literal[
    "",
    "new_graph",  # a graph (or frame) never compiled before
    "shape",  # an input's shape changed
    "stride",
    "dtype",
    "scalar",  # a scalar argument baked into the graph changed
    "storage_offset",
    "structure",  # same structure, different graph key
    "guard",  # a dynamo guard failed (its text says which)
    "graph_break",  # dynamo split the frame
]
CAUSE_KINDS: Final[tuple[str, ...]] = CauseKind.__args__  # type: ignore[attr-defined]
"""`kind` of an `hpuprof.cause` object: the `cause_kind` column."""

CacheResult = Literal["", "hit", "miss"]
CACHE_RESULTS: Final[tuple[str, ...]] = CacheResult.__args__  # type: ignore[attr-defined]
CastSource = Literal["", "autocast", "hmp"]
CAST_SOURCES: Final[tuple[str, ...]] = CastSource.__args__  # type: ignore[attr-defined]

HPUPROF_CATEGORY: Final = "hpuprof"
"""The `cat` of hpuprof's runtime events (compile, launch, sync, ...) and counters."""
STEP_MARKER_PREFIX: Final = "Step#"
"""Name prefix of our own step slices (`hpuprof.event` "step"), `Step#N`."""
COUNTERS: Final = ("hpu.recipe_cache_size", "hpu.memory_in_use_bytes")
"""The counter tracks (`ph: C`) the emulator writes."""

# --- source categories, every era ------------------------------------------------------------

KINETO_CATEGORY_KIND: Final[dict[str, str]] = {
    "cpu_op": "cpu_op",
    "Operator": "cpu_op",  # very old traces
    "user_annotation": "user_annotation",
    "gpu_user_annotation": "device_annotation",
    "python_function": "python_function",
    "cuda_runtime": "runtime",
    "cuda_driver": "runtime",
    "Runtime": "runtime",  # pre-Nov-2021, and the Gaudi merged-trace host lane
    "mtia_runtime": "runtime",
    "xpu_runtime": "runtime",
    "xpu_driver": "runtime",
    "privateuse1_runtime": "runtime",
    "privateuse1_driver": "runtime",
    "glow_runtime": "runtime",
    "kernel": "kernel",
    "Kernel": "kernel",
    "mtia_ccp_events": "kernel",
    "cuda_profiler_range": "kernel",
    "gpu_memcpy": "memcpy",
    "Memcpy": "memcpy",
    "gpu_memset": "memset",
    "Memset": "memset",
    "cuda_sync": "sync",
    "xpu_sync": "sync",
    "collective_comm": "collective",
    "cpu_instant_event": "instant",
    "Trace": "span",
    HPUPROF_CATEGORY: "hpu_runtime",
}
"""Source `cat` to EventKind. `hpu_op` is lane-dependent (device lane -> device_op, host ->
runtime) and resolved by the loader, as are categories not listed here ("other")."""

FLOW_CATEGORIES: Final = frozenset(
    {"ac2g", "async_cpu_to_gpu", "async_gpu", "fwdbwd", "enqueue", "critical_path"}
)
LAUNCH_FLOW_CATEGORIES: Final = frozenset({"ac2g", "async_cpu_to_gpu", "async_gpu", "enqueue"})
"""Flows that link a host launch to a device op; the loader turns them into `correlation`."""

GAUDI_DEVICE_PROCESS_PREFIX: Final = "/device:HPU"
GAUDI_ENGINE_PREFIXES: Final[tuple[tuple[str, str], ...]] = (
    # (thread-name prefix after stripping '*' and spaces, EngineKind); first match wins
    ("MME", "MME"),
    ("TPC", "TPC"),
    ("PDMA", "DMA"),
    ("EDMA", "DMA"),
    ("KDMA", "DMA"),
    ("DMA", "DMA"),
    ("NIC", "NIC"),
    ("ROTATOR", "ROTATOR"),
    ("ARC_FARM", "ARC"),
)

STEP_ANNOTATION_PREFIX: Final = "ProfilerStep#"

# --- our own keys inside Chrome-trace args: the contract between writers and the loader ---

ARG_PREFIX: Final = "hpuprof."
"""Our keys inside an event's args are namespaced so other tools ignore them gracefully."""

ArgType = Literal["text", "int", "float", "flag", "json"]
"""How a key's value loads: text (a category, "" absent), int (int64, NO_ID absent), float
(float64, NaN absent), flag (bool, False absent), json (an object kept as compact JSON text)."""

ARG_DTYPES: Final[dict[str, str]] = {
    "text": "category",
    "json": "category",
    "int": "int64",
    "float": "float64",
    "flag": "bool",
}
"""The events column dtype of each `ArgType`."""


@dataclass(frozen=True)
class ArgKey:
    """One key hpuprof writes inside an event's args, and the events column it loads into.

    Writers (the emulator, capture) write `key`; the loader turns it into `column`; analyses
    read only the column. docs/trace-keys.md lists these (a test checks it does).

    Args:
        key: the args key as written, `hpuprof.` + a name.
        column: the events column the loader fills from it.
        type: how the value loads (`ArgType`).
        unit: the column's unit ("ns", "bytes", "count", "FLOP"; "" for none).
        on: which events carry it.
        meaning: what the value says.
        scale: the column holds the written value times this (1000: written in µs, held in ns).
    """

    key: str
    column: str
    type: ArgType
    unit: str
    on: str
    meaning: str
    scale: int = 1

    def __post_init__(self) -> None:
        if not self.key.startswith(ARG_PREFIX):
            raise ValueError(f"{self.key!r}: hpuprof's args keys start with {ARG_PREFIX!r}")

    @property
    def dtype(self) -> str:
        """The events column dtype (`ARG_DTYPES`)."""
        return ARG_DTYPES[self.type]


ARG_EVENT: Final = ArgKey(
    "hpuprof.event",
    "hpu_event",
    "text",
    "",
    "emulated host ops and every hpuprof runtime event",
    "`HpuEvent`: op, graph_build, compile, launch, fallback, sync, mark_step, graph_capture, "
    "graph_replay, cast, dynamo_compile, graph_break, step",
)
ARG_MODE: Final = ArgKey(
    "hpuprof.mode",
    "mode",
    "text",
    "",
    "emulated host ops, runtime events",
    "`ExecutionMode`: lazy, eager, compile",
)
ARG_MODULE: Final = ArgKey(
    "hpuprof.module",
    "module",
    "text",
    "",
    "emulated host ops, runtime events",
    "nn.Module path, e.g. `encoder.layers.0.self_attn`",
)
ARG_PHASE: Final = ArgKey(
    "hpuprof.phase",
    "phase",
    "text",
    "",
    "emulated host ops, runtime events",
    "`Phase`: fwd, bwd, optimizer, other",
)
ARG_GRAPH_ID: Final = ArgKey(
    "hpuprof.graph_id",
    "graph_id",
    "text",
    "",
    "emulated host, runtime and device events",
    "recipe / graph / HPU-graph id (real Gaudi traces: their `recipeId`)",
)
ARG_FLUSH_REASON: Final = ArgKey(
    "hpuprof.flush_reason",
    "flush_reason",
    "text",
    "",
    "graph_build (flush) events",
    "lazy flush reason in the bridge's words (`FLUSH_REASONS`: `mark_step`, `local scalar`, "
    "`d2h_maybe_eval`, `cpu fallback`, `non zero`, `unique`, `op count limit`, `synchronize`, ...)",
)
ARG_FALLBACK: Final = ArgKey(
    "hpuprof.fallback", "fallback", "flag", "", "fallback events", "true when the op ran on CPU"
)
ARG_CAUSE: Final = ArgKey(
    "hpuprof.cause",
    "cause",
    "json",
    "",
    "compile, dynamo_compile, graph_break, graph_capture events",
    'why it compiled: `{"kind": CauseKind, "input", "op_index", "op", "from", '
    '"to", "text"}` (a bare text is a guard failure); its kind is also the `cause_kind` '
    "column",
)
ARG_CALL_SITE: Final = ArgKey(
    "hpuprof.call_site",
    "call_site",
    "text",
    "",
    "compile, sync, dynamo_compile events",
    "`file.py:123` of the user frame that triggered it",
)
ARG_FLOPS: Final = ArgKey(
    "hpuprof.flops",
    "flops",
    "float",
    "FLOP",
    "emulated device ops",
    "modeled floating-point operations (host matmul/conv ops get torch.profiler's `flops`, "
    "else theirs from shapes, in the same column)",
)
ARG_BYTES: Final = ArgKey(
    "hpuprof.bytes", "bytes_moved", "int", "bytes", "emulated device ops", "modeled bytes moved"
)
ARG_MODELED: Final = ArgKey(
    "hpuprof.modeled",
    "modeled",
    "flag",
    "",
    "emulated device events (bridge-shaped traces: API calls too)",
    "true when the duration is modeled by the device model, not measured",
)
ARG_MEASURED_US: Final = ArgKey(
    "hpuprof.measured_us",
    "measured_dur_ns",
    "int",
    "ns",
    "emulated host ops of a projected timeline",
    "the op's own measured duration on the emulating CPU (written in µs)",
    scale=1000,
)
ARG_OP: Final = ArgKey(
    "hpuprof.op",
    "aten_op",
    "text",
    "",
    "fallback, cast events",
    "the ATen op, e.g. `aten::digamma`",
)
ARG_SYNC_REASON: Final = ArgKey(
    "hpuprof.sync_reason",
    "sync_reason",
    "text",
    "",
    "sync, fallback events",
    "why the host waited: `local scalar`, `d2h_maybe_eval`, `synchronize`, `cpu fallback`, ...",
)
ARG_MODELED_WAIT_NS: Final = ArgKey(
    "hpuprof.modeled_wait_ns",
    "modeled_wait_ns",
    "int",
    "ns",
    "sync, fallback events, emulated collectives",
    "modeled time the host (or a collective) waited for the device",
)
ARG_GRAPH_OPS: Final = ArgKey(
    "hpuprof.graph_ops",
    "graph_ops",
    "int",
    "count",
    "graph_build, compile, launch, graph_capture, graph_replay, dynamo_compile events",
    "number of ops in the graph",
)
ARG_CACHE: Final = ArgKey(
    "hpuprof.cache",
    "recipe_cache",
    "text",
    "",
    "compile, launch events",
    "`CacheResult`: hit or miss",
)
ARG_EAGER: Final = ArgKey(
    "hpuprof.eager",
    "eager_compile",
    "flag",
    "",
    "compile events",
    "true for an eager-mode op's compile",
)
ARG_DTYPE_FROM: Final = ArgKey(
    "hpuprof.dtype_from", "dtype_from", "text", "", "cast events", "the dtype cast from (`float32`)"
)
ARG_DTYPE_TO: Final = ArgKey(
    "hpuprof.dtype_to", "dtype_to", "text", "", "cast events", "the dtype cast to (`bfloat16`)"
)
ARG_POLICY: Final = ArgKey(
    "hpuprof.policy",
    "cast_policy",
    "text",
    "",
    "cast events",
    "`lower_precision_fp`, `lower_first_arg`, `fp32`, `promote`, `cpu_mirror` (autocast) or "
    "`bf16_list`, `fp32_list`, `widest_input`, `inplace_first_input`, `O2_fp32` (HMP)",
)
ARG_SOURCE: Final = ArgKey(
    "hpuprof.source", "cast_source", "text", "", "cast events", "`CastSource`: autocast or hmp"
)
ARG_RULE: Final = ArgKey(
    "hpuprof.rule",
    "dtype_rule",
    "text",
    "",
    "cast events of the device's dtype rules",
    "the rule, e.g. `fp64_as_fp32`",
)
ARG_COMPUTED_AS: Final = ArgKey(
    "hpuprof.computed_as",
    "computed_as",
    "text",
    "",
    "cast events of the device's dtype rules",
    "the dtype the device computes in",
)
ARG_COMPILE_ID: Final = ArgKey(
    "hpuprof.compile_id",
    "compile_id",
    "text",
    "",
    "dynamo_compile events",
    "dynamo's compile id (`0/1`)",
)
ARG_FRAME: Final = ArgKey(
    "hpuprof.frame", "compiled_frame", "text", "", "dynamo_compile events", "the compiled frame"
)
ARG_DYNAMIC: Final = ArgKey(
    "hpuprof.dynamic",
    "dynamic_shapes",
    "flag",
    "",
    "dynamo_compile events",
    "true when the compiled graph has symbolic sizes",
)
ARG_SUBGRAPHS: Final = ArgKey(
    "hpuprof.subgraphs",
    "subgraphs",
    "int",
    "count",
    "graph_capture events",
    "sub-graphs split by flushes inside the capture",
)
ARG_DRY_RUN: Final = ArgKey(
    "hpuprof.dry_run", "dry_run", "flag", "", "graph_capture events", "true for a dry-run capture"
)
ARG_STEP: Final = ArgKey(
    "hpuprof.step", "step_marker", "int", "count", "step events", "the number of our step marker"
)
ARG_MARK_STEP: Final = ArgKey(
    "hpuprof.mark_step",
    "mark_steps",
    "int",
    "count",
    "mark_step events",
    "how many mark_step calls the run has made so far",
)

ARGS: Final[tuple[ArgKey, ...]] = (
    ARG_EVENT,
    ARG_MODE,
    ARG_MODULE,
    ARG_PHASE,
    ARG_GRAPH_ID,
    ARG_FLUSH_REASON,
    ARG_FALLBACK,
    ARG_CAUSE,
    ARG_CALL_SITE,
    ARG_FLOPS,
    ARG_BYTES,
    ARG_MODELED,
    ARG_MEASURED_US,
    ARG_OP,
    ARG_SYNC_REASON,
    ARG_MODELED_WAIT_NS,
    ARG_GRAPH_OPS,
    ARG_CACHE,
    ARG_EAGER,
    ARG_DTYPE_FROM,
    ARG_DTYPE_TO,
    ARG_POLICY,
    ARG_SOURCE,
    ARG_RULE,
    ARG_COMPUTED_AS,
    ARG_COMPILE_ID,
    ARG_FRAME,
    ARG_DYNAMIC,
    ARG_SUBGRAPHS,
    ARG_DRY_RUN,
    ARG_STEP,
    ARG_MARK_STEP,
)
"""Every `hpuprof.*` args key, once. Writers import the `ARG_*` constants; the loader makes
each a column."""
ARG_BY_KEY: Final[dict[str, ArgKey]] = {arg.key: arg for arg in ARGS}

ARG_KEYS: Final[dict[str, str]] = {
    arg.column: arg.key
    for arg in (
        ARG_MODE,
        ARG_MODULE,
        ARG_PHASE,
        ARG_GRAPH_ID,
        ARG_EVENT,
        ARG_FLUSH_REASON,
        ARG_FALLBACK,
    )
}
"""Event column -> args key of the keys the scanner reads with the event itself (`columns.py`,
`fastscan.py`); the others are read from the rows that hold them (`derive.py`)."""

ARG_VALUE_KEYS: Final[dict[str, str]] = {
    arg.column: arg.key for arg in (ARG_FLOPS, ARG_BYTES, ARG_MODELED, ARG_MEASURED_US)
}
"""Event column -> args key of the number and flag keys that sit on most rows of the traces
hpuprof writes (every device op: flops, bytes, modeled; every host op of a projected timeline:
its measured time): the scanner reads them with the event too, as the JSON value written
(`columns.py`), and `arg_columns.py` makes them their typed columns, as it does for the keys
read later."""

# --- other profilers' args keys that analyses read -------------------------------------------


@dataclass(frozen=True)
class EventRows:
    """Which events a `SourceKey` is read from: those of any of these kinds or engines, named
    one of `names`, or whose name starts with a match of `name_pattern` (a regex)."""

    kinds: frozenset[str] = frozenset()
    engines: frozenset[str] = frozenset()
    names: frozenset[str] = frozenset()
    name_pattern: str = ""


@dataclass(frozen=True)
class SourceKey:
    """A key that torch.profiler / Kineto writes in events' args and an analysis reads, and
    the events column the loader fills from it (on `rows` only: the others keep `default`).

    Args:
        keys: its spellings across eras; the first one an event holds counts.
        column: the events column.
        type: how the value loads (`ArgType`; a value of another type loads as `default`).
        unit: the column's unit ("" for none).
        rows: the events it is read from.
        meaning: what the value says.
        default: the column's value where the event lacks the key.
    """

    keys: tuple[str, ...]
    column: str
    type: ArgType
    unit: str
    rows: EventRows
    meaning: str
    default: str | int | float | bool

    @property
    def dtype(self) -> str:
        """The events column dtype (`ARG_DTYPES`)."""
        return ARG_DTYPES[self.type]


MEMORY_EVENTS: Final = EventRows(names=frozenset({"[memory]"}))
"""profile_memory=True allocator instants."""
COLLECTIVE_EVENTS: Final = EventRows(
    kinds=frozenset({"collective"}),
    engines=frozenset({"NIC"}),
    names=frozenset({"record_param_comms"}),
    name_pattern=r"c10d::|nccl|rccl|hccl",
)
"""Collective kernels and calls (NCCL/RCCL/HCCL kernels, c10d ops, record_param_comms)."""
WAIT_EVENTS: Final = EventRows(names=frozenset({"Event Sync", "Stream Wait Event"}))
"""CUDA event synchronization markers (`cuda_sync`)."""
COPY_EVENTS: Final = EventRows(
    kinds=frozenset({"memcpy", "memset"}),
    engines=frozenset({"DMA"}),
    name_pattern="Memcpy|Memset|dma",
)
"""Device copies and sets."""

SOURCE_KEYS: Final[tuple[SourceKey, ...]] = (
    SourceKey(("Device Type",), "memory_device_type", "int", "", MEMORY_EVENTS, "c10 DeviceType of the allocation (0: CPU)", 0),
    SourceKey(("Device Id",), "memory_device_id", "int", "", MEMORY_EVENTS, "device index of the allocation", 0),
    SourceKey(("Bytes",), "alloc_bytes", "int", "bytes", MEMORY_EVENTS, "bytes allocated (negative: freed)", 0),
    SourceKey(("Total Allocated",), "total_allocated", "int", "bytes", MEMORY_EVENTS, "the allocator's allocated bytes after the event", 0),
    SourceKey(("Total Reserved",), "total_reserved", "int", "bytes", MEMORY_EVENTS, "the allocator's reserved bytes after the event", NO_ID),
    SourceKey(("Addr",), "alloc_addr", "int", "", MEMORY_EVENTS, "address of the block", 0),
    SourceKey(("Process Group Name", "pg_name"), "process_group", "text", "", COLLECTIVE_EVENTS, "the collective's process group", ""),
    SourceKey(("Seq", "seq"), "collective_seq", "int", "", COLLECTIVE_EVENTS, "the collective's sequence number in its group", NO_ID),
    SourceKey(("Collective name", "collective_name"), "collective_name", "text", "", COLLECTIVE_EVENTS, "allreduce, allgather, ...", ""),
    SourceKey(("wait_on_cuda_event_record_corr_id",), "wait_record_correlation", "int", "", WAIT_EVENTS, "correlation of the cudaEventRecord waited on", NO_ID),
    SourceKey(("wait_on_stream",), "wait_stream", "int", "", WAIT_EVENTS, "the stream of the event waited on", NO_ID),
    SourceKey(("memory bandwidth (GB/s)",), "copy_bandwidth_gbps", "float", "GB/s", COPY_EVENTS, "the copy's bandwidth", math.nan),
    SourceKey(("bytes",), "copy_bytes", "int", "bytes", COPY_EVENTS, "bytes copied or set", NO_ID),
)  # fmt: skip
"""Every other profiler's args key an analysis reads, once (the loader makes each a column)."""

_TYPE_DEFAULTS: Final[dict[str, str | int | float | bool]] = {
    "text": "",
    "json": "",
    "int": NO_ID,
    "float": math.nan,
    "flag": False,
}
ARG_COLUMN_DEFAULTS: Final[dict[str, str | int | float | bool]] = {
    **{arg.column: _TYPE_DEFAULTS[arg.type] for arg in ARGS if arg.column not in _EVENT_TABLE},
    **{key.column: key.default for key in SOURCE_KEYS},
}
"""Each column read from args that has no column of its own above (`aten_op`, `sync_reason`,
`graph_ops`, ..., and those of `SOURCE_KEYS`), and its value on an event without the key."""
ARG_COLUMNS: Final[dict[str, str]] = {
    **{arg.column: arg.dtype for arg in ARGS if arg.column not in _EVENT_TABLE},
    **{key.column: key.dtype for key in SOURCE_KEYS},
}
"""The dtypes of the `ARG_COLUMN_DEFAULTS` columns, read by `arg_columns.py`. Most traces hold
none of them: each is then one broadcast value (no memory per row), and a saved file leaves it
out (reading it back restores it). Analyses take row subsets without them (`without_args`)
and read them at the rows they keep."""

EVENT_COLUMNS: Final[dict[str, str]] = {
    **{name: dtype for name, dtype in _EVENT_TABLE.items() if name != "args"},
    **ARG_COLUMNS,
    "args": "binary",
}
"""Every column of the events table, in order, and its dtype."""


def stored_event_columns(version: int) -> tuple[str, ...]:
    """The event columns a file saved with schema `version` holds (those of `ARG_COLUMNS`
    only where a row has a value: a file may leave any of them out)."""
    left_out = set(ARG_COLUMNS) if version < 3 else set()
    if version < 2:
        left_out.update(DERIVED_COLUMNS)
    return tuple(name for name in EVENT_COLUMNS if name not in left_out)


METADATA_KEY: Final = "hpuprof"
"""Top-level key in our Chrome JSON holding run metadata: {"schema", "device_time": "modeled"
| "measured", "device_profile", "mode", ...}. See docs/trace-keys.md."""

DeviceTimeSource = Literal["measured", "modeled", "none"]
DEVICE_TIME_SOURCES: Final[tuple[str, ...]] = DeviceTimeSource.__args__  # type: ignore[attr-defined]
