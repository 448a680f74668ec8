"""How numbers read on screen: durations with units, headers in words, cells without NaN.

Views format, they never compute: these helpers only choose units and words for numbers
that come from `hpuprof.analysis` (or from the trace, for the timeline's own drawing).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

UNITS_NS: tuple[tuple[str, float], ...] = (("s", 1e9), ("ms", 1e6), ("us", 1e3), ("ns", 1.0))


def duration(ns: float | None) -> str:
    """`1234567` -> "1.235 ms": the largest unit that keeps the value at least 1, 4 digits."""
    if ns is None or isinstance(ns, bool) or not isinstance(ns, (int, float)):
        return "n/a"
    if not math.isfinite(ns):
        return "n/a"
    mag = abs(ns) * 1.0005  # 999.9996 us reads as 1.000 ms, not 1000.0 us
    unit, scale = next(((u, s) for u, s in UNITS_NS if mag >= s), UNITS_NS[-1])
    value = ns / scale
    if unit == "ns":
        return f"{value:.0f} ns"
    decimals = 1 if abs(value) >= 100 else 2 if abs(value) >= 10 else 3
    return f"{value:.{decimals}f} {unit}"


def time_unit(extent_ns: float) -> tuple[str, float]:
    """(unit, ns per unit) for an axis reaching `extent_ns`: us up to 2 ms, ms up to 20 s, then s."""
    if extent_ns <= 2e6:
        return "us", 1e3
    if extent_ns <= 2e10:
        return "ms", 1e6
    return "s", 1e9


def nice_step(span: float, target: int = 8) -> float:
    """A 1/2/5 x 10^k step giving about `target` ticks over `span` (same unit)."""
    if span <= 0 or not math.isfinite(span):
        return 1.0
    raw = span / target
    power = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if m * power >= raw:
            return m * power
    return 10 * power  # pragma: no cover


def axis_ticks(lo_ns: float, hi_ns: float, target: int = 8) -> tuple[list[float], list[str]]:
    """Tick positions (ms, the axis' data unit) and labels with a unit for [lo_ns, hi_ns]."""
    unit, scale = time_unit(max(abs(hi_ns), abs(lo_ns)))
    lo, hi = lo_ns / scale, hi_ns / scale
    step = nice_step(hi - lo, target)
    decimals = max(0, -math.floor(math.log10(step))) if step < 1 else 0
    first = math.ceil(lo / step) * step
    count = math.floor((hi - first) / step + 1e-9) + 1
    values = [first + i * step for i in range(max(count, 0))]
    return [v * scale / 1e6 for v in values], [f"{v:.{decimals}f} {unit}" for v in values]


def cell(value: Any, digits: int = 3) -> Any:
    """A grid cell: floats rounded, NaN/inf/None empty, containers as compact text."""
    if value is None:
        return None
    if isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        if value == 0 or abs(value) >= 1:
            return round(value, digits)
        return float(f"{value:.{digits + 1}g}")  # small values keep 4 significant digits
    if hasattr(value, "item"):
        return cell(value.item(), digits)
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {cell(v, digits)}" for k, v in value.items())
    if isinstance(value, Sequence):
        return ", ".join(str(cell(v, digits)) for v in value)
    return str(value)


def ns_to_ms(ns: Any, digits: int = 4) -> float | None:
    """Nanoseconds to milliseconds for a table cell (None when missing)."""
    if ns is None or isinstance(ns, bool):
        return None
    try:
        value = float(ns)
    except (TypeError, ValueError):
        return None
    return round(value / 1e6, digits) if math.isfinite(value) else None


def words(field: str) -> str:
    """`device_util_pct` -> "Device util %": a fallback header for fields with no name yet."""
    parts = field.split("_")
    unit = ""
    if parts and parts[-1] in ("pct", "ms", "us", "ns", "mb", "gb", "bytes", "s"):
        unit = {"pct": "%", "mb": "MB", "gb": "GB"}.get(parts[-1], parts[-1])
        parts = parts[:-1]
    text = " ".join(parts).strip() or field
    text = text[:1].upper() + text[1:]
    return f"{text} ({unit})" if unit and unit != "%" else f"{text} %" if unit else text


def number(value: Any) -> float | None:
    """A finite number as float, else None (bools, text, NaN and infinities are not numbers)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    out = float(value)
    return out if math.isfinite(out) else None
