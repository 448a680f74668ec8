"""The bridge's environment flags that the emulator honours, read once at `enable()`.

Names and defaults follow gaudi.md section 4.4, gaudi-env-flags.md and the bridge 1.19
`scripts/env_flags.yaml`. `PT_HPU_LAZY_MODE` is read as the 1.19 bridge's `is_lazy()` reads it:
lazy unless the value is exactly `0` (unset = lazy, the 1.19 default).

Values are checked as the bridge's C++ reads them (`backend/synapse_helpers/env_flags.cpp:
261-366`): numeric flags as `strtol(value, 0)` after a `0x` is put before a value holding a-f
(`PT_HPU_MAX_COMPOUND_OP_SIZE=b` is 11), boolean flags as 1/0/true/false only. A value the
bridge cannot convert (`PT_HPU_LAZY_MODE=true`) is its PT_SYNHELPER fatal error, raised where
the script imports `habana_frameworks.torch` (`raise_if_fatal`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

DRIVER_VERSION = "1.19.0-561ec20"
"""`synDriverGetVersion` of the emulated installation (`hl-smi`, `get_device_capability()`)."""
_TRUE = frozenset({"y", "yes", "t", "true", "on", "1"})
INT64_MAX = 9223372036854775807
INT64_MIN = -INT64_MAX - 1
UINT32_MAX = 4294967295


class FlagValueError(ValueError):
    """A flag value the bridge's `parse_env_numeric` / `parse_env_bool` rejects."""


def _fatal(text: str) -> FlagValueError:
    return FlagValueError(f"[Rank:0] FATAL ERROR :: MODULE:PT_SYNHELPER {text}")


def _strtol(text: str) -> tuple[int, str]:
    """C's `strtol(text, &end, 0)`: (value, the unparsed rest); no digits: (0, text)."""
    i = len(text) - len(text.lstrip())
    sign = 1
    if text[i : i + 1] in ("+", "-"):
        sign = -1 if text[i] == "-" else 1
        i += 1
    base, digits = 10, "0123456789"
    if text[i : i + 2].lower() == "0x" and text[i + 2 : i + 3].lower() in set("0123456789abcdef"):
        base, digits, i = 16, "0123456789abcdef", i + 2
    elif text[i : i + 1] == "0":
        base, digits = 8, "01234567"
    j = i
    while j < len(text) and text[j].lower() in digits:
        j += 1
    if j == i:
        return 0, text
    return sign * int(text[i:j], base), text[j:]


def bridge_numeric(name: str, value: str, low: int, high: int) -> int:
    """A numeric flag as `parse_env_numeric` reads it (env_flags.cpp:306-396)."""
    lowered = value.lower()
    text = value
    if not lowered.startswith("0x") and any("a" <= c <= "f" for c in lowered):
        text = "0x" + lowered  # hex without its prefix
    parsed, rest = _strtol(text)
    shown = f'Environment variable "{name}"="{value}"'
    if low >= 0 and parsed < 0:  # strtoul wraps a negative number
        parsed %= UINT32_MAX + 1
    if parsed > INT64_MAX or parsed < INT64_MIN:
        clamped = INT64_MAX if parsed > 0 else INT64_MIN
        raise _fatal(f'{shown} converted to different value "{clamped}" due to underflow/overflow.')
    if rest:
        raise _fatal(f'{shown} converted to different value "{parsed}" due to syntax error.')
    if not low <= parsed <= high:
        raise _fatal(f"{shown} decoded as {parsed} is out of range <{low}, {high}>")
    return parsed


def bridge_bool(name: str, value: str) -> bool:
    """A boolean flag as `parse_env_bool` reads it (env_flags.cpp:261-281)."""
    v = value.lower()
    if v in ("1", "true"):
        return True
    if v in ("0", "false"):
        return False
    raise _fatal(f'Environment variable "{name}"="{value}" couldn\'t be converted properly')


def truthy(value: str | None) -> bool:
    """The bridge's boolean parsing (`y/yes/t/true/on/1`, case-insensitive)."""
    return value is not None and value.strip().lower() in _TRUE


def _get(env: Mapping[str, str], name: str, alt: str | None = None) -> str | None:
    v = env.get(name)
    if v is None and alt is not None:
        v = env.get(alt)
    return v


@dataclass(frozen=True)
class RecipeCacheConfig:
    """The on-disk recipe cache's settings (recipe_cache_config.cpp `reload`).

    Args:
        path: PT_RECIPE_CACHE_PATH ("" = no disk cache).
        delete_on_init: PT_CACHE_FOLDER_DELETE (empty the folder when the cache opens).
        max_size_mb: PT_CACHE_FOLDER_SIZE_MB (oldest recipes evicted beyond it).
    """

    path: str
    delete_on_init: bool
    max_size_mb: int


def recipe_cache_config(env: Mapping[str, str]) -> RecipeCacheConfig:
    """`RecipeCacheConfig::reload` (recipe_cache_config.cpp:51-102): a non-empty
    `PT_HPU_RECIPE_CACHE_CONFIG=<path>[,<delete>[,<size MB>]]` replaces PT_RECIPE_CACHE_PATH,
    PT_CACHE_FOLDER_DELETE and PT_CACHE_FOLDER_SIZE_MB (an empty delete or size keeps the
    flag's value); raises FlagValueError as the bridge's assert / flag parsing stops."""

    def flag_bool(name: str, value: str | None) -> bool:
        return bridge_bool(name, value) if value else False

    def flag_size(name: str, value: str | None) -> int:
        return bridge_numeric(name, value, 0, UINT32_MAX) if value else 1024

    path = env.get("PT_RECIPE_CACHE_PATH", "")
    delete = flag_bool("PT_CACHE_FOLDER_DELETE", env.get("PT_CACHE_FOLDER_DELETE"))
    size = flag_size("PT_CACHE_FOLDER_SIZE_MB", env.get("PT_CACHE_FOLDER_SIZE_MB"))
    config = env.get("PT_HPU_RECIPE_CACHE_CONFIG", "")
    if config:
        params = config.split(",")
        if config.endswith(","):  # std::getline yields no empty last field
            params.pop()
        if not 1 <= len(params) <= 3:
            raise FlagValueError(
                "Expected number of parameters extracted from PT_HPU_RECIPE_CACHE_CONFIG "
                "should be from range <1:3>."
            )
        path = params[0]
        if len(params) > 1 and params[1]:
            delete = bridge_bool("PT_CACHE_FOLDER_DELETE", params[1])
        if len(params) > 2 and params[2]:
            size = bridge_numeric("PT_CACHE_FOLDER_SIZE_MB", params[2], 0, UINT32_MAX)
    return RecipeCacheConfig(path, delete, size)


@dataclass(frozen=True)
class EnvFlags:
    """Parsed flags.

    Args:
        lazy: PT_HPU_LAZY_MODE != "0" (unset: lazy).
        int64_support: PT_ENABLE_INT64_SUPPORT.
        max_compound_op_size: PT_HPU_MAX_COMPOUND_OP_SIZE (ops per lazy graph).
        metrics_file: PT_HPU_METRICS_FILE (HABANA_PT_METRICS_FILE) or None.
        metrics_format: PT_HPU_METRICS_FILE_FORMAT, `json` or `text`.
        metrics_triggers: PT_HPU_METRICS_DUMP_TRIGGERS entries.
        cache_metrics: PT_HPU_ENABLE_CACHE_METRICS.
        fallback_log: per-op CPU-fallback log lines requested (LOG_LEVEL_PT_FALLBACK<=1 or the
            legacy PT_HPU_LOG_MOD_MASK 0x80 with PT_HPU_LOG_TYPE_MASK 0x8).
        irgraph_log: `step marker due to ...` lines requested (LOG_LEVEL_PT_IRGRAPH<=1, or
            LOG_LEVEL_ALL_PT / LOG_LEVEL_ALL).
        console: ENABLE_CONSOLE=true (logs on stdout instead of $HABANA_LOGS/pytorch_log.txt).
        log_dir: HABANA_LOGS or ~/.habana_logs.
    """

    lazy: bool
    int64_support: bool
    max_compound_op_size: int
    metrics_file: str | None
    metrics_format: str
    metrics_triggers: tuple[str, ...]
    cache_metrics: bool
    fallback_log: bool
    console: bool
    log_dir: str
    irgraph_log: bool = False
    refine_dynamic_shapes: bool = False
    """PT_HPU_ENABLE_REFINE_DYNAMIC_SHAPES: bucketed recipes for changing sizes."""
    recipe_cache: RecipeCacheConfig = RecipeCacheConfig("", False, 1024)
    """The on-disk recipe cache (`recipe_cache_config`)."""
    fatal: str | None = None
    """The bridge's fatal error for a flag value it cannot convert (the first one), else None."""


def read_flags(env: Mapping[str, str] | None = None) -> EnvFlags:
    """Parse the flags from `env` (default: os.environ); a value the bridge rejects leaves the
    flag at its default and is kept in `fatal`."""
    e = os.environ if env is None else env
    errors: list[str] = []

    def numeric(name: str, default: int, low: int, high: int) -> int:
        value = e.get(name)
        if not value:
            return default
        try:
            return bridge_numeric(name, value, low, high)
        except FlagValueError as err:
            errors.append(str(err))
            return default

    def boolean(name: str) -> bool:
        value = e.get(name)
        if not value:
            return False
        try:
            return bridge_bool(name, value)
        except FlagValueError as err:
            errors.append(str(err))
            return False

    level = _level(e, "LOG_LEVEL_PT_FALLBACK")
    mod_mask = _int(e.get("PT_HPU_LOG_MOD_MASK"), 0)
    type_mask = _int(e.get("PT_HPU_LOG_TYPE_MASK"), 1)
    fallback_log = level <= 1 or (bool(mod_mask & 0x80) and bool(type_mask & 0x8))
    triggers = _get(e, "PT_HPU_METRICS_DUMP_TRIGGERS", "HABANA_PT_METRICS_DUMP_TRIGGERS")
    numeric("PT_HPU_LAZY_MODE", 1, 0, UINT32_MAX)  # C++ reads it so; Python's is_lazy decides
    try:
        disk_cache = recipe_cache_config(e)
    except FlagValueError as err:
        errors.append(str(err))
        disk_cache = RecipeCacheConfig("", False, 1024)
    return EnvFlags(
        lazy=e.get("PT_HPU_LAZY_MODE", "1") != "0",
        int64_support=boolean("PT_ENABLE_INT64_SUPPORT"),
        max_compound_op_size=numeric(
            "PT_HPU_MAX_COMPOUND_OP_SIZE", INT64_MAX, INT64_MIN, INT64_MAX
        ),
        metrics_file=_get(e, "PT_HPU_METRICS_FILE", "HABANA_PT_METRICS_FILE") or None,
        metrics_format=(
            _get(e, "PT_HPU_METRICS_FILE_FORMAT", "HABANA_PT_METRICS_FILE_FORMAT") or "json"
        ).strip(),
        metrics_triggers=tuple(
            t.strip() for t in (triggers or "process_exit").split(",") if t.strip()
        ),
        cache_metrics=boolean("PT_HPU_ENABLE_CACHE_METRICS"),
        fallback_log=fallback_log,
        console=truthy(e.get("ENABLE_CONSOLE")),
        irgraph_log=_level(e, "LOG_LEVEL_PT_IRGRAPH") <= 1,
        refine_dynamic_shapes=boolean("PT_HPU_ENABLE_REFINE_DYNAMIC_SHAPES"),
        recipe_cache=disk_cache,
        log_dir=e.get("HABANA_LOGS") or os.path.expanduser("~/.habana_logs"),
        fatal=errors[0] if errors else None,
    )


def raise_if_fatal(flags: EnvFlags) -> None:
    """Raise the bridge's fatal flag error, as `import habana_frameworks.torch` does there
    (`PT_MOD_FATAL` throws a c10::Error: a RuntimeError in Python)."""
    if flags.fatal is not None:
        raise RuntimeError(flags.fatal)


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
