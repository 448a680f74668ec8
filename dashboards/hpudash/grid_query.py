"""One page of a grid's rows, filtered and sorted on the server as AG Grid's infinite row model
asks (`getRowsRequest`: `startRow`, `endRow`, `sortModel`, `filterModel`).

The browser holds only the page it shows: the Runs grid of a 10,000-run tree sent every row
(3.7 MB) on each refresh before. Sorting and filtering still apply to every row, here, with
AG Grid's own rules for what the grid offers: text filters (contains, equals, starts / ends
with, their negations, blank) and number filters (equals, less / greater than, in range,
blank), one condition or two joined by AND / OR; empty cells sort first in ascending order.
An unknown filter type or a malformed model filters nothing (a request is never an error).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Row = Mapping[str, Any]

MAX_PAGE_ROWS = 1000
"""The most rows one request gets, whatever it asks."""


@dataclass(frozen=True)
class Page:
    """The rows of one request and how many rows pass its filters (`rowCount`)."""

    rows: list[Row]
    total: int

    def response(self) -> dict[str, Any]:
        """The grid's `getRowsResponse`."""
        return {"rowData": self.rows, "rowCount": self.total}


def page(rows: Sequence[Row], request: Mapping[str, Any] | None) -> Page:
    """The rows `request` asks for (its filters and sort applied to all of `rows` first)."""
    request = request if isinstance(request, Mapping) else {}
    kept = [r for r in rows if _passes(r, request.get("filterModel"))]
    for field, descending in reversed(_sort_rules(request.get("sortModel"))):
        kept.sort(key=_by(field), reverse=descending)  # (stable: earlier rules win)
    start = _index(request.get("startRow"), 0)
    end = min(_index(request.get("endRow"), start + 100), start + MAX_PAGE_ROWS)
    return Page(kept[start:end], len(kept))


def _by(field: str) -> Callable[[Row], tuple[int, Any]]:
    return lambda row: _sort_key(row.get(field))


def _index(value: Any, default: int) -> int:
    return max(value, 0) if isinstance(value, int) and not isinstance(value, bool) else default


def _sort_rules(model: Any) -> list[tuple[str, bool]]:
    if not isinstance(model, list):
        return []
    return [
        (str(m["colId"]), m.get("sort") == "desc")
        for m in model
        if isinstance(m, Mapping) and isinstance(m.get("colId"), str)
    ]


def _sort_key(value: Any) -> tuple[int, Any]:
    """Empty cells first, then numbers, then text (AG Grid's order for a column of one type)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return (0, 0)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (1, value)
    return (2, str(value).lower())


def _passes(row: Row, model: Any) -> bool:
    if not isinstance(model, Mapping):
        return True
    return all(_column_passes(row.get(str(field)), spec) for field, spec in model.items())


def _column_passes(value: Any, spec: Any) -> bool:
    """Whether a cell passes a column's filter model (one condition, or several joined)."""
    if not isinstance(spec, Mapping):
        return True
    conditions = spec.get("conditions")
    if conditions is None and "condition1" in spec:  # (AG Grid before v29)
        conditions = [spec.get("condition1"), spec.get("condition2")]
    if isinstance(conditions, list):
        results = [_condition(value, c, spec.get("filterType")) for c in conditions if c]
        join = all if str(spec.get("operator", "AND")).upper() == "AND" else any
        return join(results) if results else True
    return _condition(value, spec, spec.get("filterType"))


def _condition(value: Any, condition: Any, filter_type: Any) -> bool:
    if not isinstance(condition, Mapping):
        return True
    kind = str(condition.get("type", ""))
    blank = value is None or value == ""
    if kind == "blank":
        return blank
    if kind == "notBlank":
        return not blank
    if condition.get("filterType", filter_type) == "number":
        test = _NUMBER_TESTS.get(kind)
        wanted, upper = _number(condition.get("filter")), _number(condition.get("filterTo"))
        number = _number(value)
        if test is None or wanted is None:
            return True
        return number is not None and test(number, wanted, upper)
    text_test = _TEXT_TESTS.get(kind)
    if text_test is None:
        return True
    wanted_text = str(condition.get("filter") or "").lower()
    return text_test("" if value is None else str(value).lower(), wanted_text)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


_TEXT_TESTS: dict[str, Callable[[str, str], bool]] = {
    "contains": lambda v, w: w in v,
    "notContains": lambda v, w: w not in v,
    "equals": lambda v, w: v == w,
    "notEqual": lambda v, w: v != w,
    "startsWith": lambda v, w: v.startswith(w),
    "endsWith": lambda v, w: v.endswith(w),
}

_NUMBER_TESTS: dict[str, Callable[[float, float, float | None], bool]] = {
    "equals": lambda v, w, _: v == w,
    "notEqual": lambda v, w, _: v != w,
    "lessThan": lambda v, w, _: v < w,
    "lessThanOrEqual": lambda v, w, _: v <= w,
    "greaterThan": lambda v, w, _: v > w,
    "greaterThanOrEqual": lambda v, w, _: v >= w,
    "inRange": lambda v, w, to: to is not None and w < v < to,  # (bounds excluded, as AG Grid)
}
