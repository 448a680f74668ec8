"""`habana_frameworks.torch.utils.debug` (emulated): the bridge's debug helpers.

Answered from the emulator's state: `_get_fallback_op_count` (CPU-fallback counts per op),
`_get_jit_cache_size` / `_clear_jit_cache` (the recipe cache), `get_tensor_info`,
`_is_enabled_lazy_collectives`. The graph-pass switches (`_enable_eliminate_dead_code`...)
are remembered in `pass_flags` but change nothing: the emulator has no graph compiler passes."""

import os
from typing import Any

from hpusim import state as _state

from .logger import Logger

pass_flags: dict[str, Any] = {}


def _rt() -> Any:
    return _state.require_runtime()


def _get_fallback_op_count() -> dict[str, int]:
    """Ops that ran on the CPU so far, with their counts (`aten::digamma` style names)."""
    return dict(_rt().log.fallback_counts)


def _get_shape_agnostic_unsupported_ops() -> set[str]:
    return set()


def _get_eager_compiler_unsupported_op_prefixes() -> set[str]:
    return set()


def _get_jit_cache_size() -> int:
    """Recipes in the cache (lazy graphs of this process)."""
    return len(_rt().cache)


def _clear_jit_cache() -> None:
    _rt().cache.clear()


def _flush_disk_cache() -> None:
    return None


def _bridge_cleanup() -> None:
    """Flush what is pending (the bridge releases its device resources here)."""
    rt = _state.RT
    if rt is not None and rt.lazy:
        from hpusim import lazy

        lazy.flush(rt, "host step marker")


def get_tensor_info(tensor: Any) -> Any:
    """(data pointer, bytes) of an hpu tensor's storage; None for a non-hpu tensor."""
    if "hpu" not in str(tensor.device):
        return None
    elem = getattr(tensor, "_elem", tensor)
    storage = elem.untyped_storage()
    return storage.data_ptr(), storage.nbytes()


def _is_enabled_lazy_collectives() -> bool:
    return os.environ.get("PT_HPU_ENABLE_LAZY_COLLECTIVES", "false").lower() in ("true", "1")


def _is_enabled_weight_permute_pass() -> bool:
    return False


def _is_enabled_synapse_layout_handling() -> bool:
    return True


def _hb_print(msg: Any) -> None:
    print(msg)


def _hg_print(msg: Any) -> None:
    print(msg)


def _mem_log(msg: Any) -> bool:
    print(msg)
    return True


def _pass_switch(name: str) -> Any:
    def switch(flag: Any = True) -> None:
        pass_flags[name] = flag

    switch.__name__ = name
    return switch


for _name in (
    "_enable_eliminate_common_subexpression",
    "_enable_eliminate_dead_code",
    "_enable_constant_pooling",
    "_enable_peephole_optimization",
    "_enable_fuse_t_mm_optimization",
    "_enable_fuse_bn_relu_optimization",
    "_enable_bn_param_recalculation",
    "_enable_fuse_conv_bn_optimization",
    "_enable_permute_pass",
    "_enable_replace_inplace_ops",
    "_enable_replace_views",
    "_set_dynamic_mode",
    "_set_module_name",
    "_disable_bucket_refinement",
    "_towl_configure",
):
    globals()[_name] = _pass_switch(_name)


def _report(name: str) -> Any:
    def report(*args: Any) -> None:
        stats = _state.RT and __import__("hpusim.device_module").device_module.memory_stats()
        print(f"{name}: {stats}")

    report.__name__ = name
    return report


for _name in (
    "_memstat_livealloc",
    "_memstat_devmem_start_collect",
    "_memstat_devmem_stop_collect",
    "_dump_refined_recipe_stat",
    "_dump_bucket_memory_stat",
    "_dump_history_memory_stat",
    "_dump_recipe_memory_stat",
    "_dump_synapse_recipe_memory_stat",
    "_dump_dynamic_shape_memory_stat",
    "_dump_memory_reporter",
):
    globals()[_name] = _report(_name)


def clear_dynamic_bucket_recipe_info() -> None:
    return None


def load_ds_checkpoint(path: Any) -> None:
    return None


def save_ds_checkpoint(path: Any) -> None:
    return None


def _towl_print(text: str) -> None:
    print(text)


__all__ = ["Logger", "get_tensor_info", "load_ds_checkpoint", "save_ds_checkpoint"]
