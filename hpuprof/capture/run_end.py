"""How a run ended: the `end_state` vocabulary of `run.json`, and "killed" found on reading.

Each rank writes its own ending into `run.json` under `ends` (keyed by rank), and the run's
summary `end_state` / `end_detail` (the worst of the ranks) beside it:

    "end_state": "exception",                     one of END_STATES
    "end_detail": "rank 0: ValueError: boom",     one line for people
    "ends": {"0": {"state": "exception", "exception": "ValueError", "message": "boom",
                   "signal": null, "exit_code": null, "time": "2025-...+00:00"}}

States:
    running    the process has not finished (yet): `run.json` says so from the start
    completed  the profiled code ran to its end (exit code 0 under `hpuprof record`)
    failed     the script exited with a non-zero exit code (`exit_code`)
    exception  an exception ended the profiled code (`exception` type, `message`)
    signal     SIGINT / SIGTERM / SIGHUP ended it; the run was written first (`signal`)
    killed     found on reading: `run.json` still says running but the process is gone
               (SIGKILL, `os._exit`, OOM killer, power loss); the trace streamed so far is
               kept in the `.incomplete.json` file `traces` names
"""

from __future__ import annotations

import dataclasses
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from hpuprof.trace.leftovers import pid_alive

EndState = Literal["running", "completed", "failed", "exception", "signal", "killed"]
END_STATES: tuple[EndState, ...] = (
    "running",
    "completed",
    "failed",
    "exception",
    "signal",
    "killed",
)
_SEVERITY: dict[str, int] = {
    "completed": 0,
    "failed": 1,
    "exception": 2,
    "signal": 3,
    "killed": 4,
    "running": 5,
}


@dataclass(frozen=True)
class RunEnd:
    """How one rank (or, summarized, a whole run) ended.

    Args:
        state: one of `END_STATES`.
        exception: the exception type's name (state "exception", or a signal that surfaced
            as KeyboardInterrupt / SystemExit).
        message: the exception's message, first line, shortened.
        signal: the signal's name, e.g. "SIGTERM" (state "signal").
        exit_code: the script's exit code when known (`hpuprof record`).
        time: ISO time the ending was recorded ("" while running or when found killed).
        note: what a reader found (e.g. "process 1234 is gone").
        rank: in a run's summary of several ranks, the rank this ending is from.
    """

    state: EndState
    exception: str | None = None
    message: str | None = None
    signal: str | None = None
    exit_code: int | None = None
    time: str = ""
    note: str = field(default="", compare=False)
    rank: str | None = field(default=None, compare=False)

    @property
    def summary(self) -> str:
        """The state and its detail in one line: "exception (ValueError: boom)", "completed"."""
        return f"{self.state} ({self.detail})" if self.detail else self.state

    @property
    def detail(self) -> str:
        """One line for people: "ValueError: boom", "SIGTERM", "exit code 3", ..."""
        text = self._detail()
        return f"rank {self.rank}: {text}" if self.rank is not None and text else text

    def _detail(self) -> str:
        if self.state == "exception":
            text = self.exception or "exception"
            return f"{text}: {self.message}" if self.message else text
        if self.state == "signal":
            return self.signal or "signal"
        if self.state == "failed":
            return f"exit code {self.exit_code}"
        if self.state == "killed":
            return self.note or "the process ended without finishing the run"
        if self.state == "running":
            return self.note
        return "" if self.exit_code in (None, 0) else f"exit code {self.exit_code}"

    @property
    def legacy_status(self) -> str:
        """The free-text `status` older readers of `run.json` know."""
        return {
            "completed": "complete",
            "failed": f"failed: exit code {self.exit_code}",
            "exception": f"error: {self.exception}",
            "signal": f"interrupted: {self.signal}",
            "killed": "killed",
            "running": "running",
        }[self.state]

    def to_json(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "exception": self.exception,
            "message": self.message,
            "signal": self.signal,
            "exit_code": self.exit_code,
            "time": self.time,
        }

    @classmethod
    def from_json(cls, data: Any) -> RunEnd:
        """A rank's `ends` entry; anything unreadable is "running" (and then checked)."""
        if not isinstance(data, Mapping):
            return cls("running")
        state = data.get("state")
        code = data.get("exit_code")
        return cls(
            state=state if state in END_STATES else "running",
            exception=_str_or_none(data.get("exception")),
            message=_str_or_none(data.get("message")),
            signal=_str_or_none(data.get("signal")),
            exit_code=code if isinstance(code, int) and not isinstance(code, bool) else None,
            time=str(data.get("time") or ""),
        )


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def short_message(error: BaseException, limit: int = 200) -> str:
    """An exception's message on one line, at most `limit` characters."""
    text = " ".join(str(error).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def from_exception(error: BaseException, *, signal_seen: str | None = None) -> RunEnd:
    """The ending an exception that left the profiled code means.

    Args:
        error: the exception.
        signal_seen: a signal received before it (a KeyboardInterrupt or SystemExit after a
            signal is the signal's doing, not the program's; a KeyboardInterrupt is taken
            for SIGINT's).
    """
    code = exit_code_of(error) if isinstance(error, SystemExit) else None
    if isinstance(error, KeyboardInterrupt):  # Python's SIGINT handler raises it
        signal_seen = signal_seen or "SIGINT"
    if signal_seen is not None and isinstance(error, KeyboardInterrupt | SystemExit):
        return RunEnd("signal", exception=type(error).__name__, signal=signal_seen, exit_code=code)
    if code is not None:
        return from_exit_code(code)
    return RunEnd("exception", exception=type(error).__name__, message=short_message(error))


def exit_code_of(done: SystemExit) -> int:
    """The exit status `python` gives for `raise SystemExit(code)`."""
    code = done.code
    if code is None:
        return 0
    return int(code) if isinstance(code, int) else 1


def from_exit_code(code: int) -> RunEnd:
    """completed (0) or failed (anything else)."""
    return RunEnd("completed", exit_code=0) if code == 0 else RunEnd("failed", exit_code=code)


def final_end(end: RunEnd, signal_seen: str | None, time: str) -> RunEnd:
    """`end` as written at `time`: a run that ended after a signal says so (a script that
    caught KeyboardInterrupt and shut down cleanly was still stopped by SIGINT)."""
    if signal_seen is not None and end.state in ("completed", "failed"):
        end = RunEnd("signal", signal=signal_seen, exit_code=end.exit_code)
    return dataclasses.replace(end, time=time)


def summarize(ends: Mapping[str, RunEnd]) -> RunEnd:
    """The run's ending from its ranks': the most severe one (running while any runs)."""
    if not ends:
        return RunEnd("running")
    rank, worst = max(ends.items(), key=lambda kv: (_SEVERITY[kv[1].state], kv[0]))
    if len(ends) == 1 or worst.state in ("completed", "running"):
        return worst
    return dataclasses.replace(worst, rank=rank)


def rank_ends(manifest: Mapping[str, Any], *, host: str | None = None) -> dict[str, RunEnd]:
    """Each rank's ending, with "running" ranks whose process is gone turned into "killed".

    Args:
        manifest: `run.json` as read.
        host: this machine's name (default `socket.gethostname()`); a run recorded on another
            host stays "running" (its processes cannot be checked from here).
    """
    ends_raw = manifest.get("ends")
    ends = dict(ends_raw) if isinstance(ends_raw, Mapping) else {}
    ranks = manifest.get("ranks")
    for rank in ranks if isinstance(ranks, list) else []:
        ends.setdefault(str(rank), None)
    if not ends and manifest.get("hpuprof_run"):
        ends["0"] = None
    pids_raw = manifest.get("pids")
    pids = pids_raw if isinstance(pids_raw, Mapping) else {}
    here = socket.gethostname() if host is None else host
    started = manifest.get("start_ns")
    started_ns = started if isinstance(started, int) else 0
    out: dict[str, RunEnd] = {}
    for rank, raw in ends.items():
        end = RunEnd.from_json(raw) if raw is not None else _legacy_end(manifest)
        if end.state == "running":
            end = _check_running(pids.get(rank), manifest.get("host"), here, started_ns)
        out[str(rank)] = end
    return out


def _legacy_end(manifest: Mapping[str, Any]) -> RunEnd:
    """A manifest written before `ends` existed: read its free-text `status`."""
    status = str(manifest.get("status") or "running")
    if status.startswith("complete"):
        return RunEnd("completed")
    if status.startswith("interrupted: "):
        return RunEnd("signal", signal=status.split(": ", 1)[1])
    if status == "interrupted":  # `record` before end_state: the script exited 130
        return RunEnd("signal", signal="SIGINT", exit_code=130)
    failed = re.fullmatch(r"failed: exit code (-?\d+)", status)
    if failed:
        return RunEnd("failed", exit_code=int(failed.group(1)))
    if status.startswith("error: "):
        return RunEnd("exception", exception=status.split(": ", 1)[1])
    return RunEnd("running")


def _check_running(pid: Any, recorded_host: Any, here: str, started_ns: int) -> RunEnd:
    if recorded_host and recorded_host != here:
        return RunEnd("running", note=f"recorded on {recorded_host}: cannot check from here")
    if not isinstance(pid, int) or isinstance(pid, bool):
        return RunEnd("killed", note="no process id recorded and the run never finished")
    if pid_alive(pid, started_ns):
        return RunEnd("running", note=f"process {pid} is still running")
    return RunEnd("killed", note=f"process {pid} is gone and never finished the run")


def run_end(manifest: Mapping[str, Any], *, host: str | None = None) -> RunEnd:
    """The run's ending as a reader finds it now (see `rank_ends`, `summarize`)."""
    return summarize(rank_ends(manifest, host=host))
