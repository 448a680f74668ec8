"""HPU graphs on the emulated device (gaudi.md 3): `HPUGraph`, `graph`, `wrap_in_hpu_graph`,
`wrap_in_hpu_graph_func`, `ModuleCacher`, `make_graphed_callables`, `input_hash`.

Capture: a `TorchDispatchMode` pushed only while capturing records every device op (function,
the very argument and output tensors, its op key); the ops really run (in lazy mode they flush
into recipes at `capture_end`, compiled on first use as the bridge compiles a capture). A flush
inside the capture (`.item()`, D2H, `nonzero`...) starts a new sub-graph, as the bridge's
`SingleHPUGraph`s. CPU fallback during capture raises the bridge's error.

Replay (`HPUGraph.replay`): the recorded ops are re-executed on the inner CPU tensors in their
recorded order and every fresh output is written in place into the captured output tensor, so
static inputs/outputs behave as on the device: a replay sees new values copied into the static
inputs, returns no new tensors, and does NOT re-run Python control flow (data-dependent branches
stay as captured, exactly the documented limitation). In the MODELED timeline a replay is one
`graph_replay` event (one launch) followed by the captured device ops; no per-op host dispatch
events are written for it.

Training-side caches (`ModuleCacher`, `make_graphed_callables`) need autograd, so a "replay"
there runs the module's forward for its values with per-op host recording suppressed and the
lazy graph untouched, and writes the same `graph_replay` + device ops; the backward pass is not
graph-replayed in the model (it is recorded op by op).

Availability mirrors the bridge: `habana_frameworks.torch.hpu` exports these names only in lazy
mode (`PT_HPU_LAZY_MODE=1`), so in eager mode `ht.hpu.wrap_in_hpu_graph` is an AttributeError.
"""

from __future__ import annotations

import copy
import functools
import gc
import inspect
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from time import perf_counter_ns
from typing import Any, Final

import hpusim.device_module as device_module
import hpusim.dispatch as dispatch
import hpusim.state as state
from hpusim.hpex import unavailable
from hpusim.lazy import flush, mark_step
from hpusim.tensor import HpuTensor

HPUGRAPH_ID_BASE: Final = 1 << 24
"""HPU-graph ids start here, apart from lazy recipe ids and eager recipe ids."""

CPU_FALLBACK_ERROR: Final = "cpu fallback is not supported during hpu graph capturing"
COLLECTIVE_ERROR: Final = "collective nonSFG is not supported during hpu graph capturing"
"""ProcessGroupHCCL::collective's assert; lazy collectives (PT_HPU_ENABLE_LAZY_COLLECTIVES)
go through ProcessGroupLazyHCCL, which records them into the graph instead."""


def _lazy_collectives() -> bool:
    return os.environ.get("PT_HPU_ENABLE_LAZY_COLLECTIVES", "false").lower() in ("true", "1")


_FATAL: Final = "[Rank:{rank}] FATAL ERROR :: MODULE:PT_DEVICE {msg}"
CAPTURE_IN_PROGRESS: Final = "GRAPH:: graph Capture already in progress"
USER_INPUTS_OUTSIDE: Final = "GRAPH:: mark_user_inputs must be while capturing in progress"
USER_OUTPUTS_TWICE: Final = "Error:mark_user_outputs is called more than once for the same graph?"
HOOKS_ERROR: Final = (
    "Modules must not have hooks registered at the time they are passed. However, registering "
    "hooks on modules after passing them through make_graphed_callables is allowed."
)
BUFFERS_ERROR: Final = (
    "In any :class:`~torch.nn.Module` passed to :func:`~make_graphed_callables`, only "
    "parameters may be trainable. All buffers must have ``requires_grad=False``."
)
SAMPLE_ARGS_ERROR: Final = (
    "In the beta API, sample_args for each callable must be a tuple of Tensors. Other types "
    "and keywordargs are not allowed."
)

_NAMES: Final = (
    "CachedParams",
    "HPUGraph",
    "graph",
    "wrap_in_hpu_graph",
    "wrap_in_hpu_graph_func",
    "ModuleCacher",
    "make_graphed_callables",
    "input_hash",
    "is_current_stream_capturing",
    "copy_to",
    "extract_tensors",
    "get_tensor_info",
    "get_user_input_tensor_list",
    "hpu_graph_print",
    "stringify",
    "GraphModel",
    "TensorPacker",
    "wrapped_hpugraph_forward",
)


def fatal(msg: str) -> RuntimeError:
    """The bridge's fatal-error text for `msg` (`[Rank:0] FATAL ERROR :: MODULE:PT_DEVICE ...`)."""
    rank = os.environ.get("RANK", "0")
    return RuntimeError(_FATAL.format(rank=rank, msg=msg))


class _Counter:
    next_id = HPUGRAPH_ID_BASE
    capturing: Any = None  # the HPUGraph being captured


def is_current_stream_capturing() -> bool:
    return _Counter.capturing is not None


# --- input hash --------------------------------------------------------------------------


def _hash_key(obj: Any) -> Any:
    """A hashable structural key (shape, strides, offset, dtype): the emulator's own caches."""
    import torch

    if isinstance(obj, torch.Tensor):
        return ("T", tuple(obj.shape), obj.stride(), obj.storage_offset(), obj.dtype)
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__, tuple(_hash_key(o) for o in obj))
    if isinstance(obj, dict):
        return ("dict", tuple((_hash_key(k), _hash_key(v)) for k, v in obj.items()))
    try:
        hash(obj)
    except TypeError:
        return repr(obj)
    return obj


def view_hash(t: Any) -> int:
    """The bridge's `get_view_hash`: 0 for a tensor that is not a view; else a hash of its view
    parameters (the bridge hashes the chain of strided views down to the base tensor)."""
    base = getattr(t, "_base", None)
    if base is None:
        return 0
    return hash((tuple(t.shape), t.stride(), t.storage_offset(), view_hash(base)))


def input_hash(obj: Any) -> int:
    """The bridge's HPU-graph cache key (graphs.py `input_hash`): a tensor is its shape and
    view hash (NOT its dtype), sequences and dicts recurse, anything else is its value, each
    combined with whether hpu autocast is on."""
    import collections

    import torch

    autocast = bool(torch.is_autocast_enabled("hpu"))
    if isinstance(obj, dict):
        return input_hash(tuple(obj.items()))
    if isinstance(obj, list) or (isinstance(obj, tuple) and not isinstance(obj, torch.Size)):
        return hash((tuple(input_hash(el) for el in obj), autocast))
    if isinstance(obj, torch.Tensor):
        return hash((obj.shape, view_hash(obj), autocast))
    if isinstance(obj, collections.UserDict):
        return hash(tuple((k, tuple(v)) for k, v in obj.items()))
    return hash((obj, autocast))


def stringify(*args: Any) -> str:
    return "".join(" " + str(a) for a in args)


def hpu_graph_print(msg: Any) -> None:
    print(msg)


def copy_to(dst: Any, src: Any) -> None:
    """Copy a nested structure of tensors into another of the same structure."""
    import torch

    if type(dst) is not type(src):
        raise AssertionError(f"copy_to: {type(dst).__name__} vs {type(src).__name__}")
    if isinstance(dst, dict):
        for (dk, dv), (sk, sv) in zip(dst.items(), src.items(), strict=False):
            if dk != sk:
                raise AssertionError(f"copy_to: key {dk!r} vs {sk!r}")
            copy_to(dv, sv)
    elif isinstance(dst, list) or (isinstance(dst, tuple) and not isinstance(dst, torch.Size)):
        for d, s_ in zip(dst, src, strict=False):
            copy_to(d, s_)
    elif isinstance(dst, torch.Tensor):
        dst.copy_(src, non_blocking=True)


def get_user_input_tensor_list(inputs: Any, tlist: tuple[Any, ...]) -> tuple[Any, ...]:
    import torch

    if isinstance(inputs, dict):
        for item in inputs.items():
            tlist = get_user_input_tensor_list(item, tlist)
    elif isinstance(inputs, (list, tuple)):
        for item in inputs:
            tlist = get_user_input_tensor_list(item, tlist)
    elif isinstance(inputs, torch.Tensor):
        tlist = (*tlist, inputs)
    return tlist


def extract_tensors(data: Any) -> list[Any]:
    """Every tensor inside a nested structure (lists, tuples, dicts, object attributes)."""
    import torch

    if isinstance(data, torch.Tensor):
        return [data]
    if isinstance(data, (list, tuple)):
        return [t for item in data for t in extract_tensors(item)]
    if isinstance(data, dict):
        return [t for v in data.values() for t in extract_tensors(v)]
    if hasattr(data, "__dict__"):
        return [t for v in vars(data).values() for t in extract_tensors(v)]
    return []


def get_tensor_info(tensor: Any) -> dict[str, Any]:
    return {"shape": tensor.shape, "dtype": tensor.dtype, "device": tensor.device}


def _internal(name: str) -> Any:
    return unavailable(
        f"habana_frameworks.torch.hpu.{name}",
        "an internal of the bridge's wrap_in_hpu_graph, which the emulator implements itself",
    )


GraphModel = _internal("GraphModel")


class TensorPacker:
    """Flattens nested outputs (tuples, lists, dicts of tensors) into a tuple of tensors and a
    metadata tree whose leaves print as `#<index>`, and rebuilds them (the bridge's
    `hpu.TensorPacker`, which its HPU-graph wrappers use for inputs and outputs)."""

    class Index:
        """A tensor's place in the packed tuple."""

        def __init__(self, value: int) -> None:
            self.value = value

        def __repr__(self) -> str:
            return f"#{self.value:d}"

    def __init__(self, is_out_pack: bool = False, verbose: bool = False) -> None:
        self._is_out_pack = is_out_pack
        self._verbose = verbose

    def pack(self, outs: Any) -> tuple[tuple[Any, ...], Any]:
        """(the tensors in order of appearance, the metadata tree)."""
        tensors: list[Any] = []
        metadata = self._pack(outs, tensors)
        return tuple(tensors), metadata

    def _pack(self, item: Any, tensors: list[Any]) -> Any:
        import torch

        if torch.is_tensor(item):
            tensors.append(item)
            return self.Index(len(tensors) - 1)
        if isinstance(item, tuple):
            return tuple(self._pack(x, tensors) for x in item)
        if isinstance(item, (list, dict)):  # a copy keeps the container's type (OrderedDict...)
            packed = copy.copy(item)
            for key in range(len(item)) if isinstance(item, list) else item:
                packed[key] = self._pack(item[key], tensors)
            return packed
        if self._verbose:
            print(f"[WARNING] Variable of type {type(item)} will not be dynamic")
        return item

    def unpack(self, tensors: Sequence[Any], metadata: Any) -> Any:
        """The structure `pack` flattened, its leaves taken from `tensors`."""
        if isinstance(metadata, self.Index):
            return tensors[metadata.value]
        if isinstance(metadata, tuple):
            return tuple(self.unpack(tensors, x) for x in metadata)
        if isinstance(metadata, (list, dict)):
            data = copy.copy(metadata)
            for key in range(len(metadata)) if isinstance(metadata, list) else metadata:
                data[key] = self.unpack(tensors, metadata[key])
            return data
        return metadata


wrapped_hpugraph_forward = _internal("wrapped_hpugraph_forward")


# --- capture -------------------------------------------------------------------------------


@dataclass
class _Op:
    func: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    out: Any
    key: Any
    info: Any


def _capture_mode_class() -> type:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    def involves_hpu(args: Any, kwargs: dict[str, Any]) -> bool:
        for a in (*args, *kwargs.values()):
            if type(a) is HpuTensor:
                return True
            if isinstance(a, (list, tuple)) and any(type(x) is HpuTensor for x in a):
                return True
            if isinstance(a, torch.device) and a.type == "hpu":
                return True
        return False

    class CaptureMode(TorchDispatchMode):
        """Records the device ops of one capture (active only while capturing)."""

        def __init__(self, graph: HPUGraph) -> None:
            super().__init__()
            self.graph = graph

        def __torch_dispatch__(
            self, func: Any, types: Any, args: Any = (), kwargs: Any = None
        ) -> Any:
            kwargs = kwargs or {}
            if not involves_hpu(args, kwargs):
                return func(*args, **kwargs)
            info = dispatch.op_info(func)
            rt = state.require_runtime()
            if info.missing:
                raise RuntimeError(CPU_FALLBACK_ERROR)
            if info.label.startswith("c10d::") and not _lazy_collectives():
                raise RuntimeError(COLLECTIVE_ERROR)
            before = sum(rt.log.fallback_counts.values())
            g = self.graph
            g._last_key = None
            out = func(*args, **kwargs)
            if sum(rt.log.fallback_counts.values()) != before:
                raise RuntimeError(CPU_FALLBACK_ERROR)
            g._ops.append(_Op(func, tuple(args), dict(kwargs), out, g._last_key, info))
            if info.sync_reason is not None:
                g.subgraphs += 1  # the flush closes a sub-graph (SingleHPUGraph)
            return out

    return CaptureMode


_MODE: list[type] = []


class HPUGraph:
    """`habana_frameworks.torch.hpu.HPUGraph` (emulated)."""

    def __init__(self) -> None:
        self.graph_id = _Counter.next_id
        _Counter.next_id += 1
        self._ops: list[_Op] = []
        self._last_key: Any = None
        self._mode: Any = None
        self._t0 = 0
        self._outputs_marked = False
        self.subgraphs = 0
        self.captured = False
        self.plans: list[Any] = []  # the lazy recipes flushed during the capture
        self.dry_run = False
        self.replays = 0
        self._user_inputs: list[Any] = []
        self._capturing = False  # HPUGraph.cpp's `capturing_`: begun and not ended
        self._stream: Any = None  # the stream the capture began on

    # listener: the op key of the op the mode just ran (for modeled costs)
    def _on_op(self, func: Any, key: Any, out: Any, info: Any) -> None:
        self._last_key = key

    def capture_begin(self, dry_run: bool = False) -> None:
        """HPUGraph.cpp:36-64: fatal on a graph already capturing; otherwise a step marker
        (into the graph capturing now, if any) and this graph becomes the one captured into:
        another graph's capture stops recording here, as the bridge's context switches."""
        if self._capturing:
            raise fatal(CAPTURE_IN_PROGRESS)
        rt = state.require_runtime()
        if rt.lazy:
            flush(rt, "new HPUGraph::capture_begin")
        outer = _Counter.capturing
        if outer is not None:
            outer._stop_recording()
        if not _MODE:
            _MODE.append(_capture_mode_class())
        self._ops = []
        self.subgraphs = 1
        self.dry_run = dry_run
        self._outputs_marked = False
        self._t0 = perf_counter_ns()
        self._stream = device_module.current_stream()
        rt.graph.begin_plans()  # the lazy recipes of the capture: what a replay runs
        _Counter.capturing = self
        self._capturing = True
        dispatch.add_op_listener(self._on_op)
        self._mode = _MODE[0](self)
        self._mode.__enter__()

    def _stop_recording(self) -> None:
        """Another graph's `capture_begin` took the capture over: what this graph captured so
        far is what it replays; it stays begun until its own `capture_end`."""
        self._end_recording()
        self.plans = state.require_runtime().graph.end_plans()

    def _end_recording(self) -> None:
        try:
            self._mode.__exit__(None, None, None)
        finally:
            self._mode = None
            _Counter.capturing = None
            dispatch.remove_op_listener(self._on_op)

    def capture_end(self) -> None:
        if not self._capturing:
            return  # the bridge only logs "GRAPH:: Use Graph capture to Begin the capture"
        if device_module.current_stream() != self._stream:
            raise fatal("GRAPH:: Capture must end on the same stream it began on.")
        rt = state.require_runtime()
        self._capturing = False
        recording = _Counter.capturing is self
        if recording:
            self._end_recording()
        if rt.lazy:
            flush(rt, "HPUGraph::capture_end")
        if recording:
            self.plans = rt.graph.end_plans()
        self.captured = True
        if rt.sink.recording:
            rt.events.graph_capture(
                self.graph_id, self._t0, perf_counter_ns() - self._t0, rt.mode_code,
                self.device_op_count(), self.subgraphs, self.dry_run,
            )  # fmt: skip

    def _abort_capture(self) -> None:
        if self._mode is not None:
            self._mode.__exit__(None, None, None)
            self._mode = None
        if _Counter.capturing is self:
            _Counter.capturing = None
        self._capturing = False
        rt = state.RT
        if rt is not None:
            rt.graph.end_plans()
        dispatch.remove_op_listener(self._on_op)

    def device_op_count(self) -> int:
        """Captured ops that run on the device (views launch nothing)."""
        return sum(1 for op in self._ops if not op.info.is_view)

    def replay(self, asynchronous: bool = False) -> None:
        """Re-run the captured ops into the static outputs; one launch in the modeled timeline.
        As HPUGraph.cpp:195-212: fatal while this graph captures; a step marker, then each
        captured graph (none for a graph never captured: nothing else happens)."""
        if self._capturing:
            raise fatal("GRAPH:: Capture in progress")
        rt = state.require_runtime()
        if rt.lazy:
            flush(rt, "HPUGraph::replay")
        if not self.captured:
            return
        t0 = perf_counter_ns()
        with rt.clock.mute():  # the CPU re-run is the emulator's; the replay's cost is modeled
            for op in self._ops:
                _rerun(op)
        self.replays += 1
        record_replay(
            rt, self.graph_id, [op.key for op in self._ops if not op.info.is_view], t0, self.plans
        )

    def replayV2(self, static_tlist: Any, tlist: Any, asynchronous: bool = False) -> None:
        """Replay with `tlist` in place of the captured `static_tlist` inputs (copied in)."""
        self._replay_with(list(static_tlist), list(tlist), "HPUGraph::replayV2")

    def replayV3(self, tlistI: Any, asynchronous: bool = False) -> None:
        """Replay with `tlistI` in place of the inputs marked with `mark_user_inputs`."""
        self._replay_with(list(self._user_inputs), list(tlistI), "HPUGraph::replayV3")

    def _replay_with(self, static: list[Any], new: list[Any], reason: str) -> None:
        if _Counter.capturing is self:
            raise fatal("GRAPH:: Capture in progress")
        if len(static) != len(new):
            raise fatal(f"GRAPH:: expected {len(static)} input tensors, got {len(new)}")
        for dst, src in zip(static, new, strict=True):
            if dst is not src:
                dst._elem.copy_(src._elem if hasattr(src, "_elem") else src)
        rt = state.require_runtime()
        if rt.lazy:
            flush(rt, reason)
        self.replay()

    def get_user_input_match_indices(self) -> list[int]:
        """Positions of the inputs marked with `mark_user_inputs` among the graph's inputs (the
        emulator keeps the graph's user inputs in the order they were marked)."""
        return list(range(len(self._user_inputs)))

    def mark_user_inputs(self, static_tlist: Any) -> None:
        if _Counter.capturing is not self:
            raise fatal(USER_INPUTS_OUTSIDE)
        self._user_inputs = list(static_tlist)

    def mark_user_outputs(self, static_tlist: Any) -> None:
        if self._outputs_marked:
            raise fatal(USER_OUTPUTS_TWICE)
        self._outputs_marked = True

    def clear_inputs(self) -> None:
        return None

    def reset(self) -> None:
        self._ops = []
        self.captured = False


def _rerun(op: _Op) -> None:
    """Run one captured op on the inner CPU tensors and write fresh outputs in place."""
    import torch

    def inner(a: Any) -> Any:
        if type(a) is HpuTensor:
            return a._elem
        if isinstance(a, (list, tuple)):
            return type(a)(inner(x) for x in a)
        if isinstance(a, torch.device) and a.type == "hpu":
            return torch.device("cpu")
        return a

    new = op.func(*(inner(a) for a in op.args), **{k: inner(v) for k, v in op.kwargs.items()})
    outs = op.out if isinstance(op.out, (list, tuple)) else (op.out,)
    news = new if isinstance(new, (list, tuple)) else (new,)
    alias = op.info.alias
    for i, (old, fresh) in enumerate(zip(outs, news, strict=False)):
        if type(old) is not HpuTensor or not isinstance(fresh, torch.Tensor):
            continue
        if i < len(alias) and alias[i][0] >= 0:
            continue  # in-place / view output: already the captured tensor's memory
        if fresh.shape == old._elem.shape:
            old._elem.copy_(fresh)
        # a data-dependent shape keeps its captured value: replays are static


def _cost(key: Any) -> Any:
    if key is None:
        return None
    cost = dispatch._COST.get(key)
    if cost is None:
        cost = dispatch._COST.get((key[0], dispatch._no_floats(key[1])))
    return cost


def record_replay(
    rt: Any, graph_id: int, keys: list[Any], t0: int, plans: list[Any] | None = None
) -> None:
    """One `graph_replay` launch event plus the captured device ops on the modeled timeline.

    The device ops are scheduled whether or not the sink records (the modeled timeline and a
    prediction need them); on the projected timeline the replay's host time is modeled (and
    this bookkeeping's own time removed)."""
    with rt.clock.pause():
        _record_replay(rt, graph_id, keys, t0, plans)


def _record_replay(
    rt: Any, graph_id: int, keys: list[Any], t0: int, plans: list[Any] | None
) -> None:
    tl = rt.timeline
    now = perf_counter_ns()
    tl.host_block(now, rt.profile.host_graph_replay_ns)
    events = rt.events
    corr = events.new_corr()
    events.graph_replay(
        graph_id, now if tl.clock.projected else t0, 0 if tl.clock.projected else now - t0,
        rt.mode_code, corr, len(keys),
    )  # fmt: skip
    ready = tl.launch_ready(now)
    if plans:  # the capture's lazy recipes, with their dataflow: fusion and engine overlap
        nodes = []
        for graph_ops, deps, kept in plans:
            nodes += tl.run_graph(graph_ops, deps, ready, kept.__contains__)
            ready = tl.stream_free
    else:  # in order, runs of fusible ops as one kernel each
        ops = [(key, cost) for key in keys if (cost := _cost(key)) is not None]
        nodes = tl.run_graph(ops, None, ready)
    events.device_nodes(nodes, graph_id, corr)


class graph:
    """`with ht.hpu.graph(g):` captures into `g` (synchronize, gc.collect, capture_begin)."""

    default_capture_stream: Any = None

    def __init__(self, hpu_graph: HPUGraph, stream: Any = None, dry_run: bool = False) -> None:
        self.hpu_graph = hpu_graph
        self.stream = stream
        self.dry_run = dry_run

    def __enter__(self) -> None:
        device_module.synchronize()
        gc.collect()
        self.hpu_graph.capture_begin(dry_run=self.dry_run)

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None:
            self.hpu_graph._abort_capture()
            return
        self.hpu_graph.capture_end()


# --- wrap_in_hpu_graph ----------------------------------------------------------------------


def _tensors(obj: Any) -> list[Any]:
    import torch

    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in _tensors(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in _tensors(o)]
    return []


@dataclass
class CachedParams:
    """One captured signature: static inputs and outputs, the graph (as the bridge's)."""

    graph_inputs: list[Any]
    graph_outputs: Any
    graph: HPUGraph
    asynchronous: bool


@dataclass
class GraphCacheStats:
    """What a wrapper did: captures, replays, uncaptured runs (cache full), bypasses."""

    captures: int = 0
    replays: int = 0
    uncaptured: int = 0
    bypassed: int = 0
    hits: dict[int, int] = field(default_factory=dict)


class _HpuGraphWrapper:
    """The forward installed by `wrap_in_hpu_graph` / `wrap_in_hpu_graph_func`."""

    def __init__(
        self,
        fn: Callable[..., Any],
        asynchronous: bool,
        disable_tensor_cache: bool,
        dry_run: bool,
        max_graphs: int | None,
    ) -> None:
        if os.environ.get("PT_HPUGRAPH_DISABLE_TENSOR_CACHE", "0").lower() in ("1", "true"):
            disable_tensor_cache = True
        self.fn = fn
        self.asynchronous = asynchronous
        self.disable_tensor_cache = disable_tensor_cache
        self.dry_run = dry_run or disable_tensor_cache
        self.max_graphs = max_graphs
        self.cache: dict[int, CachedParams] = {}
        self.stats = GraphCacheStats()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        bypass = kwargs.pop("bypass_hpu_graphs", False)
        warmup = kwargs.pop("warmup_mode", False)
        kwargs.pop("cache_tensors_list", None)
        if bypass or _Counter.capturing is not None:
            self.stats.bypassed += 1
            return self.fn(*args, **kwargs)
        h = input_hash((args, kwargs))
        cached = self.cache.get(h)
        if cached is None:
            if self.max_graphs is not None and len(self.cache) >= self.max_graphs:
                self.stats.uncaptured += 1  # cache full: run uncaptured, no eviction
                return self.fn(*args, **kwargs)
            g = HPUGraph()
            with graph(g, dry_run=self.dry_run):
                out = self.fn(*args, **kwargs)
            self.cache[h] = CachedParams(_tensors((args, kwargs)), out, g, self.asynchronous)
            self.stats.captures += 1
            return out
        self.stats.hits[h] = self.stats.hits.get(h, 0) + 1
        if warmup:
            mark_step()
            return cached.graph_outputs
        for static, new in zip(cached.graph_inputs, _tensors((args, kwargs)), strict=False):
            if static is not new:
                static.copy_(new)
        cached.graph.replay(self.asynchronous)
        self.stats.replays += 1
        return cached.graph_outputs

    def clear_cache(self) -> None:
        self.cache.clear()

    def clear_inputs(self) -> None:
        for cp in self.cache.values():
            cp.graph_inputs = []


def wrap_in_hpu_graph(
    module: Any,
    asynchronous: bool = False,
    disable_tensor_cache: bool = False,
    dry_run: bool = False,
    max_graphs: int | None = None,
    **kwargs: Any,
) -> Any:
    """Replace `module.forward` by an HPU-graph cache keyed by `input_hash((args, kwargs))`.

    A new signature is captured (returning the capture run's outputs); a known one copies the
    new inputs into the static inputs, replays, and returns the SAME static output tensors. When
    `max_graphs` signatures are cached, new ones run uncaptured. Accepts (and ignores) the 1.23
    keywords `free_inplace`, `verbose`, `log_frequency`. As the bridge's (`@wraps(orig_fwd)`),
    the new forward carries the original's name, doc and signature: transformers' `generate`
    validates its keywords against `inspect.signature(model.forward)`."""
    wrapper = _HpuGraphWrapper(
        module.forward, asynchronous, disable_tensor_cache, dry_run, max_graphs
    )
    functools.update_wrapper(wrapper, module.forward)
    module.forward = wrapper
    module.clear_cache = wrapper.clear_cache
    module.clear_inputs = wrapper.clear_inputs
    module.hpu_graph_stats = wrapper.stats
    return module


def wrap_in_hpu_graph_func(
    func: Callable[..., Any],
    asynchronous: bool = False,
    disable_tensor_cache: bool = False,
    dry_run: bool = False,
    max_graphs: int | None = None,
) -> Callable[..., Any]:
    """`wrap_in_hpu_graph` for a plain function."""
    return _HpuGraphWrapper(func, asynchronous, disable_tensor_cache, dry_run, max_graphs)


# --- training side: ModuleCacher, make_graphed_callables ------------------------------------


class _TrainingGraph:
    """A captured forward for training: replays run the forward for values (autograd intact)
    with host-op recording suppressed, then write one modeled replay."""

    def __init__(self) -> None:
        self.graph = HPUGraph()
        self.measurement: bool | None = None  # the FP8 measurement mode at capture

    def capture(self, fn: Callable[..., Any], args: Any, kwargs: Any) -> Any:
        from hpusim.transformer_engine import FP8GlobalStateManager

        self.measurement = FP8GlobalStateManager.get_manual_measurement_mode()
        g = self.graph
        g.capture_begin()
        try:
            out = fn(*args, **kwargs)
        except BaseException:
            g._abort_capture()
            raise
        g.capture_end()
        return out

    def replay(self, fn: Callable[..., Any], args: Any, kwargs: Any) -> Any:
        from hpusim.transformer_engine import FP8GlobalStateManager

        rt = state.require_runtime()
        if rt.lazy:
            flush(rt, "HPUGraph::replay")
        sink = rt.sink
        rec = sink.recording
        pending = rt.graph.set_aside()
        t0 = perf_counter_ns()
        sink.recording = False
        try:
            # the CPU re-run is the emulator's (the replay is modeled), with the capture's
            # FP8 measurement, which the bridge's recorded graph holds
            with rt.clock.mute(), FP8GlobalStateManager.measurement_as_captured(self.measurement):
                out = fn(*args, **kwargs)
        finally:
            sink.recording = rec
            # the replayed ops belong to the graph, not to a lazy recipe
            rt.graph.restore(pending)
        g = self.graph
        g.replays += 1
        keys = [op.key for op in g._ops if not op.info.is_view]
        record_replay(rt, g.graph_id, keys, t0, g.plans)
        return out


def _shape_key(obj: Any) -> Any:
    import torch

    if isinstance(obj, torch.Tensor):
        return ("T", tuple(obj.shape))
    if isinstance(obj, (list, tuple)):
        return tuple(_shape_key(o) for o in obj)
    if isinstance(obj, dict):
        return tuple((k, _shape_key(v)) for k, v in obj.items())
    return _hash_key(obj)


class ModuleCacher:
    """`ModuleCacher(max_graphs=10)(model=..., inplace=True, ...)`: the training-side cache.

    Caches only when `model.training`, grad mode and lazy mode are all on; keys hash every
    forward argument with tensors contributing only their shape."""

    def __init__(self, max_graphs: int = 10) -> None:
        self.max_graphs = max_graphs

    def __call__(
        self,
        model: Any,
        use_lfu: bool = False,
        inplace: bool = True,
        allow_unused_input: bool = False,
        asynchronous: bool = False,
        have_grad_accumulation: bool = False,
        log_frequency: int = 100,
        verbose: bool = False,
        disable_tensor_cache: bool = False,
        dry_run: bool = False,
    ) -> Any:
        import copy

        import torch

        if isinstance(model, (torch.nn.DataParallel, torch.nn.parallel.DistributedDataParallel)):
            raise AssertionError(
                "Use DataParallel/DistributedDataParallel only after wrapping with ModuleCacher"
            )
        for p in inspect.signature(model.forward).parameters.values():
            if p.kind in (p.POSITIONAL_ONLY, p.VAR_POSITIONAL):
                raise AssertionError(f"Unsupported argument type : {p.kind}")
            if p.kind is p.VAR_KEYWORD:
                print("[WARNING] Variable keyword arguments will not be supported.")
        # not in place: a shallow copy, sharing the parameters and buffers (an optimizer of
        # the original trains it), as the bridge's (graphs.py:1088-1089)
        target = model if inplace else copy.copy(model)
        cacher = _CachedForward(
            target.forward, target, self.max_graphs, use_lfu, asynchronous,
            have_grad_accumulation, log_frequency, verbose,
        )  # fmt: skip
        target.forward = cacher
        target.capture_start = cacher.capture_start
        target.capture_end = cacher.capture_end
        target.set_iteration_count = cacher.set_iteration_count
        target.hpu_graph_stats = cacher
        return target


class _CachedForward:
    def __init__(
        self,
        fn: Callable[..., Any],
        model: Any,
        max_graphs: int,
        use_lfu: bool,
        asynchronous: bool,
        grad_accumulation: bool,
        log_frequency: int,
        verbose: bool,
    ) -> None:
        self.fn = fn
        self.model = model
        self.max_graphs = max_graphs
        self.use_lfu = use_lfu
        self.asynchronous = asynchronous
        self.grad_accumulation = grad_accumulation
        self.log_frequency = max(1, log_frequency)
        self.verbose = verbose
        self.graphs: dict[int, _TrainingGraph] = {}
        self.hits: dict[int, int] = {}
        self.priority_keys: list[int] = []
        self.set_iteration_calls = 0
        self.total_cached_hits = 0
        self.uncached_train = 0
        self.uncached_eval = 0
        self.forwards = 0
        self._lfu_counts: dict[int, int] | None = None

    def capture_start(self) -> None:
        self._lfu_counts = {}

    def capture_end(self) -> None:
        counts = self._lfu_counts or {}
        ranked = sorted(counts, key=lambda k: -counts[k])
        self.priority_keys = ranked[: self.max_graphs]
        self._lfu_counts = None

    def set_iteration_count(self, count: int) -> None:
        self.set_iteration_calls += 1

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        import torch

        self.forwards += 1
        rt = state.RT
        try:
            if not (self.model.training and torch.is_grad_enabled() and rt is not None and rt.lazy):
                if self.model.training:
                    self.uncached_train += 1
                else:
                    self.uncached_eval += 1
                return self.fn(*args, **kwargs)
            h = hash(_shape_key((args, kwargs)))
            if self._lfu_counts is not None:
                self._lfu_counts[h] = self._lfu_counts.get(h, 0) + 1
            tg = self.graphs.get(h)
            if tg is not None:
                self.hits[h] = self.hits.get(h, 0) + 1
                self.total_cached_hits += 1
                return tg.replay(self.fn, args, kwargs)
            allowed = (h in self.priority_keys) if self.priority_keys else True
            if not allowed or len(self.graphs) >= self.max_graphs:
                self.uncached_train += 1
                return self.fn(*args, **kwargs)
            tg = self.graphs[h] = _TrainingGraph()
            self.hits[h] = 1
            self.total_cached_hits += 1
            return tg.capture(self.fn, args, kwargs)
        finally:
            if self.verbose and self.forwards % self.log_frequency == 0:
                print(self.statistics())

    def statistics(self) -> str:
        """The bridge's `verbose` block (gaudi.md 3.1)."""
        return "\n".join(
            [
                "HPU Graph Statistics",
                "  Configs",
                f"    Max graphs                :- {self.max_graphs}",
                f"    LFU Cache                 :- {self.use_lfu}",
                f"    Async execution config    :- {self.asynchronous}",
                f"    Grad accumulation config  :- {self.grad_accumulation}",
                f"    Set iteration calls       :- {self.set_iteration_calls}",
                "  Cache info ",
                f"    No. of HPUGraphs cached   :- {len(self.graphs)}",
                f"    Priority keys             :- {self.priority_keys}",
                f"    Input hash v. cached hits :- {self.hits}",
                f"    Total cached hits         :- {self.total_cached_hits}",
                f"    Uncached train hits       :- {self.uncached_train}",
                f"    Uncached eval hits        :- {self.uncached_eval}",
                f"    Total forwards executed   :- {self.forwards}",
            ]
        )


def make_graphed_callables(
    callables: Any,
    sample_args: Any,
    warmups: int = 0,
    allow_unused_input: bool = False,
    asynchronous: bool = False,
    disable_tensor_cache: bool = False,
    dry_run: bool = False,
) -> Any:
    """Capture each callable's forward with its sample args; the returned callables replay it
    (modeled) for inputs of the captured signature and run normally otherwise."""
    import torch

    single = not isinstance(callables, tuple)
    if single:
        callables, sample_args = (callables,), (sample_args,)
    out: list[Any] = []
    for fn, sargs in zip(callables, sample_args, strict=True):
        if not isinstance(sargs, tuple) or not all(isinstance(a, torch.Tensor) for a in sargs):
            raise AssertionError(SAMPLE_ARGS_ERROR)
        if isinstance(fn, torch.nn.Module):
            if fn._backward_hooks or fn._forward_hooks or fn._forward_pre_hooks:
                raise AssertionError(HOOKS_ERROR)
            if any(b.requires_grad for b in fn.buffers()):
                raise AssertionError(BUFFERS_ERROR)
        forward = fn.forward if isinstance(fn, torch.nn.Module) else fn
        for _ in range(warmups):
            forward(*sargs)
        tg = _TrainingGraph()
        tg.capture(forward, sargs, {})
        key = hash(_shape_key(sargs))

        def graphed(*args: Any, _f: Any = forward, _tg: Any = tg, _k: int = key) -> Any:
            if hash(_shape_key(args)) == _k:
                return _tg.replay(_f, args, {})
            return _f(*args)

        if isinstance(fn, torch.nn.Module):
            fn.forward = graphed
            out.append(fn)
        else:
            out.append(graphed)
    return out[0] if single else tuple(out)


# --- install ---------------------------------------------------------------------------------


def install() -> None:
    """Expose the API on `torch.hpu` / `habana_frameworks.torch.hpu` in lazy mode only."""
    rt = state.RT
    if rt is not None and rt.lazy:
        g = globals()
        for name in _NAMES:
            device_module.register_attribute(name, g[name])
    else:
        uninstall()


def uninstall() -> None:
    capturing = _Counter.capturing
    if capturing is not None:  # a capture left open: its recording mode must not outlive us
        capturing._abort_capture()
    _Counter.capturing = None
    for name in _NAMES:
        device_module.unregister_attribute(name)
