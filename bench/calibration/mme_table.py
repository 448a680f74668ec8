"""The MME table of `make calibrate` and bench/bench_mme_cost.py: the device model's MME time
of every shape of mme_shapes.py beside Intel's cost model (mme_oracle.py), per chip."""

from __future__ import annotations

from dataclasses import dataclass

from mme_oracle import expected_us, shape_problem
from mme_shapes import SHAPES, MmeShape

CHIPS = ("gaudi2", "gaudi3")


@dataclass(frozen=True)
class MmeRow:
    chip: str
    shape: MmeShape
    ours_us: float
    """The emulator's MME compute time at the cost model's clock (its cycles)."""
    oracle_us: float
    geometry: str
    utilization: float
    dtype_rate: float
    """What the emulator applies on top of the cost model's cycles, which the cost model has
    not: the published matrix rate of BF16 over the shape's dtype's, over the share of the
    clock the MMEs sustain (`device_model.mme_sustained_share`)."""

    @property
    def error_pct(self) -> float:
        return 100.0 * (self.ours_us / self.oracle_us - 1.0)


def rows(chips: tuple[str, ...] = CHIPS) -> list[MmeRow]:
    from hpusim.device_model import DeviceTimeline, load_profile
    from hpusim.mme_cost import conv_gemm, conv_output, mme_cycles

    out = []
    for chip in chips:
        tl = DeviceTimeline(load_profile(chip))
        arch = tl.profile.mme
        for s in SHAPES:
            if s.kind == "gemm":
                b, m, n, k = s.dims
            else:
                batch, c, hw, k_out, r, stride, pad = s.dims
                x, w = (batch, c, hw, hw), (k_out, c, r, r)
                b, m, n, k = conv_gemm(s.kind, x, w, conv_output(x, w, (stride,), (pad,)))  # type: ignore[arg-type]
            got = mme_cycles(arch, b, m, n, k, s.precision, s.kind)  # type: ignore[arg-type]
            rate = tl._mme_ns[s.precision] * arch.clock_mhz / 1e3  # per cycle at its clock
            ours = tl.mme_ns([(s.kind, b, m, n, k)], s.precision) / rate / 1e3  # type: ignore[list-item]
            oracle = expected_us(chip, s.kind, *shape_problem(s.kind, s.dims), s.precision)
            out.append(MmeRow(chip, s, ours, oracle, got.geometry, got.utilization, rate))
    return out


def render(table: list[MmeRow]) -> str:
    """The table (one line per chip and shape) and a summary line per chip."""
    lines = [
        f"{'chip':<7} {'shape':<28} {'kind':<9} {'dt':<5} {'geometry':<8} {'util':>5} "
        f"{'ours us':>10} {'cost model us':>13} {'error':>7} {'dtype x':>7}"
    ]
    for r in table:
        lines.append(
            f"{r.chip:<7} {r.shape.label:<28} {r.shape.kind:<9} {r.shape.precision:<5} "
            f"{r.geometry:<8} {r.utilization:>5.2f} {r.ours_us:>10.1f} {r.oracle_us:>13.1f} "
            f"{r.error_pct:>+6.1f}% {r.dtype_rate:>7.2f}"
        )
    lines.append("")
    lines.extend(summary(table))
    return "\n".join(lines)


def summary(table: list[MmeRow]) -> list[str]:
    out = []
    for chip in sorted({r.chip for r in table}):
        errs = [abs(r.error_pct) for r in table if r.chip == chip]
        within = sum(e <= 15.0 for e in errs)
        out.append(
            f"MME vs Intel's cost model, {chip}: {len(errs)} shapes, max |error| "
            f"{max(errs):.1f}%, mean {sum(errs) / len(errs):.1f}%, {within} within 15%"
        )
    return out
