"""`__torch_dispatch__` of the emulated device: run every op on CPU, model it on the device.

Per op: unwrap the hpu wrappers (strict cross-device check), build the op key (op + argument
signature: sizes, strides, dtypes, storage offsets, scalar values), decide CPU fallback from the
op table, run the real CPU kernel, wrap outputs (aliasing outputs return the caller's wrapper),
then account for it on the modeled device: eager = per-op recipe + launch; lazy = append to
the pending graph (flushed by `lazy.flush`). Schema facts are cached per OpOverload and modeled
costs per op key, so a repeated op costs a few dict lookups.
"""

from __future__ import annotations

from time import perf_counter_ns
from typing import Any, Final

import torch

import hpusim.fallback as fb
import hpusim.op_dtypes as op_dtypes
import hpusim.rng as rng
import hpusim.state as state
from hpusim.accounting import after_op, gap_mode
from hpusim.attribution import _UNKNOWN, module_and_phase, phase_code
from hpusim.device_kernels import KERNELS as DEVICE_KERNELS
from hpusim.device_model import ENGINE_DMA, engine_of
from hpusim.dtype_rules import (
    COMPLEX_DTYPES,
    COMPLEX_ERROR,
    device_dtype_values,
    has_demoted_dtype,
    record_rule,
)
from hpusim.fake import run as run_fake
from hpusim.fused_costs import FUSED_OPS, FusedOpCost, fused_op_cost
from hpusim.lazy import flush, host_sync
from hpusim.metrics import EventId, publish
from hpusim.recorder import input_json
from hpusim.sink import MODE_EAGER
from hpusim.tensor import HpuTensor, dynamo_tracing
from hpusim.transfers import record_copy
from hpusim.widened_compute import call_in_fp32, missing_cpu_kernel

aten = torch.ops.aten
_current_node = torch._C._current_autograd_node
_fake_mode = torch._C._get_dispatch_mode
_FAKE = torch._C._TorchDispatchModeKey.FAKE

MIXED_DEVICE_ERROR: Final = (
    "Expected all tensors to be on the same device, but found at least two devices, hpu:0 and cpu!"
)
_NO_DEVICE_WORK: Final = frozenset(
    {
        "aten::_local_scalar_dense",  # the scalar read (a host sync)
        "_c10d_functional::wait_tensor",  # waits for a functional collective (host side)
        "_c10d_functional::_wrap_tensor_autograd",  # an identity for autograd
    }
)
_CROSS_DEVICE_OK: Final = frozenset(
    {
        "aten::copy_",
        "aten::_to_copy",
        "aten::index",
        "aten::index_put_",
        "aten::_index_put_impl_",
        "aten::_copy_from",
        "aten::_copy_from_and_resize",
        "aten::set_",
    }
)
SYNC_REASON: Final[dict[str, str]] = {
    "aten::_local_scalar_dense": "local scalar",
    "aten::is_nonzero": "local scalar",  # bool(t) (inference mode reaches it undecomposed)
    "aten::equal": "local scalar",  # torch.equal returns a host bool
    "aten::nonzero": "non zero",
    "aten::nonzero_static": "non zero",
    "aten::argwhere": "non zero",
    "aten::masked_select": "non zero",
    "aten::_unique": "unique",
    "aten::_unique2": "unique",
    "aten::unique_dim": "unique",
    "aten::unique_consecutive": "unique",
    "aten::unique_dim_consecutive": "unique",
}
SCALAR_AS_TENSOR: Final[dict[str, tuple[str, ...]]] = {
    **{f"aten::{op}": ("value",) for op in ("addcdiv", "addcdiv_", "addcmul", "addcmul_")},
    **{f"aten::{op}.out": ("value",) for op in ("addcdiv", "addcmul")},
    # `.Tensor` overloads get a Python number as a wrapped scalar (`t / 2.5`): the bridge's
    # prepare_hpu_tensor / BinaryScalarFE turns it into a cached device tensor too
    **{f"aten::{op}.Tensor": ("other", "alpha") for op in ("add", "add_", "sub", "sub_")},
    **{f"aten::{op}.Tensor": ("other",) for op in ("mul", "mul_", "div", "div_")},
    **{f"aten::{op}.Tensor": ("other",) for op in ("eq", "ne", "lt", "le", "gt", "ge")},
    **{f"aten::{op}.Scalar": ("other", "alpha") for op in ("add", "add_", "sub", "sub_")},
    **{f"aten::{op}.Scalar": ("other",) for op in ("mul", "mul_", "div", "div_")},
    **{f"aten::{op}.Scalar": ("other",) for op in ("eq", "ne", "lt", "le", "gt", "ge")},
    **{f"aten::{op}.Scalar": ("other",) for op in ("bitwise_and", "bitwise_or", "bitwise_xor")},
    "aten::pow.Scalar": ("self",),
    "aten::xlogy.Scalar_Other": ("other",),
    "aten::xlogy_.Scalar_Other": ("other",),
    "aten::xlogy.Scalar_Self": ("self",),
}
"""Scalar arguments the lazy bridge turns into cached device tensors (`get_tensor_for_scalar`:
hpu_op.yaml's AddCOpFE, BinaryScalarFE, CompareScalarToTensor, ... frontends), so their value
is not part of the recipe key; a `value`/`alpha` of exactly 1 is dropped instead (no tensor)."""
BOOL_INDEX_OPS: Final = frozenset({"aten::index_put_", "aten::_index_put_impl_", "aten::index_put"})
_LOW_PRECISION: Final = frozenset(
    {torch.bfloat16, torch.float16, torch.float8_e5m2, torch.float8_e4m3fn}
)
_DTYPE_SUFFIX: Final[dict[torch.dtype, str]] = {
    torch.float32: "f32",
    torch.float64: "f32",
    torch.bfloat16: "bf16",
    torch.float16: "f16",
    torch.int64: "i64",
    torch.int32: "i32",
    torch.bool: "i8",
    torch.int8: "i8",
    torch.uint8: "u8",
}

_listeners: list[Any] = []


def add_op_listener(fn: Any) -> None:
    """Extension hook: `fn(func, key, out, info)` after every device op (HPU-graph capture...).

    `key` is the op key `(overload name, argument signature)` used by the recipe caches."""
    _listeners.append(fn)


def remove_op_listener(fn: Any) -> None:
    if fn in _listeners:
        _listeners.remove(fn)


class OpInfo:
    """Schema facts of one OpOverload, computed once."""

    __slots__ = (
        "alias",
        "base",
        "bool_index",
        "call",
        "collective",
        "cross_ok",
        "dtype_rules",
        "engine",
        "func",
        "fused",
        "inplace_self",
        "is_copy",
        "is_view",
        "label",
        "missing",
        "name_id",
        "overload",
        "plain_out",
        "scalar_args",
        "sync_reason",
        "to_host",
    )

    def __init__(self, func: Any, name_id: int) -> None:
        schema = func._schema
        self.func = func
        # a plain OpOverload's __call__ only forwards to its C++ `_op`: call that directly
        # (subclasses such as TorchBindOpOverload do more in __call__)
        self.call = func._op if type(func) is torch._ops.OpOverload else func
        self.label: str = schema.name  # "aten::add" (the Kineto cpu_op name)
        self.overload = fb.overload_name(func)
        # ops whose HPU kernel the bridge registers in place of torch's composite
        self.call = DEVICE_KERNELS.get(self.overload, self.call)
        # a random op draws its seed from the device's generator (hpusim.rng)
        self.call = rng.device_call(func, self.call)
        self.name_id = name_id
        self.base = fb.base_name(func)
        self.engine = engine_of(schema.name.split("::", 1)[-1])
        # run by hpusim.distributed: c10d ops and functional collectives (DTensor, FSDP2's
        # full_tensor, tensor parallel)
        self.collective = self.label.startswith("c10d::") or (
            self.label.startswith("_c10d_functional::") and self.label not in _NO_DEVICE_WORK
        )
        alias: list[tuple[int, str | None, bool]] = []
        arg_pos = {a.name: i for i, a in enumerate(schema.arguments)}
        kwarg_only = {a.name for a in schema.arguments if a.kwarg_only}
        view = False
        for ret in schema.returns:
            ai = ret.alias_info
            if ai is None:
                alias.append((-1, None, False))
                continue
            # find the argument carrying the same alias set
            match = -1
            name: str | None = None
            for a in schema.arguments:
                if a.alias_info is not None and set(a.alias_info.before_set) & set(ai.before_set):
                    match = arg_pos[a.name]
                    name = a.name if a.name in kwarg_only else None
                    break
            alias.append((match, name, bool(ai.is_write)))
            if not ai.is_write:
                view = True
        self.alias = tuple(alias)
        # views, the scalar read and functional collectives' waits launch nothing on the device
        self.is_view = view or self.label in _NO_DEVICE_WORK
        self.cross_ok = self.label in _CROSS_DEVICE_OK
        self.to_host = self.label in _COMPLEX_TO_HOST
        self.is_copy = self.label == "aten::copy_"
        self.plain_out = len(alias) == 1 and alias[0][0] == -1
        self.inplace_self = self.alias == ((0, None, True),)  # add_, mul_...: returns `self`
        self.sync_reason = SYNC_REASON.get(self.label)
        # boolean-mask indexing: index() computes nonzero (a sync after), index_put flushes first
        self.bool_index = (
            2 if self.label in BOOL_INDEX_OPS else (1 if self.label == "aten::index" else 0)
        )
        self.missing = fb.is_missing(func)
        self.dtype_rules = None if view else op_dtypes.rules(func)
        self.fused = _fused_args(schema) if schema.name in FUSED_OPS else None
        names = SCALAR_AS_TENSOR.get(self.overload)
        self.scalar_args: tuple[frozenset[int], frozenset[str]] | None = (
            (frozenset(arg_pos[n] for n in names if n in arg_pos), frozenset(names))
            if names
            else None
        )


_INFO: dict[str, OpInfo] = {}


def op_info(func: Any) -> OpInfo:
    info: OpInfo | None = getattr(func, "_hpusim_info", None)
    if info is None:
        rt = state.RT
        sink = rt.sink if rt is not None else None
        name = func._schema.name
        info = OpInfo(func, sink.intern(name) if sink is not None else 0)
        # cached on the OpOverload itself: its Python-level __hash__ is too slow for the hot path
        func._hpusim_info = info
        _INFO[info.overload] = info
    return info


class OpCost:
    """Modeled device cost of one op key (and its trace strings), computed once."""

    __slots__ = (
        "demote",
        "dev_name",
        "dims",
        "dur",
        "eager_new",
        "eager_rid",
        "engine",
        "fallback",
        "flops",
        "fusible",
        "low",
        "model_args",
        "nbytes",
        "out_bytes",
        "record",
        "record_host",
        "rule_dtype",
        "types",
    )

    def __init__(self) -> None:
        self.eager_rid = -1
        self.eager_new = False
        self.fallback = False
        self.out_bytes = 0
        self.rule_dtype: torch.dtype | None = None
        self.dims = 0
        self.types = 0
        self.dev_name = 0
        self.engine = 0
        self.flops = 0
        self.nbytes = 0
        self.dur = 0
        self.low = False
        self.fusible = False
        self.demote = False
        self.model_args: tuple[Any, ...] = ()
        """What the device model priced it from: `(fused cost, dtypes)` for a fused `hpu::`
        op, else `model_op`'s arguments (a what-if prices it again on other devices)."""
        self.record = -1
        """The sink template of this op's eager host and device events (-1: not made yet)."""
        self.record_host = (-1, -1)
        """(mode, sink template) of this op's host event alone (lazy, views, fallbacks)."""


_COST: dict[Any, OpCost] = {}


def reset_caches() -> None:
    """Forget modeled costs and support levels (they depend on the profile and the flags)."""
    _COST.clear()


def _tensor_bytes(
    sig: tuple[Any, ...],
) -> tuple[int, list[tuple[int, ...]], list[torch.dtype], list[Any]]:
    """(input bytes, tensor shapes, their dtypes, the non-tensor arguments) of a signature."""
    nbytes = 0
    shapes: list[tuple[int, ...]] = []
    dtypes: list[torch.dtype] = []
    scalars: list[Any] = []
    for a in sig:
        if type(a) is tuple and len(a) == 5 and a[0] == "T":
            tensors = (a,)
        elif type(a) is tuple and a and all(type(x) is tuple and len(x) == 5 for x in a):
            tensors = tuple(x for x in a if x[0] == "T")  # a tensor list
        else:
            scalars.append(a)
            continue
        for x in tensors:
            n = 1
            for d in x[1]:
                n *= d
            nbytes += n * x[3].itemsize
            shapes.append(tuple(x[1]))
            dtypes.append(x[3])
    return nbytes, shapes, dtypes, scalars


def _out_numel_bytes(out: Any) -> tuple[int, int]:
    if isinstance(out, torch.Tensor):
        return out.numel(), out.numel() * out.element_size()
    if isinstance(out, (tuple, list)):
        n = b = 0
        for o in out:
            if isinstance(o, torch.Tensor):
                n += o.numel()
                b += o.numel() * o.element_size()
        return n, b
    return 0, 0


def make_cost(info: OpInfo, key: tuple[Any, Any], out: Any) -> OpCost:
    """Model one op: engine, FLOPs, bytes, duration, trace strings (cached per key)."""
    rt = state.RT
    assert rt is not None
    sink = rt.sink
    c = OpCost()
    dims, types = input_json(key[1])
    c.dims = sink.intern(dims)
    c.types = sink.intern(types)
    in_bytes, shapes, dtypes, scalars = _tensor_bytes(key[1])
    dtype = dtypes[0] if dtypes else None
    out_numel, out_bytes = _out_numel_bytes(out)
    c.out_bytes = out_bytes
    c.low = dtype in _LOW_PRECISION
    # a view shares storage whose values were already stored as the device holds them
    c.demote = not info.is_view and has_demoted_dtype(out, rt.flags.int64_support)
    label = info.label
    fc = _fused_cost(info, key[1]) if info.fused is not None else None
    if fc is not None:  # the bridge's fused `hpu::` op: ONE device op (fused_costs)
        c.model_args = (fc, dtypes)
        m = rt.timeline.model_fused(fc, dtypes)
    else:
        c.model_args = (
            label.split("::", 1)[-1],
            shapes,
            dtypes,
            out_numel,
            in_bytes + out_bytes,
            scalars,
            label,
        )
        m = rt.timeline.model_op(*c.model_args)
    c.engine, c.flops, c.nbytes, c.dur, c.fusible = m
    if fc is not None:  # a fused kernel is typed by its data, not a leading seed / packed input
        dtype = next((d for d in dtypes if d is not None and d.is_floating_point), dtype)
    suffix = _DTYPE_SUFFIX.get(dtype, "") if dtype is not None else ""
    c.dev_name = sink.intern(f"{info.base}_{suffix}" if suffix else info.base)
    if not rt.lazy:
        c.eager_rid, hit = rt.eager_cache.add_op(_eager_key(key[0], key[1]))
        c.eager_new = not hit
    return c


def _fused_args(schema: Any) -> tuple[tuple[int, ...], int]:
    """(positions of the tensor arguments, position of `is_causal` or -1) of a fused op."""
    tensors = tuple(i for i, a in enumerate(schema.arguments) if "Tensor" in str(a.type))
    causal = next((i for i, a in enumerate(schema.arguments) if a.name == "is_causal"), -1)
    return tensors, causal


def _shape_arg(a: Any) -> tuple[Any, Any]:
    if type(a) is tuple and len(a) == 5 and a[0] == "T":
        return tuple(a[1]), a[3]
    if type(a) is tuple and a and all(type(x) is tuple and len(x) == 5 for x in a):
        return [tuple(x[1]) for x in a], [x[3] for x in a]
    return None, None


def _fused_cost(info: OpInfo, sig: tuple[Any, ...]) -> FusedOpCost | None:
    """`fused_costs`' cost of a fused `hpu::` op from its schema-ordered tensor arguments."""
    assert info.fused is not None
    tensors, causal = info.fused
    pairs = [_shape_arg(sig[i]) if i < len(sig) else (None, None) for i in tensors]
    is_causal = 0 <= causal < len(sig) and sig[causal] is True
    return fused_op_cost(
        info.label, [p[0] for p in pairs], [p[1] for p in pairs], is_causal=is_causal
    )


# --- unwrap / wrap ---------------------------------------------------------------------------


def _sig_value(a: Any) -> Any:
    if isinstance(a, list):
        return tuple(_sig_value(x) for x in a)
    if isinstance(a, torch.ScriptObject):  # a c10d ProcessGroup: no __eq__, a new wrapper
        return f"<{a._type().qualified_name()}>"  # per call; the recipe keys on its type
    try:
        hash(a)
    except TypeError:
        return repr(a)
    return a


def formula_allocations_on_device(args: Any) -> Any:
    """`args` with each host tensor (not 0-dim) as a device tensor, for an op that the autograd
    engine runs: a C++ backward formula allocates with its hpu input's C++ (CPU) options, e.g.
    `split_with_sizes`' backward fills an undefined gradient with `at::zeros(.., options)` and
    cats it with the defined ones (FSDP1's padded flat parameter). On a Gaudi that allocation
    is on the device; a user's host tensor never reaches a backward node this way (its forward
    op would have failed)."""
    if isinstance(args, (list, tuple)):
        return type(args)(formula_allocations_on_device(a) for a in args)
    if isinstance(args, torch.Tensor) and type(args) is not HpuTensor and args.dim() != 0:
        return HpuTensor(args)
    return args


def unwrap(
    args: tuple[Any, ...] | list[Any], cross_ok: bool, H: type
) -> tuple[list[Any], tuple[Any, ...], int]:
    """(unwrapped args, signature, hpu tensors + 1000 * float scalars) of a positional list."""
    out: list[Any] = []
    sig: list[Any] = []
    n_hpu = 0
    for a in args:
        t = type(a)
        if t is H:
            e = a._elem
            out.append(e)
            sig.append(("T", e.shape, e.stride(), e.dtype, e.storage_offset()))
            n_hpu += 1
        elif t is list or t is tuple:
            if (a and isinstance(a[0], torch.Tensor)) or (
                a and a[0] is None and any(isinstance(x, torch.Tensor) for x in a)
            ):
                sub, subsig, n = unwrap(a, cross_ok, H)
                out.append(sub if t is list else tuple(sub))
                sig.append(subsig)
                n_hpu += n
            else:
                out.append(a)
                sig.append(_sig_value(a))
        elif isinstance(a, torch.Tensor):
            if a.dim() != 0 and not cross_ok:
                raise RuntimeError(MIXED_DEVICE_ERROR)
            out.append(a)
            sig.append(("T", a.shape, a.stride(), a.dtype, a.storage_offset()))
        elif isinstance(a, torch.device):
            out.append(torch.device("cpu") if a.type == "hpu" else a)
            sig.append(a)
        elif t is float:
            out.append(a)
            sig.append(a)
            n_hpu += 1000
        else:
            out.append(a)
            sig.append(_sig_value(a) if t is not int and t is not bool else a)
    return out, tuple(sig), n_hpu


def wrap(out: Any, info: OpInfo, args: tuple[Any, ...], kwargs: dict[str, Any], H: type) -> Any:
    """Wrap CPU outputs as hpu tensors; aliasing in-place/out outputs return the caller's object."""
    alias = info.alias
    if isinstance(out, torch.Tensor):
        return _wrap_one(out, alias[0] if alias else (-1, None, False), args, kwargs, H, info)
    if isinstance(out, (tuple, list)):
        res = [
            _wrap_one(o, alias[i] if i < len(alias) else (-1, None, False), args, kwargs, H, info)
            if isinstance(o, torch.Tensor)
            else o
            for i, o in enumerate(out)
        ]
        return (
            type(out)(res)
            if isinstance(out, tuple) and type(out) is not tuple
            else (tuple(res) if isinstance(out, tuple) else res)
        )
    return out


def _wrap_one(
    o: torch.Tensor,
    al: tuple[int, str | None, bool],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    H: type,
    info: OpInfo,
) -> Any:
    idx, kwname, is_write = al
    if is_write:
        orig: Any = (
            kwargs.get(kwname)
            if kwname is not None
            else (args[idx] if 0 <= idx < len(args) else None)
        )
        if orig is not None:
            if type(orig) is H:
                w: Any = orig
                if w._elem is not o or w.shape != o.shape or w.stride() != o.stride():
                    reshape_wrapper(w, o)
            return orig
    if type(o) is H:
        return o
    return H(o)


def reshape_wrapper(wrapper: Any, inner: torch.Tensor) -> None:
    """An in-place op gave an hpu tensor new metadata (resize_, set_, out= that resizes): the
    wrapper takes the inner tensor's sizes, strides and dtype through torch's own `.data` setter
    (which copies a tensor's metadata onto another of the same type), and keeps the inner
    tensor."""
    torch.Tensor.data.__set__(wrapper, HpuTensor(inner))  # type: ignore[attr-defined]
    wrapper._elem = inner


# --- the dispatch entry ----------------------------------------------------------------------


def hpu_dispatch(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Run `func` for hpu tensors (called from HpuTensor.__torch_dispatch__).

    On the projected timeline the op's measured time is removed from the host clock (the
    bridge's modeled host cost replaces it, accounting.after_op); dynamo/AOT tracing on fake
    tensors is host work a Gaudi host does too, so its time is kept."""
    rt = state.RT
    faking = _fake_mode(_FAKE) is not None
    if rt is None or faking or not rt.clock.projected:
        return _dispatch(func, args, kwargs, rt, faking or dynamo_tracing())
    clock = rt.clock
    t = perf_counter_ns()
    node = _current_node()
    clock.enter(t, "drop" if node is not None else gap_mode(clock, t, False))
    try:
        # (dynamo building a fake input: it replays a view's ops on a fake base through the
        # wrappers, outside a fake mode; dynamo's work, no device op)
        return _dispatch(func, args, kwargs, rt, dynamo_tracing(), node)
    finally:
        clock.exit(perf_counter_ns())


def _dispatch(
    func: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    rt: state.Runtime | None,
    faking: bool,
    node: Any = _UNKNOWN,
) -> Any:
    """One op (`faking`: dynamo / AOT tracing on fake tensors, no device work; `node`: the
    autograd node running it, if read already): unwrap and key it, decide its support, run it
    on CPU, wrap its outputs, then account for it on the modeled device."""
    H = HpuTensor
    info = getattr(func, "_hpusim_info", None) or op_info(func)
    if rt is None:
        raise RuntimeError("hpusim: an hpu tensor was used after hpusim.disable()")
    t0 = perf_counter_ns()
    try:
        uargs, sig, n_hpu = unwrap(args, info.cross_ok, H)
    except RuntimeError:
        if _current_node() is None:
            raise
        args = formula_allocations_on_device(args)
        uargs, sig, n_hpu = unwrap(args, info.cross_ok, H)
    if kwargs:
        ukw, ksig, n_kw = _unwrap_kwargs(kwargs, info, H)
        n_hpu += n_kw
    else:
        ukw, ksig = kwargs, []
    if info.scalar_args is not None and rt.lazy:
        sig, ksig = _scalars_as_tensors(sig, ksig, info.scalar_args)
    key = (info.overload, sig + tuple(ksig)) if ksig else (info.overload, sig)

    if faking:
        return wrap(info.call(*uargs, **ukw), info, args, kwargs, H)
    # modeled costs, eager recipes and the fallback decision do not depend on float scalar
    # values (lr, eps, bias corrections): key them without those, so the caches do not grow
    ckey = key if n_hpu < 1000 else (key[0], _no_floats(key[1]))
    try:
        cost = _COST.get(ckey)
    except TypeError:  # symbolic sizes outside a fake mode: dynamo building a fake input
        return wrap(info.call(*uargs, **ukw), info, args, kwargs, H)
    if info.is_copy:
        copied = _cross_device_copy(args, uargs, t0)
        if copied is not None:
            return copied

    if cost is None:
        fallback, rule_dtype = _support_decision(info, uargs, ukw, rt)
    else:
        fallback = cost.fallback
        rule_dtype = cost.rule_dtype
    if rule_dtype is not None:
        record_rule(rt, info.overload, rule_dtype, torch.float32, "unsupported_dtype")
    if fallback:
        _before_fallback(info, rt)
    bool_mask = info.bool_index and _bool_indexed(sig)
    if bool_mask and info.bool_index == 2 and rt.lazy:
        flush(rt, "index_put_frontend_impl_hpu_lazy")

    # the op's real CPU run (meta tensors with fake compute; in fp32 where CPU torch has no
    # kernel for the device's dtype), inline: one call fewer on every op
    if rt.fake is not None:
        out = run_fake(rt, func, info, uargs, ukw, ckey)
    else:
        try:
            out = info.call(*uargs, **ukw)
        except (NotImplementedError, RuntimeError) as e:  # CPU torch lacks the device's kernel
            if fallback or not missing_cpu_kernel(e):
                raise
            out = call_in_fp32(info.call, info.func._schema, uargs, ukw)
    t1 = perf_counter_ns()
    if info.to_host:
        return out  # the bridge's complex_hpu computes on the host and returns a cpu tensor
    if info.plain_out and type(out) is torch.Tensor:  # the common case, without a call
        result, out_bytes = HpuTensor(out), out.nbytes
    else:
        result, out_bytes = _wrap_result(out, info, args, kwargs)
    if cost is None:
        if _is_complex(out):
            raise RuntimeError(COMPLEX_ERROR)
        cost = _COST[ckey] = make_cost(info, ckey, out)
        cost.fallback = fallback
        cost.rule_dtype = rule_dtype
    if cost.demote and rt.fake is None:  # fake compute: no values to store
        device_dtype_values(out, rt.flags.int64_support)
    graphed = rt.lazy and not (fallback or info.is_view)
    after_op(rt, info, cost, args, kwargs, result, t1, graphed, fallback, out_bytes)
    if fallback or info.is_view or info.collective or rt.lazy:
        result = _on_device(rt, info, cost, key, sig, uargs, args, result, t0, t1, fallback, node)
    else:  # an eager launch, the common case, without a call
        corr, start = _eager_launch(rt, cost, t1)
        if rt.sink.recording:
            module, phase = module_and_phase(rt.attribution, node)
            rt.events.eager_op(info.name_id, MODE_EAGER, cost, t0, t1, module, phase, corr, start)
    if rt.lazy or info.sync_reason is not None or bool_mask:  # else it has nothing to do
        _host_sync_after(rt, info, result, t1, fallback, bool_mask)
    if _listeners:
        for fn in _listeners:
            fn(func, key, result, info)
    return result


def _unwrap_kwargs(
    kwargs: dict[str, Any], info: OpInfo, H: type
) -> tuple[dict[str, Any], list[Any], int]:
    """(unwrapped kwargs, their signature, hpu tensors + 1000 * float scalars) of an op's
    keyword arguments; a `device` argument becomes the CPU (`_to_copy`: none)."""
    ukw: dict[str, Any] = {}
    ksig: list[Any] = []
    n_hpu = 0
    for k, v in kwargs.items():
        if k == "device":
            ukw[k] = None if info.label == "aten::_to_copy" else torch.device("cpu")
            continue
        if isinstance(v, (torch.Tensor, list)):  # a tensor or a list of them (out=)
            u, s, n = unwrap((v,), info.cross_ok, H)
            ukw[k] = u[0]
            ksig.append((k, s[0]))
            n_hpu += n
        else:
            ukw[k] = v
            ksig.append((k, _sig_value(v)))
            if type(v) is float:
                n_hpu += 1000
    return ukw, ksig, n_hpu


def _wrap_result(
    out: Any, info: OpInfo, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[Any, int]:
    """(the hpu result, the bytes of a plain op's new output or an in-place op's `self`, else
    -1)."""
    if info.plain_out and type(out) is torch.Tensor:
        return HpuTensor(out), out.nbytes
    if (
        info.inplace_self
        and type(out) is torch.Tensor
        and type(args[0]) is HpuTensor
        and args[0].shape == out.shape  # else wrap() raises the emulator's resize error
    ):
        return args[0], out.nbytes
    if info.is_view and _inference_enabled() and _views_normal_tensor(args):
        # a view of a normal tensor made inside inference_mode is a normal tensor (autograd
        # sets its version counter): build its wrapper outside inference mode
        with torch.inference_mode(False):
            return wrap(out, info, args, kwargs, HpuTensor), -1
    return wrap(out, info, args, kwargs, HpuTensor), -1


def _on_device(
    rt: state.Runtime, info: OpInfo, cost: OpCost, key: Any, sig: tuple[Any, ...],
    uargs: list[Any], args: tuple[Any, ...], result: Any, t0: int, t1: int, fallback: bool,
    node: Any,
) -> Any:  # fmt: skip
    """The op on the modeled device and in the sink, but for an eager launch (`_dispatch`'s): a
    CPU fallback's copies, a view, a collective or a lazy graph's new op. Returns the result (a
    collective's, with hpu tensors)."""
    rec = rt.sink.recording
    if fallback:
        _after_fallback(info, rt, sig, t0, t1, cost, rec)
        if rec:
            _record_op(rt, info, cost, t0, t1, node)
    elif info.is_view:
        if rec:
            _record_op(rt, info, cost, t0, t1, node)
    elif info.collective:
        return _COLLECTIVE[0](rt, info, cost, uargs, args, result, t0, t1)
    else:
        rt.graph.add(key, cost, t0)
        if rec:
            _record_op(rt, info, cost, t0, t1, node)
    return result


def _host_sync_after(
    rt: state.Runtime, info: OpInfo, result: Any, t1: int, fallback: bool, bool_mask: Any
) -> None:
    """Lazy mode counts the op (the compound-op limit) and stamps its result as written by the
    pending graph; an op whose result the host reads (`.item()`, nonzero...) syncs."""
    limit = False
    if rt.lazy:
        lazy_graph = rt.graph
        if type(result) is HpuTensor:
            result._epoch = lazy_graph.flushes  # written by the pending graph (an H2D flushes)
        limit = lazy_graph.count_op()
    if info.sync_reason is not None and not fallback:
        host_sync(rt, info.sync_reason, t1)
    elif bool_mask and info.bool_index == 1:
        host_sync(rt, "non zero", t1)
    elif limit:
        flush(rt, "reaching max accumulated compound op size")


_inference_enabled = torch.is_inference_mode_enabled


def _views_normal_tensor(args: tuple[Any, ...]) -> bool:
    return bool(args) and isinstance(args[0], torch.Tensor) and not args[0].is_inference()


def _record_op(
    rt: state.Runtime, info: OpInfo, cost: OpCost, t0: int, t1: int, node: Any = _UNKNOWN
) -> None:
    """A host op without its own device op (lazy, views, fallbacks): one sink row."""
    module, phase = module_and_phase(rt.attribution, node)
    rt.events.host_op(info.name_id, cost, t0, t1, module, phase, rt.mode_code)


def _no_collectives(*args: Any) -> Any:
    raise RuntimeError("hpusim: no collective handler (hpusim.distributed installs it)")


_COLLECTIVE: list[Any] = [_no_collectives]
"""`fn(rt, info, cost, uargs, args, result, t0, t1) -> result` running a collective's device
side; registered by `hpusim.distributed.install()` at enable (dispatch does not import it)."""


def set_collective_handler(fn: Any) -> None:
    """Register the device side of collectives (`c10d::`, `_c10d_functional::` ops)."""
    _COLLECTIVE[0] = fn


def _cross_device_copy(args: tuple[Any, ...], uargs: list[Any], t0: int) -> Any:
    """`cpu_t.copy_(hpu_t)` is a D2H, `hpu_t.copy_(cpu_t)` an H2D; None for a device copy."""
    if uargs and type(args[0]) is not HpuTensor:
        return record_copy(args[0], uargs[1], "d2h", t0)
    if (
        len(args) > 1
        and type(args[1]) is not HpuTensor
        and isinstance(args[1], torch.Tensor)
        and args[1].dim() != 0
    ):
        return record_copy(args[0], uargs[1], "h2d", t0)
    return None


_COMPLEX_TO_HOST: Final = frozenset({"aten::complex", "aten::polar"})


def _is_complex(out: Any) -> bool:
    if isinstance(out, torch.Tensor):
        return out.dtype in COMPLEX_DTYPES
    if isinstance(out, (tuple, list)):
        return any(isinstance(o, torch.Tensor) and o.dtype in COMPLEX_DTYPES for o in out)
    return False


def _scalar_marker(v: Any) -> Any:
    """What a tensorized scalar leaves in the recipe key: 1 stays 1 (no tensor is made), any
    other value becomes a device input of its type (its value is data, not graph)."""
    if type(v) in (int, float, bool):
        return 1 if v == 1 else ("scalar_tensor", type(v).__name__)
    return v


def _scalars_as_tensors(
    sig: tuple[Any, ...], ksig: list[Any], where: tuple[frozenset[int], frozenset[str]]
) -> tuple[tuple[Any, ...], list[Any]]:
    positions, names = where
    out = tuple(_scalar_marker(a) if i in positions else a for i, a in enumerate(sig))
    kout = [(k, _scalar_marker(v)) if k in names else (k, v) for k, v in ksig]
    return out, kout


def _bool_indexed(sig: tuple[Any, ...]) -> bool:
    """An index_put whose indices (argument 1) hold a boolean mask."""
    if len(sig) < 2 or type(sig[1]) is not tuple:
        return False
    return any(type(x) is tuple and len(x) == 5 and x[3] is torch.bool for x in sig[1])


def _no_floats(sig: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(
        float
        if type(a) is float
        else ((a[0], float) if type(a) is tuple and len(a) == 2 and type(a[1]) is float else a)
        for a in sig
    )


def _eager_key(func: Any, sig: tuple[Any, ...]) -> tuple[Any, ...]:
    """Eager recipes are shape-agnostic (PT_HPU_EAGER_SHAPE_AGNOSTIC_GRAPH): op + ranks + dtypes
    + non-float scalars."""
    parts: list[Any] = []
    for a in sig:
        if type(a) is tuple and len(a) == 5 and a[0] == "T":
            parts.append((len(a[1]), a[3]))
        elif type(a) is tuple:
            parts.append(_eager_key(None, a))
        else:
            parts.append(a)
    return (func, tuple(parts))


def _support_decision(
    info: OpInfo, uargs: list[Any], ukw: dict[str, Any], rt: state.Runtime
) -> tuple[bool, torch.dtype | None]:
    """(falls back to CPU, dtype recomputed in fp32 on the device or None) for this call.

    No kernel at all -> fallback; a kernel but not for these dtypes -> the bridge's
    unsupported_dtype path (`op_dtypes.decide`: the 1.19 check where the source states one,
    else the 1.16 table; floating inputs recomputed in fp32 on the device, else the CPU)."""
    if info.missing:
        return True, None
    if info.dtype_rules is None:
        return False, None
    return op_dtypes.decide(
        info.dtype_rules,
        info.func,
        uargs,
        ukw,
        rt.config.device_profile,
        rt.lazy,
        rt.flags.int64_support,
    )


def _first_dtype(sig: tuple[Any, ...]) -> torch.dtype:
    for a in sig:
        if type(a) is tuple and len(a) == 5 and a[0] == "T":
            dtype: torch.dtype = a[3]
            return dtype
    return torch.float32


def _before_fallback(info: OpInfo, rt: state.Runtime) -> None:
    """Refuse an op outside the `PT_HPU_PLACE_ON_CPU` allow-list; flush the lazy graph first."""
    allow = rt.log.placed_on_cpu
    if allow is not None and info.overload not in allow:  # the bridge's exact operator_name
        raise RuntimeError(f"{info.overload} is not yet supported on HPU.")
    if rt.lazy:
        flush(rt, "cpu fallback")


def _after_fallback(
    info: OpInfo, rt: state.Runtime, sig: tuple[Any, ...], t0: int, t1: int, cost: OpCost, rec: bool
) -> None:
    op = info.overload
    rt.log.count_fallback(op)
    publish(EventId.CPU_FALLBACK, [("op_name", op)])
    if rt.flags.fallback_log:
        rt.log.fallback(info.label.split("::", 1)[-1], fb.dtype_token(_first_dtype(sig)))
    # the bridge copies the inputs to the host, runs the op there and copies the results back:
    # model both copies on the DMA engine (the host waits for the first one)
    tl = rt.timeline
    in_bytes = cost.nbytes - cost.out_bytes
    d2h_dur = tl.transfer(in_bytes)
    d2h_start = tl.schedule(ENGINE_DMA, tl.at(t0), d2h_dur)
    tl.host_wait(t1, d2h_start + d2h_dur)  # the host runs the op on the copied inputs
    h2d_dur = tl.transfer(cost.out_bytes)
    h2d_start = tl.schedule(ENGINE_DMA, max(tl.at(t1), d2h_start + d2h_dur), h2d_dur)
    if rec:  # (a fallback takes a correlation id only when it is recorded)
        where = rt.attribution
        rt.events.fallback(
            op, t0, t1, where.module(), phase_code(where), rt.mode_code, rt.events.new_corr(),
            max(0, d2h_start + d2h_dur - t0),
            ((d2h_start, d2h_dur, in_bytes), (h2d_start, h2d_dur, cost.out_bytes)),
        )  # fmt: skip


def _eager_launch(rt: state.Runtime, cost: OpCost, t1: int) -> tuple[int, int]:
    """Per-op eager recipe: (correlation, modeled device start)."""
    tl = rt.timeline
    if cost.eager_new:
        # eager-compiler recipe: modeled compile, not counted in graph_compilation (as the bridge);
        # it blocks the host (on the projected timeline: a jump just after the op)
        cost.eager_new = False
        comp = tl.compile_ns(1, eager=True)
        tl.host_block(t1 + 1, comp)
        rt.events.eager_compile(cost.eager_rid, t1 + 1, comp, rt.mode_code)
    else:
        comp = 0
    corr = rt.events.new_corr()
    delay = 0 if tl.clock.projected else comp
    return corr, tl.launch(t1 + 1, cost.engine, cost.dur, cost.flops, cost, delay)
