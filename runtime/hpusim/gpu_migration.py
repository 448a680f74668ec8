"""Intel's GPU Migration Toolkit, emulated: CUDA scripts run unchanged on the emulated Gaudi.

On the bridge, `PT_HPU_GPU_MIGRATION=1` makes `import habana_frameworks.torch` (which torch's
autoload runs) import `habana_frameworks.torch.gpu_migration`; a script may also import it
itself. Either way the toolkit replaces CUDA APIs with their HPU equivalents, and so does this
module, while the emulator is on (`install` at `hpusim.enable()` when the variable is set, or at
the shim's `import habana_frameworks.torch.gpu_migration`; `uninstall` at `disable()` puts every
patched attribute back):
- `torch.cuda`: `is_available`, `device_count`, `current_device`, `set_device`, `synchronize`,
  memory statistics, RNG, streams and events, `get_device_properties` / `_capability`, the
  legacy `torch.cuda.FloatTensor`-style constructors; `nvtx`, `empty_cache`, `ipc_collect` do
  nothing (no HPU equivalent);
- `device="cuda"` / `"cuda:N"` / `torch.device("cuda")` in torch's factories and
  `Tensor.new_*`, `Tensor.to`, `Tensor.cuda`, `Tensor.pin_memory`, `Tensor.type`;
- `torch.autocast("cuda")` and `torch.cuda.amp.autocast` become HPU autocast (its default
  dtype, bf16, for fp16); `GradScaler("cuda")` is disabled (bf16 needs no loss scaling);
- `torch.distributed`: the `nccl` backend becomes `hccl` (`init_process_group`, `new_group`),
  `get_backend()` answers `nccl` to the script; DDP's `device_ids` / `output_device` are
  dropped; a DataLoader's `pin_memory` pins for the HPU (torch's current accelerator here);
- `torch.compile` with its default backend (inductor) compiles with `hpu_backend`.
cuDNN switches (`torch.backends.cudnn.benchmark`, `.deterministic`) are accepted by torch
itself. Each migrated call is logged as the toolkit logs it (gpu_migration_log.py).
The functions are replaced where torch defines them too (`torch.cuda.memory`, `.random`).
DIFFERS: `Tensor.is_cuda` stays False for hpu tensors (the toolkit makes it True; torch's own
code reads it to pick CUDA kernels); apex and pynvml are not migrated.
"""

from __future__ import annotations

import contextlib
import inspect
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final

import torch

import hpusim.device_module as hpu
import hpusim.state as state
from hpusim.gpu_migration_log import ApiType, MigrationLog, format_args, open_from_env

FLAG_VAR: Final = "PT_HPU_GPU_MIGRATION"
_MISSING: Final = object()
_patches: list[tuple[Any, str, Any]] = []  # (owner, attribute, what was there)
_log: list[MigrationLog] = []


def requested(env: Mapping[str, str]) -> bool:
    """`PT_HPU_GPU_MIGRATION` as the bridge's boolean flag reads it (1 / true)."""
    return env.get(FLAG_VAR, "").strip().lower() in ("1", "true")


def is_installed() -> bool:
    return bool(_log)


def _write(api_type: ApiType, api: str, args: Mapping[str, Any], new_call: str) -> None:
    if _log and _log[0].active:
        _log[0].write(api_type, api, args, new_call)


# --- devices --------------------------------------------------------------------------------


def is_cuda(device: Any) -> bool:
    if isinstance(device, torch.device):
        return device.type == "cuda"
    return isinstance(device, str) and device.split(":", 1)[0] == "cuda"


def to_hpu(device: Any) -> Any:
    """`cuda[:N]` (str or torch.device) -> `hpu[:N]`; anything else unchanged."""
    if isinstance(device, torch.device) and device.type == "cuda":
        return "hpu" if device.index is None else f"hpu:{device.index}"
    if isinstance(device, str) and is_cuda(device):
        return "hpu" + device[4:]
    return device


def local_card() -> int:
    """The card of this process: the toolkit's `current_device` (torchrun's / mpirun's local
    rank, else the HPU module's current device)."""
    for var in ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"):
        value = os.environ.get(var, "")
        if value.isdigit():
            return int(value)
    return hpu.current_device()


def _hpu_index(device: Any) -> Any:
    """A `torch.cuda.*(device)` argument for the HPU module: every emulated process owns one
    card, `hpu:0`, which is the card `local_card()` names."""
    device = to_hpu(device)
    index = device if isinstance(device, int) else None
    if isinstance(device, str | torch.device):
        parsed = torch.device(device)
        index = parsed.index if parsed.type == "hpu" else None
    if index is not None and index == local_card():
        return 0
    return device


# --- the patch registry ---------------------------------------------------------------------


def _set(owner: Any, name: str, value: Any) -> None:
    before = owner.__dict__.get(name, _MISSING) if isinstance(owner, type) else None
    if not isinstance(owner, type):
        before = getattr(owner, name, _MISSING)
    _patches.append((owner, name, before))
    setattr(owner, name, value)


def _bound(
    signature: inspect.Signature | None, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """The call's arguments by name, defaults included (as the toolkit logs them)."""
    if signature is None:
        return {"args": args, "kwargs": kwargs} if args or kwargs else {}
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        return {"args": args, "kwargs": kwargs}
    bound.apply_defaults()
    return {k: v for k, v in bound.arguments.items() if k != "self"}


def _rebind(
    signature: inspect.Signature | None,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    changes: Mapping[str, Any],
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The call's arguments with `changes` made by parameter name."""
    if signature is None:
        return args, {**kwargs, **changes}
    bound = signature.bind(*args, **kwargs)
    bound.arguments.update(changes)
    return bound.args, bound.kwargs


def _signature(fn: Any) -> inspect.Signature | None:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def _shown(args: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in args.items())


# --- torch.cuda -----------------------------------------------------------------------------

_SAME_NAME: Final = (
    "init", "is_initialized", "is_available", "current_stream", "default_stream",
    "set_stream", "stream", "get_device_name", "can_device_access_peer", "get_gencode_flags",
    "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
    "memory_stats", "memory_summary", "mem_get_info", "reset_peak_memory_stats",
    "reset_accumulated_memory_stats", "memory_usage", "memory_cached", "max_memory_cached",
    "manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed", "get_rng_state",
    "set_rng_state", "get_rng_state_all", "set_rng_state_all", "set_sync_debug_mode",
)  # fmt: skip
_RANDOM: Final = frozenset(
    {"manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed", "get_rng_state",
     "set_rng_state", "get_rng_state_all", "set_rng_state_all"}
)  # fmt: skip
_ALIASES: Final = {
    "is_bf16_supported": ("is_bf16_supported", False),  # (hpu name, pass the arguments)
    "reset_max_memory_allocated": ("reset_peak_memory_stats", True),
    "synchronize": ("synchronize", False),  # torch.hpu.synchronize() takes no device
}


def _mapped(name: str, target: str, pass_args: bool = True) -> Callable[..., Any]:
    """`torch.cuda.<name>` -> `torch.hpu.<target>` with device arguments mapped (hpu_match)."""
    signature = _signature(getattr(torch.cuda, name, None))
    fn = getattr(hpu, target)
    where = "torch.hpu.random" if target in _RANDOM else "torch.hpu"

    def migrated(*args: Any, **kwargs: Any) -> Any:
        args = tuple(_hpu_index(a) for a in args)
        kwargs = {k: _hpu_index(v) for k, v in kwargs.items()}
        if _log and _log[0].active:
            shown = _bound(signature, args, kwargs)
            _write("hpu_match", f"torch.cuda.{name}", shown, f"{where}.{target}({_shown(shown)})")
        return fn(*args, **kwargs) if pass_args else fn()

    migrated.__name__ = migrated.__qualname__ = name
    return migrated


def _modified(
    name: str,
    new_call: str,
    fn: Callable[..., Any],
    kind: ApiType = "hpu_modified",
    module: Any = torch.cuda,
) -> Callable[..., Any]:
    """`torch.cuda.<name>` -> `fn`, an HPU-specific implementation (or a no-op: hpu_mismatch)."""
    signature = _signature(getattr(module, name, None))
    api = f"{module.__name__}.{name}"

    def migrated(*args: Any, **kwargs: Any) -> Any:
        if _log and _log[0].active:
            _write(kind, api, _bound(signature, args, kwargs), new_call)
        return fn(*args, **kwargs)

    migrated.__name__ = migrated.__qualname__ = name
    return migrated


def _set_device(device: Any) -> None:
    """`torch.cuda.set_device(local_rank)`: this process's card (hpu_match)."""
    target = f"hpu:{device}" if type(device) is int else to_hpu(device)
    _write(
        "hpu_match", "torch.cuda.set_device", {"device": device}, f"torch.hpu.set_device({target})"
    )
    hpu.set_device(_hpu_index(device))


class CudaDeviceProperties:
    """What `torch.cuda.get_device_properties` returns under the toolkit (its fields)."""

    def __init__(self, name: str, total_memory: int) -> None:
        self.name = name
        self.major, self.minor = CUDA_CAPABILITY
        self.total_memory = total_memory
        self.multi_processor_count = os.cpu_count() or 1

    def __repr__(self) -> str:
        return (
            f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
            f"total_memory={self.total_memory // (1 << 20)}MB, "
            f"multi_processor_count={self.multi_processor_count})"
        )


CUDA_CAPABILITY: Final = (9, 0)
"""What the toolkit answers to `get_device_capability` (the latest CUDA capability)."""


def _device_properties(device: Any = None) -> CudaDeviceProperties:
    hpu._check(_hpu_index(device))
    return CudaDeviceProperties(hpu.get_device_name(), int(hpu.memory_stats()["Limit"]))


def _nothing(*args: Any, **kwargs: Any) -> None:
    return None


@contextlib.contextmanager
def _no_range(*args: Any, **kwargs: Any) -> Iterator[None]:
    yield


def _legacy_type(name: str) -> type:
    """`torch.cuda.FloatTensor(data)`: `torch.FloatTensor(data).to("hpu")` (hpu_modified)."""
    host = getattr(torch, name)

    def new(cls: type, *args: Any, **kwargs: Any) -> torch.Tensor:
        _write(
            "hpu_modified", f"torch.cuda.{name}.__new__", {"args": args, "kwargs": kwargs},
            f"torch.{name}(args={args}, kwargs={{{format_args(kwargs)}}}).to(hpu)",
        )  # fmt: skip
        return host(*args, **kwargs).to("hpu")

    return type(name, (), {"__new__": new, "dtype": getattr(host, "dtype", None)})


_LEGACY_TYPES: Final = (
    "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor", "CharTensor",
    "ShortTensor", "IntTensor", "LongTensor", "BoolTensor",
)  # fmt: skip


def _patch_cuda_module() -> None:
    cuda = torch.cuda
    homes = (torch.cuda.memory, torch.cuda.random)  # where torch.cuda's names are defined
    for name, (target, pass_args) in {**{n: (n, True) for n in _SAME_NAME}, **_ALIASES}.items():
        migrated = _mapped(name, target, pass_args)
        _set(cuda, name, migrated)
        for home in homes:  # `torch.cuda.memory.memory_stats(...)` and the module's own calls
            if name in vars(home):
                _set(home, name, migrated)
    prefix = "habana_frameworks.torch.gpu_migration.torch.cuda"
    _set(
        cuda,
        "device_count",
        _modified("device_count", f"{prefix}.device_count()", lambda: hpu.device_count()),
    )
    _set(
        cuda,
        "current_device",
        _modified("current_device", f"{prefix}.current_device()", local_card),
    )
    _set(cuda, "set_device", _set_device)
    _set(
        cuda,
        "get_device_capability",
        _modified(
            "get_device_capability",
            f"return {CUDA_CAPABILITY}",
            lambda device=None: CUDA_CAPABILITY,
        ),
    )
    _set(
        cuda,
        "get_device_properties",
        _modified(
            "get_device_properties",
            "torch.cuda.get_device_properties(device=hpu)",
            _device_properties,
        ),
    )
    for name in ("empty_cache", "ipc_collect"):
        _set(cuda, name, _modified(name, "Dummy", _nothing, "hpu_mismatch"))
    for name in ("Stream", "Event", "StreamContext", "device", "device_of"):
        _set(cuda, name, getattr(hpu, name))
    for name in _LEGACY_TYPES:
        _set(cuda, name, _legacy_type(name))
    nvtx = torch.cuda.nvtx
    for name in ("range_push", "range_pop", "range_start", "range_end", "mark"):
        _set(nvtx, name, _modified(name, "Dummy", _nothing, "hpu_mismatch", nvtx))
    _set(nvtx, "range", _modified("range", "Dummy", _no_range, "hpu_mismatch", nvtx))


# --- tensors and factories ------------------------------------------------------------------

_FACTORIES: Final = (
    "empty", "zeros", "ones", "full", "rand", "randn", "randint", "arange", "tensor",
    "as_tensor", "asarray", "empty_like", "zeros_like", "ones_like", "full_like", "rand_like",
    "randn_like", "randint_like", "eye", "linspace", "logspace", "randperm", "empty_strided",
    "tril_indices", "triu_indices", "scalar_tensor", "normal",
)  # fmt: skip
_NEW_FACTORIES: Final = ("new_empty", "new_zeros", "new_ones", "new_full", "new_tensor")


def _factory(api: str, original: Callable[..., Any]) -> Callable[..., Any]:
    """A factory whose `device="cuda[:N]"` becomes `hpu[:N]` (hpu_match)."""

    def migrated(*args: Any, **kwargs: Any) -> Any:
        device = kwargs.get("device")
        if device is None or not is_cuda(device):
            return original(*args, **kwargs)
        new = {**kwargs, "device": to_hpu(device)}
        if _log and _log[0].active:
            after = f"{api}(args={args}, kwargs={{{format_args(new)}}})"
            _write("hpu_match", api, {"args": args, "kwargs": kwargs}, after)
        return original(*args, **new)

    migrated.__name__ = migrated.__qualname__ = api.rsplit(".", 1)[-1]
    return migrated


def _tensor_to(original: Callable[..., Any]) -> Callable[..., Any]:
    def to(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        new_args, new_kwargs = args, kwargs
        if args and (is_cuda(args[0]) or (type(args[0]) is int)):
            first = f"hpu:{args[0]}" if type(args[0]) is int else to_hpu(args[0])
            new_args = (first, *args[1:])
        elif "device" in kwargs and is_cuda(kwargs["device"]):
            new_kwargs = {**kwargs, "device": to_hpu(kwargs["device"])}
        if new_args is args and new_kwargs is kwargs:
            return original(self, *args, **kwargs)
        if _log and _log[0].active:
            after = f"torch.Tensor.to(args={new_args}, kwargs={{{format_args(new_kwargs)}}})"
            _write("hpu_match", "torch.Tensor.to", {"args": args, "kwargs": kwargs}, after)
        return original(self, *new_args, **new_kwargs)

    return to


def _tensor_cuda(to: Callable[..., Any]) -> Callable[..., Any]:
    def cuda(
        self: torch.Tensor,
        device: Any = None,
        non_blocking: bool = False,
        memory_format: torch.memory_format = torch.preserve_format,
    ) -> Any:
        target = (
            "hpu" if device is None else to_hpu(f"cuda:{device}" if type(device) is int else device)
        )
        if _log and _log[0].active:
            args = {"device": device, "non_blocking": non_blocking, "memory_format": memory_format}
            after = f"torch.Tensor.to(device={target}, non_blocking={non_blocking}, memory_format={memory_format})"
            _write("hpu_match", "torch.Tensor.cuda", args, after)
        return to(self, device=target, non_blocking=non_blocking, memory_format=memory_format)

    return cuda


def _tensor_pin_memory(original: Callable[..., Any]) -> Callable[..., Any]:
    def pin_memory(self: torch.Tensor, device: Any = None) -> Any:
        target = "hpu" if device is None else to_hpu(device)
        if target != device:
            _write(
                "hpu_match",
                "torch.Tensor.pin_memory",
                {"device": device},
                f"torch.Tensor.pin_memory(args={target})",
            )
        return original(self)

    return pin_memory


def _tensor_type(original: Callable[..., Any]) -> Callable[..., Any]:
    """`t.type()` of an hpu tensor answers `torch.cuda.<Scalar>Tensor` (scripts check it);
    `t.type("torch.cuda.FloatTensor")` moves to the HPU with that dtype."""

    def type_(
        self: torch.Tensor, dtype: Any = None, non_blocking: bool = False, **kwargs: Any
    ) -> Any:
        args = {"dtype": dtype, "non_blocking": non_blocking, "kwargs": kwargs}
        if isinstance(dtype, str) and dtype.startswith("torch.cuda."):
            scalar = getattr(torch, dtype.removeprefix("torch.cuda.")).dtype
            _write(
                "hpu_match",
                "torch.Tensor.type",
                args,
                f"torch.Tensor.to(device=hpu, dtype={scalar})",
            )
            return self.to(device="hpu", dtype=scalar)
        answer = original(self, dtype, non_blocking, **kwargs)
        if dtype is None and not kwargs and self.device.type == "hpu":
            scalar_type = str(answer).removeprefix("torch.").removeprefix("hpu.")
            cuda_type = f"torch.cuda.{scalar_type}"
            _write(
                "hpu_match",
                "torch.Tensor.type",
                args,
                f"change output value from {answer} to {cuda_type}",
            )
            return cuda_type
        return answer

    return type_


def _record_stream(self: torch.Tensor, stream: Any) -> None:
    _write("hpu_mismatch", "torch.Tensor.record_stream", {"s": stream}, "Dummy")


def _patch_tensors() -> None:
    for name in _FACTORIES:
        _set(torch, name, _factory(f"torch.{name}", getattr(torch, name)))
    for name in _NEW_FACTORIES:
        _set(torch.Tensor, name, _factory(f"torch.Tensor.{name}", getattr(torch.Tensor, name)))
    to = _tensor_to(torch.Tensor.to)
    _set(torch.Tensor, "to", to)
    _set(torch.Tensor, "cuda", _tensor_cuda(to))
    _set(torch.Tensor, "pin_memory", _tensor_pin_memory(torch.Tensor.pin_memory))
    _set(torch.Tensor, "type", _tensor_type(torch.Tensor.type))
    _set(torch.Tensor, "record_stream", _record_stream)


# --- autocast, loss scaling, data loading, distributed --------------------------------------


def _autocast_init(original: Callable[..., Any]) -> Callable[..., Any]:
    def __init__(
        self: Any,
        device_type: str,
        dtype: torch.dtype | None = None,
        enabled: bool = True,
        cache_enabled: bool | None = None,
    ) -> None:
        if device_type == "cuda":
            before = {
                "device_type": device_type,
                "dtype": dtype,
                "enabled": enabled,
                "cache_enabled": cache_enabled,
            }
            device_type = "hpu"
            dtype = None if dtype == torch.float16 else dtype  # HPU autocast's own: bf16
            after = {**before, "device_type": device_type, "dtype": dtype}
            _write(
                "hpu_match",
                "torch.autocast.__init__",
                before,
                f"torch.autocast.__init__({format_args(after)})",
            )
        original(self, device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    return __init__


def _grad_scaler_init(original: Callable[..., Any]) -> Callable[..., Any]:
    signature = _signature(original)

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        shown = _bound(signature, (self, *args), kwargs)
        if shown.get("device", "cuda") == "cuda" and shown.get("enabled", True):
            shown.pop("device", None)
            _write("hpu_match", "torch.cuda.amp.GradScaler.__init__", shown, "set enabled to False")
            call, named = _rebind(signature, (self, *args), kwargs, {"enabled": False})
            original(*call, **named)
            return
        original(self, *args, **kwargs)

    return __init__


def _data_loader_init(original: Callable[..., Any]) -> Callable[..., Any]:
    """torch 2.13 pins for its current accelerator (hpu here) and deprecates
    `pin_memory_device`: the toolkit's change is logged, the argument left as it is."""
    signature = _signature(original)

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if _log and _log[0].active:
            shown = _bound(signature, (self, *args), kwargs)
            if shown.get("pin_memory") and not shown.get("pin_memory_device"):
                _write(
                    "hpu_match",
                    "torch.utils.data.DataLoader.__init__",
                    shown,
                    "change pin_memory_device to hpu",
                )
        original(self, *args, **kwargs)

    return __init__


def hccl_backend(backend: Any) -> Any:
    """`nccl` -> `hccl`, also inside a per-device list (`cpu:gloo,cuda:nccl`)."""
    if not isinstance(backend, str) or "nccl" not in backend.lower():
        return backend
    if ":" not in backend:
        return "hccl"
    return backend.replace("cuda:nccl", "hpu:hccl").replace("nccl", "hccl")


def _with_backend(api: str, original: Callable[..., Any]) -> Callable[..., Any]:
    """`init_process_group` / `new_group` with the `nccl` backend: `hccl` (and a cuda
    `device_id` the hpu card)."""
    signature = _signature(original)

    def migrated(*args: Any, **kwargs: Any) -> Any:
        shown = _bound(signature, args, kwargs)
        backend = shown.get("backend")
        if hccl_backend(backend) == backend and not is_cuda(shown.get("device_id")):
            return original(*args, **kwargs)
        _write("hpu_match", api, shown, "change backend to hccl")
        changes = {"backend": hccl_backend(backend)}
        if is_cuda(shown.get("device_id")):
            changes["device_id"] = torch.device(to_hpu(shown["device_id"]))
        call, named = _rebind(signature, args, kwargs, changes)
        return original(*call, **named)

    migrated.__name__ = migrated.__qualname__ = api.rsplit(".", 1)[-1]
    return migrated


def _get_backend(original: Callable[..., Any]) -> Callable[..., Any]:
    def get_backend(group: Any = None) -> Any:
        backend = original(group)
        if backend != "hccl" or not _log or _log[0].caller_in_torch():
            return backend
        _write(
            "hpu_match",
            "torch.distributed.get_backend",
            {},
            "change return value from hccl to nccl",
        )
        return "nccl"

    return get_backend


def _ddp_init(original: Callable[..., Any]) -> Callable[..., Any]:
    signature = _signature(original)

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        shown = _bound(signature, (self, *args), kwargs)
        if shown.get("device_ids") is None and shown.get("output_device") is None:
            original(self, *args, **kwargs)
            return
        api = "torch.nn.parallel.DistributedDataParallel.__init__"
        _write("hpu_match", api, shown, "change device_ids and output_device to None")
        changes = {"device_ids": None, "output_device": None}
        call, named = _rebind(signature, (self, *args), kwargs, changes)
        original(*call, **named)

    return __init__


def _compile(original: Callable[..., Any]) -> Callable[..., Any]:
    """`torch.compile` with its default backend, inductor (which needs a CUDA / CPU C++
    toolchain of its own), compiles with `hpu_backend`, as the toolkit maps it."""
    signature = _signature(original)

    def compile(*args: Any, **kwargs: Any) -> Any:
        shown = _bound(signature, args, kwargs)
        if shown.get("backend") not in (None, "inductor"):  # None: torch's default, inductor
            return original(*args, **kwargs)
        after = {**shown, "backend": "hpu_backend"}
        _write("hpu_match", "torch.compile", shown, f"torch.compile({format_args(after)})")
        call, named = _rebind(signature, args, kwargs, {"backend": "hpu_backend"})
        return original(*call, **named)

    return compile


def _patch_libraries() -> None:
    from torch.amp.autocast_mode import autocast
    from torch.amp.grad_scaler import GradScaler
    from torch.nn.parallel import DistributedDataParallel
    from torch.utils.data import DataLoader

    _set(autocast, "__init__", _autocast_init(autocast.__init__))
    _set(GradScaler, "__init__", _grad_scaler_init(GradScaler.__init__))
    _set(DataLoader, "__init__", _data_loader_init(DataLoader.__init__))
    _set(DistributedDataParallel, "__init__", _ddp_init(DistributedDataParallel.__init__))
    _set(torch, "compile", _compile(torch.compile))
    if not torch.distributed.is_available():
        return
    import torch.distributed as dist
    import torch.distributed.distributed_c10d as c10d

    for name in ("init_process_group", "new_group"):
        migrated = _with_backend(f"torch.distributed.{name}", getattr(c10d, name))
        _set(dist, name, migrated)
        _set(c10d, name, migrated)
    _set(dist, "get_backend", _get_backend(dist.get_backend))


# --- install --------------------------------------------------------------------------------


def _internal_folders() -> tuple[str, ...]:
    """Frames of the migration itself (this module and the shim's `gpu_migration` package)."""
    from hpusim.lifecycle import shim_path

    shim = shim_path() / "habana_frameworks" / "torch" / "gpu_migration"
    return (str(Path(__file__).resolve()), __file__, str(shim))


def install() -> None:
    """Migrate CUDA APIs to the emulated HPU (idempotent); the log from the environment."""
    if _log:
        return
    state.require_runtime()
    torch_dir = str(Path(torch.__file__).resolve().parent)
    _log.append(open_from_env(os.environ, _internal_folders(), torch_dir))
    _patch_cuda_module()
    _patch_tensors()
    _patch_libraries()


def install_if_requested() -> None:
    """At `hpusim.enable()`: install when `PT_HPU_GPU_MIGRATION` is set."""
    if requested(os.environ):
        install()


def uninstall() -> None:
    """Put every patched attribute back; close the log."""
    while _patches:
        owner, name, before = _patches.pop()
        if before is _MISSING:
            delattr(owner, name)
        else:
            setattr(owner, name, before)
    while _log:
        _log.pop().close()
