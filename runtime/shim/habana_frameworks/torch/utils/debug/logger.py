"""`habana_frameworks.torch.utils.debug.logger` (emulated): Python logging helpers."""

import logging
from typing import Any

_LEVELS = {0: logging.DEBUG, 1: logging.DEBUG, 2: logging.INFO, 3: logging.WARNING, 4: logging.ERROR, 5: logging.CRITICAL}


def format_args(args: Any) -> str:
    return ", ".join(str(a) for a in args) if isinstance(args, (list, tuple)) else str(args)


class Logger:
    """A named logger that prefixes its messages like the bridge's Python logger."""

    def __init__(self, name: str) -> None:
        self.logger = logging.getLogger(name)

    def debug(self, *args: Any) -> None:
        self.logger.debug(format_args(args))

    def info(self, *args: Any) -> None:
        self.logger.info(format_args(args))

    def warn(self, *args: Any) -> None:
        self.logger.warning(format_args(args))

    warning = warn

    def error(self, *args: Any) -> None:
        self.logger.error(format_args(args))


def get_log_level(logger_level: Any) -> int:
    if isinstance(logger_level, str) and logger_level.isdigit():
        logger_level = int(logger_level)
    if isinstance(logger_level, int):
        return _LEVELS.get(logger_level, logging.WARNING)
    return int(getattr(logging, str(logger_level).upper(), logging.WARNING))


def enable_logging(logger_name: str, logger_level: Any) -> None:
    logging.getLogger(logger_name).setLevel(get_log_level(logger_level))
