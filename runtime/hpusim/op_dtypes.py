"""Per-op dtype support as the 1.19 bridge decides it, and what an unsupported dtype leads to.

Where the 1.19 source states an overload's dtypes (`data/op_support.json` `dtypes_1_19`, derived
by `data/make_op_support.py` from `scripts/hpu_op.yaml` and the lazy kernels' `op_info`), the
check is the bridge's: every plain Tensor input (outs excluded), the promoted compute dtype, each
named argument, or the i-th tensor against the i-th set, on the emulated Gaudi generation
(`SupportedDtypes::count`: int64 passes where int32 does unless `PT_ENABLE_INT64_SUPPORT=1`).
Where 1.19 is silent (its shared-layer validators ask the TPC kernel library), the 1.16 docs
table is read for the op's data dtype (its first floating input, else its first tensor).

An unsupported dtype then follows the bridge's `dispatch_fallback` (`hpu_ops/
cpu_fallback_internal.h`): when every tensor argument is floating and one of them is neither
float32 nor float64, the op is recomputed on the device in float32 (if the op supports float32);
otherwise it runs on the CPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any, Final, Literal

import torch
from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND, elementwise_dtypes

import hpusim.fallback as fb

CheckKind = Literal["inputs", "promoted", "per_arg", "positions"]

_FLOAT_KEPT: Final = (torch.float32, torch.float64)  # autocast's cached_cast leaves these


@dataclass(frozen=True)
class BridgeCheck:
    """One overload's dtype check in the 1.19 bridge source.

    Args:
        kind: `inputs` (each plain Tensor input against `sets[0]`), `promoted` (the promoted
            dtype of `args`, or the op's `dtype` argument, against `sets[0]`), `per_arg` (the
            tensor named `args[i]` against `sets[i]`), `positions` (the i-th defined tensor of
            `args` against `sets[i]`, or all against one set; no int64-as-int32 rule).
        args: argument names, as above.
        int_to_float: `promote_int_to_float` (an integral compute dtype becomes float32).
        lazy_only: the check exists in the lazy wrappers only.
        sets: generation (`gaudi2`, ...) or `all` -> the dtype sets.
    """

    kind: CheckKind
    args: tuple[str, ...]
    int_to_float: bool
    lazy_only: bool
    sets: tuple[tuple[str, tuple[frozenset[torch.dtype], ...]], ...]

    def sets_for(self, generation: str) -> tuple[frozenset[torch.dtype], ...] | None:
        by_gen = dict(self.sets)
        return by_gen.get(generation, by_gen.get("all"))


@dataclass(frozen=True)
class TableRow:
    """The 1.16 docs table's dtype columns of the op's python name."""

    columns: frozenset[str]


Rule = BridgeCheck | TableRow


@cache
def _bridge_checks() -> dict[str, BridgeCheck]:
    raw: dict[str, Any] = fb.load_data().get("dtypes_1_19", {})
    checks = {}
    for name, c in raw.items():
        sets = tuple(
            (gen, tuple(frozenset(getattr(torch, d) for d in s) for s in per_gen))
            for gen, per_gen in sorted(c["dtypes"].items())
        )
        checks[name] = BridgeCheck(
            c["kind"], tuple(c["args"]), c["promote"] == "int_to_float", c["lazy_only"], sets
        )
    return checks


Rules = tuple[BridgeCheck | None, TableRow | None]


def rules(func: Any) -> Rules | None:
    """(the 1.19 check of this overload, the 1.16 row of its python name), None when neither
    exists (every dtype supported)."""
    cols = fb.dtype_support(func)
    check = _bridge_checks().get(fb.overload_name(func).split("::", 1)[-1])
    if check is None and cols is None:
        return None
    return check, (TableRow(cols) if cols is not None else None)


def decide(
    rules_: Rules,
    func: Any,
    args: list[Any],
    kwargs: dict[str, Any],
    generation: str,
    lazy: bool,
    int64_support: bool,
) -> tuple[bool, torch.dtype | None]:
    """(runs on the CPU, dtype recomputed in float32 on the device or None) for one call."""
    check, row = rules_
    rule: Rule | None = check
    if check is None or (check.lazy_only and not lazy) or check.sets_for(generation) is None:
        rule = row
    if rule is None:
        return False, None
    bound = _bind(func, args, kwargs)
    if _supported(rule, bound, generation, int64_support):
        return False, None
    tensors = _inputs(bound)
    cast = [t.dtype for t in tensors if t.dtype not in _FLOAT_KEPT]
    if not tensors or not all(t.is_floating_point() for t in tensors) or not cast:
        return True, None
    as_fp32 = [(a, v if a.is_out else _as_fp32(v)) for a, v in bound]
    if _supported(rule, as_fp32, generation, int64_support):
        return False, cast[0]
    return True, None


def _bind(func: Any, args: list[Any], kwargs: dict[str, Any]) -> list[tuple[Any, Any]]:
    """(schema argument, value) of each argument given."""
    schema_args = func._schema.arguments
    bound = list(zip(schema_args, args, strict=False))
    by_name = {a.name: a for a in schema_args}
    bound += [(by_name[k], v) for k, v in kwargs.items() if k in by_name]
    return bound


def _inputs(bound: list[tuple[Any, Any]]) -> list[torch.Tensor]:
    """The tensors of the bound arguments, `out=` ones excluded."""
    return [t for a, v in bound if not a.is_out for t in _tensors(v)]


def _tensors(v: Any) -> list[torch.Tensor]:
    if isinstance(v, torch.Tensor):
        return [v]
    if isinstance(v, (list, tuple)):
        return [t for t in v if isinstance(t, torch.Tensor)]
    return []


def _as_fp32(v: Any) -> Any:
    """A stand-in of `v` with its floating tensors (not float64) in float32 (cached_cast)."""
    if isinstance(v, torch.Tensor):
        if v.is_floating_point() and v.dtype not in _FLOAT_KEPT:
            return torch.empty(v.shape, dtype=torch.float32, device="meta")
        return v
    if isinstance(v, (list, tuple)):
        return [_as_fp32(x) for x in v]
    return v


def _count(dtype: torch.dtype, allowed: frozenset[torch.dtype], int64_support: bool) -> bool:
    """`SupportedDtypes::count`."""
    return dtype in allowed or (
        dtype == torch.int64 and not int64_support and torch.int32 in allowed
    )


def _supported(
    rule: Rule, bound: list[tuple[Any, Any]], generation: str, int64_support: bool
) -> bool:
    if isinstance(rule, TableRow):
        return _table_supported(rule, bound, int64_support)
    sets = rule.sets_for(generation)
    assert sets is not None
    if rule.kind == "inputs":
        plain = [(a, v) for a, v in bound if str(a.type) == "Tensor" and v is not None]
        if len(plain) > 1 and any(a.is_out for a, _ in plain):
            plain = [(a, v) for a, v in plain if not a.is_out]
        return all(_count(v.dtype, sets[0], int64_support) for _, v in plain)
    values = {a.name: v for a, v in bound}
    if rule.kind == "promoted":
        return _count(_compute_dtype(rule, values), sets[0], int64_support)
    if rule.kind == "per_arg":
        return all(
            _count(values[n].dtype, s, int64_support)
            for n, s in zip(rule.args, sets, strict=True)
            if isinstance(values.get(n), torch.Tensor)
        )
    given = [values[n] for n in rule.args if isinstance(values.get(n), torch.Tensor)]
    return all(
        t.dtype in sets[0 if len(sets) == 1 else min(i, len(sets) - 1)] for i, t in enumerate(given)
    )


def _compute_dtype(rule: BridgeCheck, values: dict[str, Any]) -> torch.dtype:
    """`DTypeHelper::get_compute_dtype`: the op's `dtype` argument, else the promoted dtype."""
    requested = values.get("dtype")
    if isinstance(requested, torch.dtype):
        return requested
    operands = [values[n] for n in rule.args if values.get(n) is not None]
    kind = (
        ELEMENTWISE_TYPE_PROMOTION_KIND.INT_TO_FLOAT
        if rule.int_to_float
        else ELEMENTWISE_TYPE_PROMOTION_KIND.DEFAULT
    )
    return elementwise_dtypes(*operands, type_promotion_kind=kind)[1]


def _table_supported(row: TableRow, bound: list[tuple[Any, Any]], int64_support: bool) -> bool:
    """The 1.16 table, read for the op's data dtype (first floating input, else first tensor)."""
    tensors = _inputs(bound)
    if not tensors:
        return True
    floating = [t for t in tensors if t.is_floating_point()]
    dtype = (floating or tensors)[0].dtype
    col = fb.DTYPE_COLUMN.get(dtype)
    if col is None:
        return True
    if col == "INT64" and not int64_support:
        col = "INT32"  # int64 is computed as int32 on the device
    return col in row.columns or (col == "INT64" and "INT32" in row.columns)
