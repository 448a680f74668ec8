"""torch's device-generic `torch.Stream("hpu")` / `torch.Event("hpu")` on the emulated card
(the bridge's `test_hpu_stream.py`; CPU torch has no stream guard for the hpu type)."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("mode", ["lazy", "eager"])
def test_generic_hpu_streams_and_events_are_the_emulators(hpu: Any, mode: str) -> None:
    import hpusim

    original_stream, original_event = torch.Stream, torch.Event
    hpu(mode)
    stream = torch.Stream("hpu")
    assert (stream.device_index, stream.device_type, stream.device.type) == (0, 15, "hpu")
    assert stream.stream_id != torch.hpu.current_stream().stream_id
    view = torch.hpu.Stream(stream_id=stream.stream_id)
    with torch.hpu.stream(view):
        assert torch.hpu.current_stream().stream_id == stream.stream_id
    start = torch.Event("hpu", enable_timing=True)
    end = torch.Event("hpu", enable_timing=True)
    start.record(stream)
    c = torch.randn(256, 256, device="hpu") @ torch.randn(256, 256, device="hpu")
    end.record()
    end.synchronize()
    assert start.query() and end.query() and start.event_id != end.event_id
    assert start.elapsed_time(end) > 0  # the modeled matmul lies between them
    assert c.shape == (256, 256)
    # other devices keep torch's own classes, which still pass isinstance checks
    cpu_stream = torch.Stream("cpu")
    assert type(cpu_stream) is original_stream and isinstance(cpu_stream, torch.Stream)
    assert isinstance(stream, original_stream) and isinstance(torch.Event("cpu"), torch.Event)
    hpusim.disable()
    assert (torch.Stream, torch.Event) == (original_stream, original_event)
    with pytest.raises(RuntimeError, match="not linked with support for hpu"):
        torch.Stream("hpu")


@pytest.mark.parametrize("sync", ["event", "stream", "device"])
def test_an_event_is_done_once_the_host_waited_for_it(hpu: Any, sync: str) -> None:
    """`query()` after a synchronize is True, also when the modeled device time lies ahead
    of this machine's clock (lazy mode: the graph's modeled run ends after the host's
    flush; `query` read this machine's clock only and a CI run saw False)."""
    hpu("lazy")
    a = torch.randn(64, 64, device="hpu")
    for _ in range(8):  # a first graph: its modeled compile puts the device ahead of the host
        a = a @ a
    event = torch.hpu.Event()
    event.record()
    waits = {
        "event": event.synchronize,
        "stream": torch.hpu.current_stream().synchronize,
        "device": torch.hpu.synchronize,
    }
    waits[sync]()
    assert event.query()
