"""The attribution room's state (`Attribution`): the running modules and the optimizer depth.

A leaf: it imports no other room, so `state.Runtime` can name it without an import cycle; the
global hooks that change it are `attribution.py`'s.
"""

from __future__ import annotations

from hpusim.sink import Sink


class Attribution:
    """The module and phase of the op being dispatched: the stack of running modules (string
    ids of their paths) and the depth of optimizer steps; changed only by attribution.py's hooks."""

    __slots__ = ("_sink", "module_stack", "optimizer_depth")

    def __init__(self, sink: Sink) -> None:
        self._sink = sink
        self.module_stack: list[int] = []
        self.optimizer_depth = 0

    def module(self) -> int:
        """The string id of the innermost running module's path (0: none)."""
        stack = self.module_stack
        return stack[-1] if stack else 0

    def module_path(self) -> str:
        """The innermost running module's path ("" outside modules)."""
        stack = self.module_stack
        if not stack:
            return ""
        try:
            return str(self._sink.string(stack[-1]))
        except (IndexError, AttributeError):
            return ""
