"""Dashboard speed on a 1 M-event trace, warm cache: Overview data and a timeline zoom callback.

The trace is `bench/gen_synthetic_trace.py OUT --events N` (a Kineto-shaped training trace),
loaded once so its Parquet cache exists. Each figure is printed beside a baseline measured in
the same run:
- Overview, warm (the run's trace and report in the dashboard's store): `render_page` of
  /overview. Baseline: a fresh store (a restarted dashboard) over the same warm Parquet cache:
  load from the cache, analyse, build the page.
- Timeline zoom: the zoom callback's work (`pages.timeline.view`: LOD query, figure, JSON) for
  windows of 10 % and 0.05 % of the trace. Baseline: every slice of the 10 % window sent to plotly
  as bars (figure + JSON), no level of detail.
Targets (issue 6): Overview <= 2 s, zoom <= 300 ms.

    python bench/bench_dashboard.py [--events 1000000] [--trace EXISTING.json]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "dashboards")]


def timed(n: int, fn: Callable[[], Any]) -> float:
    """Median of `n` runs (the single run when n == 1), seconds."""
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def line(label: str, seconds: float, note: str = "") -> None:
    print(f"  {label:<62} {seconds * 1e3:9.1f} ms  {note}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--trace", type=Path, help="an existing trace instead of generating one")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        path = root / "big.pt.trace.json"
        if args.trace:  # served from its own directory, so keep that directory small
            path = args.trace.resolve()
            root = path.parent
        else:
            gen = ROOT / "bench" / "gen_synthetic_trace.py"
            subprocess.run([sys.executable, str(gen), str(path), "--events", str(args.events)], check=True)  # fmt: skip
        return run(root, path)


def run(root: Path, path: Path) -> int:
    import numpy as np
    import plotly.graph_objects as go
    from hpudash import timeline as tl
    from hpudash.app import render_page
    from hpudash.data import DataStore
    from hpudash.figcache import FiguresCache
    from hpudash.pages import timeline as timeline_page

    import hpuprof

    t = time.perf_counter()
    trace = hpuprof.load(path)  # writes the Parquet cache: everything below is "warm cache"
    print(
        f"{path.name}: {len(trace.events):,} events and {len(trace.flows):,} flows in the model, "
        f"first load {time.perf_counter() - t:.1f} s"
    )
    key = path.relative_to(root).as_posix()
    query = f"?run={key}"

    def fresh_store() -> DataStore:
        return DataStore(root, figures_cache=FiguresCache(root, persist=False))

    print("Overview page data (target <= 2000 ms):")
    cold_store = fresh_store()
    cold = timed(1, lambda: render_page(cold_store, "/overview", query))
    store = cold_store
    warm = timed(3, lambda: render_page(store, "/overview", query))
    errors = store.analysis(key).errors
    if errors:
        print(f"  analysis sections that failed (shown on the page): {errors}")
    line("warm: trace and report in the store", warm, "<- figure")
    line(
        "baseline: restarted dashboard (Parquet cache, analyse, page)",
        cold,
        f"ratio {cold / warm:.0f}x",
    )

    idx = store.derived(key, "timeline_index", tl.build_index)
    print(f"Timeline zoom callback (target <= 300 ms), {len(idx.ts):,} slices on {len(idx.tracks)} tracks:")  # fmt: skip
    zooms: dict[str, float] = {}
    for label, lo_f, hi_f in (("10 % window", 0.45, 0.55), ("0.05 % window", 0.5, 0.5005)):
        window = (lo_f * idx.span_ns, hi_f * idx.span_ns)
        w = tl.query(idx, *window)

        def zoom(win: tuple[float, float] = window) -> Any:
            return timeline_page.view(store, key, win)[0].to_json()

        zooms[label] = timed(5, zoom)
        line(f"{label}: {w.total:,} slices, {w.mode}", zooms[label], "<- figure")
    lo, hi = 0.45 * idx.span_ns, 0.55 * idx.span_ns

    def naive() -> str:
        sel = np.flatnonzero((idx.ts <= hi) & (idx.end >= lo))
        fig = go.Figure(go.Bar(orientation="h", base=idx.ts[sel] / 1e6, x=(idx.end[sel] - idx.ts[sel]) / 1e6,
                               y=np.searchsorted(idx.offsets, sel, side="right") - 1,
                               hovertext=[str(n) for n in idx.names[idx.row[sel]]]))  # fmt: skip
        return str(fig.to_json())

    base = timed(1, naive)
    line("baseline: 10 % window, every slice to plotly, no LOD", base, f"ratio {base / zooms['10 % window']:.1f}x")  # fmt: skip
    full = timed(3, lambda: timeline_page.view(store, key, (None, None))[0].to_json())
    line("whole trace (aggregated)", full)
    build = timed(1, lambda: tl.build_index(store.trace(key)))
    line("timeline index build (once per run, cached)", build)
    return 0


if __name__ == "__main__":
    sys.exit(main())
