"""The dashboard's Runs list over a tree of many analysed runs: a refresh, paged (now) beside the
whole list (before), in the same run (issue 27).

    python bench/bench_runs_list.py [--runs 10000] [--rounds 5]

Writes `--runs` small Kineto traces (100 per folder), serves them with `create_app` (Flask's
test client: the Dash callback as the browser posts it, no network), and makes every run
"analysed": one trace is analysed for real and its key figures are put in the store's memory
for every run (what a disk-cache read of each run's figures does); the analyses themselves are
not what this measures. Then, alternating in each round:

- `whole list (before)`: what the Runs refresh sent before paging, every row as grid cells
  (`grid_rows(run_rows(...))`, the old callback's `rowData`), made and encoded in-process
  (without Dash's own request handling, and with today's cache of each run's cells: a lower
  bound of its cost);
- `page (now)`: the grid's page request (`getRowsRequest` rows 0..100, sorted by step time)
  posted to the app, and its response;
- `rescan (now)`: the interval's rescan callback (the rows' figures checked, then the grid asks
  for its page again), posted to the app.

Each request starts after the catalog's scan has expired, as a periodic refresh does (the page
request reads the rows of the rescan before it). Prints median milliseconds and bytes. Target: at most 1 s a refresh.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "dashboards"))
sys.path.insert(0, str(ROOT))


def write_tree(root: Path, runs: int) -> None:
    for i in range(runs):
        folder = root / f"group-{i // 100:03d}"
        folder.mkdir(exist_ok=True)
        ops = [
            {"ph": "X", "cat": "cpu_op", "name": f"aten::op{k}", "pid": 1, "tid": 1,
             "ts": 100 + 10 * k, "dur": 5 + i % 7}
            for k in range(8)
        ]  # fmt: skip
        (folder / f"job-{i:05d}.pt.trace.json").write_text(json.dumps({"traceEvents": ops}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    from hpudash.app import create_app
    from hpudash.catalog import SCAN_TTL_S
    from hpudash.data import DataStore
    from hpudash.pages.common import grid_rows
    from hpudash.pages.runs import COLUMNS, run_rows

    from tests.dashboard.test_serve import callback_body

    with tempfile.TemporaryDirectory(prefix="bench-runs-") as tmp:
        root = Path(tmp) / "runs"
        root.mkdir()
        write_tree(root, args.runs)
        store = DataStore(root, disk=False)
        entries = store.entries()
        figures = store.key_figures(entries[0])
        for entry in entries:
            store.memory.put((entry.version, "figures"), figures)
        client = create_app(root, store=store).server.test_client()
        deps = orjson.loads(client.get("/_dash-dependencies").data)
        request = {"startRow": 0, "endRow": 100, "sortModel": [{"colId": "step_time_ns", "sort": "desc"}]}  # fmt: skip
        page_body = callback_body(deps, "runs-grid.getRowsResponse", {"runs-grid.getRowsRequest": request})  # fmt: skip
        rescan_body = callback_body(deps, "runs-refreshed.data", {"runs-interval.n_intervals": 1})

        def whole_list() -> int:
            return len(orjson.dumps(grid_rows(run_rows(store, 0), COLUMNS)))

        def post(body: bytes) -> int:
            answer = client.post("/_dash-update-component", data=body, content_type="application/json")  # fmt: skip
            assert answer.status_code == 200, answer.data[:500]
            return len(answer.data)

        kinds = {
            "whole list (before)": whole_list,
            "page (now)": lambda: post(page_body),
            "rescan (now)": lambda: post(rescan_body),
        }
        times: dict[str, list[float]] = {k: [] for k in kinds}
        sizes: dict[str, int] = {}
        for _ in range(args.rounds):
            for name, run in kinds.items():
                time.sleep(SCAN_TTL_S + 0.1)  # (a periodic refresh walks the tree again)
                start = time.perf_counter()
                sizes[name] = run()
                times[name].append(time.perf_counter() - start)

    print(f"Runs list of {len(entries):,} analysed runs, median of {args.rounds} rounds")
    print(f"{'':<22}{'ms':>9}{'bytes':>12}")
    for name, samples in times.items():
        print(f"{name:<22}{1000 * statistics.median(samples):>9.1f}{sizes[name]:>12,}")
    print("target: at most 1,000 ms a refresh (page + rescan)")


if __name__ == "__main__":
    main()
