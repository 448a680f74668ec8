"""More of the bridge's python-facing custom ops (`torch.ops.hpu.*`), with CPU references.

The fast-math unaries (`exp_fast_math`, `sqrt_fast_math`, `rsqrt_fast_math`), the causal
softmax of attention scores (`scaled_triangular_softmax`, `..._retain`), the beam-search KV-cache
reorder (`kv_reorder`, `kv_reorder_`), `masked_batch_gemm` and `mixture_of_experts` (optimum-
habana's MoE layers): schemas as the 1.19 bridge registers them (`hpu_op.yaml`
`custom_op_schema`, `habana_eager/eager_custom_op_register.cpp`), semantics as its tests check
them (`tests/pytest_working/any_mode/test_hpu_*.py`). `hpu_ops.install` defines them; each call
is ONE device op priced by `fused_costs`. Statistics and matmuls accumulate in fp32.

Without data (fake compute, FakeTensor tracing) the data-dependent kernels (the reorder, the
expert routing) return outputs of the right metadata only.
"""

from __future__ import annotations

from typing import Any, Final

import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import is_fake

from hpusim.fp8_ops import FP8_DTYPES, saturated

Tensor = torch.Tensor
_F32: Final = torch.float32


def _no_data(t: Tensor) -> bool:
    return t.is_meta or is_fake(t)


# --- fast math ------------------------------------------------------------------------------


def exp_fast_math(self: Tensor) -> Tensor:
    return torch.exp(self.to(_F32)).to(self.dtype)


def sqrt_fast_math(self: Tensor) -> Tensor:
    return torch.sqrt(self.to(_F32)).to(self.dtype)


def rsqrt_fast_math(self: Tensor) -> Tensor:
    return torch.rsqrt(self.to(_F32)).to(self.dtype)


# --- causal softmax of attention scores -------------------------------------------------------


def _scaled_causal(self: Tensor, inv_scale_attn: float) -> Tensor:
    """`self * inv_scale_attn` in fp32, the upper triangle (key after query) at -inf."""
    x = self.to(_F32) * inv_scale_attn
    rows, cols = x.shape[-2], x.shape[-1]
    upper = torch.ones(rows, cols, dtype=torch.bool, device=x.device).triu(1)
    return x.masked_fill(upper, float("-inf"))


def scaled_triangular_softmax(
    self: Tensor,
    inv_scale_attn: float,
    exp_sum_recpr: Tensor | None = None,
    max: Tensor | None = None,  # the bridge's argument name
) -> Tensor:
    """Softmax over the last dim of the causally masked, scaled scores; with the retained row
    max and 1/sum of a `_retain` call, exp(x - max) * exp_sum_recpr."""
    x = _scaled_causal(self, inv_scale_attn)
    if exp_sum_recpr is None or max is None:
        return torch.softmax(x, dim=-1).to(self.dtype)
    return (torch.exp(x - max.to(_F32)) * exp_sum_recpr.to(_F32)).to(self.dtype)


def scaled_triangular_softmax_retain(
    self: Tensor, inv_scale_attn: float
) -> tuple[Tensor, Tensor, Tensor]:
    """(softmax, fp32 1/row sum, row max in the input dtype), the last two [..., 1]."""
    x = _scaled_causal(self, inv_scale_attn)
    row_max = x.amax(dim=-1, keepdim=True).to(self.dtype)
    e = torch.exp(x - row_max.to(_F32))
    recpr = 1.0 / e.sum(dim=-1, keepdim=True)
    return (e * recpr).to(self.dtype), recpr, row_max


def _fp8_saturated(probs: Tensor, out_dtype: torch.dtype) -> Tensor:
    """`probs` (fp32) in `out_dtype`; an fp8 one saturates to the device's range first."""
    if out_dtype in FP8_DTYPES:
        probs = saturated(probs, out_dtype)
    return probs.to(out_dtype)


def scaled_masked_triangular_softmax(
    self: Tensor,
    start_end: Tensor,
    inv_scale_attn: float,
    grouped_batch_size: int,
    use_max: bool,
    mode: int,
    out_dtype: torch.dtype | None = None,
) -> Tensor:
    """Softmax over the last dim of `self * inv_scale_attn` ([batch, q, k], q == k or q == 1)
    keeping, for each group of `grouped_batch_size` batch entries, the keys in [start, end) of
    its pair in `start_end` (flattened: start0, end0, start1, ...), and when q == k only the keys
    at or before the query (the causal triangle). A row with every key masked is 0, as the
    kernel leaves it. `use_max` and `mode` (the kernel's exp flavour) do not change the result
    beyond rounding; `out_dtype` may be fp8 for a bf16 input (the kernel's checks)."""
    out = out_dtype or self.dtype
    if out != self.dtype and not (self.dtype == torch.bfloat16 and out in FP8_DTYPES):
        raise RuntimeError(
            "Input and output dtypes must be equal or input must be bfloat16 and output must "
            f"be fp8. Got: input = {self.dtype}, output = {out}"
        )
    if self.dim() != 3:
        raise RuntimeError("Input must be a 3D tensor.")
    batch, rows, cols = self.shape
    if rows not in (cols, 1):
        raise RuntimeError("Dim1 must equal (dim2 or 1)")
    if grouped_batch_size <= 0 or batch % grouped_batch_size:
        raise RuntimeError(
            f"dim0 ({batch}) must be a multiple of grouped_batch_size ({grouped_batch_size}), "
            "which must be larger than 0."
        )
    bounds = start_end.reshape(-1, 2).to(torch.int64)
    if bounds.shape[0] != batch // grouped_batch_size:
        raise RuntimeError(
            f"start_end holds {bounds.shape[0]} (start, end) pairs; the batch of {batch} in "
            f"groups of {grouped_batch_size} needs {batch // grouped_batch_size}"
        )
    per_entry = bounds.repeat_interleave(grouped_batch_size, dim=0)[:, None, :]  # [batch, 1, 2]
    key = torch.arange(cols, device=self.device)
    keep = (key >= per_entry[..., :1]) & (key < per_entry[..., 1:])  # [batch, 1, cols]
    if rows == cols:
        keep = keep & torch.ones(rows, cols, dtype=torch.bool, device=self.device).tril()
    x = (self.to(_F32) * inv_scale_attn).masked_fill(~keep, float("-inf"))
    probs = torch.softmax(x, dim=-1).nan_to_num(nan=0.0)
    return _fp8_saturated(probs, out)


def ragged_softmax(self: Tensor, dim: int, half_to_float: bool, valid_count: Tensor) -> Tensor:
    """Softmax along `dim` of each row over its first `valid_count[row]` elements, the rest 0
    (rows: the input's elements with `dim` left out, in order; `hpex.kernels.Softmax`'s causal
    softmax passes counts 1..q per q-row block). `half_to_float`: an fp32 result."""
    dim = dim % self.dim()
    x = self.to(_F32).movedim(dim, -1)
    counts = valid_count.reshape(-1).to(torch.int64)
    if counts.numel() != x[..., 0].numel():
        raise RuntimeError(
            f"hpu::ragged_softmax: valid_count holds {counts.numel()} counts for "
            f"{x[..., 0].numel()} rows of {list(self.shape)} along dim {dim}"
        )
    keep = torch.arange(x.shape[-1], device=x.device) < counts.reshape(*x.shape[:-1], 1)
    probs = torch.softmax(x.masked_fill(~keep, float("-inf")), dim=-1).nan_to_num(nan=0.0)
    out_dtype = _F32 if half_to_float else self.dtype
    return probs.movedim(-1, dim).to(out_dtype)


# --- indexing and layout ----------------------------------------------------------------------


def plain_index(self: Tensor, indices: list[Tensor]) -> Tensor:
    """`aten::index` with every index present (the compile backend's rewrite of `x[i, j]`)."""
    return torch.ops.aten.index.Tensor(self, list(indices))


_INTERLEAVE: Final = 4


def _interleaved(self: Tensor) -> Tensor:
    """The first batch / 4 entries of a 4D tensor, each repeated 4 times along dim 0 (what the
    bridge's test checks; its bytes, so fp8 tensors work on CPU torch)."""
    if self.dim() != 4:
        raise RuntimeError("Input has to be a 4D tensor.")
    if self.shape[0] % _INTERLEAVE:
        raise RuntimeError("Batch size has to be a multiple of 4.")
    raw = self.view(torch.uint8) if self.element_size() == 1 else self
    out = raw[: self.shape[0] // _INTERLEAVE].repeat_interleave(_INTERLEAVE, dim=0)
    return out.view(self.dtype)


def in_place_interleave(self: Tensor) -> Tensor:
    return _interleaved(self)


def in_place_interleave_(self: Tensor) -> Tensor:
    return self.copy_(_interleaved(self))


# --- KV-cache beam reorder --------------------------------------------------------------------

_BEAMS: Final = 4
"""`beam_idx` packs four 2-bit beam indices per uint8, the first in the top bits."""


def kv_reorder_(self: Tensor, start: Tensor, end: Tensor, beam_idx: Tensor) -> Tensor:
    """For each batch entry i, the window [start[i], end[i]) of dim -2 of `self[i]` (beams on
    dim 0) takes beam order `beam_idx[i]`: window = window[order]."""
    if _no_data(self):
        return self
    if self.dim() < 3 or self.shape[1] != _BEAMS:
        raise ValueError(
            f"hpu::kv_reorder: expected [batch, {_BEAMS} beams, ..., seq, dim], got "
            f"{list(self.shape)} (beam_idx packs {_BEAMS} 2-bit beam indices per byte)"
        )
    for i in range(self.shape[0]):
        lo, hi, code = int(start[i]), int(end[i]), int(beam_idx[i])
        order = [(code >> (2 * (_BEAMS - 1 - j))) & 3 for j in range(_BEAMS)]
        window = self[i].narrow(-2, lo, hi - lo)
        window.copy_(window[order])
    return self


def kv_reorder(self: Tensor, start: Tensor, end: Tensor, beam_idx: Tensor) -> Tensor:
    return kv_reorder_(self.clone(), start, end, beam_idx)


# --- matmuls ----------------------------------------------------------------------------------


def masked_batch_gemm(
    a: Tensor, b: Tensor, mask_a: Tensor, mask_b: Tensor, trans_a: bool, trans_b: bool
) -> Tensor:
    """op(a) @ op(b) + op(mask_a) @ op(mask_b) (op: transpose of the last two dims if asked;
    the masks broadcast over dim 1)."""

    def op(t: Tensor, trans: bool) -> Tensor:
        t = t.to(_F32)
        return t.transpose(-2, -1) if trans else t

    out = op(a, trans_a) @ op(b, trans_b) + op(mask_a, trans_a) @ op(mask_b, trans_b)
    return out.to(a.dtype)


_ACTIVATIONS: Final[dict[str, Any]] = {"gelu": F.gelu, "relu": F.relu, "silu": F.silu}


def _experts(
    hidden_states: Tensor,
    expert_routing_table: Tensor,
    router_weights: Tensor,
    gate_up: list[tuple[Tensor, Tensor]],
    w3: list[Tensor],
    permuted_weights: bool,
    activation: str,
    experts_min: int,
    experts_max: int,
) -> Tensor:
    """sum over a token's routed experts e in [experts_min, experts_max] of
    router_weight * (act(x @ w1_e) * (x @ w2_e)) @ w3_e; expert e's weights are entry
    e - experts_min; `permuted_weights`: stored transposed ([out, in])."""
    act = _ACTIVATIONS.get(activation)
    if act is None:
        raise ValueError(
            f"hpu::mixture_of_experts: activation {activation!r} is not one of "
            f"{sorted(_ACTIVATIONS)}"
        )
    if _no_data(hidden_states):
        return torch.empty_like(hidden_states)
    dim = hidden_states.shape[-1]
    x = hidden_states.reshape(-1, dim).to(_F32)
    table = expert_routing_table.reshape(x.shape[0], -1)
    weights = router_weights.reshape(x.shape[0], -1).to(_F32)
    out = torch.zeros_like(x)

    def weight(w: Tensor) -> Tensor:
        w = w.to(_F32)
        return w.t() if permuted_weights else w

    for e in range(experts_min, experts_max + 1):
        tokens, slots = (table == e).nonzero(as_tuple=True)
        if tokens.numel() == 0:
            continue
        (w1, w2), w_down = gate_up[e - experts_min], w3[e - experts_min]
        xe = x[tokens]
        h = act(xe @ weight(w1)) * (xe @ weight(w2))
        out.index_add_(0, tokens, (h @ weight(w_down)) * weights[tokens, slots, None])
    return out.reshape(hidden_states.shape).to(hidden_states.dtype)


def mixture_of_experts(
    hidden_states: Tensor,
    expert_routing_table: Tensor,
    router_weights: Tensor,
    w1: list[Tensor],
    w2: list[Tensor],
    w3: list[Tensor],
    *options: Any,
) -> Tensor:
    """`options`: the schema's permuted_weights, activation, experts_min, experts_max."""
    gate_up = list(zip(w1, w2, strict=True))
    return _experts(hidden_states, expert_routing_table, router_weights, gate_up, w3, *options)


def mixture_of_experts_fused_weights(
    hidden_states: Tensor,
    expert_routing_table: Tensor,
    router_weights: Tensor,
    w12: list[Tensor],
    w3: list[Tensor],
    permuted_weights: bool,
    *options: Any,
) -> Tensor:
    """`w12[e]` is w1 and w2 concatenated on their output dim (dim 0 when permuted, else 1);
    `options`: activation, experts_min, experts_max."""
    out_dim = 0 if permuted_weights else 1
    gate_up = [(w.chunk(2, dim=out_dim)[0], w.chunk(2, dim=out_dim)[1]) for w in w12]
    return _experts(
        hidden_states, expert_routing_table, router_weights, gate_up, w3, permuted_weights,
        *options,
    )  # fmt: skip


SCHEMAS: Final[dict[str, str]] = {
    "exp_fast_math": "(Tensor self) -> Tensor",
    "sqrt_fast_math": "(Tensor self) -> Tensor",
    "rsqrt_fast_math": "(Tensor self) -> Tensor",
    "scaled_triangular_softmax": "(Tensor self, float inv_scale_attn, Tensor? exp_sum_recpr=None, Tensor? max=None) -> Tensor",
    "scaled_triangular_softmax_retain": "(Tensor self, float inv_scale_attn) -> (Tensor, Tensor, Tensor)",
    "scaled_masked_triangular_softmax": "(Tensor self, Tensor start_end, float inv_scale_attn, int grouped_batch_size, bool use_max, int mode, ScalarType? out_dtype=None) -> Tensor",
    "ragged_softmax": "(Tensor self, int dim, bool half_to_float, Tensor valid_count) -> Tensor",
    "plain_index": "(Tensor self, Tensor[] indices) -> Tensor",
    "in_place_interleave": "(Tensor self) -> Tensor",
    "in_place_interleave_": "(Tensor(a!) self) -> (Tensor(a!))",
    "kv_reorder": "(Tensor self, Tensor start, Tensor end, Tensor beam_idx) -> Tensor",
    "kv_reorder_": "(Tensor(a!) self, Tensor start, Tensor end, Tensor beam_idx) -> (Tensor(a!))",
    "masked_batch_gemm": "(Tensor a, Tensor b, Tensor mask_a, Tensor mask_b, bool trans_a, bool trans_b) -> Tensor",
    "mixture_of_experts": "(Tensor hidden_states, Tensor expert_routing_table, Tensor router_weights, Tensor[] w1, Tensor[] w2, Tensor[] w3, bool permuted_weights, str activation, int experts_min, int experts_max) -> Tensor",
    "mixture_of_experts.fused_weights": "(Tensor hidden_states, Tensor expert_routing_table, Tensor router_weights, Tensor[] w12, Tensor[] w3, bool permuted_weights, str activation, int experts_min, int experts_max) -> Tensor",
}  # fmt: skip
"""The bridge's schemas (1.19), by op name (and overload)."""

KERNELS: Final[dict[str, Any]] = {
    "exp_fast_math": exp_fast_math,
    "sqrt_fast_math": sqrt_fast_math,
    "rsqrt_fast_math": rsqrt_fast_math,
    "scaled_triangular_softmax": scaled_triangular_softmax,
    "scaled_triangular_softmax_retain": scaled_triangular_softmax_retain,
    "scaled_masked_triangular_softmax": scaled_masked_triangular_softmax,
    "ragged_softmax": ragged_softmax,
    "plain_index": plain_index,
    "in_place_interleave": in_place_interleave,
    "in_place_interleave_": in_place_interleave_,
    "kv_reorder": kv_reorder,
    "kv_reorder_": kv_reorder_,
    "masked_batch_gemm": masked_batch_gemm,
    "mixture_of_experts": mixture_of_experts,
    "mixture_of_experts.fused_weights": mixture_of_experts_fused_weights,
}
