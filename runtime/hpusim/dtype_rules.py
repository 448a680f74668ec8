"""The bridge's device dtype rules (gaudi.md 8.1), recorded as `cast` events.

On a real Gaudi, float64 is computed as float32, and int64 as int32 unless
`PT_ENABLE_INT64_SUPPORT=1`; an op registered but not for a floating dtype is recomputed in
float32 (`unsupported_dtype`). The emulator records each rule where it applies (tensor creation or
transfer to the device, and per op for `unsupported_dtype`). float64 / int64 device tensors hold
the values the device's 32-bit storage holds (`dispatch.device_dtype_values`), so numerics match
a Gaudi run (`hpuprof.computed_as`: float32 / int32); `unsupported_dtype` ops still compute in
their own dtype. The precision report reads the events; `rule_counts()` keeps running totals.
"""

from __future__ import annotations

from time import perf_counter_ns

import torch

from hpusim import state

_seen: dict[tuple[str, str, torch.dtype], int] = {}


def rule_counts() -> dict[tuple[str, str, str], int]:
    """(rule, op, dtype) -> occurrences so far."""
    return {(r, op, str(d).replace("torch.", "")): n for (r, op, d), n in _seen.items()}


def record_rule(
    rt: state.Runtime,
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
        rt.sink.runtime(
            "cast",
            f"dtype rule {rule}",
            perf_counter_ns(),
            0,
            mode=rt.mode_code,
            payload={
                "hpuprof.op": op,
                "hpuprof.dtype_from": str(dtype_from).replace("torch.", ""),
                "hpuprof.dtype_to": str(dtype_to).replace("torch.", ""),
                "hpuprof.rule": rule,
                "hpuprof.computed_as": str(computed_as or dtype_from).replace("torch.", ""),
            },
        )


def on_device_dtype(rt: state.Runtime, dtype: torch.dtype, op: str) -> None:
    """A tensor of `dtype` lands on the device: apply the fp64 / int64 rules."""
    if dtype == torch.float64:
        record_rule(rt, op, dtype, torch.float32, "fp64_as_fp32", torch.float32)
    elif dtype == torch.int64 and not rt.flags.int64_support:
        record_rule(rt, op, dtype, torch.int32, "int64_as_int32", torch.int32)


def reset() -> None:
    _seen.clear()
