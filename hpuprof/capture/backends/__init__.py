"""Capture backends, one module each, and the automatic choice between them.

Order of the automatic choice: the emulated runtime when `hpusim` is enabled; a real Gaudi when
the real `habana_frameworks` is importable; CUDA when `torch.cuda.is_available()`; plain CPU.
`HPUProfiler(backend="cpu")` (or `emulated`, `gaudi`, `cuda`) overrides it.
"""

from __future__ import annotations

import importlib.util
import sys

from hpuprof.capture.backends.base import Backend, BackendContext, CaptureOptions
from hpuprof.capture.backends.cpu import CpuBackend
from hpuprof.capture.backends.cuda import CudaBackend
from hpuprof.capture.backends.emulated import EmulatedBackend
from hpuprof.capture.backends.gaudi import GaudiBackend
from hpuprof.errors import UsageError

BACKENDS: dict[str, type[Backend]] = {
    "emulated": EmulatedBackend,
    "gaudi": GaudiBackend,
    "cuda": CudaBackend,
    "cpu": CpuBackend,
}
"""Every backend by name (their modules import torch or the emulator only once started)."""
BACKEND_NAMES = tuple(BACKENDS)

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
        import torch  # seconds: only when no other backend was chosen

        if torch.cuda.is_available():
            return "cuda"
    return "cpu"


def create(name: str | None) -> Backend:
    """A new backend by name (None or "auto": `choose()`)."""
    name = choose() if name in (None, "auto") else name
    backend = BACKENDS.get(name or "")
    if backend is not None:
        return backend()
    raise UsageError(f"unknown backend {name!r}; choose one of {', '.join(BACKEND_NAMES)}")
