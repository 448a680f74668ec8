"""`habana_frameworks.torch.internal.bridge_config` (emulated): the generated getters and
setters of the bridge's environment flags, `get_<flag>()` / `set_<flag>(value)` for any
`PT_...` flag (`get_pt_enable_int64_support()` reads `PT_ENABLE_INT64_SUPPORT`).

Values come from the environment, parsed like the bridge's typed flags (booleans from
y/yes/t/true/on/1, integers as integers); unset flags take the defaults of the bridge's
`env_flags.yaml` for the ones listed here, else False. A setter overrides for this process."""

import os
from typing import Any

import hpusim.state as _state

DEFAULTS: dict[str, Any] = {
    "PT_HPU_LAZY_MODE": 1,
    "PT_ENABLE_INT64_SUPPORT": False,
    "PT_HPU_GPU_MIGRATION": False,
    "PT_HPU_ENABLE_LAZY_COLLECTIVES": False,
    "PT_HPU_MAX_COMPOUND_OP_SIZE": 9223372036854775807,
    "PT_HPU_ENABLE_COMPILED_AUTOGRAD": False,
    "PT_HPU_EAGER_PIPELINE_ENABLE": True,
    "PT_HPU_WEIGHT_SHARING": True,
    "PT_HPU_ENABLE_REFINE_DYNAMIC_SHAPES": False,
}
_overrides: dict[str, Any] = {}
_TRUE = {"y", "yes", "t", "true", "on", "1"}
_FALSE = {"n", "no", "f", "false", "off", "0"}


def _parse(raw: str, default: Any) -> Any:
    text = raw.strip().lower()
    if isinstance(default, bool) or text in _TRUE | _FALSE and not text.lstrip("-").isdigit():
        return text in _TRUE
    try:
        return int(text, 0)
    except ValueError:
        return raw


def _recipe_cache_flag(flag: str) -> Any:
    """The three flags `PT_HPU_RECIPE_CACHE_CONFIG` sets in the bridge (recipe_cache_config.cpp:
    51-102), as the running emulator read them; None for other flags or without one."""
    rt = _state.RT
    if rt is None:
        return None
    config = rt.flags.recipe_cache
    return {
        "PT_RECIPE_CACHE_PATH": config.path,
        "PT_CACHE_FOLDER_DELETE": config.delete_on_init,
        "PT_CACHE_FOLDER_SIZE_MB": config.max_size_mb,
    }.get(flag)


def get(flag: str) -> Any:
    if flag in _overrides:
        return _overrides[flag]
    from_config = _recipe_cache_flag(flag)
    if from_config is not None:
        return from_config
    default = DEFAULTS.get(flag, False)
    raw = os.environ.get(flag)
    return default if raw is None else _parse(raw, default)


def __getattr__(name: str) -> Any:
    if name.startswith("get_"):
        flag = name[4:].upper()
        return lambda: get(flag)
    if name.startswith("set_"):
        flag = name[4:].upper()

        def setter(value: Any) -> None:
            _overrides[flag] = value

        return setter
    raise AttributeError(name)
