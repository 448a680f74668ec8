"""Intel's MME cost model, written down on its own: the oracle `runtime/hpusim/mme_cost.py` is
checked against (tests/predict/test_mme_cost.py, bench/bench_mme_cost.py, `make calibrate`).

`MmeBrain::calcExpectedCycles` (HabanaAI/Intel_Gaudi3_Software, MIT, `mme/src/mme_common/
mme_brain.cpp`; what the graph compiler exports per node as `mme_expected_compute_cycles`) is

    cycles = (fcd_steps * sp_steps - constrained) * batch_steps * max(ceil(CD / cd_conc), rollup)
           + constrained * batch_steps * max(ceil(CD / cd_conc) * 2, rollup)

(convolutions count the constrained steps once more among the regular ones), minimised over the
geometries the brain tries (`chooseGeometry`) and the batch / CD concurrency it may use
(`chooseConcurrency`). This file restates the facts it needs as plain tables, from the files
named beside them, and evaluates the formula with no code shared with the emulator's model.
"""

from __future__ import annotations

from math import ceil

FACTS = {
    "gaudi2": {
        # mme/src/gaudi2/gaudi2_mme_hal_reader.h getClkFreqMHz
        "clock_mhz": 1650,
        # mme_brain.cpp getRollUpTime
        "rollup": 256,
        # gaudi2_geo_attr.cpp setGrids + setSymPorts / set2xwPorts / set2xhPorts with
        # c_cl_size = 128 (specs/gaudi2/mme.h): name -> (width, height, MMEs along FCD, along
        # spatial, port constrained outside fp32: isGeometryPortConstrained, the left
        # operand's spatial ports: getInterleavedSpatialPortsNr)
        "geometries": {
            "2xh": (256, 512, 1, 2, False, 8),
            "2xw": (512, 256, 2, 1, False, 4),
            "4xh": (128, 1024, 1, 2, True, 16),
            "4xw": (1024, 128, 2, 1, True, 2),
        },
        # gaudi2_geo_attr.cpp getTeHeight: c_cl_size / 2
        "te_height": 64,
        # gaudi2_geo_attr.cpp setBgemmConcurrency once one MME is left: (max FCD, max spatial,
        # outputs per MME, fp8 allowed); setCdConcurrency packs a dW the same way
        "packing": {
            "2xh": [(64, 64, 4, False), (128, 128, 2, True)],
            "2xw": [(64, 64, 4, False), (128, 128, 2, True)],
            "4xh": [(64, 64, 4, False), (64, 256, 2, True)],
            "4xw": [(64, 64, 4, False), (256, 64, 2, True)],
        },
        "pack_dw": True,
        "by_size": False,
    },
    "gaudi3": {
        # mme/src/gaudi3/gaudi3_mme_hal_reader.h getClkFreqMHz
        "clock_mhz": 1600,
        "rollup": 512,
        # gaudi3_geo_attr.cpp setGridsMme (mmeLimit 8, gaudi3_defs.h) with 256 x 256 MMEs
        # (getEuWidth 2 x 128, getMmeHeight 2 x 128)
        "geometries": {
            "2xw": (1024, 512, 4, 2, False, 8),
            "4xw": (2048, 256, 8, 1, False, 4),
            "2xh": (512, 1024, 2, 4, False, 16),
            "4xh": (256, 2048, 1, 8, False, 32),
        },
        "te_height": 128,
        # gaudi3_geo_attr.cpp setBgemmConcurrency: 2 GEMMs per MME up to 128 x 128; no dW
        # packing (setDedwConcurrency cancels it)
        "packing": {g: [(128, 128, 2, True)] for g in ("2xw", "4xw", "2xh", "4xh")},
        "pack_dw": False,
        "by_size": True,
    },
}


def _tried(chip: str, kind: str, batch: int, m: int, n: int) -> list[str]:
    """MmeBrain::getGeometries."""
    facts = FACTS[chip]
    if not facts["by_size"]:
        return list(facts["geometries"])
    if kind == "gemm" and batch >= 4:
        return ["4xh"] if (n <= 256 and m <= 256) else ["4xh", "4xw"]
    out = []
    if n >= 512 and m >= 512:
        out.append("2xw")
    if n >= 1024:
        out.append("4xw")
    if m >= 512 and n > 256:
        out.append("2xh")
    if m >= 1024:
        out.append("4xh")
    return out or ["2xh"]


def _cycles_on(chip: str, geo: str, kind: str, b: int, m: int, n: int, k: int, dt: str) -> int:
    facts = FACTS[chip]
    w, h, mf, ms0, constrained_geo, a_ports = facts["geometries"][geo]
    ms = ms0
    conc = 1
    if kind not in ("conv_fwd", "conv_dx"):
        while w >= 2 * n and mf > 1:
            w, mf, conc = w // 2, mf // 2, conc * 2
        while h >= 2 * m and ms > 1:
            h, ms, conc = h // 2, ms // 2, conc * 2
        a_ports = max(a_ports * ms // ms0, 1)
        if mf == 1 and ms == 1 and (kind == "gemm" or facts["pack_dw"]):
            packs = facts["packing"][geo]
            fits = [p for p in packs if n <= p[0] and m <= p[1] and (p[3] or dt != "fp8")]
            if fits:
                w, h, conc = fits[0][0], fits[0][1], conc * fits[0][2]
                a_ports = max(a_ports // fits[0][2], 1)
    fcd, sp = ceil(n / w), ceil(m / h)
    cons = 0
    if constrained_geo and dt != "fp32":
        sp_first = sp > 1 if geo == "4xw" else fcd <= 1
        raster = (not sp_first and fcd != 1) or (sp_first and sp == 1)
        cons = sp if raster else fcd
    # calcConstrainedStepCost: a GEMM's A is transposed in the MME's terms (isTransposed(ab))
    cost = 2.0
    if kind == "gemm" and constrained_geo:
        cost = min(1 + ceil(m / a_ports) / facts["te_height"], 2.0)
    options = []
    cd_conc = 1
    while cd_conc <= (conc if kind == "conv_dw" else 1):  # K concurrency: dW only
        bsteps = ceil(b / (conc // cd_conc))
        cd = ceil(k / cd_conc)
        regular = (fcd * sp - cons) * bsteps + (cons if kind != "gemm" else 0)
        options.append(
            regular * max(cd, facts["rollup"])
            + cons * bsteps * max(int(cd * cost), facts["rollup"])
        )
        cd_conc *= 2
    return min(options)


def expected_cycles(chip: str, kind: str, b: int, m: int, n: int, k: int, dt: str) -> int:
    """The cost model's expected compute cycles (see the module docstring)."""
    return min(_cycles_on(chip, g, kind, b, m, n, k, dt) for g in _tried(chip, kind, b, m, n))


def expected_us(chip: str, kind: str, b: int, m: int, n: int, k: int, dt: str) -> float:
    """`expected_cycles` / the MME clock (MHz), microseconds, as `calcExpectedCycles` does."""
    return expected_cycles(chip, kind, b, m, n, k, dt) / FACTS[chip]["clock_mhz"]


def conv_problem(
    kind: str, n: int, c: int, hw: int, k: int, r: int, stride: int, pad: int
) -> tuple[int, int, int, int]:
    """(batch, M = spatial, N = FCD, CD) of a 2-D convolution pass, as `MmeLayerParams::
    getFcdSize`, `getSpatialSize`, `getCDSize` and `getBatchSize` read it (mme_common_enum.h);
    dW lowered over the first kernel dim (`canLower`)."""
    out = (hw + 2 * pad - r) // stride + 1
    if kind == "conv_fwd":  # C = y [K, out, out, N]: FCD K, spatial N*out*out, CD C*R*S
        return 1, n * out * out, k, c * r * r
    if kind == "conv_dx":  # C = dx [C, hw, hw, N]: FCD C, spatial N*hw*hw, CD K*R*S
        return 1, n * hw * hw, c, k * r * r
    # dW: C = dw [K, C, S, R]: FCD K, spatial C*S (lowered), batch R, CD N*out*out
    return r, c * r, k, n * out * out


def shape_problem(kind: str, dims: tuple[int, ...]) -> tuple[int, int, int, int]:
    """A `mme_shapes.MmeShape`'s (batch, M, N, K)."""
    if kind == "gemm":
        b, m, n, k = dims
        return b, m, n, k
    return conv_problem(kind, *dims)
