"""Numbers a person reads: a quantity in the unit that fits it, never scientific notation.

A unit kind (`ns` and `ts` times, `bytes`, `flops`) has a ladder of scales; a single value takes
the largest scale it reaches (`fmt_quantity`), and a table column takes the one scale that
fits its largest value (`column_scale`), so that a column reads in one unit named once, in its
header, instead of "us" beside "ms".
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeGuard


@dataclass(frozen=True)
class Scale:
    """One step of a unit's ladder.

    Args:
        symbol: the unit as printed ("ms", "MiB", "GFLOP").
        factor: how many base units (ns, bytes, FLOP) one of it holds.
        decimals: digits after the point of a single value (`4.56 ms`).
        column_decimals: digits after the point in a column, where smaller values share the
            scale of the largest (`0.012` ms beside `5.740`).
    """

    symbol: str
    factor: float
    decimals: int
    column_decimals: int


_TIME = (
    Scale("s", 1e9, 2, 3),
    Scale("ms", 1e6, 2, 3),
    Scale("us", 1e3, 1, 1),
    Scale("ns", 1, 0, 0),
)
_BYTES = (
    Scale("TiB", 2**40, 1, 2),
    Scale("GiB", 2**30, 1, 2),
    Scale("MiB", 2**20, 1, 1),
    Scale("KiB", 2**10, 1, 1),
    Scale("B", 1, 0, 0),
)
_FLOPS = (
    Scale("PFLOP", 1e15, 1, 2),
    Scale("TFLOP", 1e12, 1, 2),
    Scale("GFLOP", 1e9, 1, 2),
    Scale("MFLOP", 1e6, 1, 2),
    Scale("FLOP", 1, 0, 0),
)
LADDERS: dict[str, tuple[Scale, ...]] = {"ns": _TIME, "ts": _TIME, "bytes": _BYTES, "flops": _FLOPS}
"""The scales of each unit kind that has several, largest first."""


def is_number(value: Any) -> TypeGuard[int | float]:
    """A real number (bools are not)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def scale_for(unit: str, largest: float) -> Scale | None:
    """The largest scale of `unit` that `largest` reaches (the smallest one below all); None
    for a unit without a ladder."""
    ladder = LADDERS.get(unit)
    if ladder is None:
        return None
    size = abs(largest)
    return next((s for s in ladder if size >= s.factor), ladder[-1])


def column_scale(unit: str, values: Iterable[Any]) -> Scale | None:
    """The one scale for a column of `unit`: the one its largest number fits (None: no ladder)."""
    return scale_for(unit, max((abs(v) for v in values if is_number(v)), default=0))


def fmt_scaled(value: float, scale: Scale, column: bool = True) -> str:
    """`value` (in base units) as a number of `scale`, thousands separated, with the column's
    decimals (or a single value's); a value too small to show at that precision reads `<0.001`,
    not 0."""
    decimals = scale.column_decimals if column else scale.decimals
    text = f"{value / scale.factor:,.{decimals}f}"
    if value and float(text.replace(",", "")) == 0:
        least = f"{10.0**-decimals:.{decimals}f}"
        return f"<{least}" if value > 0 else f">-{least}"
    return text


def fmt_quantity(unit: str, value: float) -> str:
    """A single value in the scale that fits it, with its symbol: `12.345 ms`, `93.4 MiB`."""
    scale = scale_for(unit, value)
    if scale is None:
        return fmt_plain_number(value)
    return f"{fmt_scaled(value, scale, column=False)} {scale.symbol}"


def fmt_plain_number(value: float) -> str:
    """A number without a unit: thousands separated, never `9.791e+07`."""
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.2f}" if abs(value) < 1e6 else f"{value:,.0f}"
