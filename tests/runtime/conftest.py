"""Fixtures for the emulated runtime: enable hpusim for one test, always disable after."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

torch = pytest.importorskip("torch")

EnableFn = Callable[..., Any]


@pytest.fixture
def hpu(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Iterator[EnableFn]:
    """`hpu(mode="lazy", **env)`: set bridge env vars, enable the emulator, drain old events.

    Logs go to a temp HABANA_LOGS; the emulator is disabled at teardown even on failure."""
    import hpusim
    from hpusim.sink import get_sink

    monkeypatch.setenv("HABANA_LOGS", str(tmp_path / "habana_logs"))
    for var in ("RANK", "OMPI_COMM_WORLD_RANK", "PT_HPU_METRICS_FILE", "PT_HPU_LAZY_MODE"):
        monkeypatch.delenv(var, raising=False)

    def enable(mode: str | None = "eager", device: str = "gaudi2", **env: str) -> Any:
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        hpusim.disable()
        hpusim.enable(mode=mode, device=device)
        get_sink().recording = True
        get_sink().drain()
        return hpusim

    yield enable
    hpusim.disable()
    get_sink().recording = True
    get_sink().drain()


def runtime_events(batch: Any, hpu_event: str) -> list[dict[str, Any]]:
    """The payload args (plus name) of each runtime event of one type in a drained batch."""
    from hpusim.sink import HPU_EVENTS, KIND_RUNTIME

    out = []
    for i in range(len(batch)):
        if batch.kind[i] == KIND_RUNTIME and HPU_EVENTS[batch.hpu_event[i]] == hpu_event:
            p = batch.payload[i]
            args = dict(batch.payloads[p]) if p >= 0 else {}
            args["name"] = batch.strings[batch.name[i]]
            out.append(args)
    return out
