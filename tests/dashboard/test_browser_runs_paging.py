"""The Runs grid of a tree of a few hundred runs, in headless Chromium: it holds one page of
rows at a time, asked for from the server (sorted and filtered there, over every run), and an
empty figure cell says why ("not measurable (no device events)"), as the Overview does."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.dashboard.conftest import dashboard_process

pytest.importorskip("playwright.sync_api")
pytest.importorskip("dash")

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("dashboard-browser")]

CHROMIUM = Path("/usr/bin/chromium")
RUNS = 230
PAGE_ROWS = 100
NO_DEVICE = "not measurable (no device events)"
CELLS_JS = """column => [0, 1].map(i => document.querySelector(
    `#runs-grid .ag-row[row-index='${i}'] [col-id='${column}']`).innerText.trim())"""


def _small_trace(i: int) -> dict[str, Any]:
    """A few ops; every other trace inside two ProfilerStep annotations."""
    ops = [
        {"ph": "X", "cat": "cpu_op", "name": f"aten::op{k}", "pid": 1, "tid": 1,
         "ts": 100 + 10 * k, "dur": 5 + i % 7}
        for k in range(6)
    ]  # fmt: skip
    if i % 2:
        ops += [
            {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{s}", "pid": 1,
             "tid": 1, "ts": 95 + 30 * s, "dur": 30}
            for s in range(2)
        ]  # fmt: skip
    return {"traceEvents": ops}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("many-runs")
    for i in range(RUNS):
        (root / f"t-{i:05d}.pt.trace.json").write_text(json.dumps(_small_trace(i)))
    with dashboard_process(root, tmp_path_factory.mktemp("many-runs-server")) as (port, _log):
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def page(base: str) -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.skip("/usr/bin/chromium is not installed (make test installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(
            executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox"], headless=True
        )
        page = chromium.new_context(viewport={"width": 1600, "height": 1000}).new_page()
        page.set_default_timeout(180_000)
        page.responses = []  # type: ignore[attr-defined]
        page.on("response", lambda r: page.responses.append(r))  # type: ignore[attr-defined]
        page.goto(base + "/")
        page.wait_for_selector("#runs-grid .ag-row", state="attached")
        page.wait_for_function(
            "() => /^\\d+ runs/.test(document.querySelector('#runs-count').innerText)"
        )
        yield page
        chromium.close()


SHOWN_JS = """async () => {
    const api = await dash_ag_grid.getApiAsync('runs-grid');
    const size = api.paginationGetPageSize(), first = api.paginationGetCurrentPage() * size;
    const out = [];
    for (let i = first; i < first + size; i++) {
        const node = api.getDisplayedRowAtIndex(i);
        if (node && node.data) { out.push(node.data.run); }
    }
    return out;
}"""


def _shown(page: Any) -> list[str]:
    """The run keys of the page of rows the grid holds, in order (the DOM draws only those
    in view)."""
    return list(page.evaluate(SHOWN_JS))


def _wait_first(page: Any, key: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while (shown := _shown(page))[:1] != [key]:
        assert time.monotonic() < deadline, (key, shown[:3])
        time.sleep(0.2)


def _api(page: Any, call: str) -> None:
    page.evaluate(f"() => dash_ag_grid.getApiAsync('runs-grid').then(api => {{ {call} }})")


def test_pages_sorts_and_filters_on_the_server(page: Any) -> None:
    keys = [f"t-{i:05d}.pt.trace.json" for i in range(RUNS)]
    assert page.locator("#runs-count").inner_text().startswith(f"{RUNS} runs")
    shown = _shown(page)
    assert shown == keys[:PAGE_ROWS]
    assert f"1 to {PAGE_ROWS} of {RUNS}" in page.locator("#runs-grid .ag-paging-panel").inner_text()
    # every answer of the server holds one page at most
    answers = [r for r in page.responses if "_dash-update-component" in r.url]
    sizes = [len(r.json()["response"].get("runs-grid", {}).get("getRowsResponse", {}).get("rowData", [])) for r in answers if r.ok]  # fmt: skip
    assert sizes and max(sizes) <= PAGE_ROWS

    page.locator("#runs-grid .ag-paging-button[aria-label='Next Page']").click()
    _wait_first(page, keys[PAGE_ROWS])
    assert _shown(page) == keys[PAGE_ROWS : 2 * PAGE_ROWS]

    _api(
        page,
        "api.applyColumnState({state: [{colId: 'run', sort: 'desc'}], defaultState: {sort: null}});",
    )
    _wait_first(page, keys[-1])  # sorted over every run, not over the page held
    assert _shown(page)[:3] == keys[::-1][:3]

    _api(
        page, "api.setFilterModel({run: {filterType: 'text', type: 'contains', filter: 't-0001'}});"
    )
    _wait_first(page, keys[19])
    assert _shown(page) == keys[10:20][::-1]
    assert "of 10" in page.locator("#runs-grid .ag-paging-panel").inner_text()


def test_an_empty_figure_says_why(page: Any) -> None:
    _api(page, "api.setFilterModel(null); api.applyColumnState({defaultState: {sort: null}});")
    _wait_first(page, "t-00000.pt.trace.json")
    page.wait_for_function(
        """() => [...document.querySelectorAll("#runs-grid .ag-row[row-index='0'] [col-id='status'],"
                 + "#runs-grid .ag-row[row-index='1'] [col-id='status']")]
                 .filter(c => c.innerText.trim() === 'ok').length === 2"""
    )
    cells = {
        column: page.evaluate(CELLS_JS, column) for column in ("device_util_pct", "steps_per_rank")
    }
    # the analysis's `not_measurable` text; an empty figure it gives no reason for stays empty
    assert cells == {"device_util_pct": [NO_DEVICE] * 2, "steps_per_rank": ["", "2"]}
    # sorting that column puts the runs without steps (empty values) first, not by the text
    _api(
        page,
        "api.applyColumnState({state: [{colId: 'steps_per_rank', sort: 'desc'}], defaultState: {sort: null}});",
    )
    _wait_first(page, "t-00001.pt.trace.json")
