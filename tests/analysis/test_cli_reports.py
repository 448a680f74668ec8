"""`hpuprof analyze` and `hpuprof diff` end to end: formats, -o suffixes, filters, bad input."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from hpuprof.cli.main import main
from tests.cli.usage_text import usage_error

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "sample_traces"
LAZY = SAMPLES / "emulated_lazy" / "traces"
GAUDI3 = SAMPLES / "emulated_gaudi3_lazy" / "traces"
TWO = SAMPLES / "emulated_two_ranks" / "traces"

pytestmark = pytest.mark.skipif(not LAZY.is_dir(), reason="sample_traces/ not present")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_text_to_stdout_findings_first(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "analyze", str(LAZY))
    assert code == 0, err
    assert out.index("Findings") < out.index("Temporal breakdown")
    assert "MODELED" in out


def test_json_keys_the_dashboard_relies_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.json"
    code, _, err = _run(capsys, "analyze", str(LAZY), "-o", str(out))
    assert code == 0, err
    data = orjson.loads(out.read_bytes())
    assert data["schema"] == "hpuprof.report/1"
    assert data["source"] and isinstance(data["findings"], list)
    [t] = data["bottleneck"]["temporal"]
    assert {"rank", "idle_pct", "compute_pct", "non_compute_pct"} <= set(t)
    dyn = data["dynamicity"]
    assert dyn["compilations"] > dyn["recompilations"] > 0
    assert any(c["kind"] == "shape" for g in dyn["by_graph"] for c in g["causes"])
    assert all({"op", "count", "host_time_ns"} <= set(o) for o in data["fallback"]["ops"])
    assert all(
        {"dtype", "device_time_ns", "flops"} <= set(d) for d in data["precision"]["by_dtype"]
    )
    assert "graphs" in data


@pytest.mark.parametrize(
    ("suffix", "check"),
    [
        (".md", lambda b: b.startswith(b"#") and b"|" in b),
        (".html", lambda b: b.lstrip().lower().startswith(b"<!doctype html") and b"plotly" in b),
        (".txt", lambda b: b"Findings" in b and b"\x1b[" not in b),
        (".csv", lambda b: b"# temporal.csv\nrank," in b),
    ],
)
def test_output_format_follows_suffix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str, check: object
) -> None:
    out = tmp_path / f"report{suffix}"
    code, stdout, err = _run(capsys, "analyze", str(LAZY), "-o", str(out))
    assert code == 0, err
    assert stdout == ""
    assert callable(check) and check(out.read_bytes())


def test_report_output_replaces_the_file_and_leaves_no_temporary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.md"
    out.write_text("an older report")
    code, _, err = _run(capsys, "analyze", str(LAZY), "-o", str(out))
    assert code == 0, err
    assert out.read_text().startswith("# hpuprof report")
    assert [p.name for p in tmp_path.iterdir()] == ["r.md"]


def test_csv_directory_one_file_per_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "tables"
    code, _, err = _run(capsys, "analyze", str(LAZY), "--format", "csv", "-o", str(out))
    assert code == 0, err
    names = {p.stem for p in out.glob("*.csv")}
    assert len(names) >= 5
    assert any("temporal" in n for n in names)


def test_rank_and_steps_filters(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "analyze", str(TWO), "--format", "json", "--rank", "1")
    assert code == 0, err
    data = orjson.loads(out)
    assert data["meta"]["ranks"] == [1]
    assert [t["rank"] for t in data["bottleneck"]["temporal"]] == [1]
    code, out, err = _run(capsys, "analyze", str(LAZY), "-f", "json", "--steps", "2:3")
    assert code == 0, err
    steps = {s["step"] for s in orjson.loads(out)["bottleneck"]["steps"]}
    assert steps == {2, 3}


def test_report_subset(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "analyze", str(LAZY), "-f", "json", "-r", "fallback,graphs")
    assert code == 0
    data = orjson.loads(out)
    assert "fallback" in data and "graphs" in data and "bottleneck" not in data


def _substituted(argv: list[str], needle: str, tmp_path: Path) -> tuple[list[str], str]:
    bad = tmp_path / "broken.json"
    bad.write_text('{"traceEvents": 5}')
    subst = {
        "{LAZY}": str(LAZY),
        "{GAUDI3}": str(GAUDI3),
        "{tmp}": str(tmp_path),
        "{bad}": str(bad),
    }
    args = list(argv)
    for k, v in subst.items():
        args = [a.replace(k, v) for a in args]
        needle = needle.replace(k, v)
    return args, needle


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["analyze", "/nonexistent/trace.json"], "no such file"),
        (["analyze", "{LAZY}", "--report", "nope"], "unknown report"),
        (["analyze", "{LAZY}", "--steps", "x:y"], "--steps"),
        (["analyze", "{LAZY}", "-o", "{tmp}/r.docx"], "format"),
        (["analyze", "{LAZY}", "--format", "pdf"], "unknown format"),
        (["diff", "{LAZY}", "{GAUDI3}", "-f", "pdf"], "unknown format"),
        (["analyze", "{LAZY}", "--report", "compare"], "hpuprof diff"),
    ],
)
def test_usage_mistake_gets_the_usage_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    args, needle = _substituted(argv, needle, tmp_path)
    code, out, err = _run(capsys, *args)
    assert code == 2
    assert needle in usage_error(err, args[0])
    assert out == ""


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["analyze", "{bad}"], "{bad}"),
        (["analyze", "{LAZY}", "-o", "{bad}/r.json"], "cannot write {bad}/r.json"),
        (["analyze", "{LAZY}", "-f", "csv", "-o", "{bad}/tables"], "cannot write {bad}/tables"),
    ],
)
def test_bad_input_is_one_line_and_an_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    args, needle = _substituted(argv, needle, tmp_path)
    code, out, err = _run(capsys, *args)
    assert code != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert needle in lines[0]
    assert "Traceback" not in err + out


def test_diff_renders_through_the_report_renderers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, "diff", str(LAZY), str(GAUDI3))
    assert code == 0, err
    assert "Mean step time" in out and "Per-op changes" in out
    js = tmp_path / "d.json"
    assert main(["diff", str(LAZY), str(GAUDI3), "-o", str(js)]) == 0
    data = orjson.loads(js.read_bytes())
    assert data["schema"] == "hpuprof.report/1"
    assert data["meta"]["reports"] == ["compare"]
    names = {o["name"] for o in data["compare"]["ops"]}
    assert "aten::addmm" in names
    # same workload, different device profile: identical host op counts
    ops = data["compare"]["ops"]
    assert all(o["a_calls"] == o["b_calls"] for o in ops if o["name"].startswith("aten::"))
    md = tmp_path / "d.md"
    assert main(["diff", str(LAZY), str(GAUDI3), "-o", str(md)]) == 0
    text = md.read_text()
    assert text.startswith("# hpuprof report") and "## Per-op changes" in text
    html = tmp_path / "d.html"
    assert main(["diff", str(LAZY), str(GAUDI3), "-o", str(html)]) == 0
    assert "Per-op changes" in html.read_text()
    csv_out = tmp_path / "d.csv"
    assert main(["diff", str(LAZY), str(GAUDI3), "-o", str(csv_out)]) == 0
    assert "# compare_ops.csv\nname," in csv_out.read_text()


def test_subprocess_bad_trace_exit_code_and_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text("not json at all")
    done = subprocess.run(
        [sys.executable, "-c", "from hpuprof.cli.main import run; run()", "analyze", str(bad)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert str(bad) in done.stderr
    ok = subprocess.run(
        [
            sys.executable,
            "-c",
            "from hpuprof.cli.main import run; run()",
            "analyze",
            str(LAZY),
            "-f",
            "json",
        ],
        capture_output=True,
        timeout=120,
        cwd=REPO,
    )
    assert ok.returncode == 0, ok.stderr
    assert orjson.loads(ok.stdout)["schema"] == "hpuprof.report/1"
