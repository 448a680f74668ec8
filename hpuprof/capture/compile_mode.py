"""`hpuprof record --emulate --mode compile`: the script's `torch.compile` calls get `hpu_backend`.

On a Gaudi, compile mode is the eager frontend (`PT_HPU_LAZY_MODE=0`) plus
`torch.compile(backend="hpu_backend")`. Under emulation a script written for another backend
(`torch.compile(model)`, i.e. inductor) would compile the emulator's inner CPU tensors, and
nothing it runs would be observed or modeled. So while the emulated compile mode is on,
`torch.compile` (and `nn.Module.compile`, which calls it) is given `backend="hpu_backend"`
whatever backend the script asked for; the inductor-only `mode` / `options` are dropped. Every
replacement is counted and goes into the run metadata, so the trace says what was forced.
"""

from __future__ import annotations

import collections
import functools
import warnings
from collections.abc import Callable
from typing import Any

FORCED_BACKEND = "hpu_backend"
NOTE = (
    "emulated compile mode: eager frontend; every torch.compile call gets backend='hpu_backend' "
    "(a CPU backend such as inductor would compile the emulator's inner CPU tensors, unobserved)"
)

_original: list[Callable[..., Any]] = []
replaced: collections.Counter[str] = collections.Counter()
"""Backends the script asked for that were replaced by `hpu_backend`, with how often."""


def _backend_name(backend: Any) -> str:
    if backend is None:
        return "inductor"
    if isinstance(backend, str):
        return backend
    return str(getattr(backend, "__name__", type(backend).__name__))


def install() -> None:
    """Patch `torch.compile` to force `hpu_backend` (idempotent)."""
    import torch

    if _original:
        return
    original = torch.compile
    _original.append(original)

    @functools.wraps(original)
    def compile_on_hpu(model: Any = None, **kwargs: Any) -> Any:
        asked = _backend_name(kwargs.get("backend"))
        if asked != FORCED_BACKEND:
            replaced[asked] += 1
            kwargs["backend"] = FORCED_BACKEND
            kwargs.pop("mode", None)
            kwargs.pop("options", None)
        return original(model, **kwargs)

    torch.compile = compile_on_hpu
    # the emulator's module hooks are global; torch warns about them at every compiled call
    warnings.filterwarnings(
        "ignore", message=r"Using `torch.compile\(module\)` when there are global hooks"
    )


def uninstall() -> None:
    """Restore `torch.compile`."""
    if not _original:
        return
    import torch

    torch.compile = _original.pop()


def is_installed() -> bool:
    return bool(_original)


def run_metadata() -> dict[str, Any]:
    """Run-metadata keys of the emulated compile mode (`mode`, frontend, forced backend)."""
    meta: dict[str, Any] = {
        "mode": "compile",
        "frontend": "eager",
        "compile_backend": FORCED_BACKEND,
        "compile_note": NOTE,
    }
    if replaced:
        meta["compile_backends_replaced"] = dict(replaced)
    return meta
