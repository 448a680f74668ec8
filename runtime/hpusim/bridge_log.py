"""Bridge-style log lines (CPU fallback per occurrence and the exit summary).

Where the bridge writes them: stdout with `ENABLE_CONSOLE=true`, else
`$HABANA_LOGS/pytorch_log.txt` (default `~/.habana_logs`). The line prefix imitates the
bridge's `[time][LOGGER][level]` layout; the message texts are the bridge's (gaudi.md 4.3).
"""

from __future__ import annotations

import os
import sys
import threading
from datetime import datetime


class BridgeLog:
    """Appends bridge-format lines to the console or the pytorch log file."""

    def __init__(self, console: bool, log_dir: str) -> None:
        self.console = console
        self.log_dir = log_dir

    def line(self, logger: str, level: str, message: str) -> None:
        now = datetime.now().strftime("%H:%M:%S.%f")
        text = f"[{now}][{logger:<12}][{level}][tid:{threading.get_native_id():X}] {message}\n"
        if self.console:
            sys.stdout.write(text)
            sys.stdout.flush()
            return
        os.makedirs(self.log_dir, exist_ok=True)
        with open(os.path.join(self.log_dir, "pytorch_log.txt"), "a") as f:
            f.write(text)

    def fallback(self, op: str, self_token: str) -> None:
        """`CPU fallback digamma : self=HPUFloatType` at PT_FALLBACK debug."""
        self.line("PT_FALLBACK", "debug", f"CPU fallback {op} : self={self_token}")

    def fallback_summary(self, counts: dict[str, int]) -> None:
        """The exit summary: `CPU Fallback stats:` then `<count>\\t<op>`, most frequent first."""
        if not counts:
            return
        rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        body = "\n".join(f"{n}\t{op}" for op, n in rows)
        self.line("PT_FALLBACK", "critical", f"CPU Fallback stats:\n{body}")
