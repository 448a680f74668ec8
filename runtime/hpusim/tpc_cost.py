"""TPC and DMA work per op family: vector operations per element and the HBM traffic of each
access pattern (all MODELED).

A TPC op's duration is a roofline: its vector work at the TPCs' rate or its HBM traffic at the
achievable bandwidth, whichever is longer, plus a kernel's fixed cost. What differs between op
families is (`FAMILIES`, constants in `data/device_profiles.json`, key `tpc`, each cited):

- **vector operations per output element** (`ops_per_element`): 1 for element-wise arithmetic
  and casts, more for transcendental functions, normalization, softmax and the optimizers;
- **traffic**: a tensor is moved in whole cache lines per row of its innermost dimension
  (Intel's DMA cost model rounds a non-linear access so, `DmaCostModel::getSizeInFullCLs`,
  synapse/src/graph_compiler/dma_cost_model.cpp, with the HAL's 128 B (Gaudi 2) / 256 B
  (Gaudi 3) cache line): a tensor whose rows are short (a window's 3 channels...) moves more
  than its bytes. A gather (embedding, `index_select`) reads only the rows it picks, not the
  whole table; a scatter into a slice moves the slice (`INDEXED_WRITES`);
- **copies and layout changes** (`clone`, `copy_`, materialized permutes / transposes, window
  partitions) run on the DMA engines where the graph compiler has them (Gaudi 2: 5 engines,
  `max(HBM traffic / HBM rate, bytes / DMA rate) + 0.3 us`, `DmaCostModel::
  calculateDurationByNumEngines` and `Gaudi2HalReader::getDmaMinimalOverhead`); Gaudi 3 gives
  the graph compiler no DMA engine (`hal_reader/gaudi3/hal.h` numInternalDmaEngines = 0), so
  its copies are TPC kernels.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

ELEMENTWISE: Final = "elementwise"
TRANSCENDENTAL: Final = "transcendental"
NORMALIZATION: Final = "normalization"
SOFTMAX: Final = "softmax"
REDUCTION: Final = "reduction"
GATHER: Final = "gather"
SCATTER: Final = "scatter"
LAYOUT: Final = "layout"
CAST: Final = "cast"
OPTIMIZER: Final = "optimizer"
RANDOM: Final = "random"
FAMILY_NAMES: Final = (
    ELEMENTWISE, TRANSCENDENTAL, NORMALIZATION, SOFTMAX, REDUCTION, GATHER, SCATTER, LAYOUT,
    CAST, OPTIMIZER, RANDOM,
)  # fmt: skip

_BY_FAMILY: Final[dict[str, str]] = {
    TRANSCENDENTAL: "exp log tanh sigmoid silu gelu erf rsqrt sqrt pow sin cos reciprocal "
    "silu_backward gelu_backward tanh_backward sigmoid_backward log1p expm1 elu softplus mish",
    NORMALIZATION: "native_layer_norm native_layer_norm_backward rms_norm native_batch_norm "
    "native_batch_norm_backward _native_batch_norm_legit _native_batch_norm_legit_no_training "
    "_native_batch_norm_legit_functional native_group_norm native_group_norm_backward "
    "batch_norm_backward",
    SOFTMAX: "_softmax softmax _log_softmax _softmax_backward_data _log_softmax_backward_data",
    REDUCTION: "sum mean amax amin max min norm linalg_vector_norm var std var_mean argmax "
    "argmin _foreach_norm nll_loss_forward nll_loss_backward nll_loss2d_forward prod all any "
    "cumsum",
    GATHER: "embedding index_select gather index take embedding_dense_backward",
    LAYOUT: "cat stack roll constant_pad_nd flip repeat permute_copy transpose_copy expand_copy",
    CAST: "_to_copy to",
    OPTIMIZER: "_foreach_add_ _foreach_mul_ _foreach_addcmul_ _foreach_addcdiv_ _foreach_lerp_ "
    "_foreach_sqrt _foreach_div_ _fused_adamw_ _fused_adam_ lerp_ addcmul_ addcdiv_ addcmul "
    "addcdiv",
    RANDOM: "native_dropout native_dropout_backward bernoulli_ uniform_ normal_ randperm "
    "multinomial",
}
FAMILIES: Final[dict[str, str]] = {
    op: family for family, ops in _BY_FAMILY.items() for op in ops.split()
}
"""ATen base name -> op family (every other TPC op: element-wise)."""

INDEXED_WRITES: Final = frozenset(
    {
        "index_copy", "index_copy_", "index_put_", "_index_put_impl_", "index_add_", "scatter_",
        "scatter_add_", "masked_scatter_", "slice_scatter", "select_scatter",
    }
)  # fmt: skip
"""Ops that write a slice of their first input: their traffic is the source they write (read
and written) and the indices, not the whole destination."""


@dataclass(frozen=True)
class TpcArch:
    """A chip's TPC and DMA facts (`data/device_profiles.json`, key `tpc`)."""

    ops_per_element: dict[str, float]
    cache_line_bytes: int
    dma_engines: int
    """DMA engines the graph compiler places copies on (0: copies are TPC kernels)."""
    dma_gbytes_per_s: float
    dma_overhead_ns: int


def arch_from_profile(data: dict[str, Any]) -> TpcArch:
    """The `tpc` entry of a device profile as a `TpcArch`."""
    ops = {k: float(v) for k, v in data["ops_per_element"].items()}
    missing = set(FAMILY_NAMES) - set(ops)
    if missing:
        raise ValueError(f"tpc.ops_per_element lacks {sorted(missing)}")
    return TpcArch(
        ops_per_element=ops,
        cache_line_bytes=int(data["cache_line_bytes"]),
        dma_engines=int(data["dma_engines"]),
        dma_gbytes_per_s=float(data["dma_gbytes_per_s"]),
        dma_overhead_ns=int(data["dma_overhead_ns"]),
    )


def family_of(op: str) -> str:
    """The op family of an ATen base name."""
    return FAMILIES.get(op, ELEMENTWISE)


def _itemsize(dtype: Any) -> int:
    size = getattr(dtype, "itemsize", None)
    return int(size) if isinstance(size, int) else 4


def _numel(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def line_bytes(shape: Sequence[int], itemsize: int, cache_line: int) -> int:
    """Bytes moved for a dense tensor: each row of its innermost dimension in whole cache lines
    (a tensor of one element or a 1-D one is one row)."""
    if not shape:
        return itemsize
    row = shape[-1] * itemsize
    rows = _numel(shape[:-1])
    return rows * (-(-row // cache_line) * cache_line)


def tpc_work(
    arch: TpcArch,
    op: str,
    shapes: Sequence[tuple[int, ...]],
    dtypes: Sequence[Any],
    out_numel: int,
    nbytes: int,
) -> tuple[float, int]:
    """(vector operations, HBM bytes) of one TPC op.

    Args:
        op: the ATen base name; shapes, dtypes: its tensor inputs; out_numel: elements it
            writes; nbytes: the dense bytes it reads and writes (inputs and outputs).
    """
    family = family_of(op)
    flops = out_numel * arch.ops_per_element[family]
    sizes = [_numel(s) * _itemsize(d) for s, d in zip(shapes, dtypes, strict=False)]
    read = sum(sizes)
    written = max(nbytes - read, 0)
    if op in INDEXED_WRITES and len(shapes) >= 2:
        return float(_numel(shapes[-1])), 2 * sizes[-1] + sum(sizes[1:-1])
    if family == GATHER and len(shapes) >= 2:
        if op == "embedding_dense_backward":  # grad rows scattered into a zeroed table
            return float(out_numel), 2 * sizes[0] + sizes[1] + written
        # only the rows it picks are read (the indices and the written rows), in cache lines
        cl = arch.cache_line_bytes
        row = shapes[0][-1] * _itemsize(dtypes[0]) if shapes[0] else 0
        rows = written // max(row, 1)
        picked = rows * (-(-row // cl) * cl)
        return flops, picked + sum(sizes[1:]) + written
    moved = sum(
        line_bytes(s, _itemsize(d), arch.cache_line_bytes)
        for s, d in zip(shapes, dtypes, strict=False)
    )
    return flops, moved + written


def dma_ns(arch: TpcArch, hbm_bytes_per_ns: float, nbytes: int) -> int:
    """A copy of `nbytes` read and written on the DMA engines (Intel's DMA cost model: the
    larger of the HBM traffic at the HBM rate and one side at the engines' rate, plus the
    engines' activation)."""
    one_side = nbytes / 2
    t = max(nbytes / hbm_bytes_per_ns, one_side / arch.dma_gbytes_per_s)
    return int(t) + arch.dma_overhead_ns
