"""`habana_frameworks.torch.utils.internal` (emulated): `is_lazy`, `lazy_only`, `Timer`."""

import logging
from time import perf_counter
from typing import Any

from hpusim.hpex import is_lazy

logger = logging.getLogger(__name__)


def lazy_only(func: Any, observe: Any = None) -> Any:
    """`func` in lazy mode; a no-op outside it (logged once, as the bridge). `observe` (the
    emulator's, not the bridge's): called instead outside lazy mode, to note the call for the
    profiler without any effect the script can see."""

    def lazy_wrapper(*args: Any, **kwargs: Any) -> None:
        if is_lazy():
            func(*args, **kwargs)
        elif observe is not None:
            observe(*args, **kwargs)

    if not is_lazy():
        logger.warning(
            f"Calling {func.__name__} function does not have any effect. It's lazy mode only "
            "functionality. (warning logged once)"
        )
    return lazy_wrapper


class Timer:
    """`with Timer() as t: ...; t.elapsed` (seconds)."""

    def __init__(self) -> None:
        self.start_t: float | None = None
        self.end_t: float | None = None

    def __enter__(self) -> "Timer":
        self.start_t = perf_counter()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.end_t = perf_counter()

    @property
    def elapsed(self) -> float:
        assert self.start_t is not None and self.end_t is not None
        return self.end_t - self.start_t


__all__ = ["Timer", "is_lazy", "lazy_only"]
