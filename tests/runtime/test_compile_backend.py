"""torch.compile(backend="hpu_backend") on the emulated device: compiles, recompiles with dynamo's
guard-failure text, graph breaks, and numerics equal to eager."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.runtime.conftest import runtime_events

torch = pytest.importorskip("torch")

BATCHES = [8, 8, 4, 2, 3, 8]


def _mlp() -> Any:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))


@pytest.fixture
def dynamo_clean() -> Any:
    import torch._dynamo

    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_static_shapes_compile_once_per_new_batch_size(hpu: Any, dynamo_clean: Any) -> None:
    from hpusim.sink import get_sink

    hpu()
    model = _mlp().to("hpu")
    compiled = torch.compile(model, backend="hpu_backend", dynamic=False)
    for b in BATCHES:
        x = torch.randn(b, 4, device="hpu")
        assert torch.equal(compiled(x).cpu(), model(x).cpu())
    events = runtime_events(get_sink().drain(), "dynamo_compile")
    assert len(events) == 4  # 8, 4, 2, 3: one compile per new size, repeats hit
    assert events[0]["hpuprof.cause"]["kind"] == "new_graph"
    causes = [e["hpuprof.cause"] for e in events[1:]]
    assert all(c["kind"] == "guard" for c in causes)
    assert "size mismatch at index 0. expected 8, actual 4" in causes[0]["text"]
    assert "expected 2, actual 3" in causes[2]["text"]
    assert {e["hpuprof.graph_ops"] for e in events} == {3}  # linear, relu, linear


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_automatic_dynamic_compiles_twice(hpu: Any, dynamo_clean: Any) -> None:
    from hpusim.sink import get_sink

    hpu()
    model = _mlp().to("hpu")
    compiled = torch.compile(model, backend="hpu_backend")
    for b in BATCHES:
        x = torch.randn(b, 4, device="hpu")
        assert torch.equal(compiled(x).cpu(), model(x).cpu())
    events = runtime_events(get_sink().drain(), "dynamo_compile")
    assert len(events) == 2
    assert events[1]["hpuprof.cause"]["kind"] == "guard"
    assert events[1]["hpuprof.dynamic"] is True and events[0]["hpuprof.dynamic"] is False


def test_graph_break_is_recorded(hpu: Any, dynamo_clean: Any) -> None:
    from hpusim.sink import get_sink

    hpu()

    def f(x: Any) -> Any:
        y = x * 2
        if y.sum() > 0:  # data-dependent branch: a graph break
            return y + 1
        return y - 1

    cf = torch.compile(f, backend="hpu_backend")
    x = torch.ones(4, device="hpu")
    assert torch.equal(cf(x).cpu(), f(x).cpu())
    batch = get_sink().drain()
    breaks = runtime_events(batch, "graph_break")
    assert len(breaks) >= 1
    assert (
        breaks[0]["hpuprof.cause"]["kind"] == "graph_break" and breaks[0]["hpuprof.cause"]["text"]
    )
    assert len(runtime_events(batch, "dynamo_compile")) == 2  # before and after the break


def test_compiled_graph_ops_run_on_the_device_as_one_recipe(hpu: Any, dynamo_clean: Any) -> None:
    from hpusim.sink import HPU_EVENTS, KIND_OP, get_sink

    hpu()
    cf = torch.compile(lambda a, b: torch.relu(a @ b + 1), backend="hpu_backend")
    a, b = torch.randn(4, 4, device="hpu"), torch.randn(4, 4, device="hpu")
    get_sink().drain()
    cf(a, b)
    cf(a, b)
    batch = get_sink().drain()
    ops = [batch.strings[batch.name[i]] for i in range(len(batch)) if batch.kind[i] == KIND_OP]
    assert "aten::mm" in ops and "aten::relu" in ops  # observed through the wrappers
    modes = {batch.mode[i] for i in range(len(batch)) if batch.kind[i] == KIND_OP}
    assert modes == {3}  # "compile"
    launches = runtime_events(batch, "launch")
    compiles = [i for i in range(len(batch)) if HPU_EVENTS[batch.hpu_event[i]] == "compile"]
    assert len(launches) == 2 and len(compiles) == 1  # the graph's recipe compiles once
    assert [e["hpuprof.cache"] for e in launches] == ["miss", "hit"]
    assert launches[0]["hpuprof.graph_ops"] == 3  # mm, add, relu


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_compiled_training_equals_eager(hpu: Any, dynamo_clean: Any) -> None:
    hpu()
    eager = _mlp().to("hpu")
    model = copy.deepcopy(eager)
    compiled = torch.compile(model, backend="hpu_backend")
    opt_e = torch.optim.SGD(eager.parameters(), lr=0.1)
    opt_c = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.manual_seed(1)
    data = [(torch.randn(8, 4, device="hpu"), torch.randn(8, 2, device="hpu")) for _ in range(5)]
    for x, y in data:
        losses = []
        for net, opt in ((eager, opt_e), (compiled, opt_c)):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(net(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        assert losses[0] == losses[1]
    for pe, pc in zip(eager.parameters(), model.parameters(), strict=True):
        assert torch.equal(pe.cpu(), pc.cpu())


def test_backend_is_registered_only_while_enabled(hpu: Any) -> None:
    from torch._dynamo.backends.registry import list_backends

    hpu()
    assert "hpu_backend" in list_backends(exclude_tags=())
    import hpusim

    hpusim.disable()
    assert "hpu_backend" not in list_backends(exclude_tags=())
