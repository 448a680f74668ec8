"""HPU graphs on the emulated device: capture/replay, wrap_in_hpu_graph caching, max_graphs,
ModuleCacher, the documented limitations and their error strings, lazy-mode-only exports."""

from __future__ import annotations

import copy
import inspect
from typing import Any

import pytest

from tests.runtime.conftest import runtime_events

torch = pytest.importorskip("torch")


def _mlp() -> Any:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))


def test_exports_exist_in_lazy_mode_only(hpu: Any) -> None:
    hpu("eager")
    import habana_frameworks.torch.hpu as ht_hpu

    assert not hasattr(ht_hpu, "wrap_in_hpu_graph") and not hasattr(torch.hpu, "HPUGraph")
    with pytest.raises(ImportError):
        from habana_frameworks.torch.hpu import wrap_in_hpu_graph
    hpu("lazy")
    from habana_frameworks.torch.hpu import (  # noqa: F401
        HPUGraph,
        ModuleCacher,
        graph,
        make_graphed_callables,
        wrap_in_hpu_graph,
    )

    assert torch.hpu.wrap_in_hpu_graph is wrap_in_hpu_graph


def test_capture_and_replay_recompute_into_static_outputs(hpu: Any) -> None:
    from hpusim.sink import KIND_DEVICE, KIND_OP, get_sink

    hpu("lazy")
    import habana_frameworks.torch.hpu as ht_hpu

    static_x = torch.zeros(4, device="hpu")
    g = ht_hpu.HPUGraph()
    with ht_hpu.graph(g):
        static_y = static_x * 2 + 1
    static_x.copy_(torch.tensor([1.0, 2.0, 3.0, 4.0]).to("hpu"))
    get_sink().drain()
    g.replay()
    assert static_y.tolist() == [3.0, 5.0, 7.0, 9.0]
    batch = get_sink().drain()
    replays = runtime_events(batch, "graph_replay")
    assert len(replays) == 1 and replays[0]["hpuprof.graph_ops"] == 2  # mul, add
    rid = next(
        batch.graph[i] for i in range(len(batch)) if batch.strings[batch.name[i]].startswith("HPU")
    )
    on_graph = [i for i in range(len(batch)) if batch.graph[i] == rid]
    kernels = [batch.strings[batch.name[i]] for i in on_graph if batch.kind[i] == KIND_DEVICE]
    # the captured ops on the modeled timeline, as the graph compiler runs them: the
    # element-wise chain mul -> add is ONE fused kernel
    assert len(kernels) == 1 and "mul" in kernels[0] and "add" in kernels[0], kernels
    # no per-op host dispatch for the replay: only the host read (.tolist) remains
    host_ops = [batch.strings[batch.name[i]] for i in range(len(batch)) if batch.kind[i] == KIND_OP]
    assert "aten::mul" not in host_ops and "aten::add" not in host_ops


def test_wrap_in_hpu_graph_caches_by_input_hash(hpu: Any) -> None:
    from hpusim.sink import get_sink

    hpu("lazy")
    import habana_frameworks.torch.hpu as ht_hpu

    ref = _mlp().eval()
    model = ht_hpu.wrap_in_hpu_graph(copy.deepcopy(ref).to("hpu"))
    # the forward keeps the module's signature (transformers' generate validates against it)
    assert inspect.signature(model.forward) == inspect.signature(ref.forward)
    assert model.forward.__name__ == "forward"
    outs = []
    with torch.no_grad():
        for b in (2, 2, 3, 2):
            x = torch.randn(b, 4)
            out = model(x.to("hpu"))
            assert torch.equal(out.cpu(), ref(x))
            outs.append(out)
    assert outs[1] is outs[0] and outs[3] is outs[0]  # replays return the static outputs
    st = model.hpu_graph_stats
    assert (st.captures, st.replays, st.uncaptured) == (2, 2, 0)
    batch = get_sink().drain()
    assert len(runtime_events(batch, "graph_capture")) == 2
    assert len(runtime_events(batch, "graph_replay")) == 2


def test_max_graphs_full_runs_new_inputs_uncaptured(hpu: Any) -> None:
    hpu("lazy")
    import habana_frameworks.torch.hpu as ht_hpu

    ref = _mlp().eval()
    model = ht_hpu.wrap_in_hpu_graph(copy.deepcopy(ref).to("hpu"), max_graphs=1)
    with torch.no_grad():
        for b in (2, 3, 3, 2):
            x = torch.randn(b, 4)
            assert torch.equal(model(x.to("hpu")).cpu(), ref(x))
    st = model.hpu_graph_stats
    assert (st.captures, st.replays, st.uncaptured) == (1, 1, 2)


def test_scalar_values_and_autocast_state_are_part_of_the_key(hpu: Any) -> None:
    hpu("lazy")
    import habana_frameworks.torch.hpu as ht_hpu

    f = ht_hpu.wrap_in_hpu_graph_func(lambda x, s: x * s)
    x = torch.ones(3, device="hpu")
    assert f(x, 2.0).tolist() == [2.0] * 3
    assert f(x, 3.0).tolist() == [3.0] * 3  # a new scalar value: recapture, not a stale replay
    with torch.autocast("hpu", dtype=torch.bfloat16):
        f(x, 3.0)
    assert (f.stats.captures, f.stats.replays) == (3, 0)
    f(x, 2.0)
    assert f.stats.replays == 1


def test_view_of_input_changes_the_hash(hpu: Any) -> None:
    hpu("lazy")
    from hpusim.hpu_graphs import input_hash

    x = torch.randn(4, 4, device="hpu")
    assert input_hash(((x,), {})) == input_hash(((x.clone(),), {}))
    assert input_hash(((x,), {})) != input_hash(((x.t(),), {}))  # same shape, another view


def test_replay_is_static_data_dependent_branch_stays_as_captured(hpu: Any) -> None:
    hpu("lazy")
    import habana_frameworks.torch.hpu as ht_hpu

    def f(x: Any) -> Any:
        return x + 1 if x.sum().item() > 0 else x - 1  # .item() splits the capture

    wrapped = ht_hpu.wrap_in_hpu_graph_func(f)
    pos = torch.ones(2, device="hpu")
    assert wrapped(pos).tolist() == [2.0, 2.0]
    neg = -torch.ones(2, device="hpu")
    # the real bridge replays the captured branch: x + 1 on the new input
    assert wrapped(neg).tolist() == [0.0, 0.0]
    g = next(iter(wrapped.cache.values())).graph
    assert g.subgraphs == 2


def test_limitation_errors_use_the_bridge_strings(hpu: Any) -> None:
    hpu("lazy")
    import habana_frameworks.torch.hpu as ht_hpu

    x = torch.rand(4, device="hpu") + 1
    g = ht_hpu.HPUGraph()
    with (
        pytest.raises(RuntimeError, match="cpu fallback is not supported during hpu graph"),
        ht_hpu.graph(g),
    ):
        torch.digamma(x)  # no HPU kernel: falls back to CPU
    assert not ht_hpu.is_current_stream_capturing()
    g2 = ht_hpu.HPUGraph()
    g2.capture_begin()
    with pytest.raises(RuntimeError, match=r"FATAL ERROR :: MODULE:PT_DEVICE GRAPH:: graph "):
        g2.capture_begin()  # the same graph again (another graph's begin takes the capture)
    g2.capture_end()
    with pytest.raises(RuntimeError, match="mark_user_inputs must be while capturing"):
        g2.mark_user_inputs([x])
    g2.mark_user_outputs([x])
    with pytest.raises(RuntimeError, match=r"mark_user_outputs is called more than once"):
        g2.mark_user_outputs([x])
    with pytest.raises(AssertionError, match="sample_args for each callable must be a tuple"):
        ht_hpu.make_graphed_callables(torch.nn.Linear(2, 2).to("hpu"), [x])


def test_module_cacher_replays_training_forwards(hpu: Any) -> None:
    from hpusim.sink import get_sink

    hpu("lazy")
    import habana_frameworks.torch.core as htcore
    import habana_frameworks.torch.hpu as ht_hpu

    plain = _mlp().to("hpu")
    cached = ht_hpu.ModuleCacher(max_graphs=1)(model=copy.deepcopy(plain), inplace=True)
    opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (plain, cached)]
    torch.manual_seed(3)
    for b in (4, 4, 4, 2):
        x, y = torch.randn(b, 4, device="hpu"), torch.randn(b, 2, device="hpu")
        losses = []
        for m, opt in zip((plain, cached), opts, strict=True):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(m(x), y)
            loss.backward()
            opt.step()
            htcore.mark_step()
            losses.append(loss.item())
        assert losses[0] == losses[1]
    stats = cached.hpu_graph_stats
    assert (len(stats.graphs), stats.total_cached_hits, stats.uncached_train) == (1, 3, 1)
    text = stats.statistics()
    assert "    Max graphs                :- 1" in text
    assert "    Total forwards executed   :- 4" in text
    batch = get_sink().drain()
    assert len(runtime_events(batch, "graph_capture")) == 1
    assert len(runtime_events(batch, "graph_replay")) == 2


def test_module_cacher_not_in_place_shares_the_parameters(hpu: Any) -> None:
    """`inplace=False` returns a shallow copy (the bridge's graphs.py:1088-1089), so an
    optimizer of the original's parameters trains through it (a deep copy trained nothing)."""
    hpu("lazy")
    import habana_frameworks.torch.core as htcore
    import habana_frameworks.torch.hpu as ht_hpu

    model = _mlp().to("hpu")
    cached = ht_hpu.ModuleCacher(max_graphs=2)(model=model, inplace=False)
    assert cached is not model and model.forward != cached.forward
    assert [id(p) for p in cached.parameters()] == [id(p) for p in model.parameters()]
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    before = [p.detach().cpu().clone() for p in model.parameters()]
    for _ in range(2):
        cached(torch.randn(4, 4, device="hpu")).pow(2).sum().backward()
        opt.step()
        htcore.mark_step()
    after = [p.detach().cpu() for p in model.parameters()]
    assert all(not torch.equal(b, a) for b, a in zip(before, after, strict=True))
    assert cached.hpu_graph_stats.total_cached_hits == 2  # a capture, then a replay


def test_a_replay_measures_fp8_amaxes_as_its_capture_did(hpu: Any) -> None:
    """A graph captured with the FP8 amax measurement on replays it with the mode off, and one
    captured with it off measures nothing (the bridge's `test_module_cacher_with_dilation`:
    Habana's docs cache one graph of each)."""
    hpu("lazy")
    import habana_frameworks.torch.core as htcore
    import habana_frameworks.torch.hpex.experimental.transformer_engine as te
    import habana_frameworks.torch.hpu as ht_hpu
    from habana_frameworks.torch.hpex.experimental.transformer_engine.fp8 import (
        FP8GlobalStateManager,
    )

    recipe = te.recipe.DelayedScaling(
        fp8_format=te.recipe.Format.E5M2, amax_history_len=1, amax_compute_algo="max",
        reduce_amax=False, interval=1,
    )  # fmt: skip
    linear = te.Linear(4, 3, bias=True, params_dtype=torch.bfloat16)

    def step(model: Any, value: float) -> float:
        x = torch.full((4,), value, dtype=torch.bfloat16, device="hpu", requires_grad=True)
        model(x).sum().backward()
        htcore.mark_step()
        return float(linear.fp8_meta["scaling_fwd"].amax_history[0][0].cpu())

    with te.fp8_autocast(enabled=True, fp8_recipe=recipe):
        step(linear, 0.5)
        FP8GlobalStateManager.set_measurement_mode(True, True)
        measuring = ht_hpu.ModuleCacher(max_graphs=2)(model=linear, inplace=False)
        step(measuring, 0.0)  # captured with the measurement on
        FP8GlobalStateManager.set_measurement_mode(True, False)
        quiet = ht_hpu.ModuleCacher(max_graphs=2)(model=linear, inplace=False)
        assert step(quiet, 0.0) == 0.0  # captured with it off: the history keeps 0.0
        assert step(quiet, 3.0) == 0.0  # a replay measures nothing
        assert step(measuring, 3.0) == 3.0  # a replay measures, the mode now off
        assert step(quiet, 7.0) == 3.0
