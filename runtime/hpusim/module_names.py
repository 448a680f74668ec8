"""The bridge's lazy-mode module-name hooks (`core/torch_overwrites.py`), installed while a lazy
session is on.

In lazy mode the bridge wraps `torch.nn.Module.__setattr__` and `Module.add_module`
(torch_overwrites.py:162-183, 259-282): a module assigned to another gets a `custom_name`, a
forward pre-hook that pushes its path on `_name_stack` and a forward hook (`always_call=True`)
that pops it, once (`names_hook`). The forward hook registers, once per tensor, a gradient hook
on each output that requires grad (lines 84-106): a parameter a module returns holds exactly
one such hook however often the module runs (the bridge's `test_hpu_hooks::test_fun`). The
stack is empty again after a forward whose pre-hook raised (`test_module_hooks`).

MODELED: the bridge hands the path to its lazy IR (`debug._set_module_name`, `ir.cpp:42-46`)
to name graph nodes; the emulator attributes ops to modules with its own global hooks
(`attribution.py`), so the path here only keeps the stack and the gradient hooks return the
gradient unchanged. With `PT_HPU_INFERENCE_MODE` set, a `relu` child is numbered per parent
(lines 59-66), as the bridge's calibration naming does.
"""

from __future__ import annotations

import functools
import os
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, Final

import torch

NAME_STACK: Final[deque[str]] = deque()
"""The bridge's `_name_stack`: the paths of the modules whose forward is running."""
_RELU_COUNT: dict[str, int] = {}
"""The bridge's `_module_dict`: per parent path, the number of its `relu` children seen
(inference mode)."""
_LOCK: Final = threading.Lock()
_orig: dict[str, Any] = {}


def _hooked(obj: Any) -> bool:
    """The bridge's `_names_hook_already_registered`."""
    return getattr(obj, "names_hook", False) is True


def _path(module: torch.nn.Module) -> str:
    """The path the pre-hook pushes: the parent's path and the module's name."""
    name = str(module.custom_name)
    parent = NAME_STACK[-1] if NAME_STACK else ""
    if os.environ.get("PT_HPU_INFERENCE_MODE") and parent and "relu" in name:
        if parent in _RELU_COUNT:
            _RELU_COUNT[parent] += 1
            return f"{parent}/{name}.{_RELU_COUNT[parent]}"
        _RELU_COUNT[parent] = 0
    return f"{parent}/{name}" if parent else name


def _pre_forward(module: torch.nn.Module, args: Any) -> None:
    with _LOCK:
        NAME_STACK.append(_path(module))


def _gradient_hook(grad: torch.Tensor) -> torch.Tensor:
    """The bridge's `grad_hook`: names the module of the backward ops (MODELED: see above)."""
    return grad


def _post_forward(module: torch.nn.Module, args: Any, output: Any) -> None:
    with _LOCK:
        path = NAME_STACK.pop()
        if os.environ.get("PT_HPU_INFERENCE_MODE"):
            _RELU_COUNT.pop(path, None)
        outputs = [output] if isinstance(output, torch.Tensor) else output
        try:
            for out in outputs:
                if isinstance(out, torch.Tensor) and out.requires_grad and not _hooked(out):
                    out.register_hook(_gradient_hook)
                    out.names_hook = True  # type: ignore[attr-defined]
        except (TypeError, RuntimeError):  # not iterable, or a tensor that takes no hook:
            pass  # the bridge's bare `except` around the same loop (line 105)


def _name(module: Any, name: str) -> None:
    """Give `module` (assigned to a parent as `name`) the bridge's hooks, once."""
    if isinstance(module, torch.nn.Module) and not _hooked(module):
        try:
            module.custom_name = name  # type: ignore[assignment]
            module.register_forward_pre_hook(_pre_forward)
            module.register_forward_hook(_post_forward, always_call=True)
            module.names_hook = True  # type: ignore[assignment]
        except RuntimeError:
            pass


def _wrap(original: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(original)
    def named(self: torch.nn.Module, name: str, value: Any) -> None:
        _name(value, name)
        original(self, name, value)

    return named


def install() -> None:
    """Wrap `Module.__setattr__` and `Module.add_module` (a lazy session; undone by
    `uninstall`)."""
    if _orig:
        return
    for attr in ("__setattr__", "add_module"):
        _orig[attr] = getattr(torch.nn.Module, attr)
        setattr(torch.nn.Module, attr, _wrap(_orig[attr]))


def uninstall() -> None:
    """Restore torch's own; modules named meanwhile keep their hooks, as on the bridge."""
    for attr, original in _orig.items():
        setattr(torch.nn.Module, attr, original)
    _orig.clear()
