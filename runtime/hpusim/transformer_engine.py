"""FP8 training and inference through the bridge's Transformer Engine surface (emulated).

`habana_frameworks.torch.hpex.experimental.transformer_engine` (the shim re-exports this
module): `fp8_autocast(enabled, fp8_recipe)`, `Linear`, and `recipe.DelayedScaling` /
`recipe.Format`. Inside `fp8_autocast` a `te.Linear` casts its input and weight to FP8 (E4M3
forward; HYBRID: E5M2 gradients) with per-tensor scales from their amax, and multiplies them with
`hpu::fp8_gemm_v2`, the bridge's FP8 GEMM: the device model runs it at the MME's FP8 rate, and
the FP8 copies are what the backward keeps (half the bytes of bf16). Numerics are emulated on
CPU (dequantize, then matmul in the output dtype); the scaling is current (this step's amax)
rather than delayed (an amax history), which costs the same device ops.
"""

from __future__ import annotations

import contextlib
import enum
import math
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

import hpusim.hpu_ops as hpu_ops
from hpusim.fp8_ops import amax, device_fp8_max
from hpusim.lifecycle import is_enabled


class Format(enum.Enum):
    """FP8 formats of a recipe: E4M3 everywhere, E5M2 everywhere, or HYBRID (E4M3 forward, E5M2
    gradients)."""

    E4M3 = "E4M3"
    E5M2 = "E5M2"
    HYBRID = "HYBRID"


@dataclass
class DelayedScaling:
    """The scaling recipe (accepted for compatibility; the emulation scales by this step's
    amax, which costs the same device work as the delayed history)."""

    margin: int = 0
    interval: int = 1
    fp8_format: Format = Format.HYBRID
    amax_history_len: int = 1
    amax_compute_algo: Any = "most_recent"
    reduce_amax: bool = True


class _State(threading.local):
    enabled: bool = False
    recipe: DelayedScaling | None = None


_STATE = _State()


def is_fp8_enabled() -> bool:
    return _STATE.enabled


@contextlib.contextmanager
def fp8_autocast(
    enabled: bool = True,
    calibrating: bool = False,
    fp8_recipe: DelayedScaling | None = None,
    fp8_group: Any = None,
    **_ignored: Any,
) -> Iterator[None]:
    """Run `te` modules in FP8 inside the block (the bridge's `te.fp8_autocast`)."""
    prev = (_STATE.enabled, _STATE.recipe)
    _STATE.enabled, _STATE.recipe = enabled, fp8_recipe or DelayedScaling()
    try:
        yield
    finally:
        _STATE.enabled, _STATE.recipe = prev


def ensure_ops() -> None:
    """Define the bridge's `torch.ops.hpu.*` (`hpu::fp8_gemm_v2` among them: `fp8_gemm_v2`)."""
    hpu_ops.install()


def cast_to_fp8(t: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """(FP8 copy of `t`, its inverse scale): scale = FP8 max / amax, on the device."""
    scale = device_fp8_max(dtype) / amax(t).clamp(min=1e-12)
    return (t * scale).to(dtype), scale.reciprocal()


class _Fp8Linear(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any,
        x: torch.Tensor,
        weight: torch.Tensor,
        bias: torch.Tensor | None,
        fwd_dtype: torch.dtype,
        bwd_dtype: torch.dtype,
    ) -> torch.Tensor:
        out_dtype = x.dtype  # Intel's te.Linear: the activation's dtype (fp32 stays fp32)
        x2 = x.reshape(-1, x.shape[-1])
        x8, sx = cast_to_fp8(x2, fwd_dtype)
        w8, sw = cast_to_fp8(weight, fwd_dtype)
        out = torch.ops.hpu.fp8_gemm_v2(x8, False, w8, True, None, out_dtype, sx, sw, bias, False)
        ctx.save_for_backward(x8, sx, w8, sw)
        ctx.bwd_dtype = bwd_dtype
        ctx.has_bias = bias is not None
        ctx.in_shape = x.shape
        ctx.dtypes = (x.dtype, weight.dtype)
        return out.reshape(*x.shape[:-1], out.shape[-1])

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> Any:
        x8, sx, w8, sw = ctx.saved_tensors
        g2 = grad.reshape(-1, grad.shape[-1])
        g8, sg = cast_to_fp8(g2, ctx.bwd_dtype)
        out_dtype = grad.dtype
        dx = torch.ops.hpu.fp8_gemm_v2(g8, False, w8, False, None, out_dtype, sg, sw, None, False)
        dw = torch.ops.hpu.fp8_gemm_v2(g8, True, x8, False, None, out_dtype, sg, sx, None, False)
        db = g2.sum(0) if ctx.has_bias else None
        return (
            dx.reshape(ctx.in_shape).to(ctx.dtypes[0]),
            dw.to(ctx.dtypes[1]),
            db,
            None,
            None,
        )


class Linear(torch.nn.Module):
    """`te.Linear`: `y = x W^T + b`, in FP8 inside `fp8_autocast`, like `nn.Linear` outside.

    Args:
        in_features, out_features, bias: as `torch.nn.Linear`.
        params_dtype: dtype of the weight and bias (default: torch's default dtype).
        device: where the parameters live (default: `hpu` while the emulator is enabled).
        skip_weight_param_allocation: no weight / bias parameters: `forward` is given them
            (`linear(x, weight, bias)`, as Megatron-style callers do).
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        params_dtype: torch.dtype | None = None,
        device: Any = None,
        skip_weight_param_allocation: bool = False,
        **_ignored: Any,
    ) -> None:
        super().__init__()
        ensure_ops()
        if device is None:
            device = "hpu" if is_enabled() else "cpu"
        kw: dict[str, Any] = {"dtype": params_dtype or torch.get_default_dtype(), "device": device}
        self.in_features = in_features
        self.out_features = out_features
        self.weight: torch.nn.Parameter | None = None
        self.bias: torch.nn.Parameter | None = None
        if not skip_weight_param_allocation:
            self.weight = torch.nn.Parameter(torch.empty(out_features, in_features, **kw))
            self.bias = torch.nn.Parameter(torch.empty(out_features, **kw)) if bias else None
            self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.weight is None:
            return
        torch.nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0
            torch.nn.init.uniform_(self.bias, -bound, bound)

    def forward(
        self,
        x: torch.Tensor,
        weight: torch.Tensor | None = None,
        bias: torch.Tensor | None = None,
        is_first_microbatch: bool | None = None,
    ) -> torch.Tensor:
        """`weight` / `bias`: used instead of the module's (required without allocated
        parameters); `is_first_microbatch` (the weight-cast cache) changes no result here."""
        weight = self.weight if weight is None else weight
        bias = self.bias if bias is None else bias
        if weight is None:
            raise ValueError(
                "te.Linear(skip_weight_param_allocation=True) needs the weight passed to forward"
            )
        if not _STATE.enabled:
            return torch.nn.functional.linear(x, weight, bias)
        recipe = _STATE.recipe or DelayedScaling()
        e4m3, e5m2 = torch.float8_e4m3fn, torch.float8_e5m2
        fwd = e5m2 if recipe.fp8_format is Format.E5M2 else e4m3
        bwd = e4m3 if recipe.fp8_format is Format.E4M3 else e5m2
        if torch.is_autocast_enabled("hpu"):
            x = x.to(torch.get_autocast_dtype("hpu"))
        out: torch.Tensor = _Fp8Linear.apply(x, weight, bias, fwd, bwd)
        return out

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}"
