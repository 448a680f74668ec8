"""Bridge-style log lines (CPU fallback per occurrence and the exit summary).

Where the bridge writes them: stdout with `ENABLE_CONSOLE=true`, else
`$HABANA_LOGS/pytorch_log.txt` (default `~/.habana_logs`). The line prefix imitates the
bridge's `[time][LOGGER][level]` layout; the message texts are the bridge's (gaudi.md 4.3).
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from collections.abc import Mapping
from datetime import datetime

from hpusim.env import place_on_cpu

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
        self.fallback_counts: dict[str, int] = {}
        """CPU fallbacks per op since the device was acquired (`count_fallback`)."""

    @functools.cached_property
    def placed_on_cpu(self) -> frozenset[str] | None:
        """The `PT_HPU_PLACE_ON_CPU` allow-list (None: every op may fall back), read from the
        environment at the first fallback and kept, as the bridge's HpuFallbackHelper
        singleton reads it when first used (`fallback_helper.h`), not at import: the bridge's
        own conftest sets `none` in pytest_configure, after its test_utils imported
        habana_frameworks.torch."""
        return place_on_cpu(os.environ.get("PT_HPU_PLACE_ON_CPU", ""))

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

    def count_fallback(self, op: str) -> None:
        """One more CPU fallback of `op` (the bridge's `fallback_helper` frequencies)."""
        counts = self.fallback_counts
        counts[op] = counts.get(op, 0) + 1

    def release_device(self) -> None:
        """The device is released (disable, exit): the `CPU Fallback stats:` summary at
        critical level, written unless PT_FALLBACK's level is above critical
        (`LOG_LEVEL_PT_FALLBACK=6` turns it off); the counts start again."""
        if self.fallback_counts and levels()["PT_FALLBACK"] <= CRITICAL:
            self.fallback_summary(self.fallback_counts)
        self.fallback_counts = {}

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


LOG_LEVELS: tuple[str, ...] = ("trace", "debug", "info", "warn", "error", "critical")
PT_MODULES: tuple[str, ...] = (
    "PT_DEVICE", "PT_KERNEL", "PT_BRIDGE", "PT_SYNHELPER", "PT_DISTRIBUTED", "PT_LAZY",
    "PT_TRACE", "PT_FALLBACK", "PT_STATS", "PT_TEST", "PT_DYNAMIC_SHAPE", "PT_DEVMEM",
    "PT_HABHELPER", "PT_IRGRAPH", "PT_VIEWTABLE", "PT_REFINEMENT", "PT_HOSTSTAT", "PT_LAYOUTS",
    "PT_PARALLEL_ACC", "PT_LAZY_EAGER", "PT_MEMLOG", "PT_EXEC_THREAD", "PT_EAGER", "PT_CUSTOM",
    "PT_RECIPE_STATS", "PT_HPUGRAPH", "PT_PYTHON", "PT_CONST_SECTION", "PT_QUANT",
)  # fmt: skip
"""The bridge's PT log modules (`LOG_LEVEL_<module>`)."""
CRITICAL = 5
DEFAULT_LEVEL = CRITICAL


def initial_levels(env: Mapping[str, str] | None = None) -> dict[str, int]:
    """Each module's level from `LOG_LEVEL_<module>`, else `LOG_LEVEL_ALL_PT`, else
    `LOG_LEVEL_ALL`, else critical (0 trace ... 5 critical)."""
    e = os.environ if env is None else env
    base = e.get("LOG_LEVEL_ALL_PT", e.get("LOG_LEVEL_ALL"))
    out = {}
    for module in PT_MODULES:
        raw = e.get(f"LOG_LEVEL_{module}", base)
        out[module] = int(raw) if raw is not None and raw.strip().isdigit() else DEFAULT_LEVEL
    if _legacy_fallback_mask(e):
        out["PT_FALLBACK"] = min(out["PT_FALLBACK"], 1)
    return out


def _legacy_fallback_mask(e: Mapping[str, str]) -> bool:
    """The legacy `PT_HPU_LOG_MOD_MASK` 0x80 with `PT_HPU_LOG_TYPE_MASK` 0x8 (debug) switch."""
    try:
        mod = int(e.get("PT_HPU_LOG_MOD_MASK", "0"), 0)
        kind = int(e.get("PT_HPU_LOG_TYPE_MASK", "1"), 0)
    except ValueError:
        return False
    return bool(mod & 0x80) and bool(kind & 0x8)


_levels: dict[str, int] = {}


def reset_levels() -> None:
    """Re-read the levels from the environment (at `hpusim.enable()`)."""
    _levels.clear()


def levels() -> dict[str, int]:
    """The PT modules' current log levels (the bridge's `get_pt_logging_levels`)."""
    if not _levels:
        _levels.update(initial_levels())
    return _levels


def enable_logging(logger_name: str, level: int) -> None:
    """`LOG_LEVEL_ALL` / `LOG_LEVEL_ALL_PT` set every PT module, `LOG_LEVEL_<module>` one."""
    current = levels()
    name = logger_name.removeprefix("LOG_LEVEL_")
    if name in ("ALL", "ALL_PT"):
        for module in current:
            current[module] = int(level)
    else:
        current[name] = int(level)
