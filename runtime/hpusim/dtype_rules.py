"""The bridge's device dtype rules (gaudi.md 8.1), recorded as `cast` events.

On a real Gaudi, float64 is computed as float32, and int64 as int32 unless
`PT_ENABLE_INT64_SUPPORT=1`; an op registered but not for a floating dtype is recomputed in
float32 (`unsupported_dtype`). The emulator records each rule where it applies (tensor creation or
transfer to the device, and per op for `unsupported_dtype`). float64 / int64 device tensors hold
the values the device's 32-bit storage holds (`device_dtype_values`), so numerics match
a Gaudi run (`hpuprof.computed_as`: float32 / int32); `unsupported_dtype` ops still compute in
their own dtype. The precision report reads the events; `rule_counts()` keeps running totals.
"""

from __future__ import annotations

from time import perf_counter_ns
from typing import TYPE_CHECKING, Any, Final

import torch

if TYPE_CHECKING:
    from hpusim.state import Runtime

COMPLEX_ERROR: Final = "Complex datatype is not supported on HPU device."
COMPLEX_DTYPES: Final = frozenset({torch.complex32, torch.complex64, torch.complex128})

_seen: dict[tuple[str, str, torch.dtype], int] = {}


def rule_counts() -> dict[tuple[str, str, str], int]:
    """(rule, op, dtype) -> occurrences so far."""
    return {(r, op, str(d).replace("torch.", "")): n for (r, op, d), n in _seen.items()}


def record_rule(
    rt: Runtime,
    op: str,
    dtype_from: torch.dtype,
    dtype_to: torch.dtype,
    rule: str,
    computed_as: torch.dtype | None = None,
) -> None:
    """Count a dtype rule and record a `cast` event for it."""
    k = (rule, op, dtype_from)
    n = _seen.get(k, 0)
    _seen[k] = n + 1
    if rt.sink.recording:
        rt.events.dtype_rule(
            op, dtype_from, dtype_to, rule, computed_as or dtype_from, perf_counter_ns(),
            rt.mode_code,
        )  # fmt: skip


def on_device_dtype(rt: Runtime, dtype: torch.dtype, op: str) -> None:
    """A tensor of `dtype` lands on the device: apply the fp64 / int64 rules."""
    if dtype == torch.float64:
        record_rule(rt, op, dtype, torch.float32, "fp64_as_fp32", torch.float32)
    elif dtype == torch.int64 and not rt.flags.int64_support:
        record_rule(rt, op, dtype, torch.int32, "int64_as_int32", torch.int32)


def reset() -> None:
    _seen.clear()


def has_demoted_dtype(out: Any, int64_support: bool) -> bool:
    """Whether an op's results include a dtype the device holds in 32 bits (fp64; int64
    unless PT_ENABLE_INT64_SUPPORT=1)."""
    outs = out if isinstance(out, (tuple, list)) else (out,)
    for o in outs:
        if isinstance(o, torch.Tensor) and (
            o.dtype is torch.float64 or (o.dtype is torch.int64 and not int64_support)
        ):
            return True
    return False


def device_dtype_values(out: Any, int64_support: bool) -> None:
    """Give float64 / int64 results the values the device's fp32 / int32 storage holds (the
    bridge keeps the user-visible dtype and computes in the 32-bit one): fp64 values rounded to
    fp32, int64 values wrapped to int32 (unless PT_ENABLE_INT64_SUPPORT=1), in place."""
    outs = out if isinstance(out, (tuple, list)) else (out,)
    for o in outs:
        if not isinstance(o, torch.Tensor) or o.numel() == 0:
            continue
        if o.dtype is torch.float64:
            _store(o, torch.float32)
        elif o.dtype is torch.int64 and not int64_support:
            _store(o, torch.int32)


def _store(o: torch.Tensor, as_dtype: torch.dtype) -> None:
    if torch._debug_has_internal_overlap(o) == 1:  # an expanded view: its base holds the values
        return
    o.copy_(o.to(as_dtype))
