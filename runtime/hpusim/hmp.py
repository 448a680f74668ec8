"""Legacy Habana Mixed Precision (HMP), `habana_frameworks.torch.hpex.hmp` (gaudi.md 5.2).

`hmp.convert(opt_level, bf16_file_path, fp32_file_path, isVerbose)` turns on process-wide casts
of hpu tensors at the torch-function level (the bridge wraps torch functions with Python
decorators; here one `TorchFunctionMode` stays pushed after `convert`, so the cost applies to
every torch call from then on, like the decorators). Rules (docs):
- ops in the BF16 list run in bf16, ops in the FP32 list in fp32 (float inputs cast);
- multi-input ops (add, sub, mul, div, cat, stack...) run in their widest input dtype;
- in-place ops cast their other inputs to the dtype of the first input;
- other ops run in the dtype of their first input (no cast).
`with hmp.disable_casts():` turns the casts off inside (e.g. around the optimizer step).

Default lists: BF16 `addmm bmm conv1d conv2d conv3d dot mm mv`, FP32 `batch_norm cross_entropy
log_softmax softmax nll_loss topk` (as the brief states them; gaudi.md 5.2 could not confirm them
from the HMP configuration page). A list file (names separated by whitespace or newlines)
replaces its default list. `opt_level="O1"` applies the two lists; `"O2"` (UNVERIFIED against
the bridge) runs the BF16 list in bf16 and every other float op in fp32.

With `isVerbose=True` HMP prints its configuration and one line per cast:
`HMP: <op>: casting input from <dtype> to <dtype>` (our wording: gaudi.md does not record the
bridge's verbose text). Every cast is also an `hpuprof.event: "cast"` (`hpuprof.source: hmp`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

import hpusim.state as state
from hpusim.autocast import cast, op_names, widest_dtype
from hpusim.lifecycle import on_disable
from hpusim.tensor import HpuTensor

DEFAULT_BF16_OPS: Final = ("addmm", "bmm", "conv1d", "conv2d", "conv3d", "dot", "mm", "mv")
DEFAULT_FP32_OPS: Final = (
    "batch_norm",
    "cross_entropy",
    "log_softmax",
    "softmax",
    "nll_loss",
    "topk",
)
MULTI_INPUT_OPS: Final = frozenset(
    [
        "add",
        "sub",
        "mul",
        "div",
        "cat",
        "stack",
        "addcmul",
        "addcdiv",
        "where",
        "maximum",
        "minimum",
        "true_divide",
        "truediv",
    ]
)
OPT_LEVELS: Final = ("O1", "O2")
_CONVERSIONS: Final = frozenset(
    ["to", "type", "float", "double", "half", "bfloat16", "copy_", "clone"]
)


class _State:
    enabled = False
    opt_level = "O1"
    bf16: frozenset[str] = frozenset(DEFAULT_BF16_OPS)
    fp32: frozenset[str] = frozenset(DEFAULT_FP32_OPS)
    verbose = False
    disabled = 0
    mode: Any = None


def _read_list(path: str | None, default: tuple[str, ...]) -> frozenset[str]:
    if not path:
        return frozenset(default)
    with open(path, encoding="utf-8") as f:
        return frozenset(f.read().split())


def _log(line: str) -> None:
    if _State.verbose:
        print(line, flush=True)


def _mode_class() -> type:
    import torch
    from torch.overrides import TorchFunctionMode

    def cast_one(x: Any, dtype: Any, op: str, policy: str) -> Any:
        y = cast(x, dtype, op, policy, HpuTensor, "hmp")
        if _State.verbose and y is not x and isinstance(x, torch.Tensor):
            _log(f"HMP: {op}: casting input from {x.dtype} to {y.dtype}")
        return y

    def cast_all(args: Any, kwargs: Any, dtype: Any, op: str, policy: str) -> Any:
        a = tuple(cast_one(x, dtype, op, policy) for x in args)
        k = {n: cast_one(v, dtype, op, policy) for n, v in kwargs.items()}
        return a, k

    class HmpMode(TorchFunctionMode):
        def __torch_function__(
            self, func: Any, types: Any, args: Any = (), kwargs: Any = None
        ) -> Any:
            kwargs = kwargs or {}
            if _State.disabled or not _State.enabled:
                return func(*args, **kwargs)
            name = getattr(func, "__name__", "")
            names = op_names(name)
            op = names[0]
            if op in _CONVERSIONS:
                return func(*args, **kwargs)
            target = None
            policy = ""
            if any(n in _State.bf16 for n in names):
                target, policy = torch.bfloat16, "bf16_list"
            elif any(n in _State.fp32 for n in names):
                target, policy = torch.float32, "fp32_list"
            elif name.endswith("_") or (name.startswith("__i") and name.endswith("__")):
                first = args[0] if args else None
                if type(first) is HpuTensor and first.is_floating_point():
                    target, policy = first.dtype, "inplace_first_input"
                    rest, kwargs = cast_all(args[1:], kwargs, target, op, policy)
                    args = (first, *rest)
                    target = None
            elif any(n in MULTI_INPUT_OPS for n in names):
                target, policy = widest_dtype(args, kwargs, HpuTensor), "widest_input"
            elif _State.opt_level == "O2":
                target, policy = torch.float32, "O2_fp32"
            if target is not None:
                args, kwargs = cast_all(args, kwargs, target, op, policy)
            return func(*args, **kwargs)

    return HmpMode


def convert(
    opt_level: str = "O2",
    bf16_file_path: str | None = None,
    fp32_file_path: str | None = None,
    isVerbose: bool = False,
) -> None:
    """Turn HMP on for the rest of the process (or until `hpusim.disable()`)."""
    if opt_level not in OPT_LEVELS:
        raise ValueError(f"opt_level must be one of {OPT_LEVELS}, not {opt_level!r}")
    state.require_runtime()
    _State.opt_level = opt_level
    _State.bf16 = _read_list(bf16_file_path, DEFAULT_BF16_OPS)
    _State.fp32 = _read_list(fp32_file_path, DEFAULT_FP32_OPS)
    _State.verbose = bool(isVerbose)
    _log(f"HMP: opt_level={opt_level}")
    _log(f"HMP: BF16 ops: {sorted(_State.bf16)}")
    _log(f"HMP: FP32 ops: {sorted(_State.fp32)}")
    if _State.mode is None:
        _State.mode = _mode_class()()
        _State.mode.__enter__()
        on_disable(_off)
    _State.enabled = True


def _off() -> None:
    mode = _State.mode
    _State.enabled = False
    _State.verbose = False
    _State.mode = None
    if mode is not None:
        with contextlib.suppress(RuntimeError):  # the mode stack was already unwound
            mode.__exit__(None, None, None)


def is_enabled() -> bool:
    return _State.enabled


@contextmanager
def disable_casts() -> Iterator[None]:
    """No HMP casts inside (e.g. `with hmp.disable_casts(): optimizer.step()`)."""
    _State.disabled += 1
    try:
        yield
    finally:
        _State.disabled -= 1
