"""Capture backends, one module each, and the automatic choice between them.

Order of the automatic choice: the emulated runtime when `hpusim` is enabled; a real Gaudi when
the real `habana_frameworks` is importable; CUDA when `torch.cuda.is_available()`; plain CPU.
`HPUProfiler(backend="cpu")` (or `emulated`, `gaudi`, `cuda`) overrides it.
"""

from __future__ import annotations

import importlib.util
import sys

from hpuprof.capture.backends.base import Backend, BackendContext, CaptureOptions
from hpuprof.errors import UsageError

BACKEND_NAMES = ("emulated", "gaudi", "cuda", "cpu")

__all__ = ["BACKEND_NAMES", "Backend", "BackendContext", "CaptureOptions", "choose", "create"]


def _hpusim_enabled() -> bool:
    mod = sys.modules.get("hpusim")
    return bool(mod is not None and getattr(mod, "is_enabled", lambda: False)())


def _real_habana_importable() -> bool:
    if _hpusim_enabled():
        return False
    try:
        return importlib.util.find_spec("habana_frameworks") is not None
    except (ImportError, ValueError):
        return False


def choose() -> str:
    """The backend name the automatic choice picks in this process now."""
    if _hpusim_enabled():
        return "emulated"
    if _real_habana_importable():
        return "gaudi"
    if "torch" in sys.modules or importlib.util.find_spec("torch") is not None:
        import torch

        if torch.cuda.is_available():
            return "cuda"
    return "cpu"


def create(name: str | None) -> Backend:
    """A new backend by name (None or "auto": `choose()`)."""
    name = choose() if name in (None, "auto") else name
    if name == "emulated":
        from hpuprof.capture.backends.emulated import EmulatedBackend

        return EmulatedBackend()
    if name == "gaudi":
        from hpuprof.capture.backends.gaudi import GaudiBackend

        return GaudiBackend()
    if name == "cuda":
        from hpuprof.capture.backends.cuda import CudaBackend

        return CudaBackend()
    if name == "cpu":
        from hpuprof.capture.backends.cpu import CpuBackend

        return CpuBackend()
    raise UsageError(f"unknown backend {name!r}; choose one of {', '.join(BACKEND_NAMES)}")
