"""`habana_frameworks.torch.core` (emulated): `mark_step`, `iter_mark_step`,
`add_step_closure`, the inference-env helpers of `quantization`, and `hpu` (the module that
is also `torch.hpu`). Importing it sets `HABANA_PROFILE=profile_api_light` when unset, as the
bridge does (device tracing needs it)."""

import os

import habana_frameworks.torch.utils.debug as htdebug
import habana_frameworks.torch.utils.experimental as htexp
from habana_frameworks.torch import hpu
from habana_frameworks.torch.utils.internal import is_lazy

from .quantization import (
    hpu_inference_initialize,
    hpu_initialize,
    hpu_reset_env,
    hpu_set_env,
    hpu_set_inference_env,
    hpu_teardown_inference_env,
)
from .step_closure import _mark_step_if_lazy, add_step_closure, iter_mark_step, mark_step

if "HABANA_PROFILE" not in os.environ:
    os.environ["HABANA_PROFILE"] = "profile_api_light"

__all__ = [
    "add_step_closure",
    "hpu",
    "hpu_inference_initialize",
    "hpu_initialize",
    "hpu_reset_env",
    "hpu_set_env",
    "hpu_set_inference_env",
    "hpu_teardown_inference_env",
    "htdebug",
    "htexp",
    "is_lazy",
    "iter_mark_step",
    "mark_step",
]
_ = _mark_step_if_lazy
