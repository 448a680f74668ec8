"""`hpuprof dashboard` as a user starts it (waitress), and the kept answers of callbacks.

Callback requests are built as the Dash renderer builds them; names of runs that do not exist
(or name a path) get a clear message, never an HTTP 500 or a traceback in the log.
"""

from __future__ import annotations

import http.client
from pathlib import Path
from typing import Any

import orjson
import pytest

pytest.importorskip("dash")
pytest.importorskip("waitress")

from tests.dashboard.conftest import dashboard_process
from tests.dashboard.synth import synthetic_trace, write_chrome_json

ROUTE = {
    "output": "..page-content.children...nav.children...page-key.data..",
    "outputs": [
        {"id": "page-content", "property": "children"},
        {"id": "nav", "property": "children"},
        {"id": "page-key", "property": "data"},
    ],
    "changedPropIds": ["url.pathname", "url.search"],
    "state": [{"id": "page-key", "property": "data", "value": None}],
}
BAD_NAMES = (
    "../../etc/passwd", "/etc/passwd", "..%2F..%2Fetc%2Fpasswd", "nope.json", "<script>alert(1)</script>",
    "lone/../../../etc/passwd", "", "a" * 5000,
)  # fmt: skip


def route_body(path: str, search: str) -> bytes:
    inputs = [
        {"id": "url", "property": "pathname", "value": path},
        {"id": "url", "property": "search", "value": search},
    ]
    return orjson.dumps(ROUTE | {"inputs": inputs})


def callback_body(deps: list[dict[str, Any]], output_has: str, values: dict[str, Any]) -> bytes:
    dep = next(d for d in deps if output_has in d["output"])
    out = dep["output"]
    parts = out[2:-2].split("...") if out.startswith("..") else [out]
    outputs = [{"id": p.rsplit(".", 1)[0], "property": p.rsplit(".", 1)[1]} for p in parts]

    def item(d: dict[str, Any]) -> dict[str, Any]:
        return {"id": d["id"], "property": d["property"], "value": values.get(f"{d['id']}.{d['property']}")}  # fmt: skip

    first = f"{dep['inputs'][0]['id']}.{dep['inputs'][0]['property']}"
    return orjson.dumps(
        {
            "output": out,
            "outputs": outputs if len(outputs) > 1 else outputs[0],
            "inputs": [item(d) for d in dep["inputs"]],
            "changedPropIds": [first],
            "state": [item(d) for d in dep["state"]],
        }
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("serve")
    write_chrome_json(synthetic_trace(1_500), root / "one.pt.trace.json")
    with dashboard_process(root, root.parent / f"{root.name}-work") as (port, log):
        yield port, log, root


def _request(port: int, method: str, path: str, body: bytes | None = None) -> tuple[int, dict[str, str], bytes]:  # fmt: skip
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request(method, path, body=body, headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    out = r.status, dict(r.getheaders()), r.read()
    conn.close()
    return out


def test_served_by_a_production_server(served: Any) -> None:
    port, _, _ = served
    status, headers, body = _request(port, "GET", "/")
    assert status == 200 and headers["Server"] == "hpudash"  # waitress, named
    assert b"_dash-config" in body
    status, _, body = _request(port, "POST", "/_dash-update-component", route_body("/overview", "?run=one.pt.trace.json"))  # fmt: skip
    assert status == 200 and b"Overview: one.pt.trace.json" in body


def test_unknown_run_names_get_a_message_not_a_500(served: Any) -> None:
    port, log, _ = served
    _, _, deps_raw = _request(port, "GET", "/_dash-dependencies")
    deps = orjson.loads(deps_raw)
    for name in BAD_NAMES:
        search = "?run=" + name
        for path in ("/overview", "/timeline", "/ops", "/dynamicity", "/precision", "/ranks", "/memory", "/compare"):  # fmt: skip
            status, _, body = _request(
                port, "POST", "/_dash-update-component", route_body(path, search)
            )
            assert status == 200, (path, name)
            if path != "/compare" and name:
                assert b"No run or trace named" in body, (path, name)
            assert b"root:" not in body and b"Traceback" not in body
        for output, values in (
            (
                "timeline-graph.figure",
                {
                    "timeline-graph.relayoutData": {"xaxis.range[0]": 0, "xaxis.range[1]": 1},
                    "url.search": search,
                },
            ),
            (
                "timeline-details.children",
                {
                    "timeline-graph.clickData": {"points": [{"customdata": ["e", 3]}]},
                    "url.search": search,
                },
            ),
            (
                "timeline-range.children",
                {
                    "timeline-graph.selectedData": {"range": {"x": [0, 1], "y": [0, 3]}},
                    "url.search": search,
                },
            ),
            (
                "compare-body.children",
                {"compare-a.value": name, "compare-b.value": "one.pt.trace.json"},
            ),
        ):
            status, _, body = _request(port, "POST", "/_dash-update-component", callback_body(deps, output, values))  # fmt: skip
            assert status in (200, 204), (output, name, status, body[:300])
            assert b"Traceback" not in body and b"root:" not in body
    text = log.read_text()
    assert "Traceback" not in text and " 500 " not in text, text[-3000:]


def test_repeated_callbacks_are_answered_from_kept_answers(tmp_path: Path) -> None:
    """The same page of the same files is built once; a changed file is built again."""
    from hpudash.app import create_app
    from hpudash.data import DataStore
    from hpudash.respcache import ResponseCache

    write_chrome_json(synthetic_trace(900), tmp_path / "a.pt.trace.json")
    store = DataStore(tmp_path, disk=False, scan_ttl_s=0)
    app = create_app(tmp_path, store=store, response_cache_bytes=0)
    cache = ResponseCache(store)
    cache.install(app.server, frozenset({"/", "/overview"}))
    client = app.server.test_client()
    body = route_body("/overview", "?run=a.pt.trace.json")
    first = client.post("/_dash-update-component", data=body, content_type="application/json")
    again = client.post("/_dash-update-component", data=body, content_type="application/json")
    assert first.status_code == again.status_code == 200 and first.data == again.data
    assert (cache.misses, cache.hits) == (1, 1)
    runs = route_body("/", "")  # the Runs page fills in as analyses finish: never kept
    client.post("/_dash-update-component", data=runs, content_type="application/json")
    client.post("/_dash-update-component", data=runs, content_type="application/json")
    assert cache.hits == 1
    write_chrome_json(synthetic_trace(1_200), tmp_path / "a.pt.trace.json")  # new content
    client.post("/_dash-update-component", data=body, content_type="application/json")
    assert (cache.misses, cache.hits) == (2, 1)
    assert client.get("/_dash-layout").data == client.get("/_dash-layout").data
    assert cache.hits == 2
