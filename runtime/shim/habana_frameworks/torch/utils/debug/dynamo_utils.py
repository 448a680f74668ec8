"""`utils.debug.dynamo_utils` (emulated): `FxGraphAnalyzer` counts the ops of the FX graphs
`hpu_backend` compiles while it is active (`count_ops(ops, model)`-style queries)."""

from typing import Any


class FxGraphAnalyzer:
    """`with FxGraphAnalyzer(reset_dynamo=False) as fga: ...; fga.get_ops_summary()`: per
    compiled graph, `{op name: OpSummary(graph_count, eager_count)}` (every op of the emulator's
    compiled graphs runs in the graph; eager_count is 0)."""

    registered: "FxGraphAnalyzer | None" = None

    def __init__(self, reset_dynamo: bool = False) -> None:
        self.reset_dynamo = reset_dynamo
        self.graphs: list[dict[str, Any]] = []

    def __enter__(self) -> "FxGraphAnalyzer":
        import torch

        if self.reset_dynamo:
            torch._dynamo.reset()
        from hpusim import compile_backend

        FxGraphAnalyzer.registered = self
        compile_backend.add_graph_observer(self.add_graph)
        return self

    def __exit__(self, *exc: Any) -> None:
        from hpusim import compile_backend

        compile_backend.remove_graph_observer(self.add_graph)
        FxGraphAnalyzer.registered = None

    def add_graph(self, gm: Any) -> None:
        counts: dict[str, Any] = {}
        for node in gm.graph.nodes:
            if node.op == "call_function":
                name = str(getattr(node.target, "__name__", node.target))
                summary = counts.setdefault(name, _OpSummary())
                summary.graph_count += 1
        self.graphs.append(counts)

    def get_ops_summary(self) -> list[dict[str, Any]]:
        return self.graphs


class _OpSummary:
    def __init__(self) -> None:
        self.graph_count = 0
        self.eager_count = 0

    def __repr__(self) -> str:
        return f"OpSummary(graph_count={self.graph_count}, eager_count={self.eager_count})"
