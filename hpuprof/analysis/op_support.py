"""Which dtypes Gaudi has HPU kernels for, per op: so that a fallback of one dtype is told apart
from an op with no HPU kernel at all.

The table is the one the emulated bridge uses, `hpusim`'s `data/op_support.json` (the Gaudi 1.16
docs' op/dtype table less the ops the 1.19 bridge registers, widened where ops share a TPC
kernel; `missing`: ops with no HPU kernel), read as data only: no torch, no emulator code. Where
it is not installed every op is unknown and fallbacks are reported as before.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Final

from hpuprof.trace.opinfo import norm_dtype

_TOKENS: Final = {
    "FP32": "fp32", "BF16": "bf16", "FP16": "fp16", "FP8": "fp8", "INT64": "int64",
    "INT32": "int32", "INT16": "int16", "INT8": "int8", "BOOL": "bool",
}  # fmt: skip
"""The docs table's dtype columns in our dtype vocabulary (`opinfo.norm_dtype`)."""


@dataclass(frozen=True)
class OpSupport:
    """An op's HPU kernels as the table states them.

    Args:
        known: the table names the op (with its dtypes, or as having no kernel).
        dtypes: the dtypes it has HPU kernels for (our vocabulary), empty when none or unknown.
    """

    known: bool
    dtypes: tuple[str, ...]


@cache
def _table() -> tuple[dict[str, tuple[str, ...]], frozenset[str]]:
    try:
        text = files("hpusim").joinpath("data/op_support.json").read_text(encoding="utf-8")
    except (ModuleNotFoundError, OSError):
        return {}, frozenset()
    data = json.loads(text)
    dtypes = {
        str(op): tuple(_TOKENS[t] for t in tokens if t in _TOKENS)
        for op, tokens in (data.get("dtypes") or {}).items()
    }
    return dtypes, frozenset(str(op) for op in data.get("missing") or ())


def op_support(op: str) -> OpSupport:
    """The HPU kernels of `op` (`aten::is_nonzero`, `aten::add_.Tensor`, `digamma`)."""
    dtypes, missing = _table()
    name = op.split("::", 1)[-1]
    base = name.split(".", 1)[0]
    if f"aten::{name}" in missing or f"aten::{base}" in missing:
        return OpSupport(True, ())
    for key in (base, base.rstrip("_")):
        if key in dtypes:
            return OpSupport(True, dtypes[key])
    return OpSupport(False, ())


def tensor_dtypes(types: list[object]) -> tuple[str, ...]:
    """The distinct dtypes among an op's recorded input types (`["bool", "Scalar", ""]` ->
    `("bool",)`), in our vocabulary; non-tensor entries left out."""
    out: list[str] = []
    for t in types:
        d = norm_dtype(str(t))
        if (d in _TOKENS.values() or d in ("fp64", "uint8")) and d not in out:
            out.append(d)
    return tuple(out)
