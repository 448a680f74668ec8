"""`grid_query.page`: AG Grid's infinite-model requests answered on the server (filters and
sort over every row, then one page)."""

from __future__ import annotations

from typing import Any

from hpudash.grid_query import MAX_PAGE_ROWS, page

ROWS: list[dict[str, Any]] = [
    {
        "run": f"r{i:03d}",
        "steps": None if i % 3 == 0 else i % 5,
        "kind": "trace" if i % 2 else "run",
    }
    for i in range(250)
]


def _runs(request: dict[str, Any]) -> list[str]:
    return [r["run"] for r in page(ROWS, request).rows]


def test_a_page_is_the_rows_asked_for_with_the_total() -> None:
    found = page(ROWS, {"startRow": 100, "endRow": 200})
    assert [r["run"] for r in found.rows] == [f"r{i:03d}" for i in range(100, 200)]
    assert found.response() == {"rowData": found.rows, "rowCount": 250}
    assert len(page(ROWS, {"startRow": 0, "endRow": 10**9}).rows) == min(250, MAX_PAGE_ROWS)
    assert [r["run"] for r in page(ROWS, None).rows] == [f"r{i:03d}" for i in range(100)]


def test_sort_covers_every_row_with_empty_cells_first_ascending() -> None:
    asc = page(
        ROWS, {"startRow": 0, "endRow": 250, "sortModel": [{"colId": "steps", "sort": "asc"}]}
    )
    values = [r["steps"] for r in asc.rows]
    assert values[: values.count(None)] == [None] * 84
    assert values[84:] == sorted(v for v in values if v is not None)
    desc = _runs({"startRow": 0, "endRow": 3, "sortModel": [{"colId": "run", "sort": "desc"}]})
    assert desc == ["r249", "r248", "r247"]
    two = page(ROWS, {"startRow": 0, "endRow": 250, "sortModel": [
        {"colId": "kind", "sort": "asc"}, {"colId": "run", "sort": "desc"}]})  # fmt: skip
    assert [r["run"] for r in two.rows][:2] == ["r248", "r246"]  # "run" rows first, then by run


def test_text_and_number_filters_and_their_joins() -> None:
    contains = {"run": {"filterType": "text", "type": "contains", "filter": "R01"}}
    assert _runs({"filterModel": contains}) == [f"r01{i}" for i in range(10)]
    number = {"steps": {"filterType": "number", "type": "inRange", "filter": 1, "filterTo": 4}}
    found = page(ROWS, {"startRow": 0, "endRow": 250, "filterModel": number})
    assert {r["steps"] for r in found.rows} == {2, 3} and found.total == len(found.rows)
    either = {"steps": {"filterType": "number", "operator": "OR", "conditions": [
        {"filterType": "number", "type": "equals", "filter": 4},
        {"filterType": "number", "type": "blank"}]}}  # fmt: skip
    assert {r["steps"] for r in page(ROWS, {"endRow": 250, "filterModel": either}).rows} == {
        4,
        None,
    }
    both = {"run": {"filterType": "text", "operator": "AND",
                    "condition1": {"type": "startsWith", "filter": "r1"},
                    "condition2": {"type": "endsWith", "filter": "7"}}}  # fmt: skip
    assert _runs({"filterModel": both}) == [f"r1{i}7" for i in range(10)]


def test_a_malformed_request_filters_and_sorts_nothing() -> None:
    odd = {
        "startRow": "x",
        "sortModel": "run",
        "filterModel": {"run": {"type": "regex", "filter": "."}},
    }
    assert _runs(odd) == [f"r{i:03d}" for i in range(100)]
    assert (
        page(ROWS, {"filterModel": {"steps": {"filterType": "number", "type": "equals"}}}).total
        == 250
    )
