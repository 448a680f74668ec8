"""Device ops on tensors of dtypes CPU torch has no kernel for, computed in wider ones.

A Gaudi computes `max`, `clamp`, `add`, padding, `index_fill`... on fp8 tensors, `_add_relu`
on bf16 / fp16 ones and `take` with int32 indices (or, where its kernel lacks the dtype, the
bridge recomputes the op in fp32 on the device); CPU torch raises `"max_values_cpu" not implemented for 'Float8_e4m3fn'` or
`Unsupported datatype for add_relu:c10::BFloat16` there. `call_in_fp32` runs such an op with
its low-precision tensor arguments widened to fp32 (exact) and gives the results the dtypes the
op has for the original inputs (its meta kernel's, else the first low-precision argument's for
floating results), rounding to nearest; in-place and `out=` arguments get their new values
written back. Ops whose device kernel has the dtype and CPU torch none (trunc / floor / ceil
of bool, the identity on a Gaudi; uniform_ and lerp of int32) run a composite in that dtype instead
(`_IN_DTYPE`). Only the emulator's CPU run changes: the op stays one device op on its tensors.
An op that falls back to the CPU on a Gaudi too is not widened (CPU torch fails there the same
way).
"""

from __future__ import annotations

import re
from typing import Any, Final

import torch

LOW: Final = frozenset({torch.float8_e4m3fn, torch.float8_e5m2, torch.bfloat16, torch.float16})
"""The dtypes widened: CPU torch lacks kernels for many ops in them, a Gaudi does not."""

_MISSING: Final = re.compile(
    r"not implemented for '(Float8_e[45]m[23](fn)?|BFloat16|Half)'"
    r"|Unsupported datatype for \w+:c10::(BFloat16|Half)"
    r"|take\(\): Expected a long tensor for index, but got Int"
    r"|\"(trunc|floor|ceil)_vml_cpu\" not implemented for 'Bool'"
    r"|\"check_uniform_bounds\" not implemented for '(Int|Short)'"
    r"|\"lerp_kernel_(tensor|scalar)\" not implemented for '(Int|Short|Char|Byte|Long)'"
)


def missing_cpu_kernel(error: Exception) -> bool:
    """Whether `error` is CPU torch lacking a kernel for a low-precision dtype
    (`"max_values_cpu" not implemented for 'Float8_e4m3fn'`, the `_add_relu` assert)."""
    return isinstance(error, (NotImplementedError, RuntimeError)) and bool(
        _MISSING.search(str(error))
    )


def _widen(a: Any, originals: dict[int, torch.Tensor]) -> Any:
    if isinstance(a, torch.Tensor) and a.dtype in LOW:
        wide = a.to(torch.float32)
        originals[id(wide)] = a
        return wide
    if isinstance(a, (list, tuple)) and any(isinstance(x, torch.Tensor) for x in a):
        return type(a)(_widen(x, originals) for x in a)
    return a


def _meta(a: Any) -> Any:
    if isinstance(a, torch.Tensor):
        return torch.empty_strided(a.shape, a.stride(), dtype=a.dtype, device="meta")
    if isinstance(a, (list, tuple)):
        return type(a)(_meta(x) for x in a)
    return a


def _result_dtypes(func: Any, args: list[Any], kwargs: dict[str, Any]) -> list[Any] | None:
    """The dtypes of the op's outputs for these (low-precision) inputs, from its meta kernel; None if it
    has none for them."""
    try:
        out = func(*_meta(args), **{k: _meta(v) for k, v in kwargs.items()})
    except Exception:  # no meta kernel, or a data-dependent shape
        return None
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [o.dtype if isinstance(o, torch.Tensor) else None for o in outs]


def _written(schema: Any, args: list[Any], kwargs: dict[str, Any]) -> list[Any]:
    """The arguments the op writes (`Tensor(a!)`: in-place `self`, `out=`)."""
    written = []
    for i, arg in enumerate(schema.arguments):
        if arg.alias_info is None or not arg.alias_info.is_write:
            continue
        if arg.name in kwargs:
            written.append(kwargs[arg.name])
        elif i < len(args) and not arg.kwarg_only:
            written.append(args[i])
    return written


def _add_relu(self: torch.Tensor, other: Any, alpha: Any = 1) -> torch.Tensor:
    """`relu(self + other * alpha)` in `self`'s dtype: the product is rounded to it before the
    add, as the device's add_relu_fwd does (the bridge's test_hpu_add_relu checks bf16 / fp16
    results to 1e-5 against this composite, which one fp32 rounding misses by an ulp)."""
    return torch.relu(self + other * alpha)


def _rounded_integers(self: torch.Tensor, *, out: torch.Tensor | None = None) -> torch.Tensor:
    """trunc / floor / ceil of a bool (or integer) tensor: the device runs the identity kernel
    for every integral dtype (the bridge's RoundingSharedMeta); CPU torch has no bool kernel."""
    return self.clone() if out is None else out.copy_(self)


def _uniform_integers(
    self: torch.Tensor, low: float = 0.0, high: float = 1.0, *, generator: Any = None
) -> torch.Tensor:
    """uniform_ of an int32 / int16 tensor: the device's philox_random_uniform draws integers
    between int(low) and int(high) (the bridge's FillPhiloxUniformParams); CPU torch has no
    integer uniform_."""
    drawn = torch.randint(int(low), int(high), self.shape, generator=generator)
    return self.copy_(drawn)


def _lerp_integers(
    start: torch.Tensor, end: torch.Tensor, weight: Any, *, out: torch.Tensor | None = None
) -> torch.Tensor:
    """lerp of integer tensors: the device's sub, mult and add in the tensors' dtype, a scalar
    weight made a constant of that dtype (the bridge's CommonLerp); CPU torch has no kernel."""
    if not isinstance(weight, torch.Tensor):
        weight = int(weight)
    result = start + weight * (end - start)
    return result if out is None else out.copy_(result)


_ROUNDING: Final = ("aten::trunc", "aten::floor", "aten::ceil")

_IN_DTYPE: Final[dict[str, Any]] = {
    **{name: _rounded_integers for name in _ROUNDING},
    **{f"{name}.out": _rounded_integers for name in _ROUNDING},
    **{f"{name}_": lambda self: self for name in _ROUNDING},
    "aten::uniform_": _uniform_integers,
    **{f"aten::lerp.{w}": _lerp_integers for w in ("Tensor", "Scalar", "Tensor_out", "Scalar_out")},
    **{
        f"aten::lerp_.{w}": lambda s, *a: s.copy_(_lerp_integers(s, *a))
        for w in ("Tensor", "Scalar")
    },
    # int32 indices (the bridge's test_hpu_take runs them in eager and lazy): CPU wants int64
    "aten::take": lambda self, index: torch.take(self, index.long()),
    "aten::_add_relu.Tensor": _add_relu,
    "aten::_add_relu.Scalar": _add_relu,
    "aten::_add_relu_.Tensor": lambda self, *a, **k: self.copy_(_add_relu(self, *a, **k)),
    "aten::_add_relu_.Scalar": lambda self, *a, **k: self.copy_(_add_relu(self, *a, **k)),
}
"""Ops whose device kernel computes in the tensors' own dtype: a composite of CPU torch ops
that have kernels for it, instead of the fp32 widening."""


def call_in_fp32(func: Any, schema: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """`func(*args, **kwargs)` (an op of `schema`) with low-precision tensor arguments computed
    in fp32 (see the module), or in their dtype where the device kernel does (`_IN_DTYPE`)."""
    overload = schema.overload_name
    composite = _IN_DTYPE.get(f"{schema.name}.{overload}" if overload else schema.name)
    if composite is not None:
        return composite(*args, **kwargs)
    low = next(
        a.dtype
        for a in (*args, *kwargs.values())
        for a in (a if isinstance(a, (list, tuple)) else (a,))
        if isinstance(a, torch.Tensor) and a.dtype in LOW
    )
    want = _result_dtypes(func, args, kwargs)
    originals: dict[int, torch.Tensor] = {}
    wide_args = [_widen(a, originals) for a in args]
    wide_kwargs = {k: _widen(v, originals) for k, v in kwargs.items()}
    out = func(*wide_args, **wide_kwargs)
    for wide in _written(schema, wide_args, wide_kwargs):
        for w in wide if isinstance(wide, (list, tuple)) else (wide,):
            original = originals.get(id(w)) if isinstance(w, torch.Tensor) else None
            if original is not None:
                original.copy_(w)

    def narrow(o: Any, i: int) -> Any:
        if not isinstance(o, torch.Tensor):
            return o
        original = originals.get(id(o))
        if original is not None:  # an in-place op's `self` / an `out=` tensor
            return original
        dtype = want[i] if want is not None and i < len(want) else None
        if dtype is None:
            dtype = low if o.is_floating_point() else o.dtype
        return o if o.dtype == dtype else o.to(dtype)

    if isinstance(out, (tuple, list)):
        return type(out)(narrow(o, i) for i, o in enumerate(out))
    return narrow(out, 0)
