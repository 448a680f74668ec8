"""PyPI's torchvision, imported beside the CPU torch of an emulated run (issue 24).

PyPI's torchvision wheels for Linux are CUDA builds: their compiled ops library (`_C.so`) links
`libtorch_cuda.so`, which a CPU torch does not have, so torchvision skips it, and the import then
stops at `torch.library.register_fake("torchvision::nms")`: `operator torchvision::nms does not
exist`. Everything scripts use from it on a Gaudi (datasets, transforms, models, `ImageFolder`,
`DataLoader` pipelines) is Python on torch and needs none of those ops.

While hpusim emulates, `TorchvisionOps` (first on `sys.meta_path`, it finds nothing itself)
watches for the first `import torchvision`: when torchvision's `_C` cannot be loaded it declares
the schemas of the two ops torchvision registers fake kernels for unconditionally (`nms`,
`qnms`, as torchvision's `csrc/ops/nms.cpp` declares them), so the import completes. Calling
one of them then raises torch's "Could not run 'torchvision::nms' with arguments from the
'CPU' backend". A torchvision whose ops load (a CPU build) is left alone.

The documented way to have it (the `make test` environment does this): the matching wheel
installed, without its CUDA torch dependency, in a folder hpusim adds to `sys.path` while it
emulates, `<venv>/hpusim-torchvision`:

    pip install --no-deps --target .venv/hpusim-torchvision torchvision==0.28.0

(not into site-packages: outside emulation `import torchvision` would still fail, and libraries
that probe for it, transformers and lightning among them, would take their torchvision paths).
The schemas stay declared after `hpusim.disable()`: an imported torchvision needs them.
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, Final

FOLDER_NAME: Final = "hpusim-torchvision"
"""The folder of the environment (`sys.prefix`) that holds PyPI's torchvision for emulation."""
SCHEMAS: Final = (
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
)
"""The ops torchvision's `_meta_registrations` registers fake kernels for whether or not its
compiled library loaded (torchvision 0.28, `csrc/ops/nms.cpp`, `csrc/ops/quantized/qnms_kernel.cpp`)."""

_declared: list[Any] = []  # the torch.library.Library that holds the schemas (kept alive)


def folder() -> Path:
    """Where the environment keeps torchvision for emulation (it may not exist)."""
    return Path(sys.prefix) / FOLDER_NAME


def ops_library(spec: importlib.machinery.ModuleSpec) -> Path | None:
    """torchvision's compiled ops library (`_C.so`) beside the package of `spec`, if any."""
    for location in spec.submodule_search_locations or ():
        for candidate in sorted(Path(location).glob("_C*.so")):
            return candidate
    return None


def declare_missing_ops(library: Path | None) -> bool:
    """Load torchvision's ops `library` as torchvision would; when it cannot load (a CUDA
    build), declare `SCHEMAS` instead. Returns whether the schemas were declared."""
    import torch

    if _declared or hasattr(torch.ops.torchvision, "nms"):
        return False
    if library is not None:
        try:
            torch.ops.load_library(str(library))
            return False
        except (OSError, RuntimeError):
            pass
    lib = torch.library.Library("torchvision", "DEF")
    for schema in SCHEMAS:
        lib.define(schema)
    _declared.append(lib)
    return True


class TorchvisionOps:
    """A meta-path finder that finds nothing: before the first `import torchvision` resolves,
    it makes sure the ops torchvision's import needs exist (`declare_missing_ops`)."""

    def __init__(self) -> None:
        self.done = False

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "torchvision" or path is not None or self.done:
            return None
        self.done = True
        spec = importlib.machinery.PathFinder.find_spec(fullname)
        if spec is not None:
            declare_missing_ops(ops_library(spec))
        return None


def _finders() -> list[TorchvisionOps]:
    return [f for f in sys.meta_path if isinstance(f, TorchvisionOps)]


def install() -> None:
    """Serve torchvision while emulating (idempotent): the finder, and the folder on `sys.path`
    (at its end: a torchvision installed the ordinary way wins)."""
    if not _finders():
        sys.meta_path.insert(0, TorchvisionOps())
    where = str(folder())
    if folder().is_dir() and where not in sys.path:
        sys.path.append(where)


def uninstall() -> None:
    """Remove the finder and the folder from `sys.path` (an imported torchvision stays)."""
    for finder in _finders():
        sys.meta_path.remove(finder)
    with contextlib.suppress(ValueError):
        sys.path.remove(str(folder()))
