"""torch.compile compile / recompile records as `hpuprof` trace events, on every backend.

Dynamo keeps a record per frame compilation (`torch._dynamo.utils.get_compilation_metrics()`:
compile id, start time, duration, graph size, and for a recompile the guard failure that caused
it, e.g. `tensor 'x' size mismatch at index 0. expected 3, actual 5`). We turn each new record
into a `cat: "hpuprof"`, `hpuprof.event: "dynamo_compile"` slice (docs/trace-keys.md) with the
cause classified like our runtime's (`shape`, `dtype`, `stride`, `guard`, `new_graph`), and
snapshot `torch._dynamo.utils.counters` (unique graphs, graph breaks) for the run manifest.
Nothing is imported unless the process already imported torch._dynamo (it compiled something).
"""

from __future__ import annotations

import re
import sys
import threading
from typing import Any

_CAUSES = (
    (re.compile(r"size mismatch|sizes? .*expected|ndim mismatch"), "shape"),
    (re.compile(r"stride mismatch"), "stride"),
    (re.compile(r"dtype mismatch"), "dtype"),
    (re.compile(r"storage_offset"), "storage_offset"),
    (re.compile(r"== \d|!= \d|\bint\b|float"), "scalar"),
)


def classify_cause(reason: str) -> str:
    """`schema` cause kind of a dynamo recompile reason text ('' = first compile)."""
    if not reason:
        return "new_graph"
    for pattern, kind in _CAUSES:
        if pattern.search(reason):
            return kind
    return "guard"


class DynamoRecorder:
    """Collects dynamo compilation records made since `start()` as Chrome-trace events."""

    def __init__(self, pid: int, base_ns: int) -> None:
        self.pid = pid
        self.base_ns = base_ns
        self.tid = threading.main_thread().native_id or 0
        self._seen: set[tuple[str, int]] = set()
        self._start_us = 0

    def start(self, start_ns: int) -> None:
        self._start_us = start_ns // 1000
        for record in self._records():  # compiles before start are not ours
            self._seen.add(self._key(record))

    @staticmethod
    def _records() -> list[Any]:
        utils = sys.modules.get("torch._dynamo.utils")
        getter = getattr(utils, "get_compilation_metrics", None)
        if getter is None:
            return []
        try:
            return list(getter())
        except Exception:  # dynamo internals move between releases: never break a run
            return []

    @staticmethod
    def _key(record: Any) -> tuple[str, int]:
        return (
            str(getattr(record, "compile_id", "")),
            int(getattr(record, "start_time_us", 0) or 0),
        )

    def collect(self, skip_ids: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
        """Events for the records not collected yet; `skip_ids`: compile ids recorded by the
        backend itself (the emulated `hpu_backend`)."""
        out: list[dict[str, Any]] = []
        for record in self._records():
            key = self._key(record)
            if key in self._seen or key[1] < self._start_us:
                continue
            self._seen.add(key)
            if key[0] not in skip_ids:
                out.append(self._event(record))
        return out

    def _event(self, r: Any) -> dict[str, Any]:
        reason = str(getattr(r, "recompile_reason", "") or "")
        fail = str(getattr(r, "fail_reason", "") or "")
        start_us = int(getattr(r, "start_time_us", 0) or 0)
        dur_us = int(getattr(r, "duration_us", 0) or 0)
        kind = classify_cause(reason)
        args: dict[str, Any] = {
            "hpuprof.event": "dynamo_compile",
            "hpuprof.mode": "compile",
            "hpuprof.graph_id": str(getattr(r, "compile_id", "")),
            "hpuprof.cause": {"kind": kind, "text": reason or "first compile of this frame"},
            "hpuprof.graph_ops": int(getattr(r, "graph_op_count", 0) or 0),
            "hpuprof.call_site": f"{getattr(r, 'co_filename', '')}:{getattr(r, 'co_firstlineno', '')}",
            "dynamo.frame": str(getattr(r, "co_name", "")),
            "dynamo.recompile": bool(reason),
            "dynamo.graph_breaks": int(getattr(r, "num_graph_breaks", 0) or 0),
        }
        if fail:
            args["dynamo.fail_reason"] = fail
        return {
            "ph": "X",
            "cat": "hpuprof",
            "name": "dynamo_recompile" if reason else "dynamo_compile",
            "pid": self.pid,
            "tid": self.tid,
            "ts": round((start_us * 1000 - self.base_ns) / 1000.0, 3),
            "dur": float(dur_us),
            "args": args,
        }


def dynamo_counters() -> dict[str, dict[str, int]]:
    """A copy of `torch._dynamo.utils.counters` ({} when dynamo was never used)."""
    utils = sys.modules.get("torch._dynamo.utils")
    counters = getattr(utils, "counters", None)
    if not counters:
        return {}
    try:
        return {
            str(group): {str(k): int(v) for k, v in values.items()}
            for group, values in counters.items()
            if values
        }
    except Exception:
        return {}
