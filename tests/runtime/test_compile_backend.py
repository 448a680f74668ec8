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
    torch.manual_seed(1)
    data = [(torch.randn(8, 4, device="hpu"), torch.randn(8, 2, device="hpu")) for _ in range(5)]
    losses = _train_side_by_side(
        (eager, compiled), torch.optim.SGD, data, torch.nn.functional.mse_loss
    )
    assert all(le == lc for le, lc in losses)
    for pe, pc in zip(eager.parameters(), model.parameters(), strict=True):
        assert torch.equal(pe.cpu(), pc.cpu())


def _train_side_by_side(
    nets: tuple[Any, Any], optimizer: Any, data: list[Any], loss_fn: Any, **opt_kw: Any
) -> list[tuple[float, float]]:
    """Train an eager model and a compiled copy on the same batches; the (eager, compiled) loss
    of each step."""
    opts = [optimizer(net.parameters(), **(opt_kw or {"lr": 0.1})) for net in nets]
    losses = []
    for x, y in data:
        step = []
        for net, opt in zip(nets, opts, strict=True):
            opt.zero_grad()
            loss = loss_fn(net(x), y)
            loss.backward()
            opt.step()
            step.append(loss.item())
        losses.append((step[0], step[1]))
    return losses


def test_backend_and_tangent_hook_are_there_only_while_enabled(hpu: Any) -> None:
    from torch._dynamo.backends.registry import list_backends

    hpu()
    assert "hpu_backend" in list_backends(exclude_tags=())
    # AOT autograd's tangent hook (the device's zero tangents) is torch's only while enabled
    assert "__coerce_same_metadata_as_tangent__" in vars(torch.Tensor)
    import hpusim

    hpusim.disable()
    assert "hpu_backend" not in list_backends(exclude_tags=())
    assert "__coerce_same_metadata_as_tangent__" not in vars(torch.Tensor)


class _ConvNet(torch.nn.Module):
    """A user-defined module (dynamo wraps it as an UnspecializedNNModuleVariable), shaped like
    Model-References' hello_world mnist `Net`, without dropout so that runs compare exactly."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 4, 3, 1)
        self.fc1 = torch.nn.Linear(4 * 6 * 6, 10)

    def forward(self, x: Any) -> Any:
        x = torch.nn.functional.max_pool2d(torch.relu(self.conv1(x)), 2)
        return torch.nn.functional.log_softmax(self.fc1(torch.flatten(x, 1)), dim=1)


def test_compiled_user_module_trains_like_eager(hpu: Any, dynamo_clean: Any) -> None:
    """`torch.compile(model, backend="hpu_backend")` of a user module (mnist.py
    --use-torch-compile): the module hooks stay out of dynamo's way (issue 24: `Net is already
    tracked for mutation`), torch's global-hook warning is not shown (the hooks are the
    emulator's), and the ops are attributed to the module, not to dynamo's wrapper."""
    import warnings

    from hpusim.sink import KIND_OP, get_sink

    hpu()
    torch.manual_seed(0)
    eager = _ConvNet().to("hpu")
    model = copy.deepcopy(eager)
    compiled = torch.compile(model, backend="hpu_backend")
    data = [
        (torch.randn(4, 1, 14, 14).to("hpu"), torch.randint(0, 10, (4,)).to("hpu"))
        for _ in range(3)
    ]
    get_sink().drain()
    with warnings.catch_warnings(record=True) as caught:  # the filters in force, as in a script
        nll = torch.nn.functional.nll_loss
        losses = _train_side_by_side((eager, compiled), torch.optim.Adadelta, data, nll, lr=1.0)
    assert all(le == pytest.approx(lc, rel=1e-5) for le, lc in losses)
    assert not [w for w in caught if "global hooks" in str(w.message)]
    for pe, pc in zip(eager.parameters(), model.parameters(), strict=True):
        assert torch.allclose(pe.cpu(), pc.cpu(), atol=1e-5)
    batch = get_sink().drain()
    modules = {
        batch.strings[batch.module[i]] for i in range(len(batch)) if batch.kind[i] == KIND_OP
    }
    assert "_ConvNet" in modules and "conv1" in modules  # the root by class name, eager children
    assert not {m for m in modules if "OptimizedModule" in m or m.startswith("_orig_mod")}


def test_dynamic_compiled_function_with_a_graph_break_trains(hpu: Any, dynamo_clean: Any) -> None:
    """Issue 22: with symbolic sizes dynamo builds fake inputs outside a fake mode (meta_utils'
    `DelayedError` on an hpu tensor); the op key holds SymInts there and must not reach the
    device's caches (`unhashable type: non-nested SymInt`)."""
    hpu()
    torch.manual_seed(0)
    lin = torch.nn.Linear(4, 4).to("hpu")

    def f(x: Any) -> Any:
        y = lin(x) * 2
        if y.sum() > 0:  # data-dependent: a graph break
            y = y + 1
        return (y[: x.shape[0] // 2].relu() ** 2).mean()

    cf = torch.compile(f, backend="hpu_backend", dynamic=True)
    for b in (8, 4, 6):
        x = torch.randn(b, 4, device="hpu")
        loss = cf(x)
        loss.backward()
        assert loss.item() == pytest.approx(f(x).item(), rel=1e-5)
        assert lin.weight.grad is not None and lin.weight.grad.device.type == "hpu"
        lin.weight.grad = None


def _reshaped(x: Any) -> Any:
    return x.view(x.shape[0], -1, 2, 4).transpose(1, 2)


def _sliced(x: Any) -> Any:
    return x[:, : x.shape[1] // 2]


def _expanded(x: Any) -> Any:
    return x.unsqueeze(0).expand(2, *x.shape)


def _flattened(x: Any) -> Any:
    return x.reshape(-1, 8)[1:].t()


@pytest.mark.parametrize("autocast", [False, True])
@pytest.mark.parametrize("view", [_reshaped, _sliced, _expanded, _flattened])
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_view_with_dynamic_sizes_crosses_a_graph_break(
    hpu: Any, dynamo_clean: Any, view: Any, autocast: bool
) -> None:
    """A view of an hpu activation, with symbolic sizes, handed from one graph to the next
    across a graph break, in training, for three batch shapes, with and without autocast
    around the compiled function: dynamo fakes it by replaying its views on a fake base
    (meta_utils `view_from_base`), the step the emulator's device ops once broke with guards
    on the replay's ephemeral sizes."""
    hpu(mode="lazy")
    torch.manual_seed(0)
    lin = torch.nn.Linear(8, 8).to("hpu")

    def f(x: Any) -> Any:
        y = view(lin(x))
        torch._dynamo.graph_break()
        return (y * 2).square().mean()

    cf = torch.compile(f, backend="hpu_backend", dynamic=True)
    for b, s in ((2, 3), (3, 5), (4, 7)):
        x = torch.randn(b, s, 8, device="hpu")
        with torch.autocast("hpu", dtype=torch.bfloat16, enabled=autocast):
            loss = cf(x)
        loss.backward()
        assert lin.weight.grad is not None and lin.weight.grad.device.type == "hpu"
        grad = lin.weight.grad.cpu()
        lin.weight.grad = None
        with torch.autocast("hpu", dtype=torch.bfloat16, enabled=autocast):
            eager = f(x)
        eager.backward()
        assert loss.item() == pytest.approx(eager.item(), rel=1e-2 if autocast else 1e-5)
        assert torch.allclose(
            grad,
            lin.weight.grad.cpu(),
            rtol=2e-2 if autocast else 1e-4,
            atol=1e-3 if autocast else 1e-6,
        )
        lin.weight.grad = None


class _Casting(torch.nn.Module):
    """A module that casts and makes a tensor like its input, as Hugging Face models do
    (`mask.to(dtype=...)`, `new_zeros`)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 8)

    def forward(self, x: Any) -> Any:
        y = self.lin(x)
        return y.to(dtype=torch.float32) + y.new_zeros(y.shape)


def test_autocast_around_a_compiled_model_adds_no_graph_break(hpu: Any, dynamo_clean: Any) -> None:
    """Issue 22: a Trainer enters `autocast("hpu")` and calls the compiled model inside it.
    Dynamo then traces the emulator's autocast (a torch-function mode; the bridge's is C++,
    which dynamo never sees): neither its host clock nor the emulator's own `Tensor.to` /
    `new_zeros` may break the graph (they did at every op)."""
    from hpusim.compile_backend import stats
    from hpusim.sink import get_sink

    hpu()
    torch.manual_seed(0)
    eager = _Casting().to("hpu")
    compiled = torch.compile(copy.deepcopy(eager), backend="hpu_backend")
    x = torch.randn(2, 4, device="hpu")
    get_sink().drain()
    with torch.autocast("hpu", dtype=torch.bfloat16):
        out = compiled(x)
        expected = eager(x)
    assert out.dtype == expected.dtype == torch.float32
    assert torch.equal(out.cpu(), expected.cpu())
    batch = get_sink().drain()
    assert not runtime_events(batch, "graph_break")
    assert len(runtime_events(batch, "dynamo_compile")) == 1
    assert stats()["graph_breaks"] == 0


def test_an_output_the_loss_does_not_use_gets_a_zero_gradient_on_the_device(
    hpu: Any, dynamo_clean: Any
) -> None:
    """A compiled model returning its logits beside its loss (a question-answering head): the
    autograd engine makes the zero gradient of the unused output with the output's C++ device
    (the wrapper's CPU); AOT autograd expected an hpu tensor there ('Expected a HpuTensor
    tangent but got a plain Tensor'). On a Gaudi the zeros are made on the card."""
    from hpusim.sink import KIND_OP, get_sink

    hpu()
    torch.manual_seed(0)
    eager = torch.nn.Linear(4, 4).to("hpu")
    model = copy.deepcopy(eager)

    def step(lin: Any) -> Any:
        y = lin(x)
        return y, (y * y).mean()

    x = torch.randn(3, 4, device="hpu")
    get_sink().drain()
    _, loss = torch.compile(step, backend="hpu_backend")(model)
    loss.backward()
    batch = get_sink().drain()
    step(eager)[1].backward()
    for pe, pc in zip(eager.parameters(), model.parameters(), strict=True):
        assert pc.grad is not None and pc.grad.device.type == "hpu"
        assert torch.allclose(pe.grad.cpu(), pc.grad.cpu())
    ops = [batch.strings[batch.name[i]] for i in range(len(batch)) if batch.kind[i] == KIND_OP]
    # the unused output's zero gradient, made on the device (`zeros`: an empty, then zero_)
    assert ops[ops.index("aten::ones_like") + 1 :][:2] == ["aten::empty", "aten::zero_"]


def test_dynamo_building_its_fake_inputs_is_no_device_work(hpu: Any, dynamo_clean: Any) -> None:
    """A view of an hpu tensor that crosses a graph break is an input of the next graph: dynamo
    fakes it by replaying its views on a fake base (torch's meta_utils `view_from_base`), through
    the hpu wrappers but outside a fake mode. Those ops are dynamo's, not the device's: none may
    reach the device model (nor guard on the replay's ephemeral sizes)."""
    import hpusim.dispatch as dispatch
    from torch._guards import TracingContext

    hpu()
    lin = torch.nn.Linear(8, 8).to("hpu")

    def f(x: Any) -> Any:
        y = lin(x).view(x.shape[0], -1, 2, 4).transpose(1, 2)
        torch._dynamo.graph_break()
        return (y * 2).sum()

    modeled_while_tracing: list[str] = []

    def listener(func: Any, key: Any, result: Any, info: Any) -> None:
        if TracingContext.try_get() is not None:
            modeled_while_tracing.append(info.label)

    dispatch.add_op_listener(listener)
    try:
        x = torch.randn(2, 3, 8, device="hpu")
        assert torch.compile(f, backend="hpu_backend")(x).item() == pytest.approx(f(x).item())
    finally:
        dispatch.remove_op_listener(listener)
    assert modeled_while_tracing == []


OPS = 1000


def test_a_compiled_graph_costs_the_host_a_launch_not_its_ops(hpu: Any, dynamo_clean: Any) -> None:
    """At run time the bridge launches a compiled graph's cached recipe
    (`HabanaGraphModule.__call__`, dynamo/compile_backend/recipe_compiler.py:234-280): no
    per-op host work, unlike a lazy graph, whose ops the bridge accumulates one by one."""
    from time import perf_counter_ns

    import hpusim.state as state

    hpu()
    rt = state.RT
    assert rt is not None and rt.clock.projected

    def f(x: Any) -> Any:
        for _ in range(OPS):
            x = x * 1.0001
        return x

    cf = torch.compile(f, backend="hpu_backend")
    x = torch.randn(8, device="hpu")
    cf(x)  # compiles
    t0 = perf_counter_ns()
    p0 = rt.clock.map_end(t0)
    cf(x)
    host_ns = rt.clock.map_end(perf_counter_ns()) - p0
    per_op = rt.profile.host_lazy_op_ns
    # the flush and launch (lazy.py's costs) and the Python around the call, not OPS ops
    assert host_ns < OPS * per_op / 2, host_ns


def test_dynamo_tracing_answers_as_torchs_tracing_context() -> None:
    """The dispatcher's cheap check agrees with `TracingContext.try_get()`: before any trace in
    a thread, inside one, after it, and in another thread while this one traces."""
    import threading

    from hpusim.tensor import dynamo_tracing
    from torch._guards import TracingContext, tracing

    def agree() -> bool:
        return dynamo_tracing() is (TracingContext.try_get() is not None)

    seen: list[tuple[bool, bool]] = []

    def elsewhere() -> None:
        seen.append((dynamo_tracing(), agree()))

    first = threading.Thread(target=elsewhere)  # a thread that never traced
    first.start()
    first.join()
    assert agree() and seen == [(False, True)]
    with tracing(TracingContext(None)):
        assert dynamo_tracing() and agree()
        other = threading.Thread(target=elsewhere)
        other.start()
        other.join()
    assert seen[1] == (False, True)
    assert not dynamo_tracing() and agree()
