"""Module path and phase attribution through global hooks (installed only while enabled).

Module: global forward pre/post hooks keep a stack of module-path string ids; paths come from
the root module's `named_modules()` (children as `encoder.layers.0`, the root by class name).
Phase: backward is detected per op in dispatch (`_current_autograd_node`); the optimizer phase
is the span between the global optimizer step pre/post hooks.
"""

from __future__ import annotations

import weakref
from time import perf_counter_ns
from typing import Any

import torch

from hpusim import state

_handles: list[Any] = []
_paths: weakref.WeakKeyDictionary[torch.nn.Module, dict[int, str]] = weakref.WeakKeyDictionary()
_roots: list[torch.nn.Module] = []
_compiling = torch.compiler.is_compiling


def _pre(module: torch.nn.Module, args: Any) -> None:
    rt = state.RT
    if rt is None or _compiling():  # dynamo: compiled graphs carry nn_module_stack instead
        return
    rt.clock.enter(perf_counter_ns())  # the hook is the emulator's, not the script's host time
    try:
        _push(rt, module)
    finally:
        rt.clock.exit(perf_counter_ns())


def _push(rt: Any, module: torch.nn.Module) -> None:
    stack = rt.module_stack
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
    stack.append(rt.sink.intern(path))


def _post(module: torch.nn.Module, args: Any, output: Any) -> None:
    rt = state.RT
    if rt is None or not rt.module_stack or _compiling():
        return
    rt.module_stack.pop()
    if not rt.module_stack and _roots:
        _roots.pop()


def _opt_pre(optimizer: Any, args: Any, kwargs: Any) -> None:
    rt = state.RT
    if rt is not None:
        rt.optimizer_depth += 1


def _opt_post(optimizer: Any, args: Any, kwargs: Any) -> None:
    rt = state.RT
    if rt is not None and rt.optimizer_depth:
        rt.optimizer_depth -= 1


def install() -> None:
    if _handles:
        return
    from torch.nn.modules.module import (
        register_module_forward_hook,
        register_module_forward_pre_hook,
    )
    from torch.optim.optimizer import (
        register_optimizer_step_post_hook,
        register_optimizer_step_pre_hook,
    )

    _handles.append(register_module_forward_pre_hook(_pre))
    _handles.append(register_module_forward_hook(_post, always_call=True))
    _handles.append(register_optimizer_step_pre_hook(_opt_pre))
    _handles.append(register_optimizer_step_post_hook(_opt_post))


def uninstall() -> None:
    while _handles:
        _handles.pop().remove()
    _roots.clear()
