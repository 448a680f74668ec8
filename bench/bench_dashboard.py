"""Dashboard speed on a 1 M-event trace, warm cache: Overview data and a timeline zoom callback.

Prints each figure beside a baseline measured in the same run:
- Overview: `render_page('/overview')` with the run's trace and report already cached (the
  warm path), beside the cold path (analysis of the in-memory trace, then the page).
- Zoom: the zoom callback's work (`pages.timeline.view`: LOD query + figure + JSON) for a
  window of 10 % of the trace, beside the naive approach: every slice of that window sent to
  plotly as bars (figure + JSON), no level of detail.
Targets (issue 6): Overview <= 2 s, zoom <= 300 ms. Usage: bench_dashboard.py [--events N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "dashboards")]


def best_of(n: int, fn: object) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - t)
    return min(times) if n < 3 else statistics.median(times)


def main() -> int:
    import numpy as np
    import plotly.graph_objects as go
    from hpudash import timeline as tl
    from hpudash.app import create_app, render_page
    from hpudash.pages import timeline as timeline_page

    from tests.dashboard.synth import synthetic_trace

    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=1_000_000)
    args = ap.parse_args()
    t = time.perf_counter()
    trace = synthetic_trace(args.events)
    print(f"generated {len(trace.events):,} events in {time.perf_counter() - t:.1f} s")
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "big.pt.trace.json").write_text("{}")  # stands for the run; loader below
        app = create_app(tmp, loader=lambda _p: trace)
        store = app.server.config["hpudash.store"]
        key = "big.pt.trace.json"
        t = time.perf_counter()
        render_page(store, "/overview", f"?run={key}")
        cold = time.perf_counter() - t
        warm = best_of(3, lambda: render_page(store, "/overview", f"?run={key}"))
        print(f"overview data, warm cache: {warm * 1e3:8.1f} ms   (target <= 2000 ms)")
        print(
            f"overview data, cold (analysis of the in-memory trace): {cold * 1e3:8.1f} ms   ratio cold/warm {cold / warm:.0f}x"
        )

        idx = store.derived(key, "timeline_index", tl.build_index)
        lo, hi = 0.45 * idx.span_ns, 0.55 * idx.span_ns
        window = (lo, hi)
        zoom = best_of(
            5, lambda: app.server and timeline_page.view(store, key, window)[0].to_json()
        )
        w = tl.query(idx, lo, hi)

        def naive() -> str:
            sel = np.flatnonzero((idx.ts <= hi) & (idx.end >= lo))
            fig = go.Figure(go.Bar(orientation="h", base=idx.ts[sel] / 1e6, x=(idx.end[sel] - idx.ts[sel]) / 1e6,
                                   y=np.searchsorted(idx.offsets, sel, side="right") - 1,
                                   hovertext=[str(n) for n in idx.names[idx.row[sel]]]))  # fmt: skip
            return str(fig.to_json())

        base = best_of(1, naive)
        print(
            f"timeline zoom callback ({w.total:,} slices in window, {w.mode}): {zoom * 1e3:8.1f} ms   (target <= 300 ms)"
        )
        print(
            f"baseline, all slices of the window to plotly, no LOD: {base * 1e3:8.1f} ms   ratio {base / zoom:.1f}x"
        )
        full = best_of(3, lambda: timeline_page.view(store, key, (None, None))[0].to_json())
        print(f"timeline full view (whole trace, aggregated): {full * 1e3:8.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
