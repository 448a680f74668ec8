"""Fake host tensors under fake compute (`hpuprof predict`): a model built on the CPU and moved
(`Model().to("hpu")`, `AutoModel.from_config(cfg).to("hpu")`) costs no host memory.

While fake compute is on, torch's host factories (`empty`, `zeros`, `ones`, `full`, `rand`,
`randn`, `randint`, `empty_strided`) make a tensor of `HOST_FAKE_MIN_BYTES` or more as a torch
`FakeTensor` on the cpu device: shapes, dtypes and strides without data, as the hpu tensors of
fake compute are. `nn.Linear`, `nn.Embedding` and Hugging Face models build their weights with
these factories and initialize them in place (`normal_`, `uniform_`, `nn.init.*`), which a
FakeTensor runs on its meta storage; `.to("hpu")` of one gives a fake hpu tensor
(`transfers.to_hpu` reads only its metadata). Smaller host tensors stay real, so the host
values a script reads (positions, lengths, schedules, small buffers) exist; an op mixing a
real and a fake host tensor gives a fake one.

A value read from a fake host tensor (`.item()`, `.tolist()`, `bool()`) gets the same
deterministic stand-in and warning as a fake hpu tensor (fake.py); `.numpy()` of one raises
torch's error for tensor subclasses (a fake tensor has no data to share), which `hpuprof
predict` explains (`no_data_hint`). A large `.cpu()` copy of a fake hpu tensor is a fake host
tensor too. Tensors the script builds from its own data (`torch.tensor(list)`,
`torch.from_numpy`: already in its memory) are real, and so is everything while another fake
mode is active (dynamo tracing makes its own). A checkpoint that `torch.load` reads is mapped
(`mmap=True`, unless the script says): its tensors are real but cost memory only for the
values read, and a model loaded from one and moved to the device reads none.
"""

from __future__ import annotations

import functools
import math
import os
import zipfile
from typing import Any, Final

import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.overrides import _get_current_function_mode_stack as _function_modes
from torch.utils._device import DeviceContext, _device_constructors

from hpusim.fake import scalar_standin, warn_standin
from hpusim.script_builtins import as_builtin

HOST_FAKE_MIN_BYTES: Final = 2**20
"""Host tensors this large or larger are fake under fake compute; smaller ones are real."""

FACTORIES: Final = ("empty", "zeros", "ones", "full", "rand", "randn", "randint", "empty_strided")
_SIZE_FIRST: Final = frozenset({"full", "empty_strided"})
_LOCAL_SCALAR: Final = torch.ops.aten._local_scalar_dense.default

_FAKE_KEY: Final = torch._C._TorchDispatchModeKey.FAKE
_active_fake_mode = torch._C._get_dispatch_mode
_orig: dict[str, Any] = {}
_mode: list[FakeTensorMode] = []


class HostFakeMode(FakeTensorMode):
    """torch's FakeTensorMode (real host tensors mixed in become fake), with fake compute's
    stand-ins for values read on the host instead of a `DataDependentOutputException`."""

    def __init__(self) -> None:
        super().__init__(allow_non_fake_inputs=True)

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if func is _LOCAL_SCALAR:
            import hpusim.state as state

            value = scalar_standin(args[0].dtype)
            rt = state.RT
            if rt is not None:
                warn_standin(rt, ".item()" if args[0].dtype != torch.bool else "bool()", value)
            return value
        return super().__torch_dispatch__(func, types, args, kwargs)


def is_fake_host(t: Any) -> bool:
    """Whether `t` is a fake host tensor (no data)."""
    return isinstance(t, FakeTensor)


def release_for_swap(t: Any) -> None:
    """Let `torch.utils.swap_tensors` swap fake host tensor `t` (`Module.to("hpu")` swaps each
    parameter with its hpu copy): the fake mode's memo of converted tensors holds weak
    references, which swapping refuses; the memo only shares storages between later
    conversions of the same real tensor."""
    if isinstance(t, FakeTensor) and _mode:
        _mode[0].fake_tensor_converter.meta_converter.tensor_memo.clear()


def _size_of(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """Elements the factory call makes (None when its size cannot be read from the call)."""
    size = kwargs.get("size")
    if size is None:
        if name == "randint":
            size = next((a for a in args if isinstance(a, (tuple, list, torch.Size))), None)
        elif name in _SIZE_FIRST:
            size = args[0] if args else None
        elif len(args) == 1 and isinstance(args[0], (tuple, list, torch.Size)):
            size = args[0]
        else:
            size = args
    if not isinstance(size, (tuple, list, torch.Size)):
        return None
    if not all(isinstance(n, int) for n in size):
        return None
    return math.prod(size)


def _default_device() -> Any:
    """The device of an innermost `with torch.device(...)` (read from the mode stack, as
    `torch.get_default_device()` makes a `torch.tensor([])` to find the index), else torch's
    default."""
    for mode in reversed(_function_modes()):
        if isinstance(mode, DeviceContext):
            return mode.device
    return torch.get_default_device()


def _on_host(device: Any) -> bool:
    if device is None:
        device = _default_device()
    if isinstance(device, torch.device):
        return device.type == "cpu"
    if isinstance(device, str):
        return device.split(":", 1)[0] == "cpu"
    return False


def _faking(original: Any, name: str) -> Any:
    @functools.wraps(original)
    def factory(*args: Any, **kwargs: Any) -> Any:
        # (a fake mode already active -- dynamo tracing -- makes its own fakes)
        if (
            kwargs.get("out") is None
            and _on_host(kwargs.get("device"))
            and _active_fake_mode(_FAKE_KEY) is None
        ):
            n = _size_of(name, args, kwargs)
            dtype = kwargs.get("dtype") or (
                torch.int64 if name == "randint" else torch.get_default_dtype()
            )
            if n is not None and n * dtype.itemsize >= HOST_FAKE_MIN_BYTES and _mode:
                with _mode[0]:
                    return original(*args, **kwargs)
        return original(*args, **kwargs)

    return factory


NO_DATA_ERRORS: Final = (
    ".numpy() is not supported for tensor subclasses",
    "Cannot access data pointer of Tensor",
    "Cannot access storage of",
)
"""What torch says when a script reads the data of a fake host tensor another way than
`.item()` / `.tolist()` (which get stand-ins)."""


def no_data_hint(error: BaseException) -> str | None:
    """Why `error` happened under fake compute, when it is a read of a fake tensor's data."""
    text = str(error)
    if not any(marker in text for marker in NO_DATA_ERRORS):
        return None
    return (
        f"under hpuprof predict every tensor of {HOST_FAKE_MIN_BYTES // 2**20} MiB or more on "
        "the host (and every one on the device) is fake: it has a shape but no values, so "
        "its data cannot be read (numpy(), data_ptr(), storage); .item() and .tolist() get "
        "stand-ins"
    )


def _mapped_load(original: Any) -> Any:
    """`torch.load` that maps a checkpoint file instead of reading it (`mmap=True`) unless the
    script says otherwise: its tensors are real (their values read on demand from the file's
    pages) and cost no memory until read, and under fake compute `.to("hpu")` reads none of
    them. A file torch cannot map (the legacy format, a stream) loads as the script asked."""

    @functools.wraps(original)
    def load(f: Any, *args: Any, **kwargs: Any) -> Any:
        # (`is_zipfile` answers False for a file it cannot open: torch then says why)
        if "mmap" not in kwargs and isinstance(f, (str, os.PathLike)) and zipfile.is_zipfile(f):
            kwargs["mmap"] = True
        return original(f, *args, **kwargs)

    return load


def install() -> None:
    """Fake large host tensors from now on, and map checkpoints that `torch.load` reads
    (idempotent)."""
    if _orig:
        return
    # `with torch.device(d)` gives `d` to the factories in a set torch builds once per
    # process: built now, it holds torch's own (which the wrappers call), not the wrappers
    _device_constructors()
    _mode.append(HostFakeMode())
    for name in FACTORIES:
        _orig[name] = getattr(torch, name)
        setattr(torch, name, as_builtin(_faking(_orig[name], name), _orig[name]))
    _orig["load"] = torch.load
    torch.load = _mapped_load(torch.load)


def uninstall() -> None:
    """Restore torch's factories (fake host tensors made meanwhile stay fake)."""
    for name, original in _orig.items():
        setattr(torch, name, original)
    _orig.clear()
    _mode.clear()


__all__ = [
    "FACTORIES",
    "HOST_FAKE_MIN_BYTES",
    "HostFakeMode",
    "install",
    "is_fake_host",
    "release_for_swap",
]
