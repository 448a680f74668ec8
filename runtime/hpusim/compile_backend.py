"""`torch.compile(backend="hpu_backend")` on the emulated device (gaudi.md 2.5, probe item 7).

Dynamo traces through `HpuTensor` (it fakes the inner CPU tensor). The backend runs in AOT mode:
`aot_autograd` desugars the subclass, so each forward / backward aten graph is executed by an
`fx.Interpreter` that re-wraps its inputs as hpu tensors; every graph op is therefore dispatched,
observed and modeled like any other device op, and a compiled graph is accounted as ONE recipe
(`graph_recipe_<id>`, compiled on a cache miss, launched on a hit), as the bridge's `GraphExec`.

Recorded (sink, `hpuprof.*` events):
- `dynamo_compile` per dynamo graph: the frame, dynamo's compile id, the graph's op count, and
  the cause: `new_graph` for a first compile, or `guard` with dynamo's own guard-failure text
  (the `recompile_reason` dynamo computes for `TORCH_LOGS=recompiles`);
- `graph_break` for each new entry of dynamo's `graph_break` counter (the reason text);
- the AOT forward / backward graphs' recipes through the normal lazy-graph path (`compile` or
  `launch` events with `hpuprof.flush_reason` = `step marker`).
"""

from __future__ import annotations

import sys
import types
from time import perf_counter_ns
from typing import Any, Final

import hpusim.state as state
from hpusim.lazy import flush
from hpusim.sink import MODE_COMPILE
from hpusim.tensor import HpuTensor

BACKEND_NAME: Final = "hpu_backend"

_registered: list[bool] = [False]
_graph_observers: list[Any] = []


def add_graph_observer(fn: Any) -> None:
    """`fn(gm)` sees every FX graph `hpu_backend` compiles (the shim's FxGraphAnalyzer)."""
    _graph_observers.append(fn)


def remove_graph_observer(fn: Any) -> None:
    if fn in _graph_observers:
        _graph_observers.remove(fn)


_seen_breaks: dict[str, int] = {}
_stats: dict[str, int] = {"compiles": 0, "recompiles": 0, "graph_breaks": 0, "aot_graphs": 0}


def stats() -> dict[str, int]:
    """Counts since enable: dynamo `compiles` (first + re-), `recompiles`, `graph_breaks`,
    `aot_graphs` (forward + backward graphs handed to the emulated graph compiler)."""
    return dict(_stats)


def reset_stats() -> None:
    for k in _stats:
        _stats[k] = 0
    _seen_breaks.clear()
    try:
        from torch._dynamo.utils import counters
    except ImportError:  # pragma: no cover
        return
    _seen_breaks.update(counters["graph_break"])
    _seen_breaks.update(counters["unimplemented"])


def graph_op_count(gm: Any) -> int:
    """Ops of an FX graph: call_function / call_method / call_module nodes."""
    return sum(1 for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module"))


def is_dynamic(gm: Any) -> bool:
    """Whether dynamo traced the graph with symbolic sizes (automatic dynamic shapes)."""
    import torch

    for n in gm.graph.nodes:
        if n.op != "placeholder":
            continue
        val = n.meta.get("example_value")
        if isinstance(val, torch.SymInt):
            return True
        shape = getattr(val, "shape", ())
        if any(isinstance(d, torch.SymInt) for d in shape):
            return True
    return False


def _recompile_reason() -> str | None:
    """Dynamo's guard-failure text for the compile in progress (None for a first compile)."""
    try:
        from torch._dynamo.utils import get_metrics_context

        reason = get_metrics_context()._metrics.get("recompile_reason")
    except (ImportError, AttributeError):  # pragma: no cover - torch internals moved
        return None
    return str(reason) if reason else None


def _frame_name() -> tuple[str, str]:
    try:
        from torch._guards import CompileContext

        cid = CompileContext.current_compile_id()
        ctx = CompileContext.try_get()
    except (ImportError, AttributeError):  # pragma: no cover
        return "", ""
    name = ""
    if ctx is not None:
        from torch._guards import TracingContext

        tc = TracingContext.try_get()
        code = getattr(getattr(tc, "f_code", None), "co_name", None) if tc is not None else None
        name = code or ""
    return name, str(cid) if cid is not None else ""


def _record_graph_breaks(rt: Any) -> None:
    from torch._dynamo.utils import counters

    now = perf_counter_ns()
    # torch 2.13 counts a graph break's reason under "unimplemented" (older: "graph_break")
    items = [*counters["graph_break"].items(), *counters["unimplemented"].items()]
    for reason, n in items:
        new = n - _seen_breaks.get(reason, 0)
        if new <= 0:
            continue
        _seen_breaks[reason] = n
        _stats["graph_breaks"] += new
        if rt.sink.recording:
            for _ in range(new):
                rt.events.graph_break(str(reason), now, MODE_COMPILE)


def hpu_backend(gm: Any, example_inputs: list[Any], **kwargs: Any) -> Any:
    """The `hpu_backend` dynamo backend: record the compile, then AOT-compile for the device."""
    rt = state.RT
    t0 = perf_counter_ns()
    reason = _recompile_reason()
    frame, compile_id = _frame_name()
    n_ops = graph_op_count(gm)
    for observe in list(_graph_observers):
        observe(gm)
    _stats["compiles"] += 1
    if reason is not None:
        _stats["recompiles"] += 1
    if rt is not None:
        _record_graph_breaks(rt)
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.aot_autograd import make_boxed_func

    def compiler(kind: str) -> Any:
        def compile_graph(agm: Any, inputs: list[Any]) -> Any:
            _stats["aot_graphs"] += 1
            return make_boxed_func(_GraphRunner(agm, kind))

        return compile_graph

    compiled = aot_autograd(fw_compiler=compiler("fwd"), bw_compiler=compiler("bwd"))(
        gm, example_inputs
    )
    if rt is not None and rt.sink.recording:
        rt.events.dynamo_compile(
            frame, t0, perf_counter_ns() - t0, MODE_COMPILE, reason, n_ops, compile_id,
            is_dynamic(gm),
        )  # fmt: skip
    return compiled


class _GraphRunner:
    """Runs one AOT aten graph through the hpu wrappers; one recipe per graph run.

    On the host the bridge only launches the graph's cached recipe (`HabanaGraphModule.__call__`,
    dynamo/compile_backend/recipe_compiler.py:234-280): the emulator's run of the graph's ops
    costs no host time (unlike a lazy graph's ops, which the bridge accumulates one by one),
    and its flush only the flush's modeled costs (lazy.py), as at a `mark_step`."""

    def __init__(self, gm: Any, kind: str) -> None:
        self.gm = gm
        self.kind = kind

    def __call__(self, *args: Any) -> Any:
        import torch

        rt = state.RT
        if rt is None:
            raise RuntimeError("hpusim: a compiled hpu graph ran after hpusim.disable()")
        wrapped = [
            HpuTensor(a) if type(a) is torch.Tensor and not isinstance(a, HpuTensor) else a
            for a in args
        ]
        clock = rt.clock
        if rt.lazy:
            with clock.pause():
                flush(rt, "step marker")
        with rt.compiling():
            with clock.mute():
                out = _Interp(self.gm).run(*wrapped)
            with clock.pause():
                flush(rt, "step marker")
        return [o._elem if type(o) is HpuTensor else o for o in out]


def _interp_class() -> type:
    import torch.fx

    class Interp(torch.fx.Interpreter):
        """Factories inside the graph run on the device; CPU fakes become hpu tensors."""

        def call_function(self, target: Any, args: Any, kwargs: Any) -> Any:
            import torch

            dev = kwargs.get("device")
            if isinstance(dev, torch.device) and dev.type == "cpu":
                kwargs = {**kwargs, "device": torch.device("hpu", 0)}
            out = super().call_function(target, args, kwargs)
            if type(out) is torch.Tensor and not isinstance(out, HpuTensor):
                return HpuTensor(out)
            return out

    return Interp


_INTERP: list[type] = []


def _Interp(gm: Any) -> Any:
    if not _INTERP:
        _INTERP.append(_interp_class())
    return _INTERP[0](gm)


def _skip_emulator_code() -> None:
    """Dynamo must never trace the emulator's own frames (probe 7b), nor the frames they call:
    a module hook that runs eagerly inside a compiled module (`torch.compile(model)` calls
    `Net._call_impl` with dynamo's frame callback set) would otherwise have dynamo compile
    each library function it calls (`WeakKeyDictionary.get`), and fail on the module it sees
    there. So every emulator code object runs, and makes its calls, without dynamo."""
    from torch._dynamo.eval_frame import set_code_exec_strategy
    from torch._dynamo.types import FrameAction, FrameExecStrategy

    untraced = FrameExecStrategy(FrameAction.SKIP, FrameAction.SKIP)

    def skip_code(code: types.CodeType) -> None:
        set_code_exec_strategy(code, untraced)

    seen: set[int] = set()

    def visit(code: types.CodeType) -> None:
        if id(code) in seen:
            return
        seen.add(id(code))
        skip_code(code)
        for c in code.co_consts:
            if isinstance(c, types.CodeType):
                visit(c)

    def visit_obj(obj: Any, depth: int = 0) -> None:
        if isinstance(obj, staticmethod | classmethod):
            obj = obj.__func__
        if isinstance(obj, property):
            for f in (obj.fget, obj.fset, obj.fdel):
                if f is not None:
                    visit_obj(f, depth)
            return
        code = getattr(obj, "__code__", None)
        if isinstance(code, types.CodeType):
            visit(code)
        elif isinstance(obj, type) and depth == 0:
            for v in vars(obj).values():
                visit_obj(v, 1)

    for name, mod in list(sys.modules.items()):
        if mod is None or not (name == "hpusim" or name.startswith("hpusim.")):
            continue
        if name == "hpusim.compile_backend":
            continue
        for v in list(vars(mod).values()):
            if getattr(v, "__module__", None) == name:
                visit_obj(v)


_COERCE: Final = "__coerce_same_metadata_as_tangent__"


def _zero_tangent_on_device(self: Any, expected_meta: Any = None, expected_type: Any = None) -> Any:
    """AOT autograd's hook for a runtime tangent whose type it did not expect: a plain tensor
    where a compiled hpu graph's backward expects an hpu tensor is the autograd engine's zero
    gradient for an output the loss does not use (a compiled model returning its logits with
    its loss): the engine materializes it on the output's C++ device (VariableInfo::zeros,
    torch/csrc/autograd/variable_info.cpp), which is the wrapper's CPU here and the card on a
    Gaudi, so it is made on the device, as the bridge's `zeros` would. Any other mismatch
    keeps AOT's error (None)."""
    import torch

    if expected_type is not HpuTensor or type(self) is not torch.Tensor:
        return None
    rt = state.RT
    if rt is None or (rt.fake is None and bool(self.any())):  # not a materialized zero
        return None
    return torch.zeros(self.shape, dtype=self.dtype, device="hpu")


def install() -> None:
    """Register `hpu_backend` with dynamo (once), hide the emulator's frames from it and give
    AOT autograd the device's zero tangents (`_zero_tangent_on_device`)."""
    import torch
    from torch._dynamo.backends.registry import _COMPILER_FNS, register_backend

    if not _registered[0] or BACKEND_NAME not in _COMPILER_FNS:
        _COMPILER_FNS.pop(BACKEND_NAME, None)
        register_backend(name=BACKEND_NAME)(hpu_backend)
        _registered[0] = True
    reset_stats()
    _skip_emulator_code()
    if _COERCE not in vars(torch.Tensor):
        setattr(torch.Tensor, _COERCE, _zero_tangent_on_device)


def uninstall() -> None:
    """Unregister the backend (scripts then fail like on a machine without the bridge)."""
    import torch

    if vars(torch.Tensor).get(_COERCE) is _zero_tangent_on_device:
        delattr(torch.Tensor, _COERCE)
    try:
        from torch._dynamo.backends.registry import _BACKENDS, _COMPILER_FNS
    except ImportError:  # pragma: no cover
        return
    _COMPILER_FNS.pop(BACKEND_NAME, None)
    _BACKENDS.pop(BACKEND_NAME, None)
    _registered[0] = False
