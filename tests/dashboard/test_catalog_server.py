"""Catalog scanning (runs, rank directories, lone traces) and the safe routes, no browser."""

from __future__ import annotations

import gzip
import os
import re
import time
from pathlib import Path
from urllib.parse import quote, unquote

import orjson
import pytest

pytest.importorskip("dash")

from hpudash import catalog
from hpudash.data import DataStore, RefusedRunError
from hpudash.server import download_name, safe_path

from tests.conftest import SAMPLE_TRACES, SHARED_TRACES


def _touch(p: Path, data: bytes = b"{}") -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    return p


def _kineto(rank: int | None, world: int | None = None) -> bytes:
    doc: dict[str, object] = {"schemaVersion": 1}
    if rank is not None:
        doc["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": world}
    doc["traceEvents"] = []
    return orjson.dumps(doc)


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    run = tmp_path / "exp" / "run1"
    _touch(run / "traces" / "a-rank0.pt.trace.json")
    _touch(run / "traces" / "a-rank1.pt.trace.json")
    _touch(run / "traces" / "a-rank2.pt.trace.incomplete.json")
    _touch(run / "perfetto" / "a.perfetto-trace")
    _touch(run / "metrics" / "a-rank0.json")
    _touch(run / "metrics" / "a-rank1.json")
    manifest = {
        "traces": ["traces/a-rank0.pt.trace.json", "traces/a-rank1.pt.trace.json"],
        "perfetto": ["perfetto/a.perfetto-trace"],
        "metrics": ["metrics/a-rank0.json", "metrics/a-rank1.json"],
    }  # fmt: skip
    _touch(run / "run.json", orjson.dumps(manifest))
    # a manifest that names files outside its run: refused, as `hpuprof analyze` refuses it
    refused = tmp_path / "exp" / "hostile"
    _touch(refused / "traces" / "r0.pt.trace.json")
    _touch(refused / "run.json", orjson.dumps({"traces": ["traces/r0.pt.trace.json", "../../x.json", "/etc/passwd"]}))  # fmt: skip
    _touch(tmp_path / "x.json")
    _touch(tmp_path / "lone" / "t.json.gz", b"\x1f\x8b")
    _touch(tmp_path / "lone" / "notes.txt", b"hi")
    _touch(tmp_path / ".hidden" / "h.json")
    _touch(tmp_path / "lone" / "package.json")
    # two rank files in one directory, no run.json: one run with two ranks
    _touch(tmp_path / "nccl" / "sampled_rank-0.json.gz", gzip.compress(_kineto(0, 2)))
    _touch(tmp_path / "nccl" / "sampled_rank-1.json.gz", gzip.compress(_kineto(1, 2)))
    # the same, told by distributedInfo only (torch's default host_pid file names)
    _touch(tmp_path / "ddp" / "host_41.1700.pt.trace.json", _kineto(1, 2))
    _touch(tmp_path / "ddp" / "host_40.1700.pt.trace.json", _kineto(0, 2))
    # separate single-GPU profiles that happen to be rank 0 twice: not one run
    _touch(tmp_path / "solo" / "a.pt.trace.json", _kineto(0, 1))
    _touch(tmp_path / "solo" / "b.pt.trace.json", _kineto(0, 1))
    return tmp_path


def test_scan_finds_runs_rank_directories_and_lone_traces(tree: Path) -> None:
    entries = {e.key: e for e in catalog.scan(tree)}
    assert sorted(entries) == [
        "ddp", "exp/hostile", "exp/hostile/traces/r0.pt.trace.json", "exp/run1", "lone/t.json.gz", "nccl",
        "solo/a.pt.trace.json", "solo/b.pt.trace.json", "x.json",
    ]  # fmt: skip
    run = entries["exp/run1"]
    assert run.kind == "run"
    assert [p.name for p in run.traces] == ["a-rank0.pt.trace.json", "a-rank1.pt.trace.json"]
    assert [p.name for p in run.perfetto] == ["a.perfetto-trace"]
    assert run.size == 4 and run.mtime_ns > 0 and not run.refused
    # the manifest's "../../x.json" is outside its run: the run is refused, with the reason;
    # x.json and the refused run's own trace stay traces of their own
    hostile = entries["exp/hostile"]
    assert hostile.kind == "run" and hostile.traces == ()
    assert "run.json at key 'traces', entry 1" in hostile.refused and "'..'" in hostile.refused
    assert entries["x.json"].kind == "trace"
    nccl = entries["nccl"]
    assert nccl.kind == "ranks"
    assert [p.name for p in nccl.traces] == ["sampled_rank-0.json.gz", "sampled_rank-1.json.gz"]
    ddp = entries["ddp"]
    assert ddp.kind == "ranks"
    assert [p.name for p in ddp.traces] == ["host_40.1700.pt.trace.json", "host_41.1700.pt.trace.json"]  # rank order  # fmt: skip


@pytest.mark.parametrize(
    "name, rank",
    [("sampled_rank-1.json.gz", 1), ("rank-34.Jul_15.pt.trace.json.gz", 34), ("x_rank3.json", 3),
     ("train-rank12.pt.trace.json", 12), ("frank1.json", None), ("ranking.json", None), ("a.json", None)],
)  # fmt: skip
def test_rank_from_name(name: str, rank: int | None) -> None:
    assert catalog.rank_from_name(name) == rank


def test_real_nccl_pair_is_one_run_with_two_ranks(tmp_path: Path) -> None:
    pair = SHARED_TRACES / "tests" / "data" / "trace_filter"
    if not pair.is_dir():
        pytest.skip("../shared/traces is not present")
    import shutil

    shutil.copytree(pair, tmp_path / "pair")
    (entry,) = catalog.scan(tmp_path)
    assert entry.key == "pair" and entry.kind == "ranks" and len(entry.traces) == 2
    store = DataStore(tmp_path, disk=False)
    assert sorted(store.trace("pair").events["rank"].unique()) == [0, 1]


def test_killed_run_is_listed_and_loads_like_analyze(tmp_path: Path) -> None:
    """A run killed before any rank's trace was final lists only `incomplete` streams: the
    dashboard shows it with the files `hpuprof analyze` loads, and a refused run says why."""
    sample = SAMPLE_TRACES / "emulated_lazy" / "traces" / "gaudi_train-rank0.pt.trace.json"
    if not sample.is_file():
        pytest.skip("sample_traces/emulated_lazy is not present")
    killed = tmp_path / "killed"
    stream = "traces/train-rank0.pt.trace.incomplete.json"
    _touch(killed / stream, sample.read_bytes())
    _touch(killed / "run.json", orjson.dumps({"traces": [], "incomplete": [stream]}))
    _touch(tmp_path / "bad" / "run.json", orjson.dumps({"traces": ["../killed/" + stream]}))
    entries = {e.key: e for e in catalog.scan(tmp_path)}
    assert [p.name for p in entries["killed"].traces] == ["train-rank0.pt.trace.incomplete.json"]
    store = DataStore(tmp_path, disk=False)
    import hpuprof

    assert len(store.trace("killed").events) == len(hpuprof.load(killed).events) > 0
    with pytest.raises(RefusedRunError, match=r"bad/run.json at key 'traces', entry 0"):
        store.trace("bad")


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
    # the cached catalog finds a new run by name at once
    cat = catalog.Catalog(tree, ttl_s=3600)
    cat.entries()
    _touch(tree / "newer" / "c.pt.trace.json")
    time.sleep(catalog.RESCAN_UNKNOWN_S)  # (no sooner: a flood of bad names is no flood of walks)
    assert cat.find("newer/c.pt.trace.json") is not None


def test_symlinks_are_never_followed(tree: Path, tmp_path: Path) -> None:
    outside = _touch(tmp_path.parent / f"{tmp_path.name}-outside" / "secret.json")
    (tree / "lone" / "link.json").symlink_to(outside)
    (tree / "linkdir").symlink_to(outside.parent, target_is_directory=True)
    run = tree / "exp" / "run2"
    _touch(run / "traces" / "ok.json")
    (run / "traces" / "out.json").symlink_to(outside)
    _touch(run / "run.json", orjson.dumps({"traces": ["traces/ok.json", "traces/out.json"]}))
    entries = {e.key: e for e in catalog.scan(tree)}
    assert "lone/link.json" not in entries and not any(k.startswith("linkdir") for k in entries)
    run2 = entries["exp/run2"]
    assert run2.traces == () and "'traces/out.json' links to a file outside it" in run2.refused
    # a link that stays inside the run is loaded by `hpuprof analyze`, never served here
    (run / "traces" / "out.json").unlink()
    (run / "traces" / "in.json").symlink_to(run / "traces" / "ok.json")
    _touch(run / "run.json", orjson.dumps({"traces": ["traces/ok.json", "traces/in.json"]}))
    rescanned = {e.key: e for e in catalog.scan(tree)}
    assert [p.name for p in rescanned["exp/run2"].traces] == ["ok.json"]
    for bad in ("lone/notes.txt", "../x.json", "/etc/passwd", "", "exp", "lone/link.json"):
        assert catalog.find(tree, bad) is None


@pytest.mark.parametrize(
    "name, ok",
    [("a.json", True), ("a.JSON.GZ", True), ("a.pftrace", True), ("a.parquet", True),
     ("a.incomplete.json", False), ("run.json", False), (".a.json", False), ("a.txt", False),
     ("hw_prof_accel0_001.csv", True), ("hw_prof_accel0_001_analyzed_nodes.csv", False)],
)  # fmt: skip
def test_is_trace_name(name: str, ok: bool) -> None:
    assert catalog.is_trace_name(name) is ok


def test_safe_path_refuses_everything_outside_root(tree: Path, tmp_path: Path) -> None:
    outside = _touch(tmp_path.parent / f"{tmp_path.name}-out2" / "secret.json")
    (tree / "lone" / "out.json").symlink_to(outside)
    (tree / "outdir").symlink_to(outside.parent, target_is_directory=True)
    assert safe_path(tree, "lone/t.json.gz") == (tree / "lone" / "t.json.gz").resolve()
    for bad in (
        "../" + tmp_path.name + "-out2/secret.json", "lone/../../x.json", "/etc/passwd",
        "lone\\t.json.gz", "lone/out.json", "outdir/secret.json", "lone/t.json.gz\x00", "",
        "lone/missing.json", "lone", "./x.json", "lone//t.json.gz",
    ):  # fmt: skip
        assert safe_path(tree, bad) is None, bad


TRAVERSAL = (
    "../x.json", "..%2F..%2Fetc%2Fpasswd", "%2Fetc%2Fpasswd", "/etc/passwd", "%2e%2e/%2e%2e/etc/passwd",
    "exp/run1/run.json", "lone/notes.txt", "lone/%2E%2E/%2E%2E/etc/passwd", "", "lone/out.json",
    "outdir/secret.json", "outdir%2Fsecret.json", "exp/run1/metrics/a-rank0.json", "..%252F..%252Fetc%252Fpasswd",
    "lone/t.json.gz%00", ".hidden/h.json",
)  # fmt: skip


def test_routes_serve_only_listed_files(tree: Path, tmp_path: Path) -> None:
    from hpudash.app import create_app

    outside = _touch(tmp_path.parent / f"{tmp_path.name}-out3" / "secret.json", b"SECRET")
    (tree / "lone" / "out.json").symlink_to(outside)
    (tree / "outdir").symlink_to(outside.parent, target_is_directory=True)
    client = create_app(tree).server.test_client()
    ok = client.get("/files/lone/t.json.gz")
    assert ok.status_code == 200
    assert ok.headers["X-Content-Type-Options"] == "nosniff"
    assert "attachment" in ok.headers["Content-Disposition"]
    for bad in TRAVERSAL:
        got = client.get("/files/" + bad)
        assert got.status_code == 404, bad
        assert (
            b"SECRET" not in got.data and b"root:" not in got.data and b"Traceback" not in got.data
        )
    assert client.get("/report.html?run=../../etc").status_code == 404
    assert client.get("/report.html").status_code == 404
    assert client.get("/report.html?run=" + quote(str(outside))).status_code == 404


def test_hostile_file_names_in_headers(tmp_path: Path) -> None:
    from hpudash.app import create_app

    from tests.dashboard.synth import synthetic_trace, write_chrome_json

    name = 'x"; filename=evil.exe; a="<b>.pt.trace.json'
    write_chrome_json(synthetic_trace(300), tmp_path / name)
    client = create_app(tmp_path).server.test_client()
    got = client.get("/files/" + quote(name))
    assert got.status_code == 200
    header = got.headers["Content-Disposition"]
    # a plain ASCII filename (no quote or separator survives) and the exact name, encoded
    found = re.fullmatch(
        r"attachment; filename=\"([A-Za-z0-9._-]+)\"; filename\*=UTF-8''(\S+)", header
    )
    assert found is not None, header
    assert found.group(1).endswith(".pt.trace.json") and unquote(found.group(2)) == name
    report = client.get("/report.html?run=" + quote(name))
    assert report.status_code == 200
    assert report.headers["Content-Disposition"] == 'attachment; filename="x_filename_evil-report.html"'  # fmt: skip
    assert download_name(catalog.scan(tmp_path)[0]).endswith("-report.html")


def test_a_name_that_is_not_utf8_is_listed_served_and_analysed(tmp_path: Path) -> None:
    """Issue 27: one such file made the runs list answer HTTP 500 for the whole tree."""
    from hpudash.app import create_app
    from hpudash.pages import runs

    from hpuprof.path_text import path_text

    sample = SAMPLE_TRACES / "cpu_torch_profiler" / "trace.pt.trace.json"
    odd = Path(os.fsdecode(os.fsencode(tmp_path) + b"/x\xff.pt.trace.json"))
    try:
        odd.write_bytes(sample.read_bytes())
    except (OSError, UnicodeEncodeError):
        pytest.skip("this file system refuses names that are not UTF-8")
    _touch(tmp_path / "plain.pt.trace.json", sample.read_bytes())
    store = DataStore(tmp_path, scan_ttl_s=0)  # with the disk cache: its keys hold the name
    rows = runs.run_rows(store, budget_s=120)
    assert [(r["run"], r["status"]) for r in rows] == [
        ("plain.pt.trace.json", "ok"),
        ("x\\xff.pt.trace.json", "ok"),
    ]
    assert rows[0]["events"] == rows[1]["events"] > 0
    orjson.dumps(rows)  # what Dash sends: valid UTF-8 only
    found = store.catalog.find("x\\xff.pt.trace.json")
    assert found is not None and found.path == odd
    client = create_app(tmp_path).server.test_client()
    got = client.get("/files/" + quote(path_text(odd.name)))
    assert got.status_code == 200 and got.data == sample.read_bytes()
    report = client.get("/report.html?run=" + quote("x\\xff.pt.trace.json"))
    assert report.status_code == 200 and b"<html" in report.data[:400].lower()
