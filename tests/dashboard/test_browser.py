"""The live dashboard in headless Debian Chromium (Playwright): pages, zoom, compare, safety."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("playwright.sync_api")
pytest.importorskip("dash")

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--no-first-run",
]  # fmt: skip
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "dashboard"
RUN2 = "runs/train_2rank"
LONE = "lone/eager.pt.trace.json.gz"
PAGES = {
    "runs": ("/", "#runs-grid .ag-row"),
    "overview": (f"/overview?run={RUN2}", "#overview-kpis"),
    "timeline": (f"/timeline?run={RUN2}", "#timeline-graph .main-svg"),
    "ops": (f"/ops?run={LONE}", "#ops-grid .ag-row"),
    "dynamicity": (f"/dynamicity?run={RUN2}", "#dyn-kpis"),
    "precision": (f"/precision?run={LONE}", "#prec-dtype .main-svg"),
    "compare": (f"/compare?run={RUN2}&b={LONE}", "#compare-kpis .ag-row"),
    "ranks": (f"/ranks?run={RUN2}", "#ranks-graph .main-svg"),
}


class _Errors(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(self.format(record))


@pytest.fixture(scope="module")
def server_url(runs_dir: Path) -> Iterator[tuple[str, _Errors]]:
    from hpudash import create_app
    from werkzeug.serving import make_server

    handler = _Errors()
    logging.getLogger().addHandler(handler)
    app = create_app(runs_dir)
    srv = make_server("127.0.0.1", 0, app.server, threaded=True)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.server_port}", handler
    finally:
        srv.shutdown()
        thread.join(5)
        logging.getLogger().removeHandler(handler)


@pytest.fixture(scope="module")
def browser_page(server_url: tuple[str, _Errors]) -> Iterator[tuple[Any, list[str]]]:
    if not CHROMIUM.exists():
        pytest.skip("/usr/bin/chromium is not installed (make test installs it)")
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    console: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.on(
            "console",
            lambda m: console.append(f"{m.type}: {m.text}") if m.type == "error" else None,
        )
        page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
        page.on("dialog", lambda d: (console.append(f"dialog opened: {d.message}"), d.dismiss()))
        page.set_default_timeout(60_000)
        yield page, console
        browser.close()


def _goto(page: Any, base: str, path: str, selector: str) -> None:
    page.goto(base + path)
    page.wait_for_selector(selector, state="attached")
    page.wait_for_function("() => !document.querySelector('._dash-loading')")


def _zoom(page: Any, lo_ms: float, hi_ms: float) -> None:
    """Zoom the timeline to [lo_ms, hi_ms] as a drag-zoom does, once dcc.Graph listens, and
    wait for the zoom callback's answer (the status line names the new window)."""
    graph = "document.querySelector('#timeline-graph .js-plotly-plot')"
    # Ready = dcc.Graph listens for plotly_relayout AND its first responsive resize is done.
    # That resize (plotly's 100 ms debounced Plots.resize) emits relayout {autosize: true};
    # emitted after our zoom, it would make Dash drop the zoom's answer as superseded.
    # plotly sets gd._redrawTimer when the resize starts and deletes gd._resolveResize when
    # its relayout has been emitted and settled.
    page.wait_for_function(
        f"() => {{ const gd = {graph}; return !!(gd && gd._ev && gd._ev._events"
        " && gd._ev._events.plotly_relayout && gd._redrawTimer !== undefined"
        " && gd._resolveResize === undefined); }"
    )
    before = page.locator("#timeline-status").inner_text()
    page.evaluate(
        f"([a, b]) => Plotly.relayout({graph}, {{'xaxis.range[0]': a, 'xaxis.range[1]': b}})",
        [lo_ms, hi_ms],
    )
    page.wait_for_function(
        "(b) => document.querySelector('#timeline-status').innerText !== b", arg=before
    )
    page.wait_for_function("() => !document.querySelector('._dash-loading')")


@pytest.mark.parametrize("name", list(PAGES))
def test_page_renders(
    name: str, browser_page: tuple[Any, list[str]], server_url: tuple[str, _Errors]
) -> None:
    page, console = browser_page
    base, log = server_url
    path, selector = PAGES[name]
    _goto(page, base, path, selector)
    page.wait_for_timeout(300)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    errors = page.locator(".msg-error").all_inner_texts()
    assert errors == [], errors
    assert console == [], console
    assert log.records == [], log.records
    assert page.locator("#nav").inner_text().count("Timeline") == 1


def test_runs_lists_every_run_with_figures(
    browser_page: tuple[Any, list[str]], server_url: tuple[str, _Errors]
) -> None:
    page, _ = browser_page
    base, _ = server_url
    _goto(page, base, "/", "#runs-grid .ag-row")
    text = page.locator("#runs-grid").inner_text()
    assert RUN2 in text and LONE in text
    assert "incomplete" not in text
    assert page.locator("#runs-count").inner_text().startswith(("2 runs", "3 runs"))


def test_timeline_zoom_then_click_shows_details(
    browser_page: tuple[Any, list[str]], server_url: tuple[str, _Errors]
) -> None:
    page, console = browser_page
    base, log = server_url
    _goto(page, base, PAGES["timeline"][0], "#timeline-graph .main-svg")
    _zoom(page, 1.0, 1.4)
    after = page.locator("#timeline-status").inner_text()
    assert "exact slices" in after and "0.400 ms" in after
    assert page.locator("#timeline-graph .bars path").count() > 0
    page.screenshot(path=str(ARTIFACTS / "timeline-zoomed.png"), full_page=True)
    # then a real mouse click on the widest drawn slice: plotly turns it into clickData
    box = page.evaluate(
        """() => {
        // the widest slice drawn whole inside the plot (longer ones are clipped to it)
        const area = document.querySelector('#timeline-graph .nsewdrag').getBoundingClientRect();
        let best = null;
        for (const q of document.querySelectorAll('#timeline-graph .bars path')) {
            const r = q.getBoundingClientRect();
            const inside = r.left >= area.left && r.right <= area.right
                && r.top >= area.top && r.bottom <= area.bottom;
            if (inside && r.width > 4 && r.height > 4 && (!best || r.width > best.w))
                best = {x: r.left + r.width / 2, y: r.top + r.height / 2, w: r.width};
        }
        return best;
    }"""
    )
    assert box is not None
    page.mouse.move(box["x"], box["y"])
    page.mouse.click(box["x"], box["y"])
    page.wait_for_selector("#timeline-details pre")
    details = page.locator("#timeline-details").inner_text()
    assert '"ts_ns"' in details and '"dur_ns"' in details
    assert any(f'"name": "{n}' in details for n in ("aten::", "hpu_", "mm_", "add_", "relu_", "softmax_", "copy__", "mul_")), details  # fmt: skip
    page.screenshot(path=str(ARTIFACTS / "timeline-details.png"), full_page=True)
    assert console == [] and log.records == []


def test_compare_shows_deltas(
    browser_page: tuple[Any, list[str]], server_url: tuple[str, _Errors]
) -> None:
    page, _ = browser_page
    base, _ = server_url
    _goto(page, base, PAGES["compare"][0], "#compare-ops .ag-row")
    kpis = page.locator("#compare-kpis").inner_text()
    assert "step_ms" in kpis and "delta" in kpis.lower()
    assert "aten::mm" in page.locator("#compare-ops").inner_text()


def test_hostile_names_are_text(
    browser_page: tuple[Any, list[str]], server_url: tuple[str, _Errors]
) -> None:
    page, console = browser_page
    base, _ = server_url
    _goto(page, base, PAGES["ops"][0], "#ops-grid .ag-row")
    page.fill("#ops-search", "evil")
    page.keyboard.press("Enter")
    page.wait_for_function(
        "() => document.querySelector('#ops-grid').innerText.includes('onerror')"
    )
    assert page.locator("#ops-grid img").count() == 0
    assert not any("dialog" in c for c in console)


def test_downloads_and_traversal(server_url: tuple[str, _Errors]) -> None:
    import urllib.error
    import urllib.request

    base, _ = server_url
    with urllib.request.urlopen(f"{base}/files/{LONE}") as r:
        assert r.status == 200 and len(r.read()) > 100
    for bad in (
        "../etc/passwd",
        "..%2F..%2Fetc%2Fpasswd",
        "runs/train_2rank/run.json",
        "%2Fetc%2Fpasswd",
    ):
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(f"{base}/files/{bad}")
        assert err.value.code == 404
    with urllib.request.urlopen(f"{base}/report.html?run={RUN2}") as r:
        assert r.status == 200 and b"<html" in r.read().lower()
        assert "default-src 'none'" in r.headers["Content-Security-Policy"]
