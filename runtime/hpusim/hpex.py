"""`habana_frameworks.torch.hpex` on the emulator: fused kernels, normalization, optimizers.

Same names, signatures and numerics as the bridge's 1.19 `hpex` package; each call launches the
bridge's fused custom op (`torch.ops.hpu.sdpa_recomp_fwd`, `rms_norm`, `optimizer_adamw`...,
defined in `hpu_ops.py`), so the emulated device sees ONE fused op where a Gaudi runs one
kernel, priced by `fused_costs.py`. Scalars the bridge feeds as device tensors (the AdamW step
size, SGD's learning rate, the clip norm) are device tensors here too, so a changing value does
not change the recipe key.

What no CPU emulator can provide (fp8 attention with hardware scaling, the media pipe, ...)
raises `NotImplementedError` naming the API and the emulator (`unavailable`).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterable
from enum import Enum
from typing import Any

import torch
from torch.optim import Optimizer

import hpusim.state as state
from hpusim.ctc_loss import CTCLoss as CTCLoss
from hpusim.fp8_attention import Scale
from hpusim.lazy import mark_step

Tensor = torch.Tensor
_HPU = torch.device("hpu")


def unavailable(api: str, why: str = "") -> Any:
    """A stand-in for `api` whose every use raises NotImplementedError naming it."""
    message = f"{api} is not available under the hpusim emulator" + (f": {why}" if why else "")

    class Unavailable:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            raise NotImplementedError(message)

        @staticmethod
        def apply(*args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError(message)

        def __init_subclass__(cls, **kwargs: Any) -> None:
            raise NotImplementedError(message)

    Unavailable.__name__ = Unavailable.__qualname__ = api.rsplit(".", 1)[-1]
    return Unavailable


def unavailable_function(api: str, why: str = "") -> Callable[..., Any]:
    message = f"{api} is not available under the hpusim emulator" + (f": {why}" if why else "")

    def fn(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(message)

    fn.__name__ = fn.__qualname__ = api.rsplit(".", 1)[-1]
    return fn


def _ops() -> Any:
    return torch.ops.hpu


def mark_step_if_lazy() -> None:
    """`htcore.step_closure._mark_step_if_lazy()`: a mark_step in lazy mode, else nothing."""
    rt = state.RT
    if rt is not None and rt.lazy:
        mark_step()


def is_lazy() -> bool:
    rt = state.RT
    return bool(rt is not None and rt.lazy)


# --- attention ------------------------------------------------------------------------------

_RECOMPUTE = [True]
"""`torch.hpu.enable_recompute_sdp` / `recompute_sdp_enabled` (the bridge's default is on)."""


def recompute_sdp_enabled() -> bool:
    return _RECOMPUTE[0]


def enable_recompute_sdp(enabled: bool) -> None:
    _RECOMPUTE[0] = bool(enabled)


def is_gqa(q: Tensor, k: Tensor) -> bool:
    """Grouped-query attention: 4-D inputs whose K/V have fewer (but more than one) heads."""
    return q.dim() == 4 and q.shape[1] != k.shape[1] and k.shape[1] != 1


def gqa_input_reshape_fwd(
    q: Tensor, k: Tensor, v: Tensor, attention_mask: Tensor | None
) -> tuple[Tensor, Tensor, Tensor, Tensor | None]:
    """[B, H, L, D] -> [B, G, H/G, L, D] for q and [B, G, 1, S, D] for k / v."""
    batch, heads, seq_q, dim = q.shape
    groups = k.shape[1]
    q = q.reshape(batch, groups, heads // groups, seq_q, dim)
    k = k.reshape(batch, groups, 1, k.shape[2], k.shape[3])
    v = v.reshape(batch, groups, 1, v.shape[2], v.shape[3])
    if attention_mask is not None:
        if attention_mask.shape[1] == heads:
            m = attention_mask
            attention_mask = m.reshape(m.shape[0], groups, heads // groups, m.shape[2], m.shape[3])
        else:
            attention_mask = attention_mask.unsqueeze(1)
    return q, k, v, attention_mask


def gqa_output_reshape(tensor: Tensor) -> Tensor:
    """[B, G, H/G, L, D] -> [B, H, L, D]."""
    b, g, per, seq, dim = tensor.shape
    return tensor.reshape(b, g * per, seq, dim)


def _gqa_grad_reshape(q: Tensor, v: Tensor, grad: Tensor) -> Tensor:
    return grad.reshape(q.shape[0], q.shape[1], q.shape[2], q.shape[3], v.shape[-1])


class FusedSDPA(torch.autograd.Function):
    """`hpex.kernels.FusedSDPA.apply(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False,
    scale=None, softmax_mode="None", recompute_mode=None, valid_seq_len=None,
    seq_padding_type="left", return_dropout_mask=False, return_attn_probs=False)`."""

    @staticmethod
    def forward(
        ctx: Any,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        attn_mask: Tensor | None = None,
        dropout_p: float = 0.0,
        is_causal: bool = False,
        scale: float | None = None,
        softmax_mode: str = "None",
        recompute_mode: bool | None = None,
        valid_seq_len: Tensor | None = None,
        seq_padding_type: str = "left",
        return_dropout_mask: bool = False,
        return_attn_probs: bool = False,
    ) -> Any:
        needs_grad = q.requires_grad or k.requires_grad or v.requires_grad
        softmax_mode = softmax_mode.lower()
        seq_padding_type = seq_padding_type.lower()
        scale = 1.0 / math.sqrt(q.size(-1)) if scale is None else scale
        recompute = recompute_sdp_enabled() if recompute_mode is None else bool(recompute_mode)
        if return_attn_probs:
            if needs_grad:
                raise AssertionError("return_attn_probs is supported only for inference mode")
            recompute = False
        if recompute and needs_grad and softmax_mode == "fast" and not is_causal:
            raise AssertionError(
                "Optimized softmax mode is supported in recompute training mode only in "
                "causal(triangular) mask case"
            )
        if valid_seq_len is not None and not (is_causal and not needs_grad and attn_mask is None):
            raise AssertionError(
                "Valid sequence length is supported only in inference with is_causal(triangular) "
                "mask case"
            )
        if recompute and return_dropout_mask:
            raise AssertionError("Return_dropout_mask is not supported in recompute mode")
        gqa = is_gqa(q, k)
        if gqa:
            q, k, v, attn_mask = gqa_input_reshape_fwd(q, k, v, attn_mask)
        ctx.dropout_p, ctx.scale, ctx.is_causal = dropout_p, scale, is_causal
        ctx.recompute, ctx.gqa, ctx.softmax_mode = recompute, gqa, softmax_mode
        if recompute:
            out, m, linv, seed = _ops().sdpa_recomp_fwd(
                q, k, v, attn_mask, dropout_p, scale, is_causal, needs_grad, softmax_mode,
                valid_seq_len, seq_padding_type,
            )  # fmt: skip
            if gqa:
                out = gqa_output_reshape(out)
            if needs_grad:
                ctx.save_for_backward(q, k, v, attn_mask, m, linv, seed, out)
            return out
        out, probs, dm = _ops().sdpa_fwd(
            q, k, v, attn_mask, dropout_p, scale, is_causal, softmax_mode, valid_seq_len,
            seq_padding_type,
        )  # fmt: skip
        if gqa:
            out = gqa_output_reshape(out)
            if dropout_p > 0.0:
                dm = gqa_output_reshape(dm)
            if return_attn_probs:
                probs = gqa_output_reshape(probs)
        if needs_grad:
            ctx.save_for_backward(q, k, v, probs, dm, out)
        extra = ([probs] if return_attn_probs and not needs_grad else []) + (
            [dm] if return_dropout_mask else []
        )
        return (out, *extra) if extra else out

    @staticmethod
    def backward(ctx: Any, dout: Tensor, *unused: Any) -> Any:
        nones = (None,) * 10
        if ctx.recompute:
            q, k, v, mask, m, linv, seed, fwd_out = ctx.saved_tensors
            if ctx.gqa:
                dout, fwd_out = _gqa_grad_reshape(q, v, dout), _gqa_grad_reshape(q, v, fwd_out)
            dq, dk, dv = _ops().sdpa_recomp_bwd(
                dout, q, k, v, mask, m, linv, seed, ctx.is_causal, ctx.dropout_p, ctx.scale,
                ctx.softmax_mode, fwd_out,
            )  # fmt: skip
        else:
            q, k, v, probs, dm, fwd_out = ctx.saved_tensors
            if ctx.gqa:
                dout, fwd_out = _gqa_grad_reshape(q, v, dout), _gqa_grad_reshape(q, v, fwd_out)
            dq, dk, dv = _ops().sdpa_bwd(
                dout, q, k, v, probs, dm, ctx.is_causal, ctx.dropout_p, ctx.scale, fwd_out
            )
        if ctx.gqa:
            dq, dk, dv = gqa_output_reshape(dq), gqa_output_reshape(dk), gqa_output_reshape(dv)
        return (dq, dk, dv, *nones)


# --- FP8 fused attention (Fp8FusedSDPA.py), over `hpusim.fp8_attention`'s kernels -------------


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
    ops = torch.ops.hpu
    if ctx.recompute:
        q, k, v, mask, m, linv, seed, fwd_out = ctx.saved_tensors
        if ctx.gqa:
            dout, fwd_out = _gqa_grad_reshape(q, v, dout), _gqa_grad_reshape(q, v, fwd_out)
        dq, dk, dv = ops.sdpa_recomp_bwd(
            dout, q, k, v, mask, m, linv, seed, ctx.is_causal, ctx.dropout_p, ctx.scale,
            ctx.softmax_mode, fwd_out,
        )  # fmt: skip
    else:
        q, k, v, probs, dm, fwd_out = ctx.saved_tensors
        if ctx.gqa:
            dout, fwd_out = _gqa_grad_reshape(q, v, dout), _gqa_grad_reshape(q, v, fwd_out)
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


# --- rotary embedding -----------------------------------------------------------------------


class RotaryPosEmbeddingMode(Enum):
    BLOCKWISE = 0
    PAIRWISE = 1


def match_data_types(input: Tensor, cos: Tensor, sin: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """fp32 everywhere if any of the three is fp32, else the input's dtype (the bridge's rule)."""
    if torch.float32 in (input.dtype, cos.dtype, sin.dtype):
        return input.float(), cos.float(), sin.float()
    return input, cos.to(input.dtype), sin.to(input.dtype)


def apply_rotary_pos_emb(p: Tensor, *args: Any) -> Tensor:
    """`apply_rotary_pos_emb(p, cos, sin, position_ids=None, offset=0, mode=BLOCKWISE)`, or
    `apply_rotary_pos_emb(p, rope_cache)` (ChatGLM)."""
    if len(args) > 1:
        cos, sin = args[0], args[1]
        position_ids = args[2] if len(args) > 2 else None
        offset = args[3] if len(args) > 3 else 0
        mode = args[4] if len(args) > 4 else RotaryPosEmbeddingMode.BLOCKWISE
        p, cos, sin = match_data_types(p, cos, sin)
        return _ops().rotary_pos_embedding(p, sin, cos, position_ids, offset, mode.value)
    return RotaryPosEmbeddingHelperV3.apply(p, args[0])


def apply_rotary_pos_emb_bwd(
    p_grad_in: Tensor,
    cos: Tensor,
    sin: Tensor,
    position_ids: Tensor | None = None,
    offset: int = 0,
    mode: RotaryPosEmbeddingMode = RotaryPosEmbeddingMode.BLOCKWISE,
) -> Tensor:
    p_grad_in, cos, sin = match_data_types(p_grad_in, cos, sin)
    return _ops().rotary_pos_embedding_backward(
        p_grad_in, sin, cos, position_ids, offset, mode.value
    )


class RotaryPosEmbeddingHelperV1(torch.autograd.Function):
    """GPT-NeoX (transformers <= 4.27.4) style: `(p, cos, sin, offset)`."""

    @staticmethod
    def forward(ctx: Any, p: Tensor, cos: Tensor, sin: Tensor, offset: int) -> Tensor:
        ctx.save_for_backward(cos, sin)
        ctx.offset = offset
        return apply_rotary_pos_emb(p, cos, sin, None, offset, RotaryPosEmbeddingMode.BLOCKWISE)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> Any:
        cos, sin = ctx.saved_tensors
        return apply_rotary_pos_emb_bwd(grad, cos, sin, None, ctx.offset), None, None, None


class RotaryPosEmbeddingHelperV2(torch.autograd.Function):
    """transformers > 4.27.4 style: `(p, cos, sin, position_ids)`."""

    @staticmethod
    def forward(
        ctx: Any, p: Tensor, cos: Tensor, sin: Tensor, position_ids: Tensor | None
    ) -> Tensor:
        ctx.save_for_backward(cos, sin, position_ids)
        return apply_rotary_pos_emb(p, cos, sin, position_ids, 0, RotaryPosEmbeddingMode.BLOCKWISE)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> Any:
        cos, sin, position_ids = ctx.saved_tensors
        return apply_rotary_pos_emb_bwd(grad, cos, sin, position_ids), None, None, None


def parse_rope_cache(p: Tensor, rope_cache: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """ChatGLM's rope cache -> (rotated part of p, pass-through part, sin, cos)."""
    seq, heads = p.size(0), p.size(2)
    rot = rope_cache.shape[-2] * 2
    p_rot, p_pass = p[..., :rot], p[..., rot:]
    cache = rope_cache[:seq].reshape(seq, -1, 1, rot // 2, 2)
    shaped = p_rot.reshape(seq, -1, heads, rot)
    cos = torch.repeat_interleave(cache[..., 0], 2, dim=-1).to(shaped.dtype)
    sin = torch.repeat_interleave(cache[..., 1], 2, dim=-1).to(shaped.dtype)
    return shaped, p_pass, sin, cos


class RotaryPosEmbeddingHelperV3(torch.autograd.Function):
    """ChatGLM style: `(p, rope_cache)`, pairwise."""

    @staticmethod
    def forward(ctx: Any, p: Tensor, rope_cache: Tensor) -> Tensor:
        shaped, p_pass, sin, cos = parse_rope_cache(p, rope_cache)
        ctx.save_for_backward(rope_cache)
        res = _ops().rotary_pos_embedding(
            shaped, sin, cos, None, 0, RotaryPosEmbeddingMode.PAIRWISE.value
        )
        return res if p_pass.shape[-1] == 0 else torch.cat((res, p_pass), dim=-1)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> Any:
        (rope_cache,) = ctx.saved_tensors
        shaped, g_pass, sin, cos = parse_rope_cache(grad, rope_cache)
        g = apply_rotary_pos_emb_bwd(shaped, cos, sin, None, 0, RotaryPosEmbeddingMode.PAIRWISE)
        return (g if g_pass.shape[-1] == 0 else torch.cat((g, g_pass), dim=-1)), None


class CustomSoftmax(torch.autograd.Function):
    """`CustomSoftmax.apply(input, flavor)`: the bf16 approximate softmax (exact here)."""

    @staticmethod
    def forward(ctx: Any, inp: Tensor, flavor: int) -> Tensor:
        out = _ops().custom_softmax(inp, flavor)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> Any:
        (out,) = ctx.saved_tensors
        return torch._softmax_backward_data(grad, out, out.dim() - 1, out.dtype), None


# --- normalization --------------------------------------------------------------------------


class RmsNormBwdMode(Enum):
    DEFAULT = 0
    STATIC_CASE_WIDTH_PARTITIONING = 1


class FusedRMSNorm(torch.autograd.Function):
    """`FusedRMSNorm.apply(data_in, gamma, eps, use_stages=True, bwd_mode=0, fast_math=False)`."""

    @staticmethod
    def forward(
        ctx: Any,
        data_in: Tensor,
        gamma: Tensor,
        eps: float,
        use_stages: bool = True,
        bwd_mode: int = 0,
        fast_math: bool = False,
    ) -> Tensor:
        op = _ops().rms_norm_fast if fast_math else _ops().rms_norm
        out, inverse_rms = op(data_in, gamma, eps)
        ctx.save_for_backward(inverse_rms, data_in, gamma)
        ctx.use_stages, ctx.bwd_mode, ctx.fast_math = use_stages, bwd_mode, fast_math
        return out

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> Any:
        inverse_rms, data_in, gamma = ctx.saved_tensors
        op = _ops().rms_norm_fast_backward if ctx.fast_math else _ops().rms_norm_backward
        mode = ctx.bwd_mode.value if isinstance(ctx.bwd_mode, Enum) else int(ctx.bwd_mode)
        dx, dgamma = op(grad, data_in, gamma, inverse_rms, ctx.use_stages, mode)
        return dx, dgamma, None, None, None, None


def _device_scalar(value: float, dtype: torch.dtype, device: Any) -> Tensor:
    """A one-element device tensor (the bridge feeds step sizes / norms to kernels this way)."""
    return torch.tensor([value], dtype=torch.float32).to(dtype).to(device, non_blocking=True)


class FusedClipNorm:
    """`FusedClipNorm(parameters, max_norm).clip_norm(parameters)` -> total norm (a tensor)."""

    def __init__(self, parameters: Iterable[Tensor], max_norm: float) -> None:
        params = list(parameters)
        self.dtype = params[0].dtype if params else torch.float32
        self.max_norm_t = _device_scalar(float(max_norm), self.dtype, _HPU)
        self.norm_type = 2.0

    def clip_norm(self, parameters: Tensor | Iterable[Tensor]) -> Tensor:
        mark_step_if_lazy()
        if isinstance(parameters, Tensor):
            grads = [parameters.grad] if parameters.grad is not None else []
        else:
            grads = [p.grad for p in parameters if p.grad is not None]
        if not grads:
            return torch.tensor(0.0)
        grads.append(torch.zeros(1).to(self.dtype).to(_HPU))  # the total-norm placeholder
        with torch.no_grad():
            total: Tensor = _ops().fused_clip_norm(grads, self.max_norm_t, self.norm_type)
        mark_step_if_lazy()
        return total


# --- optimizers -----------------------------------------------------------------------------


def _step_wrapped(step: Callable[..., Any]) -> Callable[..., Any]:
    def step_and_mark(*args: Any, **kwargs: Any) -> Any:
        result = step(*args, **kwargs)
        mark_step_if_lazy()
        return result

    step_and_mark.__name__ = step.__name__
    step_and_mark.__doc__ = step.__doc__
    return step_and_mark


class FusedAdamW(Optimizer):
    """`hpex.optimizers.FusedAdamW(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6,
    weight_decay=0.0, bias_correction=True, moments_dtype=None)`: one `hpu::optimizer_adamw`
    per parameter group; the bias-corrected step size is a device tensor."""

    def __init__(
        self,
        params: Any,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-6,
        weight_decay: float = 0.0,
        bias_correction: bool = True,
        moments_dtype: Any = None,
    ) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr} - should be >= 0.0")
        for i in (0, 1):
            if not 0.0 <= betas[i] < 1.0:
                raise ValueError(f"Invalid beta parameter: {betas[i]} - should be in [0.0, 1.0[")
        if eps < 0.0:
            raise ValueError(f"Invalid epsilon value: {eps} - should be >= 0.0")
        defaults = dict(
            lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, bias_correction=bias_correction
        )
        super().__init__(params, defaults)
        self.neg_step_list: list[Tensor] = []
        self.modified_wd_list: list[Tensor] = []
        self.is_lazy = is_lazy()
        self.moments_dtype = moments_dtype
        self.moments_in_fp8 = False
        _refuse_fp8_moments("FusedAdamW", moments_dtype)

    def get_moment_dtypes(self, param_dtype: torch.dtype) -> tuple[Any, Any]:
        return _moment_dtypes(self.moments_dtype, param_dtype)

    @staticmethod
    def is_bias_correction(group: dict[str, Any]) -> bool:
        if "bias_correction" in group:
            return bool(group["bias_correction"])
        if "correct_bias" in group:
            return bool(group["correct_bias"])
        return True

    @_step_wrapped
    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = closure() if closure is not None else None
        self.neg_step_list.clear()
        self.modified_wd_list.clear()
        for group in self.param_groups:
            mark_step_if_lazy()
            grads, weights, avgs, avg_sqs = [], [], [], []
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise RuntimeError(
                        "Adam does not support sparse gradients, please consider SparseAdam"
                    )
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    d1, d2 = self.get_moment_dtypes(p.dtype)
                    state["exp_avg"] = torch.zeros(p.shape, dtype=d1).to(p.device)
                    state["exp_avg_sq"] = torch.zeros(p.shape, dtype=d2).to(p.device)
                grads.append(p.grad.data)
                weights.append(p.data)
                avgs.append(state["exp_avg"])
                avg_sqs.append(state["exp_avg_sq"])
            if not weights:
                continue
            beta1, beta2 = group["betas"]
            group["step"] = group.get("step", 0) + 1
            step_size = group["lr"]
            if self.is_bias_correction(group):
                step_size = _corrected_step_size(step_size, beta1, beta2, group["step"])
            neg_step_t = _device_scalar(-step_size, weights[0].dtype, weights[0].device)
            self.neg_step_list.append(neg_step_t)
            modified_wd = 1.0 - group["weight_decay"] * group["lr"]
            _launch_adamw(
                self.is_lazy, (grads, weights, avgs, avg_sqs), neg_step_t, (beta1, beta2),
                group["eps"], modified_wd, weights[0].dtype, self.modified_wd_list,
            )  # fmt: skip
        return loss


def _corrected_step_size(lr: float, beta1: float, beta2: float, step: float) -> float:
    """AdamW's bias-corrected step size at `step` (the bridge's, computed on the host)."""
    return lr * math.sqrt(1.0 - beta2**step) / (1.0 - beta1**step)


def _launch_adamw(
    lazy: bool, lists: tuple[list[Tensor], ...], neg_step_t: Tensor, betas: tuple[float, float],
    eps: float, modified_wd: float, wd_dtype: torch.dtype, wd_list: list[Tensor],
) -> None:  # fmt: skip
    """One `hpu::optimizer_adamw` over (grads, weights, exp_avgs, exp_avg_sqs): the decay a
    float in lazy mode, a device tensor (kept in `wd_list`) in eager mode, as the bridge's."""
    if lazy:
        _ops().optimizer_adamw(*lists, neg_step_t, *betas, eps, modified_wd)
        return
    wd_t = _device_scalar(modified_wd, wd_dtype, lists[1][0].device)
    wd_list.append(wd_t)
    _ops().optimizer_adamw(*lists, neg_step_t, *betas, eps, wd_t, modified_wd != 1.0)


def _moment_dtypes(moments_dtype: Any, param_dtype: torch.dtype) -> tuple[Any, Any]:
    """(exp_avg, exp_avg_sq) dtypes: the parameter's, one given dtype, or a given pair."""
    if moments_dtype is None:
        return param_dtype, param_dtype
    if isinstance(moments_dtype, tuple):
        return moments_dtype
    return moments_dtype, moments_dtype


def _refuse_fp8_moments(api: str, moments_dtype: Any) -> None:
    fp8 = (torch.float8_e4m3fn, torch.float8_e5m2)
    dts = moments_dtype if isinstance(moments_dtype, tuple) else (moments_dtype,)
    if any(d in fp8 for d in dts):
        raise NotImplementedError(
            f"{api}(moments_dtype=fp8) is not available under the hpusim emulator: "
            "fp8 moments with per-tensor scales need the device's fp8 kernels"
        )


class GradientsFusedAdamW:
    """`hpex.optimizers.distributed.FusedAdamW(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6,
    weight_decay=0.0, moments_dtype=None)`: the functional form (not a torch Optimizer, one
    parameter group, not sharded): `step(gradients)` takes the gradients, one per parameter
    (None skips it), and runs one `hpu::optimizer_adamw` over those with a gradient. The step
    count is the first updated parameter's; the step size a float32 device tensor."""

    def __init__(
        self,
        params: list[Tensor],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-6,
        weight_decay: float = 0.0,
        _allow_empty_param_list: bool = False,
        moments_dtype: Any = None,
    ) -> None:
        _require_non_negative(lr=lr, epsilon=eps)
        for i in (0, 1):
            if not 0.0 <= betas[i] < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")
        _require_non_negative(weight_decay=weight_decay)
        if len(params) == 0 and not _allow_empty_param_list:
            raise ValueError("optimizer got an empty parameter list")
        _refuse_fp8_moments("hpex.optimizers.distributed.FusedAdamW", moments_dtype)
        self.defaults = {
            "lr": lr, "eps": eps, "beta1": betas[0], "beta2": betas[1],
            "weight_decay": weight_decay,
        }  # fmt: skip
        self.state: dict[Tensor, dict[str, Tensor]] = {}
        self.param_group = {"params": params}
        self.neg_step_list: list[Tensor] = []
        self.modified_wd_list: list[Tensor] = []
        self.is_lazy = is_lazy()
        self.moments_dtype = moments_dtype

    def get_moment_dtypes(self, param_dtype: torch.dtype) -> tuple[Any, Any]:
        return _moment_dtypes(self.moments_dtype, param_dtype)

    def _state_of(self, param: Tensor) -> dict[str, Tensor]:
        if param not in self.state:
            d1, d2 = self.get_moment_dtypes(param.dtype)
            self.state[param] = {
                "step": torch.tensor(0.0),
                "exp_avg": torch.zeros_like(param, dtype=d1),
                "exp_avg_sq": torch.zeros_like(param, dtype=d2),
            }
        return self.state[param]

    def step(self, gradients: list[Tensor | None]) -> None:
        params = self.param_group["params"]
        if len(params) != len(gradients):
            raise ValueError(
                "the gradients passed in does not equal to the size of the parameters!"
                f"Params length: {len(params)}. Gradients length: {len(gradients)}"
            )
        self.neg_step_list.clear()
        self.modified_wd_list.clear()
        grads, weights, avgs, avg_sqs, steps = [], [], [], [], []
        for param, grad in zip(params, gradients, strict=True):
            if grad is None:
                continue
            state = self._state_of(param)
            state["step"] += 1
            steps.append(state["step"].item())
            grads.append(grad)
            weights.append(param)
            avgs.append(state["exp_avg"])
            avg_sqs.append(state["exp_avg_sq"])
        if not weights:
            return
        beta1, beta2 = self.defaults["beta1"], self.defaults["beta2"]
        step_size = _corrected_step_size(self.defaults["lr"], beta1, beta2, steps[0])
        neg_step_t = _device_scalar(-step_size, torch.float32, weights[0].device)
        self.neg_step_list.append(neg_step_t)
        modified_wd = 1.0 - self.defaults["weight_decay"] * self.defaults["lr"]
        with torch.no_grad():
            _launch_adamw(
                self.is_lazy, (grads, weights, avgs, avg_sqs), neg_step_t, (beta1, beta2),
                self.defaults["eps"], modified_wd, torch.float32, self.modified_wd_list,
            )  # fmt: skip


def _require_non_negative(**values: float) -> None:
    """torch's optimizers' argument checks: `Invalid learning rate: -1`, `Invalid momentum
    value: -1`."""
    for key, value in values.items():
        if value < 0.0:
            name = "learning rate" if key == "lr" else f"{key} value"
            raise ValueError(f"Invalid {name}: {value}")


class FusedSGD(Optimizer):
    """`hpex.optimizers.FusedSGD(params, lr, momentum=0, weight_decay=0, dampening=0,
    nesterov=False)`: `hpu::optimizer_sgd` / `hpu::optimizer_sgd_momentum` per group."""

    def __init__(
        self,
        params: Any,
        lr: float,
        momentum: float = 0,
        weight_decay: float = 0,
        dampening: float = 0,
        nesterov: bool = False,
    ) -> None:
        _require_non_negative(
            lr=lr, momentum=momentum, weight_decay=weight_decay, dampening=dampening
        )
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(
            lr=lr,
            momentum=momentum,
            weight_decay=weight_decay,
            dampening=dampening,
            nesterov=nesterov,
        )
        super().__init__(params, defaults)
        self.lr_list: list[Tensor] = []
        self.lr_t: Tensor | None = None
        self.step_t = torch.tensor([0], dtype=torch.int32).to(_HPU, non_blocking=True)
        self.is_lazy = is_lazy()
        mark_step_if_lazy()

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = closure() if closure is not None else None
        self.lr_list.clear()
        for group in self.param_groups:
            self.lr_t = _device_scalar(group["lr"], torch.float32, _HPU)
            self.lr_list.append(self.lr_t)
            params = [p for p in group["params"] if p.grad is not None]
            grads = [p.grad.data for p in params]
            weights = [p.data for p in params]
            mark_step_if_lazy()
            if group["momentum"] == 0:
                _ops().optimizer_sgd(
                    grads, weights, self.lr_t, group["weight_decay"], group["momentum"],
                    group["dampening"], group["nesterov"],
                )  # fmt: skip
            else:
                bufs = []
                for p in params:
                    state = self.state[p]
                    if "momentum_buffer" not in state:
                        state["momentum_buffer"] = torch.zeros(p.grad.shape).to(_HPU)
                    bufs.append(state["momentum_buffer"])
                momentum_t = torch.tensor(group["momentum"]).to(_HPU, non_blocking=True)
                _ops().optimizer_sgd_momentum(
                    grads, weights, bufs, self.step_t, self.lr_t, momentum_t,
                    group["weight_decay"], group["dampening"], group["nesterov"],
                )  # fmt: skip
            mark_step_if_lazy()
        return loss


class FusedAdagrad(Optimizer):
    """`hpex.optimizers.FusedAdagrad(params, lr=1e-2, lr_decay=0, weight_decay=0,
    initial_accumulator_value=0, eps=1e-10)`: one `hpu::fused_adagrad` per group."""

    def __init__(
        self,
        params: Any,
        lr: float = 1e-2,
        lr_decay: float = 0,
        weight_decay: float = 0,
        initial_accumulator_value: float = 0,
        eps: float = 1e-10,
    ) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        defaults = dict(
            lr=lr,
            lr_decay=lr_decay,
            eps=eps,
            weight_decay=weight_decay,
            initial_accumulator_value=initial_accumulator_value,
        )
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["sum"] = torch.full_like(p, fill_value=initial_accumulator_value)
            group["lr_t"] = torch.tensor([lr]).to(_HPU)
            group["step_t"] = torch.tensor([0], dtype=torch.int32).to(_HPU, non_blocking=True)
        mark_step_if_lazy()

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            mark_step_if_lazy()
            params = [p for p in group["params"] if p.grad is not None]
            group["step_t"].add_(1)
            _ops().fused_adagrad(
                [p.grad.data for p in params], [p.data for p in params],
                [self.state[p]["sum"] for p in params], group["step_t"], group["lr_t"],
                group["weight_decay"], group["lr_decay"], group["eps"],
            )  # fmt: skip
        return loss


class FusedLamb(Optimizer):
    """`hpex.optimizers.FusedLamb(params, lr=1e-3, bias_correction=True, betas=(0.9, 0.999),
    eps=1e-6, weight_decay=0.01, amsgrad=False, adam_w_mode=True, grad_averaging=True,
    set_grad_none=True, max_grad_norm=1.0, use_lamb=False, fused=False, dtype=None)`:
    `hpu::optimizer_lamb_fused_norm`, then `phase1` and `phase2` per group."""

    def __init__(
        self,
        params: Any,
        lr: float = 1e-3,
        bias_correction: bool = True,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-6,
        weight_decay: float = 0.01,
        amsgrad: bool = False,
        adam_w_mode: bool = True,
        grad_averaging: bool = True,
        set_grad_none: bool = True,
        max_grad_norm: float | None = 1.0,
        use_lamb: bool = False,
        fused: bool = False,
        dtype: Any = None,
    ) -> None:
        if amsgrad:
            raise RuntimeError("FusedLamb does not support the AMSGrad variant.")
        defaults = dict(
            lr=lr,
            bias_correction=bias_correction,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            grad_averaging=grad_averaging,
            max_grad_norm=max_grad_norm,
        )
        super().__init__(params, defaults)
        self.fused = fused
        self.adam_w_mode = 1 if adam_w_mode else 0
        self.set_grad_none = set_grad_none
        self.use_lamb = use_lamb
        self.device = self.param_groups[0]["params"][0].device
        self.dtype = dtype

    def zero_grad(self, set_to_none: bool = True) -> None:
        if self.set_grad_none:
            for group in self.param_groups:
                for p in group["params"]:
                    p.grad = None
        else:
            super().zero_grad(set_to_none=False)

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = closure() if closure is not None else None
        max_norm = self.defaults["max_grad_norm"]
        if max_norm is not None:
            norms = [
                p.grad.data if self.dtype is None else p.grad.data.to(self.dtype)
                for g in self.param_groups
                for p in g["params"]
                if p.grad is not None
            ]
            clip = _ops().optimizer_lamb_fused_norm(norms, max_norm)
        else:
            clip = torch.tensor([1.0], dtype=torch.float32, device=self.device)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            group["step"] = group.get("step", 0) + 1
            if group["bias_correction"]:
                bc1 = torch.tensor(1.0 - beta1 ** group["step"], device=self.device)
                bc2 = torch.tensor(1.0 - beta2 ** group["step"], device=self.device)
            else:
                bc1 = torch.tensor(1.0, device=self.device)
                bc2 = torch.tensor(1.0, device=self.device)
            mark_step_if_lazy()
            params = [p for p in group["params"] if p.grad is not None]
            lists: list[list[Tensor]] = [[] for _ in range(7)]
            for p in params:
                state = self.state[p]
                if len(state) == 0:
                    state["exp_avg"] = torch.zeros(p.shape).to(self.device).to(p.dtype)
                    state["exp_avg_sq"] = torch.zeros(p.shape).to(self.device).to(p.dtype)
                for lst, t in zip(
                    lists,
                    (
                        p.grad.data,
                        p.data,
                        state["exp_avg"],
                        state["exp_avg_sq"],
                        torch.empty((1,), device=self.device).to(p.dtype),
                        torch.empty((1,), device=self.device).to(p.dtype),
                        torch.empty_like(state["exp_avg"]).to(p.dtype),
                    ),
                    strict=True,
                ):
                    lst.append(t)
            mark_step_if_lazy()
            if not params:
                continue
            grads, weights, avgs, avg_sqs, wnorms, anorms, steps = lists
            _ops().optimizer_lamb_phase1(
                grads, weights, avgs, avg_sqs, wnorms, anorms, steps, clip,
                1 if group["grad_averaging"] else 0, beta1, beta2, group["eps"], bc1, bc2,
                group["weight_decay"],
            )  # fmt: skip
            neg_step = _device_scalar(-group["lr"], torch.float32, self.device)
            _ops().optimizer_lamb_phase2(
                weights, anorms, wnorms, steps, neg_step, group["weight_decay"], self.use_lamb
            )
            mark_step_if_lazy()
        return loss


class FusedLars(Optimizer):
    """`hpex.optimizers.FusedLars(optimizer, skip_mask, eeta=0.001, eps=1e-8)`: wraps an SGD
    optimizer; `hpu::optimizer_lars` rescales the gradients by the trust ratio first. An
    `Optimizer` over the wrapped one's param groups and state, as the bridge's is (LR schedulers
    take it: Model-References' ResNet LARS schedule wraps it in one); the wrapped optimizer's
    defaults gain `skip_mask`, `eeta` and `eps`, as there."""

    def __init__(
        self, optimizer: Optimizer, skip_mask: list[int], eeta: float = 0.001, eps: float = 1e-8
    ):
        self.optim = optimizer
        self.skip_mask = list(skip_mask)
        self.eeta = eeta
        self.eps = eps
        defaults = optimizer.defaults
        defaults.update({"skip_mask": skip_mask, "eeta": eeta, "eps": eps})
        super().__init__(optimizer.param_groups, defaults)
        self.state = optimizer.state

    def __getstate__(self) -> Any:
        return self.optim.__getstate__()

    def zero_grad(self, set_to_none: bool = False) -> None:
        self.optim.zero_grad(set_to_none=set_to_none)

    def state_dict(self) -> dict[str, Any]:
        return self.optim.state_dict()

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.optim.load_state_dict(state_dict)

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        for group in self.optim.param_groups:
            wd = group.get("weight_decay", 0.0)
            group["weight_decay"] = 0.0
            params = [p for p in group["params"] if p.grad is not None]
            masks = self.skip_mask[: len(params)]
            lr_t = _device_scalar(group["lr"], torch.float32, _HPU)
            _ops().optimizer_lars(
                [p.data for p in params], [p.grad.data for p in params], masks, self.eeta, wd,
                self.eps, lr_t,
            )  # fmt: skip
            group["lr_before_lars"] = group["lr"]
            group["lr"] = 1.0
        loss = self.optim.step(closure)
        for group in self.optim.param_groups:
            group["lr"] = group.pop("lr_before_lars", group["lr"])
        return loss


class FusedResourceApplyMomentum(Optimizer):
    """`hpex.optimizers.FusedResourceApplyMomentum(params, lr, momentum=0, weight_decay=0,
    nesterov=False)` (the 1.19 signature; MLPerf ResNet-50 passes `weight_decay`, which FusedLars
    applies: the step itself, like the bridge's, uses neither it nor `lr`): the first step
    stores each gradient as its momentum buffer and adds it to the parameter; later steps run
    one `hpu::optimizer_resource_apply_momentum` per group (TF's ResourceApplyMomentum)."""

    def __init__(
        self,
        params: Any,
        lr: float,
        momentum: float = 0,
        weight_decay: float = 0,
        nesterov: bool = False,
    ) -> None:
        _require_non_negative(lr=lr, momentum=momentum, weight_decay=weight_decay)
        if nesterov and momentum <= 0:
            raise ValueError("Nesterov momentum requires a momentum")
        defaults = dict(lr=lr, momentum=momentum, weight_decay=weight_decay, nesterov=nesterov)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            momentum = group["momentum"]
            mark_step_if_lazy()
            if any("momentum_buffer" not in self.state[p] for p in params):
                for p in params:  # the first step (the bridge's Python path)
                    d_p = p.grad
                    if momentum != 0:
                        d_p = self.state[p]["momentum_buffer"] = d_p.clone().detach()
                    p.add_(d_p)
            else:
                interleaved = [t for p in params for t in (p, self.state[p]["momentum_buffer"])]
                _ops().optimizer_resource_apply_momentum(
                    interleaved, [p.grad for p in params], momentum
                )
            mark_step_if_lazy()
        return loss


class _MarkstepMixin:
    """`hpex.optimizers.Adam` / `AdamW`: torch's optimizers with a mark_step after `step()`
    (what `PT_HPU_REPLACE_ADAM_ADAMW=1` installs in place of torch's)."""

    def step(self, *args: Any, **kwargs: Any) -> Any:
        loss = super().step(*args, **kwargs)  # type: ignore[misc]
        mark_step_if_lazy()
        return loss


class Adam(_MarkstepMixin, torch.optim.Adam):
    pass


class AdamW(_MarkstepMixin, torch.optim.AdamW):
    pass


class FusedEMA:
    """`hpex.movingavrg.FusedEMA(model, decay=0.9999, updates=0)` (the 1.19 signature, YOLO's
    ModelEMA): an fp32 copy of the model in eval mode; `update(model)` runs one
    `hpu::optimizer_ema` over the state dicts with the ramped decay
    `decay * (1 - exp(-updates / 2000))`."""

    def __init__(self, model: torch.nn.Module, decay: float = 0.9999, updates: float = 0) -> None:
        if not decay >= 0.0:
            raise ValueError(f"Invalid decay value: {decay}")
        parallel = (torch.nn.parallel.DataParallel, torch.nn.parallel.DistributedDataParallel)
        source = getattr(model, "module", model) if type(model) in parallel else model
        self.ema = copy.deepcopy(source).eval()
        self.base_decay = decay
        self.updates = updates
        self.updated_ema = list(self.ema.state_dict().values())

    def decay(self, updates: float) -> float:
        return self.base_decay * (1 - math.exp(-updates / 2000))

    def update(self, model: torch.nn.Module) -> None:
        mark_step_if_lazy()
        inputs = list(model.state_dict().values())
        with torch.no_grad():
            self.updates += 1
            d = torch.tensor([self.decay(self.updates)]).to(_HPU)
            _ops().optimizer_ema(inputs, self.updated_ema, d)
        mark_step_if_lazy()

    def update_attr(
        self,
        model: torch.nn.Module,
        include: Iterable[str] = (),
        exclude: Iterable[str] = ("process_group", "reducer"),
    ) -> None:
        """Copy `model`'s public attributes onto the EMA copy (`include` only, if given)."""
        include, exclude = tuple(include), tuple(exclude)
        for key, value in model.__dict__.items():
            if (include and key not in include) or key.startswith("_") or key in exclude:
                continue
            setattr(self.ema, key, value)


EmbeddingBag = unavailable("habana_frameworks.torch.hpex.kernels.EmbeddingBag", "no CPU reference")
PySDPA = unavailable(
    "habana_frameworks.torch.hpex.kernels.PySDPA", "use FusedSDPA (the emulated fused kernel)"
)
PySDPAHinted = unavailable(
    "habana_frameworks.torch.hpex.kernels.PySDPAHinted", "use FusedSDPA (the emulated fused kernel)"
)
