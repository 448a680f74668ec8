"""Dashboard under load: N concurrent clients replaying what a browser asks, against one client.

Serves a directory of `--runs` generated training traces with the real `hpuprof dashboard`
(waitress, its worker threads), analyses every run once (the figures below are for runs
already analysed, as in issue 13), then:
- baseline: ONE client visits pages one after another for `--baseline-visits` visits;
- load: `--clients` clients do the same concurrently for `--seconds` seconds.
A visit is what a browser does when it opens a page: GET the page, `/_dash-layout` and
`/_dash-dependencies`, POST the page-render callback; on the Timeline also zoom callbacks
(random windows, so no two are alike) and a slice-details click; on Runs the rescan
callback and its grid's page request. Static bundles are left out (a browser keeps them).
Printed: p50 / p99 / max per request kind for the baseline and under load (their ratio),
errors (HTTP >= 400, a traceback in a body, a failed connection), requests per second and the
server's peak memory.
Target (issue 13): p99 <= 2 s under 50 clients, 0 errors, for pages of runs already analysed:
a Compare visit shows a pair compared in the first pass (each run against the first); with
`--new-pairs` it picks any pair, and a pair never compared is a new analysis of two runs.

    python bench/bench_dashboard_load.py [--clients 50] [--seconds 60] [--runs 12] [--new-pairs]
"""

from __future__ import annotations

import argparse
import http.client
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 30.0
PAGES = ("/", "/overview", "/timeline", "/ops", "/dynamicity", "/precision", "/ranks", "/compare")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Client:
    """One browser-like client: keep-alive HTTP to the server, Dash callback requests built
    from the server's own `/_dash-dependencies`."""

    def __init__(self, port: int, deps: list[dict[str, Any]] | None = None) -> None:
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT_S)
        self.deps = deps if deps is not None else orjson.loads(self.get("/_dash-dependencies")[1])

    def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        for attempt in (0, 1):
            try:
                self.conn.request(method, path, body=body, headers=headers)
                response = self.conn.getresponse()
                return response.status, response.read()
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=TIMEOUT_S)
                if attempt or isinstance(sys.exc_info()[1], TimeoutError):
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def get(self, path: str) -> tuple[int, bytes]:
        return self.request("GET", path)

    def callback(self, output_has: str, values: dict[str, Any], changed: list[str]) -> tuple[int, bytes]:  # fmt: skip
        """POST the callback whose output names `output_has`, inputs and state from `values`
        ("id.property" -> value)."""
        dep = next(d for d in self.deps if output_has in d["output"])
        out = dep["output"]
        parts = out[2:-2].split("...") if out.startswith("..") else [out]
        outputs = [{"id": p.rsplit(".", 1)[0], "property": p.rsplit(".", 1)[1]} for p in parts]

        def item(d: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
            return {"id": d["id"], "property": d["property"], "value": values.get(f"{d['id']}.{d['property']}")}  # fmt: skip

        body = {
            "output": out,
            "outputs": outputs if len(outputs) > 1 else outputs[0],
            "inputs": [item(d) for d in dep["inputs"]],
            "changedPropIds": changed,
            "state": [item(d) for d in dep["state"]],
        }
        return self.request("POST", "/_dash-update-component", orjson.dumps(body))


def _find(node: Any, wanted: str) -> Any:
    """The props of the component with id `wanted` inside a callback answer."""
    if isinstance(node, dict):
        props = node.get("props")
        if isinstance(props, dict) and props.get("id") == wanted:
            return props
        for v in node.values():
            got = _find(v, wanted)
            if got is not None:
                return got
    elif isinstance(node, list):
        for v in node:
            got = _find(v, wanted)
            if got is not None:
                return got
    return None


def visit(client: Client, page: str, run: str, other: str, rng: random.Random, record: Any) -> None:  # fmt: skip
    """One page opened as a browser opens it; each request's latency goes to `record`."""
    search = f"?run={quote(run)}" + (f"&b={quote(other)}" if page == "/compare" else "")
    path = page + (search if page != "/" else "")

    def timed(kind: str, fn: Any, *args: Any) -> tuple[int, bytes]:
        t = time.perf_counter()
        try:
            status, body = fn(*args)
        except (OSError, http.client.HTTPException) as error:
            record(kind, time.perf_counter() - t, f"{type(error).__name__}: {error}")
            return 0, b""
        bad = status >= 400 or b"Traceback" in body
        record(kind, time.perf_counter() - t, f"HTTP {status}" if bad else None)
        return status, body

    timed("GET page", client.get, path)
    timed("GET layout", client.get, "/_dash-layout")
    timed("GET dependencies", client.get, "/_dash-dependencies")
    values = {"url.pathname": page, "url.search": search if page != "/" else "", "page-key.data": None}  # fmt: skip
    status, body = timed(
        f"render {page}",
        client.callback,
        "page-content.children",
        values,
        ["url.pathname", "url.search"],
    )
    if page == "/":
        timed("runs rescan", client.callback, "runs-refreshed.data",
              {"runs-refresh.n_clicks": 0, "runs-interval.n_intervals": 1}, ["runs-interval.n_intervals"])  # fmt: skip
        timed("runs page", client.callback, "runs-grid.getRowsResponse",
              {"runs-grid.getRowsRequest": {"startRow": 0, "endRow": 100}}, ["runs-grid.getRowsRequest"])  # fmt: skip
    if page != "/timeline" or status != 200:
        return
    window = _find(orjson.loads(body), "timeline-window") or {}
    span_ms = float((window.get("data") or {}).get("t1") or 1e6) / 1e6
    groups = (_find(orjson.loads(body), "timeline-groups") or {}).get("value")
    for _ in range(2):
        a = rng.uniform(0, span_ms * 0.95)
        b = a + span_ms * rng.choice((0.002, 0.02, 0.2))
        timed("timeline zoom", client.callback, "timeline-graph.figure", {
            "timeline-graph.relayoutData": {"xaxis.range[0]": a, "xaxis.range[1]": b},
            "timeline-ranks.value": None, "timeline-groups.value": groups,
            "timeline-options.value": ["flows"], "url.search": search, "timeline-window.data": window.get("data"),
        }, ["timeline-graph.relayoutData"])  # fmt: skip
    click = {"points": [{"customdata": ["e", rng.randrange(0, 5000)]}]}
    timed("slice details", client.callback, "timeline-details.children",
          {"timeline-graph.clickData": click, "url.search": search}, ["timeline-graph.clickData"])  # fmt: skip


class Recorder:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.times: dict[str, list[float]] = defaultdict(list)
        self.errors: list[str] = []

    def __call__(self, kind: str, seconds: float, error: str | None) -> None:
        with self.lock:
            self.times[kind].append(seconds)
            if error:
                self.errors.append(f"{kind}: {error}")

    def all(self) -> list[float]:
        return [t for ts in self.times.values() for t in ts]


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def make_runs(root: Path, runs: int, events: int) -> list[str]:
    gen = ROOT / "bench" / "gen_synthetic_trace.py"
    keys = []
    for i in range(runs):
        run = root / f"run{i:02d}"
        run.mkdir(parents=True)
        path = run / f"train-{i}.pt.trace.json"
        n = events if i % 3 else events * 3  # a few bigger ones
        subprocess.run([sys.executable, str(gen), str(path), "--events", str(n), "--seed", str(i)],
                       check=True, stdout=subprocess.DEVNULL)  # fmt: skip
        keys.append(path.relative_to(root).as_posix())
    return keys


def peak_rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--runs", type=int, default=12)
    ap.add_argument("--events", type=int, default=20_000, help="events per run (every third x3)")
    ap.add_argument("--baseline-visits", type=int, default=40)
    ap.add_argument("--threads", type=int, default=8, help="server worker threads")
    ap.add_argument("--memory-mb", type=int, default=256, help="server memory budget")
    ap.add_argument("--new-pairs", action="store_true",
                    help="Compare visits also pick pairs never compared (new analyses)")  # fmt: skip
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "runs"
        t = time.perf_counter()
        keys = make_runs(root, args.runs, args.events)
        print(f"{len(keys)} runs generated in {time.perf_counter() - t:.0f} s")
        port = free_port()
        env = os.environ | {"HPUDASH_CACHE_DIR": str(Path(tmp) / "dash-cache"),
                            "HPUPROF_CACHE_DIR": str(Path(tmp) / "load-cache")}  # fmt: skip
        cmd = [sys.executable, "-c", "from hpuprof.cli.main import run; run()", "dashboard", str(root),
               "--port", str(port), "--threads", str(args.threads), "--memory-mb", str(args.memory_mb)]  # fmt: skip
        log = Path(tmp) / "server.log"
        with open(log, "w") as out:
            server = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, text=True)
        try:
            return measure(port, server.pid, keys, args)
        finally:
            lines = log.read_text().splitlines()
            print(f"server log ({len(lines)} lines):", *lines[:3], *lines[3:][-8:], sep="\n  ")
            server.send_signal(signal.SIGINT)
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()


def measure(port: int, pid: int, keys: list[str], args: argparse.Namespace) -> int:
    for _ in range(100):
        try:
            Client(port)
            break
        except OSError:
            time.sleep(0.2)
    warm = Recorder()
    t = time.perf_counter()
    client = Client(port)
    rng = random.Random(0)
    for key in keys:  # every run analysed once: the figures below are for analysed runs
        for page in PAGES:
            visit(client, page, key, keys[0], rng, warm)
    print(f"first visit of every page of every run (loads and analyses): {time.perf_counter() - t:.0f} s, "
          f"slowest request {max(warm.all()):.2f} s, {len(warm.errors)} errors")  # fmt: skip
    for e in warm.errors[:5]:
        print("  ", e)

    def plan(rng: random.Random) -> tuple[str, str, str]:
        # B of a comparison is the pair compared above (analysed, kept); `--new-pairs` also
        # compares pairs never seen (each a new analysis of two runs, ~1 s of CPU alone)
        run = rng.choice(keys)
        return rng.choice(PAGES), run, rng.choice(keys) if args.new_pairs else keys[0]

    base = Recorder()
    rng = random.Random(1)
    for _ in range(args.baseline_visits):
        visit(client, *plan(rng), rng, base)

    load = Recorder()
    deadline = time.monotonic() + args.seconds
    deps = client.deps

    def user(seed: int) -> None:
        r = random.Random(seed)
        c = Client(port, deps)
        while time.monotonic() < deadline:
            visit(c, *plan(r), r, load)

    threads = [threading.Thread(target=user, args=(100 + i,)) for i in range(args.clients)]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    wall = time.perf_counter() - t
    n = len(load.all())
    print(f"\n{args.clients} clients for {wall:.0f} s: {n:,} requests ({n / wall:.0f}/s), "
          f"{len(load.errors)} errors; server peak memory {peak_rss_mb(pid):.0f} MB")  # fmt: skip
    for e in load.errors[:10]:
        print("  ", e)
    print(
        f"{'request':<22} {'one client p50 / p99':>22}   {'under load p50 / p99 / max':>30}  p99 ratio"
    )
    kinds = sorted(set(base.times) | set(load.times))
    for kind in [*kinds, "all"]:
        b = base.all() if kind == "all" else base.times.get(kind, [])
        lo = load.all() if kind == "all" else load.times.get(kind, [])
        ratio = pct(lo, 99) / pct(b, 99) if b and lo else float("nan")
        print(f"{kind:<22} {pct(b, 50) * 1e3:8.0f} / {pct(b, 99) * 1e3:6.0f} ms   "
              f"{pct(lo, 50) * 1e3:8.0f} / {pct(lo, 99) * 1e3:6.0f} / {max(lo, default=float('nan')) * 1e3:6.0f} ms  "
              f"{ratio:6.1f}x")  # fmt: skip
    p99 = pct(load.all(), 99)
    print(f"\nunder load p99 {p99:.2f} s (target <= 2 s), errors {len(load.errors)} (target 0)")
    return 0 if p99 <= 2.0 and not load.errors else 1


if __name__ == "__main__":
    sys.exit(main())
