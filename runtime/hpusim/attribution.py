"""Module path and phase attribution through global hooks (installed only while enabled).

Module: global forward pre/post hooks keep a stack of module-path string ids; paths come from
the root module's `named_modules()` (children as `encoder.layers.0`, the root by class name).
Phase: backward is detected per op in dispatch (`_current_autograd_node`); the optimizer phase
is the span between the global optimizer step pre/post hooks.

Under `torch.compile`: the hooks return at once while dynamo traces (compiled graphs carry
`nn_module_stack` instead); dynamo never compiles their frames nor the frames they call
(`compile_backend` marks the emulator's code so), and `torch.compile(module)`'s wrapper, an
`OptimizedModule`, is transparent: the module it wraps is the root, with its own paths.
"""

from __future__ import annotations

import warnings
import weakref
from time import perf_counter_ns
from typing import Any, Final, cast

import torch

import hpusim.state as state
from hpusim.module_stack import Attribution
from hpusim.sink import PHASE_BWD, PHASE_FWD, PHASE_OPTIMIZER, Sink

_handles: list[Any] = []
_warning_filters: list[Any] = []
_GLOBAL_HOOK_WARNING: Final = r"Using `torch\.compile\(module\)` when there are global hooks"
_paths: weakref.WeakKeyDictionary[torch.nn.Module, dict[int, str]] = weakref.WeakKeyDictionary()
_roots: list[torch.nn.Module] = []
_compiling = torch.compiler.is_compiling
_transparent: set[type] = set()
"""Wrapper module types the hooks ignore (dynamo's `OptimizedModule`, added at install)."""
_current_node = torch._C._current_autograd_node
_seq_nr = torch._C._autograd._get_sequence_nr


_FWD_MODULE: dict[int, int] = {}
"""Autograd sequence nr of a forward op's grad_fn -> module id, so backward ops get the module
of the forward op they differentiate (probe design 8)."""
_UNKNOWN: Final[Any] = object()


def module_and_phase(where: Attribution, node: Any = _UNKNOWN) -> tuple[int, int]:
    """(module string id, phase code) of the op being dispatched; `node`: the autograd node
    running now, where the caller has read it already (`_current_autograd_node()`)."""
    if node is _UNKNOWN:
        node = _current_node()
    if node is not None:
        return _FWD_MODULE.get(node._sequence_nr(), 0), PHASE_BWD
    phase = PHASE_OPTIMIZER if where.optimizer_depth else PHASE_FWD
    stack = where.module_stack
    if not stack:
        return 0, phase
    module = stack[-1]
    fwd = _FWD_MODULE
    k = _seq_nr() - 1  # the grad_fn the autograd kernel made just before this redispatch
    if k not in fwd:
        if len(fwd) > 500_000:
            fwd.clear()
        fwd[k] = module
    return module, phase


def phase_code(where: Attribution) -> int:
    """The `sink.PHASES` code of the op being dispatched: fwd, bwd or optimizer."""
    if _current_node() is not None:
        return PHASE_BWD
    return PHASE_OPTIMIZER if where.optimizer_depth else PHASE_FWD


def _pre(module: torch.nn.Module, args: Any) -> None:
    rt = state.RT
    if rt is None or _compiling() or type(module) in _transparent:
        return
    rt.clock.enter(perf_counter_ns())  # the hook is the emulator's, not the script's host time
    try:
        _push(rt.attribution, rt.sink, module)
    finally:
        rt.clock.exit(perf_counter_ns())


def _push(where: Attribution, sink: Sink, module: torch.nn.Module) -> None:
    stack = where.module_stack
    if not stack:
        paths = _paths.get(module)
        if paths is None:
            paths = {id(m): name for name, m in module.named_modules()}
            paths[id(module)] = type(module).__name__
            _paths[module] = paths
        _roots.append(module)
        path = paths[id(module)]
    else:
        root_paths = _paths.get(_roots[-1]) if _roots else None
        path = (root_paths or {}).get(id(module)) or type(module).__name__
    stack.append(sink.intern(path))


def _post(module: torch.nn.Module, args: Any, output: Any) -> None:
    rt = state.RT
    if rt is None or _compiling() or type(module) in _transparent:
        return
    stack = rt.attribution.module_stack
    if not stack:
        return
    stack.pop()
    if not stack and _roots:
        _roots.pop()


def _opt_pre(optimizer: Any, args: Any, kwargs: Any) -> None:
    rt = state.RT
    if rt is not None:
        rt.attribution.optimizer_depth += 1


def _opt_post(optimizer: Any, args: Any, kwargs: Any) -> None:
    rt = state.RT
    if rt is not None and rt.attribution.optimizer_depth:
        rt.attribution.optimizer_depth -= 1


def install() -> None:
    if _handles:
        return
    from torch._dynamo.eval_frame import OptimizedModule
    from torch.nn.modules.module import (
        register_module_forward_hook,
        register_module_forward_pre_hook,
    )
    from torch.optim.optimizer import (
        register_optimizer_step_post_hook,
        register_optimizer_step_pre_hook,
    )

    _transparent.add(OptimizedModule)
    # torch warns that global hooks fire again for the OptimizedModule: they are the
    # emulator's and ignore it (the bridge installs none, so its users see no such warning)
    warnings.filterwarnings("ignore", message=_GLOBAL_HOOK_WARNING, category=UserWarning)
    _warning_filters.append(warnings.filters[0])
    _handles.append(register_module_forward_pre_hook(_pre))
    _handles.append(register_module_forward_hook(_post, always_call=True))
    _handles.append(register_optimizer_step_pre_hook(_opt_pre))
    _handles.append(register_optimizer_step_post_hook(_opt_post))


def uninstall() -> None:
    while _handles:
        _handles.pop().remove()
    while _warning_filters:
        entry = _warning_filters.pop()
        filters = cast(list[Any], warnings.filters)
        if entry in filters:
            filters.remove(entry)
            mutated = getattr(warnings, "_filters_mutated", None)
            if mutated is not None:
                mutated()
    _roots.clear()
