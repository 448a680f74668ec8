"""`habana_frameworks.torch.utils.debug.logger` (emulated): the bridge's Python-side loggers,
writing through the PT_PYTHON module at the levels `enable_logging` sets."""

from typing import Any

from habana_frameworks.torch.utils import _debug_C


def format_args(args: Any) -> str:
    if args and isinstance(args[0], str):
        fmt, rest = args[0], args[1:]
        if "{}" in fmt:
            return fmt.format(*map(str, rest)) if rest else ""
        if "%" in fmt:
            return fmt % tuple(rest)
    return ", ".join(map(str, args))


class Logger:
    def __init__(self, type: str) -> None:
        self.type = type
        self.store_data = False
        self.data: list[str] = []

    def log(self, level: Any, args: Any) -> None:
        enabled = _debug_C.is_log_python_enabled(level)
        if enabled or self.store_data:
            message = f"[{self.type}] {format_args(args)}"
            if enabled:
                _debug_C.log_python(level, message)
            if self.store_data:
                self.data.append(message)

    def trace(self, *args: Any) -> None:
        self.log(_debug_C.log_level.trace, args)

    def debug(self, *args: Any) -> None:
        self.log(_debug_C.log_level.debug, args)

    def info(self, *args: Any) -> None:
        self.log(_debug_C.log_level.info, args)

    def warn(self, *args: Any) -> None:
        self.log(_debug_C.log_level.warn, args)

    def error(self, *args: Any) -> None:
        self.log(_debug_C.log_level.error, args)

    def critical(self, *args: Any) -> None:
        self.log(_debug_C.log_level.critical, args)

    def set_store_data(self, enable: bool) -> None:
        self.store_data = enable
        self.data = []


def get_log_level(logger_level: str) -> Any:
    try:
        return _debug_C.log_level[logger_level]
    except KeyError:
        raise AssertionError(f"unsupported logger_level = {logger_level}") from None


def enable_logging(logger_name: str, logger_level: str) -> None:
    _debug_C.enable_logging(logger_name, get_log_level(logger_level))
