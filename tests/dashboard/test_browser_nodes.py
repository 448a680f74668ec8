"""The Nodes page and a hardware trace's timeline in headless Chromium, read as a user reads them.

One server over the shared Gaudi 3 hardware-profiler CSV with Intel's Analyzed Nodes table
beside it (skipped when ../shared lacks it), an emulated run and a CPU trace from the samples.
Every cell the Nodes grid shows is `hpuprof analyze --report nodes --format json`'s value of the
same file under Intel's header; the timeline draws the engines (and the cache-slice counters)
in the device's group, named as Intel names them; a CPU trace is told why it has no nodes.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.conftest import SAMPLE_TRACES
from tests.dashboard.conftest import CLI, dashboard_process

pytest.importorskip("playwright.sync_api")
pytest.importorskip("dash")

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("dashboard-browser")]

CHROMIUM = Path("/usr/bin/chromium")
GAUDI = Path(__file__).resolve().parents[3] / "shared" / "traces" / "gaudi"
HW_NAME = "gaudi3-debug_hw_prof_accel0_001"
HW = f"gaudi/{HW_NAME}.csv"
EMULATED = "samples/emulated_eager"
CPU = "samples/cpu_torch_profiler/trace.pt.trace.json"
SETTLED = "() => !document.querySelector('._dash-loading, [data-dash-is-loading=\"true\"]')"
PUSH_STATE = "p => { window.history.pushState({}, '', p); window.dispatchEvent(new PopStateEvent('popstate')); }"
NAN = re.compile(r"\bNaN\b|\bnan\b|\bNone\b|\bundefined\b")


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("dash-nodes")
    if (GAUDI / f"{HW_NAME}.csv").is_file():
        (root / "gaudi").mkdir()
        for name in (f"{HW_NAME}.csv", f"{HW_NAME}_analyzed_nodes.csv"):
            shutil.copy(GAUDI / name, root / "gaudi" / name)
    for sample in ("emulated_eager", "cpu_torch_profiler"):
        shutil.copytree(
            SAMPLE_TRACES / sample, root / "samples" / sample, ignore=shutil.ignore_patterns(".*")
        )
    return root


@pytest.fixture(scope="module")
def page(root: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.skip("/usr/bin/chromium is not installed (make test installs it)")
    from playwright.sync_api import sync_playwright

    work = tmp_path_factory.mktemp("dash-nodes-server")
    with dashboard_process(root, work, threads=2) as (port, log), sync_playwright() as pw:
        chromium = pw.chromium.launch(
            executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        # wide enough that AG Grid draws every column of Intel's table (no column virtualisation)
        context = chromium.new_context(viewport={"width": 3200, "height": 1100})
        p = context.new_page()
        p.errors = []
        p.on("console", lambda m: p.errors.append(m.text) if m.type == "error" else None)
        p.on("pageerror", lambda e: p.errors.append(str(e)))
        p.set_default_timeout(120_000)
        p.goto(f"http://127.0.0.1:{port}/nodes?run={quote(CPU)}")
        p.wait_for_selector("#page-content h2")
        yield p
        chromium.close()
        text = log.read_text(errors="replace")
        assert not re.search(r"Traceback|ERROR", text), text[-3000:]


def _visit(p: Any, path: str, title: str) -> None:
    p.evaluate(PUSH_STATE, path)
    p.wait_for_function(
        "t => { const h = document.querySelector('#page-content h2'); return h && h.innerText === t; }",
        arg=title,
    )
    p.wait_for_function(SETTLED)


def _nodes_json(path: Path) -> dict[str, Any]:
    cmd = [*CLI, "analyze", str(path), "--report", "nodes", "--format", "json"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout)["nodes"])


def _grid(p: Any, selector: str) -> tuple[dict[str, str], dict[int, dict[str, str]]]:
    """(col-id -> header, row-index -> col-id -> cell text) as drawn (pinned parts joined)."""
    heads, rows = p.evaluate(
        """sel => { const g = document.querySelector(sel); const heads = {};
        for (const h of g.querySelectorAll('.ag-header-cell')) heads[h.getAttribute('col-id')] = h.innerText.trim();
        const rows = {};
        for (const c of g.querySelectorAll('.ag-row .ag-cell')) {
            const r = c.closest('.ag-row').getAttribute('row-index');
            (rows[r] = rows[r] || {})[c.getAttribute('col-id')] = c.innerText.trim(); }
        return [heads, rows]; }""",
        selector,
    )
    return dict(heads), {int(k): dict(v) for k, v in rows.items()}


def _assert_cells_are_the_reports(
    heads: dict[str, str], rows: dict[int, dict[str, str]], expected: list[dict[str, Any]]
) -> None:
    assert rows, "the grid drew no rows"
    for index, cells in rows.items():
        row = expected[index]
        assert set(cells) == set(heads), f"row {index} lacks columns"
        for field, text in cells.items():
            value = row[field]
            where = (index, heads[field])
            if value is None:
                assert text == "", where
            elif isinstance(value, str):
                assert text == str(value), where
            else:  # the number itself, as JavaScript writes it (no rounding of ours)
                assert float(text.replace(",", "")) == pytest.approx(value, rel=1e-12), where


def test_nodes_page_of_the_gaudi3_hardware_trace_reads_as_intels_table(
    page: Any, root: Path
) -> None:
    if not (root / HW).is_file():
        pytest.skip(f"{GAUDI} has no {HW_NAME}.csv")
    _visit(page, f"/nodes?run={quote(HW)}", f"Nodes: {HW}")
    page.wait_for_selector("#nodes-grid .ag-row")
    report = _nodes_json(root / HW)
    heads, rows = _grid(page, "#nodes-grid")
    intel = (root / "gaudi" / f"{HW_NAME}_analyzed_nodes.csv").read_text().splitlines()[0]
    intel_headers = set(intel.split(","))
    assert [h for k, h in heads.items() if k != "graph" and h not in intel_headers] == []
    assert {"Duration (us)", "Active (us)", "Num activations", "TPC Parallel Execution (%)"} <= set(heads.values())  # fmt: skip
    assert len(rows) == len(report["nodes"]) == 4
    _assert_cells_are_the_reports(heads, rows, report["nodes"])
    by_name = {cells["node"]: cells for cells in rows.values()}  # Intel's iteration split, read
    assert by_name["g_1_conv_0_tpc_packing iter 2"]["num_activations"] == "32"
    text = page.locator("#page-content").inner_text()
    assert "Intel's analyzed-nodes rows" in text and "MME expected vs actual" in text
    advice = page.locator("#nodes-findings").inner_text()
    assert "MME Lower Precision Ratio" in advice and 'device_type="hpu"' in advice
    assert not NAN.search(page.locator("#nodes-grid").inner_text()) and "CUDA" not in text
    assert page.errors == []


def test_nodes_page_of_an_emulated_run_equals_the_report(page: Any, root: Path) -> None:
    _visit(page, f"/nodes?run={quote(EMULATED)}", f"Nodes: {EMULATED}")
    page.wait_for_selector("#nodes-grid .ag-row")
    report = _nodes_json(root / EMULATED)
    heads, rows = _grid(page, "#nodes-grid")
    _assert_cells_are_the_reports(heads, rows, report["nodes"])
    text = page.locator("#page-content").inner_text()
    assert "modeled" in text and "compare the model with itself" in text
    assert not NAN.search(page.locator("#nodes-grid").inner_text()) and page.errors == []


def test_nodes_page_of_a_cpu_trace_says_why_it_is_absent(page: Any) -> None:
    _visit(page, f"/nodes?run={quote(CPU)}", f"Nodes: {CPU}")
    text = page.locator("#nodes-absent").inner_text()
    assert text.startswith("No Gaudi graph nodes in this trace (device: CPU).")
    assert page.locator("#nodes-grid").count() == 0
    assert "habana" not in page.locator("#page-content").inner_text().lower()


def test_timeline_draws_the_hardware_engines_under_the_device(page: Any, root: Path) -> None:
    if not (root / HW).is_file():
        pytest.skip(f"{GAUDI} has no {HW_NAME}.csv")
    _visit(page, f"/timeline?run={quote(HW)}", f"Timeline: {HW}")
    page.wait_for_function(
        "() => { const gd = document.querySelector('#timeline-graph .js-plotly-plot');"
        " return gd && gd.layout && gd.layout.yaxis && gd.layout.yaxis.ticktext; }"
    )
    lanes = [
        re.sub(r"<[^>]+>", "", t)
        for t in page.evaluate(
            "() => document.querySelector('#timeline-graph .js-plotly-plot').layout.yaxis.ticktext"
        )
    ]
    groups = [t for t in lanes if t.startswith(("▾", "▸"))]
    assert groups == ["▾ /device:HPU:0 (accel0)"]  # engines and counters in one device group
    engines = [t for t in lanes if re.fullmatch(r"\[HD\d\] (MME|TPC \d)", t)]
    assert engines[:8] == [f"[HD{d}] MME" for d in range(8)] and len(engines) == 56
    assert [t for t in lanes if "Cache Slice" in t] == [
        f"Outgoing HBM partial writes ([D{d}] Cache Slice)" for d in range(4)
    ]
    assert page.errors == []
