"""The attention arithmetic the fused SDPA kernels share (`hpu_ops`' bf16 kernels,
`fp8_attention`'s FP8 ones): scaled scores with the causal triangle and the mask, the softmax
statistics a flash kernel keeps, the dropout keep-mask and its seed."""

from __future__ import annotations

from typing import Final

import torch
from torch import Tensor

_F32: Final = torch.float32


def scores(q: Tensor, k: Tensor, mask: Tensor | None, scale: float, is_causal: bool) -> Tensor:
    """Scaled QK^T in fp32 with the causal triangle and the additive / boolean mask applied.
    The triangle is aligned at the top left (query i sees keys 0..i), as torch's `is_causal`
    and the bridge's own FusedSDPA tests' reference (`any_mode/FusedSDPA/test_hpu_sdpa.py:127`,
    `test_hpu_sdpa_fp8.py:311`: `ones(L, S).tril(diagonal=0)`), also when L != S."""
    s = torch.matmul(q.to(_F32), k.to(_F32).transpose(-2, -1)) * scale
    if is_causal:
        seq_q, seq_k = s.shape[-2], s.shape[-1]
        keep = torch.ones(seq_q, seq_k, dtype=torch.bool, device=s.device).tril()
        s = s.masked_fill(~keep, float("-inf"))
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask.to(_F32)
    return s


def softmax_rows(s: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(row max m, 1 / row sum linv, probabilities) of scores `s`, as a flash kernel keeps
    them for its backward (a fully masked row: m 0, probabilities 0)."""
    m = s.amax(dim=-1, keepdim=True)
    m = torch.where(torch.isinf(m), torch.zeros_like(m), m)
    e = torch.exp(s - m)
    linv = 1.0 / e.sum(dim=-1, keepdim=True).clamp_min(1e-30)
    return m, linv, e * linv


def dropout_mask(shape: torch.Size, p: float, seed: Tensor | None, like: Tensor) -> Tensor | None:
    """The kernel's dropout keep-mask from `seed` (None without dropout), reproducible in bwd;
    on `like`'s device (fake compute: a meta mask, no values)."""
    if p <= 0.0 or seed is None:
        return None
    if like.is_meta or seed.is_meta:
        return torch.empty(shape, dtype=torch.bool, device=like.device)
    gen = torch.Generator().manual_seed(int(seed.reshape(-1)[0]))
    return torch.rand(shape, generator=gen) >= p


def new_seed(p: float, like: Tensor) -> Tensor:
    """A dropout seed drawn on the host (fake compute: a meta one)."""
    if like.is_meta:
        return torch.empty(1, dtype=torch.int32, device=like.device)
    if p <= 0.0:
        return torch.zeros(1, dtype=torch.int32)
    return torch.randint(1, 2**31 - 1, (1,), dtype=torch.int32)
