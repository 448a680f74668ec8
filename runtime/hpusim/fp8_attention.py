"""The bridge's FP8 fused attention: `hpu::fp8_sdpa_recomp_fwd` (and its `.scalar` overload),
`hpu::fp8_sdpa_fwd`, and the Python API over them (`hpex.kernels.fp8_fused_sdpa`,
`Fp8FusedSDPA`, `fp8_sdpa_fwd_wrapper`, `fp8_sdpa_bwd_wrapper`, as the 1.19
`python_packages/habana_frameworks/torch/hpex/kernels/Fp8FusedSDPA.py` has them).

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

import math
from typing import Any, Final

import torch
from torch import Tensor

from hpusim.fp8_ops import saturated
from hpusim.hpu_ops import _dropout_mask, _new_seed, _scores, softmax_rows

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


def _factor(scale: Scale) -> Tensor | float | None:
    """A scale as a multiplier: None (or the scalar overload's 0.0) is no scale."""
    if scale is None or (isinstance(scale, float) and scale == 0.0):
        return None
    return scale.to(_F32) if isinstance(scale, Tensor) else float(scale)


def _read(x: Tensor, d_scale: Scale) -> Tensor:
    """An input in fp32, descaled."""
    factor = _factor(d_scale)
    x = x.to(_F32)
    return x * factor if factor is not None else x


def _quantized(x: Tensor, dtype: torch.dtype, q_scale: Scale) -> Tensor:
    """`x * q_scale` saturated to `dtype`'s device range and cast (an FP8 cast)."""
    factor = _factor(q_scale)
    return saturated(x * factor if factor is not None else x, dtype).to(dtype)


def _amax(t: Tensor) -> Tensor:
    return t.detach().abs().amax().to(_F32).reshape(1)


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
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor | None]:
    """(out in fp32, row max m, 1/row sum, probabilities, amax_s, dropout keep-mask)."""
    d_q, d_k, d_v, q_s, _q_o, d_s = scales
    m, linv, probs = softmax_rows(_scores(_read(q, d_q), _read(k, d_k), mask, scale, is_causal))
    amax_s = _amax(probs)
    used = probs
    if q.dtype in _FP8 and _factor(q_s) is not None:  # P in FP8 for the P V product
        descale = _factor(d_s)
        if descale is None:
            descale = 1.0 / _factor(q_s)  # type: ignore[operator]
        used = _quantized(probs, q.dtype, q_s).to(_F32) * descale
    keep = _dropout_mask(used.shape, p, seed, used)
    if keep is not None:
        used = used * keep / (1.0 - p)
    out = torch.matmul(used, _read(v, d_v))
    return out, m, linv, probs, amax_s, keep


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
    seed = _new_seed(p, q) if seed is None else seed.clone()
    scales = (d_scale_q, d_scale_k, d_scale_v, q_scale_s, q_scale_o, d_scale_s)
    out, m, linv, _, amax_s, _ = _attention(
        q, k, v, attention_mask, p, scale, is_causal, scales, seed
    )
    amax_o = _amax(out) if is_amax_o else torch.zeros(1, dtype=_F32)
    if not is_amax_s:
        amax_s = torch.zeros(1, dtype=_F32)
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
    seed = _new_seed(p, q) if seed is None else seed
    scales = (d_scale_q, d_scale_k, d_scale_v, q_scale_s, q_scale_o, d_scale_s)
    out, _, _, probs, amax_s, keep = _attention(
        q, k, v, attention_mask, p, scale, is_causal, scales, seed
    )
    kept = probs.to(q.dtype) if q.dtype not in _FP8 else _quantized(probs, q.dtype, q_scale_s)
    dm = keep.to(torch.int8) if keep is not None else torch.empty(0, dtype=torch.int8)
    if not is_amax_s:
        amax_s = torch.zeros(1, dtype=_F32)
    return _output(out, q, q_scale_o), kept, dm, amax_s


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


# --- the Python API (Fp8FusedSDPA.py) ---------------------------------------------------------


def fp8_sdpa_fwd_wrapper(
    ctx: Any,
    q: Tensor,
    k: Tensor,
    v: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    softmax_mode: str = "None",
    d_scale_q: Scale = None,
    d_scale_k: Scale = None,
    d_scale_v: Scale = None,
    q_scale_s: Scale = None,
    q_scale_o: Scale = None,
    d_scale_s: Scale = None,
    is_amax_s: bool = False,
    is_amax_o: bool = False,
    valid_seq_len: Tensor | None = None,
    seq_padding_type: str = "left",
    recompute: bool | None = None,
) -> Any:
    """The bridge's forward wrapper, line for line: training only with the causal triangle,
    `valid_seq_len` only in causal inference without a mask, grouped-query heads reshaped."""
    from hpusim.hpex import gqa_input_reshape_fwd, gqa_output_reshape, is_gqa, recompute_sdp_enabled

    requires_backward = q.requires_grad or k.requires_grad or v.requires_grad
    softmax_mode, seq_padding_type = softmax_mode.lower(), seq_padding_type.lower()
    scale = 1.0 / math.sqrt(q.size(-1)) if scale is None else scale
    recompute = recompute_sdp_enabled() if recompute is None else recompute
    if requires_backward:
        assert is_causal, "Fp8 FusedSDPA in trining only supports Triangular mask"
    if valid_seq_len is not None:
        assert is_causal and not requires_backward and attn_mask is None, (
            "Valid sequence length is supported only in inference with is_causal(triangular) "
            "mask case"
        )
    gqa = is_gqa(q, k)
    if gqa:
        q, k, v, attn_mask = gqa_input_reshape_fwd(q, k, v, attn_mask)
    ops = torch.ops.hpu
    amax_o: Tensor | None = None
    if recompute:
        out, m, linv, seed, amax_s, amax_o = ops.fp8_sdpa_recomp_fwd(
            q, k, v, attn_mask, dropout_p, scale, is_causal, requires_backward, softmax_mode,
            d_scale_q, d_scale_k, d_scale_v, q_scale_s, q_scale_o, d_scale_s, is_amax_s,
            is_amax_o, valid_seq_len, seq_padding_type,
        )  # fmt: skip
        if gqa:
            out = gqa_output_reshape(out)
        if not requires_backward:
            return out, amax_s, amax_o
        ctx.save_for_backward(q, k, v, attn_mask, m, linv, seed, out)
    else:
        out, probs, dm, amax_s = ops.fp8_sdpa_fwd(
            q, k, v, attn_mask, dropout_p, scale, is_causal, softmax_mode, d_scale_q, d_scale_k,
            d_scale_v, q_scale_s, q_scale_o, d_scale_s, is_amax_s, valid_seq_len,
            seq_padding_type,
        )  # fmt: skip
        if gqa:
            out = gqa_output_reshape(out)
        if not requires_backward:
            return out, amax_s, None
        ctx.save_for_backward(q, k, v, probs, dm, out)
    ctx.dropout_p, ctx.scale, ctx.is_causal = dropout_p, scale, is_causal
    ctx.recompute, ctx.gqa, ctx.softmax_mode = recompute, gqa, softmax_mode
    return out, amax_s, amax_o


def fp8_sdpa_bwd_wrapper(ctx: Any, dout: Tensor, *args: Any) -> Any:
    """The bridge's backward wrapper: the bf16 attention backward kernels on what the forward
    saved (`sdpa_recomp_bwd` / `sdpa_bwd`)."""
    from hpusim.hpex import _gqa_grad_reshape as gqa_input_reshape_bwd
    from hpusim.hpex import gqa_output_reshape

    ops = torch.ops.hpu
    if ctx.recompute:
        q, k, v, mask, m, linv, seed, fwd_out = ctx.saved_tensors
        if ctx.gqa:
            dout, fwd_out = gqa_input_reshape_bwd(q, v, dout), gqa_input_reshape_bwd(q, v, fwd_out)
        dq, dk, dv = ops.sdpa_recomp_bwd(
            dout, q, k, v, mask, m, linv, seed, ctx.is_causal, ctx.dropout_p, ctx.scale,
            ctx.softmax_mode, fwd_out,
        )  # fmt: skip
    else:
        q, k, v, probs, dm, fwd_out = ctx.saved_tensors
        if ctx.gqa:
            dout, fwd_out = gqa_input_reshape_bwd(q, v, dout), gqa_input_reshape_bwd(q, v, fwd_out)
        dq, dk, dv = ops.sdpa_bwd(
            dout, q, k, v, probs, dm, ctx.is_causal, ctx.dropout_p, ctx.scale, fwd_out
        )
    if ctx.gqa:
        dq, dk, dv = gqa_output_reshape(dq), gqa_output_reshape(dk), gqa_output_reshape(dv)
    return (dq, dk, dv, *(None,) * 16)  # one gradient per forward argument


class Fp8FusedSDPA(torch.autograd.Function):
    """`hpex.kernels.Fp8FusedSDPA.apply(q, k, v, ...)`: `fp8_sdpa_fwd_wrapper`'s arguments."""

    @staticmethod
    def forward(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        return fp8_sdpa_fwd_wrapper(ctx, *args, **kwargs)

    @staticmethod
    def backward(ctx: Any, dout: Tensor, *args: Any) -> Any:
        return fp8_sdpa_bwd_wrapper(ctx, dout, *args)


def fp8_fused_sdpa(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    softmax_mode: str = "None",
    d_scale_q: Scale = None,
    d_scale_k: Scale = None,
    d_scale_v: Scale = None,
    q_scale_s: Scale = None,
    q_scale_o: Scale = None,
    d_scale_s: Scale = None,
    is_amax_s: bool = False,
    is_amax_o: bool = False,
    valid_seq_len: Tensor | None = None,
    seq_padding_type: str = "left",
    recompute: bool | None = None,
) -> Any:
    """`hpex.kernels.fp8_fused_sdpa(...)` -> (out, amax_s, amax_o)."""
    return Fp8FusedSDPA.apply(
        q, k, v, attn_mask, dropout_p, is_causal, scale, softmax_mode, d_scale_q, d_scale_k,
        d_scale_v, q_scale_s, q_scale_o, d_scale_s, is_amax_s, is_amax_o, valid_seq_len,
        seq_padding_type, recompute,
    )  # fmt: skip
