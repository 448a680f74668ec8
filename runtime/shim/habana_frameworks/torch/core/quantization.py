"""`habana_frameworks.torch.core.quantization` (emulated): the inference-environment helpers.

`hpu_set_inference_env` / `hpu_teardown_inference_env` switch the bridge's inference mode
flags (`torch.hpu.enable_inference_mode`, `enable_matmul3d_2d_reshape`); marking parameters
as constants (`hpu_inference_initialize`) records which parameters would be constant-folded
into the recipe (`_get_marked_const_count`). fp8 quantization statistics are not emulated."""

from typing import Any

import torch

_state = {"set_env": True, "const_id": -1}
_const_params: dict[int, int] = {}


def _hpu() -> Any:
    return torch.hpu


def _mark_params_as_const(
    model: Any = None, only_scales: bool = False, console_prints: bool = False
) -> None:
    if model is None:
        return
    for name, p in model.named_parameters():
        if only_scales and "scale" not in name:
            continue
        _state["const_id"] += 1
        _const_params[id(p)] = _state["const_id"]
    for name, b in model.named_buffers():
        if only_scales and "scale" not in name:
            continue
        _state["const_id"] += 1
        _const_params[id(b)] = _state["const_id"]


def _get_marked_const_count() -> int:
    return len(_const_params)


def _check_params_as_const(model: Any = None, only_scales: bool = False) -> None:
    if model is None:
        return
    for name, p in model.named_parameters():
        if only_scales and "scale" not in name:
            continue
        if id(p) not in _const_params:
            raise AssertionError(f"parameter {name} is not marked as const")


def hpu_set_env(model: Any = None) -> Any:
    return hpu_set_inference_env(model)


def hpu_set_inference_env(model: Any = None) -> Any:
    _hpu().enable_inference_mode()
    _hpu().enable_matmul3d_2d_reshape()
    _state["set_env"] = False
    if model is not None:
        return model
    return None


def hpu_initialize(
    model: Any = None,
    mark_only_scales_as_const: bool = False,
    optimizer: Any = None,
    args: Any = None,
) -> None:
    hpu_inference_initialize(model, mark_only_scales_as_const, optimizer, args)


def hpu_inference_initialize(
    model: Any = None,
    mark_only_scales_as_const: bool = False,
    optimizer: Any = None,
    args: Any = None,
) -> None:
    if _state["set_env"]:
        _hpu().enable_inference_mode()
        _hpu().enable_matmul3d_2d_reshape()
    if model is not None and _hpu().is_lazy():
        _mark_params_as_const(model=model, only_scales=mark_only_scales_as_const)
        _check_params_as_const(model=model, only_scales=mark_only_scales_as_const)


def hpu_reset_env() -> None:
    hpu_teardown_inference_env()


def hpu_teardown_inference_env() -> None:
    _hpu().disable_inference_mode()
    _hpu().disable_matmul3d_2d_reshape()
