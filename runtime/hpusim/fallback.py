"""Op support from `data/op_support.json`: which ops run on the device, for which dtypes.

`is_missing(func)`: no HPU kernel at all (the CPU fallback, OpSupportLevel `unsupported`);
`dtype_support(func)`: the 1.16 docs table's dtype columns of the op's python name. The 1.19
bridge's own dtype checks, and what an unsupported dtype leads to, are in `op_dtypes`.
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

HANDLED_ELSEWHERE: Final = frozenset({"aten::convolution_backward"})
"""Listed as missing in the bridge's table, yet run on the device: the bridge implements
convolution through the `convolution_overrideable` / `convolution_backward_overrideable` hooks,
while the emulator's CPU-keyed tensors reach the plain `aten::convolution_backward`."""


@cache
def load_data() -> dict[str, Any]:
    """`data/op_support.json` as stored."""
    raw: dict[str, Any] = json.loads(
        (Path(__file__).parent / "data" / "op_support.json").read_text()
    )
    return raw


@cache
def _data() -> tuple[frozenset[str], dict[str, frozenset[str]]]:
    raw = load_data()
    dtypes = {k: frozenset(v) for k, v in raw["dtypes"].items()}
    missing = frozenset(raw["missing"]) - HANDLED_ELSEWHERE
    registered = frozenset(
        (Path(__file__).parent / "data" / "bridge_registered_ops.txt").read_text().split()
    )
    return missing - {m for m in missing if runs_through_out_kernel(m, registered)}, dtypes


def structured_out_name(name: str) -> str:
    """The `out=` overload a structured op delegates to: `aten::lgamma` / `aten::lgamma_` ->
    `lgamma.out`, `aten::scatter_.reduce` -> `scatter.reduce_out` (native_functions.yaml's
    `structured_delegate` naming)."""
    op, _, overload = name.partition(".")
    base = op.split("::", 1)[-1]
    if base.endswith("_") and not base.endswith("__"):
        base = base[:-1]
    return f"{base}.{overload}_out" if overload else f"{base}.out"


def runs_through_out_kernel(name: str, registered: frozenset[str]) -> bool:
    """A functional / in-place structured op with no HPU kernel of its own still runs on the
    device when the bridge registers its `out=` overload: torch's
    CompositeExplicitAutogradNonFunctional kernel allocates the result and calls that kernel
    (the 1.19 bridge registers `lgamma.out`, hpu_op.yaml:3861, so `torch.lgamma` is no
    fallback)."""
    out = structured_out_name(name)
    # a structured backward delegates to its `grad_input` overload
    # (`_upsample_nearest_exact1d_backward.grad_input`, registered by the 1.19 bridge)
    grad_input = out.removesuffix(".out") + ".grad_input" if out.endswith("_backward.out") else ""
    if out not in registered and grad_input not in registered:
        return False
    try:
        return bool(
            torch._C._dispatch_has_kernel_for_dispatch_key(
                name, "CompositeExplicitAutogradNonFunctional"
            )
        )
    except RuntimeError:  # an overload this torch does not have
        return False


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
