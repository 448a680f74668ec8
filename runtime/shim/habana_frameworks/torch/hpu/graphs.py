"""`habana_frameworks.torch.hpu.graphs` (emulated): the HPU-graph API of hpusim.hpu_graphs.

The bridge imports this module into `habana_frameworks.torch.hpu` only in lazy mode; importing
it directly works in any mode."""

from hpusim.hpu_graphs import (
    CachedParams,
    HPUGraph,
    ModuleCacher,
    graph,
    input_hash,
    is_current_stream_capturing,
    make_graphed_callables,
    wrap_in_hpu_graph,
    wrap_in_hpu_graph_func,
)

__all__ = [
    "CachedParams",
    "HPUGraph",
    "ModuleCacher",
    "graph",
    "input_hash",
    "is_current_stream_capturing",
    "make_graphed_callables",
    "wrap_in_hpu_graph",
    "wrap_in_hpu_graph_func",
]
