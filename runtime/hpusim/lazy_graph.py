"""The lazy-graph room's state (`LazyGraph`): the pending graph and the lazy bridge's counters.

A leaf: it imports no other room, so `state.Runtime` can name it without an import cycle; the
flushes, host syncs and mark_step that drive it are `lazy.py`'s (gaudi.md 2.5, 4.2).
"""

from __future__ import annotations

import warnings
from typing import Any


class LazyGraph:
    """The pending lazy graph and the lazy bridge's counters.

    `ops`: the pending ops `(op key, OpCost)` in program order; `deps`: per graphed op, the
    storages it reads and writes (`accounting.after_op`); `flushes`: graphs flushed so far
    (`HpuTensor._epoch` compares against it); `compound_ops`: top-level ops since the last flush
    (`PT_HPU_MAX_COMPOUND_OP_SIZE`); `iteration_graphs`: graphs since the last
    `iter_mark_step` (the bridge's per-iteration counter); `mark_steps`: `mark_step` calls.
    """

    def __init__(self, max_compound_ops: int) -> None:
        self.max_compound_ops = max_compound_ops
        self.ops: list[Any] = []
        self.deps: list[Any] = []
        self.start_ns = 0
        self.flushes = 0
        self.compound_ops = 0
        self.iteration_graphs = 0
        self.mark_steps = 0
        self._bridge_recipes = 0  # the bridge's recipe-name counter (get_unique_recipe_name)
        self._plans: list[Any] | None = None  # graphs flushed during an HPU-graph capture
        self._closures: list[tuple[Any, tuple[Any, ...]]] = []
        self._warned_lazy_only = False

    # --- the pending graph -----------------------------------------------------------------
    def __len__(self) -> int:
        """Ops pending."""
        return len(self.ops)

    def add(self, key: Any, cost: Any, t0: int) -> None:
        """Op `key` (modeled as `cost`), dispatched at `t0`, joins the pending graph."""
        ops = self.ops
        if not ops:
            self.start_ns = t0
        ops.append((key, cost))

    def note_dataflow(self, inputs: Any, outputs: Any) -> None:
        """The storages a graphed op reads and writes (`(gid, bytes)` tuples)."""
        self.deps.append((inputs, outputs))

    def count_op(self) -> bool:
        """One more top-level op since the last flush; whether the compound-op limit is hit."""
        self.compound_ops += 1
        return self.compound_ops >= self.max_compound_ops

    def pending_outputs(self) -> set[int]:
        """The storages the pending graph writes."""
        return {g for _, outs in self.deps for g, _ in outs}

    def take(self) -> tuple[list[Any], list[Any]] | None:
        """Close the pending graph: its (ops, dataflow), or None when nothing is pending."""
        self.compound_ops = 0
        ops = self.ops
        if not ops:
            return None
        deps = self.deps
        self.ops, self.deps = [], []
        self.flushes += 1
        self.iteration_graphs += 1
        return ops, deps

    def set_aside(self) -> tuple[list[Any], list[Any]]:
        """Hold the pending graph apart (an HPU-graph replay runs its own ops meanwhile)."""
        held = self.ops, self.deps
        self.ops, self.deps = [], []
        return held

    def restore(self, held: tuple[list[Any], list[Any]]) -> None:
        """Put back a graph `set_aside` held."""
        self.ops, self.deps = held

    def bridge_recipe_name(self) -> str:
        """The name synapse compiles the next graph under: `.graph_dumps/HabanaFusedOpLazy_<n>`."""
        n = self._bridge_recipes
        self._bridge_recipes += 1
        return f".graph_dumps/HabanaFusedOpLazy_{n}"

    # --- HPU-graph captures: the recipes a replay runs again -------------------------------
    def begin_plans(self) -> None:
        self._plans = []

    def end_plans(self) -> list[Any]:
        """The graphs flushed since `begin_plans` (then no longer collected)."""
        plans, self._plans = self._plans or [], None
        return plans

    def note_plan(self, ops: list[Any], deps: list[Any], alive: Any) -> None:
        """While a capture collects: a flushed graph, with the storages that outlive it."""
        if self._plans is None:
            return
        # what outlives the graph: in an inference capture nothing but its outputs (the
        # capture's own references keep its intermediates alive only in the emulator)
        kept: frozenset[int] = frozenset()
        if _grad_enabled():
            kept = frozenset(g for _, outs in deps for g, _ in outs if alive(g))
        self._plans.append((ops, deps, kept))

    # --- steps -----------------------------------------------------------------------------
    def count_mark_step(self) -> int:
        self.mark_steps += 1
        return self.mark_steps

    def new_iteration(self) -> None:
        """`iter_mark_step`: the per-iteration graph counter starts again."""
        self.iteration_graphs = 0

    def add_closure(self, closure: Any, args: tuple[Any, ...]) -> None:
        self._closures.append((closure, args))

    def run_closures(self) -> None:
        closures, self._closures = self._closures, []
        for fn, args in closures:
            fn(*args)

    def warn_lazy_only(self) -> None:
        """The bridge's warning for a lazy-only call outside lazy mode (logged once)."""
        if not self._warned_lazy_only:
            self._warned_lazy_only = True
            warnings.warn(
                "Calling mark_step function does not have any effect. It's lazy mode only "
                "functionality. (warning logged once)",
                stacklevel=3,
            )


def _grad_enabled() -> bool:
    import torch  # deferred: lazy_graph.py loads before torch is needed

    return bool(torch.is_grad_enabled())
