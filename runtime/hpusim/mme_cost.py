"""The MME's compute cycles of a matmul or convolution, from the facts of Intel's MME cost model.

Intel's graph compiler prices every MME node with `MmeBrain::calcExpectedCycles`
(HabanaAI/Intel_Gaudi3_Software, MIT: `mme/src/mme_common/mme_brain.cpp`) and exports the
result per node as `mme_expected_compute_cycles` (`synapse/src/graph_compiler/graph_serializers/
post_graph_serializer.cpp`). This module computes the same quantity from the same facts, in our
own code (each fact's file and function is cited where it is used and in
`data/device_profiles.json`, profile key `mme`):

- **Steps.** The MMEs produce an output block of one *geometry* (width x height output
  elements, e.g. 512 x 256 on Gaudi 2) per pass over the common dimension; an output of
  N (FCD) x M (spatial) takes `ceil(N / width) * ceil(M / height)` steps per batch
  (`MmeBrain::getNumStepsPerGeometry`).
- **Cycles per step.** One common-dimension element per cycle, but never less than the
  accumulators' roll-up time (256 cycles on Gaudi 2, 512 on Gaudi 3: `MmeBrain::getRollUpTime`):
  `max(ceil(K / cd_concurrency), rollup)` (`MmeBrain::calcExpectedCycles`). A GEMM with a
  short K (attention's QK^T over head dim 64) is bound by the roll-up.
- **Port-constrained steps.** On Gaudi 2 the narrow 4xw / 4xh geometries share input ports
  (`Gaudi2GeoAttr::isGeometryPortConstrained`, not for fp32): the first step of each row of the
  walk reads its inputs longer (`MmeBrain::calcConstrainedStepCost`: twice for untransposed
  operands; `1 + ceil(M / ports) / te_height` for a GEMM's left operand, which is transposed
  in the MME's terms, so a few-row output pays little; the walk from
  `MmeBrain::chooseBgemmWalkingPattern` / `chooseConvWalkingPattern`). Convolutions count those
  steps once more (the legacy rule in `calcExpectedCycles`).
- **Concurrency.** MMEs a small output leaves idle work on other batches
  (`CommonGeoAttr::setChipConcurrency` halves the MME grid while half the geometry covers the
  output; then `setBgemmConcurrency` / `setCdConcurrency` pack 2 or 4 small outputs into one
  MME); a weight gradient (dW) may instead split K over them, the fastest split winning
  (`MmeBrain::chooseConcurrency`). Convolutions (forward, dX) get none
  (`CommonGeoAttr::supportsConcurrency`).
- **Geometry.** The brain tries the chip's geometries and keeps the one with the fewest cycles
  (`MmeBrain::chooseGeometry`, candidates from `MmeBrain::getGeometries`: all four on Gaudi 2;
  on Gaudi 3 those the output's size admits).
- **Time** = cycles / the MME clock. The cost model counts the cycles of a bf16 MAC array and
  has no per-dtype rate; the data sheets give FP8 twice the BF16 rate on Gaudi 2 and the same
  rate on Gaudi 3, and FP32 is slower: `rate` scales the time by the published matrix rate of
  the dtype over BF16's (`data/device_profiles.json`).

`tests/predict/test_mme_cost.py` evaluates the cost model's formula independently on the
shapes of `bench/bench_mme_cost.py` and checks every shape within 15 %.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

Kind = Literal["gemm", "conv_fwd", "conv_dx", "conv_dw"]
"""The MME operation: a (batched) GEMM, or one of a convolution's three passes."""


@dataclass(frozen=True)
class Geometry:
    """One way the MMEs tile the output: `width` x `height` output elements per step, made of
    `mmes_fcd` x `mmes_spatial` MMEs; `a_ports` spatial ports read the left operand
    (`CommonGeoAttr::getInterleavedSpatialPortsNr`, for the port-constrained step cost)."""

    name: str
    width: int
    height: int
    mmes_fcd: int
    mmes_spatial: int
    port_constrained: bool
    a_ports: int


@dataclass(frozen=True)
class Packing:
    """Small outputs packed into one MME (`setBgemmConcurrency`, `setCdConcurrency`): `gemms`
    at once when the output is at most `max_fcd` x `max_spatial` (not in FP8 when `fp8` is
    False)."""

    max_fcd: int
    max_spatial: int
    gemms: int
    fp8: bool


@dataclass(frozen=True)
class MmeArch:
    """The facts of one chip's MME cost model (`data/device_profiles.json`, key `mme`)."""

    clock_mhz: float
    rollup_cycles: int
    geometries: tuple[Geometry, ...]
    packings: dict[str, tuple[Packing, ...]]
    """Geometry name -> the packings tried in order once one MME is left."""
    pack_dw: bool
    """Whether a weight gradient's small output packs too (Gaudi 2: K split over the cores)."""
    size_dependent_geometries: bool
    """Gaudi 3: the candidates depend on the output's size (`MmeBrain::getGeometries`)."""
    mme_size: int
    """One MME's output edge in elements (Gaudi 3's `getGeometries` compares against it)."""
    te_height: int
    """Rows of one transpose engine (`getTeHeight`): a port-constrained step of an M-row
    output costs `1 + ceil(M / ports) / te_height` times K (`calcConstrainedStepCost`)."""
    dcores: int
    """Gaudi 3: a batch of at least this many GEMMs is perforated over the dcores."""

    @property
    def macs_per_cycle(self) -> int:
        g = self.geometries[0]
        return g.width * g.height


@dataclass(frozen=True)
class MmeCycles:
    """The cost model's answer for one operation on the chosen geometry."""

    cycles: int
    geometry: str
    steps: int
    batch_concurrency: int
    cd_concurrency: int
    utilization: float
    """Useful MACs over the MAC array's capacity during those cycles."""


def arch_from_profile(data: dict[str, Any]) -> MmeArch:
    """The `mme` entry of a device profile as an `MmeArch`."""
    geos = tuple(
        Geometry(name, int(g[0]), int(g[1]), int(g[2]), int(g[3]), bool(g[4]), int(g[5]))
        for name, g in data["geometries"].items()
    )
    packs = {
        name: tuple(Packing(int(p[0]), int(p[1]), int(p[2]), bool(p[3])) for p in entries)
        for name, entries in data["packings"].items()
    }
    return MmeArch(
        clock_mhz=float(data["clock_mhz"]),
        rollup_cycles=int(data["rollup_cycles"]),
        geometries=geos,
        packings=packs,
        pack_dw=bool(data["pack_dw"]),
        size_dependent_geometries=bool(data["size_dependent_geometries"]),
        mme_size=int(data["mme_size"]),
        dcores=int(data["dcores"]),
        te_height=int(data["te_height"]),
    )


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _candidates(arch: MmeArch, kind: Kind, batch: int, m: int, n: int) -> tuple[Geometry, ...]:
    """The geometries the brain tries (`MmeBrain::getGeometries`)."""
    if not arch.size_dependent_geometries:
        return arch.geometries
    by = {g.name: g for g in arch.geometries}
    size = arch.mme_size
    if kind == "gemm" and batch >= arch.dcores:
        names = ["4xh"] if n <= size and m <= size else ["4xh", "4xw"]
        return tuple(by[x] for x in names)
    names = []
    if n >= 2 * size:
        if m >= 2 * size:
            names.append("2xw")
        if n >= 4 * size:
            names.append("4xw")
    if m >= 2 * size:
        if n > size:
            names.append("2xh")
        if m >= 4 * size:
            names.append("4xh")
    return tuple(by[x] for x in names or ["2xh"])


def _concurrency(
    arch: MmeArch, geo: Geometry, kind: Kind, m: int, n: int, fp8: bool
) -> tuple[int, int, int, int]:
    """(width, height, concurrency, left-operand ports) of `geo` once the MMEs a small output
    leaves idle work concurrently (`CommonGeoAttr::setChipConcurrency`, then
    `setBgemmConcurrency` / `setCdConcurrency`)."""
    width, height, conc = geo.width, geo.height, 1
    if kind in ("conv_fwd", "conv_dx"):
        return width, height, conc, geo.a_ports  # `supportsConcurrency`: GEMMs and dW only
    fcd_mmes, sp_mmes = geo.mmes_fcd, geo.mmes_spatial
    while width // 2 >= n and fcd_mmes > 1:
        fcd_mmes //= 2
        width //= 2
        conc *= 2
    while height // 2 >= m and sp_mmes > 1:
        sp_mmes //= 2
        height //= 2
        conc *= 2
    ports = max(geo.a_ports * sp_mmes // geo.mmes_spatial, 1)
    if fcd_mmes == 1 and sp_mmes == 1 and (kind == "gemm" or arch.pack_dw):
        for p in arch.packings[geo.name]:  # the first (tightest) packing the output fits
            if n <= p.max_fcd and m <= p.max_spatial and (p.fp8 or not fp8):
                return p.max_fcd, p.max_spatial, conc * p.gemms, max(ports // p.gemms, 1)
    return width, height, conc, ports


def _constrained_steps(geo: Geometry, kind: Kind, fcd_steps: int, sp_steps: int) -> int:
    """Steps that pay the port constraint: the first of each row of the walk
    (`getNumStepsPerGeometry` with the pattern of `chooseBgemmWalkingPattern` /
    `chooseConvWalkingPattern`)."""
    # 4xw walks SP first when there are SP steps; the others FCD first when there are FCD steps
    raster = sp_steps <= 1 if geo.name == "4xw" else fcd_steps > 1
    raster = (raster and fcd_steps != 1) or (not raster and sp_steps == 1)
    return sp_steps if raster else fcd_steps


def _geometry_cycles(
    arch: MmeArch, geo: Geometry, kind: Kind, batch: int, m: int, n: int, k: int, precision: str
) -> MmeCycles:
    width, height, conc, ports = _concurrency(arch, geo, kind, m, n, precision == "fp8")
    fcd_steps, sp_steps = _ceil(n, width), _ceil(m, height)
    rollup = arch.rollup_cycles
    constrained = (
        _constrained_steps(geo, kind, fcd_steps, sp_steps)
        if geo.port_constrained and precision != "fp32"
        else 0
    )
    # the left operand is transposed in the MME's terms for a GEMM (`isTransposed` of
    # e_mme_ab): a constrained step costs less when few rows are read per port
    cost_c = 2.0
    if kind == "gemm" and geo.port_constrained:
        cost_c = min(1 + _ceil(m, ports) / arch.te_height, 2.0)
    best: MmeCycles | None = None
    split = 1
    # `chooseConcurrency`: a GEMM's idle MMEs take other batches (`setChipConcurrency` on
    # mmeGrid.batch); dW's may also split K (CD concurrency): the fastest split
    top = conc if kind == "conv_dw" else 1
    while split <= top:
        cd_conc, b_conc = split, conc // split
        batch_steps = _ceil(batch, b_conc)
        cd = _ceil(k, cd_conc)
        step = max(cd, rollup)
        step_c = max(int(cd * cost_c), rollup)
        regular = (fcd_steps * sp_steps - constrained) * batch_steps
        if kind != "gemm":
            regular += constrained  # the legacy convolution rule of `calcExpectedCycles`
        cycles = regular * step + constrained * batch_steps * step_c
        if best is None or cycles < best.cycles:
            steps = fcd_steps * sp_steps * batch_steps
            util = batch * m * n * k / (cycles * arch.macs_per_cycle) if cycles else 0.0
            best = MmeCycles(cycles, geo.name, steps, b_conc, cd_conc, util)
        split *= 2
    assert best is not None
    return best


def mme_cycles(
    arch: MmeArch,
    batch: int,
    m: int,
    n: int,
    k: int,
    precision: str = "bf16",
    kind: Kind = "gemm",
) -> MmeCycles:
    """Expected compute cycles of `batch` GEMMs of an M x K by K x N product (output M rows,
    the spatial dim, by N columns, the FCD) on the geometry the brain would choose.

    Args:
        arch: the chip's MME facts (`arch_from_profile`).
        batch, m, n, k: the problem; a convolution as its implicit GEMM (`conv_gemm`).
        precision: "bf16", "fp8" or "fp32" (the port constraint and packing depend on it).
        kind: "gemm", or the convolution pass ("conv_fwd", "conv_dx", "conv_dw").
    """
    batch, m, n, k = max(batch, 1), max(m, 1), max(n, 1), max(k, 1)
    best: MmeCycles | None = None
    for geo in _candidates(arch, kind, batch, m, n):
        c = _geometry_cycles(arch, geo, kind, batch, m, n, k, precision)
        if best is None or c.cycles < best.cycles:
            best = c
    assert best is not None
    return best


def conv_gemm(
    kind: Kind,
    x: Sequence[int],
    w: Sequence[int],
    y: Sequence[int],
) -> tuple[int, int, int, int]:
    """(batch, M, N, K) of a convolution pass as the MME runs it (`MmeLayerParams::
    getFcdSize` / `getSpatialSize` / `getCDSize` / `getBatchSize`).

    Args:
        kind: "conv_fwd", "conv_dx" or "conv_dw".
        x: the input [N, C, *spatial]; w: the weight [K, C, *kernel]; y: the output
            [N, K, *out_spatial].
    """
    window = math.prod(w[2:])
    if kind == "conv_fwd":  # FCD = K, spatial = N x output pixels, CD = C x window
        return 1, y[0] * math.prod(y[2:]), w[0], w[1] * window
    if kind == "conv_dx":  # FCD = C, spatial = N x input pixels, CD = K x window
        return 1, x[0] * math.prod(x[2:]), w[1], w[0] * window
    # dW: FCD = K, spatial = C x the first kernel dim (lowered), batch = the rest of the
    # window, CD = N x output pixels
    first = w[2] if len(w) > 2 else 1
    return max(window // max(first, 1), 1), w[1] * first, w[0], y[0] * math.prod(y[2:])


def conv_output(
    x: Sequence[int],
    w: Sequence[int],
    stride: Sequence[int] = (),
    padding: Sequence[int] = (),
    dilation: Sequence[int] = (),
) -> tuple[int, ...]:
    """The output shape [N, K, *out] of a convolution (torch's formula)."""
    dims = len(x) - 2
    s = list(stride) or [1] * dims
    p = list(padding) or [0] * dims
    d = list(dilation) or [1] * dims
    s, p, d = (v * dims if len(v) == 1 else v for v in (s, p, d))
    out = [(x[2 + i] + 2 * p[i] - d[i] * (w[2 + i] - 1) - 1) // s[i] + 1 for i in range(dims)]
    return (x[0], w[0], *(max(o, 1) for o in out))


def attention_gemms(
    q: Sequence[int],
    k: Sequence[int],
    v: Sequence[int] | None = None,
    backward: bool = False,
    recompute: bool = True,
) -> list[tuple[int, int, int, int]]:
    """The MME GEMMs (batch, M, N, K) of fused attention over q [..., Sq, D], k [..., Sk, D],
    v [..., Sk, Dv]: QK^T and PV forward; the backward redoes QK^T (the recompute variant) and
    adds dV = P^T dO, dP = dO V^T, dQ = dS K, dK = dS^T Q. Causal masking is the caller's
    (it halves the work of every GEMM)."""
    vs = v if v is not None else k
    batch = math.prod(q[:-2]) if len(q) > 2 else 1
    sq, d, sk, dv = q[-2], q[-1], k[-2], vs[-1]
    fwd = [(batch, sq, sk, d), (batch, sq, dv, sk)]
    if not backward:
        return fwd
    bwd = [(batch, sk, dv, sq), (batch, sq, sk, dv), (batch, sq, d, sk), (batch, sk, d, sq)]
    return ([fwd[0]] if recompute else []) + bwd


def gemms_cycles(
    arch: MmeArch,
    gemms: Iterable[tuple[int, int, int, int]],
    precision: str,
    kind: Kind = "gemm",
) -> int:
    """Total cycles of several MME GEMMs run one after the other."""
    return sum(mme_cycles(arch, b, m, n, k, precision, kind).cycles for b, m, n, k in gemms)


PRECISIONS: Final = ("bf16", "fp8", "fp32")
