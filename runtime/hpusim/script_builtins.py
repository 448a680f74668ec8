"""TorchScript sees the emulator's replacements of torch functions as the builtins they replace.

`torch.jit.script` compiles a call to `F.one_hot` or `torch.tensor` as the aten op it finds for
that function object in its builtin table (`torch.jit._builtins`, keyed by `id`), and tries to
compile any other Python function it meets from source. While emulating, those names hold the
emulator's Python wrappers (`composites`, `transfers`, `host_fake`), so scripting a function
that calls them failed: Habana's DeepSpeed fork scripts `F.one_hot` at import
(`deepspeed/moe/sharded_moe.py`, `_one_hot_to_float`), so `import deepspeed` stopped. On the
bridge these names are torch's own. The table is built once per process from the attributes
of torch's modules at that moment: built while the wrappers are installed, it would map the
wrappers and miss torch's functions for the rest of the process. So the table is built before
any patch, each wrapper is entered under its original's aten op, and the entries are removed
when the emulator is disabled (a dead wrapper's `id` may be reused by another object).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import torch.jit._builtins as _builtins

_F = TypeVar("_F", bound=Callable[..., object])
_added: list[int] = []


def build_table() -> None:
    """Build TorchScript's builtin table from torch's own functions (idempotent); called
    before the emulator replaces any."""
    _builtins._get_builtin_table()


def as_builtin(replacement: _F, original: object) -> _F:
    """Enter `replacement` in the table under `original`'s aten op, if it has one."""
    op = _builtins._find_builtin(original)
    if op is not None:
        _builtins._register_builtin(replacement, op)
        _added.append(id(replacement))
    return replacement


def forget() -> None:
    """Remove every entry `as_builtin` made."""
    table = _builtins._get_builtin_table()
    for key in _added:
        table.pop(key, None)
    _added.clear()
