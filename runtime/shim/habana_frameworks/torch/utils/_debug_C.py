"""`habana_frameworks.torch.utils._debug_C` (emulated): the bridge's log-level controls
(hpusim.bridge_log keeps the PT modules' levels; Python-side messages go to PT_PYTHON)."""

from enum import IntEnum
from typing import Any

from hpusim import bridge_log as _log


class log_level(IntEnum):
    trace = 0
    debug = 1
    info = 2
    warn = 3
    error = 4
    critical = 5


def get_pt_logging_levels() -> dict[str, int]:
    return dict(_log.levels())


def enable_logging(logger_name: str, level: Any) -> None:
    _log.enable_logging(logger_name, int(level))


def is_log_python_enabled(level: Any) -> bool:
    return int(level) >= _log.levels()["PT_PYTHON"]


def log_python(level: Any, message: str) -> None:
    import os

    logs = os.environ.get("HABANA_LOGS") or os.path.expanduser("~/.habana_logs")
    console = os.environ.get("ENABLE_CONSOLE", "").lower() in ("1", "true", "yes", "on", "y", "t")
    _log.BridgeLog(console, logs).line("PT_PYTHON", log_level(int(level)).name, message)


def get_fallback_op_count() -> dict[str, int]:
    from hpusim import state

    rt = state.RT
    return dict(rt.log.fallback_counts) if rt is not None else {}
