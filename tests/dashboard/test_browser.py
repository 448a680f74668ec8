"""The live dashboard in headless Debian Chromium (Playwright), as a user sees it.

One server over a directory holding the samples, the real CUDA, AMD and NCCL traces of
../shared (skipped when absent), a synthetic two-rank run and traces with hostile names. Every
page of every run is visited (inside the app, as a user clicks, so the JavaScript bundles load
once) and read: no error, no console error, no dialog, no raw dict, epoch-ns, NaN or None text,
no Gaudi advice on a non-Gaudi trace; figures equal `hpuprof analyze --format json`; device
rows have drawn pixels at full zoom-out (in a screenshot of the rendered figure); the timeline's
zoom, URL, keys, range selection, details and "Open in Perfetto UI" work.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
import pytest

from tests.conftest import SAMPLE_TRACES, SHARED_TRACES
from tests.dashboard.conftest import HOSTILE, HOSTILE_FILE, dashboard_process, write_run
from tests.dashboard.synth import synthetic_trace, write_chrome_json

pytest.importorskip("playwright.sync_api")
pytest.importorskip("dash")

from playwright.sync_api import TimeoutError as PlaywrightTimeout

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("dashboard-browser")]

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "dashboard"
RUN2 = "runs/train_2rank"
HOSTILE_DIR = '"><img src=x onerror=alert(3)>'
LONE = "lone/eager.pt.trace.json.gz"
PAGES = ("overview", "timeline", "ops", "nodes", "dynamicity", "precision", "ranks", "memory")
REAL = {
    "real/cuda": "critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
    "real/amd": "amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
}
CUDA = "real/cuda/benchmark_result_2869224_1695835535_trace.json.gz"
AMD = "real/amd/mi250_minitoy_train_ROCm6_2_kineto.json.gz"
NCCL = "real/nccl"
EPOCH_NS = re.compile(r"\b1[5-9]\d{17}\b")
RAW_DICT = re.compile(r"\{'[^']*': |\{\"[^\"]*\": ")
NAN = re.compile(r"\bNaN\b|\bnan\b|\bNone\b(?! in this run)")
HPU_ADVICE = re.compile(
    r'device_type="hpu"|mark_step\(|wrap_in_hpu_graph|habana_frameworks|htcore|PT_HPU_'
)
CUDA_ADVICE = re.compile(r"CUDA graph|torch\.cuda\.")
PUSH_STATE = "p => { window.history.pushState({}, '', p); window.dispatchEvent(new PopStateEvent('popstate')); }"
"""A move inside the app (as the back button does): it routes without reloading its bundles."""
SETTLED = "() => !document.querySelector('._dash-loading, [data-dash-is-loading=\"true\"]')"


@dataclass(frozen=True)
class Server:
    """`hpuprof dashboard` as a user runs it, in its own process (the production server)."""

    base: str
    log: Path

    def problems(self) -> list[str]:
        """Lines of the server's output that report an error or a traceback."""
        text = self.log.read_text(errors="replace")
        return [line for line in text.splitlines() if re.search(r"Traceback|ERROR|Exception", line)]


def _hostile_trace(n: int) -> Any:
    """A synthetic trace whose op, process and thread names would run script as HTML."""
    trace = synthetic_trace(n, ops_per_step=40)
    ev = trace.events
    ev["name"] = ev["name"].cat.rename_categories({"aten::relu": HOSTILE})
    trace.processes["name"] = ["<script>alert(4)</script>", "/device:HPU:0"]
    trace.threads["name"] = ['"><svg onload=alert(5)>', "MME 0", "TPC 0", "DMA 0"]
    return trace


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("dash")
    write_run(root / "runs" / "train_2rank", 4_000, ranks=2)
    (root / "runs" / "train_2rank" / "traces" / "train-rank2.pt.trace.incomplete.json").write_text(
        "{}"
    )
    hostile_run = root / "runs" / HOSTILE_DIR / "traces"
    hostile_run.mkdir(parents=True)
    write_chrome_json(_hostile_trace(900), hostile_run / "t.pt.trace.json")
    (hostile_run.parent / "run.json").write_bytes(
        orjson.dumps({"traces": ["traces/t.pt.trace.json"]})
    )
    (root / "lone").mkdir()
    write_chrome_json(_hostile_trace(2_500), root / "lone" / "eager.pt.trace.json.gz")
    write_chrome_json(synthetic_trace(600), root / "lone" / HOSTILE_FILE)
    if SAMPLE_TRACES.is_dir():
        shutil.copytree(
            SAMPLE_TRACES,
            root / "samples",
            ignore=shutil.ignore_patterns(
                "*.hpuprof-cache", ".*", "__pycache__", "workloads", "*.py", "*.md"
            ),
        )
    data = SHARED_TRACES / "tests" / "data"
    if data.is_dir():
        for key, rel in REAL.items():
            (root / key).mkdir(parents=True)
            shutil.copy(data / rel, root / key / Path(rel).name)
        shutil.copytree(data / "trace_filter", root / NCCL)
    return root


@pytest.fixture(scope="module")
def server(root: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The dashboard over `root` on 127.0.0.1 (a free port) in its own process."""
    work = tmp_path_factory.mktemp("dash-server")
    with dashboard_process(root, work) as (port, log):
        yield Server(f"http://127.0.0.1:{port}", log)


@dataclass
class Browser:
    page: Any
    context: Any
    base: str
    console: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def goto(self, path: str, selector: str = "#page-content > *") -> None:
        """A full page load (a user typing the address)."""
        self.page.goto(self.base + path)
        self.page.wait_for_selector(selector, state="attached")
        self.page.wait_for_function(SETTLED)

    def visit(self, path: str, title: str) -> None:
        """Navigate inside the app (no reload of the bundles); wait for the page titled `title`."""
        self.page.evaluate(PUSH_STATE, path)
        self.page.wait_for_function(
            "t => { const h = document.querySelector('#page-content h2'); const m = document.querySelector('#page-content .msg-error');"
            " return (h && h.innerText === t) || m; }",
            arg=title,
        )
        self.page.wait_for_function(SETTLED)

    def text(self, selector: str = "#page-content") -> str:
        return str(self.page.locator(selector).inner_text())


@pytest.fixture(scope="module")
def browser(server: Server) -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.skip("/usr/bin/chromium is not installed (make test installs it)")
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        context = chromium.new_context(viewport={"width": 1600, "height": 1000})
        b = Browser(context.new_page(), context, server.base)
        b.page.on(
            "console",
            lambda m: b.console.append(f"{m.type}: {m.text}") if m.type == "error" else None,
        )
        b.page.on("pageerror", lambda e: b.console.append(f"pageerror: {e}"))
        b.page.on("dialog", lambda d: (b.dialogs.append(d.message), d.dismiss()))
        b.page.set_default_timeout(90_000)
        b.goto("/", "#runs-grid .ag-row")
        yield b
        chromium.close()


def _keys(root: Path) -> list[str]:
    from hpudash.catalog import scan

    return [e.key for e in scan(root)]


def _runs_text(b: Browser) -> str:
    b.visit("/", "Runs")
    b.page.wait_for_function(
        "() => { const g = document.querySelector('#runs-grid');"
        " return g !== null && !g.innerText.includes('pending'); }"
    )
    return b.text("#runs-grid")


def _device_kind(root: Path, key: str) -> str:
    if key.startswith("real/"):
        return "cpu" if "cpu" in key else "gpu"
    if key.startswith(("samples/cpu", "samples/cpu_torch")):
        return "cpu"
    return "hpu"


# --- every page of every run ---------------------------------------------------------------------


def test_runs_page_lists_every_run_in_words(browser: Browser, root: Path) -> None:
    text = _runs_text(browser)
    keys = _keys(root)
    for key in keys:
        assert key in text, key
    assert "incomplete" not in text
    assert browser.page.locator("#runs-count").inner_text().startswith(f"{len(keys)} runs")
    # a hostile file or directory name is a row like any other, as text
    assert "onerror" in text and browser.page.locator("#runs-grid img").count() == 0
    headers = browser.page.locator("#runs-grid .ag-header-cell-text").all_inner_texts()
    assert "Steps per rank" in headers and not [h for h in headers if "_" in h]
    if (root / NCCL).is_dir():  # two rank files in one directory: one run with two ranks
        row = next(r for r in _grid_rows(browser, "#runs-grid") if r["Run"] == NCCL)
        assert row["Kind"] == "rank files" and row["Ranks"] == "2"
    assert browser.dialogs == []


@dataclass(frozen=True)
class Tour:
    """What every page of every sample and real trace showed: text and grid headers."""

    texts: dict[tuple[str, str], str]
    errors: dict[tuple[str, str], list[str]]
    headers: dict[tuple[str, str], list[str]]


@pytest.fixture(scope="module")
def tour(browser: Browser, root: Path) -> Tour:
    """Every page of every sample and real trace, visited once (the hostile traces have
    their own test)."""
    texts: dict[tuple[str, str], str] = {}
    errors: dict[tuple[str, str], list[str]] = {}
    headers: dict[tuple[str, str], list[str]] = {}
    keys = [k for k in _keys(root) if k.startswith(("samples/", "real/"))] or [RUN2]
    for key in keys:
        for name in PAGES:
            browser.visit(f"/{name}?run={quote(key)}", f"{name.capitalize()}: {key}")
            texts[(key, name)] = browser.text()
            errors[(key, name)] = browser.page.locator(".msg-error").all_inner_texts()
            headers[(key, name)] = browser.page.locator(".ag-header-cell-text").all_inner_texts()
    browser.visit(f"/compare?run={quote(RUN2)}&b={quote(LONE)}", "Compare runs")
    errors[(RUN2, "compare")] = browser.page.locator(".msg-error").all_inner_texts()
    headers[(RUN2, "compare")] = browser.page.locator(".ag-header-cell-text").all_inner_texts()
    texts[(RUN2, "compare")] = browser.text()
    browser.page.screenshot(path=str(ARTIFACTS / "compare.png"), full_page=True)
    return Tour(texts, errors, headers)


def _around(text: str, found: re.Match[str]) -> str:
    return repr(text[max(0, found.start() - 80) : found.end() + 60])


def test_every_page_of_every_run_reads_well(tour: Tour, browser: Browser, server: Server) -> None:
    problems = [f"{name} of {key}: error {e}" for (key, name), e in tour.errors.items() if e]
    for (key, name), text in tour.texts.items():
        for label, pattern in (("epoch ns", EPOCH_NS), ("raw dict", RAW_DICT), ("NaN/None", NAN)):
            if found := pattern.search(text):
                problems.append(f"{name} of {key}: {label} {_around(text, found)}")
    for (key, name), headers in tour.headers.items():
        if bad := [h for h in headers if "_" in h]:
            problems.append(f"{name} of {key}: raw column names {bad}")
    assert problems == [], "\n".join(problems)
    assert browser.console == [], browser.console
    assert browser.dialogs == [], browser.dialogs
    assert server.problems() == [], server.problems()


def test_advice_fits_the_device(tour: Tour, root: Path) -> None:
    """No Gaudi advice (autocast to "hpu", mark_step, HPU graphs) on CUDA, ROCm or CPU
    traces; no CUDA advice on a Gaudi trace; on every page."""
    problems = []
    for (key, name), text in tour.texts.items():
        kind = _device_kind(root, key)
        if kind != "hpu" and (found := HPU_ADVICE.search(text)):
            problems.append(
                f"{name} of {key}: Gaudi advice on a {kind} trace: {_around(text, found)}"
            )
        if kind == "hpu" and (found := CUDA_ADVICE.search(text)):
            problems.append(
                f"{name} of {key}: CUDA advice on a Gaudi trace: {_around(text, found)}"
            )
    assert problems == [], "\n".join(problems)


# --- the same figures everywhere ------------------------------------------------------------------


def _analyze_json(path: Path) -> dict[str, Any]:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from hpuprof.cli.main import run; run()",
            "analyze",
            str(path),
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(done.stdout))


def _grid_rows(b: Browser, selector: str) -> list[dict[str, str]]:
    """The rows a grid shows, header -> cell text (AG Grid may draw pinned columns apart)."""
    return list(
        b.page.evaluate(
            """sel => { const g = document.querySelector(sel); const heads = {};
        for (const h of g.querySelectorAll('.ag-header-cell')) heads[h.getAttribute('col-id')] = h.innerText.trim();
        const rows = {};
        for (const c of g.querySelectorAll('.ag-row .ag-cell')) {
            const r = c.closest('.ag-row').getAttribute('row-index'); (rows[r] = rows[r] || {})[heads[c.getAttribute('col-id')]] = c.innerText.trim(); }
        return Object.keys(rows).sort((a, b) => a - b).map(k => rows[k]); }""",
            selector,
        )
    )


def test_figures_equal_analyze_json(browser: Browser, root: Path) -> None:
    """Runs, Overview and Ops show what `hpuprof analyze --format json` says, to the digit
    their units show."""
    from hpudash.pages.common import key_columns

    from hpuprof.render.tables import KEY_FIGURES, fmt_column

    runs = [k for k in (RUN2, "samples/emulated_two_ranks", NCCL, CUDA) if (root / k).exists()]
    # the paged grid serves the rows of the server's last rescan, which fills a run's figures
    # (its event count with them; other cells may rightly stay empty): read it again (bounded)
    # until every checked run is listed with its figures
    deadline = time.monotonic() + 120
    while True:
        _runs_text(browser)
        listed = {r.get("Run", ""): r for r in _grid_rows(browser, "#runs-grid")}
        filled = all(listed.get(k, {}).get("Events") for k in runs)
        if filled or time.monotonic() > deadline:
            break
        time.sleep(2)
    rows = {r["Run"]: r for r in _grid_rows(browser, "#runs-grid")}
    header = {c.key: c.header for c in KEY_FIGURES}
    grid_header = dict(key_columns())  # the Runs grid's: counts over ranks say "total"
    for key in runs:
        report = _analyze_json(root / key)
        figs = report["meta"]["key_figures"]
        row = rows[key]
        # Runs page: the report's key figures (ms to 3 decimals)
        step = figs["step_time_ns"]
        assert step == report["ranks"]["mean_step_ns"], key
        step_header = header["step_time_ns"][:-1] + ", ms)"
        assert grid_header["step_time_ns"] == step_header
        # a figure the trace cannot give shows why, as the Overview does (else it is empty)
        why = figs.get("not_measurable") or {}
        empty_step = why.get("step_time_ns", "")
        assert row[step_header] == (empty_step if step is None else f"{round(step / 1e6, 3):g}"), (
            key
        )
        steps = report["ranks"]["steps_per_rank"]
        empty_steps = why.get("steps_per_rank", "")
        assert row[header["steps_per_rank"]] == (empty_steps if steps is None else str(steps)), key
        assert grid_header["compilations"] == header["compilations"] + " (total over ranks)"
        assert row[grid_header["compilations"]] == (
            "" if figs["compilations"] is None else str(figs["compilations"])
        ), key
        assert row[grid_header["fallbacks"]] == str(report["fallback"]["total"]), key
        assert row["Events"] == str(report["meta"]["events"]) and row["Ranks"] == str(
            len(report["meta"]["ranks"])
        ), key
        # Overview: the same figures as the reports print them
        browser.visit(f"/overview?run={quote(key)}", f"Overview: {key}")
        kpis = browser.text("#overview-kpis")
        for c in KEY_FIGURES:
            value = figs.get(c.key)
            if (
                value not in (None, "", [], ())
                and c.key != "lazy_port_estimate"
                and not isinstance(value, list)
            ):
                assert fmt_column(c, value) in kpis, (key, c.key, kpis)
        # Ops: every op the grid shows is the report's, same calls and times
        browser.visit(f"/ops?run={quote(key)}", f"Ops: {key}")
        shown = {r["Name"]: r for r in _grid_rows(browser, "#ops-grid")}
        expected = {o["name"]: o for o in report["ops"]["ops"]}
        assert shown and set(shown) <= set(expected), key
        for name, r in shown.items():
            op = expected[name]
            assert r["Calls"] == str(op["calls"]), (key, name)
            for col, field_ in (
                ("Self time (ms)", "self_ns"),
                ("Device total time (ms)", "device_total_ns"),
            ):
                assert float(r[col] or 0) == pytest.approx(op[field_] / 1e6, rel=5e-4, abs=5e-4), (
                    key,
                    name,
                    col,
                )


def test_kernel_view_finds_nccl_kernels(browser: Browser, root: Path) -> None:
    """Ops' search filters the kernel view too: "nccl" finds the NCCL pair's NCCL kernels."""
    if not (root / NCCL).is_dir():
        pytest.skip("the NCCL pair is not in this checkout")
    b = browser
    b.visit(f"/ops?run={quote(NCCL)}", f"Ops: {NCCL}")
    b.page.fill("#ops-search", "nccl")
    b.page.keyboard.press("Enter")
    b.page.wait_for_function(
        "() => { const rows = {}; for (const r of document.querySelectorAll('#ops-kernels .ag-row'))"
        " rows[r.getAttribute('row-index')] = (rows[r.getAttribute('row-index')] || '') + r.innerText;"
        " const t = Object.values(rows); return t.length > 0 && t.every(x => /nccl/i.test(x)); }"
    )
    names = [r["Name"] for r in _grid_rows(b, "#ops-kernels")]
    assert names and all("nccl" in n.lower() for n in names), names
    assert b.console == [] and b.dialogs == []


# --- the timeline ----------------------------------------------------------------------------------


def _lane_pixels(b: Browser, whole_lane: bool = False) -> dict[str, int]:
    """Drawn (non-background) pixels in each lane of the rendered timeline, read from a
    screenshot of the plot area decoded in the page's own canvas: in a band of 6 px around the
    lane's centre, or over the lane's whole height (`whole_lane`: a counter's line may lie at
    its lane's top or bottom)."""
    b.page.wait_for_function(
        "() => { const gd = document.querySelector('#timeline-graph .js-plotly-plot'); return gd && gd._fullLayout && gd._fullLayout.yaxis; }"
    )
    b.page.wait_for_timeout(300)  # plotly's heatmap images paint after layout
    area = b.page.locator("#timeline-graph .nsewdrag").bounding_box()
    # the plot may be taller than the window: shoot the whole page, clipped in page coordinates
    sx, sy = b.page.evaluate("() => [window.scrollX, window.scrollY]")
    png = b.page.screenshot(full_page=True, clip={**area, "x": area["x"] + sx, "y": area["y"] + sy})
    lanes = b.page.evaluate(
        """() => { const gd = document.querySelector('#timeline-graph .js-plotly-plot'); const ya = gd._fullLayout.yaxis;
        return gd.layout.yaxis.ticktext.map((t, i) => [t, ya.l2p(i)]); }"""
    )
    half = 3.0
    if whole_lane and len(lanes) > 1:
        half = 0.45 * abs(lanes[1][1] - lanes[0][1])
    counts = b.page.evaluate(
        """async ([b64, lanes, height, half]) => { const img = new Image(); img.src = 'data:image/png;base64,' + b64; await img.decode();
        const c = document.createElement('canvas'); c.width = img.width; c.height = img.height;
        const ctx = c.getContext('2d'); ctx.drawImage(img, 0, 0);
        const out = {}; const scale = img.height / height;
        for (const [label, y] of lanes) { let n = 0;
            const y0 = Math.max(0, Math.round((y - half) * scale)), y1 = Math.min(img.height, Math.round((y + half) * scale));
            const d = ctx.getImageData(0, y0, img.width, Math.max(1, y1 - y0)).data;
            for (let i = 0; i < d.length; i += 4) if (d[i] < 235 || d[i + 1] < 235 || d[i + 2] < 235) n++;
            out[label + '@' + Math.round(y)] = n; }
        return out; }""",
        [base64.b64encode(png).decode(), lanes, area["height"], half],
    )
    return {k: int(v) for k, v in counts.items()}


def _lane_pixels_once_drawn(b: Browser, label: str, least: int = 4) -> dict[str, int]:
    """`_lane_pixels` over whole lanes, read again (bounded, 20 s) until the lane labelled
    `label` has `least` drawn pixels: on a loaded machine a trace may paint after the others
    (the last pixels read are returned either way, for the caller's assertion)."""
    deadline = time.monotonic() + 20
    while True:
        pixels = _lane_pixels(b, whole_lane=True)
        drawn = [v for k, v in pixels.items() if k.startswith(label + "@")]
        if (drawn and drawn[0] >= least) or time.monotonic() > deadline:
            return pixels
        b.page.wait_for_timeout(500)


GAUDI_LANE, GPU_LANE = r"^(MME|TPC|DMA) \d", r"^stream \d+"


@pytest.mark.parametrize(
    "key, device_lane",
    [
        ("samples/emulated_lazy", GAUDI_LANE),
        (NCCL, GPU_LANE),
        ("samples/emulated_two_ranks", GAUDI_LANE),
        (AMD, GPU_LANE),
    ],
)
def test_device_rows_are_drawn_at_full_zoom_out(
    browser: Browser, root: Path, key: str, device_lane: str
) -> None:
    if not (root / key).exists():
        pytest.skip(f"{key} is not in this checkout")
    browser.visit(f"/timeline?run={quote(key)}", f"Timeline: {key}")
    pixels = _lane_pixels(browser)
    device = {k: v for k, v in pixels.items() if re.match(device_lane, k)}
    browser.page.screenshot(
        path=str(ARTIFACTS / f"timeline-{key.replace('/', '_')}.png"), full_page=True
    )
    assert device, pixels
    blank = [k for k, v in device.items() if v < 4]
    assert blank == [], f"device rows with nothing drawn: {blank} ({pixels})"
    # zoomed in around the device activity nearest the middle, down to a thousandth of the
    # trace: every lane with activity in the window (bars or busy cells in the figure's data)
    # has drawn pixels
    seen = browser.page.evaluate(LANES_SEEN)
    lo, hi = seen["range"]
    labels = browser.page.evaluate(
        "() => document.querySelector('#timeline-graph .js-plotly-plot').layout.yaxis.ticktext"
    )
    busy = [x for i, xs in enumerate(seen["busy"]) if re.match(device_lane, labels[i]) for x in xs]
    mid = min(busy, key=lambda x: abs(x - (lo + hi) / 2))
    device_shown = 0
    for part in (10, 100, 1000):
        a = max(lo, mid - (hi - lo) / part / 2)
        _zoom(browser, a, a + (hi - lo) / part)
        blank, seen = _blank_active_lanes(browser)
        if blank:
            browser.page.screenshot(
                path=str(ARTIFACTS / f"blank-{key.replace('/', '_')}-{part}.png"), full_page=True
            )
        assert blank == [], f"1/{part} of {key}: lanes with activity drawn blank: {blank}"
        labels = browser.page.evaluate(
            "() => document.querySelector('#timeline-graph .js-plotly-plot').layout.yaxis.ticktext"
        )
        device_shown += sum(
            1 for i, on in enumerate(seen["active"]) if on and re.match(device_lane, labels[i])
        )
    assert device_shown, f"{key}: no device activity in any zoomed window"


LANES_SEEN = """() => { const gd = document.querySelector('#timeline-graph .js-plotly-plot');
    const n = gd.layout.yaxis.ticktext.length; const active = new Array(n).fill(false);
    const bars = new Array(n).fill(null).map(() => []); const busy = new Array(n).fill(null).map(() => []);
    for (const t of gd.data) {
        if (t.type === 'bar') t.y.forEach((y, i) => { active[y] = true; bars[y].push([t.base[i], t.x[i]]);
            busy[y].push(t.base[i] + t.x[i] / 2); });
        if (t.type === 'heatmap') t.y.forEach((y, i) => t.z[i].forEach((v, j) => {
            if (v !== null && v > 0) { active[y] = true; busy[y].push(t.x[j]); } }));
    }
    const r = gd._fullLayout.xaxis.range; return {active, bars, busy, range: r}; }"""
"""Per lane of the drawn figure: whether its data holds activity in the window (a bar, or a
busy cell of the density), the bars (start, width in ms), the times of its activity (bar
middles, busy cells; ms) and the x range shown."""


def _blank_active_lanes(b: Browser) -> tuple[list[str], dict[str, Any]]:
    """Lanes whose figure data holds activity in the window but whose pixels in a screenshot
    of the plot are all background."""
    pixels = _lane_pixels(b)
    seen = b.page.evaluate(LANES_SEEN)
    blank = [
        lane for (lane, n), on in zip(pixels.items(), seen["active"], strict=True) if on and n < 4
    ]
    return blank, seen


TIMELINE_PLOT = "document.querySelector('#timeline-graph .js-plotly-plot')"


def _wait_graph_listens(b: Browser) -> None:
    """Wait until dcc.Graph has bound its relayout handler: a zoom made before that (by a drag,
    a key or Plotly.relayout) moves the view but never reaches the server."""
    b.page.wait_for_function(
        f"() => {{ const gd = {TIMELINE_PLOT}; return !!(gd && gd._ev && gd._ev._events"
        " && gd._ev._events.plotly_relayout && gd._redrawTimer !== undefined"
        " && gd._resolveResize === undefined); }"
    )


def _zoom(b: Browser, lo_ms: float, hi_ms: float) -> str:
    """Zoom as a drag does once dcc.Graph listens; returns the status line after the answer,
    once the answer's figure is drawn (or 10 s have passed: an answer may keep the figure)."""
    _wait_graph_listens(b)
    before = b.text("#timeline-status")
    b.page.evaluate(f"() => {{ window.__figureBefore = {TIMELINE_PLOT}.data; }}")
    b.page.evaluate(
        f"([a, c]) => Plotly.relayout({TIMELINE_PLOT}, {{'xaxis.range[0]': a, 'xaxis.range[1]': c}})",
        [lo_ms, hi_ms],
    )
    b.page.wait_for_function(
        "(t) => document.querySelector('#timeline-status').innerText !== t", arg=before
    )
    # the status shows as the answer lands; dcc.Graph draws the answer's figure after it (a
    # clean-clone CI run read the figure before: no slice on the zoomed window's nested rows)
    with contextlib.suppress(PlaywrightTimeout):
        b.page.wait_for_function(
            f"() => {TIMELINE_PLOT}.data !== window.__figureBefore", timeout=10_000
        )
    b.page.wait_for_function(SETTLED)
    return b.text("#timeline-status")


def _press(b: Browser, key: str) -> str:
    """Press a timeline key once dcc.Graph listens; returns the status line after the answer."""
    _wait_graph_listens(b)
    before = b.text("#timeline-status")
    b.page.locator("#timeline-status").click()  # focus on the page, not an input
    b.page.keyboard.press(key)
    b.page.wait_for_function(
        "(t) => document.querySelector('#timeline-status').innerText !== t", arg=before
    )
    b.page.wait_for_function(SETTLED)
    return b.text("#timeline-status")


def test_timeline_zoom_url_keys_selection_and_details(browser: Browser) -> None:
    b = browser
    b.goto(f"/timeline?run={quote(RUN2)}", "#timeline-graph .main-svg")
    status = _zoom(b, 1.0, 1.4)
    assert "every slice" in status and "400.0 us" in status
    assert "t0=1.000000" in b.page.url and "t1=1.400000" in b.page.url
    ticks = b.page.locator("#timeline-graph .xtick text").all_text_contents()
    assert ticks and all(t.endswith((" us", " ms", " s")) for t in ticks), ticks
    assert b.page.locator("#timeline-graph .bars path").count() > 0
    # the zoom is in the URL: opening it shows the same window
    url = b.page.url
    b.page.goto(url)
    b.page.wait_for_selector("#timeline-graph .main-svg")
    b.page.wait_for_function(SETTLED)
    assert "400.0 us" in b.text("#timeline-status")
    # W zooms in, S out, A / D pan
    zoomed_in = _press(b, "w")
    assert "240.0 us" in zoomed_in
    panned = _press(b, "d")
    assert "240.0 us" in panned and panned != zoomed_in
    assert "400.0 us" not in _press(b, "s")
    _zoom(b, 1.0, 1.4)
    # launch -> device-op arrows when zoomed in
    assert b.page.evaluate(
        "() => document.querySelector('#timeline-graph .js-plotly-plot').data.some(t => t.name === 'launch → device op')"
    )
    # a real click on the widest slice: its details, as a table, without placeholders. Under
    # load plotly may still be redrawing the zoomed figure when the slice is measured: the click
    # then lands beside it, so it is measured and clicked again (at most 3 times)
    for attempt in range(3):
        b.page.wait_for_function(SETTLED)
        box = b.page.evaluate(WIDEST_BAR)
        assert box is not None
        b.page.mouse.move(box["x"], box["y"])
        b.page.mouse.click(box["x"], box["y"])
        try:
            b.page.wait_for_selector("#timeline-details table", timeout=20_000)
            break
        except PlaywrightTimeout:
            if attempt == 2:
                raise
    details = b.text("#timeline-details")
    assert "after the first event" in details and "Duration" in details
    assert not re.search(r"\t-1\b|\t\"\"|\t$", details, re.M) and not EPOCH_NS.search(details)
    # box select: totals per name over the range
    b.page.click("#timeline-graph .modebar-btn[data-val='select']")
    area = b.page.locator("#timeline-graph .nsewdrag").bounding_box()
    b.page.mouse.move(area["x"] + area["width"] * 0.2, area["y"] + 4)
    b.page.mouse.down()
    b.page.mouse.move(area["x"] + area["width"] * 0.7, area["y"] + area["height"] - 4, steps=8)
    b.page.mouse.up()
    b.page.wait_for_selector("#timeline-range .ag-row")
    totals = b.text("#timeline-range")
    assert "Wall time in range (ms)" in totals and "Occurrences" in totals and "aten::" in totals
    b.page.screenshot(path=str(ARTIFACTS / "timeline-selected.png"), full_page=True)
    # collapsing a group folds its rows into one; the rank filter shows one rank's groups
    lanes_before = len(
        b.page.evaluate(
            "() => document.querySelector('#timeline-graph .js-plotly-plot').layout.yaxis.ticktext"
        )
    )
    before = b.text("#timeline-status")
    b.page.locator("#timeline-groups input").first.uncheck()
    b.page.wait_for_function(
        "(n) => document.querySelector('#timeline-graph .js-plotly-plot').layout.yaxis.ticktext.length < n",
        arg=lanes_before,
    )
    labels = b.page.evaluate(
        "() => document.querySelector('#timeline-graph .js-plotly-plot').layout.yaxis.ticktext"
    )
    assert labels[0].startswith("▸ rank 0") and before
    assert b.console == [] and b.dialogs == []


TICKS = f"() => {TIMELINE_PLOT}.layout.yaxis.ticktext"


def test_memory_is_a_drawn_step_line(browser: Browser, root: Path) -> None:
    """An emulated run's timeline has its device's memory track, drawn (pixels on its lane),
    as a step line whose hover reads in bytes units."""
    key = "samples/emulated_lazy"
    if not (root / key).exists():
        pytest.skip(f"{key} is not in this checkout")
    b = browser
    b.visit(f"/timeline?run={quote(key)}", f"Timeline: {key}")
    label = "memory · HPU 0 (allocated, modeled)"
    assert label in b.page.evaluate(TICKS)
    pixels = _lane_pixels_once_drawn(b, label)
    assert next(v for k, v in pixels.items() if k.startswith(label + "@")) >= 4, pixels
    line = b.page.evaluate(
        f"() => {TIMELINE_PLOT}.data.filter(t => t.name === 'counters').map(t => [t.line.shape, t.hovertext])"
    )
    memory = [hover for shape, hover in line if shape == "hv" and hover[0].startswith(label)]
    assert memory and all(re.search(r": \d+\.\d\d [KMG]iB$|: \d+ B$", h) for h in memory[0])


PINNED_LABELS = (
    "() => [...document.querySelectorAll('#timeline-pin-value .dash-dropdown-value-item')]"
    ".map(e => e.innerText)"
)
"""The tracks the "Pinned tracks" picker shows as chosen (its own value, before any callback)."""


def _toggle_pin(b: Browser, label: str) -> None:
    """Open the "Pinned tracks" picker, click the track `label` (pin or unpin), close it; once
    the picker shows the toggled value. A click lost while the picker's list was still being
    placed (a clean run on a loaded machine unpinned nothing in 90 s) is clicked again; the
    picker's value is read before each try, so a click is never made twice."""
    want = label not in b.page.evaluate(PINNED_LABELS)
    for attempt in range(3):
        b.page.click("#timeline-pin")
        b.page.locator(".dash-dropdown-option", has_text=label).first.click()
        b.page.keyboard.press("Escape")
        try:
            b.page.wait_for_function(
                f"([l, w]) => ({PINNED_LABELS})().includes(l) === w",
                arg=[label, want],
                timeout=10_000,
            )
            return
        except PlaywrightTimeout:
            if attempt == 2:
                raise


def test_a_pinned_track_stays_on_top(browser: Browser) -> None:
    """Pin rank 1's MME stream: it is the top lane of the plot (its name as drawn, with "pinned:" and
    its group) and its slices are drawn there; it stays on top when every group is collapsed
    and after a zoom; unpinned, the top lane is rank 0's first group again."""
    b = browser
    b.goto(f"/timeline?run={quote(RUN2)}", "#timeline-graph .main-svg")
    _wait_graph_listens(b)
    first = b.page.evaluate(TICKS)[0]
    assert first.startswith("▾ rank 0")
    track = "rank 1 · /device:HPU:0 · MME 0"
    _toggle_pin(b, track)
    b.page.wait_for_function(
        f"() => {TIMELINE_PLOT}.layout.yaxis.ticktext[0].startsWith('pinned: ')"
    )
    b.page.wait_for_function(SETTLED)
    ticks = b.page.evaluate(TICKS)
    assert ticks[0] == f"pinned: {track}"
    assert ticks.count("MME 0") == 1  # rank 0's; rank 1's is not drawn twice
    # what the user sees: the label is the top tick of the drawn axis, and lane 0 has pixels
    drawn = b.page.locator("#timeline-graph .ytick text").all_text_contents()
    tops = b.page.evaluate(
        "() => [...document.querySelectorAll('#timeline-graph .ytick text')].map(t => [t.textContent, t.getBoundingClientRect().top])"
    )
    assert min(tops, key=lambda t: t[1])[0] == f"pinned: {track}", drawn
    pixels = _lane_pixels(b)
    assert next(v for k, v in pixels.items() if k.startswith("pinned: ")) >= 4, pixels
    # collapse every group and zoom in: the pinned stream is still the top lane, with bars
    for box in b.page.locator("#timeline-groups input").all():
        if box.is_checked():
            box.uncheck()
            b.page.wait_for_function(SETTLED)
    b.page.wait_for_function(
        f"() => {TIMELINE_PLOT}.layout.yaxis.ticktext.slice(1).every(t => t.startsWith('▸'))"
    )
    assert b.page.evaluate(TICKS)[0] == f"pinned: {track}"
    status = _zoom(b, 1.0, 1.4)
    assert "every slice" in status
    assert b.page.evaluate(TICKS)[0] == f"pinned: {track}"
    assert b.page.evaluate(
        f"() => {TIMELINE_PLOT}.data.some(t => t.type === 'bar' && t.y.some(y => y === 0))"
    ), "no bar drawn on the pinned lane"
    # unpinned: the groups only, collapsed as they were
    _toggle_pin(b, track)
    b.page.wait_for_function(
        f"() => !{TIMELINE_PLOT}.layout.yaxis.ticktext[0].startsWith('pinned: ')"
    )
    ticks = b.page.evaluate(TICKS)
    assert ticks[0].startswith("▸ rank 0") and all(t.startswith("▸") for t in ticks)
    # a clicked slice offers to pin the track it is on: expand rank 0's host, click its
    # widest slice, pin from the button; the button then offers to unpin it
    b.page.locator("#timeline-groups input").first.check()
    b.page.wait_for_function(f"() => {TIMELINE_PLOT}.layout.yaxis.ticktext[0].startsWith('▾')")
    b.page.wait_for_function(SETTLED)
    for attempt in range(3):
        box = b.page.evaluate(WIDEST_BAR)
        assert box is not None
        b.page.mouse.click(box["x"], box["y"])
        try:
            b.page.wait_for_selector("#timeline-pin-this:visible", timeout=20_000)
            break
        except PlaywrightTimeout:
            if attempt == 2:
                raise
    offer = b.text("#timeline-pin-this")
    assert offer.startswith("Pin its track (rank 0 · ")
    b.page.click("#timeline-pin-this")
    b.page.wait_for_function(
        f"() => {TIMELINE_PLOT}.layout.yaxis.ticktext[0].startsWith('pinned: ')"
    )
    assert b.page.evaluate(TICKS)[0] == "pinned: " + offer[len("Pin its track (") : -1]
    b.page.wait_for_function(
        "() => document.querySelector('#timeline-pin-this').innerText.startsWith('Unpin')"
    )
    assert b.console == [] and b.dialogs == []


WIDEST_BAR = """() => { const area = document.querySelector('#timeline-graph .nsewdrag').getBoundingClientRect(); let best = null;
    for (const q of document.querySelectorAll('#timeline-graph .bars path')) { const r = q.getBoundingClientRect();
        const inside = r.left >= area.left && r.right <= area.right && r.top >= area.top && r.bottom <= area.bottom;
        if (inside && r.width > 4 && r.height > 4 && (!best || r.width > best.w)) best = {x: r.left + r.width / 2, y: r.top + r.height / 2, w: r.width}; }
    return best; }"""
"""The middle of the widest slice drawn whole inside the plot (None: none)."""


@pytest.mark.parametrize("key", ["samples/emulated_lazy", RUN2])
def test_one_row_per_nesting_depth(browser: Browser, root: Path, key: str) -> None:
    """Zoomed until every slice is drawn: nested slices sit on rows of their own (a track's
    deeper rows carry no label), and no bar in a row covers another beyond a pixel."""
    if not (root / key).exists():
        pytest.skip(f"{key} is not in this checkout")
    b = browser
    # a fresh page: moving inside the app to the run's timeline keeps the page an earlier test
    # left on it (its pins, its collapsed groups: the page's identity ignores the view)
    b.goto(f"/timeline?run={quote(key)}", "#timeline-graph .main-svg")
    lo, hi = b.page.evaluate(LANES_SEEN)["range"]
    status = _zoom(b, lo + (hi - lo) * 0.3, lo + (hi - lo) * 0.32)
    assert "every slice" in status, status
    seen = b.page.evaluate(LANES_SEEN)
    labels = b.page.evaluate(
        "() => document.querySelector('#timeline-graph .js-plotly-plot').layout.yaxis.ticktext"
    )
    pixel = (seen["range"][1] - seen["range"][0]) / 1000
    covered = []
    for y, bars in enumerate(seen["bars"]):
        bars.sort()
        for (a0, w0), (a1, _) in itertools.pairwise(bars):
            if a1 < a0 + w0 - pixel:
                covered.append((labels[y] or f"row {y}", a0, w0, a1))
    assert covered == [], f"bars drawn over others in one row: {covered[:5]}"
    nested = [y for y, bars in enumerate(seen["bars"]) if bars and labels[y] == ""]
    assert nested, f"no slice on a nested row of {key}: {labels}"
    assert b.console == [] and b.dialogs == []


def test_open_in_perfetto_posts_the_trace(browser: Browser, root: Path) -> None:
    """Up to the message: ui.perfetto.dev is answered by a stand-in that speaks its documented
    protocol (PONG to PING, then it receives {perfetto: {buffer, title, fileName}})."""
    stand_in = """<html><body><script>
    window.got = null;
    window.addEventListener('message', (e) => {
      if (e.data === 'PING') { window.opener.postMessage('PONG', '*'); return; }
      if (e.data && e.data.perfetto) window.got = {bytes: e.data.perfetto.buffer.byteLength,
          title: e.data.perfetto.title, fileName: e.data.perfetto.fileName, from: e.origin,
          isBuffer: e.data.perfetto.buffer instanceof ArrayBuffer};
    });</script></body></html>"""
    b = browser
    b.context.route(
        "https://ui.perfetto.dev/**",
        lambda route: route.fulfill(status=200, content_type="text/html", body=stand_in),
    )
    try:
        b.visit(f"/timeline?run={quote(RUN2)}", f"Timeline: {RUN2}")
        with b.context.expect_page() as popup_info:
            b.page.click("#timeline-perfetto")
        popup = popup_info.value
        popup.wait_for_function("() => window.got !== null")
        got = popup.evaluate("() => window.got")
        trace = root / RUN2 / "traces" / "train-rank0.pt.trace.json"
        assert got == {
            "bytes": trace.stat().st_size,
            "title": f"{RUN2}: {trace.name}",
            "fileName": trace.name,
            "from": b.base,
            "isBuffer": True,
        }
        b.page.wait_for_function(
            "() => document.querySelector('#perfetto-status').innerText.startsWith('Sent')"
        )
        popup.close()
    finally:
        b.context.unroute("https://ui.perfetto.dev/**")


# --- hostile input -----------------------------------------------------------------------------


def test_hostile_names_never_run_script(browser: Browser, root: Path) -> None:
    b = browser
    hostile = [k for k in _keys(root) if "onerror" in k or k == LONE]
    assert len(hostile) == 3
    for key in hostile:
        for name in ("overview", "timeline", "ops", "dynamicity"):
            b.visit(f"/{name}?run={quote(key)}", f"{name.capitalize()}: {key}")
    b.visit(f"/ops?run={quote(LONE)}", f"Ops: {LONE}")
    b.page.fill("#ops-search", "evil")
    b.page.keyboard.press("Enter")
    b.page.wait_for_function(
        "() => document.querySelector('#ops-grid').innerText.includes('onerror')"
    )
    assert (
        b.page.locator("#page-content img, #page-content script, #page-content svg[onload]").count()
        == 0
    )
    b.visit(f"/timeline?run={quote(LONE)}", f"Timeline: {LONE}")
    assert "<script>alert(4)</script>" in b.page.evaluate(
        "() => document.querySelector('#timeline-graph').innerText"
    )  # as text
    assert b.dialogs == [], b.dialogs


def test_downloads_and_traversal(server: Server) -> None:
    import urllib.error
    import urllib.request

    base = server.base
    with urllib.request.urlopen(f"{base}/files/{quote(LONE)}") as r:
        assert r.status == 200 and len(r.read()) > 100
    for bad in (
        "../etc/passwd",
        "..%2F..%2Fetc%2Fpasswd",
        f"{RUN2}/run.json",
        "%2Fetc%2Fpasswd",
        "runs/%2E%2E/%2E%2E/etc/passwd",
    ):
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(f"{base}/files/{bad}")
        assert err.value.code == 404
    with urllib.request.urlopen(f"{base}/report.html?run={quote(RUN2)}") as r:
        assert r.status == 200 and b"<html" in r.read().lower()
        assert "default-src 'none'" in r.headers["Content-Security-Policy"]


def test_new_run_appears_without_restart(browser: Browser, root: Path, server: Server) -> None:
    """Last in the module: it adds a run to the served directory."""
    assert "fresh_run" not in _runs_text(browser)
    write_run(root / "runs" / "fresh_run", 900)
    browser.goto("/", "#runs-grid .ag-row")
    # the catalog rescans on its own clock (scan TTL, page interval): wait for the row, bounded
    browser.page.locator("#runs-grid").get_by_text("runs/fresh_run").first.wait_for(timeout=20_000)
    text = _runs_text(browser)
    assert "runs/fresh_run" in text
    browser.visit("/overview?run=runs/fresh_run", "Overview: runs/fresh_run")
    assert browser.page.locator(".msg-error").all_inner_texts() == []
    assert browser.console == [] and server.problems() == []


def test_runs_row_opens_its_overview(browser: Browser) -> None:
    """A click on a Runs row opens that run's Overview (a clientside callback), with its key
    figures and both graphs drawn; plotly was loaded by the Runs page already."""
    b = browser
    b.visit("/", "Runs")
    assert b.page.evaluate("() => !!window.Plotly") or b.page.wait_for_function(
        "() => !!window.Plotly"
    )
    b.page.locator(f"#runs-grid .ag-row[row-id='{RUN2}'] .ag-cell").first.click()
    b.page.wait_for_function(
        "k => { const h = document.querySelector('#page-content h2'); return h && h.innerText === 'Overview: ' + k"
        " && document.querySelectorAll('#page-content .js-plotly-plot .main-svg').length >= 2; }",
        arg=RUN2,
    )
    assert f"run={quote(RUN2, safe='')}" in b.page.url
    assert b.page.locator("#overview-kpis").count() == 1
    assert b.console == [] and b.dialogs == []


FIGURE = "document.querySelector('#timeline-graph .js-plotly-plot')"


def test_timeline_names_search_and_kernel_to_launch(browser: Browser) -> None:
    """Issue 25: names drawn inside slices wide enough; search steps through matches; a
    device op's details lead to its launch."""
    b = browser
    b.visit(f"/timeline?run={quote(RUN2)}", f"Timeline: {RUN2}")
    _zoom(b, 1.0, 1.4)
    labels = b.page.evaluate(
        """() => { const bars = [...document.querySelectorAll('#timeline-graph .bars path')].map(p => p.getBoundingClientRect());
        return [...document.querySelectorAll('#timeline-graph .textpoint text')].filter(t => t.textContent).map(t => {
            const r = t.getBoundingClientRect();
            return {text: t.textContent, inside: bars.some(q => r.left >= q.left - 1 && r.right <= q.right + 1 && r.top >= q.top - 3 && r.bottom <= q.bottom + 3)}; }); }"""
    )
    assert labels and any(x["text"].startswith("aten::") for x in labels), labels[:5]
    assert [x for x in labels if not x["inside"]] == []
    # search: Enter finds the first match from the view's start, ▶ the next; both outlined
    before = b.text("#timeline-status")
    b.page.fill("#timeline-search", "aten::mm")
    b.page.press("#timeline-search", "Enter")
    b.page.wait_for_function(
        "() => document.querySelector('#timeline-search-status').innerText.includes(' of ')"
    )
    first = b.text("#timeline-search-status")
    found = re.match(
        r"(\d+) of [\d,]+ slices named like “aten::mm”: aten::mm \(.* at (.*) ms\)", first
    )
    assert found and 1.0 <= float(found[2]) <= 1.4, first  # the first in the view
    b.page.wait_for_function(
        "(t) => document.querySelector('#timeline-status').innerText !== t", arg=before
    )
    b.page.wait_for_function(SETTLED)
    assert b.page.evaluate(f"() => {FIGURE}.data.some(t => t.name === 'in focus')")
    b.page.click("#timeline-search-next")
    b.page.wait_for_function(
        "(n) => document.querySelector('#timeline-search-status').innerText.startsWith(n + ' of')",
        arg=int(found[1]) + 1,
    )
    # a device op's details: its launch, and a button that shows it (the figure of the next
    # match is drawn by its own callback, after the status: waited for, bounded, not read once;
    # a clean-clone CI run on a loaded machine read the one before and found no device slice)
    b.page.wait_for_function(SETTLED)
    b.page.wait_for_function(
        f"() => {FIGURE}.data.some(d => d.name === 'device slice')", timeout=20_000
    )
    row = b.page.evaluate(
        f"() => {{ const t = {FIGURE}.data.find(d => d.name === 'device slice'); return t ? t.customdata[0][1] : null; }}"
    )
    assert isinstance(row, int)
    b.page.evaluate(
        "r => window.dash_clientside.set_props('timeline-graph', {clickData: {points: [{customdata: ['e', r]}]}})",
        row,
    )
    b.page.wait_for_selector("#timeline-details table")
    details = b.text("#timeline-details")
    assert "Launched by" in details, details
    goto = b.page.locator("#timeline-goto")
    assert goto.inner_text() == "Go to its launch" and goto.is_visible()
    before = b.text("#timeline-status")
    goto.click()
    b.page.wait_for_function(
        "() => document.querySelector('#timeline-search-status').innerText.startsWith('Shown: ')"
    )
    b.page.wait_for_function(SETTLED)
    focus = b.page.evaluate(
        f"() => {{ const t = {FIGURE}.data.find(d => d.name === 'in focus'); return t ? t.y.length : 0; }}"
    )
    assert focus == 1
    launch = b.text("#timeline-search-status").removeprefix("Shown: ").split(" (")[0]
    assert launch in details
    assert b.console == [] and b.dialogs == []
