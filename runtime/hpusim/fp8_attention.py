"""The bridge's FP8 fused attention kernels: `hpu::fp8_sdpa_recomp_fwd` (and its `.scalar`
overload), `hpu::fp8_sdpa_fwd` and their variants (the Python API over them,
`hpex.kernels.fp8_fused_sdpa`, is in `hpusim.hpex`).

What the kernel computes, as the bridge's own test states it
(`tests/pytest_working/any_mode/FusedSDPA/test_hpu_sdpa_fp8.py`, its CPU reference):

- q, k and v arrive in FP8 (cast by `hpu::cast_to_fp8_v2` with per-tensor scales) and are read
  as `x * d_scale_x` (the descales; absent: 1);
- the probabilities `P = softmax(scale * Q K^T)` (with the causal triangle or the mask), whose
  largest value is `amax_s` (`is_amax_s`), are cast to the FP8 of q with `q_scale_s` and read
  back with `d_scale_s` (`1 / q_scale_s` when absent) before `P V`;
- the output is `P V` in bf16 for FP8 inputs, or, with `q_scale_o` (recompute only), cast to
  that FP8 with `q_scale_o`; its largest magnitude is `amax_o` (`is_amax_o`).

Outputs, dtypes and shapes are the bridge's (`habana_eager/eager_custom_op_register.cpp:1544-1660,
1903-1935`; the amaxes are fp32 of shape [1], `hpu_ops/backend/sdpa_gen.cpp:266-271,689-701`).
The device computes the products with hardware scaling (powers of two, applied in the MME) and
an approximate softmax for `softmax_mode="fast"`; the emulator computes them in fp32: its
values differ from a card's by that rounding. The costs are the fused attention's
(`fused_costs`), on the MME at the inputs' dtype.
"""

from __future__ import annotations

from typing import Any, Final

import torch
from torch import Tensor

from hpusim.attention_math import dropout_mask, new_seed, scores, softmax_rows
from hpusim.fp8_ops import amax, saturated, scale_tensor, times

_F32: Final = torch.float32
_FP8: Final = (torch.float8_e4m3fn, torch.float8_e5m2)

_RECOMP_ARGS: Final = (
    "Tensor q, Tensor k, Tensor v, Tensor? attention_mask, float p, float scale, bool is_causal, "
    "bool requires_backward, str softmax_mode, {s} d_scale_q, {s} d_scale_k, {s} d_scale_v, "
    "{s} q_scale_s, {s} q_scale_o, {s} d_scale_s, bool is_amax_s, bool is_amax_0, "
    "Tensor? valid_seq_len, str seq_padding_type"
)
_PLAIN_ARGS: Final = (
    "Tensor q, Tensor k, Tensor v, Tensor? attention_mask, float p, float scale, bool is_causal, "
    "str softmax_mode, Tensor? d_scale_q, Tensor? d_scale_k, Tensor? d_scale_v, "
    "Tensor? q_scale_s, Tensor? q_scale_o, Tensor? d_scale_s, bool is_amax_s, "
    "Tensor? valid_seq_len, str seq_padding_type"
)
_RECOMP_OUT: Final = " -> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor)"
_PLAIN_OUT: Final = " -> (Tensor, Tensor, Tensor, Tensor)"
SCHEMAS: Final[dict[str, str]] = {
    "fp8_sdpa_recomp_fwd": f"({_RECOMP_ARGS.format(s='Tensor?')}){_RECOMP_OUT}",
    "fp8_sdpa_recomp_fwd.scalar": f"({_RECOMP_ARGS.format(s='float')}){_RECOMP_OUT}",
    "fp8_sdpa_recomp_fwd_dropout": f"({_RECOMP_ARGS.format(s='Tensor?')}){_RECOMP_OUT}",
    "fp8_sdpa_recomp_fwd_non_dropout": f"({_RECOMP_ARGS.format(s='Tensor?')}){_RECOMP_OUT}",
    "fp8_sdpa_recomp_fwd_dropout_seed":
        f"(Tensor seed, {_RECOMP_ARGS.format(s='Tensor?')}){_RECOMP_OUT}",
    "fp8_sdpa_fwd": f"({_PLAIN_ARGS}){_PLAIN_OUT}",
    "fp8_sdpa_fwd_dropout": f"({_PLAIN_ARGS}){_PLAIN_OUT}",
    "fp8_sdpa_fwd_non_dropout": f"({_PLAIN_ARGS}){_PLAIN_OUT}",
    "fp8_sdpa_fwd_dropout_seed": f"(Tensor seed, {_PLAIN_ARGS}){_PLAIN_OUT}",
}  # fmt: skip
"""The bridge's schemas (`eager_custom_op_register.cpp:2274-2298`; the `_dropout`,
`_non_dropout` and `_dropout_seed` variants are what torch.compile's graphs call)."""

Scale = Tensor | float | None


def _factor(scale: Scale) -> Tensor | None:
    """A scale as an fp32 multiplier (`fp8_ops.scale_tensor`): None, or the scalar
    overload's 0.0, is no scale."""
    if isinstance(scale, float) and scale == 0.0:
        return None
    return scale_tensor(scale, None)


def _read(x: Tensor, d_scale: Scale) -> Tensor:
    """An input in fp32, descaled."""
    return times(x.to(_F32), _factor(d_scale))


def _quantized(x: Tensor, dtype: torch.dtype, q_scale: Scale) -> Tensor:
    """`x * q_scale` saturated to `dtype`'s device range and cast (an FP8 cast)."""
    return saturated(times(x, _factor(q_scale)), dtype).to(dtype)


def _amax_if(t: Tensor, wanted: bool) -> Tensor:
    """The kernel's amax output, fp32 of shape [1]: `t`'s largest magnitude when asked for,
    else 0."""
    return amax(t).reshape(1) if wanted else torch.zeros(1, dtype=_F32)


def _attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None,
    p: float,
    scale: float,
    is_causal: bool,
    scales: tuple[Scale, Scale, Scale, Scale, Scale, Scale],
    seed: Tensor | None,
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor | None]:
    """(out in fp32, row max m, 1/row sum, probabilities, dropout keep-mask)."""
    d_q, d_k, d_v, q_s, _q_o, d_s = scales
    m, linv, probs = softmax_rows(scores(_read(q, d_q), _read(k, d_k), mask, scale, is_causal))
    used = probs
    quantize = _factor(q_s)
    if q.dtype in _FP8 and quantize is not None:  # P in FP8 for the P V product
        descale = _factor(d_s)
        descale = 1.0 / quantize if descale is None else descale
        used = _quantized(probs, q.dtype, q_s).to(_F32) * descale
    keep = dropout_mask(used.shape, p, seed, used)
    if keep is not None:
        used = used * keep / (1.0 - p)
    out = torch.matmul(used, _read(v, d_v))
    return out, m, linv, probs, keep


def _output(out: Tensor, q: Tensor, q_scale_o: Scale) -> Tensor:
    """bf16 for FP8 inputs (q's dtype otherwise), or FP8 scaled by `q_scale_o`."""
    if q.dtype in _FP8 and _factor(q_scale_o) is not None:
        return _quantized(out, q.dtype, q_scale_o)
    return out.to(torch.bfloat16 if q.dtype in _FP8 else q.dtype)


def fp8_sdpa_recomp_fwd(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    attention_mask: Tensor | None,
    p: float,
    scale: float,
    is_causal: bool,
    requires_backward: bool,
    softmax_mode: str,
    d_scale_q: Scale,
    d_scale_k: Scale,
    d_scale_v: Scale,
    q_scale_s: Scale,
    q_scale_o: Scale,
    d_scale_s: Scale,
    is_amax_s: bool,
    is_amax_o: bool,
    valid_seq_len: Tensor | None,
    seq_padding_type: str,
    *,
    seed: Tensor | None = None,
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
    """(out, m, linv, seed, amax_s, amax_o): the recompute variant's outputs (`seed`: given by
    the `_dropout_seed` variant, else drawn)."""
    seed = new_seed(p, q) if seed is None else seed.clone()
    scales = (d_scale_q, d_scale_k, d_scale_v, q_scale_s, q_scale_o, d_scale_s)
    out, m, linv, probs, _ = _attention(q, k, v, attention_mask, p, scale, is_causal, scales, seed)
    amax_s, amax_o = _amax_if(probs, is_amax_s), _amax_if(out, is_amax_o)
    return _output(out, q, q_scale_o), m, linv, seed, amax_s, amax_o


def fp8_sdpa_fwd(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    attention_mask: Tensor | None,
    p: float,
    scale: float,
    is_causal: bool,
    softmax_mode: str,
    d_scale_q: Scale,
    d_scale_k: Scale,
    d_scale_v: Scale,
    q_scale_s: Scale,
    q_scale_o: Scale,
    d_scale_s: Scale,
    is_amax_s: bool,
    valid_seq_len: Tensor | None,
    seq_padding_type: str,
    *,
    seed: Tensor | None = None,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(out, P in q's dtype, dropout mask, amax_s): the non-recompute variant's outputs."""
    seed = new_seed(p, q) if seed is None else seed
    scales = (d_scale_q, d_scale_k, d_scale_v, q_scale_s, q_scale_o, d_scale_s)
    out, _, _, probs, keep = _attention(q, k, v, attention_mask, p, scale, is_causal, scales, seed)
    kept = probs.to(q.dtype) if q.dtype not in _FP8 else _quantized(probs, q.dtype, q_scale_s)
    dm = keep.to(torch.int8) if keep is not None else torch.empty(0, dtype=torch.int8)
    return _output(out, q, q_scale_o), kept, dm, _amax_if(probs, is_amax_s)


def _recomp_seeded(seed: Tensor, *args: Any) -> tuple[Tensor, ...]:
    return fp8_sdpa_recomp_fwd(*args, seed=seed)


def _plain_seeded(seed: Tensor, *args: Any) -> tuple[Tensor, ...]:
    return fp8_sdpa_fwd(*args, seed=seed)


KERNELS: Final[dict[str, Any]] = {
    "fp8_sdpa_recomp_fwd": fp8_sdpa_recomp_fwd,
    "fp8_sdpa_recomp_fwd.scalar": fp8_sdpa_recomp_fwd,
    "fp8_sdpa_recomp_fwd_dropout": fp8_sdpa_recomp_fwd,
    "fp8_sdpa_recomp_fwd_non_dropout": fp8_sdpa_recomp_fwd,
    "fp8_sdpa_recomp_fwd_dropout_seed": _recomp_seeded,
    "fp8_sdpa_fwd": fp8_sdpa_fwd,
    "fp8_sdpa_fwd_dropout": fp8_sdpa_fwd,
    "fp8_sdpa_fwd_non_dropout": fp8_sdpa_fwd,
    "fp8_sdpa_fwd_dropout_seed": _plain_seeded,
}
