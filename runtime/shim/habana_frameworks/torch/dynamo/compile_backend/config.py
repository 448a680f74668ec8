"""`compile_backend.config` (emulated): the bridge's `hpu_backend` options, read from the same
environment variables with the same defaults, and `configuration_flags` (dict-like access).

The emulator's backend reads none of them except as documentation of the run: it always runs
the AOT graphs through the emulated device (recipes per graph)."""

import os
import sys
from typing import Any


def _get_bool_from_env(env_var: str, default: str) -> bool:
    value = os.getenv(env_var, default).lower()
    if value in ("on", "1", "yes", "true", "y", "t"):
        return True
    if value in ("off", "0", "no", "false", "n", "f"):
        return False
    raise AssertionError(f"Unrecognized boolean value in env config:\n\t{env_var}: {value}")


def _get_decomp_mode(env_var: str, default: str) -> str:
    value = os.getenv(env_var, default).lower()
    if value not in ("habana", "core_aten", "none"):
        raise AssertionError(
            f"Unrecognized string value in env config:\n\t{env_var}: {value}\n\t"
            'Recognized values: "habana", "core_aten", "none"\n'
        )
    return value


use_compiled_recipes = _get_bool_from_env("PT_HPU_COMPILE_USE_RECIPES", "1")
decomposition_mode = _get_decomp_mode("PT_HPU_COMPILE_DECOMPOSITION_MODE", "habana")
keep_input_mutations = _get_bool_from_env("PT_HPU_KEEP_INPUT_MUTATIONS", "1")
use_eager_fallback = _get_bool_from_env("PT_HPU_USE_EAGER_FALLBACK", "1")
use_graph_freezing = _get_bool_from_env("PT_HPU_COMPILE_GRAPH_FREEZE", "0")
discard_frozen_params = _get_bool_from_env("PT_HPU_COMPILE_DISCARD_FROZEN_PARAMS", "0")
remove_unnecessary_clones = _get_bool_from_env("PT_HPU_COMPILE_REMOVE_UNNECESSARY_CLONES", "1")
use_inplace_allreduce = _get_bool_from_env("PT_HPU_USE_INPLACE_COLLECTIVE", "1")
use_inplace_index_copy = _get_bool_from_env("PT_HPU_USE_INPLACE_INDEX_COPY", "1")
inference = _get_bool_from_env("PT_HPU_USE_INFERENCE_COMPILER", "1")
enable_sfg = _get_bool_from_env("PT_HPU_ENABLE_SFG", "0")
use_cpp_partitioner = _get_bool_from_env("PT_HPU_USE_CPP_PARTITIONER", "1")
enable_allreduce_graph_split = _get_bool_from_env("PT_HPU_ENABLE_ALLREDUCE_GRAPH_SPLIT", "1")
force_static_compile = _get_bool_from_env("PT_HPU_FORCE_STATIC_COMPILE", "0")
reinplace_add = _get_bool_from_env("PT_HPU_REINPLACE_ADD", "1")
reassign_full_copy = _get_bool_from_env("PT_HPU_REASSIGN_FULL_COPY", "1")
reassign_copy_ = _get_bool_from_env("PT_HPU_REASSIGN_COPY_", "1")
use_boxed_input = _get_bool_from_env("PT_HPU_USE_BOXED_INPUT", "1")


class DictLikeClass:
    """`configuration_flags["use_eager_fallback"]` reads / writes this module's attributes."""

    def __getitem__(self, key: str) -> Any:
        return getattr(sys.modules[__name__], key)

    def __setitem__(self, key: str, value: Any) -> None:
        setattr(sys.modules[__name__], key, value)


configuration_flags = DictLikeClass()
