"""The Synapse logger reader: the real excerpt, brackets or none, B/E pairs per thread, bad input."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

import hpuprof
from hpuprof.errors import TraceFormatError
from hpuprof.trace.formats import KINETO_JSON, SYNAPSE_LOG, format_of
from hpuprof.trace.synapse_log import FORMAT, METADATA, is_synapse_log

EXAMPLE = Path(__file__).parents[2] / ".." / "shared" / "traces" / "gaudi"
EXAMPLE = EXAMPLE / "synapse-logger-example.json"
needs_example = pytest.mark.skipif(not EXAMPLE.exists(), reason="../shared is not here")


def _call(name: str, ph: str, ts: int, tid: int = 1, **args: Any) -> dict[str, Any]:
    event: dict[str, Any] = {"tid": tid, "pid": 7, "ts": ts, "name": f"call:{name}", "ph": ph}
    if ph == "B":
        event["func"] = f"synStatus {name}(synStreamHandle)"
        event["args"] = args
    else:
        event["args"] = {"status": 0}
    return event


def _scope(name: str, ph: str, ts: int, tid: int = 1) -> dict[str, Any]:
    return {"tid": tid, "pid": 7, "ts": ts, "name": name, "cat": "bridge", "ph": ph}


EPOCH_US = 1_661_619_207_988_000
EVENTS = [
    _scope("LaunchSyncTensorsGraph", "B", EPOCH_US),
    _call("synLaunchWithExternalEvents", "B", EPOCH_US + 2, pRecipeHandle="0xa", streamName="S"),
    _call("synEventSynchronize", "B", EPOCH_US + 3, tid=2, streamName="S"),  # another thread
    _call("synLaunchWithExternalEvents", "E", EPOCH_US + 9),
    _call("synEventSynchronize", "E", EPOCH_US + 20, tid=2),
    _scope("LaunchSyncTensorsGraph", "E", EPOCH_US + 30),
]


def _lines(events: list[dict[str, Any]]) -> str:
    """The logger's own layout: `[`, then one event per line, each followed by a comma."""
    return "[\n" + "".join(json.dumps(e) + ",\n" for e in events)


def _slices(path: Path) -> dict[str, tuple[int, int, str]]:
    trace = hpuprof.load(path, cache=False)
    assert trace.format == FORMAT
    ev = trace.events
    return {
        str(n): (int(ts), int(d), str(tid))
        for n, ts, d, tid in zip(ev["name"], ev["ts_ns"], ev["dur_ns"], ev["tid"], strict=True)
    }


def test_pairs_per_thread_with_or_without_brackets(tmp_path: Path) -> None:
    want = {
        "LaunchSyncTensorsGraph": (EPOCH_US * 1000, 30_000, "1"),
        "call:synLaunchWithExternalEvents": (EPOCH_US * 1000 + 2000, 7000, "1"),
        "call:synEventSynchronize": (EPOCH_US * 1000 + 3000, 17_000, "2"),
    }
    layouts = {
        "logger.json": _lines(EVENTS),  # `[` never closed, trailing comma
        "closed.json": json.dumps(EVENTS),
        "bare.json": ",\n".join(json.dumps(e, indent=1) for e in EVENTS),  # no brackets
    }
    for name, text in layouts.items():
        (tmp_path / name).write_text(text)
        assert format_of(tmp_path / name) is SYNAPSE_LOG, name
        assert _slices(tmp_path / name) == want, name
    (tmp_path / "log.json.gz").write_bytes(gzip.compress(_lines(EVENTS).encode()))
    assert _slices(tmp_path / "log.json.gz") == want


def test_call_result_and_signature(tmp_path: Path) -> None:
    path = tmp_path / "log.json"
    path.write_text(_lines(EVENTS))
    trace = hpuprof.load(path, cache=False)
    row = int(trace.events.index[trace.events["name"] == "call:synLaunchWithExternalEvents"][0])
    assert trace.args(row) == {"pRecipeHandle": "0xa", "streamName": "S", "result": {"status": 0}}
    stats = trace.metadata[0][METADATA]
    assert stats["signatures"]["call:synEventSynchronize"] == (
        "synStatus synEventSynchronize(synStreamHandle)"
    )
    assert (stats["unmatched_begins"], stats["unmatched_ends"]) == (0, 0)
    assert set(trace.events["kind"].astype(str)) == {"runtime"}  # the Synapse Logger process


def test_unmatched_begins_and_ends_are_counted_not_invented(tmp_path: Path) -> None:
    events = [
        _scope("StartedBefore", "E", EPOCH_US + 1),  # its B is before the file
        _scope("Inner", "B", EPOCH_US + 2),
        _scope("Inner", "E", EPOCH_US + 4),
        _scope("NeverEnds", "B", EPOCH_US + 5),
        _call("synMemCopyAsync", "B", EPOCH_US + 6),
        _call("synMemCopyAsync", "E", EPOCH_US + 8),
    ]
    path = tmp_path / "log.json"
    path.write_text(_lines(events))
    trace = hpuprof.load(path, cache=False)
    assert sorted(trace.events["name"].astype(str)) == ["Inner", "call:synMemCopyAsync"]
    stats = trace.metadata[0][METADATA]
    assert (stats["unmatched_begins"], stats["unmatched_ends"]) == (1, 1)


@needs_example
def test_real_excerpt_cut_at_both_ends() -> None:
    with pytest.warns(UserWarning, match=r"sound events begin at byte 526.*end at byte 55567"):
        trace = hpuprof.load(EXAMPLE, cache=False)
    ev = trace.events
    stats = trace.metadata[0][METADATA]
    assert stats["events"] == 439  # 441 objects less the two cut off
    assert len(ev) == (439 - stats["unmatched_begins"] - stats["unmatched_ends"]) // 2
    names = ev["name"].astype(str)
    assert (names == "call:synLaunchWithExternalEvents").sum() == 3  # the first B is cut off
    assert (names == "call:synMemCopyAsync").sum() == 5
    # the helper threads only wait on events
    helpers = ev[ev["tid"].astype(str) != "34566"]
    assert set(helpers["name"].astype(str)) == {"call:synEventSynchronize"}
    # a launch lies inside the bridge's LaunchSyncTensorsGraph scope on the same thread
    launch = ev[names == "call:synLaunchWithExternalEvents"].iloc[0]
    chain = []
    parent = int(launch["parent"])
    while parent >= 0:
        chain.append(str(ev["name"].iloc[parent]))
        parent = int(ev["parent"].iloc[parent])
    assert "LaunchSyncTensorsGraph" in chain


def test_corrupt_event_between_sound_ones_names_line_and_byte(tmp_path: Path) -> None:
    text = _lines(EVENTS)
    broken = text.replace('"ph": "E", "args"', '"ph": "E" "args"', 1)
    path = tmp_path / "log.json"
    path.write_text(broken)
    with pytest.raises(TraceFormatError, match=r"at line 5 \(byte \d+\): a JSON object per event"):
        hpuprof.load(path, cache=False)
    complete_but_wrong = text.rstrip(",\n") + "}\n"  # one brace too many: not a cut
    path.write_text(complete_but_wrong)
    with pytest.raises(TraceFormatError, match=r"at line 7 \(byte \d+\): a JSON object"):
        hpuprof.load(path, cache=False)


def test_event_without_a_time_is_refused(tmp_path: Path) -> None:
    events = [dict(e) for e in EVENTS]
    del events[2]["ts"]
    path = tmp_path / "log.json"
    path.write_text(_lines(events))
    with pytest.raises(TraceFormatError, match=r"line 4 .*'ph' and 'ts'.*`ts`"):
        hpuprof.load(path, cache=False)


def test_no_events(tmp_path: Path) -> None:
    path = tmp_path / "log.json"
    path.write_text('[\n{"name": "call:synInitialize", "ph": "B", "ts": 1, "tid": 1, "pid"')
    with pytest.raises(TraceFormatError, match=r"log.json at line 2 \(byte 68\): .*truncated"):
        hpuprof.load(path, cache=False)


def test_a_kineto_export_of_it_is_not_claimed(tmp_path: Path) -> None:
    path = tmp_path / "log.json"
    path.write_text(_lines(EVENTS))
    out = tmp_path / "export.json"
    KINETO_JSON.write(hpuprof.load(path, cache=False), out)
    assert format_of(out) is KINETO_JSON
    assert len(hpuprof.load(out, cache=False).events) == 3
    assert is_synapse_log(_lines(EVENTS).encode()[:4096])
    assert not is_synapse_log(b'[{"name": "aten::mm", "ph": "X", "ts": 1}]')


def test_info_and_convert(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from hpuprof.cli.main import main

    path = tmp_path / "log.json"
    path.write_text(_lines(EVENTS))
    assert main(["info", str(path)]) == 0
    assert f"format:      {FORMAT}" in capsys.readouterr().out
    for target in ("out.perfetto-trace", "out.json"):
        assert main(["convert", str(path), str(tmp_path / target)]) == 0
        back = hpuprof.load(tmp_path / target, cache=False)
        assert sorted(back.events["name"].astype(str)) == sorted(
            [
                "LaunchSyncTensorsGraph",
                "call:synLaunchWithExternalEvents",
                "call:synEventSynchronize",
            ]
        )
    bad = tmp_path / "bad.json"
    bad.write_text(_lines(EVENTS).replace('"ph": "E", "args"', '"ph": "E" "args"', 1))
    assert main(["info", str(bad)]) == 2  # one line, no traceback
    assert "line 5" in capsys.readouterr().err
