"""Host<->device transfers and the Python patches that route them (probe design item 4).

`Tensor.to`, `Tensor.hpu`, `torch.tensor`, `torch.as_tensor`, `torch.asarray`,
`torch.utils.dlpack.to_dlpack`, the `*_like` / `Tensor.new_*` factories, `Tensor.pin_memory`,
`Tensor.is_pinned`,
`torch._has_compatible_shallow_copy_type`, `torch.utils.swap_tensors` and the restore location
of a loaded hpu tensor (`torch._utils._get_restore_location`) are patched while emulation is on. H2D and D2H are
autograd Functions, so gradients cross devices. A D2H is a host sync: in lazy mode it flushes
the pending graph with reason `d2h_maybe_eval`.
"""

from __future__ import annotations

import functools
import os
import sys
import types
import weakref
from time import perf_counter_ns
from typing import Any, Final

import torch

import hpusim.state as state
from hpusim.attribution import phase_code
from hpusim.bridge_log import banner
from hpusim.device_model import ENGINE_DMA
from hpusim.dtype_rules import (
    COMPLEX_DTYPES,
    COMPLEX_ERROR,
    device_dtype_values,
    on_device_dtype,
)
from hpusim.fake import host_copy, to_fake
from hpusim.host_fake import release_for_swap
from hpusim.lazy import flush, host_sync
from hpusim.metrics import EventId, publish
from hpusim.script_builtins import as_builtin
from hpusim.tensor import HpuTensor

_orig: dict[str, Any] = {}
PATCHED_METHODS: list[tuple[Any, str]] = []
"""(the emulator's Python replacement, the name) of each `torch.Tensor` method it patches
(install): a torch-function mode that dynamo traces calls the method by name, which dynamo
puts in the graph, instead of the replacement (autocast.py)."""
_BANNER_SHOWN: list[bool] = []  # the bridge prints its banner once per process


def acquire(rt: state.Runtime) -> None:
    """A device tensor is created: the first one publishes DEVICE_ACQUIRED (arms the metrics
    file writer) and prints the bridge's banner (once per process, rank 0)."""
    if not rt.acquire():
        return
    publish(EventId.DEVICE_ACQUIRED, [])
    if not _BANNER_SHOWN and os.environ.get("RANK", "0") == "0":
        _BANNER_SHOWN.append(True)
        sys.stderr.write(banner(rt.lazy))


def _record_transfer(
    rt: state.Runtime, name: str, direction: str, elem: torch.Tensor, t0: int, t1: int
) -> None:
    nbytes = elem.numel() * elem.element_size()
    dur = rt.timeline.transfer(nbytes)
    corr = rt.events.new_corr()
    tl = rt.timeline
    start = tl.schedule(ENGINE_DMA, tl.at(t1), dur)
    if direction == "d2h":  # the host reads the copy: it waits for it (projected timeline)
        tl.host_wait(t1, start + dur)
    if rt.sink.recording:
        where = rt.attribution
        rt.events.transfer(
            name, direction, elem, t0, t1, where.module(), phase_code(where), rt.mode_code, corr,
            start, dur,
        )  # fmt: skip


def byte_copy(t: torch.Tensor) -> torch.Tensor:
    """A copy of `t`'s bytes, as a DMA makes it. CPU torch's copy of a bool tensor writes
    0 / 1 whatever byte it holds, so a bool view of other data (`x.view(torch.bool)`) lost its
    bytes on the way to the emulated device and back; the bridge's copies keep them."""
    if t.dtype is torch.bool:
        return t.view(torch.uint8).clone().view(torch.bool)
    return t.clone()


class _H2D(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        rt = state.require_runtime()
        t0 = perf_counter_ns()
        elem = on_device(rt, byte_copy(x.detach())) if rt.fake is None else to_fake(rt, x)
        acquire(rt)
        on_device_dtype(rt, elem.dtype, "aten::_to_copy")
        out = HpuTensor(elem)
        rt.alloc.alloc(out, elem.numel() * elem.element_size(), "aten::_to_copy")
        _record_transfer(rt, "aten::_to_copy", "h2d", elem, t0, perf_counter_ns())
        return out

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return to_cpu(grad) if type(grad) is HpuTensor else grad


class _D2H(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        rt = state.require_runtime()
        t0 = perf_counter_ns()
        host_sync(rt, "d2h_maybe_eval", t0)
        elem = x._elem  # type: ignore[attr-defined]
        out = byte_copy(elem.detach()) if rt.fake is None else host_copy(rt, elem, ".cpu()")
        _record_transfer(rt, "aten::_to_copy", "d2h", elem, t0, perf_counter_ns())
        return out

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return to_hpu(grad) if type(grad) is not HpuTensor else grad


def on_device(rt: state.Runtime, elem: torch.Tensor) -> torch.Tensor:
    """A host tensor's data as the device stores it: complex dtypes refused as on a Gaudi,
    float64 / int64 values held in fp32 / int32 (`dtype_rules.device_dtype_values`)."""
    if elem.dtype in COMPLEX_DTYPES:
        raise RuntimeError(COMPLEX_ERROR)
    if elem.dtype is torch.float64 or elem.dtype is torch.int64:
        device_dtype_values(elem, rt.flags.int64_support)
    return elem


def to_hpu(t: torch.Tensor) -> torch.Tensor:
    """A copy of a host tensor on the emulated device (autograd-aware)."""
    if type(t) is HpuTensor:
        return t
    out: torch.Tensor = _H2D.apply(t)
    return out


def to_cpu(t: torch.Tensor) -> torch.Tensor:
    """A host copy of a device tensor (autograd-aware; a host sync)."""
    if type(t) is not HpuTensor:
        return t
    out: torch.Tensor = _D2H.apply(t)
    return out


def record_copy(dst: torch.Tensor, src: torch.Tensor, direction: str, t0: int) -> torch.Tensor:
    """`cpu_t.copy_(hpu_t)` (d2h) or `hpu_t.copy_(cpu_t)` (h2d), inside dispatch."""
    rt = state.require_runtime()
    if direction == "d2h":
        host_sync(rt, "d2h_maybe_eval", t0)
        dst.copy_(src if rt.fake is None else host_copy(rt, src, "copy to a host tensor"))
        _record_transfer(rt, "aten::copy_", "d2h", src, t0, perf_counter_ns())
    else:
        if rt.lazy and rt.graph.ops and getattr(dst, "_epoch", -1) == rt.graph.flushes:
            flush(rt, "H2D copy")  # the bridge flushes before overwriting a pending tensor
        if rt.fake is None:  # fake compute: no data to copy
            dst._elem.copy_(src)  # type: ignore[attr-defined]
            on_device(rt, dst._elem)  # type: ignore[attr-defined]
        _record_transfer(rt, "aten::copy_", "h2d", src, t0, perf_counter_ns())
    return dst


def _is_hpu(device: Any) -> bool:
    if device is None:
        return False
    if isinstance(device, torch.device):
        return device.type == "hpu"
    if isinstance(device, str):
        return device.split(":", 1)[0] == "hpu"
    return False


# --- patches -------------------------------------------------------------------------------


def _patched_to(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
    copy = bool(kwargs.pop("copy", False))
    device, dtype, non_blocking, memory_format = torch._C._nn._parse_to(*args, **kwargs)
    is_h = type(self) is HpuTensor
    if device is None or ((device.type == "hpu") == is_h and device.type in ("hpu", "cpu")):
        if device is None and not is_h:
            return _orig["to"](self, *args, copy=copy, **kwargs)
        if dtype is None and memory_format is None:
            return self.clone() if copy else self
        return _orig["to"](
            self,
            dtype=dtype or self.dtype,
            non_blocking=non_blocking,
            copy=copy,
            memory_format=memory_format or torch.preserve_format,
        )
    if device.type == "hpu":
        t = self if dtype is None else _orig["to"](self, dtype=dtype)
        return to_hpu(t)
    if device.type == "cpu" and is_h:
        t = to_cpu(self)
        return t if dtype is None else _orig["to"](t, dtype=dtype)
    return _orig["to"](self, *args, copy=copy, **kwargs)


def _patched_hpu(
    self: torch.Tensor, device: Any = None, non_blocking: bool = False
) -> torch.Tensor:
    return to_hpu(self)


_COPY_CONSTRUCT_WARNING = (
    "To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() "
    "or sourceTensor.detach().clone().requires_grad_(True), rather than "
    "torch.tensor(sourceTensor)."
)


def _host_leaves(data: Any) -> Any:
    """A nested list/tuple with its hpu tensors replaced by host ones: torch builds a tensor
    from a sequence by reading each element tensor's value (`item()` for the one-element
    tensors it accepts, a local-scalar read on the bridge); an hpu tensor's C++ storage is
    the emulator's empty wrapper, so the value is read here, through the device."""
    if type(data) is HpuTensor:
        if data.numel() == 1:
            return torch.full(data.shape, data.item(), dtype=data.dtype)
        return to_cpu(data)  # torch then refuses it as it refuses any multi-element element
    if isinstance(data, (list, tuple)) and any(
        type(d) is HpuTensor or isinstance(d, (list, tuple)) for d in data
    ):
        return type(data)(_host_leaves(d) for d in data)
    return data


def _host_data(data: Any) -> Any:
    """`_host_leaves(data)`, its scan of a nested sequence left out of the projected host
    clock: the emulator's work, which the bridge does not do (a 48 x 128 list of floats took
    2.5 ms of CPU time here, more than torch's own conversion)."""
    rt = state.RT
    if rt is None or not isinstance(data, (list, tuple)):
        return _host_leaves(data)
    with rt.clock.pause():
        return _host_leaves(data)


def _copy_of_device_tensor(
    data: torch.Tensor, dtype: Any, device: Any, requires_grad: bool
) -> torch.Tensor:
    """`torch.tensor(hpu_t, ...)`: a detached copy on `device` (default: the tensor's own),
    with torch's copy-construct warning (tensor_new.cpp: `var.to(device, dtype, copy=True)`)."""
    import warnings

    warnings.warn(_COPY_CONSTRUCT_WARNING, UserWarning, stacklevel=3)
    src = data.detach()
    if device is not None and not _is_hpu(device):
        out = to_cpu(src)
        out = out if dtype is None else _orig["to"](out, dtype=dtype)
    else:
        out = src.clone() if dtype is None or dtype == src.dtype else src.to(dtype)
    return out.requires_grad_(True) if requires_grad else out


def _patched_tensor(
    data: Any, *args: Any, device: Any = None, requires_grad: bool = False, **kwargs: Any
) -> torch.Tensor:
    if type(data) is HpuTensor:
        return _copy_of_device_tensor(data, kwargs.get("dtype"), device, requires_grad)
    data = _host_data(data)
    if not _is_hpu(device):
        return _orig["tensor"](data, *args, device=device, requires_grad=requires_grad, **kwargs)
    kwargs.pop("pin_memory", None)
    host = _orig["tensor"](data, *args, **kwargs)
    out = to_hpu(host)
    if requires_grad:
        out.requires_grad_(True)
    return out


def _patched_as_tensor(
    data: Any, dtype: torch.dtype | None = None, device: Any = None
) -> torch.Tensor:
    if type(data) is HpuTensor:
        if device is None or _is_hpu(device):
            return data if dtype is None or dtype == data.dtype else data.to(dtype)
        return data.to(device=device, dtype=dtype)
    data = _host_data(data)
    if not _is_hpu(device):
        return _orig["as_tensor"](data, dtype=dtype, device=device)
    return to_hpu(_orig["as_tensor"](data, dtype=dtype))


def _patched_asarray(
    obj: Any,
    *,
    dtype: torch.dtype | None = None,
    device: Any = None,
    copy: bool | None = None,
    requires_grad: bool | None = False,
) -> torch.Tensor:
    """`torch.asarray`: an hpu tensor is shared where device and dtype allow (unless `copy`),
    else copied, as for any tensor of a device (`asarray` in tensor_new.cpp)."""
    if type(obj) is HpuTensor:
        if copy is False and (dtype not in (None, obj.dtype) or not _is_hpu(device or "hpu")):
            raise ValueError("can't alias tensor from device 'hpu:0' to 'cpu'.")
        out = obj.to(device=device or obj.device, dtype=dtype or obj.dtype)
        if copy and out is obj:
            out = obj.clone()
        return out.requires_grad_(True) if requires_grad else out
    obj = _host_leaves(obj)
    if not _is_hpu(device):
        return _orig["asarray"](
            obj, dtype=dtype, device=device, copy=copy, requires_grad=requires_grad
        )
    out = to_hpu(_orig["asarray"](obj, dtype=dtype, copy=copy))
    return out.requires_grad_(True) if requires_grad else out


HOST_LIKE_FACTORIES: Final = (
    "empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like",
    "randint_like",
)  # fmt: skip
HOST_NEW_FACTORIES: Final = ("new_empty", "new_zeros", "new_ones", "new_full")


def _host_factory(original: Any) -> Any:
    """`zeros_like(t, device="cpu")`, `t.new_zeros(n, device="cpu")`: the device argument
    picks the backend, so a host tensor, nothing on the card. Patched in Python: inside the
    dispatcher torch's own C++ passes the wrapper's (cpu) options explicitly, which must stay
    device work."""

    @functools.wraps(original)
    def factory(input: Any, *args: Any, **kwargs: Any) -> Any:
        device = kwargs.get("device")
        if type(input) is HpuTensor and device is not None and not _is_hpu(device):
            return original(input._elem, *args, **kwargs)
        return original(input, *args, **kwargs)

    return factory


def _patched_to_dlpack(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
    if type(tensor) is HpuTensor:
        raise BufferError(DLPACK_ERROR)
    return _orig["to_dlpack"](tensor, *args, **kwargs)


DLPACK_ERROR = "Cannot pack tensors on hpu:0"
"""DLConvertor.cpp `torchDeviceToDLDevice`: DLPack has no HPU device type."""


_PINNED: set[int] = set()
"""Storage addresses of host tensors `pin_memory` returned (CPU-only torch cannot pin)."""


def _patched_pin_memory(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
    """A copy in "pinned" host memory, as the bridge's host allocator gives (a new tensor; the
    original stays pageable); `is_pinned` reports it while it lives. CPU-only torch has no
    accelerator to pin for, so the copy is ordinary memory marked as pinned."""
    if type(self) is HpuTensor or self.device.type != "cpu":
        return self  # not host memory: nothing to pin
    pinned = self.clone()
    ptr = pinned.untyped_storage().data_ptr()
    _PINNED.add(ptr)
    weakref.finalize(pinned, _PINNED.discard, ptr)
    return pinned


def _patched_is_pinned(self: torch.Tensor, device: Any = None) -> bool:
    """True for a host tensor (or a view of one) `pin_memory` returned, for the HPU or no
    device named (the bridge's `is_pinned(device="hpu")`)."""
    if type(self) is HpuTensor or self.device.type != "cpu":
        return False
    if device is not None and not _is_hpu(device):
        return False
    return self.untyped_storage().data_ptr() in _PINNED


def _patched_shallow(input: torch.Tensor, from_: torch.Tensor) -> bool:
    # parameter names match torch's, which dynamo's polyfill registration checks
    if (type(input) is HpuTensor) != (type(from_) is HpuTensor):
        return False  # hpu<->cpu: Module._apply must make a new Parameter (probe item 2)
    return bool(_orig["shallow"](input, from_))


def _same_view(a: torch.Tensor, b: torch.Tensor) -> bool:
    ea, eb = a._elem, b._elem  # type: ignore[attr-defined]
    return (
        ea.untyped_storage().data_ptr() == eb.untyped_storage().data_ptr()
        and ea.shape == eb.shape
        and ea.stride() == eb.stride()
        and ea.storage_offset() == eb.storage_offset()
        and ea.dtype == eb.dtype
    )


class _NoWeakrefs:
    """Stands in for the `weakref` module in `_swap_keeping_weakrefs`: no object has any."""

    @staticmethod
    def getweakrefs(obj: object) -> list[Any]:
        return []


def _swap_keeping_weakrefs(swap: Any) -> Any:
    """torch's `swap_tensors` without its refusal of a tensor that has Python weak references
    (the same code, reading `weakref.getweakrefs` from `_NoWeakrefs`). A weak reference follows
    the object, which a swap keeps: afterwards it sees the swapped-in contents, as it sees a
    tensor whose `.data` was set, which is what the bridge's `Module.to("hpu")` does."""
    globals_ = {**swap.__globals__, "weakref": _NoWeakrefs}
    return types.FunctionType(
        swap.__code__, globals_, swap.__name__, swap.__defaults__, swap.__closure__
    )


def _patched_swap_tensors(t1: torch.Tensor, t2: torch.Tensor) -> None:
    """`Module._apply` swaps every parameter of a wrapper subclass, even for a `.to("hpu")` that
    changed nothing; swapping needs sole ownership, which a captured graph or a live autograd
    graph takes away (`Couldn't swap Linear.weight` after `make_graphed_callables`). On the
    bridge that call is a no-op, so a swap between two views of the same device memory is one.

    On the bridge an hpu tensor is a tensor like a cpu one, so `Module._apply` moves a parameter
    in place (`param.data = param.to("hpu")`): the Parameter object stays, whoever holds a weak
    reference to it too (DeepSpeed's `WeakIdNameMap` of parameter names, from
    `deepspeed.initialize`, before it moves the model). Here that move is a swap (the object
    becomes the hpu tensor), and torch refuses to swap a tensor that has weak references: an
    hpu tensor's swap keeps them, as the bridge's in-place move does."""
    if type(t1) is HpuTensor and type(t2) is HpuTensor and _same_view(t1, t2):
        return
    release_for_swap(t1)  # a parameter built on the host under fake compute
    if type(t1) is HpuTensor or type(t2) is HpuTensor:
        _orig["swap_keeping_weakrefs"](t1, t2)
    else:
        _orig["swap_tensors"](t1, t2)


def _restore_location(original: Any) -> Any:
    """torch's restore location of a loaded device tensor, taking a callable `map_location` too.

    On the bridge an hpu tensor is saved with its storage, and `torch.load` hands a callable
    `map_location` that storage (read onto the host) with its location, `hpu:0`: the tensor lands
    where the returned storage is, or at the location when it returns None
    (`torch/serialization.py` `_get_restore_location` / `default_restore_location`). DeepSpeed's
    and Megatron's loaders pass `lambda storage, loc: storage` and get host tensors. An emulated
    hpu tensor is saved as its host copy (`HpuTensor.__reduce_ex__`, the xla/mtia scheme), whose
    rebuild knows no callable: the callable is asked with an empty host storage and the location,
    and the device of what it returns is the restore location. Differs: the callable is also
    asked about the host copy's own storage (location `cpu`) before."""

    @functools.wraps(original)
    def restore_location(device: Any) -> Any:
        map_location: Any = torch.serialization._serialization_tls.map_location
        if map_location is None or isinstance(map_location, (dict, str, torch.device)):
            return original(device)
        placed = map_location(torch.UntypedStorage(0), str(device))
        return device if placed is None else placed.device

    return restore_location


def install() -> None:
    """Apply the patches (idempotent)."""
    if _orig:
        return
    _orig["restore_location"] = torch._utils._get_restore_location
    torch._utils._get_restore_location = _restore_location(_orig["restore_location"])
    _orig["swap_tensors"] = torch.utils.swap_tensors
    _orig["swap_keeping_weakrefs"] = _swap_keeping_weakrefs(torch.utils.swap_tensors)
    torch.utils.swap_tensors = _patched_swap_tensors
    _orig["to"] = torch.Tensor.to
    _orig["tensor"] = torch.tensor
    _orig["as_tensor"] = torch.as_tensor
    _orig["asarray"] = torch.asarray
    _orig["to_dlpack"] = torch.utils.dlpack.to_dlpack
    _orig["pin_memory"] = torch.Tensor.pin_memory
    _orig["is_pinned"] = torch.Tensor.is_pinned
    _orig["shallow"] = torch._has_compatible_shallow_copy_type
    torch.Tensor.to = _patched_to  # type: ignore[method-assign,assignment]
    torch.Tensor.hpu = _patched_hpu  # type: ignore[attr-defined]
    torch.tensor = as_builtin(_patched_tensor, _orig["tensor"])
    torch.as_tensor = as_builtin(_patched_as_tensor, _orig["as_tensor"])
    torch.asarray = as_builtin(_patched_asarray, _orig["asarray"])
    torch.utils.dlpack.to_dlpack = _patched_to_dlpack  # type: ignore[assignment]
    for name in HOST_LIKE_FACTORIES:
        _orig[name] = getattr(torch, name)
        setattr(torch, name, as_builtin(_host_factory(_orig[name]), _orig[name]))
    for name in HOST_NEW_FACTORIES:
        _orig["Tensor." + name] = getattr(torch.Tensor, name)
        setattr(torch.Tensor, name, _host_factory(_orig["Tensor." + name]))
    torch.Tensor.pin_memory = _patched_pin_memory  # type: ignore[method-assign,assignment]
    torch.Tensor.is_pinned = _patched_is_pinned  # type: ignore[method-assign,assignment]
    torch._has_compatible_shallow_copy_type = _patched_shallow
    PATCHED_METHODS.extend(
        (getattr(torch.Tensor, name), name)
        for name in ("to", "pin_memory", "is_pinned", *HOST_NEW_FACTORIES)
    )


def uninstall() -> None:
    """Restore torch's originals."""
    if not _orig:
        return
    torch.Tensor.to = _orig["to"]  # type: ignore[method-assign]
    torch.tensor = _orig["tensor"]
    torch.as_tensor = _orig["as_tensor"]
    torch.asarray = _orig["asarray"]
    torch.utils.dlpack.to_dlpack = _orig["to_dlpack"]
    for name in HOST_LIKE_FACTORIES:
        setattr(torch, name, _orig[name])
    for name in HOST_NEW_FACTORIES:
        setattr(torch.Tensor, name, _orig["Tensor." + name])
    torch.Tensor.pin_memory = _orig["pin_memory"]  # type: ignore[method-assign]
    torch.Tensor.is_pinned = _orig["is_pinned"]  # type: ignore[method-assign]
    _PINNED.clear()
    PATCHED_METHODS.clear()
    torch._has_compatible_shallow_copy_type = _orig["shallow"]
    torch.utils.swap_tensors = _orig["swap_tensors"]
    torch._utils._get_restore_location = _orig["restore_location"]
    if hasattr(torch.Tensor, "hpu"):
        del torch.Tensor.hpu  # type: ignore[attr-defined]
    _orig.clear()
