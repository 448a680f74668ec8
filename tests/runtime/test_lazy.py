"""Lazy mode: graph flushes with the bridge's reasons, recipe cache hits, recompiles and causes."""

from __future__ import annotations

from typing import Any

import pytest

from tests.runtime.conftest import runtime_events

torch = pytest.importorskip("torch")


def _step(x: Any, w: Any) -> Any:
    import hpusim

    y = torch.relu(x @ w).sum()
    hpusim.mark_step()
    return y


def test_same_shape_compiles_once_then_hits(hpu: Any) -> None:
    sim = hpu("lazy", PT_HPU_ENABLE_CACHE_METRICS="1")
    from hpusim.metrics import metric_localcontext

    w = torch.randn(8, 4, device="hpu")
    sim.mark_step()  # the initialisation is a graph of its own
    with metric_localcontext("graph_compilation") as gc, metric_localcontext("recipe_cache") as rc:
        for _ in range(10):
            _step(torch.randn(2, 8).to("hpu"), w)
    assert dict(gc.stats())["TotalNumber"] == 1
    cache = dict(rc.stats())
    assert cache["TotalMiss"] == 1 and cache["TotalHit"] == 9
    assert sim.config().mode == "lazy"


def test_new_shapes_recompile_with_the_cause(hpu: Any) -> None:
    sim = hpu("lazy", PT_HPU_ENABLE_CACHE_METRICS="1")
    from hpusim.metrics import metric_global
    from hpusim.sink import get_sink

    w = torch.randn(8, 4, device="hpu")
    sim.mark_step()  # the initialisation is a graph of its own
    for batch in (2, 2, 3, 2, 4):  # a smaller/larger last batch is a recompile
        _step(torch.randn(batch, 8).to("hpu"), w)
    gc = dict(metric_global("graph_compilation").stats())
    assert gc["TotalNumber"] == 4  # init graph + batches 2, 3, 4
    assert gc["TotalTime"] > 0 and gc["AvgTime"] == gc["TotalTime"] / 4
    compiles = runtime_events(get_sink().drain(), "compile")[1:]
    assert [c["hpuprof.cause"]["kind"] for c in compiles] == ["new_graph", "shape", "shape"]
    second = compiles[1]["hpuprof.cause"]
    assert second["from"] == "[2, 8]" and second["to"] == "[3, 8]"
    assert "shape changed from [2, 8] to [3, 8]" in second["text"]
    assert all(c["hpuprof.modeled"] is True for c in compiles)
    assert compiles[2]["hpuprof.graph_ops"] == compiles[0]["hpuprof.graph_ops"]


def test_scalar_dtype_and_offset_changes_are_causes(hpu: Any) -> None:
    import hpusim
    from hpusim.sink import get_sink

    hpu("lazy")
    x = torch.ones(4, 4, device="hpu")
    for s in (2.0, 2.0, 3.0):  # pow's exponent stays in the recipe key (a multiplier would not)
        x.pow(s).sum()
        hpusim.mark_step()
    x.to(torch.bfloat16).sum()
    hpusim.mark_step()
    base = torch.arange(32.0).to("hpu")
    for off in (0, 16):
        base[off : off + 16].view(4, 4).exp()
        hpusim.mark_step()
    causes = [c["hpuprof.cause"] for c in runtime_events(get_sink().drain(), "compile")]
    kinds = [c["kind"] for c in causes]
    assert "scalar" in kinds
    scalar = causes[kinds.index("scalar")]
    assert (scalar["from"], scalar["to"]) == ("2.0", "3.0")
    assert "storage_offset" in kinds
    off = causes[kinds.index("storage_offset")]
    assert (off["from"], off["to"]) == ("0", "16")


@pytest.mark.parametrize(
    ("action", "reason"),
    [
        (lambda t: t.sum().item(), "local scalar"),
        (lambda t: t.sum().cpu(), "d2h_maybe_eval"),
        (lambda t: repr(t * 2), "d2h_maybe_eval"),
        (lambda t: torch.nonzero(t > 0), "non zero"),
        (lambda t: torch.unique(t), "unique"),
        (lambda t: torch.digamma(t.abs() + 1), "cpu fallback"),
        (lambda t: torch.hpu.synchronize(), "bindings-synchronize_device"),
    ],
)
def test_flush_reasons(hpu: Any, action: Any, reason: str) -> None:
    from hpusim.sink import get_sink

    hpu("lazy")
    t = torch.randn(4, device="hpu")
    (t * 3).add_(1)  # pending ops
    get_sink().drain()
    action(t)
    builds = runtime_events(get_sink().drain(), "graph_build")
    assert builds, "the pending graph was not flushed"
    assert builds[0]["hpuprof.flush_reason"] == reason


@pytest.mark.parametrize(("limit", "ops"), [("3", 7), ("b", 23)])
def test_op_count_limit_flushes(hpu: Any, limit: str, ops: int) -> None:
    """`b` is 11: the bridge reads a value holding a-f as hex (env_flags.cpp:306-396)."""
    from hpusim.sink import get_sink

    hpu("lazy", PT_HPU_MAX_COMPOUND_OP_SIZE=limit)
    t = torch.ones(4, device="hpu")
    get_sink().drain()
    for _ in range(ops):
        t = t + 1
    reasons = [b["hpuprof.flush_reason"] for b in runtime_events(get_sink().drain(), "graph_build")]
    assert reasons == ["reaching max accumulated compound op size"] * 2


def test_mark_step_is_a_noop_in_eager(hpu: Any) -> None:
    import hpusim
    from hpusim.metrics import metric_global

    hpu("eager")
    t = torch.ones(4, device="hpu")
    with pytest.warns(UserWarning, match="It's lazy mode only functionality"):
        hpusim.mark_step()
    (t + 1).sum().item()
    # eager-compiler recipes are not counted in graph_compilation (as in the bridge)
    assert dict(metric_global("graph_compilation").stats())["TotalNumber"] == 0


def test_env_selects_the_mode(hpu: Any) -> None:
    assert hpu(None, PT_HPU_LAZY_MODE="1").config().mode == "lazy"
    assert hpu(None, PT_HPU_LAZY_MODE="0").config().mode == "eager"


def test_step_closures_run_after_mark_step(hpu: Any) -> None:
    hpu("lazy")
    import hpusim
    from habana_frameworks.torch import core as htcore

    seen: list[int] = []
    htcore.add_step_closure(seen.append, (1,))
    assert seen == []
    hpusim.mark_step()
    assert seen == [1]
