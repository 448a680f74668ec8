"""Catalog scanning and the safe file routes, without a browser."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

pytest.importorskip("dash")

from hpudash import catalog
from hpudash.server import safe_path


def _touch(p: Path, data: bytes = b"{}") -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    return p


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    run = tmp_path / "exp" / "run1"
    _touch(run / "traces" / "a-rank0.pt.trace.json")
    _touch(run / "traces" / "a-rank1.pt.trace.json")
    _touch(run / "traces" / "a-rank2.pt.trace.incomplete.json")
    _touch(run / "perfetto" / "a.perfetto-trace")
    manifest = {
        "traces": ["traces/a-rank0.pt.trace.json", "traces/a-rank1.pt.trace.json", "../../x.json"],
        "perfetto": ["perfetto/a.perfetto-trace"],
    }
    _touch(run / "run.json", orjson.dumps(manifest))
    _touch(tmp_path / "x.json")
    _touch(tmp_path / "lone" / "t.json.gz", b"\x1f\x8b")
    _touch(tmp_path / "lone" / "notes.txt", b"hi")
    _touch(tmp_path / "lone" / "t.json.gz.hpuprof-cache" / "k.parquet", b"PAR1")
    _touch(tmp_path / ".hidden" / "h.json")
    _touch(tmp_path / "lone" / "package.json")
    return tmp_path


def test_scan_finds_runs_and_lone_traces(tree: Path) -> None:
    entries = {e.key: e for e in catalog.scan(tree)}
    assert sorted(entries) == ["exp/run1", "lone/t.json.gz", "x.json"]
    run = entries["exp/run1"]
    assert run.kind == "run"
    assert [p.name for p in run.traces] == ["a-rank0.pt.trace.json", "a-rank1.pt.trace.json"]
    assert [p.name for p in run.perfetto] == ["a.perfetto-trace"]
    assert run.size == 4 and run.mtime_ns > 0
    # the manifest's "../../x.json" is outside the run: not part of it, still its own entry
    assert entries["x.json"].kind == "trace"


def test_scan_sees_changes_and_new_runs(tree: Path) -> None:
    before = {e.key: e for e in catalog.scan(tree)}
    p = tree / "exp" / "run1" / "traces" / "a-rank0.pt.trace.json"
    p.write_bytes(b'{"traceEvents": []}')
    os.utime(p, ns=(p.stat().st_atime_ns, before["exp/run1"].mtime_ns + 10**9))
    _touch(tree / "new" / "b.pt.trace.json")
    after = {e.key: e for e in catalog.scan(tree)}
    assert "new/b.pt.trace.json" in after
    assert after["exp/run1"].mtime_ns > before["exp/run1"].mtime_ns
    assert after["exp/run1"].size > before["exp/run1"].size


def test_scan_skips_symlinks_and_find_names_only_entries(tree: Path, tmp_path: Path) -> None:
    outside = _touch(tmp_path.parent / f"{tmp_path.name}-outside" / "secret.json")
    (tree / "lone" / "link.json").symlink_to(outside)
    keys = [e.key for e in catalog.scan(tree)]
    assert "lone/link.json" not in keys
    assert catalog.find(tree, "lone/t.json.gz") is not None
    for bad in ("lone/notes.txt", "../x.json", "/etc/passwd", "", "exp"):
        assert catalog.find(tree, bad) is None


@pytest.mark.parametrize(
    "name, ok",
    [("a.json", True), ("a.JSON.GZ", True), ("a.pftrace", True), ("a.parquet", True),
     ("a.incomplete.json", False), ("run.json", False), (".a.json", False), ("a.txt", False)],
)  # fmt: skip
def test_is_trace_name(name: str, ok: bool) -> None:
    assert catalog.is_trace_name(name) is ok


def test_safe_path_refuses_everything_outside_root(tree: Path, tmp_path: Path) -> None:
    outside = _touch(tmp_path.parent / f"{tmp_path.name}-out2" / "secret.json")
    (tree / "lone" / "out.json").symlink_to(outside)
    assert safe_path(tree, "lone/t.json.gz") == (tree / "lone" / "t.json.gz").resolve()
    for bad in (
        "../" + tmp_path.name + "-out2/secret.json", "lone/../../x.json", "/etc/passwd",
        "lone\\t.json.gz", "lone/out.json", "lone/notes.txt", "exp/run1/run.json",
        "lone/t.json.gz\x00", "", "lone/missing.json", "lone",
    ):  # fmt: skip
        assert safe_path(tree, bad) is None, bad


def test_routes_serve_only_traces_under_root(tree: Path, tmp_path: Path) -> None:
    from hpudash import create_app

    client = create_app(tree).server.test_client()
    ok = client.get("/files/lone/t.json.gz")
    assert ok.status_code == 200
    assert ok.headers["X-Content-Type-Options"] == "nosniff"
    assert "attachment" in ok.headers["Content-Disposition"]
    for bad in (
        "../x.json", "..%2F..%2Fetc%2Fpasswd", "%2Fetc%2Fpasswd", "/etc/passwd",
        "exp/run1/run.json", "lone/notes.txt", "lone/%2E%2E/%2E%2E/etc/passwd", "",
    ):  # fmt: skip
        assert client.get("/files/" + bad).status_code == 404, bad
    assert client.get("/report.html?run=../../etc").status_code == 404
    assert client.get("/report.html").status_code == 404
