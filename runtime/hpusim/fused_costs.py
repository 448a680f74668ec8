"""Modeled cost of the bridge's fused custom ops (`hpu::sdpa_recomp_fwd`, `hpu::rms_norm`,
`hpu::optimizer_adamw`, ...): one device op each, as on a Gaudi.

The emulated `hpex` kernels and fused optimizers (`hpusim.hpu_ops`) record ONE device op per
call under the bridge's custom-op name instead of the decomposed ATen ops. This module says what
that op costs, as pure functions of its input shapes and dtypes (no torch import, no state):

    fused_op_cost("hpu::rms_norm", [(8, 128, 4096), (4096,)], ["bfloat16", "bfloat16"])
    -> FusedOpCost(name="hpu::rms_norm", engine="TPC", flops=..., bytes_read=..., ...)

`input_shapes` lists the op schema's TENSOR arguments in schema order: a tensor is its shape
tuple, a tensor list (`Tensor[]`) a sequence of shapes, an absent optional tensor `None`.
`dtypes` is parallel to it (a dtype name such as "bfloat16" / "float32" or a `torch.dtype`'s
`str()`; a list for a tensor list; None where the shape is None). `is_causal` halves the
attention work of the SDPA ops (the kernel skips the masked upper triangle).

The device model (`device_model.py`) turns a cost into a duration (roofline on `engine`, with
`mme_flops` / `vector_flops` split for the mixed SDPA kernels). FLOP counts follow the usual
conventions: 2 per multiply-add on the MME; elementwise work counted per element and operation
on the TPC. They are MODELED, like every device figure of the emulator.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from hpusim.mme_cost import attention_gemms

Shape = tuple[int, ...]
ShapeArg = Shape | Sequence[Shape] | None

_ITEMSIZE: Final[dict[str, int]] = {
    "float64": 8,
    "double": 8,
    "float32": 4,
    "float": 4,
    "bfloat16": 2,
    "float16": 2,
    "half": 2,
    "float8_e5m2": 1,
    "float8_e4m3fn": 1,
    "int64": 8,
    "long": 8,
    "int32": 4,
    "int": 4,
    "int16": 2,
    "int8": 1,
    "uint8": 1,
    "bool": 1,
}


@dataclass(frozen=True)
class FusedOpCost:
    """The modeled work of one fused device op.

    Args:
        name: the bridge's custom-op name (`hpu::sdpa_recomp_fwd`).
        engine: "MME" or "TPC": where the op runs (its lane in the trace).
        flops: all floating-point work of the op.
        bytes_read: device-memory bytes the op reads.
        bytes_written: device-memory bytes the op writes.
        mme_flops: the part of `flops` done by matrix multiplies (SDPA's QK^T and PV); the
            rest (`vector_flops`) is elementwise TPC work inside the same fused kernel.
        gemms: those matrix multiplies as `("gemm", batch, M, N, K)`, which the MME cost
            model prices (`mme_cost`); empty: `mme_flops` at the MME's full rate.
        mme_fraction: the share of those GEMMs' work done (0.5 for causal attention, whose
            kernel skips the masked upper triangle).
    """

    name: str
    engine: str
    flops: int
    bytes_read: int
    bytes_written: int
    mme_flops: int = 0
    gemms: tuple[tuple[str, int, int, int, int], ...] = ()
    mme_fraction: float = 1.0

    @property
    def vector_flops(self) -> int:
        """Elementwise (TPC) work: `flops - mme_flops`."""
        return self.flops - self.mme_flops

    @property
    def nbytes(self) -> int:
        """Bytes moved: read + written."""
        return self.bytes_read + self.bytes_written


def itemsize(dtype: Any) -> int:
    """Bytes per element of a dtype name (`bfloat16`, `torch.float32`, ...); 4 if unknown."""
    if dtype is None:
        return 0
    name = str(dtype).removeprefix("torch.")
    return _ITEMSIZE.get(name, 4)


def numel(shape: Shape | None) -> int:
    """Elements of one shape (0 for an absent tensor)."""
    if shape is None:
        return 0
    n = 1
    for d in shape:
        n *= int(d)
    return n


def _tensors(shape: Any, dtype: Any) -> list[tuple[Shape, Any]]:
    """One argument as (shape, dtype) pairs: one for a tensor, one per element of a tensor
    list (one dtype or a dtype per element), none for an absent tensor."""
    if shape is None:
        return []
    if len(shape) and isinstance(shape[0], (tuple, list)):
        dts = list(dtype) if isinstance(dtype, (list, tuple)) else [dtype] * len(shape)
        return [(tuple(int(d) for d in s), t) for s, t in zip(shape, dts, strict=False)]
    return [(tuple(int(d) for d in shape), dtype)]


class _Args:
    """The tensor arguments of one call, each as a list of (shape, dtype) pairs."""

    def __init__(self, shapes: Sequence[ShapeArg], dtypes: Sequence[Any], is_causal: bool):
        self.args = [
            _tensors(s, dtypes[i] if i < len(dtypes) else None) for i, s in enumerate(shapes)
        ]
        self.is_causal = is_causal

    def tensors(self, i: int) -> list[tuple[Shape, Any]]:
        return self.args[i] if i < len(self.args) else []

    def shape(self, i: int) -> Shape | None:
        t = self.tensors(i)
        return t[0][0] if t else None

    def dtype(self, i: int) -> Any:
        t = self.tensors(i)
        return t[0][1] if t else None

    def nbytes(self, *idx: int) -> int:
        return sum(numel(s) * itemsize(d) for i in idx for s, d in self.tensors(i))

    def elements(self, i: int) -> int:
        return sum(numel(s) for s, _ in self.tensors(i))

    def count(self) -> int:
        return len(self.args)


def _attention_dims(
    q: Shape | None, k: Shape | None, v: Shape | None
) -> tuple[int, int, int, int, int]:
    """(batch*heads N, query length L, key length S, head dim D, value head dim Dv)."""
    qs = q if q and len(q) >= 2 else (1, 1)
    ks = k if k and len(k) >= 2 else (1, 1)
    vs = v if v and len(v) >= 2 else ks
    n = numel(qs[:-2]) if len(qs) > 2 else 1
    return n, qs[-2], ks[-2], qs[-1], vs[-1]


def _attention_gemms(
    n: int, seq_q: int, seq_k: int, d: int, dv: int, backward: bool, recompute: bool
) -> tuple[tuple[str, int, int, int, int], ...]:
    """The MME GEMMs of fused attention (`mme_cost.attention_gemms`) as `("gemm", ...)`."""
    gemms = attention_gemms((n, seq_q, d), (n, seq_k, d), (n, seq_k, dv), backward, recompute)
    return tuple(("gemm", b, m, nn, k) for b, m, nn, k in gemms)


def _sdpa_fwd(a: _Args, name: str, stats: str) -> FusedOpCost:
    # schema: q, k, v, attention_mask (, valid_seq_len)
    n, seq_q, seq_k, d, dv = _attention_dims(a.shape(0), a.shape(1), a.shape(2))
    frac = 0.5 if a.is_causal else 1.0
    mme = int(2 * n * seq_q * seq_k * (d + dv) * frac)
    softmax = int(5 * n * seq_q * seq_k * frac)
    elt = itemsize(a.dtype(0))
    out = n * seq_q * dv * elt
    # recompute: the m and 1/l rows (fp32); else the probabilities P, saved for the backward
    extra = 2 * n * seq_q * 4 if stats == "recompute" else n * seq_q * seq_k * elt
    gemms = _attention_gemms(n, seq_q, seq_k, d, dv, False, False)
    read = a.nbytes(0, 1, 2, 3)
    return FusedOpCost(name, "MME", mme + softmax, read, out + extra, mme, gemms, frac)


def _sdpa_bwd(a: _Args, name: str, recompute: bool) -> FusedOpCost:
    # schema: grad, q, k, v, (mask, m, linv, seed | P, dm), ..., fwd_out
    n, seq_q, seq_k, d, dv = _attention_dims(a.shape(1), a.shape(2), a.shape(3))
    frac = 0.5 if a.is_causal else 1.0
    # dV = P^T dO, dP = dO V^T, dQ = dS K, dK = dS^T Q; the recompute variant redoes QK^T
    per = (3 * d + 2 * dv) if recompute else (2 * d + 2 * dv)
    mme = int(2 * n * seq_q * seq_k * per * frac)
    vec = int(6 * n * seq_q * seq_k * frac)
    read = a.nbytes(*range(a.count()))
    written = a.nbytes(1, 2, 3)
    gemms = _attention_gemms(n, seq_q, seq_k, d, dv, True, recompute)
    return FusedOpCost(name, "MME", mme + vec, read, written, mme, gemms, frac)


def torch_attention_cost(
    op: str, shapes: Sequence[Shape], dtypes: Sequence[Any], is_causal: bool
) -> FusedOpCost:
    """torch's SDPA ops (`_scaled_dot_product_flash_attention[_backward]`, ...), which the
    bridge runs as FusedSDPA: the forward as `sdpa_fwd`'s kernel with recomputed statistics,
    the backward as `sdpa_recomp_bwd`'s (flash attention recomputes the scores)."""
    backward = op.endswith("_backward") or "bwd" in op
    args = _Args(list(shapes), list(dtypes), is_causal)  # [grad_out,] q, k, v, ...
    if backward:
        return _sdpa_bwd(args, op, recompute=True)
    return _sdpa_fwd(args, op, "recompute")


def _elementwise(
    flops_per_element: int, tensor_in: Sequence[int], tensor_out: Sequence[int], count: int = 0
) -> Callable[[_Args, str], FusedOpCost]:
    """A TPC op whose work is `flops_per_element` per element of argument `count`."""

    def cost(a: _Args, name: str) -> FusedOpCost:
        elements = a.elements(count)
        return FusedOpCost(
            name, "TPC", flops_per_element * elements, a.nbytes(*tensor_in), a.nbytes(*tensor_out)
        )

    return cost


def _rms_norm(a: _Args, name: str) -> FusedOpCost:
    x = a.shape(0)
    rows = numel(x[:-1]) if x else 0
    return FusedOpCost(name, "TPC", 4 * a.elements(0), a.nbytes(0, 1), a.nbytes(0) + rows * 4)


def _rms_norm_bwd(a: _Args, name: str) -> FusedOpCost:
    return FusedOpCost(name, "TPC", 8 * a.elements(1), a.nbytes(0, 1, 2, 3), a.nbytes(1, 2))


def _clip_norm(a: _Args, name: str) -> FusedOpCost:
    # the norm reads every gradient once; the scaling reads and writes them again
    grads = a.nbytes(0)
    return FusedOpCost(name, "TPC", 3 * a.elements(0), 2 * grads + a.nbytes(1), grads)


def _lamb_norm(a: _Args, name: str) -> FusedOpCost:
    return FusedOpCost(name, "TPC", 2 * a.elements(0), a.nbytes(0), 4)


def _gemm_dims(a_shape: Shape | None, b_shape: Shape | None) -> tuple[int, int, int, int]:
    """(batch, M, N, K) of a batched matmul of `a` by `b`, either possibly transposed: K is the
    dimension they share (the last of `a` when ambiguous); batch is `a`'s leading dims."""
    if not a_shape or not b_shape or len(a_shape) < 2 or len(b_shape) < 2:
        return 0, 0, 0, 0
    (a0, a1), (b0, b1) = a_shape[-2:], b_shape[-2:]
    k = a1 if a1 in (b0, b1) else a0
    return numel(a_shape[:-2]), a0 * a1 // max(k, 1), b0 * b1 // max(k, 1), k


def _masked_batch_gemm(a: _Args, name: str) -> FusedOpCost:
    # a, b, mask_a, mask_b -> op(a) @ op(b) + op(mask_a) @ op(mask_b), the masks broadcast over
    # the output's batch
    batch, m, n, k = _gemm_dims(a.shape(0), a.shape(1))
    _, mask_m, mask_n, mask_k = _gemm_dims(a.shape(2), a.shape(3))
    mme = 2 * batch * (m * n * k + mask_m * mask_n * mask_k)
    out = batch * m * n * itemsize(a.dtype(0))
    gemms = (("gemm", batch, m, n, k), ("gemm", batch, mask_m, mask_n, mask_k))
    read = a.nbytes(0, 1, 2, 3)
    return FusedOpCost(name, "MME", mme + batch * m * n, read, out, mme, gemms)


def _mixture_of_experts(a: _Args, name: str) -> FusedOpCost:
    # hidden [tokens, H], routing table [tokens, k], router weights, expert weights (w1, w2, w3
    # or w12, w3; one tensor per expert): three H x F matmuls per routed (token, expert) pair
    hidden = a.shape(0)
    h = hidden[-1] if hidden else 0
    tokens = a.elements(0) // max(h, 1)
    table = a.shape(1)
    k = table[-1] if table and len(table) > 1 else 1
    down = a.tensors(a.count() - 1)
    ffn = a.elements(a.count() - 1) // max(len(down) * h, 1)
    mme = 2 * tokens * k * 3 * h * ffn
    vec = 3 * tokens * k * ffn  # activation, gate product, weighted sum
    read = a.nbytes(*range(a.count()))
    experts = max(len(down), 1)  # tokens spread evenly over the experts, three GEMMs each
    rows = max(tokens * k // experts, 1)
    gemms = (("gemm", experts, rows, ffn, h),) * 2 + (("gemm", experts, rows, h, ffn),)
    return FusedOpCost(name, "MME", mme + vec, read, a.nbytes(0), mme, gemms)


def _plain_index(a: _Args, name: str) -> FusedOpCost:
    # self, indices (one per leading dim, broadcast together): a gather of the indexed rows
    shape = a.shape(0) or ()
    indices = [s for s, _ in a.tensors(1)]
    rank = max((len(s) for s in indices), default=0)
    picked = 1
    for i in range(rank):  # the broadcast index shape, aligned at the right
        picked *= max((s[i - rank + len(s)] for s in indices if i - rank + len(s) >= 0), default=1)
    gathered = picked * numel(tuple(shape[len(indices) :])) * itemsize(a.dtype(0))
    return FusedOpCost(name, "TPC", 0, gathered + a.nbytes(1), gathered)


def _ctc_loss(a: _Args, name: str, backward: bool) -> FusedOpCost:
    # log_probs (T, N, C) or (T, C), targets (N, S) or concatenated, lengths: the alpha (and for
    # the backward the beta) recursion over T x N x (2S + 1) states, ~6 flops each
    lp_arg = 1 if backward else 0
    lp = a.shape(lp_arg) or ()
    steps, batch = (lp[0], lp[1]) if len(lp) > 2 else ((lp[0], 1) if lp else (0, 0))
    targets = a.shape(lp_arg + 1) or (0,)
    states = steps * batch * (2 * targets[-1] + 1)
    if backward:  # grad, log_probs, targets, lengths, loss, alpha -> grad of log_probs
        read = a.nbytes(*range(a.count()))
        return FusedOpCost(name, "TPC", 12 * states + 3 * a.elements(1), read, a.nbytes(1))
    written = states * itemsize(a.dtype(0)) + batch * itemsize(a.dtype(0))
    return FusedOpCost(name, "TPC", 6 * states, a.nbytes(0, 1, 2, 3), written)


def _ctc_fwd(a: _Args, name: str) -> FusedOpCost:
    return _ctc_loss(a, name, backward=False)


def _ctc_bwd(a: _Args, name: str) -> FusedOpCost:
    return _ctc_loss(a, name, backward=True)


def _recompute_fwd(a: _Args, name: str) -> FusedOpCost:
    return _sdpa_fwd(a, name, "recompute")


def _plain_fwd(a: _Args, name: str) -> FusedOpCost:
    return _sdpa_fwd(a, name, "probabilities")


def _seeded(cost: Callable[[_Args, str], FusedOpCost]) -> Callable[[_Args, str], FusedOpCost]:
    """The cost of a `*_dropout_seed` variant: its seed comes first, then the usual tensors."""

    def shifted(a: _Args, name: str) -> FusedOpCost:
        rest = _Args([], [], a.is_causal)
        rest.args = a.args[1:]
        return cost(rest, name)

    return shifted


_recompute_fwd_seeded = _seeded(_recompute_fwd)
_plain_fwd_seeded = _seeded(_plain_fwd)


def _recompute_bwd(a: _Args, name: str) -> FusedOpCost:
    return _sdpa_bwd(a, name, recompute=True)


def _plain_bwd(a: _Args, name: str) -> FusedOpCost:
    return _sdpa_bwd(a, name, recompute=False)


_COSTS: Final[dict[str, Callable[[_Args, str], FusedOpCost]]] = {
    "hpu::sdpa_recomp_fwd": _recompute_fwd,
    "hpu::sdpa_recomp_fwd_dropout": _recompute_fwd,
    "hpu::sdpa_recomp_fwd_non_dropout": _recompute_fwd,
    "hpu::sdpa_recomp_fwd_dropout_seed": _recompute_fwd_seeded,
    "hpu::sdpa_recomp_bwd": _recompute_bwd,
    "hpu::sdpa_fwd": _plain_fwd,
    "hpu::sdpa_fwd_dropout": _plain_fwd,
    "hpu::sdpa_fwd_non_dropout": _plain_fwd,
    "hpu::sdpa_fwd_dropout_seed": _plain_fwd_seeded,
    "hpu::sdpa_bwd": _plain_bwd,
    # the FP8 variants: the same attention, the scales among the later arguments
    "hpu::fp8_sdpa_recomp_fwd": _recompute_fwd,
    "hpu::fp8_sdpa_recomp_fwd_dropout": _recompute_fwd,
    "hpu::fp8_sdpa_recomp_fwd_non_dropout": _recompute_fwd,
    "hpu::fp8_sdpa_recomp_fwd_dropout_seed": _recompute_fwd_seeded,
    "hpu::fp8_sdpa_fwd": _plain_fwd,
    "hpu::fp8_sdpa_fwd_dropout": _plain_fwd,
    "hpu::fp8_sdpa_fwd_non_dropout": _plain_fwd,
    "hpu::fp8_sdpa_fwd_dropout_seed": _plain_fwd_seeded,
    "hpu::rms_norm": _rms_norm,
    "hpu::rms_norm_fast": _rms_norm,
    "hpu::rms_norm_backward": _rms_norm_bwd,
    "hpu::rms_norm_fast_backward": _rms_norm_bwd,
    # input, sin, cos, position_ids -> out
    "hpu::rotary_pos_embedding": _elementwise(3, (0, 1, 2, 3), (0,)),
    "hpu::rotary_pos_embedding_backward": _elementwise(3, (0, 1, 2, 3), (0,)),
    # grads, weights, exp_avg, exp_avg_sq, neg_step (, wd tensor) -> weights, exp_avg, exp_avg_sq
    "hpu::optimizer_adamw": _elementwise(12, (0, 1, 2, 3, 4, 5), (1, 2, 3)),
    # grads, weights, lr -> weights
    "hpu::optimizer_sgd": _elementwise(3, (0, 1, 2), (1,)),
    # grads, weights, momentum buffers, step, lr, momentum -> weights, buffers
    "hpu::optimizer_sgd_momentum": _elementwise(5, (0, 1, 2, 3, 4, 5), (1, 2)),
    # grads, weights, variances, step, lr -> weights, variances
    "hpu::fused_adagrad": _elementwise(6, (0, 1, 2, 3, 4), (1, 2)),
    # grads (a norm-result placeholder last), max_norm -> grads (scaled)
    "hpu::fused_clip_norm": _clip_norm,
    "hpu::fused_norm": _clip_norm,
    "hpu::fused_norm_lazy": _clip_norm,
    "hpu::optimizer_lamb_fused_norm": _lamb_norm,
    # grads, weights, exp_avg, exp_avg_sq, weight norms, adam norms, adam steps, clip norm, bc1, bc2
    "hpu::optimizer_lamb_phase1": _elementwise(15, (0, 1, 2, 3, 7, 8, 9), (2, 3, 4, 5, 6)),
    # weights, adam norms, weight norms, adam steps, neg_step -> weights
    "hpu::optimizer_lamb_phase2": _elementwise(3, (0, 1, 2, 3, 4), (0,)),
    # model inputs, ema, decay -> ema
    "hpu::optimizer_ema": _elementwise(3, (0, 1, 2), (1,)),
    # params, grads, lr -> grads (trust-ratio scaled)
    "hpu::optimizer_lars": _elementwise(6, (0, 1, 2), (1,)),
    # params+momentum buffers, grads -> params+momentum buffers
    "hpu::optimizer_resource_apply_momentum": _elementwise(3, (0, 1), (0,)),
    "hpu::custom_softmax": _elementwise(5, (0,), (0,)),
    "hpu::scaled_masked_softmax": _elementwise(6, (0, 1), (0,)),
    "hpu::exp_fast_math": _elementwise(1, (0,), (0,)),
    "hpu::sqrt_fast_math": _elementwise(1, (0,), (0,)),
    "hpu::rsqrt_fast_math": _elementwise(1, (0,), (0,)),
    # scores (, retained 1/sum, max) -> probabilities (the retained rows are [..., 1])
    "hpu::scaled_triangular_softmax": _elementwise(6, (0, 1, 2), (0,)),
    "hpu::scaled_triangular_softmax_retain": _elementwise(6, (0,), (0,)),
    # cache, start, end, packed beam order -> cache (bounded by a full read and write)
    "hpu::kv_reorder": _elementwise(0, (0, 1, 2, 3), (0,)),
    "hpu::kv_reorder_": _elementwise(0, (0, 1, 2, 3), (0,)),
    # scores, (start, end) pairs -> probabilities (fp8 ones are smaller: bounded above)
    "hpu::scaled_masked_triangular_softmax": _elementwise(6, (0, 1), (0,)),
    # input, valid counts -> probabilities
    "hpu::ragged_softmax": _elementwise(5, (0, 1), (0,)),
    "hpu::plain_index": _plain_index,
    # a copy of the first quarter of the batch into all of it
    "hpu::in_place_interleave": _elementwise(0, (0,), (0,)),
    "hpu::in_place_interleave_": _elementwise(0, (0,), (0,)),
    "hpu::ctc_loss_custom": _ctc_fwd,
    "hpu::ctc_loss_custom_backward": _ctc_bwd,
    "hpu::masked_batch_gemm": _masked_batch_gemm,
    "hpu::mixture_of_experts": _mixture_of_experts,
}

FUSED_OPS: Final = frozenset(_COSTS)
"""The custom-op names this module prices."""


def fused_op_cost(
    name: str, input_shapes: Sequence[ShapeArg], dtypes: Sequence[Any], *, is_causal: bool = False
) -> FusedOpCost | None:
    """The modeled cost of one call of fused op `name`, or None for an op not in `FUSED_OPS`.

    Args:
        name: `hpu::<op>` (the bridge's spelling; `hpu::<op>.<overload>` is accepted too).
        input_shapes: the schema's tensor arguments in order (shape, list of shapes, or None).
        dtypes: their dtypes, parallel to `input_shapes`.
        is_causal: the SDPA call's `is_causal` (half the attention work).
    """
    cost = _COSTS.get(name.split(".", 1)[0])
    if cost is None:
        return None
    return cost(_Args(input_shapes, dtypes, is_causal), name.split(".", 1)[0])
