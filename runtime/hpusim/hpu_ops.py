"""The bridge's fused custom ops (`torch.ops.hpu.*`) with CPU reference implementations.

Schemas are the bridge's (1.19 `hpu_ops` registrations), so `torch.ops.hpu.sdpa_recomp_fwd(...)`
and friends take the same arguments and return the same tuples. Each is ONE op: called on hpu
tensors it reaches the emulator's dispatch as one `hpu::<name>` host op and one device op, priced
by `fused_costs.py` (engine, FLOPs, bytes), exactly where the bridge would launch one fused
kernel. The CPU reference computes in the inputs' dtype with fp32 statistics (softmax max and
sum, RMS), like the TPC kernels; results agree with the composite PyTorch formulas to rounding.

Registered once per process at the first `hpusim.enable()` (torch cannot unregister an op); the
kernels are CompositeExplicitAutograd, so they also serve FakeTensor tracing (torch.compile).
"""

from __future__ import annotations

import math
from typing import Any, Final

import torch

import hpusim.ctc_loss as ctc_loss
import hpusim.custom_ops as custom_ops
import hpusim.fp8_attention as fp8_attention
import hpusim.fp8_ops as fp8_ops
from hpusim.attention_math import dropout_mask as _dropout_mask
from hpusim.attention_math import new_seed as _new_seed
from hpusim.attention_math import scores as _scores
from hpusim.attention_math import softmax_rows

Tensor = torch.Tensor

SCHEMAS: Final[dict[str, str]] = {
    "sdpa_recomp_fwd": "(Tensor q, Tensor k, Tensor v, Tensor? attention_mask, float p, float scale, bool is_causal, bool requires_backward, str softmax_mode, Tensor? valid_seq_len, str seq_padding_type) -> (Tensor, Tensor, Tensor, Tensor)",
    "sdpa_recomp_bwd": "(Tensor grad, Tensor q, Tensor k, Tensor v, Tensor? attention_mask, Tensor m, Tensor linv, Tensor? seed, bool is_causal, float p, float scale, str softmax_mode, Tensor fwd_out) -> (Tensor, Tensor, Tensor)",
    "sdpa_recomp_fwd_dropout": "(Tensor q, Tensor k, Tensor v, Tensor? attention_mask, float p, float scale, bool is_causal, bool requires_backward, str softmax_mode, Tensor? valid_seq_len, str seq_padding_type) -> (Tensor, Tensor, Tensor, Tensor)",
    "sdpa_recomp_fwd_non_dropout": "(Tensor q, Tensor k, Tensor v, Tensor? attention_mask, float p, float scale, bool is_causal, bool requires_backward, str softmax_modem, Tensor? valid_seq_len, str seq_padding_type) -> (Tensor, Tensor, Tensor, Tensor)",
    "sdpa_recomp_fwd_dropout_seed": "(Tensor seed, Tensor q, Tensor k, Tensor v, Tensor? attention_mask, float p, float scale, bool is_causal, bool requires_backward, str softmax_mode, Tensor? valid_seq_len, str seq_padding_type) -> (Tensor, Tensor, Tensor, Tensor)",
    "sdpa_fwd_dropout": "(Tensor q, Tensor k, Tensor v, Tensor? attention_mask, float p, float scale, bool is_causal, str softmax_mode, Tensor? valid_seq_len, str seq_padding_type) -> (Tensor, Tensor, Tensor)",
    "sdpa_fwd_non_dropout": "(Tensor q, Tensor k, Tensor v, Tensor? attention_mask, float p, float scale, bool is_causal, str softmax_mode, Tensor? valid_seq_len, str seq_padding_type) -> (Tensor, Tensor, Tensor)",
    "sdpa_fwd_dropout_seed": "(Tensor seed, Tensor q, Tensor k, Tensor v, Tensor? attention_mask, float p, float scale, bool is_causal, str softmax_mode, Tensor? valid_seq_len, str seq_padding_type) -> (Tensor, Tensor, Tensor)",
    "sdpa_fwd": "(Tensor q, Tensor k, Tensor v, Tensor? attention_mask, float p, float scale, bool is_causal, str softmax_mode, Tensor? valid_seq_len, str seq_padding_type) -> (Tensor, Tensor, Tensor)",
    "sdpa_bwd": "(Tensor grad, Tensor q, Tensor k, Tensor v, Tensor P, Tensor? dm, bool is_causal, float p, float scale, Tensor fwd_out) -> (Tensor, Tensor, Tensor)",
    "rms_norm": "(Tensor data_in, Tensor gamma, float epsilon) -> (Tensor, Tensor)",
    "rms_norm_fast": "(Tensor data_in, Tensor gamma, float epsilon) -> (Tensor, Tensor)",
    "rms_norm_backward": "(Tensor grad_in, Tensor data_in, Tensor gamma, Tensor inverse_rms, bool use_stages, int bwd_mode) -> (Tensor, Tensor)",
    "rms_norm_fast_backward": "(Tensor grad_in, Tensor data_in, Tensor gamma, Tensor inverse_rms, bool use_stages, int bwd_mode) -> (Tensor, Tensor)",
    "rotary_pos_embedding": "(Tensor input, Tensor sin, Tensor cos, Tensor? position_ids, int offset, int mode) -> Tensor",
    "rotary_pos_embedding_backward": "(Tensor grad_in, Tensor sin, Tensor cos, Tensor? position_ids, int offset, int mode) -> Tensor",
    "optimizer_adamw": "(Tensor[] gradient_vec, Tensor(a!)[] weight_vec, Tensor(b!)[] exp_avg_vec, Tensor(c!)[] exp_avg_sq_vec, Tensor neg_step_t, float beta1, float beta2, float epsilon, float weight_decay, Tensor(d!)[]? exp_avg_scales=None, Tensor(e!)[]? exp_avg_sq_scales=None) -> ()",
    "optimizer_adamw.wd_tensor": "(Tensor[] gradient_vec, Tensor(a!)[] weight_vec, Tensor(b!)[] exp_avg_vec, Tensor(c!)[] exp_avg_sq_vec, Tensor neg_step_t, float beta1, float beta2, float epsilon, Tensor weight_decay, bool has_weight_decay, Tensor(d!)[]? exp_avg_scales=None, Tensor(e!)[]? exp_avg_sq_scales=None) -> ()",
    "optimizer_sgd": "(Tensor[] gradients, Tensor(a!)[] weights_in, Tensor(b!) learning_rate, float wd, float mom, float damp, bool nesterov) -> ()",
    "optimizer_sgd_momentum": "(Tensor[] gradients, Tensor(a!)[] weights_in, Tensor(b!)[] momentum_in, Tensor epoch_num, Tensor(c!) learning_rate, Tensor(d!) mom, float wd, float damp, bool nesterov) -> ()",
    "fused_adagrad": "(Tensor[] gradients, Tensor(a!)[] weights, Tensor(b!)[] variances, Tensor epoch_num, Tensor lr, float wd, float lrd, float epsilon) -> ()",
    "fused_clip_norm": "(Tensor(a!)[] grad, Tensor max_norm, float norm_type) -> Tensor",
    # _hpex_C.fused_norm's op (habana_kernels/norm_kernels.cpp:1016-1017)
    "fused_norm_lazy": "(Tensor(a!)[] grad, Tensor max_norm, float norm_type) -> Tensor",
    "optimizer_lamb_fused_norm": "(Tensor[] grad, float max_norm) -> Tensor",
    "optimizer_lamb_phase1": "(Tensor[] gradients, Tensor[] weights, Tensor(a!)[] exp_avg, Tensor(b!)[] exp_avg_sq, Tensor(c!)[] out_weight_norms, Tensor(d!)[] out_adam_norms, Tensor(e!)[] out_adam_steps, Tensor clip_global_grad_norm, int grad_averaging, float beta1, float beta2, float epsilon, Tensor bias_correction1, Tensor bias_correction2, float weight_decay) -> ()",
    "optimizer_lamb_phase2": "(Tensor(a!)[] weights, Tensor[] adam_norms, Tensor[] weight_norms, Tensor[] adam_steps, Tensor neg_step, float wd, bool use_lamb) -> ()",
    "optimizer_ema": "(Tensor[] model_inputs, Tensor(a!)[] updated_ema, Tensor decay) -> ()",
    "optimizer_lars": "(Tensor[] params, Tensor(a!)[] grads, int[] skip_masks, float eeta, float weight_decay, float eps, Tensor lr) -> ()",
    "optimizer_resource_apply_momentum": "(Tensor(a!)[] params_momentum_buf_list, Tensor[] dp_list, float momentum) -> ()",
    "custom_softmax": "(Tensor input, int flavor) -> Tensor",
    "convert_from_int4": "(Tensor input, Tensor scale, Tensor? zero_point, ScalarType out_dtype) -> Tensor",
    "convert_from_uint4": "(Tensor input, Tensor scale, Tensor? zero_point, ScalarType out_dtype) -> Tensor",
    "scaled_masked_softmax": "(Tensor input, Tensor mask, float scale) -> Tensor",
}
"""Op name (with `.overload`) -> schema without the name, as the bridge registers them."""

EMULATED_FP8: Final[dict[str, str]] = {
    "cast_to_fp8_v2": "(Tensor input, Tensor? scale=None, bool stochastic_rounding=False, bool is_amax=False, ScalarType dtype=None, int[]? scale_shape=None) -> (Tensor, Tensor)",
    "cast_from_fp8": "(Tensor input, Tensor? scale, ScalarType out_dtype, int[]? scale_shape=None) -> Tensor",
    "fp8_gemm_v2": "(Tensor A, bool trans_A, Tensor B, bool trans_B, Tensor? D, ScalarType out_dtype, Tensor? A_scale_inv=None, Tensor? B_scale_inv=None, Tensor? bias=None, bool accumulate=False, int[]? B_scale_shape=None) -> Tensor",
}
"""The bridge's FP8 casts and GEMM, emulated in `hpusim.fp8_ops` (casts saturate to
the device's FP8 range; the GEMM dequantizes, then multiplies); the device model runs the GEMM
at the MME's FP8 rate."""

_F32: Final = torch.float32

# --- attention ------------------------------------------------------------------------------


def _reduce_to(t: Tensor, shape: torch.Size) -> Tensor:
    """Sum `t` over the dimensions broadcast from `shape` (grouped-query K/V gradients)."""
    if t.shape == shape:
        return t
    lead = t.dim() - len(shape)
    dims = list(range(lead)) + [
        i + lead for i, n in enumerate(shape) if n == 1 and t.shape[i + lead] != 1
    ]
    return t.sum(dim=dims, keepdim=True).reshape(shape)


def sdpa_recomp_fwd(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    attention_mask: Tensor | None,
    p: float,
    scale: float,
    is_causal: bool,
    requires_backward: bool,
    softmax_mode: str,
    valid_seq_len: Tensor | None,
    seq_padding_type: str,
    *,
    seed: Tensor | None = None,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Flash-style forward: out, row max m, 1/row sum linv, dropout seed (`seed`: given by the
    `_dropout_seed` variant, else drawn)."""
    seed = _new_seed(p, q) if seed is None else seed.clone()  # an output: not the input itself
    m, linv, probs = softmax_rows(_scores(q, k, attention_mask, scale, is_causal))
    keep = _dropout_mask(probs.shape, p, seed, probs)
    if keep is not None:
        probs = probs * keep / (1.0 - p)
    out = torch.matmul(probs, v.to(_F32)).to(q.dtype)
    return out, m, linv, seed


def sdpa_recomp_bwd(
    grad: Tensor,
    q: Tensor,
    k: Tensor,
    v: Tensor,
    attention_mask: Tensor | None,
    m: Tensor,
    linv: Tensor,
    seed: Tensor | None,
    is_causal: bool,
    p: float,
    scale: float,
    softmax_mode: str,
    fwd_out: Tensor,
) -> tuple[Tensor, Tensor, Tensor]:
    """Backward that recomputes the probabilities from m and linv."""
    s = _scores(q, k, attention_mask, scale, is_causal)
    probs = torch.exp(s - m) * linv
    keep = _dropout_mask(probs.shape, p, seed, probs)
    return _attention_grads(grad, q, k, v, probs, keep, p, scale)


def sdpa_fwd(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    attention_mask: Tensor | None,
    p: float,
    scale: float,
    is_causal: bool,
    softmax_mode: str,
    valid_seq_len: Tensor | None,
    seq_padding_type: str,
    *,
    seed: Tensor | None = None,
) -> tuple[Tensor, Tensor, Tensor]:
    """Non-recompute forward: out, probabilities P (saved for the backward), dropout mask."""
    seed = _new_seed(p, q) if seed is None else seed
    probs = torch.softmax(_scores(q, k, attention_mask, scale, is_causal), dim=-1)
    probs = torch.nan_to_num(probs, nan=0.0)
    keep = _dropout_mask(probs.shape, p, seed, probs)
    dropped = probs * keep / (1.0 - p) if keep is not None else probs
    out = torch.matmul(dropped, v.to(_F32)).to(q.dtype)
    dm = keep.to(torch.int8) if keep is not None else torch.empty(0, dtype=torch.int8)
    return out, probs.to(q.dtype), dm


def sdpa_recomp_fwd_dropout_seed(seed: Tensor, *args: Any) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """`sdpa_recomp_fwd` with the dropout seed first (torch.compile inserts it)."""
    return sdpa_recomp_fwd(*args, seed=seed)


def sdpa_fwd_dropout_seed(seed: Tensor, *args: Any) -> tuple[Tensor, Tensor, Tensor]:
    """`sdpa_fwd` with the dropout seed first (torch.compile inserts it)."""
    return sdpa_fwd(*args, seed=seed)


def sdpa_bwd(
    grad: Tensor,
    q: Tensor,
    k: Tensor,
    v: Tensor,
    P: Tensor,
    dm: Tensor | None,
    is_causal: bool,
    p: float,
    scale: float,
    fwd_out: Tensor,
) -> tuple[Tensor, Tensor, Tensor]:
    keep = dm.bool() if dm is not None and dm.numel() else None
    return _attention_grads(grad, q, k, v, P.to(_F32), keep, p, scale)


def _attention_grads(
    grad: Tensor,
    q: Tensor,
    k: Tensor,
    v: Tensor,
    probs: Tensor,
    keep: Tensor | None,
    p: float,
    scale: float,
) -> tuple[Tensor, Tensor, Tensor]:
    g = grad.to(_F32)
    dropped = probs * keep / (1.0 - p) if keep is not None else probs
    dv = torch.matmul(dropped.transpose(-2, -1), g)
    dp = torch.matmul(g, v.to(_F32).transpose(-2, -1))
    if keep is not None:
        dp = dp * keep / (1.0 - p)
    ds = probs * (dp - (dp * probs).sum(dim=-1, keepdim=True))
    dq = torch.matmul(ds, k.to(_F32)) * scale
    dk = torch.matmul(ds.transpose(-2, -1), q.to(_F32)) * scale
    return (
        dq.to(q.dtype),
        _reduce_to(dk, k.shape).to(k.dtype),
        _reduce_to(dv, v.shape).to(v.dtype),
    )


# --- normalization and rotary embedding ----------------------------------------------------


def rms_norm(data_in: Tensor, gamma: Tensor, epsilon: float) -> tuple[Tensor, Tensor]:
    """y = x * rsqrt(mean(x^2) + eps) * gamma; also returns the inverse RMS (fp32, [..., 1])."""
    x = data_in.to(_F32)
    inv = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + epsilon)
    return (x * inv * gamma.to(_F32)).to(data_in.dtype), inv


def rms_norm_backward(
    grad_in: Tensor,
    data_in: Tensor,
    gamma: Tensor,
    inverse_rms: Tensor,
    use_stages: bool,
    bwd_mode: int,
) -> tuple[Tensor, Tensor]:
    x, g, inv = data_in.to(_F32), grad_in.to(_F32), inverse_rms.to(_F32)
    gx = g * gamma.to(_F32)
    n = x.shape[-1]
    dx = inv * (gx - x * inv.pow(2) * (gx * x).sum(dim=-1, keepdim=True) / n)
    dgamma = (g * x * inv).reshape(-1, n).sum(dim=0)
    return dx.to(data_in.dtype), dgamma.to(gamma.dtype)


def _rope_tables(
    p: Tensor, sin: Tensor, cos: Tensor, position_ids: Tensor | None, offset: int
) -> tuple[Tensor, Tensor]:
    """sin / cos for each position of `p` ([..., seq, dim]): gathered by `position_ids`
    ([batch, seq] -> [batch, 1, seq, dim]); else, where the tables are wider than `p`, the
    `dim` columns from `offset` on (the bridge's documented BLOCKWISE formula,
    `cos[..., offset : offset + n]`: GPT-NeoX <= 4.27.4 keeps a prefix before the table), else
    sliced from `offset` along the seq axis."""
    if position_ids is not None:
        dim = cos.shape[-1]
        c = cos.reshape(-1, dim)[position_ids]
        s = sin.reshape(-1, dim)[position_ids]
        if p.dim() == 4 and c.dim() == 3:
            c, s = c.unsqueeze(1), s.unsqueeze(1)
        return s, c
    dim = p.shape[-1]
    if cos.shape[-1] > dim:
        return sin[..., offset : offset + dim], cos[..., offset : offset + dim]
    seq = p.shape[-2] if p.dim() >= 2 else 1
    if cos.dim() >= 2 and cos.shape[-2] > seq:
        cos = cos[..., offset : offset + seq, :]
        sin = sin[..., offset : offset + seq, :]
    return sin, cos


def _rotate(x: Tensor, mode: int) -> Tensor:
    if mode == 1:  # PAIRWISE (GPT-J): (-x2, x1) interleaved
        x1, x2 = x[..., ::2], x[..., 1::2]
        return torch.stack((-x2, x1), dim=-1).flatten(-2)
    half = x.shape[-1] // 2  # BLOCKWISE (GPT-NeoX / LLaMA): rotate_half
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def _unrotate(g: Tensor, mode: int) -> Tensor:
    """The transpose of `_rotate` (for the gradient)."""
    if mode == 1:
        g1, g2 = g[..., ::2], g[..., 1::2]
        return torch.stack((g2, -g1), dim=-1).flatten(-2)
    half = g.shape[-1] // 2
    return torch.cat((g[..., half:], -g[..., :half]), dim=-1)


def rotary_pos_embedding(
    input: Tensor,
    sin: Tensor,
    cos: Tensor,
    position_ids: Tensor | None,
    offset: int,
    mode: int,
) -> Tensor:
    s, c = _rope_tables(input, sin, cos, position_ids, offset)
    return (input * c + _rotate(input, mode) * s).to(input.dtype)


def rotary_pos_embedding_backward(
    grad_in: Tensor,
    sin: Tensor,
    cos: Tensor,
    position_ids: Tensor | None,
    offset: int,
    mode: int,
) -> Tensor:
    s, c = _rope_tables(grad_in, sin, cos, position_ids, offset)
    return (grad_in * c + _unrotate(grad_in * s, mode)).to(grad_in.dtype)


def custom_softmax(input: Tensor, flavor: int) -> Tensor:
    return torch.softmax(input.to(_F32), dim=-1).to(input.dtype)


def scaled_masked_softmax(input: Tensor, mask: Tensor, scale: float) -> Tensor:
    x = input.to(_F32) * scale
    x = x.masked_fill(mask.bool(), float("-inf")) if mask.dtype == torch.bool else x + mask
    return torch.softmax(x, dim=-1).to(input.dtype)


# --- optimizers -----------------------------------------------------------------------------


def _adamw(
    grads: list[Tensor],
    weights: list[Tensor],
    exp_avg: list[Tensor],
    exp_avg_sq: list[Tensor],
    neg_step: Tensor,
    beta1: float,
    beta2: float,
    eps: float,
    decay: float | Tensor,
) -> None:
    step = neg_step.reshape(-1)[0]
    for g, w, m, v in zip(grads, weights, exp_avg, exp_avg_sq, strict=True):
        m.mul_(beta1).add_(g, alpha=1.0 - beta1)
        v.mul_(beta2).addcmul_(g, g, value=1.0 - beta2)
        update = m / (v.sqrt() + eps)
        if isinstance(decay, Tensor):
            w.mul_(decay.reshape(-1)[0].to(w.dtype))
        elif decay != 1.0:
            w.mul_(decay)
        w.add_(update * step.to(w.dtype))


def optimizer_adamw(
    gradient_vec: list[Tensor],
    weight_vec: list[Tensor],
    exp_avg_vec: list[Tensor],
    exp_avg_sq_vec: list[Tensor],
    neg_step_t: Tensor,
    beta1: float,
    beta2: float,
    epsilon: float,
    weight_decay: float,
    exp_avg_scales: list[Tensor] | None = None,
    exp_avg_sq_scales: list[Tensor] | None = None,
) -> None:
    """`weight_decay` is the bridge's `modified_wd` = 1 - wd * lr, a multiplier of the weights."""
    _adamw(
        gradient_vec, weight_vec, exp_avg_vec, exp_avg_sq_vec, neg_step_t, beta1, beta2,
        epsilon, weight_decay,
    )  # fmt: skip


def optimizer_adamw_wd_tensor(
    gradient_vec: list[Tensor],
    weight_vec: list[Tensor],
    exp_avg_vec: list[Tensor],
    exp_avg_sq_vec: list[Tensor],
    neg_step_t: Tensor,
    beta1: float,
    beta2: float,
    epsilon: float,
    weight_decay: Tensor,
    has_weight_decay: bool,
    exp_avg_scales: list[Tensor] | None = None,
    exp_avg_sq_scales: list[Tensor] | None = None,
) -> None:
    _adamw(
        gradient_vec, weight_vec, exp_avg_vec, exp_avg_sq_vec, neg_step_t, beta1, beta2,
        epsilon, weight_decay if has_weight_decay else 1.0,
    )  # fmt: skip


def optimizer_sgd(
    gradients: list[Tensor],
    weights_in: list[Tensor],
    learning_rate: Tensor,
    wd: float,
    mom: float,
    damp: float,
    nesterov: bool,
) -> None:
    lr = learning_rate.reshape(-1)[0]
    for g, w in zip(gradients, weights_in, strict=True):
        d_p = g.add(w, alpha=wd) if wd != 0 else g
        w.sub_(d_p * lr.to(w.dtype))


def optimizer_sgd_momentum(
    gradients: list[Tensor],
    weights_in: list[Tensor],
    momentum_in: list[Tensor],
    epoch_num: Tensor,
    learning_rate: Tensor,
    mom: Tensor,
    wd: float,
    damp: float,
    nesterov: bool,
) -> None:
    lr = learning_rate.reshape(-1)[0]
    momentum = mom.reshape(-1)[0]
    first = int(epoch_num.reshape(-1)[0]) == 0
    for g, w, buf in zip(gradients, weights_in, momentum_in, strict=True):
        d_p = g.add(w, alpha=wd) if wd != 0 else g
        if first:
            buf.copy_(d_p)
        else:
            buf.mul_(momentum.to(buf.dtype)).add_(d_p, alpha=1.0 - damp)
        step = d_p.add(buf * momentum.to(buf.dtype)) if nesterov else buf
        w.sub_(step * lr.to(w.dtype))
    epoch_num.add_(1)


def fused_adagrad(
    gradients: list[Tensor],
    weights: list[Tensor],
    variances: list[Tensor],
    epoch_num: Tensor,
    lr: Tensor,
    wd: float,
    lrd: float,
    epsilon: float,
) -> None:
    step = float(epoch_num.reshape(-1)[0])
    clr = lr.reshape(-1)[0] / (1.0 + (step - 1.0) * lrd)
    for g, w, var in zip(gradients, weights, variances, strict=True):
        d_p = g.add(w, alpha=wd) if wd != 0 else g
        var.addcmul_(d_p, d_p, value=1.0)
        w.sub_(d_p / (var.sqrt() + epsilon) * clr.to(w.dtype))


def fused_clip_norm(grad: list[Tensor], max_norm: Tensor, norm_type: float) -> Tensor:
    """Clip the gradients (all but the last list entry, the total-norm placeholder) in place by
    their global norm; returns the norm (and writes it into the placeholder)."""
    grads, holder = grad[:-1], grad[-1]
    return _clip(grads, max_norm, norm_type, holder)


def _clip(grads: list[Tensor], max_norm: Tensor, norm_type: float, holder: Tensor | None) -> Tensor:
    if norm_type == math.inf:
        total = torch.stack([g.abs().max().to(_F32) for g in grads]).max()
    else:
        total = torch.stack([g.to(_F32).norm(norm_type) for g in grads]).norm(norm_type)
    coef = (max_norm.to(_F32).reshape(-1)[0] / (total + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(coef.to(g.dtype))
    out = total.reshape(1).to(max_norm.dtype)
    if holder is not None:
        holder.copy_(out.reshape(holder.shape))
    return out


def fused_norm_lazy(grad: list[Tensor], max_norm: Tensor, norm_type: float) -> Tensor:
    """`_hpex_C.fused_norm`'s op: clip every gradient in place by their global norm; returns the
    norm as a new one-element tensor of the gradients' dtype (no placeholder in the list, unlike
    `fused_clip_norm`: habana_kernels/lazy_kernels.cpp:5147-5180)."""
    return _clip(grad, max_norm, norm_type, None).to(grad[0].dtype)


def optimizer_lamb_fused_norm(grad: list[Tensor], max_norm: float) -> Tensor:
    """The LAMB global-norm clip factor: max(norm / max_norm, 1)."""
    total = torch.stack([g.to(_F32).norm(2) for g in grad]).norm(2)
    return torch.clamp(total / max_norm, min=1.0).reshape(1)


def optimizer_lamb_phase1(
    gradients: list[Tensor],
    weights: list[Tensor],
    exp_avg: list[Tensor],
    exp_avg_sq: list[Tensor],
    out_weight_norms: list[Tensor],
    out_adam_norms: list[Tensor],
    out_adam_steps: list[Tensor],
    clip_global_grad_norm: Tensor,
    grad_averaging: int,
    beta1: float,
    beta2: float,
    epsilon: float,
    bias_correction1: Tensor,
    bias_correction2: Tensor,
    weight_decay: float,
) -> None:
    clip = clip_global_grad_norm.reshape(-1)[0]
    bc1, bc2 = bias_correction1.reshape(-1)[0], bias_correction2.reshape(-1)[0]
    beta3 = 1.0 - beta1 if grad_averaging else 1.0
    for g, w, m, v, wn, an, st in zip(
        gradients, weights, exp_avg, exp_avg_sq, out_weight_norms, out_adam_norms,
        out_adam_steps, strict=True,
    ):  # fmt: skip
        sg = g / clip.to(g.dtype)
        m.mul_(beta1).add_(sg, alpha=beta3)
        v.mul_(beta2).addcmul_(sg, sg, value=1.0 - beta2)
        update = (m / bc1) / ((v / bc2).sqrt() + epsilon)
        if weight_decay != 0:
            update = update + weight_decay * w
        st.copy_(update)
        wn.copy_(w.to(_F32).norm(2).reshape(wn.shape))
        an.copy_(update.to(_F32).norm(2).reshape(an.shape))


def optimizer_lamb_phase2(
    weights: list[Tensor],
    adam_norms: list[Tensor],
    weight_norms: list[Tensor],
    adam_steps: list[Tensor],
    neg_step: Tensor,
    wd: float,
    use_lamb: bool,
) -> None:
    lr = neg_step.reshape(-1)[0]
    for w, an, wn, st in zip(weights, adam_norms, weight_norms, adam_steps, strict=True):
        ratio = torch.ones((), dtype=_F32)
        if use_lamb or wd != 0:
            a, n = an.reshape(-1)[0].to(_F32), wn.reshape(-1)[0].to(_F32)
            ratio = torch.where((a > 0) & (n > 0), n / a, torch.ones_like(a))
        w.add_(st * (lr * ratio).to(w.dtype))


def optimizer_ema(model_inputs: list[Tensor], updated_ema: list[Tensor], decay: Tensor) -> None:
    d = decay.reshape(-1)[0]
    for x, e in zip(model_inputs, updated_ema, strict=True):
        e.mul_(d.to(e.dtype)).add_(x * (1.0 - d).to(e.dtype))


def optimizer_lars(
    params: list[Tensor],
    grads: list[Tensor],
    skip_masks: list[int],
    eeta: float,
    weight_decay: float,
    eps: float,
    lr: Tensor,
) -> None:
    rate = lr.reshape(-1)[0]
    for p, g, skip in zip(params, grads, skip_masks, strict=True):
        if not skip:
            g.mul_(rate.to(g.dtype))
            continue
        pn, gn = p.to(_F32).norm(2), g.to(_F32).norm(2)
        trust = torch.where(
            (pn > 0) & (gn > 0), eeta * pn / (gn + weight_decay * pn + eps), torch.ones_like(pn)
        )
        g.add_(p, alpha=weight_decay).mul_((trust * rate).to(g.dtype))


def optimizer_resource_apply_momentum(
    params_momentum_buf_list: list[Tensor], dp_list: list[Tensor], momentum: float
) -> None:
    """TF's ResourceApplyMomentum, as the 1.19 kernel builds it: the list interleaves each
    parameter with its momentum buffer; buf = buf * momentum - dp, then param += buf."""
    if len(params_momentum_buf_list) != 2 * len(dp_list):
        raise RuntimeError(
            "params_momentum_buf_list must have twice as many elements as dp_list but they "
            f"respectively have: {len(params_momentum_buf_list)}, {len(dp_list)}"
        )
    for i, dp in enumerate(dp_list):
        p, buf = params_momentum_buf_list[2 * i], params_momentum_buf_list[2 * i + 1]
        buf.mul_(momentum).sub_(dp)
        p.add_(buf)


def _unpack_4bit(packed: Tensor, signed: bool) -> Tensor:
    """int32 words of eight 4-bit values (element i in bits 4i..4i+3) -> [..., 8 * n] int32."""
    shifts = torch.arange(0, 32, 4, dtype=torch.int32)
    nibbles = (packed.to(torch.int32).unsqueeze(-1) >> shifts) & 0xF
    values = nibbles.reshape(*packed.shape[:-1], packed.shape[-1] * 8)
    return torch.where(values > 7, values - 16, values) if signed else values


def _convert_from_4bit(
    input: Tensor, scale: Tensor, zero_point: Tensor | None, out_dtype: torch.dtype, signed: bool
) -> Tensor:
    """Dequantize packed int4 / uint4 weights: (value - zero_point) * scale, in `out_dtype`.
    A packed (int32) zero point is subtracted in 8 bits, as the dequantize_4_bits kernel does;
    scales and zero points with one row per group of weight rows (AutoGPTQ) are repeated."""
    values = _unpack_4bit(input, signed)
    small = torch.int8  # 4-bit values and zero points differ by -15..15: exact in int8
    if zero_point is None:
        sub = values.to(out_dtype)
    elif zero_point.dtype == torch.int32:
        zp = _per_group(_unpack_4bit(zero_point, signed), values)
        sub = (values.to(small) - zp.to(small)).to(out_dtype)
    else:
        sub = values.to(out_dtype) - _per_group(zero_point.to(out_dtype), values)
    return (sub * _per_group(scale.to(out_dtype), values)).to(out_dtype)


def _per_group(t: Tensor, like: Tensor) -> Tensor:
    """Group-wise quantization parameters (one row per `group_size` rows of the weight, the
    AutoGPTQ layout) repeated to the weight's rows; other shapes broadcast as they are."""
    if t.dim() == like.dim() and t.dim() > 0 and t.shape[0] != like.shape[0]:
        rows, groups = like.shape[0], t.shape[0]
        if groups and rows % groups == 0:
            return t.repeat_interleave(rows // groups, dim=0)
    return t


def convert_from_int4(
    input: Tensor, scale: Tensor, zero_point: Tensor | None, out_dtype: torch.dtype
) -> Tensor:
    return _convert_from_4bit(input, scale, zero_point, out_dtype, signed=True)


def convert_from_uint4(
    input: Tensor, scale: Tensor, zero_point: Tensor | None, out_dtype: torch.dtype
) -> Tensor:
    return _convert_from_4bit(input, scale, zero_point, out_dtype, signed=False)


_KERNELS: Final[dict[str, Any]] = {
    "convert_from_int4": convert_from_int4,
    "convert_from_uint4": convert_from_uint4,
    "sdpa_recomp_fwd": sdpa_recomp_fwd,
    "sdpa_recomp_bwd": sdpa_recomp_bwd,
    "sdpa_recomp_fwd_dropout": sdpa_recomp_fwd,
    "sdpa_recomp_fwd_non_dropout": sdpa_recomp_fwd,
    "sdpa_recomp_fwd_dropout_seed": sdpa_recomp_fwd_dropout_seed,
    "sdpa_fwd": sdpa_fwd,
    "sdpa_fwd_dropout": sdpa_fwd,
    "sdpa_fwd_non_dropout": sdpa_fwd,
    "sdpa_fwd_dropout_seed": sdpa_fwd_dropout_seed,
    "sdpa_bwd": sdpa_bwd,
    "rms_norm": rms_norm,
    "rms_norm_fast": rms_norm,
    "rms_norm_backward": rms_norm_backward,
    "rms_norm_fast_backward": rms_norm_backward,
    "rotary_pos_embedding": rotary_pos_embedding,
    "rotary_pos_embedding_backward": rotary_pos_embedding_backward,
    "optimizer_adamw": optimizer_adamw,
    "optimizer_adamw.wd_tensor": optimizer_adamw_wd_tensor,
    "optimizer_sgd": optimizer_sgd,
    "optimizer_sgd_momentum": optimizer_sgd_momentum,
    "fused_adagrad": fused_adagrad,
    "fused_clip_norm": fused_clip_norm,
    "fused_norm_lazy": fused_norm_lazy,
    "optimizer_lamb_fused_norm": optimizer_lamb_fused_norm,
    "optimizer_lamb_phase1": optimizer_lamb_phase1,
    "optimizer_lamb_phase2": optimizer_lamb_phase2,
    "optimizer_ema": optimizer_ema,
    "optimizer_lars": optimizer_lars,
    "optimizer_resource_apply_momentum": optimizer_resource_apply_momentum,
    "custom_softmax": custom_softmax,
    "scaled_masked_softmax": scaled_masked_softmax,
}

_LIBS: list[Any] = []


def install() -> None:
    """Define `torch.ops.hpu.*` (once per process)."""
    if _LIBS:
        return
    lib = torch.library.Library("hpu", "FRAGMENT")
    emulated_fp8 = {name: getattr(fp8_ops, name) for name in EMULATED_FP8}
    for schemas, kernels in (  # an overload after its op
        (SCHEMAS, _KERNELS),
        (custom_ops.SCHEMAS, custom_ops.KERNELS),
        (ctc_loss.SCHEMAS, ctc_loss.KERNELS),
        (EMULATED_FP8, emulated_fp8),
        (fp8_ops.SCHEMAS, fp8_ops.KERNELS),
        (fp8_attention.SCHEMAS, fp8_attention.KERNELS),
    ):
        for name, schema in schemas.items():
            lib.define(name + schema)
            lib.impl(name, kernels[name], "CompositeExplicitAutograd")
    _LIBS.append(lib)
