"""Runs row -> Overview in headless Chromium, for runs already analysed (issue 25: 3.7-5.9 s).

Serves copies of the sample runs with the real `hpuprof dashboard` (its own process), lets
the Runs page analyse every run, then for each run, alternating with the baseline:
- click: a click on the run's row of the Runs grid until the Overview shows its key figures
  and every graph has drawn (what a user waits for);
- baseline: the same Overview reached by an in-app move (history pushState from the Runs
  page, no click), which costs the page callback and the drawing only.
Both are timed in the page (performance.now) from the click event, or the move, to the
Overview's title, key figures and both graphs drawn. The first click after the app opened
is printed apart (it used to load the plotting library). Printed: median and max per run
of both and their ratio. Target: click <= 1 s.

    python bench/bench_runs_to_overview.py [--repeats 3] [--root DIR]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.dashboard.conftest import dashboard_process  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
SETTLED = "() => !document.querySelector('._dash-loading, [data-dash-is-loading=\"true\"]')"
WATCH = """([key, how]) => { window.__overviewTook = new Promise(done => {
    // times in the page itself, from the click (or the move) to the Overview drawn: the
    // h2, the key figures and both graphs
    const out = {start: null, shown: null};
    const drawn = () => {
        const h = document.querySelector('#page-content h2');
        return h && h.innerText === 'Overview: ' + key && document.querySelector('#overview-kpis')
            && document.querySelectorAll('#page-content .js-plotly-plot .main-svg').length >= 2;
    };
    const obs = new MutationObserver(() => {
        if (out.start !== null && drawn()) { out.shown = performance.now(); obs.disconnect(); done(out.shown - out.start); }
    });
    obs.observe(document.body, {childList: true, subtree: true, characterData: true});
    if (how === 'click') {
        document.addEventListener('click', () => { out.start = performance.now(); }, {capture: true, once: true});
    } else {
        out.start = performance.now();
        window.history.pushState({}, '', '/overview?' + new URLSearchParams({run: key}).toString());
        window.dispatchEvent(new PopStateEvent('popstate'));
    }
}); }"""
TOOK = "() => window.__overviewTook"
"""The ms WATCH measured (a promise that resolves when the Overview is drawn)."""
PUSH = "p => { window.history.pushState({}, '', p); window.dispatchEvent(new PopStateEvent('popstate')); }"


def _to_runs(page: Any) -> None:
    page.evaluate(PUSH, "/")
    page.wait_for_selector("#runs-grid .ag-row")
    page.wait_for_function(
        "() => !document.querySelector('#runs-grid').innerText.includes('pending')"
    )
    page.wait_for_function(SETTLED)


def click_row(page: Any, key: str) -> float:
    """Seconds from a click on `key`'s row of the Runs grid to its Overview drawn."""
    _to_runs(page)
    page.evaluate(WATCH, [key, "click"])
    page.locator(f"#runs-grid .ag-row[row-id='{key}'] .ag-cell").first.click()
    return float(page.evaluate(TOOK)) / 1e3


def move(page: Any, key: str) -> float:
    """Seconds from an in-app move to `key`'s Overview (no click) to its Overview drawn."""
    _to_runs(page)
    page.evaluate(WATCH, [key, "move"])
    return float(page.evaluate(TOOK)) / 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--root", type=Path, default=ROOT / "sample_traces")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "runs"
        shutil.copytree(
            args.root,
            root,
            ignore=shutil.ignore_patterns("*.hpuprof-cache", ".*", "workloads", "*.py", "*.md"),
        )
        with dashboard_process(root, Path(tmp) / "work") as (port, _log), sync_playwright() as pw:
            chromium = pw.chromium.launch(
                executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"]
            )
            page = chromium.new_context(viewport={"width": 1600, "height": 1000}).new_page()
            page.set_default_timeout(300_000)
            page.goto(f"http://127.0.0.1:{port}/")
            _to_runs(page)  # every run analysed (the figures are on disk and in memory)
            keys = page.eval_on_selector_all(
                "#runs-grid .ag-row[row-id]", "rows => rows.map(r => r.getAttribute('row-id'))"
            )
            keys = sorted(set(keys))
            print(f"{len(keys)} runs; times in s (median / max of {args.repeats})")
            print(f"{'run':<40} {'click':>13} {'baseline':>13} {'ratio':>6}")
            worst = 0.0
            first = click_row(page, keys[0])
            print(f"first click after the app opened ({keys[0]}): {first:.2f} s")
            for key in keys:
                clicks, bases = [], []
                for _ in range(args.repeats):
                    clicks.append(click_row(page, key))
                    bases.append(move(page, key))
                c, b = statistics.median(clicks), statistics.median(bases)
                worst = max(worst, max(clicks))
                print(
                    f"{key:<40} {c:6.2f} / {max(clicks):4.2f} {b:6.2f} / {max(bases):4.2f} {c / b:6.2f}"
                )
            print(f"slowest click: {worst:.2f} s (target <= 1 s)")
            chromium.close()


if __name__ == "__main__":
    main()
