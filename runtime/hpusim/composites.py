"""C++ composite ops that allocate with `self.options()`, redone on device ops while emulating.

An hpu tensor's C++ device is the CPU (probe design item 1), so a CompositeImplicitAutograd op
that builds its result with `at::zeros(shape, self.options())` gets a plain CPU tensor and then
mixes it with the hpu input: `F.one_hot(hpu_labels, n)` raised `Expected all tensors to be on
the same device, but found at least two devices, hpu:0 and cpu!`. On the bridge these are HPU
kernels (`one_hot` in the 1.19 `scripts/hpu_op.yaml`), or the composite's allocations are
device tensors (the causal mask of `scaled_dot_product_attention`'s math path, which the bridge
runs: it does not register the fused attention kernels torch would choose instead). Each patch
here computes the op from device ops for hpu inputs and leaves every other call to torch's own
function.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from hpusim.script_builtins import as_builtin
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


def _scaled_dot_product_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> torch.Tensor:
    """torch's math path, whose causal mask (`at::ones({L, S}, query.options()).tril()`, a
    host tensor for an hpu query) is built on the device and passed as the mask: the same ops.
    `nn.Transformer`'s decoder takes this path for every causal `tgt_mask` it recognises."""
    if is_causal and attn_mask is None and type(query) is HpuTensor:
        causal = torch.ones(query.size(-2), key.size(-2), dtype=torch.bool, device=query.device)
        attn_mask, is_causal = causal.tril(), False
    sdpa = _orig["scaled_dot_product_attention"]
    return sdpa(
        query, key, value, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa
    )


_PATCHES: dict[str, Any] = {
    "one_hot": _one_hot,
    "scaled_dot_product_attention": _scaled_dot_product_attention,
}


def install() -> None:
    """Apply the patches (idempotent)."""
    if _orig:
        return
    for name, patch in _PATCHES.items():
        _orig[name] = getattr(F, name)
        setattr(F, name, as_builtin(patch, _orig[name]))


def uninstall() -> None:
    """Restore torch's originals."""
    if not _orig:
        return
    for name, original in _orig.items():
        setattr(F, name, original)
    _orig.clear()
