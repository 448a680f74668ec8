"""C++ composite ops that allocate with `self.options()`, redone on device ops while emulating.

An hpu tensor's C++ device is the CPU (probe design item 1), so a CompositeImplicitAutograd op
that builds its result with `at::zeros(shape, self.options())` gets a plain CPU tensor and then
mixes it with the hpu input: `F.one_hot(hpu_labels, n)` raised `Expected all tensors to be on
the same device, but found at least two devices, hpu:0 and cpu!`. On the bridge these are HPU
kernels (`one_hot` in the 1.19 `scripts/hpu_op.yaml`). Each patch here computes the op from
device ops for hpu inputs and leaves every other call to torch's own function.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from hpusim.tensor import HpuTensor

_orig: dict[str, Any] = {}


def _one_hot(tensor: torch.Tensor, num_classes: int = -1) -> torch.Tensor:
    """torch's `one_hot` contract (int64 indices, int64 result, num_classes -1 = max + 1)."""
    if type(tensor) is not HpuTensor:
        return _orig["one_hot"](tensor, num_classes)
    if tensor.dtype != torch.long:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if tensor.numel() == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(tensor.max().item()) + 1
    out = torch.zeros((*tensor.shape, num_classes), dtype=torch.long, device=tensor.device)
    return out.scatter_(-1, tensor.unsqueeze(-1), 1)


def install() -> None:
    """Apply the patches (idempotent)."""
    if _orig:
        return
    _orig["one_hot"] = F.one_hot
    F.one_hot = _one_hot


def uninstall() -> None:
    """Restore torch's originals."""
    if not _orig:
        return
    F.one_hot = _orig["one_hot"]
    _orig.clear()
