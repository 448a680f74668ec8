"""The bridge's environment flags that the emulator honours, read once at `enable()`.

Names and defaults follow gaudi.md section 4.4, gaudi-env-flags.md and the bridge 1.19
`scripts/env_flags.yaml`. `PT_HPU_LAZY_MODE` is read as the 1.19 bridge's `is_lazy()` reads it:
lazy unless the value is exactly `0` (unset = lazy, the 1.19 default).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

_TRUE = frozenset({"y", "yes", "t", "true", "on", "1"})
INT64_MAX = 9223372036854775807


def truthy(value: str | None) -> bool:
    """The bridge's boolean parsing (`y/yes/t/true/on/1`, case-insensitive)."""
    return value is not None and value.strip().lower() in _TRUE


def _get(env: Mapping[str, str], name: str, alt: str | None = None) -> str | None:
    v = env.get(name)
    if v is None and alt is not None:
        v = env.get(alt)
    return v


@dataclass(frozen=True)
class EnvFlags:
    """Parsed flags.

    Args:
        lazy: PT_HPU_LAZY_MODE != "0" (unset: lazy).
        place_on_cpu: PT_HPU_PLACE_ON_CPU allow-list of exact `aten::op.overload` names (None
            when unset or empty: every op may fall back; empty after a `none` entry).
        int64_support: PT_ENABLE_INT64_SUPPORT.
        max_compound_op_size: PT_HPU_MAX_COMPOUND_OP_SIZE (ops per lazy graph).
        metrics_file: PT_HPU_METRICS_FILE (HABANA_PT_METRICS_FILE) or None.
        metrics_format: PT_HPU_METRICS_FILE_FORMAT, `json` or `text`.
        metrics_triggers: PT_HPU_METRICS_DUMP_TRIGGERS entries.
        gc_details: PT_HPU_METRICS_GC_DETAILS.
        cache_metrics: PT_HPU_ENABLE_CACHE_METRICS.
        fallback_log: per-op CPU-fallback log lines requested (LOG_LEVEL_PT_FALLBACK<=1 or the
            legacy PT_HPU_LOG_MOD_MASK 0x80 with PT_HPU_LOG_TYPE_MASK 0x8).
        irgraph_log: `step marker due to ...` lines requested (LOG_LEVEL_PT_IRGRAPH<=1, or
            LOG_LEVEL_ALL_PT / LOG_LEVEL_ALL).
        console: ENABLE_CONSOLE=true (logs on stdout instead of $HABANA_LOGS/pytorch_log.txt).
        log_dir: HABANA_LOGS or ~/.habana_logs.
    """

    lazy: bool
    place_on_cpu: frozenset[str] | None
    int64_support: bool
    max_compound_op_size: int
    metrics_file: str | None
    metrics_format: str
    metrics_triggers: tuple[str, ...]
    gc_details: bool
    cache_metrics: bool
    fallback_log: bool
    console: bool
    log_dir: str
    irgraph_log: bool = False


def read_flags(env: Mapping[str, str] | None = None) -> EnvFlags:
    """Parse the flags from `env` (default: os.environ)."""
    e = os.environ if env is None else env
    place_set = place_on_cpu(e.get("PT_HPU_PLACE_ON_CPU", ""))
    level = _level(e, "LOG_LEVEL_PT_FALLBACK")
    mod_mask = _int(e.get("PT_HPU_LOG_MOD_MASK"), 0)
    type_mask = _int(e.get("PT_HPU_LOG_TYPE_MASK"), 1)
    fallback_log = level <= 1 or (bool(mod_mask & 0x80) and bool(type_mask & 0x8))
    triggers = _get(e, "PT_HPU_METRICS_DUMP_TRIGGERS", "HABANA_PT_METRICS_DUMP_TRIGGERS")
    return EnvFlags(
        lazy=e.get("PT_HPU_LAZY_MODE", "1") != "0",
        place_on_cpu=place_set,
        int64_support=truthy(e.get("PT_ENABLE_INT64_SUPPORT")),
        max_compound_op_size=_int(e.get("PT_HPU_MAX_COMPOUND_OP_SIZE"), INT64_MAX),
        metrics_file=_get(e, "PT_HPU_METRICS_FILE", "HABANA_PT_METRICS_FILE") or None,
        metrics_format=(
            _get(e, "PT_HPU_METRICS_FILE_FORMAT", "HABANA_PT_METRICS_FILE_FORMAT") or "json"
        ).strip(),
        metrics_triggers=tuple(
            t.strip() for t in (triggers or "process_exit").split(",") if t.strip()
        ),
        gc_details=truthy(e.get("PT_HPU_METRICS_GC_DETAILS")),
        cache_metrics=truthy(e.get("PT_HPU_ENABLE_CACHE_METRICS")),
        fallback_log=fallback_log,
        console=truthy(e.get("ENABLE_CONSOLE")),
        irgraph_log=_level(e, "LOG_LEVEL_PT_IRGRAPH") <= 1,
        log_dir=e.get("HABANA_LOGS") or os.path.expanduser("~/.habana_logs"),
    )


def place_on_cpu(value: str) -> frozenset[str] | None:
    """`PT_HPU_PLACE_ON_CPU` as the bridge's HpuFallbackHelper reads it: empty = every op may
    fall back (None); else the comma-separated `operator_name()`s taken verbatim (no trimming),
    and a `none` entry empties the list and stops reading."""
    if not value:
        return None
    ops: set[str] = set()
    for item in value.split(","):
        if item == "none":
            return frozenset()
        ops.add(item)
    return frozenset(ops)


def _level(env: Mapping[str, str], name: str) -> int:
    """A module's log level: its LOG_LEVEL_<module>, else LOG_LEVEL_ALL_PT, else LOG_LEVEL_ALL
    (0 trace, 1 debug, ... 6 off; the bridge's default is off for debug lines)."""
    value = env.get(name, env.get("LOG_LEVEL_ALL_PT", env.get("LOG_LEVEL_ALL")))
    return _int(value, 6)


def _int(value: str | None, default: int) -> int:
    if value is None or not value.strip():
        return default
    try:
        return int(value.strip(), 0)
    except ValueError:
        return default
