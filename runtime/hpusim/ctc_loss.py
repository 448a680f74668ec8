"""The bridge's CTC loss kernels (`hpu::ctc_loss_custom`, `..._backward`), with CPU references.

`hpex.kernels.CTCLoss` calls them: the forward returns the loss already reduced (`reduction`:
0 none, 1 mean, 2 sum, torch's `get_enum`) and the log-alpha table in the kernel's layout
(T, N, 2 * S + 1), S the targets' padded length (their total length when they are
concatenated); the backward takes that reduced loss and the table back and returns the gradient
of the reduced loss by the log-probabilities. The numerics are CPU torch's `_ctc_loss` (what
the bridge's `test_hpu_ctc_loss.py` compares against); the backward recomputes the per-sample
likelihoods it needs, so it does not depend on the table's padding. Schemas as the 1.19 bridge
registers them (`habana_eager/eager_custom_op_register.cpp`); each call is ONE device op.
"""

from __future__ import annotations

from typing import Any, Final

import torch

Tensor = torch.Tensor

_NONE, _MEAN, _SUM = 0, 1, 2
_REDUCTIONS: Final = {"none": _NONE, "mean": _MEAN, "sum": _SUM}


def _batched(
    log_probs: Tensor, targets: Tensor, input_lengths: Tensor, target_lengths: Tensor
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The arguments as `aten::_ctc_loss.Tensor` takes them: (T, N, C) log-probabilities, int64
    targets and lengths of shape (N,) (an unbatched (T, C) call is a batch of one)."""
    if log_probs.dim() == 2:
        log_probs = log_probs.unsqueeze(1)
    long = torch.int64
    return (
        log_probs,
        targets.to(long),
        input_lengths.reshape(-1).to(long),
        target_lengths.reshape(-1).to(long),
    )


def _per_sample(
    log_probs: Tensor,
    targets: Tensor,
    input_lengths: Tensor,
    target_lengths: Tensor,
    blank: int,
    zero_infinity: bool,
) -> tuple[Tensor, Tensor]:
    """(negative log-likelihood per sample (N,), log-alpha (N, T, 2 * max target + 1))."""
    return torch.ops.aten._ctc_loss.Tensor(
        log_probs, targets, input_lengths, target_lengths, blank, zero_infinity
    )


def _check_reduction(reduction: int) -> None:
    if reduction not in (_NONE, _MEAN, _SUM):
        raise RuntimeError(
            f"hpu::ctc_loss_custom: reduction {reduction} is not 0 (none), 1 (mean) or 2 (sum)"
        )


def ctc_loss_custom(
    log_probs: Tensor,
    targets: Tensor,
    input_lengths: Tensor,
    target_lengths: Tensor,
    blank: int,
    reduction: int,
    zero_infinity: bool,
) -> tuple[Tensor, Tensor]:
    """(loss: (N,) for reduction none, else a scalar; log-alpha (T, N, 2 * S + 1))."""
    _check_reduction(reduction)
    lp, tg, il, tl = _batched(log_probs, targets, input_lengths, target_lengths)
    nll, alpha = _per_sample(lp, tg, il, tl, blank, zero_infinity)
    if zero_infinity:
        nll = torch.where(torch.isinf(nll), torch.zeros_like(nll), nll)
    if reduction == _MEAN:
        loss = (nll / tl.clamp(min=1).to(nll.dtype)).mean()
    elif reduction == _SUM:
        loss = nll.sum()
    else:
        loss = nll
    padded = targets.shape[-1] if targets.dim() > 1 else targets.shape[0]
    table = alpha.new_full((lp.shape[0], lp.shape[1], 2 * padded + 1), float("-inf"))
    width = min(alpha.shape[-1], table.shape[-1])
    table[..., :width] = alpha.transpose(0, 1)[..., :width]
    return loss.to(log_probs.dtype), table.to(log_probs.dtype)


def ctc_loss_custom_backward(
    grad: Tensor,
    log_probs: Tensor,
    targets: Tensor,
    input_lengths: Tensor,
    target_lengths: Tensor,
    neg_log_likelihood: Tensor,
    log_alpha: Tensor,
    blank: int,
    reduction: int,
    zero_infinity: bool,
) -> Tensor:
    """The gradient of the (reduced) loss by `log_probs`, in its shape and dtype."""
    _check_reduction(reduction)
    lp, tg, il, tl = _batched(log_probs, targets, input_lengths, target_lengths)
    nll, alpha = _per_sample(lp, tg, il, tl, blank, zero_infinity)
    g = grad.to(nll.dtype).reshape(-1)
    batch = lp.shape[1]
    if reduction == _MEAN:
        per_sample = g.expand(batch) / tl.clamp(min=1).to(nll.dtype) / batch
    elif reduction == _SUM:
        per_sample = g.expand(batch)
    else:
        per_sample = g
    out = torch.ops.aten._ctc_loss_backward.Tensor(
        per_sample.contiguous(), lp, tg, il, tl, nll, alpha, blank, zero_infinity
    )
    return out.reshape(log_probs.shape).to(log_probs.dtype)


class CTCLoss(torch.autograd.Function):
    """`hpex.kernels.CTCLoss.apply(log_probs, targets, input_lengths, target_lengths, blank=0,
    reduction="mean", zero_infinity=False)`: one `hpu::ctc_loss_custom` forward, one
    `hpu::ctc_loss_custom_backward`."""

    @staticmethod
    def forward(
        ctx: Any,
        log_probs: Tensor,
        targets: Tensor,
        input_lengths: Tensor,
        target_lengths: Tensor,
        blank: int = 0,
        reduction: str = "mean",
        zero_infinity: bool = False,
    ) -> Tensor:
        if reduction not in _REDUCTIONS:
            raise ValueError(f"CTCLoss: reduction {reduction!r} is not one of {list(_REDUCTIONS)}")
        mode = _REDUCTIONS[reduction]
        loss, alpha = torch.ops.hpu.ctc_loss_custom(
            log_probs, targets, input_lengths, target_lengths, blank, mode, zero_infinity
        )
        ctx.save_for_backward(log_probs, targets, input_lengths, target_lengths, loss, alpha)
        ctx.options = (blank, mode, zero_infinity)
        return loss

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
        blank, mode, zero_infinity = ctx.options
        grad_in = torch.ops.hpu.ctc_loss_custom_backward(
            grad, *ctx.saved_tensors, blank, mode, zero_infinity
        )
        return grad_in, None, None, None, None, None, None


SCHEMAS: Final[dict[str, str]] = {
    "ctc_loss_custom": "(Tensor log_probs, Tensor targets, Tensor input_lengths, Tensor target_lengths, int blank, int reduction, bool zero_infinity) -> (Tensor, Tensor)",
    "ctc_loss_custom_backward": "(Tensor grad, Tensor log_probs, Tensor targets, Tensor input_lengths, Tensor target_lengths, Tensor neg_log_likelihood, Tensor log_alpha, int blank, int reduction, bool zero_infinity) -> Tensor",
}  # fmt: skip
"""The bridge's schemas (1.19)."""

KERNELS: Final = {
    "ctc_loss_custom": ctc_loss_custom,
    "ctc_loss_custom_backward": ctc_loss_custom_backward,
}
