"""`habana_frameworks.torch._hpex_C` (emulated): the bridge's pybind module of hpex kernels
(python_packages/habana_frameworks/torch/hpex/csrc/bindings.cpp). Only `fused_norm` is
emulated; the module's other bindings (embedding bag, the Lars / Adagrad wrappers) are absent."""

from collections.abc import Sequence

import torch


def fused_norm(
    grad: Sequence[torch.Tensor], max_norm: torch.Tensor, norm_type: float
) -> torch.Tensor:
    """Clip `grad` in place by their global `norm_type` norm against `max_norm`; the norm, a new
    one-element tensor (`fused_norm_hpu_wrap`, habana_kernels/kernels_register.cpp:1062-1078)."""
    if not grad:
        raise RuntimeError("Can not process empty grad vector")
    return torch.ops.hpu.fused_norm_lazy(list(grad), max_norm, float(norm_type))
