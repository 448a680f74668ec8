"""Op support from `data/op_support.json`: which ops run on the device, for which dtypes.

`support(func, dtype)` answers one of the bridge's OpSupportLevel values that matter here:
`supported`, `unsupported` (no HPU kernel: CPU fallback) or `unsupported_dtype` (kernel exists,
not for this dtype: the bridge recomputes floating inputs in fp32 on the device, and falls back
to CPU only when no input is floating).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any, Final

import torch

DTYPE_COLUMN: Final[dict[torch.dtype, str]] = {
    torch.float32: "FP32",
    torch.float64: "FP32",  # computed as float on the device
    torch.bfloat16: "BF16",
    torch.float16: "FP16",
    torch.float8_e5m2: "FP8",
    torch.float8_e4m3fn: "FP8",
    torch.int64: "INT64",
    torch.int32: "INT32",
    torch.int16: "INT16",
    torch.int8: "INT8",
    torch.uint8: "INT8",
    torch.bool: "BOOL",
}

SUPPORTED: Final = "supported"
UNSUPPORTED: Final = "unsupported"
UNSUPPORTED_DTYPE: Final = "unsupported_dtype"


HANDLED_ELSEWHERE: Final = frozenset({"aten::convolution_backward"})
"""Listed as missing in the bridge's table, yet run on the device: the bridge implements
convolution through the `convolution_overrideable` / `convolution_backward_overrideable` hooks,
while the emulator's CPU-keyed tensors reach the plain `aten::convolution_backward`."""


@cache
def _data() -> tuple[frozenset[str], dict[str, frozenset[str]]]:
    raw: dict[str, Any] = json.loads(
        (Path(__file__).parent / "data" / "op_support.json").read_text()
    )
    dtypes = {k: frozenset(v) for k, v in raw["dtypes"].items()}
    return frozenset(raw["missing"]) - HANDLED_ELSEWHERE, dtypes


def overload_name(func: Any) -> str:
    """`aten::digamma` / `aten::add.Tensor`: the bridge's `operator_name()` text."""
    schema = func._schema
    return f"{schema.name}.{schema.overload_name}" if schema.overload_name else str(schema.name)


def base_name(func: Any) -> str:
    """`add` for aten.add.Tensor / aten.add_.Tensor (the op-table's python name)."""
    name: str = func._schema.name.split("::", 1)[-1]
    return name.rstrip("_") if not name.startswith("_") else name


def is_missing(func: Any) -> bool:
    """True when the op has no HPU kernel at all (goes to the CPU fallback). `c10d` collectives
    are run by the process group (HCCL; `hpusim.distributed`), never a CPU fallback."""
    missing, _ = _data()
    name = overload_name(func)
    return name in missing and not name.startswith("c10d::")


def dtype_support(func: Any) -> frozenset[str] | None:
    """The dtype columns the op table lists for this op, or None when the table has no row."""
    _, dtypes = _data()
    return dtypes.get(base_name(func))


def support(func: Any, dtype: torch.dtype | None, int64_support: bool) -> str:
    """The support level of `func` for inputs of `dtype`."""
    if is_missing(func):
        return UNSUPPORTED
    cols = dtype_support(func)
    if cols is None or dtype is None:
        return SUPPORTED
    col = DTYPE_COLUMN.get(dtype)
    if col is None:
        return SUPPORTED
    if col == "INT64" and not int64_support:
        col = "INT32"  # int64 is computed as int32 on the device
    if col in cols or (col == "INT64" and "INT32" in cols):
        return SUPPORTED
    return UNSUPPORTED_DTYPE


def dtype_token(dtype: torch.dtype) -> str:
    """`HPUFloatType`-style token of the fallback log line."""
    names = {
        torch.float32: "Float",
        torch.float64: "Double",
        torch.bfloat16: "BFloat16",
        torch.float16: "Half",
        torch.int64: "Long",
        torch.int32: "Int",
        torch.int16: "Short",
        torch.int8: "Char",
        torch.uint8: "Byte",
        torch.bool: "Bool",
    }
    return f"HPU{names.get(dtype, str(dtype).replace('torch.', '').capitalize())}Type"
