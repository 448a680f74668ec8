"""FP8 training through the bridge's Transformer Engine surface (emulated), with delayed scaling.

`habana_frameworks.torch.hpex.experimental.transformer_engine` is, in the 1.19 bridge, a re-export
of Intel's `intel_transformer_engine` (`python_packages/habana_frameworks/torch/hpex/experimental/
transformer_engine/__init__.py:24-35`), a Python package over the bridge's FP8 ops. Its behaviour
is emulated here as that package (Intel's Gaudi port of NVIDIA's TE 0.x) behaves, over the
emulated `hpu::cast_to_fp8_v2`, `hpu::cast_to_fp8_hybrid`, `hpu::cast_from_fp8` and
`hpu::fp8_gemm_v2` (`hpusim.fp8_ops`, the device model's FP8 MME rate):

- every `te.Linear` keeps `fp8_meta`: per-format `FP8TensorMeta` (`scaling_fwd`, `scaling_bwd`,
  and `scaling_hybrid` under the HYBRID format) holding `scale`, `scale_inv`, an
  `amax_history` of `recipe.amax_history_len` rows and the row `amax_history_index` writes next;
- delayed scaling: a cast scales by the meta's current `scale` and writes the tensor's amax into
  the history; at the next step (forward: `prepare_forward`; backward: `_prepare_backward`) the
  scale becomes `2 ** (floor(log2(fp8_max / amax)) - margin)` of the history's amax (`max`
  over the rows, or row 0 for `most_recent`), and the index advances;
- measurement: amaxes are measured every step with `interval == 1`, else in the
  `amax_history_len` steps before each scale update; `fp8_autocast(force_measurement=...)` and
  `FP8GlobalStateManager.set_measurement_mode(manual, value)` override that;
- `reduce_amax`: the amaxes of a step go through `FP8GlobalStateManager`'s global buffer (keyed
  by the first module's run id) and are max-reduced over `fp8_group` when torch.distributed runs;
- `save_fp8_meta()` / `load_fp8_meta(saved)` and the module's extra state (`state_dict`) copy
  and restore that state; a changed `amax_history_len` keeps the latest rows.

- `distributed.activation_checkpointing()`: a module run again by `torch.utils.checkpoint` in
  the backward keeps the FP8 state its step's forward set (no step counted, no scale updated,
  no amax measured in the recompute);
- `FusedAttention` outside FP8 regions: the fused attention kernel (`hpex.kernels.FusedSDPA`).

Differs on purpose: `FusedAttention` inside an FP8 region (its FP8 scaling state is Intel's
package's, which is not public) raises NotImplementedError; the numerics are the emulated
casts' and GEMM's (`hpusim.fp8_ops`).
"""

from __future__ import annotations

import contextlib
import enum
import os
import pickle
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

import numpy as np
import torch

import hpusim.hpu_ops as hpu_ops
import hpusim.state as state
from hpusim.fp8_ops import device_fp8_max
from hpusim.lifecycle import is_enabled

NO_FP8_DEVICE = "FP8 needs Gaudi 2 or later: the emulated device has no FP8 MME"


@dataclass(frozen=True)
class _FormatHelper:
    """A format's FP8 types for forward tensors and gradients; `max_fwd` / `max_bwd` are their
    largest values on the emulated device, which the scales aim at (E4M3: 240 on Gaudi 2, whose
    E4M3 keeps IEEE specials, 448 on Gaudi 3; E5M2: 57344)."""

    fwd: torch.dtype
    bwd: torch.dtype

    @property
    def max_fwd(self) -> float:
        return device_fp8_max(self.fwd)

    @property
    def max_bwd(self) -> float:
        return device_fp8_max(self.bwd)


class Format(enum.Enum):
    """FP8 formats of a recipe: E4M3 everywhere, E5M2 everywhere, or HYBRID (E4M3 forward, E5M2
    gradients); `format.value.max_fwd` / `.max_bwd` are what its scales aim at (the bridge's
    tests compute reference scales from them)."""

    E4M3 = _FormatHelper(torch.float8_e4m3fn, torch.float8_e4m3fn)
    E5M2 = _FormatHelper(torch.float8_e5m2, torch.float8_e5m2)
    HYBRID = _FormatHelper(torch.float8_e4m3fn, torch.float8_e5m2)


class _OverrideLinearPrecision(NamedTuple):
    """Which of a linear layer's GEMMs run in higher precision instead of FP8."""

    fprop: bool = False
    dgrad: bool = False
    wgrad: bool = False


@dataclass
class DelayedScaling:
    """The delayed-scaling recipe (NVIDIA TE's fields).

    Args:
        margin: the scale is 2**(floor(log2(fp8_max / amax)) - margin).
        interval: steps between scale updates.
        fp8_format: the FP8 formats (`Format`).
        amax_history_len: rows of the amax history.
        amax_compute_algo: "max" (over the history) or "most_recent", or a callable
            (history -> amax).
        scaling_factor_compute_algo: None, or a callable (amax, scale, fp8_max, recipe) -> scale.
        override_linear_precision: (fprop, dgrad, wgrad) run in higher precision.
        reduce_amax: whether amaxes go through the global buffer (and its all-reduce).
    """

    margin: int = 0
    interval: int = 1
    fp8_format: Format = Format.E4M3
    amax_history_len: int = 1
    amax_compute_algo: Any = "most_recent"
    scaling_factor_compute_algo: Callable[..., torch.Tensor] | None = None
    override_linear_precision: _OverrideLinearPrecision = field(
        default_factory=_OverrideLinearPrecision
    )
    reduce_amax: bool = True


class FP8FwdTensors(enum.IntEnum):
    GEMM1_INPUT = 0
    GEMM1_WEIGHT = 1
    GEMM2_INPUT = 2
    GEMM2_WEIGHT = 3


class FP8BwdTensors(enum.IntEnum):
    GRAD_OUTPUT1 = 0
    GRAD_OUTPUT2 = 1


class FP8TensorMeta:
    """Scaling state of a group of FP8 tensors: `scale`, `scale_inv` (one per tensor),
    `amax_history` (rows x tensors) and `amax_history_index` (the row written next)."""

    scale: torch.Tensor
    scale_inv: torch.Tensor
    amax_history: torch.Tensor
    amax_history_index: torch.Tensor


class MetaTensorType(enum.Enum):
    FORWARD = 0
    HYBRID = 1
    BACKWARD = 2


_META_KEY: dict[MetaTensorType, str] = {
    MetaTensorType.FORWARD: "scaling_fwd",
    MetaTensorType.HYBRID: "scaling_hybrid",
    MetaTensorType.BACKWARD: "scaling_bwd",
}
_KEY_SUFFIX = {MetaTensorType.FORWARD: "fwd", MetaTensorType.HYBRID: "hybrid"}
_KEY_SUFFIX[MetaTensorType.BACKWARD] = "bwd"


def meta_key(t: MetaTensorType) -> str:
    """The key of `t`'s `FP8TensorMeta` in a module's `fp8_meta`."""
    return _META_KEY[t]


def is_hybrid_mode(fp8_meta: dict[str, Any]) -> bool:
    """Whether `fp8_meta` keeps a separate E5M2 meta for the forward tensors' backward copies."""
    return meta_key(MetaTensorType.HYBRID) in fp8_meta


def get_fp8_te_dtype(recipe: DelayedScaling, fprop_tensor: bool = True) -> torch.dtype:
    """E4M3 for E4M3 recipes and HYBRID's forward tensors, else E5M2."""
    fmt = recipe.fp8_format
    if fmt is Format.E4M3 or (fmt is Format.HYBRID and fprop_tensor):
        return torch.float8_e4m3fn
    return torch.float8_e5m2


def get_fp8_te_sr(recipe: DelayedScaling, fprop_tensor: bool = True) -> bool:
    """Stochastic rounding: never forward; backward as `PT_TE_FORCE_SR_BWD` says, else under
    the HYBRID format."""
    if fprop_tensor:
        return False
    forced = os.getenv("PT_TE_FORCE_SR_BWD")
    if forced is not None:
        return forced.lower() in ("true", "1")
    return recipe.fp8_format is Format.HYBRID


def is_fp8_available() -> tuple[bool, str]:
    """`(True, "")` on an emulated card with an FP8 MME (Gaudi 2 and 3), else why not (asked of
    the device each time: the emulated card changes with `hpusim.enable`)."""
    rt = state.RT
    if rt is None or rt.profile.mme_fp8_tflops <= 0:
        return False, NO_FP8_DEVICE
    return True, ""


class FP8GlobalStateManager:
    """The process-wide FP8 state: the autocast region, the measurement mode and the global
    amax buffer that `reduce_amax` recipes share between modules."""

    FP8_ENABLED: ClassVar[bool] = False
    FP8_RECIPE: ClassVar[DelayedScaling | None] = None
    FP8_DISTRIBUTED_GROUP: ClassVar[Any] = None
    IS_FIRST_FP8_MODULE: ClassVar[bool] = False
    FP8_AUTOCAST_COUNTER: ClassVar[int] = 0
    FP8_CURRENT_CONTEXT_ID: ClassVar[int] = 0
    FP8_AUTOCAST_DEPTH: ClassVar[int] = 0
    FP8_MANUAL_MEASUREMENT: ClassVar[bool | None] = None
    ACTIVATION_CHECKPOINTING: ClassVar[int] = 0
    """Depth of `distributed.activation_checkpointing()` regions."""
    global_fp8_buffer: ClassVar[dict[str, list[torch.Tensor]]] = {}
    buffer_delete_key_fwd: ClassVar[str | None] = None
    buffer_delete_key_bwd: ClassVar[str | None] = None

    @classmethod
    def is_fp8_available(cls) -> tuple[bool, str]:
        return is_fp8_available()

    @classmethod
    def is_fp8_enabled(cls) -> bool:
        return cls.FP8_ENABLED

    @classmethod
    def get_fp8_recipe(cls) -> DelayedScaling:
        return cls.FP8_RECIPE or DelayedScaling()

    @classmethod
    def get_fp8_group(cls) -> Any:
        return cls.FP8_DISTRIBUTED_GROUP

    @classmethod
    def get_fp8_autocast_state(cls) -> tuple[bool, DelayedScaling | None, Any, bool]:
        return (cls.FP8_ENABLED, cls.FP8_RECIPE, cls.FP8_DISTRIBUTED_GROUP, cls.IS_FIRST_FP8_MODULE)

    @classmethod
    def set_fp8_autocast_state(cls, state: tuple[bool, DelayedScaling | None, Any, bool]) -> None:
        cls.FP8_ENABLED, cls.FP8_RECIPE, cls.FP8_DISTRIBUTED_GROUP, cls.IS_FIRST_FP8_MODULE = state

    @classmethod
    def fp8_autocast_enter(
        cls,
        enabled: bool = False,
        force_measurement: bool | None = None,
        fp8_recipe: DelayedScaling | None = None,
        fp8_group: Any = None,
    ) -> None:
        """Enter an FP8 region: the outermost one starts a new autocast id (the first module
        run in it is the 'first module') and sets the measurement mode."""
        cls.FP8_ENABLED = enabled
        cls.FP8_RECIPE = fp8_recipe or DelayedScaling()
        cls.FP8_DISTRIBUTED_GROUP = fp8_group
        if cls.FP8_AUTOCAST_DEPTH == 0:
            cls.IS_FIRST_FP8_MODULE = True
            cls.FP8_AUTOCAST_COUNTER += 1
            cls.FP8_MANUAL_MEASUREMENT = force_measurement
        cls.FP8_AUTOCAST_DEPTH += 1
        if enabled:
            available, reason = cls.is_fp8_available()
            assert available, reason

    @classmethod
    def fp8_autocast_exit(cls) -> None:
        cls.FP8_AUTOCAST_DEPTH -= 1

    @classmethod
    def is_first_fp8_module(cls) -> bool:
        """True for the first module that asks within an autocast region, then False."""
        first = cls.IS_FIRST_FP8_MODULE
        cls.IS_FIRST_FP8_MODULE = False
        return first

    @classmethod
    def get_manual_measurement_mode(cls) -> bool | None:
        return cls.FP8_MANUAL_MEASUREMENT

    @classmethod
    def set_measurement_mode(cls, manual: bool, manual_value: bool = True) -> None:
        """Measure amaxes (`manual_value`) regardless of the recipe's interval, or (`manual`
        False) follow the interval again."""
        cls.FP8_MANUAL_MEASUREMENT = manual_value if manual else None

    @classmethod
    @contextlib.contextmanager
    def measurement_as_captured(cls, captured: bool | None) -> Iterator[None]:
        """A training-side HPU graph (`ModuleCacher`) replays the amax measurement its capture
        recorded, whatever the mode is at replay: the emulator re-runs the forward under the
        mode the capture had (Habana's docs capture one graph with and one without
        measurement; the bridge's `lazy/test_hpu_graph_fp8_te.py`)."""
        now, cls.FP8_MANUAL_MEASUREMENT = cls.FP8_MANUAL_MEASUREMENT, captured
        try:
            yield
        finally:
            cls.FP8_MANUAL_MEASUREMENT = now

    @classmethod
    def in_activation_recompute(cls) -> bool:
        """Inside an `activation_checkpointing()` region while autograd runs a backward: the
        forward being run is activation checkpointing's recompute."""
        return cls.ACTIVATION_CHECKPOINTING > 0 and torch._C._current_graph_task_id() != -1

    @classmethod
    def get_fp8_context_id(cls) -> int:
        return cls.FP8_CURRENT_CONTEXT_ID

    @classmethod
    def set_fp8_context_id(cls, ctx_id: int) -> None:
        cls.FP8_CURRENT_CONTEXT_ID = ctx_id

    @classmethod
    def new_fp8_context_id(cls) -> int:
        return cls.FP8_AUTOCAST_COUNTER

    @classmethod
    def set_fp8_autocast_counter(cls, value: int = 0) -> None:
        cls.FP8_AUTOCAST_COUNTER = value

    @classmethod
    def clear_global_fp8_buffer(cls) -> None:
        cls.global_fp8_buffer.clear()

    @classmethod
    def reset_global_state(cls) -> None:
        cls.set_fp8_autocast_counter(0)
        cls.clear_global_fp8_buffer()

    @classmethod
    def get_global_fp8_buffer_checkpoint(cls) -> dict[str, list[torch.Tensor]]:
        return cls.global_fp8_buffer

    @classmethod
    def set_global_fp8_buffer_checkpoint(cls, buffer: dict[str, list[torch.Tensor]]) -> None:
        """The global amax buffer from a checkpoint, its tensors moved to the device."""
        for key, tensors in buffer.items():
            buffer[key] = [t.to("hpu") for t in tensors]
        cls.global_fp8_buffer = buffer

    @classmethod
    def get_global_fp8_state_checkpoint(cls) -> dict[str, Any]:
        names = (
            "FP8_AUTOCAST_COUNTER",
            "FP8_CURRENT_CONTEXT_ID",
            "FP8_AUTOCAST_DEPTH",
            "FP8_MANUAL_MEASUREMENT",
            "buffer_delete_key_fwd",
            "buffer_delete_key_bwd",
        )
        return {name: getattr(cls, name) for name in names}

    @classmethod
    def set_global_fp8_state_checkpoint(cls, state: dict[str, Any]) -> None:
        for key, value in state.items():
            if hasattr(cls, key):
                setattr(cls, key, value)

    @staticmethod
    def get_meta_tensor_key(t: MetaTensorType) -> str:
        return meta_key(t)

    @staticmethod
    def get_run_id_key(forward: bool = True) -> str:
        return "run_id_fwd" if forward else "run_id_bwd"

    @staticmethod
    def get_buffer_position_key(forward: bool = True) -> str:
        return "global_fp8_buffer_pos_fwd" if forward else "global_fp8_buffer_pos_bwd"

    @classmethod
    def get_amax_buffer_key(cls, fp8_meta: dict[str, Any], forward: bool = True) -> str:
        run_id = fp8_meta[cls.get_run_id_key(forward)]
        return f"FWD_AMAX_{run_id}" if forward else f"BWD_AMAX_{run_id}"

    @staticmethod
    def _scaling(fp8_meta: dict[str, Any], forward: bool) -> FP8TensorMeta:
        meta: FP8TensorMeta = fp8_meta[meta_key(_direction(forward))]
        return meta

    @classmethod
    def add_amax_to_global_buffer(cls, fp8_meta: dict[str, Any], forward: bool = True) -> None:
        """Append this step's amax row (the forward meta's stands for the hybrid one too) to
        the buffer under this run's key; the module remembers its position in it."""
        meta = cls._scaling(fp8_meta, forward)
        row = meta.amax_history[meta.amax_history_index][0]
        buffer_key = cls.get_amax_buffer_key(fp8_meta, forward)
        cls.global_fp8_buffer.setdefault(buffer_key, []).append(row)
        position_key = cls.get_buffer_position_key(forward)
        if position_key not in fp8_meta:
            fp8_meta[position_key] = len(cls.global_fp8_buffer[buffer_key]) - 1

    @classmethod
    def copy_amax_from_global_buffer(cls, fp8_meta: dict[str, Any], forward: bool = True) -> None:
        """Write the (reduced) amax row back from the buffer into the module's history (and the
        hybrid meta's)."""
        position_key = cls.get_buffer_position_key(forward)
        if position_key not in fp8_meta:
            return
        buffer_key = cls.get_amax_buffer_key(fp8_meta, forward)
        assert buffer_key in cls.global_fp8_buffer, "TE internal error."
        row = cls.global_fp8_buffer[buffer_key][fp8_meta[position_key]]
        metas = [cls._scaling(fp8_meta, forward)]
        if forward and is_hybrid_mode(fp8_meta):
            metas.append(fp8_meta[meta_key(MetaTensorType.HYBRID)])
        for meta in metas:
            meta.amax_history[meta.amax_history_index] = row

    @classmethod
    def set_amax_buffer_key_deletion(cls, fp8_meta: dict[str, Any], forward: bool = True) -> None:
        """Mark this run's buffer entry to be dropped at the next step's first module."""
        if cls.get_run_id_key(forward) not in fp8_meta:
            return
        key = cls.get_amax_buffer_key(fp8_meta, forward)
        if forward:
            cls.buffer_delete_key_fwd = key
        else:
            cls.buffer_delete_key_bwd = key

    @classmethod
    def delete_key_from_amax_buffer(cls, forward: bool = True) -> None:
        key = cls.buffer_delete_key_fwd if forward else cls.buffer_delete_key_bwd
        if key is not None and key in cls.global_fp8_buffer:
            del cls.global_fp8_buffer[key]
            if forward:
                cls.buffer_delete_key_fwd = None
            else:
                cls.buffer_delete_key_bwd = None

    @classmethod
    def global_amax_reduction(
        cls,
        fp8_meta: dict[str, Any],
        reduce_amax_across_tp_group: bool = False,
        tp_group: Any = None,
        forward: bool = True,
    ) -> None:
        """Max-reduce the run's buffered amaxes over the fp8 group (and the TP group) when
        torch.distributed runs; the buffer keeps the reduced rows."""
        buffer_key = cls.get_amax_buffer_key(fp8_meta, forward)
        if buffer_key not in cls.global_fp8_buffer:
            return
        rows = cls.global_fp8_buffer[buffer_key]
        contiguous = torch.cat(rows)
        groups = [fp8_meta["fp8_group"]] + ([tp_group] if reduce_amax_across_tp_group else [])
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            for group in groups:
                torch.distributed.all_reduce(
                    contiguous, op=torch.distributed.ReduceOp.MAX, group=group
                )
        cls.global_fp8_buffer[buffer_key] = list(contiguous.split([r.numel() for r in rows]))


def _direction(forward: bool) -> MetaTensorType:
    return MetaTensorType.FORWARD if forward else MetaTensorType.BACKWARD


def is_fp8_enabled() -> bool:
    """True inside an enabled `fp8_autocast` (lightning-habana asks at module level)."""
    return FP8GlobalStateManager.is_fp8_enabled()


def set_measurement_mode(manual: bool, manual_value: bool = True) -> None:
    FP8GlobalStateManager.set_measurement_mode(manual, manual_value)


@contextlib.contextmanager
def fp8_autocast(
    enabled: bool = False,
    force_measurement: bool | None = None,
    fp8_recipe: DelayedScaling | None = None,
    fp8_group: Any = None,
    **_ignored: Any,
) -> Iterator[None]:
    """Run `te` modules in FP8 inside the block (`enabled`), with `fp8_recipe`'s scaling;
    `force_measurement` (outermost region only) overrides the recipe's measurement interval."""
    saved = FP8GlobalStateManager.get_fp8_autocast_state()
    try:
        FP8GlobalStateManager.fp8_autocast_enter(enabled, force_measurement, fp8_recipe, fp8_group)
        yield
    finally:
        FP8GlobalStateManager.set_fp8_autocast_state(saved)
        FP8GlobalStateManager.fp8_autocast_exit()


def _history_amax(history: torch.Tensor, algo: Any) -> torch.Tensor:
    if callable(algo):
        amax: torch.Tensor = algo(history)
        return amax
    if algo == "max" and history.shape[0] > 1:
        return torch.max(history, dim=0).values
    return history[0]  # "most_recent": row 0, as Intel's Gaudi port reads it


def _default_sf_compute(
    amax: torch.Tensor, scale: torch.Tensor, fp8_max: float, margin: int
) -> torch.Tensor:
    """The scale for `amax`: 2**(floor(log2(fp8_max / amax)) - margin); `scale` where amax is 0."""
    exp = torch.floor(torch.log2(fp8_max / amax)) - margin
    return torch.where(amax > 0.0, torch.pow(2.0, exp), scale)


def _scale_from_amax(
    amax: torch.Tensor, scale: torch.Tensor, fp8_max: float, recipe: DelayedScaling
) -> torch.Tensor:
    if recipe.scaling_factor_compute_algo is not None:
        return recipe.scaling_factor_compute_algo(amax, scale, fp8_max, recipe)
    return _default_sf_compute(amax, scale, fp8_max, recipe.margin)


class _ActivationCheckpointing(contextlib.ContextDecorator):
    """A region (or a decorated function) whose recompute under torch's activation
    checkpointing leaves the FP8 state as the step's forward left it."""

    def __enter__(self) -> _ActivationCheckpointing:
        FP8GlobalStateManager.ACTIVATION_CHECKPOINTING += 1
        return self

    def __exit__(self, *exc: object) -> None:
        FP8GlobalStateManager.ACTIVATION_CHECKPOINTING -= 1


def activation_checkpointing() -> _ActivationCheckpointing:
    """`transformer_engine.distributed.activation_checkpointing()`, as a context manager or a
    decorator: `te` modules run again by `torch.utils.checkpoint` during the backward count no
    step, update no scale and measure no amax in that forward (the FP8 state stays the one the
    step's forward set: the bridge's `test_gradient_checkpointing` pins the forward scales
    across the backward); outside a backward it changes nothing."""
    return _ActivationCheckpointing()


def amax_and_scale_update(
    fp8_meta: dict[str, Any], fwd_update: bool, perform_scale_update: bool
) -> None:
    """New scales from the amax histories (when `perform_scale_update`), then the next history
    row: the forward metas (and hybrid) or the backward one."""
    recipe: DelayedScaling = fp8_meta["recipe"]
    if fwd_update:
        kinds = [MetaTensorType.FORWARD] + (
            [MetaTensorType.HYBRID] if is_hybrid_mode(fp8_meta) else []
        )
    else:
        kinds = [MetaTensorType.BACKWARD]
    for kind in kinds:
        meta: FP8TensorMeta = fp8_meta[meta_key(kind)]
        if perform_scale_update:
            fp8_max = fp8_meta["fp8_max_fwd" if kind is MetaTensorType.FORWARD else "fp8_max_bwd"]
            amax = _history_amax(meta.amax_history, recipe.amax_compute_algo)
            meta.scale = _scale_from_amax(amax, meta.scale, fp8_max, recipe)
            meta.scale_inv = torch.reciprocal(meta.scale)
        if recipe.amax_history_len > 1:
            meta.amax_history_index.add_(1)
            meta.amax_history_index.remainder_(recipe.amax_history_len)


def ensure_ops() -> None:
    """Define the bridge's `torch.ops.hpu.*` (the FP8 casts and `fp8_gemm_v2` among them)."""
    hpu_ops.install()


def _record_amax(amax: torch.Tensor, meta: FP8TensorMeta, index: int) -> None:
    """`amax` into the history's current row, column `index`."""
    if meta.amax_history.shape[0] > 1:
        row = torch.index_select(meta.amax_history, 0, meta.amax_history_index)
        row[0][index].copy_(amax)
        meta.amax_history[meta.amax_history_index] = row
    else:
        meta.amax_history[0][index].copy_(amax)


def cast_to_fp8(
    inp: torch.Tensor,
    meta: FP8TensorMeta,
    fp8_tensor: int,
    otype: torch.dtype,
    stochastic_rounding: bool = False,
    measure_amax: bool = True,
) -> torch.Tensor:
    """`inp` times the meta's scale for `fp8_tensor`, in `otype` (`hpu::cast_to_fp8_v2`); its
    amax goes into the history when `measure_amax`."""
    ensure_ops()
    scale = meta.scale[fp8_tensor]
    out, amax = torch.ops.hpu.cast_to_fp8_v2(
        inp, scale, stochastic_rounding, measure_amax, dtype=otype
    )
    if measure_amax:
        _record_amax(amax, meta, fp8_tensor)
    result: torch.Tensor = out
    return result


def cast_to_fp8_hybrid(
    inp: torch.Tensor,
    e5m2_meta: FP8TensorMeta,
    e4m3_meta: FP8TensorMeta,
    fp8_tensor: int,
    measure_amax: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(E5M2 cast by the first meta's scale, E4M3 cast by the second's) in one
    `hpu::cast_to_fp8_hybrid`; the amax goes into both histories when `measure_amax`."""
    ensure_ops()
    e5m2, e4m3, amax = torch.ops.hpu.cast_to_fp8_hybrid(
        inp, e5m2_meta.scale[fp8_tensor], e4m3_meta.scale[fp8_tensor], False, measure_amax
    )
    if measure_amax:
        _record_amax(amax, e5m2_meta, fp8_tensor)
        _record_amax(amax, e4m3_meta, fp8_tensor)
    return e5m2, e4m3


def cast_from_fp8(
    inp: torch.Tensor, meta: FP8TensorMeta, fp8_tensor: int, otype: torch.dtype
) -> torch.Tensor:
    """`inp` in `otype` times the meta's inverse scale for `fp8_tensor` (`hpu::cast_from_fp8`)."""
    ensure_ops()
    out: torch.Tensor = torch.ops.hpu.cast_from_fp8(inp, meta.scale_inv[fp8_tensor], otype)
    return out


def fp8_gemm(
    A: torch.Tensor,
    A_scale_inv: torch.Tensor,
    B: torch.Tensor,
    B_scale_inv: torch.Tensor,
    out_dtype: torch.dtype,
    bias: torch.Tensor | None = None,
    use_bias: bool = False,
    accumulate: bool = False,
    out: torch.Tensor | None = None,
    transa: bool = True,
    transb: bool = False,
) -> torch.Tensor:
    """TE's TN-layout GEMM: op(B) @ op(A) (A transposed by default), dequantized by both
    inverse scales, plus `bias` when `use_bias`, plus `out` when `accumulate`
    (`hpu::fp8_gemm_v2`)."""
    ensure_ops()
    product: torch.Tensor = torch.ops.hpu.fp8_gemm_v2(
        B, transb, A, transa, out if accumulate else None, out_dtype, B_scale_inv, A_scale_inv,
        bias if use_bias else None, accumulate,
    )  # fmt: skip
    if out is not None:
        return out.copy_(product)
    return product


@contextlib.contextmanager
def _prepare_backward(
    fp8: bool,
    fp8_meta: dict[str, Any],
    measure_state: dict[str, Any],
    scale_update_required: bool,
    reduce_across_tp_group: bool,
    tp_group: Any = None,
) -> Iterator[None]:
    """Before a backward: update the gradients' scales from the last measured step (through
    the global buffer under `reduce_amax`); after: buffer this step's gradient amaxes."""
    manager = FP8GlobalStateManager
    recipe: DelayedScaling = fp8_meta["recipe"]
    if fp8:
        if fp8_meta["update_amax_bwd"].get("bwd_enabled", False):
            if recipe.reduce_amax:
                manager.copy_amax_from_global_buffer(fp8_meta, forward=False)
            amax_and_scale_update(fp8_meta, False, scale_update_required)
            if recipe.reduce_amax and fp8_meta["first_module"]:
                manager.set_amax_buffer_key_deletion(fp8_meta, forward=False)
        if measure_state["bwd_enabled"] and recipe.reduce_amax:
            fp8_meta[manager.get_run_id_key(forward=False)] = fp8_meta["run_id_fwd_stack"].pop(0)
        fp8_meta["update_amax_bwd"] = measure_state
    yield
    if fp8 and recipe.reduce_amax:
        if measure_state["bwd_enabled"]:
            manager.add_amax_to_global_buffer(fp8_meta, forward=False)
            if fp8_meta["first_module"]:
                manager.global_amax_reduction(
                    fp8_meta, reduce_across_tp_group, tp_group, forward=False
                )
        if fp8_meta["first_module"]:
            manager.delete_key_from_amax_buffer(forward=False)
    fp8_meta["in_activation_recompute_phase"] = None


_MODULES = [0]  # modules made so far: each module's name is its number


class TransformerEngineBaseModule(torch.nn.Module):
    """The FP8 state every TE module keeps (`fp8_meta`) and its per-step bookkeeping."""

    def __init__(self) -> None:
        super().__init__()
        self.fp8_initialized = False
        self.fp8 = False
        self.fp8_meta: dict[str, Any] = {
            "fp8_checkpoint": False,
            "fp8_group": None,
            "recipe": DelayedScaling(),
            "run_id_fwd_stack": [],
            "update_amax_fwd": {},
            "update_amax_bwd": {},
            "is_scale_update_required": False,
            "in_activation_recompute_phase": None,
        }
        self.fp8_meta_tensors_initialized = False
        self.tp_group: Any = None
        self.tp_size = 1
        self.sequence_parallel = False
        self.fp8_weight_shapes: list[torch.Size] = []
        self.run_cnt = 0
        self.name = f"{_MODULES[0]}"
        _MODULES[0] += 1

    def _resize_amax_history(self, key: str, num_tensors: int) -> None:
        """A changed `amax_history_len`: keep the latest rows (ending at the current index);
        a longer history gets zero rows after the current one."""
        meta: FP8TensorMeta = self.fp8_meta[key]
        have, want = meta.amax_history.shape[0], self.fp8_meta["recipe"].amax_history_len
        index = int(meta.amax_history_index[0])
        if want < have:
            begin = index - want + 1
            if begin < 0:
                history = meta.amax_history
                meta.amax_history = torch.cat((history[begin:], history[: index + 1]))
                meta.amax_history_index[0] = want - 1
            else:
                meta.amax_history = meta.amax_history[begin : index + 1].clone()
                meta.amax_history_index[0] = index - begin
        elif want > have:
            zeros = torch.zeros(want - have, num_tensors, dtype=torch.float32, device="hpu")
            history = meta.amax_history
            meta.amax_history = torch.cat((history[: index + 1], zeros, history[index + 1 :]))

    def set_meta_tensor(self, kind: MetaTensorType) -> None:
        """Make (or resize) the scales and amax history of one meta: two tensors per GEMM
        forward (input, weight), one backward (the output gradient)."""
        key = meta_key(kind)
        forward = kind is not MetaTensorType.BACKWARD
        num_tensors = self.fp8_meta["num_gemms"] * (2 if forward else 1)
        if self.fp8_meta_tensors_initialized:
            self._resize_amax_history(key, num_tensors)
            return
        meta = FP8TensorMeta()
        meta.scale = torch.ones(num_tensors, dtype=torch.float32, device="hpu")
        meta.scale_inv = torch.ones(num_tensors, dtype=torch.float32, device="hpu")
        rows = self.fp8_meta["recipe"].amax_history_len
        meta.amax_history = torch.zeros(rows, num_tensors, dtype=torch.float32, device="hpu")
        meta.amax_history_index = torch.zeros(1, dtype=torch.int32, device="hpu")
        self.fp8_meta[key] = meta

    def init_fp8_meta_tensors(self, force_hybrid_init: bool = False) -> None:
        self.set_meta_tensor(MetaTensorType.FORWARD)
        if force_hybrid_init or self.fp8_meta["recipe"].fp8_format is Format.HYBRID:
            self.set_meta_tensor(MetaTensorType.HYBRID)
        self.set_meta_tensor(MetaTensorType.BACKWARD)
        self.fp8_meta_tensors_initialized = True

    def _metas(self) -> list[MetaTensorType]:
        hybrid = [MetaTensorType.HYBRID] if is_hybrid_mode(self.fp8_meta) else []
        return [MetaTensorType.FORWARD, *hybrid, MetaTensorType.BACKWARD]

    def get_extra_state(self) -> torch.Tensor:
        """The FP8 state (scales, histories, indices, the global amax buffer, the plain values
        of `fp8_meta`) pickled into a uint8 tensor; None pickled when not in FP8."""
        state: dict[str, Any] | None = None
        if self.fp8_meta.get("fp8_checkpoint", False) or self.fp8:
            state = {}
            for kind in self._metas():
                meta, suffix = self.fp8_meta[meta_key(kind)], _KEY_SUFFIX[kind]
                state[f"scale_{suffix}"] = meta.scale
                state[f"scale_inv_{suffix}"] = meta.scale_inv
                state[f"amax_history_{suffix}"] = meta.amax_history
                state[f"amax_history_index_{suffix}"] = meta.amax_history_index
            state["global_fp8_buffer"] = FP8GlobalStateManager.get_global_fp8_buffer_checkpoint()
            state["update_amax_fwd"] = self.fp8_meta["update_amax_fwd"]
            state["update_amax_bwd"] = self.fp8_meta["update_amax_bwd"]
            plain = (bool, int, float, str)
            extra = {k: v for k, v in self.fp8_meta.items() if isinstance(v, plain)}
            state["extra_fp8_variables"] = extra
        return torch.tensor(np.frombuffer(pickle.dumps(state), dtype=np.uint8))

    def set_extra_state(self, state: Any) -> None:
        """Restore what `get_extra_state` saved (a None state changes nothing)."""
        if state is None:
            return
        if isinstance(state, torch.Tensor):
            state = pickle.loads(state.detach().cpu().numpy().tobytes())
            if state is None:
                return
        FP8GlobalStateManager.set_global_fp8_buffer_checkpoint(state["global_fp8_buffer"])
        self.fp8_meta.update(state["extra_fp8_variables"])
        self.fp8_meta["recipe"].amax_history_len = state["amax_history_fwd"].shape[0]
        self.fp8_meta.pop("global_fp8_buffer_pos_fwd_recompute", None)
        hybrid = "scale_hybrid" in state
        self.init_fp8_meta_tensors(force_hybrid_init=hybrid)
        kinds = [MetaTensorType.FORWARD, *([MetaTensorType.HYBRID] if hybrid else [])]
        for kind in [*kinds, MetaTensorType.BACKWARD]:
            meta, suffix = self.fp8_meta[meta_key(kind)], _KEY_SUFFIX[kind]
            meta.scale.copy_(state[f"scale_{suffix}"])
            meta.amax_history.copy_(state[f"amax_history_{suffix}"])
            meta.amax_history_index.copy_(state[f"amax_history_index_{suffix}"])
            inverse = state.get(f"scale_inv_{suffix}")
            meta.scale_inv.copy_(1.0 / state[f"scale_{suffix}"] if inverse is None else inverse)
        self.fp8_meta["update_amax_fwd"] = state.get("update_amax_fwd", {})
        self.fp8_meta["update_amax_bwd"] = state.get("update_amax_bwd", {})

    def save_fp8_meta(self) -> list[torch.Tensor]:
        """Copies of (scale, scale_inv, amax_history, amax_history_index) of each meta
        (forward, hybrid, backward), for `load_fp8_meta`."""
        saved: list[torch.Tensor] = []
        for kind in self._metas():
            meta = self.fp8_meta[meta_key(kind)]
            parts = (meta.scale, meta.scale_inv, meta.amax_history, meta.amax_history_index)
            saved.extend(t.clone() for t in parts)
        return saved

    def load_fp8_meta(self, saved: list[torch.Tensor]) -> None:
        """Copy `save_fp8_meta`'s tensors back, in place (it consumes the list)."""
        for kind in self._metas():
            meta = self.fp8_meta[meta_key(kind)]
            for part in (meta.scale, meta.scale_inv, meta.amax_history, meta.amax_history_index):
                part.copy_(saved.pop(0))

    def set_activation_dtype(self, inp: torch.Tensor) -> None:
        """The GEMMs' output dtype: autocast's, else the input's (checked against the
        parameters' the first time)."""
        if torch.is_autocast_enabled("hpu"):
            self.activation_dtype = torch.get_autocast_dtype("hpu")
            return
        if hasattr(self, "activation_dtype"):
            return
        for name, param in self.named_parameters():
            assert inp.dtype == param.dtype, (
                "Data types for parameters must match when outside of autocasted region. "
                f" Found input dtype: {inp.dtype} and {name!r} dtype: {param.dtype}"
            )
        self.activation_dtype = inp.dtype

    def set_fp8_weights(self) -> None:
        """Persistent FP8 weight copies (`weight1_fp8_fwd`, and `_bwd` under HYBRID) for the
        weight cache of `is_first_microbatch`."""
        for i, shape in enumerate(self.fp8_weight_shapes, start=1):
            kinds = [True] + ([False] if is_hybrid_mode(self.fp8_meta) else [])
            for fprop in kinds:
                name = f"weight{i}_fp8_" + ("fwd" if fprop else "bwd")
                if hasattr(self, name) and getattr(self, name).shape == shape:
                    continue
                dtype = get_fp8_te_dtype(self.fp8_meta["recipe"], fprop_tensor=fprop)
                setattr(self, name, torch.zeros(shape, device="hpu", dtype=dtype))

    def set_tensor_parallel_group(self, tp_group: Any) -> None:
        self.tp_group = tp_group
        self.tp_group_initialized = True

    def fp8_init(self, num_gemms: int = 1) -> None:
        """Inside `fp8_autocast`: take its recipe (a new one makes, or resizes, the metas)."""
        self.fp8 = is_fp8_enabled()
        self.fp8_meta["fp8_checkpoint"] = self.fp8
        if not self.fp8:
            self.fp8_initialized = False
            return
        recipe = FP8GlobalStateManager.get_fp8_recipe()
        if self.fp8_initialized and recipe == self.fp8_meta["recipe"]:
            return
        self.fp8_meta["recipe"] = recipe
        self.fp8_meta["num_gemms"] = num_gemms
        self.fp8_meta["fp8_group"] = FP8GlobalStateManager.get_fp8_group()
        self.fp8_meta["fp8_max_fwd"] = recipe.fp8_format.value.max_fwd
        self.fp8_meta["fp8_max_bwd"] = recipe.fp8_format.value.max_bwd
        self.init_fp8_meta_tensors()
        self.fp8_initialized = True

    def _steps_into_interval(self) -> int:
        """This step's place in its scale-update interval: 0 on steps 1, I+1, 2I+1... (they
        update the scales), I-1 on the step before. The 1.19 bridge's tests pin the update to
        those steps (`test_amax_measure_interval`: scales stay 1 for the first I-1 steps)."""
        interval: int = self.fp8_meta["recipe"].interval
        return (self.run_cnt - 1) % interval

    def _measures_this_step(self) -> bool:
        """The `amax_history_len` steps before each scale update measure."""
        recipe: DelayedScaling = self.fp8_meta["recipe"]
        window = range(recipe.interval - recipe.amax_history_len, recipe.interval)
        return recipe.interval == 1 or self._steps_into_interval() in window

    def get_amax_measure_state(self) -> dict[str, Any]:
        """Whether this step measures amaxes: as forced (`set_measurement_mode`,
        `force_measurement`), else in the `amax_history_len` steps before a scale update."""
        manual = FP8GlobalStateManager.get_manual_measurement_mode()
        enabled = manual if manual is not None else self._measures_this_step()
        return {"manual": manual is not None, "bwd_enabled": enabled, "fwd_enabled": enabled}

    def forward_measure_state(self) -> dict[str, Any]:
        """What this forward's casts measure: `get_amax_measure_state()`, or in activation
        checkpointing's recompute nothing in the forward and, in the backward, what the
        step's forward decided."""
        if FP8GlobalStateManager.in_activation_recompute():
            return {**self.fp8_meta["update_amax_fwd"], "fwd_enabled": False}
        return self.get_amax_measure_state()

    def is_scale_update_required(self) -> bool:
        """Whether this step's scales update: as the last forward's forced measurement said,
        else every `interval` steps."""
        if not self.fp8:
            return False
        last = self.fp8_meta["update_amax_fwd"]
        if last.get("manual", False):
            return bool(last.get("bwd_enabled", False))
        return self.fp8_meta["recipe"].interval == 1 or self._steps_into_interval() == 0

    @contextlib.contextmanager
    def prepare_forward(
        self, inp: torch.Tensor, is_first_microbatch: bool | None, num_gemms: int = 1
    ) -> Iterator[tuple[torch.Tensor, bool]]:
        """Per forward: count the step, update the forward scales from the last measured step,
        decide whether this step measures, and afterwards buffer its amaxes (`reduce_amax`)."""
        manager = FP8GlobalStateManager
        meta = self.fp8_meta
        if manager.in_activation_recompute() and self.fp8_initialized:
            # activation checkpointing's recompute: the forward's scales as they are, no step
            # counted, no amax measured or buffered (the step's forward did that)
            yield inp.contiguous(), False
            return
        self.run_cnt += 1
        self.set_activation_dtype(inp)
        self.fp8_init(num_gemms=num_gemms)
        if is_first_microbatch is not None:
            self.set_fp8_weights()
        meta["is_scale_update_required"] = self.is_scale_update_required()
        if "first_module" not in meta:
            meta["first_module"] = manager.is_first_fp8_module()
        if meta["first_module"]:
            manager.delete_key_from_amax_buffer(forward=True)
        recipe: DelayedScaling = meta["recipe"]
        if meta["update_amax_fwd"].get("fwd_enabled", False):
            if recipe.reduce_amax:
                if meta["first_module"]:
                    manager.global_amax_reduction(
                        meta, self.sequence_parallel, self.tp_group, forward=True
                    )
                manager.copy_amax_from_global_buffer(meta, forward=True)
            amax_and_scale_update(meta, True, meta["is_scale_update_required"])
            if recipe.reduce_amax and meta["first_module"]:
                manager.set_amax_buffer_key_deletion(meta, forward=True)
        if self.fp8 and self.training:
            measure = self.get_amax_measure_state()
            if measure["fwd_enabled"] and recipe.reduce_amax:
                run_id_key = manager.get_run_id_key(forward=True)
                if meta["first_module"]:
                    meta[run_id_key] = self.run_cnt
                    manager.set_fp8_context_id(self.run_cnt)
                else:
                    meta[run_id_key] = manager.get_fp8_context_id()
                meta["run_id_fwd_stack"].append(meta[run_id_key])
            meta["update_amax_fwd"] = measure
        else:
            meta["update_amax_fwd"] = {}
        meta["name"] = self.name
        meta["run_cnt"] = self.run_cnt
        yield inp.contiguous(), meta["is_scale_update_required"]
        if (
            self.fp8
            and self.training
            and recipe.reduce_amax
            and meta["update_amax_fwd"].get("fwd_enabled")
        ):
            manager.add_amax_to_global_buffer(meta, forward=True)

    @staticmethod
    def grad_output_preprocess(
        ctx: Any, grad_output: torch.Tensor, measure_state: dict[str, Any]
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """(the output gradient as a matrix, its FP8 cast by the backward meta, the bias
        gradient when there is a bias)."""
        grad_mat = grad_output.contiguous().view(-1, grad_output.shape[-1])
        grad_bias = grad_mat.sum(dim=0) if ctx.use_bias else None
        recipe = ctx.fp8_meta["recipe"]
        grad_fp8 = cast_to_fp8(
            grad_mat,
            ctx.fp8_meta[meta_key(MetaTensorType.BACKWARD)],
            FP8BwdTensors.GRAD_OUTPUT1,
            get_fp8_te_dtype(recipe, fprop_tensor=False),
            stochastic_rounding=get_fp8_te_sr(recipe, fprop_tensor=False),
            measure_amax=measure_state["bwd_enabled"],
        )
        return grad_mat, grad_fp8, grad_bias


class FusedAttention(TransformerEngineBaseModule):
    """`te.FusedAttention(scale=None, attention_dropout=0.0, enable_recompute=True)`, called as
    `(q, k, v, attn_mask=None, is_causal=False, softmax_mode="None")` (the arguments the
    bridge's `test_te_fused_sdpa` passes; Intel's package is not public): outside an FP8
    region it is `FusedSDPA` with the module's dropout (while training) and recompute mode."""

    def __init__(
        self,
        scale: float | None = None,
        attention_dropout: float = 0.0,
        enable_recompute: bool = True,
    ) -> None:
        super().__init__()
        self.scale = scale
        self.attention_dropout = attention_dropout
        self.enable_recompute = enable_recompute

    def forward(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        attn_mask: torch.Tensor | None = None,
        is_causal: bool = False,
        softmax_mode: str = "None",
    ) -> Any:
        if is_fp8_enabled():
            raise NotImplementedError(
                "te.FusedAttention in an fp8_autocast region is not available under the hpusim "
                "emulator: its FP8 scaling state is Intel's transformer engine's"
            )
        from hpusim.hpex import FusedSDPA

        dropout = self.attention_dropout if self.training else 0.0
        return FusedSDPA.apply(
            q, k, v, attn_mask, dropout, is_causal, self.scale, softmax_mode,
            self.enable_recompute,
        )  # fmt: skip


def _cast_if_needed(t: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor | None:
    return t if t is None or t.dtype == dtype else t.to(dtype)


class _Fp8Linear(torch.autograd.Function):
    """`y = x W^T + b` with FP8 operands: the input and weight cast by the forward meta (and,
    under HYBRID, in E5M2 by the hybrid meta for the backward), the output gradient by the
    backward meta."""

    @staticmethod
    def forward(
        ctx: Any,
        weight: torch.Tensor,
        weight_fp8_fwd: torch.Tensor | None,
        weight_fp8_bwd: torch.Tensor | None,
        inp: torch.Tensor,
        bias: torch.Tensor | None,
        use_bias: bool,
        is_first_microbatch: bool | None,
        fp8_meta: dict[str, Any],
        activation_dtype: torch.dtype,
        minimize_memory: bool,
        measure_state: dict[str, Any],
        scale_update_required: bool,
    ) -> torch.Tensor:
        in_features = weight.shape[-1]
        assert inp.shape[-1] == in_features, "GEMM not possible"
        inputmat = _cast_if_needed(inp.view(-1, in_features), activation_dtype)
        assert inputmat is not None
        recipe: DelayedScaling = fp8_meta["recipe"]
        fwd_dtype = get_fp8_te_dtype(recipe, fprop_tensor=True)
        fwd_key = meta_key(MetaTensorType.FORWARD)
        update_weights = is_first_microbatch is None or is_first_microbatch
        measure = measure_state["fwd_enabled"]
        if not is_hybrid_mode(fp8_meta):
            input_fp8 = cast_to_fp8(
                inputmat, fp8_meta[fwd_key], FP8FwdTensors.GEMM1_INPUT, fwd_dtype,
                measure_amax=measure,
            )  # fmt: skip
            if update_weights:
                casted = cast_to_fp8(
                    weight, fp8_meta[fwd_key], FP8FwdTensors.GEMM1_WEIGHT, fwd_dtype,
                    measure_amax=measure,
                )  # fmt: skip
                weight_fp8_fwd = casted if weight_fp8_fwd is None else weight_fp8_fwd.copy_(casted)
            input_for_bwd, weight_for_bwd, cache_key = input_fp8, weight_fp8_fwd, fwd_key
        else:
            hybrid_key = meta_key(MetaTensorType.HYBRID)
            input_for_bwd, input_fp8 = cast_to_fp8_hybrid(
                inputmat, fp8_meta[hybrid_key], fp8_meta[fwd_key], FP8FwdTensors.GEMM1_INPUT,
                measure_amax=measure,
            )  # fmt: skip
            if update_weights:
                casted_bwd, casted_fwd = cast_to_fp8_hybrid(
                    weight, fp8_meta[hybrid_key], fp8_meta[fwd_key], FP8FwdTensors.GEMM1_WEIGHT,
                    measure_amax=measure,
                )  # fmt: skip
                if weight_fp8_fwd is None or weight_fp8_bwd is None:
                    weight_fp8_fwd, weight_fp8_bwd = casted_fwd, casted_bwd
                else:
                    weight_fp8_fwd.copy_(casted_fwd)
                    weight_fp8_bwd.copy_(casted_bwd)
            weight_for_bwd, cache_key = weight_fp8_bwd, hybrid_key
        assert weight_fp8_fwd is not None
        # an fp32 run adds a bf16 bias, as Intel's te.Linear
        bias_dtype = torch.bfloat16 if activation_dtype == torch.float32 else activation_dtype
        bias = _cast_if_needed(bias, bias_dtype) if use_bias else bias
        fwd_meta = fp8_meta[fwd_key]
        out = fp8_gemm(
            weight_fp8_fwd, fwd_meta.scale_inv[FP8FwdTensors.GEMM1_WEIGHT],
            input_fp8, fwd_meta.scale_inv[FP8FwdTensors.GEMM1_INPUT],
            activation_dtype, bias=bias, use_bias=use_bias,
        )  # fmt: skip
        cache_weight = not minimize_memory and not is_first_microbatch and inp.requires_grad
        if inp.requires_grad or weight.requires_grad:
            ctx.save_for_backward(
                input_for_bwd if weight.requires_grad else None,
                weight_for_bwd if cache_weight else None,
                weight,
                fp8_meta[cache_key].scale_inv.clone(),
                fp8_meta[cache_key].scale.clone(),
            )
            ctx.activation_dtype = activation_dtype
            ctx.fp8_meta = fp8_meta
            ctx.use_bias = use_bias
            ctx.inp_shape = inp.shape
            ctx.measure_state = dict(measure_state)
            ctx.scale_update_required = scale_update_required
            ctx.requires_wgrad = weight.requires_grad
            ctx.requires_dgrad = inp.requires_grad
        return out.view(-1, *inp.shape[1:-1], out.shape[-1])

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        meta = ctx.fp8_meta
        with _prepare_backward(True, meta, ctx.measure_state, ctx.scale_update_required, False):
            input_fp8, weight_fp8, weight, scale_invs, scales = ctx.saved_tensors
            _, grad_fp8, grad_bias = TransformerEngineBaseModule.grad_output_preprocess(
                ctx, grad_output, ctx.measure_state
            )
            recipe: DelayedScaling = meta["recipe"]
            if weight_fp8 is None:  # not kept from the forward: cast again
                weight_fp8, _ = torch.ops.hpu.cast_to_fp8_v2(
                    weight, scales[FP8FwdTensors.GEMM1_WEIGHT], False, False,
                    dtype=get_fp8_te_dtype(recipe, fprop_tensor=False),
                )  # fmt: skip
            grad_scale_inv = meta[meta_key(MetaTensorType.BACKWARD)].scale_inv
            dgrad = wgrad = None
            if ctx.requires_dgrad:
                dgrad = fp8_gemm(
                    weight_fp8, scale_invs[FP8FwdTensors.GEMM1_WEIGHT],
                    grad_fp8, grad_scale_inv[FP8BwdTensors.GRAD_OUTPUT1],
                    ctx.activation_dtype, transa=False,
                ).view(ctx.inp_shape)  # fmt: skip
            if ctx.requires_wgrad:
                wgrad = fp8_gemm(
                    input_fp8, scale_invs[FP8FwdTensors.GEMM1_INPUT],
                    grad_fp8, grad_scale_inv[FP8BwdTensors.GRAD_OUTPUT1],
                    ctx.activation_dtype, transa=False, transb=True,
                )  # fmt: skip
        bias_grad = grad_bias if ctx.use_bias else None
        return (wgrad, None, None, dgrad, bias_grad) + (None,) * 7


class Linear(TransformerEngineBaseModule):
    """`te.Linear`: `y = x W^T + b`, in FP8 with delayed scaling inside `fp8_autocast`, like
    `nn.Linear` outside.

    Args:
        in_features, out_features, bias: as `torch.nn.Linear`.
        init_method: initializes the weight (default: normal, std 0.023); the bias starts at 0.
        return_bias: return (output, bias) and leave adding the bias to the caller.
        params_dtype: dtype of the weight and bias (default: torch's default dtype).
        skip_weight_param_allocation: no weight / bias parameters: `forward` is given them.
        device: where the parameters live (default: `hpu` while the emulator is enabled).
        minimize_memory: cast the weight again in the backward instead of keeping its copy.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        sequence_parallel: bool = False,
        tp_group: Any = None,
        tp_size: int = 1,
        get_rng_state_tracker: Callable[[], Any] | None = None,
        init_method: Callable[[torch.Tensor], Any] | None = None,
        bias: bool = True,
        return_bias: bool = False,
        params_dtype: torch.dtype | None = None,
        parallel_mode: str | None = None,
        skip_weight_param_allocation: bool = False,
        device: Any = None,
        minimize_memory: bool = False,
        **_ignored: Any,
    ) -> None:
        super().__init__()
        ensure_ops()
        self.name += "_Linear"
        if device is None:
            device = "hpu" if is_enabled() else "cpu"
        dtype = params_dtype or torch.get_default_dtype()
        self.in_features, self.out_features = in_features, out_features
        self.use_bias, self.return_bias = bias, return_bias
        self.apply_bias = bias and not return_bias
        self.minimize_memory = minimize_memory
        self.tp_size = tp_size
        self.set_tensor_parallel_group(tp_group)
        self.parallel_mode = parallel_mode
        self.weight: torch.Tensor | None = None
        self.bias: torch.Tensor | None = None
        if not skip_weight_param_allocation:
            self.weight = torch.nn.Parameter(
                torch.empty(out_features, in_features, device=device, dtype=dtype)
            )
            init = init_method or (lambda w: torch.nn.init.normal_(w, mean=0.0, std=0.023))
            if get_rng_state_tracker is None:
                init(self.weight)
            else:
                with get_rng_state_tracker().fork():
                    init(self.weight)
            if bias:
                self.bias = torch.nn.Parameter(
                    torch.empty(out_features, device=device, dtype=dtype)
                )
            else:
                self.bias = torch.Tensor().to(dtype=dtype, device=device)
            with torch.no_grad():
                self.bias.zero_()
        self.fp8_weight_shapes.append(torch.Size((out_features, in_features)))

    def reset_parameters(self) -> None:
        if self.weight is not None:
            torch.nn.init.normal_(self.weight, mean=0.0, std=0.023)

    def get_fp8_weights_scratchpad(self, is_first_microbatch: bool | None) -> list[Any]:
        """The persistent FP8 weight copies when `is_first_microbatch` is given, else None."""
        if not self.fp8 or is_first_microbatch is None:
            return [None, None]
        if is_hybrid_mode(self.fp8_meta):
            return [self.weight1_fp8_fwd, self.weight1_fp8_bwd]
        return [self.weight1_fp8_fwd, None]

    def forward(
        self,
        inp: torch.Tensor,
        weight: torch.Tensor | None = None,
        bias: torch.Tensor | None = None,
        is_first_microbatch: bool | None = None,
    ) -> Any:
        """`weight` / `bias`: used instead of the module's (required without allocated
        parameters); `is_first_microbatch` (True / False) caches the weight's FP8 copy."""
        use_bias = self.use_bias or self.return_bias
        bias_tensor = bias if bias is not None else self.bias if use_bias else None
        weight_tensor = self.weight if weight is None else weight
        if weight_tensor is None:
            raise ValueError(
                "te.Linear(skip_weight_param_allocation=True) needs the weight passed to forward"
            )
        if not is_fp8_enabled():
            return torch.nn.functional.linear(inp, weight_tensor, bias_tensor)
        with self.prepare_forward(inp, is_first_microbatch) as (inp, scale_update_required):
            weight_fwd, weight_bwd = self.get_fp8_weights_scratchpad(is_first_microbatch)
            out = _Fp8Linear.apply(
                weight_tensor, weight_fwd, weight_bwd, inp, bias_tensor,
                self.apply_bias and bias_tensor is not None, is_first_microbatch,
                self.fp8_meta, self.activation_dtype, self.minimize_memory,
                self.forward_measure_state(), scale_update_required,
            )  # fmt: skip
        if self.return_bias:
            return out, _cast_if_needed(bias_tensor, self.activation_dtype)
        return out

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}"


__all__ = [
    "DelayedScaling",
    "FP8BwdTensors",
    "FP8FwdTensors",
    "FP8GlobalStateManager",
    "FP8TensorMeta",
    "Format",
    "FusedAttention",
    "Linear",
    "MetaTensorType",
    "amax_and_scale_update",
    "cast_from_fp8",
    "cast_to_fp8",
    "cast_to_fp8_hybrid",
    "fp8_autocast",
    "fp8_gemm",
    "get_fp8_te_dtype",
    "get_fp8_te_sr",
    "is_fp8_available",
    "is_fp8_enabled",
    "set_measurement_mode",
]
