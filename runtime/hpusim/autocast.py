"""Habana autocast for `torch.autocast(device_type="hpu", dtype=torch.bfloat16)` (gaudi.md 5.1).

Stock torch accepts `autocast("hpu")` but registers no AutocastHPU kernels, and the emulated
tensors are CPU-keyed in C++, so by itself the region does nothing (probe item 3). Inside an
enabled `hpu` region this module:

1. applies Habana's own lists by FUNCTION NAME through a `TorchFunctionMode` pushed only inside
   the region (above autograd, so backward dtypes follow the casts):
   - `lower_precision_fp`: float inputs cast to the region dtype (`default_lower_ops`, or the
     file named by `PT_HPU_AUTOCAST_LOWER_PRECISION_OPS_LIST`);
   - `lower_first_arg` (`layer_norm`, `group_norm`, `instance_norm`, `batch_norm`): only the
     input is cast;
   - `fp32`: float inputs cast to float32 (`default_fp32_ops`, or
     `PT_HPU_AUTOCAST_FP32_OPS_LIST`);
   - `promote`: inputs cast to the widest float dtype among them (fixed list);
   the op then runs with autocast excluded, as the bridge's autocast wrapper does;
2. mirrors the region into `torch.autocast("cpu", dtype, cache_enabled=False)` for ops reached
   only from C++ composites (e.g. the `bmm` inside `einsum`), where the C++ CPU policy applies.
   Ops that only CPU's lists name (`prelu`, `prod`, `cholesky`...) run with that mirror off, so
   a Python-level call of them is not cast (Habana does not cast them). Gaudi never caches
   autocast casts, so neither does the mirror.

Every cast is an `hpuprof.event: "cast"` with `hpuprof.op`, `hpuprof.dtype_from`,
`hpuprof.dtype_to`, `hpuprof.policy`; casts made by the C++ mirror are recorded from the
`aten::_to_copy` they dispatch (policy `cpu_mirror`).

Known divergences (documented, not hidden): ops called only from inside C++ composites follow
CPU's lists, not Habana's; plain CPU tensors inside an `hpu` region are cast by the C++ mirror
(the bridge would leave them alone); ops reached through `torch.ops.aten.*` directly are not
seen by the function mode.
"""

from __future__ import annotations

import os
import warnings
from time import perf_counter_ns
from typing import Any, Final

import hpusim.device_module as device_module
import hpusim.dispatch as dispatch
import hpusim.state as state
from hpuprof.gaudi_autocast_lists import DEFAULT_FP32_OPS, DEFAULT_LOWER_OPS
from hpuprof.trace.schema import CastSource
from hpusim.tensor import HpuTensor
from hpusim.transfers import PATCHED_METHODS

LOWER_FIRST_ARG: Final = frozenset({"layer_norm", "group_norm", "instance_norm", "batch_norm"})


PROMOTE_OPS: Final = frozenset(
    [
        "add",
        "addcmul",
        "addcdiv",
        "cat",
        "div",
        "exp",
        "mul",
        "pow",
        "sub",
        "iadd",
        "truediv",
        "stack",
    ]
)
"""The bridge's promote list (fixed); the lower and fp32 lists take precedence."""

CPU_ONLY_OPS: Final = frozenset(
    [
        "conv_tbc",
        "prelu",
        "linalg_vecdot",
        "_convolution",
        "mkldnn_rnn_layer",
        "_native_multi_head_attention",
        "avg_pool3d",
        "grid_sampler",
        "polar",
        "prod",
        "quantile",
        "nanquantile",
        "stft",
        "trace",
        "view_as_complex",
        "cholesky",
        "cholesky_inverse",
        "cholesky_solve",
        "inverse",
        "lu_solve",
        "orgqr",
        "ormqr",
        "pinverse",
        "max_pool3d",
        "max_unpool2d",
        "max_unpool3d",
        "adaptive_avg_pool3d",
        "reflection_pad1d",
        "reflection_pad2d",
        "replication_pad1d",
        "replication_pad2d",
        "replication_pad3d",
        "nll_loss2d",
        "ctc_loss",
        "fractional_max_pool2d",
        "fractional_max_pool3d",
        "adaptive_max_pool3d",
        "qr",
        "svd",
        "triangular_solve",
        "linalg_qr",
        "linalg_cholesky",
        "linalg_svd",
        "linalg_eig",
        "linalg_eigh",
        "linalg_lstsq",
        "linalg_inv",
        "linalg_det",
        "linalg_norm",
        "linalg_matrix_norm",
        "linalg_solve",
    ]
)
"""Ops that torch's CPU autocast lists name but Habana's defaults do not (torch 2.13
`autocast_mode.cpp`, CPU lower-precision and fp32 lists): a Python-level call of one of them
runs with the CPU mirror off."""

# torch-function names -> the aten names the Autocast key would see
_ALIASES: Final[dict[str, tuple[str, ...]]] = {
    "__matmul__": ("matmul",),
    "__rmatmul__": ("matmul",),
    "__mul__": ("mul",),
    "__rmul__": ("mul",),
    "multiply": ("mul",),
    "__add__": ("add",),
    "__radd__": ("add",),
    "__iadd__": ("iadd", "add"),
    "__sub__": ("sub",),
    "subtract": ("sub",),
    "__truediv__": ("truediv", "div"),
    "__rtruediv__": ("truediv", "div"),
    "__pow__": ("pow",),
    "__rpow__": ("pow",),
    "cross_entropy": ("cross_entropy_loss",),
    "concat": ("cat",),
    "concatenate": ("cat",),
    "alpha_dropout": ("alpha_dropout",),
    "feature_alpha_dropout": ("feature_alpha_dropout",),
    "dropout1d": ("feature_dropout",),
    "dropout2d": ("feature_dropout",),
    "dropout3d": ("feature_dropout",),
}
_CONVERSIONS: Final = frozenset(
    [
        "to",
        "type",
        "float",
        "double",
        "half",
        "bfloat16",
        "_to_copy",
        "copy_",
        "clone",
        "detach",
        "contiguous",
    ]
)

P_NONE, P_LOWER, P_FIRST, P_FP32, P_PROMOTE, P_CPU_ONLY = range(6)
POLICY_NAMES: Final = ("", "lower_precision_fp", "lower_first_arg", "fp32", "promote", "")

LOWER_ENV: Final = "PT_HPU_AUTOCAST_LOWER_PRECISION_OPS_LIST"
FP32_ENV: Final = "PT_HPU_AUTOCAST_FP32_OPS_LIST"


class Lists:
    """The active op lists (loaded once at `install`, like the bridge at library load)."""

    lower: frozenset[str] = frozenset(DEFAULT_LOWER_OPS)
    fp32: frozenset[str] = frozenset(DEFAULT_FP32_OPS)


def read_op_list(path: str, default: list[str]) -> frozenset[str]:
    """One op name per line; on an unreadable file the bridge's warning and the default list."""
    try:
        with open(path, encoding="utf-8") as f:
            return frozenset(line.strip() for line in f if line.strip())
    except OSError:
        warnings.warn(
            f"Failed to open file with ops to autocast: {path}. Default list loaded.",
            stacklevel=2,
        )
        return frozenset(default)


def load_lists() -> None:
    """Read `PT_HPU_AUTOCAST_*_OPS_LIST` (each file replaces its default list)."""
    lower = os.environ.get(LOWER_ENV)
    fp32 = os.environ.get(FP32_ENV)
    Lists.lower = read_op_list(lower, DEFAULT_LOWER_OPS) if lower else frozenset(DEFAULT_LOWER_OPS)
    Lists.fp32 = read_op_list(fp32, DEFAULT_FP32_OPS) if fp32 else frozenset(DEFAULT_FP32_OPS)
    _POLICY.clear()


def op_names(name: str) -> tuple[str, ...]:
    """The aten-level op names a torch-function name stands for (`__matmul__` -> `matmul`)."""
    dunder = name.startswith("__") and name.endswith("__")
    return _ALIASES.get(name) or (name[2:-2] if dunder else name,)


def policy_of(name: str) -> tuple[int, str]:
    """(policy code, matched op name) of a torch-function name under the active lists."""
    names = op_names(name)
    for n in names:
        if n in Lists.lower:
            return (P_FIRST if n in LOWER_FIRST_ARG else P_LOWER), n
    for n in names:
        if n in Lists.fp32:
            return P_FP32, n
    for n in names:
        if n in PROMOTE_OPS:
            return P_PROMOTE, n
    for n in names:
        if n in CPU_ONLY_OPS:
            return P_CPU_ONLY, n
    return P_NONE, names[0]


_POLICY: dict[Any, tuple[int, str]] = {}
_passthrough: list[str | None] = [None]


def _eligible(t: Any, H: type) -> bool:
    import torch

    if type(t) is not H:
        return False
    x: Any = t
    return bool(x.is_floating_point()) and x.dtype is not torch.float64


def record_cast(
    op: str, src: Any, dst: Any, policy: str, ts: int, source: CastSource = "autocast"
) -> None:
    """One `cast` event (`hpuprof.op`, `hpuprof.dtype_from/to`, `hpuprof.policy`)."""
    rt = state.RT
    if rt is None or not rt.sink.recording:
        return
    rt.events.autocast_cast(op, src, dst, policy, source, ts, perf_counter_ns() - ts, rt.mode_code)


def cast(x: Any, dtype: Any, op: str, policy: str, H: type, source: CastSource = "autocast") -> Any:
    """`x` (or each tensor of a list) cast to `dtype` when it is an eligible hpu float tensor;
    each cast recorded."""
    if _eligible(x, H) and x.dtype != dtype:
        ts = perf_counter_ns()
        src = x.dtype
        y = x.to(dtype)
        record_cast(op, src, dtype, policy, ts, source)
        return y
    if isinstance(x, (list, tuple)) and x and any(_eligible(v, H) for v in x):
        return type(x)(cast(v, dtype, op, policy, H, source) for v in x)
    return x


def widest_dtype(args: Any, kwargs: dict[str, Any], H: type) -> Any:
    import torch

    widest = None
    for a in (*args, *kwargs.values()):
        items = a if isinstance(a, (list, tuple)) else (a,)
        for t in items:
            if _eligible(t, H):
                widest = t.dtype if widest is None else torch.promote_types(widest, t.dtype)
    return widest


def _mode_class() -> type:
    import torch
    from torch.overrides import TorchFunctionMode

    is_enabled = torch.is_autocast_enabled
    get_dtype = torch.get_autocast_dtype
    set_enabled = torch.set_autocast_enabled
    compiling = torch.compiler.is_compiling

    class HabanaAutocastMode(TorchFunctionMode):
        """Casts per Habana's lists; pushed only inside enabled `autocast("hpu")` regions."""

        def __torch_function__(
            self, func: Any, types: Any, args: Any = (), kwargs: Any = None
        ) -> Any:
            if compiling():
                # dynamo inlines a mode's __torch_function__ into the graph it traces: the
                # bridge's autocast is C++, invisible to dynamo, so nothing here may break the
                # graph (the host clock below would, once per op; so would the emulator's own
                # Python for a Tensor method it patches: called by name, the method goes in
                # the graph); the CPU mirror's policy applies, as in _cast_and_call
                kwargs = kwargs or {}
                for patched, name in PATCHED_METHODS:
                    if func is patched:
                        return getattr(args[0], name)(*args[1:], **kwargs)
                return func(*args, **kwargs)
            # the emulation of the bridge's C++ autocast is not the script's host time
            rt = state.RT
            if rt is None:
                return self._cast_and_call(func, args, kwargs)
            rt.clock.enter(perf_counter_ns())
            try:
                return self._cast_and_call(func, args, kwargs)
            finally:
                rt.clock.exit(perf_counter_ns())

        def _cast_and_call(self, func: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            pol = _POLICY.get(func)
            if pol is None:
                pol = _POLICY[func] = policy_of(getattr(func, "__name__", ""))
            code, op = pol
            if not is_enabled("hpu") or compiling():  # dynamo: the CPU mirror's policy
                return func(*args, **kwargs)
            if code == P_NONE:
                prev = _passthrough[0]
                _passthrough[0] = None if op in _CONVERSIONS else op
                try:
                    return func(*args, **kwargs)
                finally:
                    _passthrough[0] = prev
            if code == P_LOWER:
                dtype = get_dtype("hpu")
                args = tuple(cast(a, dtype, op, POLICY_NAMES[code], HpuTensor) for a in args)
                kwargs = {
                    k: cast(v, dtype, op, POLICY_NAMES[code], HpuTensor) for k, v in kwargs.items()
                }
            elif code == P_FIRST and args:
                dtype = get_dtype("hpu")
                args = (cast(args[0], dtype, op, POLICY_NAMES[code], HpuTensor), *args[1:])
            elif code == P_FP32:
                args = tuple(
                    cast(a, torch.float32, op, POLICY_NAMES[code], HpuTensor) for a in args
                )
                kwargs = {
                    k: cast(v, torch.float32, op, POLICY_NAMES[code], HpuTensor)
                    for k, v in kwargs.items()
                }
            elif code == P_PROMOTE:
                dtype = widest_dtype(args, kwargs, HpuTensor)
                if dtype is not None:
                    args = tuple(cast(a, dtype, op, POLICY_NAMES[code], HpuTensor) for a in args)
                    kwargs = {
                        k: cast(v, dtype, op, POLICY_NAMES[code], HpuTensor)
                        for k, v in kwargs.items()
                    }
            # the bridge runs the op with the Autocast key excluded: no nested casts
            prev_cpu = is_enabled("cpu")
            prev = _passthrough[0]
            _passthrough[0] = None
            set_enabled("cpu", False)
            try:
                return func(*args, **kwargs)
            finally:
                set_enabled("cpu", prev_cpu)
                _passthrough[0] = prev

    return HabanaAutocastMode


_MODE: list[type] = []
_orig: dict[str, Any] = {}
_regions: list[int] = [0]  # open hpu regions; the mirror listener is attached only inside


def _is_compiling() -> bool:
    import torch

    return bool(torch.compiler.is_compiling())


def _patched_enter(self: Any) -> Any:
    result = _orig["enter"](self)
    if self.device == "hpu":
        import torch

        if not _MODE:
            _MODE.append(_mode_class())
        if self._enabled:
            mirror = torch.autocast("cpu", dtype=self.fast_dtype, cache_enabled=False)
            mirror.__enter__()
            # AOT tracing a compiled region: the C++ (CPU) policy only
            mode = None if _is_compiling() else _MODE[0]()
            if mode is not None:
                mode.__enter__()
        else:
            mirror = torch.autocast("cpu", enabled=False)
            mirror.__enter__()
            mode = None
        self._hpusim_mirror = (mirror, mode)
        if _regions[0] == 0:
            dispatch.add_op_listener(_mirror_listener)
        _regions[0] += 1
    return result


def _patched_exit(self: Any, *exc: Any) -> Any:
    pair = self.__dict__.pop("_hpusim_mirror", None)
    if pair is not None:
        _regions[0] -= 1
        if _regions[0] == 0:
            dispatch.remove_op_listener(_mirror_listener)
        mirror, mode = pair
        if mode is not None:
            mode.__exit__(*exc)
        mirror.__exit__(*exc)
    return _orig["exit"](self, *exc)


def _mirror_listener(func: Any, key: Any, out: Any, info: Any) -> None:
    """A dtype-changing `_to_copy` made by the C++ mirror inside a passthrough op is a cast."""
    op = _passthrough[0]
    if op is None or info.label != "aten::_to_copy":
        return
    sig = key[1]
    src = sig[0][3] if sig and type(sig[0]) is tuple and len(sig[0]) == 5 else None
    dst = getattr(out, "dtype", None)
    if src is None or dst is None or src == dst:
        return
    record_cast(op, src, dst, "cpu_mirror", perf_counter_ns())


# --- torch.hpu autocast helpers (gaudi.md 5.1) -----------------------------------------------


def is_autocast_hpu_enabled() -> bool:
    import torch

    return bool(torch.is_autocast_enabled("hpu"))


def set_autocast_hpu_enabled(enabled: bool) -> None:
    import torch

    torch.set_autocast_enabled("hpu", enabled)


def get_autocast_hpu_dtype() -> Any:
    import torch

    return torch.get_autocast_dtype("hpu")


def set_autocast_hpu_dtype(dtype: Any) -> None:
    import torch

    torch.set_autocast_dtype("hpu", dtype)


def is_bf16_supported() -> bool:
    return True


_HELPERS: Final = (
    "is_autocast_hpu_enabled",
    "set_autocast_hpu_enabled",
    "get_autocast_hpu_dtype",
    "set_autocast_hpu_dtype",
    "is_bf16_supported",
)


def install() -> None:
    """Load the lists from the env and patch `torch.autocast` enter/exit (idempotent)."""
    from torch.amp.autocast_mode import autocast

    load_lists()
    if not _orig:
        _orig["enter"] = autocast.__enter__
        _orig["exit"] = autocast.__exit__
        autocast.__enter__ = _patched_enter  # type: ignore[method-assign]
        autocast.__exit__ = _patched_exit  # type: ignore[method-assign]
    g = globals()
    for name in _HELPERS:
        device_module.register_attribute(name, g[name])


def uninstall() -> None:
    dispatch.remove_op_listener(_mirror_listener)
    _regions[0] = 0
    if _orig:
        from torch.amp.autocast_mode import autocast

        autocast.__enter__ = _orig.pop("enter")  # type: ignore[method-assign]
        autocast.__exit__ = _orig.pop("exit")  # type: ignore[method-assign]
