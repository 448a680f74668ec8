"""The live dashboard in headless Debian Chromium (Playwright): pages, zoom, compare, safety."""

from __future__ import annotations

import logging
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SAMPLE_TRACES
from tests.dashboard.conftest import write_run

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


@contextmanager
def _serving(root: Path) -> Iterator[str]:
    """The dashboard over `root` on 127.0.0.1 (a free port), in a thread; yields its URL."""
    from hpudash import create_app
    from werkzeug.serving import make_server

    srv = make_server("127.0.0.1", 0, create_app(root).server, threaded=True)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.server_port}"
    finally:
        srv.shutdown()
        thread.join(5)


@pytest.fixture(scope="module")
def server_url(runs_dir: Path) -> Iterator[tuple[str, _Errors]]:
    """The live server and every warning or error logged in this process while it runs."""
    handler = _Errors()
    logging.getLogger().addHandler(handler)
    try:
        with _serving(runs_dir) as url:
            yield url, handler
    finally:
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


def _scan(root: Path) -> list[Any]:
    from hpudash.catalog import scan

    return scan(root)


def _goto(page: Any, base: str, path: str, selector: str) -> None:
    page.goto(base + path)
    page.wait_for_selector(selector, state="attached")
    _settled(page)


def _settled(page: Any) -> None:
    """The app has loaded and no callback output is waiting for an answer."""
    page.wait_for_function(
        "() => !document.querySelector('._dash-loading, [data-dash-is-loading=\"true\"]')"
    )


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
    _settled(page)


@pytest.mark.parametrize("name", list(PAGES))
def test_page_renders(
    name: str, browser_page: tuple[Any, list[str]], server_url: tuple[str, _Errors]
) -> None:
    page, console = browser_page
    base, log = server_url
    path, selector = PAGES[name]
    _goto(page, base, path, selector)
    if name == "runs":
        _wait_runs_filled(page)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    errors = page.locator(".msg-error").all_inner_texts()
    assert errors == [], errors
    assert console == [], console
    assert log.records == [], log.records
    assert page.locator("#nav").inner_text().count("Timeline") == 1


def test_runs_lists_every_run_with_figures(
    browser_page: tuple[Any, list[str]], server_url: tuple[str, _Errors], runs_dir: Path
) -> None:
    page, _ = browser_page
    text = _runs_text(page, server_url[0])
    assert RUN2 in text and LONE in text
    assert "incomplete" not in text
    count = len(_scan(runs_dir))
    assert page.locator("#runs-count").inner_text().startswith(f"{count} runs")
    # a hostile file name is a row like any other, as text
    assert "onerror" in text and page.locator("#runs-grid img").count() == 0


def _runs_text(page: Any, base: str) -> str:
    """The Runs grid's text once every row has its figures."""
    _goto(page, base, "/", "#runs-grid .ag-row")
    _wait_runs_filled(page)
    return str(page.locator("#runs-grid").inner_text())


def _wait_runs_filled(page: Any) -> None:
    page.wait_for_function(
        "() => !document.querySelector('#runs-grid').innerText.includes('pending')"
    )


def test_timeline_zoom_then_click_shows_details(
    browser_page: tuple[Any, list[str]], server_url: tuple[str, _Errors]
) -> None:
    page, console = browser_page
    base, log = server_url
    _goto(page, base, PAGES["timeline"][0], "#timeline-graph .main-svg")
    _zoom(page, 1.0, 1.4)
    after = page.locator("#timeline-status").inner_text()
    assert "every slice" in after and "400.0 us" in after
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
    page.wait_for_selector("#timeline-details table")
    details = page.locator("#timeline-details").inner_text()
    assert "Start" in details and "after the first event" in details and "Duration" in details
    name = details.split("\n")[0]
    assert any(n in name for n in ("ProfilerStep#", "aten::", "hpu_", "mm_", "add_", "relu_", "softmax_", "copy__", "mul_")), details  # fmt: skip
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


def test_new_run_appears_without_restart(
    browser_page: tuple[Any, list[str]], server_url: tuple[str, _Errors], runs_dir: Path
) -> None:
    """Last in the module: it adds a run to the served directory."""
    page, console = browser_page
    base, log = server_url
    assert "fresh_run" not in _runs_text(page, base)
    write_run(runs_dir / "runs" / "fresh_run", 900)
    page.reload()
    page.wait_for_selector("#runs-grid .ag-row")
    _wait_runs_filled(page)
    assert "runs/fresh_run" in page.locator("#runs-grid").inner_text()
    assert page.locator("#runs-count").inner_text().startswith(f"{len(_scan(runs_dir))} runs")
    _goto(page, base, "/overview?run=runs/fresh_run", "#overview-kpis")
    assert page.locator(".msg-error").all_inner_texts() == []
    assert console == [] and log.records == []


@pytest.fixture(scope="module")
def samples_url(
    tmp_path_factory: pytest.TempPathFactory, server_url: tuple[str, _Errors]
) -> Iterator[tuple[str, list[str]]]:
    """The dashboard over a copy of sample_traces/ (so no cache is written into the repo)."""
    from hpudash.catalog import is_trace_name

    if not SAMPLE_TRACES.is_dir() or not any(
        is_trace_name(p.name) for p in SAMPLE_TRACES.rglob("*") if ".hpuprof-cache" not in str(p)
    ):
        pytest.skip("sample_traces/ has no traces yet (make samples)")
    root = tmp_path_factory.mktemp("samples") / "sample_traces"
    shutil.copytree(
        SAMPLE_TRACES, root, ignore=shutil.ignore_patterns("*.hpuprof-cache", ".*", "__pycache__")
    )
    with _serving(root) as url:
        yield url, [e.key for e in _scan(root)]


def test_every_page_renders_with_the_sample_traces(
    browser_page: tuple[Any, list[str]],
    server_url: tuple[str, _Errors],
    samples_url: tuple[str, list[str]],
) -> None:
    page, console = browser_page
    _, log = server_url
    base, keys = samples_url
    first, second = keys[0], keys[-1]
    visits = [("/", "#runs-grid .ag-row")] + [
        (f"/{name}?run={first}", PAGES[name][1])
        for name in ("timeline", "ops", "dynamicity", "precision", "ranks")
    ]
    for k in keys:
        visits += [(f"/overview?run={k}", "#overview-kpis")]
        visits += [(f"/timeline?run={k}", PAGES["timeline"][1])]
    visits.append((f"/compare?run={first}&b={second}", "#compare-kpis .ag-row"))
    for path, selector in visits:
        _goto(page, base, path, selector)
        assert page.locator(".msg-error").all_inner_texts() == [], path
        assert console == [] and log.records == [], path
    page.screenshot(path=str(ARTIFACTS / "samples-compare.png"), full_page=True)
