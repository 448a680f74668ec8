"""Bridge-style log lines (CPU fallback per occurrence and the exit summary).

Where the bridge writes them: stdout with `ENABLE_CONSOLE=true`, else
`$HABANA_LOGS/pytorch_log.txt` (default `~/.habana_logs`). The line prefix imitates the
bridge's `[time][LOGGER][level]` layout; the message texts are the bridge's (gaudi.md 4.3).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Mapping
from datetime import datetime

_BANNER_FLAGS = (
    ("PT_HPU_LAZY_MODE", None),
    ("PT_RECIPE_CACHE_PATH", ""),
    ("PT_CACHE_FOLDER_DELETE", "0"),
    ("PT_HPU_RECIPE_CACHE_CONFIG", ""),
    ("PT_HPU_MAX_COMPOUND_OP_SIZE", "9223372036854775807"),
    ("PT_HPU_LAZY_ACC_PAR_MODE", "1"),
    ("PT_HPU_ENABLE_REFINE_DYNAMIC_SHAPES", "0"),
    ("PT_HPU_EAGER_PIPELINE_ENABLE", "1"),
    ("PT_HPU_EAGER_COLLECTIVE_PIPELINE_ENABLE", "1"),
)


def banner(lazy: bool, env: Mapping[str, str] | None = None) -> str:
    """The bridge's startup banner (gaudi.md 4.3), printed once per process on rank 0."""
    e = os.environ if env is None else env
    lines = []
    if e.get("HB_BUILD_VER"):
        lines += ["=====HABANA SW VERSION=====", f" HB_BUILD_VER = {e['HB_BUILD_VER']}"]
    lines.append(
        "============================= HABANA PT BRIDGE CONFIGURATION =========================== "
    )
    for name, default in _BANNER_FLAGS:
        value = ("1" if lazy else "0") if default is None else e.get(name, default)
        lines.append(f" {name} = {value}")
    if "PT_HPU_KEEP_INPUT_MUTATIONS" in e:
        lines.append(f" PT_HPU_KEEP_INPUT_MUTATIONS = {e['PT_HPU_KEEP_INPUT_MUTATIONS']}")
    lines += [
        "---------------------------: System Configuration :---------------------------",
        f"Num CPU Cores : {os.cpu_count()}",
        f"CPU RAM       : {_ram_kb()} KB",
        "------------------------------------------------------------------------------",
    ]
    return "\n".join(lines) + "\n"


def _ram_kb() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


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

    def step_marker(self, reason: str) -> None:
        """`step marker due to <reason>` (PT_IRGRAPH debug), one per lazy flush."""
        self.line("PT_IRGRAPH", "debug", f"step marker due to {reason}")

    def fallback_summary(self, counts: dict[str, int]) -> None:
        """The exit summary: `CPU Fallback stats:` then `<count>\\t<op>`, most frequent first."""
        if not counts:
            return
        rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        body = "\n".join(f"{n}\t{op}" for op, n in rows)
        self.line("PT_FALLBACK", "critical", f"CPU Fallback stats:\n{body}")
