"""The emulated Gaudi runtime (`hpusim`): drains its event sink in chunks while the run goes on.

The sink is written without locks by the thread that drives the emulated device, so it is
drained on that thread only: at `prof.step()`, at optimizer steps, at `profile(action)` exits
and at stop (see `CaptureSession.poll`). Device times in these traces are modeled
(`device_time: "modeled"`), host times projected (`timeline: "projected"`) or measured.

`hpusim` (which imports torch) is imported inside the methods: importing the backends costs a
run on another backend nothing.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from hpuprof.capture import compile_mode
from hpuprof.capture.backends.base import Backend, BackendContext
from hpuprof.errors import HpuprofError


class EmulatedBackend(Backend):
    """Reads the `hpusim` sink; the schedule toggles `sink.recording`."""

    name = "emulated"
    device_time = "modeled"

    def __init__(self) -> None:
        self._ctx: BackendContext | None = None
        self._sink: Any = None
        self._compile_ids: set[str] = set()

    def start(self, ctx: BackendContext) -> None:
        from hpusim.chrome_events import metadata_events  # hpusim: torch (see module doc)
        from hpusim.sink import get_sink

        self._ctx = ctx
        self._sink = get_sink()
        self._sink.drain()  # what ran before the profiler started is not in this profile
        self._sink.recording = True
        ctx.emit(metadata_events(ctx.pid))

    def set_recording(self, on: bool) -> None:
        if self._sink is not None:
            if not on:
                self.poll()
            self._sink.recording = on

    def poll(self) -> None:
        if self._sink is None or self._ctx is None or not len(self._sink):
            return
        import hpusim  # torch: only on this backend (module doc)

        with hpusim.host_overhead():  # the profiler's own work is not the script's host time
            self._poll()

    def _poll(self) -> None:
        assert self._sink is not None and self._ctx is not None
        from hpusim.chrome_events import to_chrome_events  # as above

        batch = self._sink.drain()
        if len(batch):
            try:
                events = to_chrome_events(batch, pid=self._ctx.pid, base_ns=self._ctx.base_ns)
            except (IndexError, KeyError, ValueError, TypeError) as error:
                raise HpuprofError(  # e.g. an exception left an event half-appended
                    f"{len(batch)} emulated events dropped: the sink is inconsistent ({error!r})"
                ) from None
            for ev in events:  # hpu_backend records its dynamo compiles itself
                if ev.get("cat") == "hpuprof":
                    cid = ev["args"].get("hpuprof.compile_id")
                    if cid is not None:
                        self._compile_ids.add(str(cid))
            self._ctx.emit(events)

    def drop_unstreamed(self) -> None:
        if self._sink is not None:
            self._sink.drain()  # swaps the column lists; a half-appended event goes with them

    def abandon(self) -> None:
        if self._sink is not None:
            self._sink.recording = False
            self._sink.drain()
        self._sink = None  # stop() and poll() do nothing from now on

    def dynamo_compile_ids(self) -> frozenset[str]:
        return frozenset(self._compile_ids)

    def stop(self) -> None:
        self.poll()
        if self._sink is not None:
            self._sink.recording = False

    def run_metadata(self) -> dict[str, Any]:
        import hpusim  # torch: only on this backend (module doc)

        meta = dict(hpusim.run_metadata())
        meta.pop("backend", None)
        if compile_mode.is_installed():
            meta.update(compile_mode.run_metadata())
        return meta

    def project_epoch_ns(self, epoch_ns: int, end: bool = False) -> int:
        import hpusim  # torch: only on this backend (module doc)

        projected: int = hpusim.project_epoch_ns(epoch_ns, end=end)
        return projected

    def metrics(self) -> list[dict[str, Any]] | None:
        import hpusim  # torch: only on this backend (module doc)

        snap: Any = hpusim.metrics_snapshot()
        if isinstance(snap, list):
            return snap
        now = dt.datetime.now().isoformat()
        if isinstance(snap, dict) and isinstance(snap.get("records"), list):
            return list(snap["records"])  # hpusim: {"records": [...dump array...], "by_name"}
        return [
            {
                "metric_name": name,
                "triggered_by": "user",
                "generated_on": now,
                "statistics": stats if isinstance(stats, dict) else dict(stats),
            }
            for name, stats in dict(snap).items()
        ]
