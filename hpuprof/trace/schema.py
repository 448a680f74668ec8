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

from typing import Final, Literal

SCHEMA_VERSION: Final = 2
"""Written into every saved file (Parquet metadata, Perfetto and JSON exports).

2: the derived columns `op_row`, `dtype`, `flops`, `call_site`, `cause_kind`, `cause`
(`derive.py`); files of version 1 load and get them computed."""

NO_ID: Final = -1
"""Sentinel for a missing integer key (correlation, stream, parent, step, device, rank)."""

# --- the events table: one row per slice (X, B/E pairs) or instant (i/I) ------------------

EVENT_COLUMNS: Final[dict[str, str]] = {
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

ExecutionMode = Literal["", "lazy", "eager", "compile"]
Phase = Literal["", "fwd", "bwd", "optimizer", "other"]

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
    "hpuprof": "hpu_runtime",
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

# --- our own keys inside Chrome-trace args and metadata ---------------------------------------

ARG_PREFIX: Final = "hpuprof."
"""Our keys inside an event's args are namespaced so other tools ignore them gracefully."""

ARG_KEYS: Final[dict[str, str]] = {
    "mode": "hpuprof.mode",
    "module": "hpuprof.module",
    "phase": "hpuprof.phase",
    "graph_id": "hpuprof.graph_id",
    "hpu_event": "hpuprof.event",
    "flush_reason": "hpuprof.flush_reason",
    "fallback": "hpuprof.fallback",
}
"""Event column -> args key written by hpuprof's writers and read back by the loader."""

METADATA_KEY: Final = "hpuprof"
"""Top-level key in our Chrome JSON holding run metadata: {"schema", "device_time": "modeled"
| "measured", "device_profile", "mode", ...}. See docs/trace-keys.md."""

DeviceTimeSource = Literal["measured", "modeled", "none"]
