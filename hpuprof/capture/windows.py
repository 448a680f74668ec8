"""When a recording window ends: every `window_s` seconds (the first windows shorter) or every
`window_steps` steps.

A backend that holds its recording in memory (torch.profiler) loses it all to a `kill -9`; cut
into windows streamed as they end, a killed run loses at most its last window. The first window
lasts `FIRST_WINDOW_S`, each next one twice as long up to `window_s` (1, 2, 4, 8, 10, 10... s),
so a run killed soon after it started loses little too. `WindowPolicy` only answers "is a
window due?"; the capture session keeps the clocks and ends the windows (`session.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

from hpuprof.errors import UsageError

DEFAULT_WINDOW_S = 10.0
"""A recording window is streamed to disk at least this often (seconds) by default."""
FIRST_WINDOW_S = 1.0
"""The first window's length; each next one is twice as long, up to `window_s`."""


@dataclass(frozen=True)
class WindowPolicy:
    """How long a recording window lasts.

    Args:
        seconds: the longest window (`window_s`), None: by time never (only at stop and at the
            schedule's windows).
        steps: also end a window after this many steps (`window_steps`), None: by time only.
    """

    seconds: float | None = DEFAULT_WINDOW_S
    steps: int | None = None

    def __post_init__(self) -> None:
        if self.seconds is not None and not self.seconds > 0:
            raise UsageError(f"window_s must be > 0 seconds or None, got {self.seconds!r}")
        if self.steps is not None and self.steps < 1:
            raise UsageError(f"window_steps must be >= 1 or None, got {self.steps!r}")

    def length_ns(self, windows_done: int) -> int | None:
        """The length of the window that follows `windows_done` windows (None: no time limit)."""
        if self.seconds is None:
            return None
        first = min(FIRST_WINDOW_S, self.seconds)
        return int(min(self.seconds, first * 2 ** min(windows_done, 30)) * 1e9)

    def due(self, windows_done: int, steps_in_window: int, ns_in_window: int) -> bool:
        """At a step boundary or a poll: the current window has lasted long enough."""
        if self.steps is not None and steps_in_window >= self.steps:
            return True
        length = self.length_ns(windows_done)
        return length is not None and ns_in_window >= length

    def quiet_too_long(self, windows_done: int, quiet_ns: int) -> bool:
        """For the timer: no window ended and no step came for a whole window's length."""
        length = self.length_ns(windows_done)
        return length is not None and quiet_ns >= length
