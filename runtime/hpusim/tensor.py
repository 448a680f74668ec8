"""`HpuTensor`: a wrapper subclass whose C++ device is cpu but which reports `hpu:0` to Python.

Design from the feasibility probe (emulator-probe.md): a C++-`hpu` wrapper cannot run backward
on stock torch, so the wrapper is CPU-keyed with an inner CPU tensor `_elem`; every place Python
reads the device says `hpu:0`; `__tensor_flatten__`/`__tensor_unflatten__` make dynamo/AOT work
and make `Module._apply` take the swap_tensors path.
"""

from __future__ import annotations

from typing import Any, Final

import torch

import hpusim.state as state
from hpusim.fake import tolist as fake_tolist
from hpusim.lazy import host_read

HPU_DEVICE: Final = torch.device("hpu", 0)
_CPU: Final = torch.device("cpu")
_make_wrapper = torch.Tensor._make_wrapper_subclass
_GUARDS_TLS = torch._guards._TLS


def dynamo_tracing() -> bool:
    """Whether dynamo is tracing in this thread: `TracingContext.try_get() is not None`, read
    from its thread-local's own dict. `try_get` is a `getattr` with a default, which costs
    0.3 us (an AttributeError raised and caught) in a thread that has never traced, and the
    dispatcher asks on every op; the dict's `get` costs 0.02 us."""
    return _GUARDS_TLS.__dict__.get("tracing_context") is not None


class HpuTensor(torch.Tensor):
    """A tensor on the emulated HPU. `_elem` is the real CPU tensor holding the data."""

    _elem: torch.Tensor
    _gid: int = 0
    """The modeled device storage this wrapper references (allocator.py; 0 = none)."""
    _epoch: int = -1
    """Lazy mode: the flush count when an op last wrote this tensor (pending while it is current)."""

    @staticmethod
    def __new__(cls, elem: torch.Tensor, requires_grad: bool = False) -> HpuTensor:
        # positional (cls, size, strides, storage_offset, memory_format, dtype, layout, device,
        # pin_memory, requires_grad): keyword parsing costs a third of the call
        r = _make_wrapper(
            cls,
            elem.size(),
            elem.stride(),
            elem.storage_offset(),
            None,
            elem.dtype,
            elem.layout,
            _CPU if elem.is_cpu or elem.is_meta else elem.device,  # fake compute: meta inside
            False,
            requires_grad,
        )
        r._elem = elem
        return r

    __torch_function__ = torch._C._disabled_torch_function_impl  # type: ignore[assignment]

    @classmethod
    def __torch_dispatch__(  # type: ignore[override]
        cls,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        return _HANDLERS[0](func, args, kwargs or {})

    def __del__(self) -> None:
        g = self._gid
        if g:
            rt = state.RT
            if rt is not None:
                rt.alloc.release(g)

    # --- what Python sees -------------------------------------------------------------------
    @property
    def device(self) -> torch.device:  # type: ignore[override]
        return HPU_DEVICE

    @property
    def is_hpu(self) -> bool:
        return True

    @property
    def is_cpu(self) -> bool:  # type: ignore[override]
        return False

    @property
    def is_cuda(self) -> bool:  # type: ignore[override]
        return False

    def get_device(self) -> int:
        return 0

    @property
    def data(self) -> torch.Tensor:
        return torch.Tensor.data.__get__(self)  # type: ignore[attr-defined]

    @data.setter
    def data(self, new: torch.Tensor) -> None:
        if type(new) is not HpuTensor:
            raise RuntimeError(
                "emulator: cannot assign a cpu tensor to .data of an hpu tensor; move it with "
                ".to('hpu') first"
            )
        if (
            new.shape != self.shape
            or new.stride() != self.stride()
            or new.dtype != self.dtype
            or new.storage_offset() != self.storage_offset()
        ):
            # torch's own setter: the wrapper takes the new one's metadata (FSDP's flat
            # parameters change shape and dtype as they are sharded and cast; DeepSpeed's ZeRO
            # points each parameter into a flat buffer, at an offset: dynamo fakifies the
            # wrapper from its inner tensor, and a wrapper offset that differs sends it down
            # the aliasing path, where `set_` of a wrapper fails)
            torch.Tensor.data.__set__(self, new)  # type: ignore[attr-defined]
        self._elem = new._elem

    def __repr__(self, *, tensor_contents: Any = None) -> Any:  # type: ignore[override]
        host_read("d2h_maybe_eval")
        text = repr(self._elem.detach()).replace("device='meta', ", "")  # fake compute
        assert text.endswith(")")
        extra = ", device='hpu:0'"
        if self.grad_fn is not None:
            extra += f", grad_fn=<{type(self.grad_fn).__name__}>"
        elif self.requires_grad:
            extra += ", requires_grad=True"
        return text[:-1] + extra + ")"

    def __format__(self, spec: str) -> str:
        if self.dim() == 0:
            return format(self.item(), spec)
        return object.__format__(self, spec) if spec else repr(self)

    # --- storage: the inner tensor's. Views of one hpu tensor share it, as on the device, and
    # FSDP frees and re-allocates its unsharded parameters by resizing it (`DeviceStorage`) ----
    # (while dynamo traces, the wrapper's own storage: its fake copies are built from it)
    def untyped_storage(self) -> torch.UntypedStorage:
        if dynamo_tracing():
            return torch.Tensor.untyped_storage(self)
        storage = self._elem.untyped_storage()
        rt = state.RT
        if self._gid and rt is not None:
            if type(storage) is not DeviceStorage:
                # torch keeps a storage's Python object for the storage's life: the class
                # stays, for FSDP's next `untyped_storage()` / `_typed_storage()` too
                storage.__class__ = DeviceStorage
            rt.alloc.bind_storage(storage._cdata, self._gid)
        return storage

    def _typed_storage(self) -> torch.TypedStorage:
        storage = self.untyped_storage()
        return torch.TypedStorage(wrap_storage=storage, dtype=self.dtype, _internal=True)

    def tolist(self) -> Any:
        host_read("d2h_maybe_eval")
        rt = state.RT
        if rt is not None and rt.fake is not None:
            return fake_tolist(rt, self)
        return self._elem.tolist()

    def numpy(self, *, force: bool = False) -> Any:
        raise TypeError(
            "can't convert hpu:0 device type tensor to numpy. Use Tensor.cpu() to copy the "
            "tensor to host memory first."
        )

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        raise BufferError("Cannot pack tensors on hpu:0")  # DLPack has no HPU device type

    def cpu(self, memory_format: torch.memory_format = torch.preserve_format) -> torch.Tensor:
        out: torch.Tensor = _HANDLERS[1](self)
        return out

    def hpu(self, *args: Any, **kwargs: Any) -> HpuTensor:
        return self

    def record_stream(self, stream: Any) -> None:
        """The bridge marks the tensor in use by an hpu stream (`torch.hpu.Stream`, which torch's
        own `record_stream` does not take; DeepSpeed's ZeRO-3 records every parameter it frees).
        The emulator orders all work on one modeled stream: nothing to keep alive."""
        return None

    def new_tensor(  # type: ignore[override]
        self, data: Any, dtype: torch.dtype | None = None, **kwargs: Any
    ) -> torch.Tensor:
        kwargs.setdefault("device", "hpu")
        return torch.tensor(data, dtype=dtype or self.dtype, **kwargs)

    # --- dynamo / AOT / swap_tensors --------------------------------------------------------
    def __tensor_flatten__(self) -> tuple[list[str], None]:
        return ["_elem"], None

    @staticmethod
    def __tensor_unflatten__(
        inner: dict[str, torch.Tensor], meta: Any, outer_size: Any, outer_stride: Any
    ) -> HpuTensor:
        return HpuTensor(inner["_elem"])

    # --- save / load (the xla/mtia scheme, on torch.load's weights_only allow-list) ---------
    def __reduce_ex__(self, proto: Any) -> Any:
        return (
            torch._utils._rebuild_device_tensor_from_cpu_tensor,
            (self._elem.detach().clone(), self.dtype, "hpu:0", self.requires_grad),
        )


class DeviceStorage(torch.UntypedStorage):
    """The inner storage of an hpu tensor: resizing it frees (0 bytes) or allocates the
    device storage on the emulated card's allocator, as the bridge's allocator sees FSDP's
    `untyped_storage().resize_(0)` and the resize back before the next all-gather."""

    __slots__ = ()

    def cpu(self) -> torch.UntypedStorage:
        """A host copy (an hpu storage's `.cpu()` copies it off the card)."""
        return torch.UntypedStorage(self.nbytes()).copy_(self)

    def resize_(self, size: int) -> Any:
        out = super().resize_(size)
        rt = state.RT
        if rt is not None:
            rt.alloc.storage_resized(self._cdata, int(size))
        return out


def _not_ready(*args: Any) -> Any:
    raise RuntimeError("hpusim: the emulated device is not installed (hpusim.enable())")


_HANDLERS: list[Any] = [_not_ready, _not_ready]
"""What an hpu tensor calls (registered by `install` at enable: this module imports neither):
0 `dispatch(func, args, kwargs)` runs an op (dispatch.hpu_dispatch), 1 `to_host(t)` copies the
tensor to the host (transfers.to_cpu)."""


def install(dispatch: Any, to_host: Any) -> None:
    """Register the op dispatch and the device-to-host copy hpu tensors call."""
    _HANDLERS[0] = dispatch
    _HANDLERS[1] = to_host
