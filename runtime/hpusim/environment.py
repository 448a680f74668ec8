"""What a Gaudi installation provides outside the bridge, present only while emulating.

`install()` (at `hpusim.enable()`) makes the emulated process look like a Gaudi machine:
- `hl-smi` (runtime/shim/bin) first on `PATH`: `hl-smi -v`, the device table, `-Q ... -f csv`
  for the emulated cards (`HPUSIM_DEVICE`, `HPUSIM_CARDS` tell it which);
- the shim folder on `PYTHONPATH`, so child processes (a `pip list` run from the script, a
  launcher's workers) see the `habana-torch-plugin` / `habana-torch-dataloader` distribution
  metadata and `habana_frameworks` too (the shim's import enables the emulator in the child);
- `HABANA_LOGS` set when unset (Gaudi images set it; the bridge's logs go there);
- `runtime/shim-fallback` appended at the END of `sys.path` (stand-ins that a real package
  always beats: `torchvision`).
The shim folder itself (habana_frameworks, habana_dataloader, the dist-info folders) is put on
`sys.path` by `enable()`. `uninstall()` puts every variable and path back as it found it.
Nothing is ever installed into site-packages (it would shadow a real Gaudi installation).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Final

_saved: dict[str, str | None] = {}
_VARS: Final = ("PATH", "PYTHONPATH", "HPUSIM_DEVICE", "HPUSIM_CARDS", "HABANA_LOGS")


def shim_root() -> Path:
    from hpusim import shim_path

    return shim_path()


def fallback_dir() -> Path:
    """`runtime/shim-fallback` (stand-ins appended last to sys.path)."""
    return shim_root().parent / "shim-fallback"


def _prepend(var: str, entry: str) -> None:
    current = os.environ.get(var, "")
    parts = [p for p in current.split(os.pathsep) if p and p != entry]
    os.environ[var] = os.pathsep.join([entry, *parts])


def install() -> None:
    """Expose hl-smi, the distribution metadata and the stand-ins (idempotent)."""
    from hpusim import state

    if not _saved:
        _saved.update({v: os.environ.get(v) for v in _VARS})
    _prepend("PATH", str(shim_root() / "bin"))
    _prepend("PYTHONPATH", str(shim_root()))
    rt = state.RT
    if rt is not None:
        os.environ["HPUSIM_DEVICE"] = rt.profile.name
        os.environ.setdefault("HABANA_LOGS", rt.flags.log_dir)  # a Gaudi image always sets it
    os.environ.setdefault("HPUSIM_CARDS", os.environ.get("WORLD_SIZE", "1") or "1")
    fallback = str(fallback_dir())
    if fallback not in sys.path:
        sys.path.append(fallback)


def uninstall() -> None:
    """Restore PATH, PYTHONPATH and the HPUSIM_* variables; drop the stand-ins' path."""
    for var, value in _saved.items():
        if value is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = value
    _saved.clear()
    fallback = str(fallback_dir())
    while fallback in sys.path:
        sys.path.remove(fallback)
