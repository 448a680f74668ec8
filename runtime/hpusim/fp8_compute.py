"""Device ops on fp8 tensors that CPU torch has no fp8 kernel for, computed in fp32.

A Gaudi computes `max`, `clamp`, `add`, padding, `index_fill`... on fp8 tensors (or, where its
kernel lacks the dtype, the bridge recomputes the op in fp32 on the device); CPU torch raises
`"max_values_cpu" not implemented for 'Float8_e4m3fn'` for most of them. `call_in_fp32` runs
such an op with its fp8 tensor arguments widened to fp32 (exact: every fp8 value is an fp32
value) and gives the results the dtypes the op has for fp8 inputs (its meta kernel's, else the
first fp8 argument's for floating results), rounding to nearest; in-place and `out=` arguments
get their new values written back. Only the emulator's CPU run changes: the op stays one device
op on its fp8 tensors. An op that falls back to the CPU on a Gaudi too is not widened (CPU torch
fails there the same way).
"""

from __future__ import annotations

from typing import Any, Final

import torch

FP8: Final = frozenset({torch.float8_e4m3fn, torch.float8_e5m2})


def missing_fp8_kernel(error: NotImplementedError) -> bool:
    """Whether `error` is CPU torch's "not implemented for 'Float8_...'"."""
    return "not implemented for 'Float8_" in str(error)


def _widen(a: Any, originals: dict[int, torch.Tensor]) -> Any:
    if isinstance(a, torch.Tensor) and a.dtype in FP8:
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
    """The dtypes of the op's outputs for these (fp8) inputs, from its meta kernel; None if it
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


def call_in_fp32(func: Any, schema: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """`func(*args, **kwargs)` (an op of `schema`) with fp8 tensor arguments computed in fp32
    (see the module)."""
    fp8 = next(
        a.dtype
        for a in (*args, *kwargs.values())
        for a in (a if isinstance(a, (list, tuple)) else (a,))
        if isinstance(a, torch.Tensor) and a.dtype in FP8
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
            dtype = fp8 if o.is_floating_point() else o.dtype
        return o if o.dtype == dtype else o.to(dtype)

    if isinstance(out, (tuple, list)):
        return type(out)(narrow(o, i) for i, o in enumerate(out))
    return narrow(out, 0)
