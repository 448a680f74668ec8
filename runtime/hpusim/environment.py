"""What a Gaudi installation provides outside the bridge, present only while emulating.

`install()` (at `hpusim.enable()`) makes the emulated process look like a Gaudi machine:
- `hl-smi` (runtime/shim/bin) first on `PATH`: `hl-smi -v`, the device table, `-Q ... -f csv`
  for the emulated cards (`HPUSIM_DEVICE`, `HPUSIM_CARDS` tell it which);
- the shim folder on `PYTHONPATH`, so child processes (a `pip list` run from the script, a
  launcher's workers) see the `habana-torch-plugin` / `habana-torch-dataloader` distribution
  metadata and `habana_frameworks` too (the shim's import enables the emulator in the child);
- `HABANA_LOGS` set when unset (Gaudi images set it; the bridge's logs go there);
- PyPI's torchvision (a CUDA build) importable: `torchvision_ops` declares the ops its import
  needs, and adds `<venv>/hpusim-torchvision` to `sys.path` when it exists;
- the stand-ins of `runtime/shim-fallback` (`torchvision`) served by a finder at the END of
  `sys.meta_path`, so a real, importable package always wins, and only to import statements:
  an availability probe (`importlib.util.find_spec`, as lightning's `RequirementCache` and
  transformers' `is_*_available` do) still finds nothing, so clients take their documented
  path for a missing package instead of calling a placeholder.
The shim folder itself (habana_frameworks, habana_dataloader, the dist-info folders) is put on
`sys.path` by `enable()`. `uninstall()` puts every variable and path back as it found it.
Nothing is ever installed into site-packages (it would shadow a real Gaudi installation).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType, ModuleType
from typing import Final

import hpusim.state as state
import hpusim.torchvision_ops as torchvision_ops
from hpusim.lifecycle import shim_path

_saved: dict[str, str | None] = {}
_VARS: Final = ("PATH", "PYTHONPATH", "HPUSIM_DEVICE", "HPUSIM_CARDS", "HABANA_LOGS")


def shim_root() -> Path:
    return shim_path()


def fallback_dir() -> Path:
    """`runtime/shim-fallback` (the stand-ins' folder)."""
    return shim_root().parent / "shim-fallback"


def _probing(frame: FrameType | None) -> bool:
    """Whether this lookup comes from `importlib.util.find_spec` (a probe), not an import."""
    probe = importlib.util.find_spec.__code__
    while frame is not None:
        if frame.f_code is probe:
            return True
        frame = frame.f_back
    return False


class StandinFinder:
    """Finds the stand-ins of `runtime/shim-fallback` for import statements only.

    It sits last on `sys.meta_path` (after the path finder: a real package always wins) and
    answers for top-level names only; a stand-in's submodules are found through its `__path__`
    by the ordinary path finder."""

    def __init__(self, folder: Path) -> None:
        self.folder = str(folder)
        self.names = frozenset(p.name for p in folder.iterdir() if (p / "__init__.py").is_file())

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if path is not None or fullname not in self.names or _probing(sys._getframe(1)):
            return None
        return importlib.machinery.PathFinder.find_spec(fullname, [self.folder])


def _standin_finders() -> list[StandinFinder]:
    return [f for f in sys.meta_path if isinstance(f, StandinFinder)]


def _prepend(var: str, entry: str) -> None:
    current = os.environ.get(var, "")
    parts = [p for p in current.split(os.pathsep) if p and p != entry]
    os.environ[var] = os.pathsep.join([entry, *parts])


def install() -> None:
    """Expose hl-smi, the distribution metadata and the stand-ins (idempotent)."""
    if not _saved:
        _saved.update({v: os.environ.get(v) for v in _VARS})
    _prepend("PATH", str(shim_root() / "bin"))
    _prepend("PYTHONPATH", str(shim_root()))
    rt = state.RT
    if rt is not None:
        os.environ["HPUSIM_DEVICE"] = rt.profile.name
        os.environ.setdefault("HABANA_LOGS", rt.flags.log_dir)  # a Gaudi image always sets it
    os.environ.setdefault("HPUSIM_CARDS", os.environ.get("WORLD_SIZE", "1") or "1")
    if not _standin_finders():
        sys.meta_path.append(StandinFinder(fallback_dir()))
    torchvision_ops.install()


def uninstall() -> None:
    """Restore PATH, PYTHONPATH and the HPUSIM_* variables; drop the stand-ins' finder."""
    for var, value in _saved.items():
        if value is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = value
    _saved.clear()
    for finder in _standin_finders():
        sys.meta_path.remove(finder)
    torchvision_ops.uninstall()
